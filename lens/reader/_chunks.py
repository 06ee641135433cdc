"""Reading a folder's changed files a chunk at a time into what the statistics store keeps — each file's stat
signature and reading outcome, its documents' statistics and their term counts as columns — in this process or,
for the first survey of a large folder, over worker processes on the other cores and this process together.

A worker is a fresh interpreter (``sys.executable -c …``, like the extraction workers: never a fork of this
possibly threaded process) that reads each chunk it is handed through the same guarded open as this process
(``lens.reader._read._read_file``; a chunk's files through the folder's directories opened without following a
link, ``lens.reader._open.FolderDirs``) and hands back the chunk's columns: per file its signature, outcome and
document statistics, and the chunk's term counts as the store's runs of postings, packed
(``lens.reader._store._runs``: a row per distinct term, no object per posting). Document formats (PDF, …) are not
read here: they go through the extraction workers.
A thread of this process keeps each worker reading; this process reads a chunk itself whenever it has none to
store. A worker that cannot be started, or dies on a chunk, costs time only: its chunk is read by another.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np

from lens.reader import _read
from lens.reader._columns import NAMES_SEP, DocColumns, DocStat, TitleIndex
from lens.reader._documents import Document, _is_container, _suffix
from lens.reader._folder import _Files
from lens.reader._open import FolderDirs
from lens.reader._postings import Postings, count_terms
from lens.reader._read import _FileResult
from lens.reader._store import _pack_unit, _runs
from lens.reader.formats import format_of

if TYPE_CHECKING:  # a worker does not import the settings' model (pydantic): it is handed ReadLimits
    from lens._config import ReaderSettings

__all__ = ["Chunk", "ReadLimits", "read_chunk", "chunk_of", "ReadPool"]


_READY_TIMEOUT_S = 60.0  # a worker that cannot import lens in this long is broken, not slow
_WORKER_CODE = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from lens.reader._chunks import _serve; _serve(int(sys.argv[2]))"
)


def _stat_of(doc: Document) -> DocStat:
    names = NAMES_SEP.join(doc.title_names)
    return DocStat(doc.doc_id, doc.path, doc.title, names, len(doc.lowered), doc.sha256, doc.line)


@dataclass(frozen=True)
class ReadLimits:
    """What reading a text file or a container needs of the reader's settings. A worker is handed these instead of
    the settings, so it starts without importing their model (pydantic: ≈ 0.1 s of a worker's ≈ 0.22 s start)."""

    max_file_bytes: int
    max_container_bytes: int

    @classmethod
    def of(cls, settings: ReaderSettings) -> ReadLimits:
        return cls(settings.max_file_bytes, settings.max_container_bytes)


@dataclass
class Chunk:
    """What reading a chunk of files gave: the files as columns (``lens.reader._folder._Files``: each file's stat
    signature when opened, its reading's outcome and its documents' statistics; none settled, no row ids yet), each
    file's documents' packed units (None: not a unit); and the term counts of all its documents one after another,
    as runs of postings keyed by document index — or, read for a write whose counts are held (``pack`` False), as
    the postings themselves (``runs`` empty)."""

    files: _Files
    units: list[tuple[bytes | None, ...]]
    runs: list[tuple[str, int, bytes]]
    postings: Postings | None = None

    @property
    def documents(self) -> int:
        return len(self.files.docs)


def _whole(path: str) -> bool:
    """Whether a file is one document whose sha256 is the file's (not a container, not a document format)."""
    return not _is_container(path) and format_of(_suffix(path)) is None


def chunk_of(results: Sequence[_FileResult], sigs: Sequence[tuple | None], pack: bool = True) -> Chunk:
    """The chunk of files read as ``results`` (their signatures ``sigs``); their documents' texts are not kept.
    ``pack`` False: the term counts as postings in narrow integers (held in memory for a later write), not runs."""
    lowered: list[str] = []
    stats, units = [], []
    for res in results:
        stats.extend(_stat_of(d) for d in res.documents)
        units.append(tuple(_pack_unit(d) if d.kind == "unit" else None for d in res.documents))
        lowered.extend(d.lowered for d in res.documents)
    counted = count_terms(lowered)
    paths = [r.path for r in results]
    docs = DocColumns.of(stats)
    # the title index made where the chunk is read: a survey's index is then gathered from its chunks' (sorted
    # integers), not built in one process by hashing every name of every document (≈ 2.5 s at 1.5M documents)
    docs.set_titles(TitleIndex.build(docs.names))
    files = _Files.of_read(
        paths,
        sigs,
        [r.outcome() for r in results],
        [_whole(p) for p in paths],
        [len(r.documents) for r in results],
        docs,
    )
    if not pack:
        narrow = Postings(
            counted.vocab, counted.term.astype(np.int32), counted.doc.astype(np.int32), counted.n.astype(np.int32)
        )
        return Chunk(files, units, [], narrow)
    return Chunk(files, units, _runs(counted, np.arange(len(lowered), dtype=np.int64)))


def read_chunk(
    jobs: Sequence[tuple[str, str]], settings: ReaderSettings | ReadLimits, root_real: str, pack: bool = True
) -> Chunk:
    """Read each ``(full path, relative path)`` — a text file or a container, never a document format — and
    count its documents' terms (``settings``: the reader's, or just its :class:`ReadLimits`; ``pack``: as for
    :func:`chunk_of`)."""
    results, sigs = [], []
    with FolderDirs(root_real) as dirs:
        for full, path in jobs:
            sig: list = []
            # (``_read._read_file`` looked up at each call: tests count the reads)
            results.append(_read._read_file(full, path, settings, root_real, sig, dirs))
            sigs.append(sig[0] if sig else None)
    return chunk_of(results, sigs, pack)


class _Worker:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE, json.dumps(sys.path), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        self.conn.close()


class ReadPool:
    """Up to ``workers`` reading workers for one survey, started at once (their start overlaps); :meth:`map`
    reads chunks over them and, ``here``, in this process too; :meth:`close` stops them."""

    def __init__(self, workers: int, here: bool = True) -> None:
        self.here = here
        self._workers: list[_Worker] = []
        for _ in range(workers):
            try:
                self._workers.append(_Worker())
            except OSError:  # no process to be had: fewer workers (none: every chunk is read here)
                break

    def __enter__(self) -> ReadPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for w in self._workers:
            w.kill()
        self._workers.clear()

    def map(
        self, chunks: Sequence[Sequence[tuple[str, str]]], settings: ReaderSettings, root_real: str, pack: bool = True
    ) -> Iterator[tuple[int, Chunk]]:
        """(index, chunk read) for each of ``chunks``, in the order they are done. Each worker is kept reading by a
        thread of this process (it hands the worker its next chunk the moment the last one is back); this process
        reads a chunk itself whenever none is done for it to store (``here``), so no core waits while the workers
        start and one worker fewer is needed. A chunk whose worker died, or that no worker took, is read here."""
        limits = ReadLimits.of(settings)
        shared = _Shared(list(range(len(chunks)))[::-1], len(self._workers))
        threads = [
            threading.Thread(target=_drive, args=(w, chunks, limits, root_real, pack, shared), daemon=True)
            for w in self._workers
        ]
        for t in threads:
            t.start()
        try:
            while True:
                try:
                    got = shared.done.get_nowait()
                except queue.Empty:
                    i = shared.take(worker=False) if self.here or not shared.live else None
                    if i is not None:  # nothing to store (or no worker left): this process reads one
                        yield i, read_chunk(chunks[i], settings, root_real, pack)
                        continue
                    if not shared.pending():
                        return
                    got = shared.done.get()
                if got is not None:
                    yield got
        finally:
            self.close()  # a worker still reading (the caller stopped early) is stopped; its thread ends
            for t in threads:
                t.join()


class _Shared:
    """What a pool's threads and the process reading with them share: the chunks not yet taken (taken from the
    end), how many a worker is reading, the chunks read (``done``: (index, chunk); None when a worker's thread
    ends), and how many workers are live."""

    def __init__(self, todo: list[int], live: int) -> None:
        self.todo, self.out, self.live = todo, 0, live
        self.lock = threading.Lock()
        self.done: queue.Queue[tuple[int, Chunk] | None] = queue.Queue()

    def take(self, worker: bool) -> int | None:
        """The next chunk to read, by a worker or by this process; None when none is left."""
        with self.lock:
            if not self.todo:
                return None
            if worker:
                self.out += 1
            return self.todo.pop()

    def read(self, i: int, chunk: Chunk) -> None:
        """A worker read chunk ``i``."""
        with self.lock:  # handed out and no longer out at once: pending() never misses it
            self.done.put((i, chunk))
            self.out -= 1

    def give_back(self, i: int) -> None:
        """A worker was lost with chunk ``i``: another reader takes it."""
        with self.lock:
            self.todo.append(i)
            self.out -= 1

    def pending(self) -> bool:
        """Whether a chunk is still to be taken or is being read by a worker."""
        with self.lock:
            return bool(self.todo) or self.out > 0

    def lost(self) -> None:
        with self.lock:
            self.live -= 1
            self.done.put(None)  # wakes the reading process: perhaps it reads the rest now


def _drive(
    worker: _Worker,
    chunks: Sequence[Sequence[tuple[str, str]]],
    limits: ReadLimits,
    root_real: str,
    pack: bool,
    shared: _Shared,
) -> None:
    """A thread keeping one worker reading: once it is ready, the next chunk handed to it as the last comes back,
    until none is left; a worker that does not start in time, or dies, is given up (its chunk given back)."""
    try:
        if not worker.conn.poll(_READY_TIMEOUT_S) or worker.conn.recv() != "ready":
            return
        while (i := shared.take(worker=True)) is not None:
            try:
                worker.conn.send((chunks[i], limits, root_real, pack))
                got = worker.conn.recv()
            except (EOFError, OSError):
                shared.give_back(i)
                return
            shared.read(i, got)
    except (EOFError, OSError):  # it died (or never started)
        return
    finally:
        shared.lost()


def _serve(fd: int) -> None:
    """A worker's loop: answer each ``(jobs, limits, root_real, pack)`` with :func:`read_chunk`'s chunk until
    the socket closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops its workers
    gc.disable()  # a chunk's objects hold no cycles and go when it is sent: collections would only walk them
    conn = Connection(fd)
    conn.send("ready")
    while True:
        try:
            jobs, limits, root_real, pack = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(read_chunk(jobs, limits, root_real, pack))


def cpu_count() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
