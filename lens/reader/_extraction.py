"""Extracting documents where a hostile file cannot take lens down: worker processes, a time limit per file, a
memory cap per worker, results in input order.

A C parser (PDFium, lxml) can crash, loop or eat memory on a crafted or damaged file; the file is then skipped
with a reason, and the question goes on:

- Each worker is a fresh interpreter (``sys.executable -c …``, the way multiprocessing's "spawn" starts one; never
  a fork of this possibly threaded process) that reads jobs from a socket and answers each with the file's units
  or its skip reason. Unlike multiprocessing's spawn and forkserver, it does not re-import the caller's
  ``__main__``, so a user's script that calls lens without an ``if __name__ == "__main__"`` guard runs once.
- A file whose extraction runs past ``timeout_s`` → ``timeout``: its worker is killed and a new one started for
  the next file. A worker that dies on a file (a segfault, ``os._exit``, the memory cap reached in C code) → that
  file is ``corrupt``, the message names the signal or exit status; a ``MemoryError`` raised in Python → the file
  is ``corrupt`` and the worker goes on. Either way the other files are extracted.
- Each worker's address space is capped (``RLIMIT_AS``, ``memory_mb``; 0: no cap; where the platform has no such
  limit, none) and it writes no core file.
- Up to ``workers`` processes (default: the CPUs this process may run on), started when a batch needs them and
  kept for the next batch until :meth:`Extractor.close`.
- The pure-Python stdlib formats (``Format.isolate`` False: CSV, e-mail, notebooks) are read in this process
  when the file is at most ``inline_bytes``: for those, a worker's start and round trip cost more than the
  extraction (``benchmarks/results/formats``), and the standard library does not crash on input.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Sequence

from lens.reader.formats import Format, Limits, Unit, Unreadable, format_of

try:
    import resource
except ImportError:  # not on Windows: workers run without a memory cap there
    resource = None  # type: ignore[assignment]

__all__ = ["Extracted", "Extractor", "extract_files", "INLINE_BYTES"]

# stdlib-format files up to this size are read in-process (measured: benchmarks/results/formats/README.md)
INLINE_BYTES = 256 * 1024
_READY_TIMEOUT_S = 60.0  # a worker that cannot import lens in this long is broken, not slow
_WORKER_CODE = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from lens.reader._extraction import _serve; _serve(int(sys.argv[2]), int(sys.argv[3]))"
)


@dataclass(frozen=True)
class Extracted:
    """What extracting one file gave: its units, or the reason it was skipped (then ``units`` is empty) and a
    message without the path; ``seconds`` of extraction (in the worker, or in-process)."""

    units: tuple[Unit, ...] = ()
    reason: str | None = None
    message: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.reason is None


def _cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


class _Worker:
    def __init__(self, memory_mb: int) -> None:
        ours, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE, json.dumps(sys.path), str(theirs.fileno()), str(memory_mb)],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # a parser that prints must not reach the user's terminal
                stderr=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        if not self.conn.poll(_READY_TIMEOUT_S):
            self.kill()
            raise RuntimeError(f"an extraction worker did not start in {_READY_TIMEOUT_S:g} s")
        try:
            self.conn.recv()
        except (EOFError, OSError) as e:
            code = self.kill()
            raise RuntimeError(
                f"an extraction worker exited (status {code}) before it was ready: "
                f"`{sys.executable} -c 'import lens.reader.formats'` shows why"
            ) from e

    def kill(self) -> int | None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        self.conn.close()
        return self.proc.returncode

    def died(self) -> str:
        """How the worker ended, once its socket closed: its signal or exit status."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = self.kill()
        self.conn.close()
        if code is not None and code < 0:
            try:
                return f"signal {signal.Signals(-code).name}"
            except ValueError:
                return f"signal {-code}"
        return f"exit status {code}"


def _stop(workers: list[_Worker]) -> None:
    for w in workers:
        w.kill()
    workers.clear()


