"""Per-file statistics: what the prior needs of every file, computed once per file content and kept outside the
folder, so a question reads only the files that changed.

For each file the store keeps its stat signature (device, inode, size, mtime, ctime) and, per document in it, the
title, the names it goes by, its length, its sha256 and its term counts — how often each maximal run of letters
and digits occurs in the folded text, the words a cue term is matched against (``term_counts``: a term counts
where a run equals it or it plus a folded suffix, exactly the word-start match the prior always made).

A question **surveys** the folder as it is now (:func:`survey_corpus`): it lists and stats every file, takes the
statistics of each file whose signature is unchanged from the store, reads exactly the new and changed ones and
drops the gone ones; many files (the first question over a large folder) are read, folded and counted a chunk
at a time by worker processes on the other cores and this process (``lens.reader._chunks``), which hand back
columns; the workers of a folder the store knows nothing of start while it is still listed. What a survey reads
(text files and containers) is stored a chunk at a time with its term counts held — in memory, or past a bound in
a temporary file beside the store (``lens.reader._spill``) — and, for a folder the store knew nothing of, its
files' and documents' rows too (as the survey's columns of the folder), only their row ids taken — so the question
is ranked before they are written (:func:`write_held`, the next survey, or the process's exit:
:meth:`StatsStore.flush`; until then a file's row, if written, has no signature, so a process that dies first
leaves its files to be read again). A file changed within two seconds of its reading (timestamps are coarse)
is checked by its content hash on the next survey. Documents are read into memory only when the agent reads them
(:class:`DocumentTable`). Nothing is written inside the folder: the store is one SQLite file outside it
(``reader.stats_store``, default ``<user cache>/lens/stats.sqlite``), shared safely by concurrent processes (WAL,
one transaction per batch). It is a cache, never an index to keep fresh: every use of it passes one guard
(:meth:`StatsStore._using`) that turns any fault — an SQLite error at open, read or write, a stored value that does
not decode — into :class:`StoreError`, on which the survey sets a damaged file aside (renamed
``stats.sqlite.corrupt-<time>``) and builds a new one, or, for a store that cannot be written (a full disk), keeps
the statistics in memory for the process; either way the question is answered and its notes say what happened
(:func:`survey_corpus`). Snapshot blobs carry a CRC-32: one that does not match drops that folder's rows, which
are read again. A folder no question used for ``reader.stats_keep_days`` is dropped (:meth:`StatsStore.prune`),
as is one named to ``lens corpus forget``; whatever the store holds, a survey gives the statistics that reading
every file now would give.

A process holds a folder's files as columns (:class:`_Files`: lists of paths, titles and names, numpy arrays of
signatures, lengths, digests and row ids — no object per file or document), and the store keeps the same columns
as the folder's **snapshot**, tagged with the folder's generation, which every write to the folder's rows moves: a
new process loads the snapshot when its generation is current (a few reads instead of a row per document) and
the rows otherwise (a survey that knows it saw every write saves a new snapshot).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import sqlite3
import threading
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from lens._config import ReaderSettings
from lens._errors import LensError
from lens._files import is_inside, sha256_hex
from lens.reader._chunks import Chunk, ReadPool, _stat_of, chunk_of, cpu_count, read_chunk
from lens.reader._columns import NAMES_SEP, DocColumns, DocStat
from lens.reader._corpus import CorpusScan
from lens.reader._documents import _is_container, _suffix
from lens.reader._folder import _Files
from lens.reader._listing import _ignore_patterns, _list_files
from lens.reader._open import _open_folder, _read_bytes
from lens.reader._read import read_files, tally
from lens.reader._store import StatsStore, StoreError, _file_ident, _set_aside, default_store_path
from lens.reader._table import DocumentTable
from lens.reader._watch import FolderWatch
from lens.reader.formats import format_of

__all__ = ["survey_corpus", "write_held", "recount", "forget_folder", "SUFFIXES", "NAMES_SEP", "DocStat", "_stat_of"]


log = logging.getLogger("lens.stats")


# suffixes folded onto a term match (-s, -es, -ed, -ing, ...): a cheap stand-in for stemming. A possessive ('s)
# needs no entry: the apostrophe already ends the run.
SUFFIXES = ("s", "es", "ed", "ing", "ly", "er", "ers")


_RACY_NS = 2_000_000_000  # a file changed this close to its reading is checked by content next time


_RECHECK_S = 60.0  # under a quiet watch, every file is stat'ed again this often (else only those with other names)


_BATCH = 50_000  # files per write transaction, at most (larger: fewer B-tree page writes, more memory)


# documents per write transaction, at most: each is one run of postings per term (fewer, longer runs: a smaller
# store); what is held is their statistics and counts (≈ 1 KB a document), not their text
_BATCH_DOCS = 50_000
_READ_AHEAD = 256  # document-format files read at once (extracted over the extraction workers together)
# a chunk of text files read at once (by one worker), at most, in weight; its term counts are stored as a run of
# postings per distinct term (larger: fewer, longer runs, a smaller store and fewer rows per look-up)
_CHUNK_MAX = 5_000
_CONTAINER_BYTES = 2_048  # a container weighs a unit per this many bytes of text (a file otherwise weighs 1)
# a .bz2 container's text is estimated at this many times its size on disk (Wikipedia abstracts' shards: ≈ 5x); at
# its size on disk, the 30 shards of 15K articles weighed 1,300 and were read here, not over the workers
_BZ2_TEXT = 4
_PARALLEL_AT = 2_000  # reading this much weight (files) or more starts worker processes
_WORKERS_MAX = 8  # processes reading, this one and its workers, at most (each an interpreter and a chunk: ≈ 100 MB)
# one store per file path per process
_STORES: dict[str, StatsStore] = {}


_STORES_LOCK = threading.Lock()


def _store_for(settings: ReaderSettings, root_real: str) -> StatsStore:
    path = Path(settings.stats_store) if settings.stats_store else default_store_path()
    if settings.stats_store == ":memory:" or is_inside(path, root_real):  # never written inside the folder
        key = f":memory:{root_real}"
        with _STORES_LOCK:
            if key not in _STORES:
                store = _STORES[key] = StatsStore(None)
                store.key = key
                if settings.stats_store != ":memory:":
                    store.file = path
                    store.kept_in_memory("it lies inside the folder, where lens never writes")
            return _STORES[key]
    key = str(path.resolve())
    with _STORES_LOCK:
        if key not in _STORES:
            store = _STORES[key] = StatsStore(path)
            store.key = key
        return _STORES[key]


def _recover(store: StatsStore, exc: StoreError, *, last: bool) -> StatsStore:
    """The store to use after ``exc`` from ``store``, in its place for the rest of the process: a damaged file set
    aside (renamed, with its log) and a new one at its path; one that cannot be used (a full disk), or a second
    fault (``last``), gives a store in memory. What this process knew of the old store's rows is dropped. Raises
    ``exc`` for a store in memory (nothing to set aside) or one that is not the process's."""
    with _STORES_LOCK:
        current = _STORES.get(store.key) if store.key is not None else None
        if current is not store:
            if current is None:
                raise exc
            return current  # another thread met the fault first and replaced it
        if store.path is None:
            raise exc
        for key in [k for k in _FOLDERS if k[0] is store]:
            del _FOLDERS[key]
        with store._lock:  # a thread still using it finishes first; its next use meets the closed store
            try:
                store.close()
            except sqlite3.Error:
                pass
        new: StatsStore | None = None
        why: BaseException | str = exc.cause
        if exc.damaged and not last:
            if _file_ident(store.path) != store._ident:  # another process set it aside first: its new one is used
                new = StatsStore(store.path)
                new._tell(f"file statistics store {store.file}: damaged ({why}); replaced at its path meanwhile")
            else:
                try:
                    aside = _set_aside(store.path)
                except OSError as err:
                    why = f"{why}; not set aside: {err}"
                else:
                    new = StatsStore(store.path)
                    new._set_aside_news(exc.cause, aside)
        if new is None:
            new = StatsStore(None)
            new.file = store.file
            new.kept_in_memory(why)
        new.key = store.key
        _STORES[store.key] = new
        return new


