"""The embedded model without starting it: GGUF assembly from chunk packages (concatenation in part order,
sha256 verified, nothing half-written) and the one clear error when no endpoint and no local runtime exist.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import pytest

import lens.llm._embedded as embedded
from lens._config import load_config
from lens._errors import LensError
from lens.llm._embedded import EmbeddedServer, EmbeddedUnavailableError, LocalModel, assemble_model
from lens.llm._llm import open_client

CHUNKS = [b"GGUF-part-one|", b"part-two|" * 100, b"part-three"]


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """A tiny 'model' shipped as three chunk packages on sys.path (never imported, only located)."""
    site = tmp_path / "site"
    names = []
    for i, chunk in enumerate(CHUNKS, 1):
        pkg = site / f"lens_fake_chunk_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise ImportError('glue code must never run')\n")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        names.append(pkg.name)
    monkeypatch.syspath_prepend(str(site))
    blob = b"".join(CHUNKS)
    model = LocalModel(
        name="fake-model",
        file_name="fake.gguf",
        size=len(blob),
        sha256=hashlib.sha256(blob).hexdigest(),
        packages=tuple(names),
        dist_hint="lens-fake-chunk-part1..3",
    )
    monkeypatch.setitem(embedded.LOCAL_MODELS, "fake-model", model)
    return model


def test_model_is_the_concatenation_of_its_chunks_in_part_order(fake_model, tmp_path):
    path = assemble_model("fake-model", tmp_path / "cache")
    assert path.read_bytes() == b"".join(CHUNKS)
    assert path.parent == tmp_path / "cache" / "models"
    assert not any(p.name.startswith(".assemble-") for p in path.parent.iterdir())
    assert "lens_fake_chunk_part1" not in sys.modules  # located, never imported


def test_an_assembled_model_is_reused_without_reassembly(fake_model, tmp_path, monkeypatch):
    first = assemble_model("fake-model", tmp_path / "cache")
    monkeypatch.setattr(embedded, "_chunk_files", lambda model: pytest.fail("reassembled"))
    assert assemble_model("fake-model", tmp_path / "cache") == first


def test_a_corrupted_cached_model_is_reassembled(fake_model, tmp_path):
    path = assemble_model("fake-model", tmp_path / "cache")
    path.write_bytes(b"X" * fake_model.size)  # same size, wrong bytes; the stamp no longer matches
    assert assemble_model("fake-model", tmp_path / "cache").read_bytes() == b"".join(CHUNKS)


def test_chunks_that_do_not_verify_are_rejected_and_nothing_is_left(fake_model, tmp_path, monkeypatch):
    monkeypatch.setitem(
        embedded.LOCAL_MODELS, "fake-model", fake_model.__class__(**{**fake_model.__dict__, "sha256": "0" * 64})
    )
    with pytest.raises(EmbeddedUnavailableError, match="does not verify") as e:
        assemble_model("fake-model", tmp_path / "cache")
    assert "lens-fake-chunk-part1..3" in str(e.value)
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_a_missing_chunk_package_is_named(fake_model, tmp_path, monkeypatch):
    model = fake_model.__class__(**{**fake_model.__dict__, "packages": fake_model.packages + ("lens_no_such_part",)})
    monkeypatch.setitem(embedded.LOCAL_MODELS, "fake-model", model)
    with pytest.raises(EmbeddedUnavailableError, match="lens_no_such_part is not installed"):
        assemble_model("fake-model", tmp_path / "cache")


def test_unknown_local_model_is_named():
    with pytest.raises(EmbeddedUnavailableError, match="unknown local model 'gpt-99'"):
        assemble_model("gpt-99")


def test_real_models_carry_the_shared_checksums():
    """The constants match ``shared/models.sha256`` (beside the repository), the authoritative list."""
    listing = Path(__file__).resolve().parents[3] / "shared" / "models.sha256"
    if not listing.exists():
        pytest.skip(f"{listing} not present")
    shared = dict(line.split()[::-1] for line in listing.read_text().splitlines() if line.strip())
    for m in embedded.LOCAL_MODELS.values():
        assert shared[m.file_name] == m.sha256
    sizes = {m.name: (m.size, len(m.packages)) for m in embedded.LOCAL_MODELS.values()}
    assert sizes == {
        "qwen2.5-coder-1.5b-instruct": (1_117_320_768, 22),
        "qwen2.5-coder-0.5b-instruct": (491_400_064, 6),
    }


def test_no_endpoint_and_no_local_runtime_is_one_clear_error(monkeypatch, tmp_path):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "xllamacpp" else real_find_spec(name, *a)
    )
    config = load_config("fast", env={}, overrides={"llm": {"cache_dir": str(tmp_path)}})
    with pytest.raises(EmbeddedUnavailableError) as e:
        open_client(config)
    message = str(e.value)
    assert isinstance(e.value, LensError)
    assert "--base-url" in message and "LENS_LLM__BASE_URL" in message  # way out 1: an endpoint
    assert "pip install 'lens-search[local]'" in message  # way out 2: the embedded runtime
    assert "\n" not in message


# --------------------------------------------------------------------------- a server that dies (no model needed)

FAKE_SERVER = """
import argparse, json, os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