class Extractor:
    """A pool of extraction workers (see the module docstring); use as a context manager or :meth:`close` it."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        workers: int = 0,
        timeout_s: float = 60.0,
        memory_mb: int = 2048,
        inline_bytes: int = INLINE_BYTES,
    ) -> None:
        self.limits = limits or Limits()
        self.workers = workers if workers > 0 else _cpu_count()
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.inline_bytes = inline_bytes
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []  # every live worker, for close() and the finalizer
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _stop, self._all)

    @classmethod
    def from_settings(cls, settings: Any) -> Extractor:
        """An extractor with a ``ReaderSettings``'s limits, workers, time limit and memory cap."""
        return cls(
            Limits.of(settings),
            workers=settings.extraction_workers,
            timeout_s=settings.extraction_timeout_s,
            memory_mb=settings.extraction_memory_mb,
        )

    def __enter__(self) -> Extractor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker."""
        with self._lock:
            self._idle.clear()
            _stop(self._all)

    def extract_all(self, items: Sequence[tuple]) -> list[Extracted]:
        """Extract each ``(source, suffix)`` or ``(source, suffix, name)`` — ``source`` the file's bytes or its
        path, ``name`` the file name its title falls back to — and return one :class:`Extracted` per item, in
        the items' order. ``ValueError`` for a suffix no format reads."""
        jobs = []
        for item in items:
            source, suffix, name = (tuple(item) + (None,))[:3]
            fmt = format_of(suffix)
            if fmt is None:
                raise ValueError(f"no format reads {suffix!r} files")
            jobs.append((fmt, source, name))
        results: list[Extracted | None] = [None] * len(jobs)
        queue: deque[int] = deque()
        for i, (fmt, source, name) in enumerate(jobs):
            if not fmt.isolate and _size(source) <= self.inline_bytes:
                results[i] = _extract_here(fmt, source, name, self.limits)
            else:
                queue.append(i)
        if queue:
            with self._lock:
                self._run(jobs, queue, results)
        return results  # type: ignore[return-value]

    def _run(self, jobs: list[tuple], queue: deque[int], results: list[Extracted | None]) -> None:
        busy: dict[Connection, tuple[_Worker, int, float]] = {}
        try:
            while queue or busy:
                while queue and (self._idle or len(busy) < self.workers):
                    worker = self._idle.pop() if self._idle else self._start()
                    i = queue.popleft()
                    fmt, source, name = jobs[i]
                    try:
                        worker.conn.send((fmt, source, name, self.limits))
                    except OSError:  # it died while idle: not this file's doing
                        self._forget(worker, kill=True)
                        queue.appendleft(i)
                        continue
                    busy[worker.conn] = (worker, i, time.monotonic() + self.timeout_s)
                next_deadline = min(deadline for _, _, deadline in busy.values())
                for conn in wait(list(busy), timeout=max(0.0, next_deadline - time.monotonic())):
                    worker, i, _ = busy.pop(conn)  # type: ignore[call-overload]
                    fmt = jobs[i][0]
                    try:
                        (units, reason, message), seconds = conn.recv()  # type: ignore[union-attr]
                    except (EOFError, OSError):
                        how = worker.died()
                        self._forget(worker)
                        results[i] = Extracted(
                            reason="corrupt",
                            message=f"the {fmt.name} parser crashed on it ({how}); its worker was replaced",
                        )
                        continue
                    results[i] = Extracted(tuple(units), reason, message, seconds)
                    self._idle.append(worker)
                now = time.monotonic()
                for conn, (worker, i, deadline) in list(busy.items()):
                    if deadline <= now:
                        del busy[conn]
                        self._forget(worker, kill=True)
                        results[i] = Extracted(
                            reason="timeout",
                            message=f"reading it took longer than {self.timeout_s:g} s "
                            "(reader.extraction_timeout_s); its worker was stopped",
                            seconds=self.timeout_s,
                        )
        finally:
            for worker, _, _ in busy.values():  # interrupted mid-batch: those workers' state is unknown
                self._forget(worker, kill=True)

    def _start(self) -> _Worker:
        worker = _Worker(self.memory_mb)
        self._all.append(worker)
        return worker

    def _forget(self, worker: _Worker, kill: bool = False) -> None:
        if kill:
            worker.kill()
        with contextlib.suppress(ValueError):
            self._all.remove(worker)

    def worker_peak_kb(self, field: str = "VmPeak") -> int:
        """The largest ``field`` (VmPeak: address space, VmHWM: resident) of the live workers, in KB (Linux;
        0 elsewhere) — what the memory cap is measured against."""
        peak = 0
        for worker in self._all:
            with contextlib.suppress(OSError):
                with open(f"/proc/{worker.proc.pid}/status") as f:
                    for line in f:
                        if line.startswith(field + ":"):
                            peak = max(peak, int(line.split()[1]))
        return peak


def _size(source: Any) -> int:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return len(source)
    try:
        return os.stat(source).st_size
    except OSError:
        return sys.maxsize  # let a worker find out, and say, what is wrong with it


def _extract_here(fmt: Format, source: Any, name: str | None, limits: Limits) -> Extracted:
    start = time.perf_counter()
    try:
        units = fmt.read(source, name, limits)
    except Unreadable as e:
        return Extracted(reason=e.reason, message=e.message, seconds=time.perf_counter() - start)
    return Extracted(tuple(units), seconds=time.perf_counter() - start)


def extract_files(items: Sequence[tuple], settings: Any = None) -> list[Extracted]:
    """:meth:`Extractor.extract_all` with a pool started for these items and stopped after them (``settings``: a
    ``ReaderSettings``, default the defaults)."""
    with Extractor.from_settings(settings) if settings is not None else Extractor() as extractor:
        return extractor.extract_all(items)


# --------------------------------------------------------------------------- the worker side


def _limit_resources(memory_mb: int) -> None:
    if resource is None:
        return
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing parser leaves no core file behind
    if memory_mb > 0:
        cap = memory_mb * 1024 * 1024
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _serve(fd: int, memory_mb: int) -> None:
    """A worker's loop: answer each ``(format, source, name, limits)`` with ``((units, reason, message),
    seconds)`` until the socket closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops its workers
    _limit_resources(memory_mb)
    conn = Connection(fd)
    conn.send("ready")
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        fmt, source, name, limits = job
        try:
            result = _extract_here(fmt, source, name, limits)
        except Exception as e:  # outside the reader (the zip check, reading a path): still this file's alone
            result = Extracted(reason="corrupt", message=f"cannot be read ({type(e).__name__}: {e})"[:500])
        reply: tuple = (result.units, result.reason, result.message)
        if result.reason == "corrupt" and "out of memory" in result.message and memory_mb > 0:
            reply = ((), "corrupt", f"{result.message} (a worker may use {memory_mb} MB: reader.extraction_memory_mb)")
        try:
            conn.send((reply, result.seconds))
        except MemoryError:
            conn.send((((), "corrupt", "its text is too large to hand back from the worker"), result.seconds))
