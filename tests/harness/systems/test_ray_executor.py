"""``--executor ray`` (issue: scale-out on an existing engine): a real local Ray cluster started on loopback
(``ray start --head --num-cpus 2``) and a loopback fake endpoint of fixed latency. All rows are written once and
equal the local executor's rows for the same questions; a worker killed mid-run stops the run, and the rerun
completes it with no row lost or written twice. A local cluster (no ``--ray-address``) leaves no token in HOME, so a
cluster started on the machine later is still joined by address. The module runs under a HOME of its own that
holds a token file, as a machine where Ray once ran with token auth."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from harness.bench.executor import LocalExecutor, RayExecutor, WorkerDied  # noqa: E402
from harness.bench.run_store import read_rows  # noqa: E402
from harness.bench.runner import plan_run, run_benchmark  # noqa: E402

from .conftest import make_config  # noqa: E402
from .scripted_llm import Responder, StubServer  # noqa: E402

pytestmark = pytest.mark.slow
SYSTEMS = ("lens", "bm25", "closed")
RAY = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment with HOME set to ``home``, none of the user's Ray auth settings, and ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_")}
    return {**env, "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0", **extra}


@contextmanager
def _head(home: Path, temp_dir: Path, **extra: str) -> Iterator[str]:
    """A one-node Ray cluster on loopback (``ray start --head --block``) run under ``_env(home, **extra)``."""
    port = _free_port()
    start = [RAY, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false", "--block"]
    start += ["--node-ip-address=127.0.0.1", f"--temp-dir={temp_dir}", "--disable-usage-stats"]
    log = temp_dir / "start.log"
    with open(log, "w") as out:
        p = subprocess.Popen(start, stdout=out, stderr=subprocess.STDOUT, env=_env(home, **extra))
    try:
        deadline = time.monotonic() + 180
        while "block forever" not in log.read_text():
            if p.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"ray start failed: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        # SIGTERM stops this cluster's processes; `ray stop` would stop every Ray cluster on the machine
        p.terminate()
        p.wait(120)


@pytest.fixture(scope="module", autouse=True)
def home(tmp_path_factory) -> Iterator[Path]:
    """HOME for the module: a folder of its own holding a token file (``~/.ray/auth_token``), no RAY_AUTH_*."""
    home = tmp_path_factory.mktemp("home")
    (home / ".ray").mkdir()
    (home / ".ray" / "auth_token").write_text(secrets.token_hex(32))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        for name in [k for k in os.environ if k.startswith("RAY_AUTH_")]:
            mp.delenv(name)
        yield home


@pytest.fixture(scope="module")
def cluster(home, tmp_path_factory) -> Iterator[str]:
    """A cluster without token auth, stated explicitly: a token file in HOME would otherwise turn it on, and a
    driver joining by address sends no token."""
    with _head(home, tmp_path_factory.mktemp("ray"), RAY_AUTH_MODE="disabled") as address:
        yield address
        if ray.is_initialized():
            ray.shutdown()


def _plan(bench_data, out: Path, base_url: str):
    config = make_config(**{"llm.base_url": base_url, "llm.call_timeout_s": 30})
    return plan_run(
        snapshot=bench_data["D6"],
        questions_file=bench_data["questions"],
        systems=SYSTEMS,
        out=out,
        config=config,
        index_dir=out.parent / "indexes",
    )


def _essence(rows) -> dict:
    """What a row says about the system's answer (timings and wall-clock stamps differ between runs)."""
    out = {}
    for r in rows:
        p = r["prediction"]
        out[(r["system"], r["question_id"])] = (
            p["answer"],
            [d["title"] for d in p["retrieved"]],
            p["tokens"],
            p["oracle_calls"],
            r["scores"]["em"],
            r["scores"]["ev_rec"],
        )
    return out


def _worker_pids() -> list[int]:
    pids = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info.get("cmdline") or [])
        if cmd.startswith("ray::_Worker"):
            pids.append(proc.info["pid"])
    return pids


def test_ray_rows_equal_local_rows_and_a_killed_worker_resumes_cleanly(bench_data, cluster, tmp_path):
    responder = Responder()
    responder.delay = 0.05  # a fixed-latency endpoint
    with StubServer(responder) as server:
        local = _plan(bench_data, tmp_path / "local", server.base_url)
        run_benchmark(local, executor=LocalExecutor(2), progress=False)
        expected = _essence(read_rows(tmp_path / "local"))
        assert len(expected) == 6 * len(SYSTEMS)

        # the same run on the cluster: two worker actors, the driver writes every row once
        remote = _plan(bench_data, tmp_path / "ray", server.base_url)
        executor = RayExecutor(2, address=cluster)
        summary = run_benchmark(remote, executor=executor, progress=False)
        assert summary.complete and summary.rows_written == len(expected)
        rows = read_rows(tmp_path / "ray")
        assert len(rows) == len({(r["system_hash"], r["question_id"]) for r in rows}) == len(expected)
        assert _essence(rows) == expected
        assert len(executor.nodes) == 1 and executor.startup_seconds is not None

        # a worker killed mid-run: the run stops with what it wrote; the rerun completes it
        killed = []

        def kill_one(messages):
            if not killed and len(responder.calls) >= 6:
                pids = _worker_pids()
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])
            time.sleep(0.05)
            return '{"answer": "closed book guess"}'

        responder.script["closed_book"] = kill_one
        responder.calls.clear()
        crash = _plan(bench_data, tmp_path / "crash", server.base_url)
        with pytest.raises(WorkerDied, match="rerun the same command to resume"):
            run_benchmark(crash, executor=RayExecutor(2, address=cluster), progress=False)
        assert killed
        partial = read_rows(tmp_path / "crash")
        assert len(partial) < len(expected)
        del responder.script["closed_book"]
        resumed = run_benchmark(
            _plan(bench_data, tmp_path / "crash", server.base_url),
            executor=RayExecutor(2, address=cluster),
            progress=False,
        )
        assert resumed.complete and resumed.rows_before == len(partial)
        rows = read_rows(tmp_path / "crash")
        assert len(rows) == len({(r["system_hash"], r["question_id"]) for r in rows}) == len(expected)
        assert _essence(rows) == expected


