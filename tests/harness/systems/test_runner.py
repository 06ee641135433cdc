"""The benchmark runner: plans bind questions, order and corpus; every (system, question) row is written once as
it finishes; runs resume after an interruption (a real signal to a real process) with no row lost or repeated;
other configurations and changed arms are refused; question errors are rows, an unreachable endpoint stops."""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from harness.bench.datasets import DataError, load_questions
from harness.bench.executor import LocalExecutor
from harness.bench.run_store import RunStoreError, read_rows, read_run_manifest
from harness.bench.runner import plan_run, run_benchmark
from harness.bench.samples import draw_samples, write_samples
from harness.bench.snapshots import read_manifest
from harness.bench.systems import ArmSettings
from lens.llm._llm import LLMClient

from .conftest import BASE_URL, make_config
from .scripted_llm import Responder, StubServer

FAST = ("closed", "bm25", "react", "lens")


def plan(bench_data, out, config, *, systems=FAST, snapshot="D6", **kw):
    return plan_run(
        snapshot=bench_data[snapshot],
        questions_file=bench_data["questions"],
        systems=systems,
        out=out,
        config=config,
        index_dir=bench_data["root"] / "indexes",
        **kw,
    )


def run(p, client, **kw):
    return run_benchmark(
        p, executor=LocalExecutor(kw.pop("concurrency", 2)), progress=kw.pop("progress", False), client=client, **kw
    )


def keys(out):
    rows = read_rows(out)
    return collections.Counter((r["system"], r["question_id"]) for r in rows), rows


# --------------------------------------------------------------------------- plans


def test_a_plan_binds_the_snapshots_questions_order_and_corpus(bench_data, tmp_path, config):
    manifest = read_manifest(bench_data["snap"] / "D6.manifest.json")

    p = plan(bench_data, tmp_path / "run", config, limit=2)

    assert [q.id for q in p.questions] == bench_data["G6"][:2] and list(p.planned_ids) == bench_data["G6"]
    assert p.binding["stage"]["order_sha256"] == manifest["sample"]["order_sha256"]
    assert p.binding["stage"]["sample_sha256"] == manifest["sample"]["sample_sha256"]
    assert p.binding["corpus"]["corpus_checksum"] == manifest["corpus_checksum"]
    assert p.arm == "fresh" and p.index_corpus is p.corpus


def test_a_plan_can_take_a_stage_of_a_sample_file(bench_data, tmp_path, config):
    fs = draw_samples(load_questions(bench_data["questions"]), (6, 12), seed=42)
    write_samples(fs, tmp_path / "samples")

    p = plan(bench_data, tmp_path / "run", config, sample=tmp_path / "samples", stage=12, snapshot="D12")

    assert [q.id for q in p.questions] == bench_data["G12"]
    assert p.snapshot_info["questions_from"] == "sample file"
    assert p.binding == plan(bench_data, tmp_path / "run", config, snapshot="D12").binding  # same ids, same binding
    with pytest.raises(DataError, match="--stage"):
        plan(bench_data, tmp_path / "run", config, sample=tmp_path / "samples")


def test_the_stale_plan_takes_the_new_questions_and_indexes_of_the_old_corpus(bench_data, tmp_path, config):
    p = plan(bench_data, tmp_path / "run", config, snapshot="D12", stale_from=bench_data["D6"])

    assert [q.id for q in p.questions] == bench_data["new"]
    arm = p.binding["arm"]
    assert arm["kind"] == "stale" and arm["from"]["name"] == "D6" and arm["to"]["name"] == "D12"
    assert (
        p.index_corpus.checksum == arm["from"]["corpus_checksum"] != arm["to"]["corpus_checksum"] == p.corpus.checksum
    )
    with pytest.raises(DataError, match="does not grow from it"):
        plan(bench_data, tmp_path / "run", config, snapshot="D6", stale_from=bench_data["D12"])