def forget_folder(
    path: str | os.PathLike[str], settings: ReaderSettings | None = None
) -> tuple[str, int, int, list[str]]:
    """Drop the statistics of the folder ``path`` (which need not exist any more) and of every folder inside it
    from the store ``settings`` name: (the store, folders dropped, files dropped, notes). A damaged store is set
    aside (which forgets every folder); LensError if the store cannot be written now."""
    settings = settings or ReaderSettings()
    root = os.path.realpath(path)
    file = Path(settings.stats_store) if settings.stats_store else default_store_path()
    if settings.stats_store == ":memory:" or not file.exists():
        return str(file), 0, 0, []  # nothing is kept there
    store = _store_for(settings, root)
    try:
        folders, files = store.forget(root)
    except StoreError as exc:
        if not exc.damaged:
            raise LensError(f"{exc}; nothing was forgotten") from None
        store = _recover(store, exc, last=False)
        folders = files = 0
    return str(file), folders, files, store.notes()


@dataclass
class _Folder:
    """What this process knows of one folder (scope): its files as last surveyed, that survey's result and
    listing, and the watch on its directories once it is asked about again."""

    files: _Files | None = None
    last: CorpusScan | None = None
    listing: tuple | None = None  # the last survey's (paths, skipped, problems) from listing the folder
    watch: FolderWatch | None = None
    linked: np.ndarray | None = None  # the files that had more than one name (st_nlink) when listed; None: unknown
    checked: float = -float("inf")  # time.monotonic() when every file was last stat'ed (listed, or checked)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self) -> None:
        """Forget what this process knew of the folder (the store no longer holds its rows)."""
        if self.watch is not None:
            self.watch.close()
        self.files = self.last = self.listing = self.watch = self.linked = None
        self.checked = -float("inf")


