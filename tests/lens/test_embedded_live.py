"""Live: the embedded llama.cpp server (the small 0.5B model) starts, answers through LLMClient, and leaves no
process behind — after a normal exit, an exception inside ``with``, an uncaught exception or SIGKILL of the
owning process, and it is not killed early when started from a worker thread.

Needs the ``local`` extra (xllamacpp and the GGUF chunk packages); deselect with -m "not live".
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from lens._config import LLMSettings, load_config
from lens.llm._embedded import EmbeddedServer, embedded_server
from lens.llm._llm import LLMClient, open_client

pytestmark = [
    pytest.mark.live,
    pytest.mark.timeout(300),
    pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="needs the 'local' extra"),
]

SMALL = "qwen2.5-coder-0.5b-instruct"
CAPITAL = [{"role": "user", "content": "What is the capital of France? Answer with one word."}]


def gone(pid: int, within_s: float = 15.0) -> bool:
    """True once ``pid`` no longer runs (a zombie awaiting its reaper counts as gone)."""
    import psutil

    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.2)
    return False


def test_embedded_server_starts_answers_and_stops():
    with EmbeddedServer(SMALL, n_ctx=2048) as server:
        pid = server.process.pid
        assert server.base_url.startswith("http://127.0.0.1:")
        client = LLMClient(base_url=server.base_url, model=SMALL, settings=LLMSettings(max_output_tokens=8))
        resp = client.chat(CAPITAL)
        client.close()
        assert "paris" in resp.text.lower()
        assert resp.prompt_tokens > 0 and resp.completion_tokens > 0 and not resp.cache_hit
    assert server.process is None
    assert gone(pid)


def test_no_process_left_after_an_exception_inside_the_with_block():
    pid = None
    with pytest.raises(RuntimeError, match="boom"):
        with EmbeddedServer(SMALL, n_ctx=2048) as server:
            pid = server.process.pid
            raise RuntimeError("boom")
    assert pid is not None and gone(pid)


def test_open_client_with_no_endpoint_starts_the_embedded_model(tmp_path):
    config = load_config("fast", env={}, overrides={"llm": {"cache": False, "max_output_tokens": 16}})
    client = open_client(config)
    try:
        resp = client.chat_json(
            [{"role": "user", "content": 'Reply with the JSON object {"city": "<capital of France>"}.'}],
            __import__("pydantic").create_model("City", city=(str, ...)),
        )
        assert "paris" in resp.parsed.city.lower()
        assert client.backend.startswith("embedded")
    finally:
        client.close()
        from lens.llm._embedded import stop_all

        stop_all()


def _owner_script(body: str) -> str:
    return textwrap.dedent(
        f"""
        import sys, time
        from lens.llm._embedded import embedded_server
        server = embedded_server({SMALL!r}, n_ctx=2048, n_threads=None, startup_timeout_s=240)
        print(server.process.pid, flush=True)
        """
    ) + textwrap.dedent(body)


def _start_owner(body: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _owner_script(body)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline()
    assert line.strip().isdigit(), proc.stderr.read()
    return proc, int(line)


def test_no_process_left_when_the_owner_dies_of_an_uncaught_exception():
    proc, pid = _start_owner("raise RuntimeError('uncaught in the owner')\n")
    proc.wait(timeout=60)
    assert proc.returncode == 1 and "uncaught in the owner" in proc.stderr.read()
    assert gone(pid)


def test_no_process_left_when_the_owner_is_terminated():
    proc, pid = _start_owner("time.sleep(120)\n")
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert gone(pid)


def test_no_process_left_when_the_owner_is_killed_abruptly():
    proc, pid = _start_owner("time.sleep(120)\n")
    os.kill(proc.pid, signal.SIGKILL)  # no atexit, no handlers: only the parent-death signal can help
    proc.wait(timeout=60)
    assert gone(pid)


def test_server_started_from_a_worker_thread_outlives_that_thread():
    """Regression: PR_SET_PDEATHSIG follows the forking *thread*; the server must not die with its starter."""
    box: dict = {}
    t = threading.Thread(
        target=lambda: box.setdefault("s", embedded_server(SMALL, n_ctx=2048, n_threads=None, startup_timeout_s=240))
    )
    t.start()
    t.join(timeout=240)
    server = box["s"]
    try:
        time.sleep(1.0)
        assert server.process is not None and server.process.poll() is None
        client = LLMClient(base_url=server.base_url, model=SMALL, settings=LLMSettings(max_output_tokens=8))
        assert "paris" in client.chat(CAPITAL).text.lower()
        client.close()
    finally:
        pid = server.process.pid if server.process else None
        server.stop()
    assert pid is None or gone(pid)


def test_llm_check_reports_backend_model_answer_and_speeds():
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from lens.faces._cli import main; sys.exit(main())",
            "llm",
            "check",
            "--json",
            "--preset",
            "fast",
        ],
        capture_output=True,
        text=True,
        timeout=280,
        env={k: v for k, v in os.environ.items() if not k.startswith("LENS_")},
    )
    assert proc.returncode == 0, proc.stderr
    import json

    report = json.loads(proc.stdout)
    assert report["backend"].startswith("embedded") and report["model"] == SMALL
    assert "paris" in report["answer"].lower()
    assert report["prompt_tokens_per_s"] > 0 and report["generation_tokens_per_s"] > 0
    assert report["probe"]["prompt_tokens"] > 200 and report["probe"]["generated_tokens"] > 10
    assert report["runtime"]["runtime"] == "xllamacpp" and "AVX2 = 1" in report["runtime"]["system_info"]