def test_a_snapshot_changed_after_its_manifest_is_refused(bench_data, tmp_path, config):
    shutil.copytree(bench_data["D6"], tmp_path / "D6")
    shutil.copy(bench_data["snap"] / "D6.manifest.json", tmp_path / "D6.manifest.json")
    victim = next((tmp_path / "D6").iterdir())
    victim.write_text(victim.read_text() + "An edit.\n")

    with pytest.raises(DataError, match="differs from its manifest"):
        plan_run(
            snapshot=tmp_path / "D6",
            questions_file=bench_data["questions"],
            systems=FAST,
            out=tmp_path / "r",
            config=config,
        )


# --------------------------------------------------------------------------- rows


def test_every_system_question_pair_is_one_scored_row(endpoint, responder, client, config, bench_data, tmp_path):
    out = tmp_path / "run"
    summary = run(plan(bench_data, out, config, limit=3), client)

    counts, rows = keys(out)
    assert len(counts) == 12 and set(counts.values()) == {1}
    assert summary.complete and summary.rows_written == 12 and summary.rows_total == 12
    m = read_run_manifest(out)
    assert m["config_hash"] == config.canonical_hash() and all(r["config_hash"] == m["config_hash"] for r in rows)
    assert set(m["systems"]) == set(FAST) and m["systems"]["bm25"]["indexes"][0]["kind"] == "bm25"
    by = {(r["system"], r["question_id"]): r for r in rows}
    q = bench_data["by_id"][bench_data["G6"][0]]
    bm = by[("bm25", q.id)]
    assert bm["gold_answer"] == q.answer and bm["index_corpus_checksum"] == bm["corpus_checksum"]
    assert bm["scores"]["ev_rec"] == 1.0 and bm["scores"]["em"] == 0.0 and bm["scores"]["grounded"]
    assert by[("closed", q.id)]["corpus_checksum"] is None and by[("closed", q.id)]["scores"]["ev_rec"] == 0.0
    assert by[("lens", q.id)]["scores"]["sp_f1"] is not None and by[("react", q.id)]["scores"]["sp_f1"] is None


def test_a_rerun_resumes_without_repeating_a_row(endpoint, responder, client, config, bench_data, tmp_path):
    out = tmp_path / "run"
    run(plan(bench_data, out, config, limit=2), client)
    calls_before = len(responder.calls)
    run(plan(bench_data, out, config, limit=2), client)
    assert len(responder.calls) == calls_before  # nothing left to do

    summary = run(plan(bench_data, out, config, limit=4), client)

    counts, _ = keys(out)
    assert len(counts) == 16 and set(counts.values()) == {1}
    assert summary.rows_before == 8 and summary.rows_written == 8


def test_a_run_folder_of_another_configuration_is_refused(endpoint, client, config, bench_data, tmp_path):
    out = tmp_path / "run"
    run(plan(bench_data, out, config, limit=1, systems=("closed",)), client)
    other = make_config(**{"budget.max_rounds": 5})

    with pytest.raises(RunStoreError, match=r"config\.budget\.max_rounds: 2 → 5"):
        run(plan(bench_data, out, other, limit=1, systems=("closed",)), client)
    with pytest.raises(RunStoreError, match="binding"):
        run(plan(bench_data, out, config, limit=1, systems=("closed",), snapshot="D12"), client)


def test_an_arm_with_changed_parameters_is_refused_but_new_arms_may_join(
    endpoint, client, config, bench_data, tmp_path
):
    out = tmp_path / "run"
    run(plan(bench_data, out, config, limit=1, systems=("bm25",)), client)

    with pytest.raises(RunStoreError, match=r"bm25 has rows made with other parameters \(bm25\.k: 5 → 3\)"):
        run(plan(bench_data, out, config, limit=1, systems=("bm25",), settings=ArmSettings(k=3)), client)
    run(plan(bench_data, out, config, limit=1, systems=("bm25", "closed")), client)
    counts, _ = keys(out)
    assert sorted(counts) == sorted([("bm25", bench_data["G6"][0]), ("closed", bench_data["G6"][0])])