_FOLDERS: dict[tuple[StatsStore, str], _Folder] = {}  # (store, scope) -> folder


_INHERITED: list = []  # a forked child's copies of its parent's stores and watches: never used, never closed


def _forget_parent() -> None:
    """In a forked child: an SQLite connection or an inotify queue must not be shared with the parent."""
    global _STORES_LOCK
    _INHERITED.extend([*_STORES.values(), *_FOLDERS.values()])
    _STORES.clear()
    _FOLDERS.clear()
    _STORES_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parent)


def _scope(root_real: str, settings: ReaderSettings) -> str:
    """The key of a folder's statistics: its real path and the reader limits that decide what is read."""
    return f"{root_real}\x00{settings.max_file_bytes}\x00{settings.max_container_bytes}"


def survey_corpus(
    root: str | os.PathLike[str],
    settings: ReaderSettings | None = None,
    *,
    within: Sequence[str | os.PathLike[str]] | None = None,
) -> CorpusScan:
    """The folder as it is now, as :func:`lens.scan_corpus` would read it, with its documents' statistics from
    the store where a file is unchanged: a ``CorpusScan`` whose ``documents`` is a :class:`DocumentTable` (read
    on access) and whose ``doc_stats`` holds the per-document statistics."""
    settings = settings or ReaderSettings()
    root_path = Path(root)
    t0 = time.perf_counter()
    root_real = _open_folder(root_path, within)
    store = _store_for(settings, root_real)
    scope = _scope(root_real, settings)
    faults = 0
    while True:
        with _STORES_LOCK:
            folder = _FOLDERS.setdefault((store, scope), _Folder())
        try:
            with folder.lock:  # threads of one process asking about one folder survey it one at a time
                store.flush(wait=False)  # the term counts a survey held, written first (unless the store is busy)
                # forgotten or dropped meanwhile, or its held rows not written (another process stored its files
                # first): what this process knew of its rows is void
                if (store.voided(scope) or not store.visit(scope)) and folder.files is not None:
                    folder.reset()
                store.tidy(settings.stats_keep_days)
                with _collector_paused():
                    scan = _survey(root_path, root_real, settings, store, scope, folder, t0)
            break
        except StoreError as exc:  # a store fault at any point costs time, never the question
            store = _recover(store, exc, last=faults > 0)
            faults += 1
    scan.notes = store.notes()
    return scan


def write_held(scan: CorpusScan) -> threading.Thread | None:
    """Start writing, in a thread of this process, what ``scan``'s survey held in memory (term counts, rows of a
    folder's first survey: :meth:`StatsStore.put_counted` with ``defer``) — for a caller that waits on
    something else next (an LLM call), so the write costs it no time; the thread, or None when nothing is held.
    The prior's look-ups wait for the write under way; a fault in it is left to the next survey (its files are
    read again)."""
    store = scan.doc_stats[2] if scan.doc_stats is not None else None
    if not isinstance(store, StatsStore) or not store.deferred():
        return None
    thread = threading.Thread(target=_write, args=(store,), name="lens-stats-write")
    thread.start()
    return thread