def test_the_cli_names_the_extra_and_refuses_a_stray_ray_address(bench_data, tmp_path, capsys):
    from lens.faces._cli import main

    code = main(
        [
            "bench",
            "run",
            "--snapshot",
            str(bench_data["D6"]),
            "--questions",
            str(bench_data["questions"]),
            "--systems",
            "closed",
            "--out",
            str(tmp_path / "run"),
            "--ray-address",
            "auto",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
        ]
    )
    assert code == 2 and "--ray-address needs --executor ray" in capsys.readouterr().err


def _bench_run(bench_data, out: Path, env: dict[str, str], *ray_address: str) -> subprocess.CompletedProcess:
    """``lens bench run --executor ray`` of one closed-book question in a process of its own, answered by a loopback
    fake endpoint; ``ray_address``: ``--ray-address HOST:PORT`` (none: a local cluster)."""
    with StubServer(Responder()) as server:
        cmd = [sys.executable, "-m", "lens.faces._cli", "bench", "run", "--snapshot", str(bench_data["D6"])]
        cmd += ["--questions", str(bench_data["questions"]), "--systems", "closed", "--limit", "1"]
        cmd += ["--executor", "ray", "--concurrency", "1", "--out", str(out), "--no-progress"]
        cmd += ["--base-url", server.base_url, "--model", "m", *ray_address]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def local_run_home(bench_data, tmp_path_factory) -> Path:
    """A fresh HOME after one ``--executor ray`` run on a local cluster (no ``--ray-address``)."""
    home = tmp_path_factory.mktemp("fresh-home")
    env = _env(home, RAY_TMPDIR=str(tmp_path_factory.mktemp("ray")))  # its session logs, not /tmp/ray's
    p = _bench_run(bench_data, tmp_path_factory.mktemp("local") / "run", env)
    assert p.returncode == 0, p.stderr[-2000:]
    return home


def test_a_local_cluster_leaves_no_token_in_home(local_run_home):
    assert not (local_run_home / ".ray" / "auth_token").exists()


def test_a_cluster_started_after_a_local_run_is_joined_by_address(
    bench_data, local_run_home, tmp_path, tmp_path_factory
):
    with _head(local_run_home, tmp_path_factory.mktemp("ray")) as address:
        p = _bench_run(bench_data, tmp_path / "run", _env(local_run_home), "--ray-address", address)
    assert p.returncode == 0, p.stderr[-2000:]
    assert len(read_rows(tmp_path / "run")) == 1


def test_a_token_cluster_is_joined_by_address_with_the_users_token(bench_data, tmp_path, tmp_path_factory):
    """A head that finds a token in ~/.ray/auth_token requires it; a driver joining by address sends it with
    RAY_AUTH_MODE=token (the README's cluster section)."""
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text(secrets.token_hex(32))
    with _head(home, tmp_path_factory.mktemp("ray")) as address:
        p = _bench_run(bench_data, tmp_path / "run", _env(home, RAY_AUTH_MODE="token"), "--ray-address", address)
    assert p.returncode == 0, p.stderr[-2000:]
    assert len(read_rows(tmp_path / "run")) == 1


@pytest.mark.live
@pytest.mark.timeout(900)
def test_the_embedded_model_runs_as_one_server_per_node(bench_data, cluster, tmp_path):
    """Live: no endpoint configured, so the node's model-server actor starts the embedded llama.cpp server
    (the fast preset's 0.5B) and both worker actors on the node share it."""
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("needs the 'local' extra")
    from lens import load_config

    config = load_config("fast", env={}, overrides=["llm.cache=false", "budget.question_timeout_s=600"])
    plan = plan_run(
        snapshot=bench_data["D6"],
        questions_file=bench_data["questions"],
        systems=("closed",),
        out=tmp_path / "run",
        config=config,
        limit=2,
    )
    before = _server_pids()
    executor = RayExecutor(2, address=cluster, embedded=True, llm_config=config)
    summary = run_benchmark(plan, executor=executor, progress=False)
    assert summary.complete and summary.rows_written == 2
    rows = read_rows(tmp_path / "run")
    assert all(r["prediction"]["tokens"] > 0 and not r["prediction"]["error"] for r in rows)
    deadline = time.monotonic() + 30
    while _server_pids() - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _server_pids() - before  # the model-server actor was killed with the run, and its server with it


def _server_pids() -> set[int]:
    return {
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if "lens.llm._embedded_server" in " ".join(p.info["cmdline"] or [])
    }