def test_an_interrupted_last_row_is_cut_and_its_question_runs_again(endpoint, client, config, bench_data, tmp_path):
    out = tmp_path / "run"
    run(plan(bench_data, out, config, limit=2, systems=("closed", "bm25")), client)
    rows_file = out / "rows.jsonl"
    data = rows_file.read_bytes()
    rows_file.write_bytes(data[: len(data) - 40])  # the process died while writing the last row

    summary = run(plan(bench_data, out, config, limit=2, systems=("closed", "bm25")), client)

    assert summary.cut_bytes > 0 and summary.rows_written == 1
    counts, _ = keys(out)
    assert len(counts) == 4 and set(counts.values()) == {1}


def test_a_damaged_row_in_the_middle_is_refused(endpoint, client, config, bench_data, tmp_path):
    out = tmp_path / "run"
    run(plan(bench_data, out, config, limit=2, systems=("closed",)), client)
    lines = (out / "rows.jsonl").read_text().splitlines(True)
    (out / "rows.jsonl").write_text(lines[0][:30] + "\n" + lines[1])

    with pytest.raises(RunStoreError, match="line 1 is not a JSON row"):
        run(plan(bench_data, out, config, limit=2, systems=("closed",)), client)


def test_question_errors_are_rows_and_an_unreachable_endpoint_stops_the_run(
    endpoint, responder, client, config, bench_data, tmp_path
):
    out = tmp_path / "run"
    responder.script["closed_book"] = ["not json"] * 2
    run(plan(bench_data, out, config, limit=1, systems=("closed",)), client)
    _, rows = keys(out)
    assert rows[0]["prediction"]["error"].startswith("LLMFormatError") and rows[0]["scores"]["em"] == 0.0

    endpoint.chat.side_effect = httpx.ConnectError("refused")
    summary = run(plan(bench_data, out, config, limit=3, systems=("closed",)), client, concurrency=1)
    assert summary.stopped and "cannot reach" in summary.stopped and not summary.complete
    assert len(keys(out)[0]) == 1  # nothing written for the questions that could not be asked


def test_the_progress_bar_shows_done_total_and_running_tokens(endpoint, client, config, bench_data, tmp_path, capsys):
    run(plan(bench_data, tmp_path / "run", config, limit=2, systems=("closed",)), client, progress=True)
    err = capsys.readouterr().err
    assert "2/2" in err and "tokens 0.1K" in err and "row" in err