ap = argparse.ArgumentParser()
for flag in ("--model", "--alias", "--port", "--ctx", "--threads"):
    ap.add_argument(flag)
args = ap.parse_args()
mode = os.environ.get("FAKE_MODE", "sigill")
print("LENS-RUNTIME " + json.dumps({"runtime": "fake", "version": "0", "system_info": "CPU : AVX2 = 1 |"}), flush=True)
with open(os.environ["FAKE_PIDFILE"], "w") as fh:
    fh.write(str(os.getpid()))

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def _json(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):  # /v1/models answers: the old readiness check passed here
        self._json({"object": "list", "data": [{"id": args.alias, "object": "model"}]})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if mode == "sigill":
            os.kill(os.getpid(), signal.SIGILL)  # what a build with instructions this CPU lacks does
        if mode == "exit3":
            sys.stdout.flush()
            os._exit(3)
        self._json({"id": "x", "object": "chat.completion", "created": 0, "model": args.alias,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "OK"}}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})
        if mode == "die-after-ready":
            os.kill(os.getpid(), signal.SIGILL)  # answers readiness, then dies as the next request arrives
            # (the kill lands after this reply is written; the next request finds no server)

HTTPServer(("127.0.0.1", int(args.port)), H).serve_forever()
"""


def _fake_launcher(tmp_path, mode, monkeypatch):
    script = tmp_path / "fake_server.py"
    script.write_text(FAKE_SERVER)
    pidfile = tmp_path / "server.pid"
    monkeypatch.setenv("FAKE_MODE", mode)
    monkeypatch.setenv("FAKE_PIDFILE", str(pidfile))
    return (sys.executable, str(script)), pidfile


def _gone(pid: int, within_s: float = 10.0) -> bool:
    import os
    import time

    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_a_server_that_dies_with_sigill_on_its_first_completion_is_reported_in_one_line(
    fake_model, tmp_path, monkeypatch
):
    launcher, pidfile = _fake_launcher(tmp_path, "sigill", monkeypatch)
    server = EmbeddedServer("fake-model", cache_dir=tmp_path / "cache", launcher=launcher, startup_timeout_s=30)
    with pytest.raises(EmbeddedUnavailableError) as e:
        server.start()
    message = str(e.value)
    assert "\n" not in message
    assert "SIGILL" in message and "CPU instructions this machine does not allow" in message
    assert "while starting" in message and "--force-reinstall" in message
    log_path = tmp_path / "cache" / "logs"
    assert f"(log: {next(log_path.glob('server-fake-model-*.log'))})" in message
    assert server.process is None
    assert _gone(int(pidfile.read_text()))


def test_a_server_that_exits_is_reported_with_its_exit_code(fake_model, tmp_path, monkeypatch):
    launcher, _ = _fake_launcher(tmp_path, "exit3", monkeypatch)
    server = EmbeddedServer("fake-model", cache_dir=tmp_path / "cache", launcher=launcher, startup_timeout_s=30)
    with pytest.raises(EmbeddedUnavailableError, match=r"exited with code 3 while starting \(log: "):
        server.start()


def test_a_server_that_dies_after_readiness_is_named_by_the_client(fake_model, tmp_path, monkeypatch):
    from lens._config import LLMSettings
    from lens.llm._llm import LLMClient, LLMUnavailableError

    launcher, pidfile = _fake_launcher(tmp_path, "die-after-ready", monkeypatch)
    server = EmbeddedServer("fake-model", cache_dir=tmp_path / "cache", launcher=launcher, startup_timeout_s=30)
    server.start()
    try:
        assert server.runtime["runtime"] == "fake"  # the runtime line the server printed
        server.process.wait(timeout=10)  # it died (we are its parent: wait reaps it)
        client = LLMClient(
            base_url=server.base_url,
            model="fake-model",
            health=server.death,
            settings=LLMSettings(max_retries=1, retry_backoff_s=0.01),
        )
        with pytest.raises(LLMUnavailableError) as e:
            client.chat([{"role": "user", "content": "hi"}])
        client.close()
        assert "the embedded server for fake-model died with SIGILL" in str(e.value)
        assert "(log: " in str(e.value) and "\n" not in str(e.value)
    finally:
        server.stop()
    assert server.process is None