def _write(store: StatsStore) -> None:
    try:
        store.flush()
    except StoreError as exc:  # the next survey meets it again, and recovers
        log.info("%s", exc)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a survey runs: a survey makes objects by the hundred
    thousand (paths, rows, statistics), almost none in cycles, and each collection the allocations would start
    walks every live object again (≈ a sixth of the first survey's time in this process). Restored after, as it
    was (a caller that turned it off keeps it off)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def recount(scan: CorpusScan, stats: DocColumns, store: StatsStore, exc: StoreError) -> tuple[np.ndarray, StatsStore]:
    """After ``exc`` from ``store`` once a survey is done (the prior asking for term counts): the store recovered
    as a survey's would be and the folder surveyed again; (each of ``stats``' documents' row in the store now, -1
    for one gone since; that store). What the survey tells is added to ``scan.notes``."""
    table = scan.documents
    if not isinstance(table, DocumentTable) or store.path is None:
        raise exc  # statistics in memory: no file to set aside, nothing else to try
    try:
        _recover(store, exc, last=False)
    except StoreError:
        pass  # no longer the process's store: the survey opens the one at its path
    again = survey_corpus(table.root_real, table.settings, within=[table.root_real])
    scan.notes.extend(n for n in again.notes if n not in scan.notes)
    columns, ids, new = again.doc_stats
    row = dict(zip(columns.doc_id, ids.tolist()))
    return np.fromiter((row.get(d, -1) for d in stats.doc_id), dtype=np.int64, count=len(stats)), new


def _after(gen: int | None, gens: tuple[int, int]) -> int | None:
    """The folder's generation after one of this survey's writes, while no other process has written to it."""
    return gens[1] if gen is not None and gens[0] == gen else None


@dataclass
class _Listing:
    """The folder listed now: its files' paths and signatures, and what was left out (and why)."""

    paths: list[str]
    ident: np.ndarray  # (n, 2) uint64: device, inode
    times: np.ndarray  # (n, 3) int64: size, mtime_ns, ctime_ns
    skipped: Counter
    problems: list[str]
    ignore_unread: str | None
    linked: np.ndarray  # bool: the file has more than one name
    stated: bool = True  # every file stat'ed (else only containers: a folder the store knows nothing of)


@dataclass
class _Diff:
    """The listing against what was known: each listed file's row there (-1: new), whether its signature is the
    same, whether it is also settled (nothing to do), and the known files no longer listed."""

    pos: np.ndarray
    same: np.ndarray
    fresh: np.ndarray
    gone: np.ndarray


@dataclass
class _Written:
    """What reading the changed files gave: their columns in chunks, where each listed file's row now comes from
    (``src``: old rows, then the files read now), how many were read, the settled flags if any changed, and the
    folder's generation after the writes (None: another process wrote meanwhile)."""

    chunks: list[_Files]
    src: np.ndarray
    changed: int
    settled: np.ndarray | None
    gen: int | None


def _survey(
    root_path: Path, root_real: str, settings: ReaderSettings, store: StatsStore, scope: str, folder: _Folder, t0: float
) -> CorpusScan:
    """List the folder, compare it with what is known, read and store what changed, and hand out the scan."""
    if folder.watch is not None and not folder.watch.changed() and folder.last is not None:
        # the watch vouches for the listing, and for every write through a name in the folder; not for a write
        # through a hard link outside it (the event goes to that name's directory). So the files that had more
        # than one name when last stat'ed are stat'ed again, and every file once _RECHECK_S have passed since
        # the last such check: what a quiet watch can miss is an edit through a hard link made to a file since,
        # for at most _RECHECK_S
        now = time.monotonic()
        every = now - folder.checked >= _RECHECK_S
        rows = None if every else folder.linked
        if folder.files is not None and _unchanged(folder.files, os.path.join(root_path, ""), rows):
            if every:
                folder.checked = now
            return _again(folder.last, root_path, t0)  # watched, and nothing changed since the last survey
    old = folder.files if folder.files is not None else store.load(scope)
    checked = time.monotonic()
    try:
        with _EarlyWorkers() as early:  # a folder the store knows nothing of: every file listed is to be read
            listing = _list(root_path, root_real, settings, folder, old, early if not len(old) else None)
            diff = _compare(old, listing)
            gen = old.gen
            if len(diff.gone):
                gen = _after(gen, store.drop(scope, [old.paths[i] for i in diff.gone.tolist()]))
            written = _read_changed(root_path, root_real, settings, store, scope, old, listing, diff, gen, early.pool)
        if len(diff.gone) or written.changed:  # rows dropped or replaced: perhaps enough orphaned postings to delete
            store.compact()
        files = _gathered(store, scope, old, listing, diff, written)
    except BaseException:
        store.unhold(scope)  # a first survey that did not finish: the rows it held are dropped, its files read again
        raise
    folder.files = files
    # the files' rows are the listing's; not stat'ed, any of them may have other names
    folder.linked = np.flatnonzero(listing.linked) if listing.stated else None
    folder.checked = checked
    # the files' own list of paths: equal to the listing's, whose strings are then freed (a million of them)
    key = (files.paths, Counter(listing.skipped), list(listing.problems))
    if files is old and folder.last is not None and folder.listing == key:
        scan = _again(folder.last, root_path, t0)  # the same listing, no file changed: the same statistics
    else:
        scan = _scan_of(root_path, root_real, settings, store, files, listing)
    folder.last, folder.listing = scan, key
    scan.seconds = time.perf_counter() - t0
    return scan


def _readers() -> int:
    """How many processes read a large folder's files: this one and its workers, one per CPU, at most
    ``_WORKERS_MAX``."""
    return min(cpu_count(), _WORKERS_MAX)


class _EarlyWorkers:
    """Reading workers started while a folder is still listed, once enough files are listed to be read over
    workers (``_PARALLEL_AT``): their start (an interpreter and NumPy, ≈ 0.2 s each) overlaps the listing instead of
    following it. For a folder the store knows nothing of (each file listed is one to read); stopped on leaving."""

    def __init__(self) -> None:
        self.pool: ReadPool | None = None

    def start(self) -> None:
        self.pool = ReadPool(_readers() - 1)

    def __enter__(self) -> _EarlyWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.close()


def _list(
    root_path: Path,
    root_real: str,
    settings: ReaderSettings,
    folder: _Folder,
    old: _Files,
    early: _EarlyWorkers | None = None,
) -> _Listing:
    """The folder's files as they are now, each with its stat signature; a folder asked about again is watched
    (every directory listed is watched before it is listed); ``early``: its workers started once ``_PARALLEL_AT``
    files are listed."""
    skipped: Counter = Counter()
    patterns, ignore_unread = _ignore_patterns(root_path, root_real)
    problems: list[str] = [ignore_unread] if ignore_unread else []
    dirs: list[str] = []
    # each listed file's signature: (device, inode), (size, mtime_ns, ctime_ns); whether it has other names
    sigs = (array("Q"), array("q"), array("B"))
    # a path listed where it was last time is the known string again: the listing holds no second million
    at = (_PARALLEL_AT, early.start) if early is not None and _readers() > 1 else None
    # a folder the store knows nothing of: its files' signatures come from their reading (containers are stat'ed:
    # their sizes weigh their reading)
    stated = bool(len(old))
    paths = _list_files(
        root_path, settings, skipped, problems, root_real, patterns, dirs, sigs, old.paths, at, not stated
    )
    if folder.last is not None and settings.watch and not settings.follow_symlinks:  # asked about again
        folder.watch = folder.watch or FolderWatch()
        folder.watch.armed = folder.watch.watch(dirs)
    ident = np.asarray(sigs[0], dtype=np.uint64).reshape(-1, 2)
    times = np.asarray(sigs[1], dtype=np.int64).reshape(-1, 3)
    linked = np.frombuffer(sigs[2], dtype=np.uint8).astype(bool)
    paths = old.paths if old.paths == paths else paths
    return _Listing(paths, ident, times, skipped, problems, ignore_unread, linked, stated)


def _compare(old: _Files, listing: _Listing) -> _Diff:
    """Each listed file against the known one at its path (vectorised over the folder)."""
    paths, n = listing.paths, len(listing.paths)
    if paths is old.paths:
        pos = np.arange(n, dtype=np.int64)
    else:
        index = dict(zip(old.paths, range(len(old))))
        pos = np.fromiter((index.get(p, -1) for p in paths), dtype=np.int64, count=n)
    known = np.flatnonzero(pos >= 0)
    rows = pos[known]
    same = np.zeros(n, dtype=bool)  # the signature is unchanged
    same[known] = (old.ident[rows] == listing.ident[known]).all(axis=1) & (old.times[rows] == listing.times[known]).all(
        axis=1
    )
    fresh = same.copy()  # ... and was settled when read: nothing to do
    fresh[known] &= old.settled[rows]
    listed = np.zeros(len(old), dtype=bool)
    listed[rows] = True
    return _Diff(pos, same, fresh, np.flatnonzero(~listed))


def _read_changed(
    root_path: Path,
    root_real: str,
    settings: ReaderSettings,
    store: StatsStore,
    scope: str,
    old: _Files,
    listing: _Listing,
    diff: _Diff,
    gen: int | None,
    started: ReadPool | None = None,
) -> _Written:
    """Settle the files changed moments before their last reading whose content is the same; read every other
    new or changed file (document formats over the extraction workers; ``started``: reading workers started
    already) and store it, in write batches."""
    prefix = os.path.join(root_path, "")
    settled_before = time.time_ns() - _RACY_NS
    out = _Written([], diff.pos.copy(), 0, None, gen)
    todo: list[int] = []
    for k in np.flatnonzero(~diff.fresh).tolist():
        if diff.same[k] and _settles(prefix, listing.paths[k], int(diff.pos[k]), old, settings, root_real):
            r = int(diff.pos[k])
            if out.settled is None:
                out.settled = old.settled.copy()
            out.settled[r] = listing.times[k, 2] < settled_before
            out.gen = _after(out.gen, store.settle(scope, listing.paths[k], old.sig(r), bool(out.settled[r])))
        else:
            todo.append(k)
    batch: list[Chunk] = []
    files_n = docs_n = 0
    plan = _plan(listing, todo)
    defer = plan.defers()
    new = defer and not len(old)  # the folder's first survey: its files' rows are held too (as its columns)
    for ks, chunk in _chunks(prefix, root_real, settings, listing, plan, not defer, started):
        files = chunk.files
        files.settled = (files.times[:, 0] >= 0) & (files.times[:, 2] < settled_before)
        _as_listed(files, [listing.paths[k] for k in ks])
        out.src[ks] = len(old) + out.changed + np.arange(len(ks))
        out.changed += len(ks)
        batch.append(chunk)
        files_n += len(ks)
        docs_n += chunk.documents
        # stored a batch at a time (shards: thousands of documents per batch); a chunk at a time when its counts
        # are held (a write of rows only), so that little is left to store once the last chunk is read
        if defer or files_n >= _BATCH or docs_n >= _BATCH_DOCS:
            out.gen = _flush(store, scope, batch, out, defer, new)
            batch, files_n, docs_n = [], 0, 0
    if batch:
        out.gen = _flush(store, scope, batch, out, defer, new)
    return out


def _as_listed(files: _Files, paths: list[str]) -> None:
    """Files read (a worker's copies of their paths) named by the listing's strings: a million paths not held
    twice."""
    docs = files.docs
    if docs.path is files.paths:  # one document a file, named by its path (_Files.of_read)
        docs.path = paths
    if docs.doc_id is files.paths:
        docs.doc_id = paths
    files.paths = paths


@dataclass
class _Plan:
    """How the files to read are read: the document formats (over the extraction workers), and the text files and
    containers (``plain``, and what reading each weighs — 1 a file, a container 1 more per ``_CONTAINER_BYTES`` of
    its text, estimated from its size on disk) over ``workers`` processes reading, this one among them (1: this one
    alone)."""

    formats: list[int]
    plain: list[int]
    weight: np.ndarray
    workers: int

    def defers(self) -> bool:
        """Whether the read holds its term counts for a later write: text files and containers only (held in
        memory, or past ``_store._HELD_BYTES`` in a temporary file beside the store)."""
        return not self.formats and bool(self.plain)


def _plan(listing: _Listing, todo: list[int]) -> _Plan:
    plain: list[int] = []
    formats: list[int] = []
    boxed, packed = [], []
    kinds: dict[str, tuple[bool, bool, bool]] = {}  # a path's kind is its last suffix's: asked once per suffix
    for k in todo:
        p = listing.paths[k]
        i = p.rfind(".")
        key = p[i:] if i >= 0 else ""
        kind = kinds.get(key)
        if kind is None:  # a document format; a container; a compressed one
            kind = kinds[key] = (format_of(_suffix(p)) is not None, _is_container(p), p.lower().endswith(".bz2"))
        if kind[0]:
            formats.append(k)
        else:
            plain.append(k)
            boxed.append(kind[1])
            packed.append(kind[2])
    sizes = np.maximum(listing.times[plain, 0], 0)
    text = np.where(np.array(packed, dtype=bool), _BZ2_TEXT * sizes, sizes)
    weight = np.where(np.array(boxed, dtype=bool), text // _CONTAINER_BYTES, 0) + 1
    workers = _readers() if int(weight.sum()) >= _PARALLEL_AT else 1
    return _Plan(formats, plain, weight, workers)


def _chunks(
    prefix: str,
    root_real: str,
    settings: ReaderSettings,
    listing: _Listing,
    plan: _Plan,
    pack: bool = True,
    started: ReadPool | None = None,
) -> Iterator[tuple[list[int], Chunk]]:
    """(the listing's files, what reading them gave) for every file of ``plan``, a chunk at a time: document
    formats over the extraction workers, text files and containers in chunks — over worker processes when there
    are many (the first survey of a large folder; ``started``: ones started already), else here. ``pack``: as
    for ``chunk_of``."""
    formats, plain, weight, workers = plan.formats, plan.plain, plan.weight, plan.workers
    for at in range(0, len(formats), _READ_AHEAD):
        ks = formats[at : at + _READ_AHEAD]
        sigs: list = []
        results = read_files([(prefix + listing.paths[k], listing.paths[k]) for k in ks], settings, root_real, sigs)
        yield ks, chunk_of(results, sigs, pack)
    if not plain:
        return
    # over the workers and this process, a few chunks each at least, so that the last ones to finish are small
    limit = _CHUNK_MAX if workers < 2 else max(1, min(_CHUNK_MAX, int(weight.sum()) // (4 * workers)))
    bounds = [0]
    total = 0
    for i, w in enumerate(weight.tolist()):
        if total and total + w > limit:
            bounds.append(i)
            total = 0
        total += w
    bounds.append(len(plain))
    parts = [plain[a:b] for a, b in zip(bounds, bounds[1:])]
    if workers >= 2:  # the last chunks (taken last) halved: whoever finishes first then waits less for the other
        tail = len(parts) - 2 * workers
        parts = parts[: max(tail, 0)] + [
            half
            for part in parts[max(tail, 0) :]
            for half in (part[: (len(part) + 1) // 2], part[(len(part) + 1) // 2 :])
            if half
        ]
    jobs = _Jobs(prefix, listing.paths, parts)
    if workers < 2:
        for part, job in zip(parts, jobs):
            yield part, read_chunk(job, settings, root_real, pack)
        return
    with started or ReadPool(workers - 1) as pool:  # this process reads too
        for i, chunk in pool.map(jobs, settings, root_real, pack):
            yield parts[i], chunk


@dataclass
class _Jobs(Sequence[list[tuple[str, str]]]):
    """Each chunk's (full path, path in the folder) pairs, made when the chunk is handed out: at 1.5M files, made
    all at once, they were ≈ 300 MB."""

    prefix: str
    paths: Sequence[str]
    parts: list[list[int]]

    def __len__(self) -> int:
        return len(self.parts)

    def __getitem__(self, i):  # type: ignore[override]
        paths, prefix = self.paths, self.prefix
        return [(prefix + paths[k], paths[k]) for k in self.parts[i]]


def _settles(prefix: str, path: str, r: int, old: _Files, settings: ReaderSettings, root_real: str) -> bool:
    """Whether a file with an unchanged signature, changed moments before its last reading, still holds the
    content then read (by its hash: only a whole file has one)."""
    digest = old.file_hash(r)
    if not digest:
        return False
    data = _read_bytes(prefix + path, settings.max_file_bytes, root_real)
    return isinstance(data, bytes) and sha256_hex(data) == digest


def _flush(store: StatsStore, scope: str, batch: list[Chunk], out: _Written, defer: bool, new: bool) -> int | None:
    """Store a batch of chunks read (``defer``: their term counts held for a later write; ``new``: their rows
    too); their columns, each document's row id set, join ``out.chunks`` (no object per file is kept)."""
    parts = [(c.postings if defer else c.runs, c.documents) for c in batch]
    if new and not any(u is not None for c in batch for units in c.units for u in units):
        gens, first = store.hold(scope, sum(len(c.files) for c in batch), parts)
        for c in batch:
            c.files.docs.ids = np.arange(first, first + c.documents, dtype=np.int64)
            first += c.documents
    else:
        items = [(p, c.files.entry(i), c.units[i]) for c in batch for i, p in enumerate(c.files.paths)]
        gens = store.put_counted(scope, items, parts, defer=defer)
        at = 0
        for c in batch:
            ids = [i for _, e, _ in items[at : at + len(c.files)] for i in e.ids]
            c.files.docs.ids = np.asarray(ids, dtype=np.int64).reshape(-1)
            at += len(c.files)
    out.chunks.extend(c.files for c in batch)
    return _after(out.gen, gens)


def _gathered(store: StatsStore, scope: str, old: _Files, listing: _Listing, diff: _Diff, written: _Written) -> _Files:
    """The folder's files now: the known ones kept and the ones read, in listing order; saved as the folder's
    snapshot when they are known to equal the store's rows."""
    base = old if written.settled is None else replace(old, settled=written.settled)
    if not written.changed and not len(diff.gone) and old.paths is listing.paths:
        files = base  # the same files (some perhaps settled now): the same documents' columns
    else:
        files = _Files.gather([base, *written.chunks], written.src)
        written.chunks.clear()  # their columns are in files now
    if files is not old:
        files.gen, files.saved = written.gen, False
    if store.deferred(scope):  # saved once the held counts are written: their files' rows have no signature yet
        store.keep_for_flush(scope, files, old)
    elif not files.saved and files.gen is not None and store.path is not None:
        store.save(scope, files, old)  # the next process loads these columns instead of every file's rows
    return files


def _unchanged(files: _Files, prefix: str, rows: np.ndarray | None = None) -> bool:
    """Whether each of ``files`` (``rows`` of them: default all) still has the stat signature (device, inode,
    size, mtime, ctime) its statistics were taken under, every file settled when read (≈ 2 µs a file stat'ed:
    10 ms for 5,000)."""
    if not files.settled.all():  # changed moments before its reading: only its content can tell
        return False
    rows = np.arange(len(files)) if rows is None else rows
    ident, times = array("Q"), array("q")
    paths = files.paths
    for r in rows.tolist():
        try:
            st = os.stat(prefix + paths[r])
        except OSError:  # gone, or not readable now: the survey says which
            return False
        ident.extend((st.st_dev, st.st_ino))
        times.extend((st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return np.array_equal(np.frombuffer(ident, dtype=np.uint64), files.ident[rows].reshape(-1)) and np.array_equal(
        np.frombuffer(times, dtype=np.int64), files.times[rows].reshape(-1)
    )


def _again(last: CorpusScan, root: Path, t0: float) -> CorpusScan:
    """The last survey's result again, for a folder in which nothing changed."""
    return replace(
        last, root=root, seconds=time.perf_counter() - t0, problems=list(last.problems), skipped=Counter(last.skipped)
    )


def _scan_of(
    root_path: Path, root_real: str, settings: ReaderSettings, store: StatsStore, files: _Files, listing: _Listing
) -> CorpusScan:
    skipped, problems, ignore_unread = listing.skipped, listing.problems, listing.ignore_unread
    read = np.ones(len(files), dtype=bool)
    bad = 0
    for k in np.flatnonzero(files.detail >= 0).tolist():  # the few files whose reading was not trivial, in order
        s = files.details[files.detail[k]]
        if tally(s, skipped, problems):
            bad += bool(s["bad"])
        else:
            read[k] = False
    docs = files.docs
    if not read.all() and np.diff(files.start)[~read].any():  # a skipped file's documents are not the scan's
        docs = files.take(np.flatnonzero(read)).docs
    if store.note:
        problems.insert(0, store.note)
    table = DocumentTable(root_path, root_real, settings, docs, store)
    return CorpusScan(
        root=root_path,
        documents=table,  # type: ignore[arg-type]
        files=int(read.sum()),
        bytes_read=int(files.nbytes[read].sum()),
        skipped=skipped,
        problems=problems,
        bad_encoding=bad,
        ignore_unread=ignore_unread,
        doc_stats=(docs, docs.ids, store),
    )