# --------------------------------------------------------------------------- a real process, a real signal


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LENS_")}
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _cli(bench_data, out, base_url, *, snapshot="D12", sets=("llm.max_retries=0",), extra=()):
    cmd = [sys.executable, "-m", "lens.faces._cli", "bench", "run", "--snapshot", str(bench_data[snapshot])]
    cmd += ["--questions", str(bench_data["questions"]), "--systems", ",".join(FAST), "--out", str(out)]
    cmd += ["--base-url", base_url, "--preset", "fast", "--concurrency", "2", "--no-progress", *extra]
    for item in sets:
        cmd += ["--set", item]
    return cmd


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_run_resumes_with_every_row_exactly_once(bench_data, tmp_path, sig):
    out = tmp_path / "run"
    responder = Responder()
    responder.delay = 0.02
    with StubServer(responder) as server:
        proc = subprocess.Popen(
            _cli(bench_data, out, server.base_url), env=_clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        rows_file = out / "rows.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if rows_file.exists() and rows_file.read_bytes().count(b"\n") >= 10:
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
        proc.send_signal(sig)
        proc.wait(timeout=30)
        before = rows_file.read_bytes().count(b"\n")
        assert 10 <= before < 48
        killed = read_run_manifest(out)["sessions"][-1]
        if sig == signal.SIGTERM:  # a normal exit: the session records its end and the rows it wrote
            assert proc.returncode == 143
            assert killed["finished"] and killed["stopped"] == "ended by SystemExit (143)"
            assert before - 1 <= killed["rows_written"] <= before  # the signal may land between write and count
        else:  # nothing runs after SIGKILL; the rows on disk are still the record
            assert proc.returncode == -signal.SIGKILL and killed["finished"] is None

        done = subprocess.run(
            _cli(bench_data, out, server.base_url), env=_clean_env(), capture_output=True, text=True, timeout=300
        )

    assert done.returncode == 0, done.stderr[-2000:]
    counts, rows = keys(out)
    assert len(counts) == 12 * 4 and set(counts.values()) == {1}
    assert {r["question_id"] for r in rows} == set(bench_data["G12"])
    assert f"{48 - before} written now, {before} before, 48/48 done" in done.stdout


def test_each_arm_is_bound_to_a_fingerprint_of_the_code_and_prompts_it_runs(
    endpoint, client, config, bench_data, tmp_path
):
    from harness.bench.systems.provenance import code_fingerprint

    out = tmp_path / "run"
    run(plan(bench_data, out, config, limit=1, systems=("lens", "react", "closed")), client)

    systems = read_run_manifest(out)["systems"]
    assert {n: e["params"]["code"] for n, e in systems.items()} == {n: code_fingerprint(n) for n in systems}
    assert len({code_fingerprint(n) for n in ("lens", "react", "bm25", "closed")}) == 4
    assert code_fingerprint("bm25") == code_fingerprint("hybrid")  # the same files and prompt
    session = read_run_manifest(out)["sessions"][-1]
    assert session["rows_written"] == 3 and session["finished"]


# --------------------------------------------------------------------------- endpoint failures are not results


def _attempts(out):
    path = out / "attempts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("fault", [401, 404, 429, 500, "timeout"])
def test_a_poisoned_run_writes_no_rows_exits_2_and_resumes_once_the_endpoint_recovers(bench_data, tmp_path, fault):
    out = tmp_path / "run"
    responder = Responder()
    responder.fault = fault
    responder.timeout_s = 1.5
    sets = ("llm.max_retries=1", "llm.retry_backoff_s=0", "llm.call_timeout_s=0.5")
    with StubServer(responder) as server:
        cmd = _cli(bench_data, out, server.base_url, snapshot="D6", sets=sets, extra=("--limit", "2"))
        bad = subprocess.run(cmd, env=_clean_env(), capture_output=True, text=True, timeout=300)
        assert bad.returncode == 2, bad.stderr[-2000:]
        assert "lens: error: the endpoint failed every question of this run:" in bad.stderr
        assert "Traceback" not in bad.stderr
        assert not (out / "rows.jsonl").exists() or (out / "rows.jsonl").read_text() == ""
        attempts = _attempts(out)
        assert len(attempts) == 2 * 4 and all(a["error"] for a in attempts)  # every failed attempt on record

        responder.fault = None  # the endpoint recovers: the same command now answers every question
        good = subprocess.run(cmd, env=_clean_env(), capture_output=True, text=True, timeout=300)

    assert good.returncode == 0, good.stderr[-2000:]
    counts, rows = keys(out)
    assert len(counts) == 2 * 4 and set(counts.values()) == {1} and not any(r["prediction"]["error"] for r in rows)
    assert "8 written now, 0 before, 8/8 done" in good.stdout
    assert len(_attempts(out)) == 8  # the record of the failed session is kept
    sessions = read_run_manifest(out)["sessions"]
    assert [s["endpoint_failures"] for s in sessions] == [8, 0]


def test_some_endpoint_failures_leave_those_questions_to_a_rerun(
    endpoint, responder, client, config, bench_data, tmp_path
):
    out = tmp_path / "run"
    first = bench_data["by_id"][bench_data["G6"][0]].question
    responder.fault = lambda messages: 503 if any(first in m["content"] for m in messages) else None

    summary = run(plan(bench_data, out, config, limit=3, systems=("closed", "bm25")), client)

    assert summary.endpoint_failures == 2 and "503" in summary.endpoint_error and not summary.endpoint_failed_all
    counts, _ = keys(out)
    assert len(counts) == 4 and bench_data["G6"][0] not in {q for _, q in counts}
    responder.fault = None
    summary = run(plan(bench_data, out, config, limit=3, systems=("closed", "bm25")), client)
    counts, _ = keys(out)
    assert summary.rows_written == 2 and summary.complete and len(counts) == 6 and set(counts.values()) == {1}


def test_a_question_level_failure_stays_a_final_row(endpoint, responder, client, config, bench_data, tmp_path):
    out = tmp_path / "run"
    responder.script["closed_book"] = ["not json"] * 2  # an unparseable reply is the question's result
    summary = run(plan(bench_data, out, config, limit=1, systems=("closed",)), client)
    assert summary.rows_written == 1 and summary.endpoint_failures == 0
    assert run(plan(bench_data, out, config, limit=1, systems=("closed",)), client).rows_written == 0


def test_a_request_error_on_every_call_of_a_question_is_an_endpoint_failure_and_a_rerun_answers(
    endpoint, responder, client, config, bench_data, tmp_path
):
    out = tmp_path / "run"
    responder.fault = 400  # e.g. a request parameter the server does not accept
    responder.fault_message = "temperature must be between 0 and 2"

    summary = run(plan(bench_data, out, config, limit=1), client)

    assert summary.rows_written == 0 and summary.endpoint_failures == len(FAST)
    assert "temperature must be between 0 and 2" in summary.endpoint_error
    assert len(_attempts(out)) == len(FAST) and not (out / "rows.jsonl").read_text()
    responder.fault = None  # the endpoint fixed: the same run answers every question
    summary = run(plan(bench_data, out, config, limit=1), client)
    assert summary.rows_written == len(FAST) and summary.complete


def test_an_api_key_the_endpoint_echoes_is_written_nowhere(endpoint, responder, config, bench_data, tmp_path):
    key = "sk-live-0123456789abcdef"
    out = tmp_path / "run"
    responder.fault = 401
    responder.fault_message = f"invalid credentials: Bearer {key}"
    client = LLMClient(base_url=BASE_URL, model="test-model", settings=config.llm, api_key=key)

    summary = run(plan(bench_data, out, config, limit=1, systems=("closed", "bm25")), client)
    client.close()

    assert summary.endpoint_failures == 2 and "Bearer [API key redacted]" in summary.endpoint_error
    written = [p for p in out.rglob("*") if p.is_file()]
    assert out / "attempts.jsonl" in written
    assert not [p.name for p in written if key.encode() in p.read_bytes()]


def test_a_run_stops_after_ten_endpoint_failures_in_a_row(endpoint, responder, client, config, bench_data, tmp_path):
    out = tmp_path / "run"
    responder.fault = 401

    summary = run(plan(bench_data, out, config, systems=("closed", "bm25")), client, concurrency=1)

    assert summary.stopped and "the endpoint failed 10 questions in a row" in summary.stopped
    assert "401" in summary.stopped and 10 <= summary.endpoint_failures < 12 * 2 and summary.rows_written == 0


# --------------------------------------------------------------------------- local I/O errors are not results


def test_a_broken_llm_cache_gives_answers_not_error_rows(endpoint, bench_data, tmp_path, caplog):
    out = tmp_path / "run"
    out.mkdir()
    (out / "llm-cache").write_text("a file where the run's cache folder goes")

    summary = run(plan(bench_data, out, make_config(**{"llm.cache": True}), limit=2, systems=("closed", "bm25")), None)

    counts, rows = keys(out)
    assert summary.complete and len(counts) == 4
    assert [r["prediction"]["error"] for r in rows] == [None] * 4
    assert any("llm cache" in r.getMessage() and "miss" in r.getMessage() for r in caplog.records)


def test_a_local_io_error_in_a_question_is_not_a_result(tmp_path):
    from harness.bench.systems.base import LocalIOError, System

    class WritesItsNotes(System):
        name = "notes"
        index_free = True

        def _answer(self, question, budget):
            (tmp_path / "notes").write_text(question)  # a folder there: the write fails on this machine

    (tmp_path / "notes").mkdir()
    with pytest.raises(LocalIOError, match=r"notes: local I/O error \(IsADirectoryError: .*notes"):
        WritesItsNotes(question_timeout_s=5, max_tokens=100).answer("q?")


def test_a_module_that_fails_to_import_stops_the_run_and_writes_no_row(
    endpoint, client, config, bench_data, tmp_path, monkeypatch
):
    from harness.bench.systems.base import SetupError
    from harness.bench.systems.closed_book import ClosedBookSystem

    def missing(self, question, budget):
        import ahocorasick_not_installed  # noqa: F401  (a frozen commit's dependency this environment lacks)

    with pytest.raises(
        SetupError, match=r"closed: cannot run on this installation \(ModuleNotFoundError: .*ahocorasick"
    ):
        type("Closed", (ClosedBookSystem,), {"_answer": missing})(client, question_timeout_s=5, max_tokens=100).answer(
            "q?"
        )

    out = tmp_path / "run"
    monkeypatch.setattr(ClosedBookSystem, "_answer", missing)
    summary = run(plan(bench_data, out, config, limit=3, systems=("closed",)), client, concurrency=1)
    assert summary.stopped and "cannot run on this installation" in summary.stopped and not summary.complete
    assert len(keys(out)[0]) == 0  # no error row: a rerun on a complete installation asks every question


# --------------------------------------------------------------------------- one run per folder


def test_a_second_run_on_a_busy_folder_exits_2_naming_the_holder_and_no_row_is_doubled(
    endpoint, responder, client, config, bench_data, tmp_path, capsys
):
    from lens.faces._cli import main

    out = tmp_path / "run"
    responder.delay = 0.05
    first = threading.Thread(
        target=run, args=(plan(bench_data, out, config, limit=3, systems=("closed", "bm25")), client)
    )
    first.start()
    deadline = time.monotonic() + 60
    while not (out / "rows.jsonl").exists() and time.monotonic() < deadline:  # the first run is writing rows
        time.sleep(0.01)
    cmd = ["bench", "run", "--snapshot", str(bench_data["D6"]), "--questions", str(bench_data["questions"])]
    cmd += ["--systems", "closed,bm25", "--out", str(out), "--limit", "3", "--base-url", BASE_URL, "--preset", "fast"]
    cmd += ["--index-dir", str(bench_data["root"] / "indexes"), "--no-progress", "--set", "llm.cache=false"]

    second = main(cmd)
    first.join()

    err = capsys.readouterr().err.strip().splitlines()
    assert second == 2
    assert err[-1].startswith(f"lens: error: {out}: another run is writing this folder (pid {os.getpid()} on ")
    assert " since 20" in err[-1]
    counts, _ = keys(out)
    assert len(counts) == 6 and set(counts.values()) == {1}


def test_the_lock_of_a_run_that_died_does_not_block_the_next(endpoint, client, config, bench_data, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    code = f"import os, signal; from harness.bench.run_store import RunLock; RunLock({str(out)!r}).__enter__(); "
    code += "os.kill(os.getpid(), signal.SIGKILL)"
    died = subprocess.run([sys.executable, "-c", code], env=_clean_env(), capture_output=True, timeout=60)
    assert died.returncode == -signal.SIGKILL and (out / "run.lock").read_text()  # its holder record is left behind

    summary = run(plan(bench_data, out, config, limit=1, systems=("closed",)), client)

    assert summary.complete and summary.rows_written == 1
