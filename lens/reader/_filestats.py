"""Per-file statistics: what the prior needs of every file, computed once per file content and kept outside the
folder, so a question reads only the files that changed.

For each file the store keeps its stat signature (device, inode, size, mtime, ctime) and, per document in it, the
title, the names it goes by, its length, its sha256 and its term counts — how often each maximal run of letters
and digits occurs in the folded text, the words a cue term is matched against (``term_counts``: a term counts
where a run equals it or it plus a folded suffix, exactly the word-start match the prior always made).

A question **surveys** the folder as it is now (:func:`survey_corpus`): it lists and stats every file, takes the
statistics of each file whose signature is unchanged from the store, reads exactly the new and changed ones and
drops the gone ones. A file changed within two seconds of its reading (timestamps are coarse) is checked by its
content hash on the next survey. Documents are read into memory only when the agent reads them
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

import json
import logging
import os
import re
import sqlite3
import threading
import time
import zlib
from array import array
from collections import Counter, OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
from platformdirs import user_cache_dir

from lens._config import ReaderSettings
from lens._errors import LensError
from lens._files import is_inside, sha256_hex
from lens.reader._columns import NAMES_SEP, DocColumns, DocStat, TitleIndex, pick_array, pick_strings
from lens.reader._corpus import CorpusScan
from lens.reader._documents import Document, _is_container
from lens.reader._listing import _ignore_patterns, _list_files
from lens.reader._open import _open_folder, _read_bytes
from lens.reader._read import _read_file, tally
from lens.reader._watch import FolderWatch

__all__ = [
    "StatsStore",
    "StoreError",
    "DocStat",
    "DocumentTable",
    "survey_corpus",
    "forget_folder",
    "default_store_path",
    "SUFFIXES",
    "NAMES_SEP",
]

log = logging.getLogger("lens.stats")

# suffixes folded onto a term match (-s, -es, -ed, -ing, ...): a cheap stand-in for stemming. A possessive ('s)
# needs no entry: the apostrophe already ends the run.
SUFFIXES = ("s", "es", "ed", "ing", "ly", "er", "ers")
_RUN = re.compile(r"[^\W_]+")  # a maximal run of str.isalnum() characters
_RACY_NS = 2_000_000_000  # a file changed this close to its reading is checked by content next time
_BATCH = 5_000  # files per write transaction, at most (larger: fewer B-tree page writes, more memory)
_BATCH_DOCS = 20_000  # documents held for one write transaction, at most (≈ 40 MB of text)
_SCHEMA = 4  # 4: snapshot checksums, a folder's last use, incremental vacuum
_CACHE_KIB = -65536  # SQLite page cache while writing (negative: KiB), 64 MiB: large batches insert without thrashing
_PART = 100_000  # strings per part of a snapshot's string column
_COMPACT_AT = 0.25  # orphaned postings are deleted once the documents dropped since exceed this share of the live ones
_SEEN_EVERY_S = 3600  # a folder's last use is written at most this often (a write per question would contend)
_PRUNE_EVERY_S = 86400  # a process looks for folders to drop when it first surveys, then at most this often
_GONE_S = 86400  # a folder that no longer exists is dropped once unused for this long (a drive may be remounted)
_now = time.time  # the clock of a folder's last use


def default_store_path() -> Path:
    """Where the store lives unless ``reader.stats_store`` says otherwise: the user cache folder."""
    return Path(user_cache_dir("lens")) / "stats.sqlite"


@dataclass(slots=True)
class _Entry:
    """One file being stored: its signature, whether that was settled when read, its reading's outcome."""

    sig: str  # the stat signature, packed (_pack_sig)
    settled: bool
    whole: bool  # a whole file (its one document's sha256 is the file's), not a container
    summary: dict  # skip, nbytes, bad, malformed, oversized, problems
    docs: Sequence[DocStat]
    ids: Sequence[int]  # the documents' rows in the store


def _terms_of(lowered: str) -> Counter:
    return Counter(_RUN.findall(lowered))


def _pack_sig(sig: tuple) -> str:
    return ",".join(map(str, sig))


_NO_IDENT = (0, 0)
_NO_TIMES = (-1, -1, -1)  # no signature: a size of -1 equals no file's


def _unpack_sig(text: str) -> tuple[tuple[int, int], tuple[int, int, int]]:
    if not text:
        return _NO_IDENT, _NO_TIMES
    parts = text.split(",") if isinstance(text, str) else ()
    if len(parts) != 5 or not all(_INT.fullmatch(x) for x in parts):
        raise ValueError(f"sig {text!r} is not a stat signature")
    dev, ino, size, mtime, ctime = map(int, parts)
    return (dev, ino), (size, mtime, ctime)


_INT = re.compile(r"-?[0-9]{1,20}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _bad_doc_field(doc_id, title, names, length, sha256, line) -> str:
    """Which field of a stored document is not of its kind, and its value."""
    for name, value, ok in (
        ("doc_id", doc_id, type(doc_id) is str),
        ("title", title, type(title) is str),
        ("names", names, type(names) is str),
        ("length", length, type(length) is int),
        ("sha256", sha256, type(sha256) is str and _HEX64.fullmatch(sha256)),
        ("line", line, line is None or type(line) is int),
    ):
        if not ok:
            return f"{name} {value!r:.80} is not of its kind"
    return "a field is not of its kind"


_TRIVIAL = {"skip": None, "bad": False, "malformed": 0, "oversized": 0, "problems": []}


def _trivial(summary: dict) -> bool:
    """Whether a file's reading outcome is its byte count alone (read, nothing skipped, no problem)."""
    return all(summary.get(k, v) == v for k, v in _TRIVIAL.items())


def _pack_summary(summary: dict) -> str:
    """A file's reading outcome: its byte count alone in the common case, JSON otherwise."""
    return str(summary.get("nbytes", 0)) if _trivial(summary) else json.dumps(summary)


_SUMMARY_TYPES = {
    "skip": (str, type(None)),
    "nbytes": int,
    "bad": bool,
    "malformed": int,
    "oversized": int,
    "problems": list,
}


def _unpack_summary(text: str) -> int | dict:
    """A stored reading outcome: its byte count (an int) or the whole outcome (a dict); ValueError if it is
    neither."""
    if isinstance(text, str) and text.isdigit():
        return int(text)
    try:
        s = json.loads(text)
    except (TypeError, ValueError):
        s = None
    if not (
        isinstance(s, dict)
        and s.keys() >= _SUMMARY_TYPES.keys()
        and all(isinstance(s[k], t) for k, t in _SUMMARY_TYPES.items())
        and all(isinstance(x, str) for x in s["problems"])
    ):
        raise ValueError(f"summary {text!r} is not a reading outcome")
    return s


# --------------------------------------------------------------------------- one folder's files, as columns


@dataclass(eq=False)
class _Files:
    """One folder's files as the store holds them, column by column (row i is ``paths[i]``), with their documents.

    The signature is split into ``ident`` (device, inode: unsigned) and ``times`` (size, mtime_ns, ctime_ns); a
    file without one has a size of -1, which no stat gives. A reading's outcome is its byte count, plus, for the
    few files whose reading was not trivial (skipped, malformed records, problems), an entry of ``details``.
    ``gen`` is the store's generation of the folder these columns are known to equal (None: not known)."""

    paths: list[str]
    ident: np.ndarray  # (n, 2) uint64
    times: np.ndarray  # (n, 3) int64
    settled: np.ndarray  # bool
    whole: np.ndarray  # bool: a whole file (its one document's sha256 is the file's), not a container
    nbytes: np.ndarray  # int64
    detail: np.ndarray  # int64: -1 a trivial outcome, else the index of its summary in details
    details: list[dict]
    start: np.ndarray  # (n + 1) int64: file i's documents are docs[start[i]:start[i + 1]]
    docs: DocColumns
    gen: int | None = None
    saved: bool = False  # the store's snapshot of the folder holds exactly these columns

    @classmethod
    def empty(cls) -> "_Files":
        return cls.of_entries([])

    @classmethod
    def of_entries(cls, items: Sequence[tuple[str, _Entry]]) -> "_Files":
        ident, times, details, detail, nbytes, start, stats, ids = [], [], [], [], [], [0], [], []
        for _, e in items:
            i, t = _unpack_sig(e.sig)
            ident.append(i)
            times.append(t)
            nbytes.append(e.summary.get("nbytes", 0))
            if _trivial(e.summary):
                detail.append(-1)
            else:
                detail.append(len(details))
                details.append(e.summary)
            stats.extend(e.docs)
            ids.extend(e.ids)
            start.append(len(stats))
        return cls(
            [p for p, _ in items],
            np.asarray(ident, dtype=np.uint64).reshape(-1, 2),
            np.asarray(times, dtype=np.int64).reshape(-1, 3),
            np.asarray([e.settled for _, e in items], dtype=bool),
            np.asarray([e.whole for _, e in items], dtype=bool),
            np.asarray(nbytes, dtype=np.int64),
            np.asarray(detail, dtype=np.int64),
            details,
            np.asarray(start, dtype=np.int64),
            DocColumns.of(stats, ids),
        )

    def __len__(self) -> int:
        return len(self.paths)

    def sig(self, i: int) -> str:
        if self.times[i, 0] < 0:
            return ""
        return _pack_sig((*self.ident[i].tolist(), *self.times[i].tolist()))

    def file_hash(self, i: int) -> str:
        """sha256 of a whole file's bytes, "" for a container or a file without a document."""
        a, b = int(self.start[i]), int(self.start[i + 1])
        return self.docs.sha256(a) if self.whole[i] and b > a else ""

    def take(self, rows: np.ndarray) -> "_Files":
        """Files ``rows``, in that order, with their documents."""
        return _Files.gather([self], rows)

    @staticmethod
    def gather(parts: Sequence["_Files"], rows: np.ndarray) -> "_Files":
        """Files ``rows`` of the parts one after another, in that order, with their documents — without building
        that concatenation (a million files' columns are not held twice over)."""
        parts = list(parts) or [_Files.empty()]
        # every part's files and documents numbered on from the part before
        doc_at = np.cumsum([0] + [len(p.docs) for p in parts])
        first = np.concatenate([p.start[:-1] + doc_at[k] for k, p in enumerate(parts)])  # each file's first document
        counts = np.concatenate([np.diff(p.start) for p in parts])[rows]
        start = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=start[1:])
        doc_rows = np.repeat(first[rows] - start[:-1], counts) + np.arange(start[-1], dtype=np.int64)
        details: list[dict] = []
        detail = []
        for p in parts:  # a summary's index in the parts' details one after another
            detail.append(np.where(p.detail >= 0, p.detail + len(details), -1))
            details.extend(p.details)
        detail = pick_array(detail, rows)
        used = detail >= 0
        kept = detail[used].tolist()
        detail[used] = np.arange(len(kept))
        paths = pick_strings([p.paths for p in parts], rows)
        docs = DocColumns.gather([p.docs for p in parts], doc_rows)
        if docs.path == paths:  # one document per file, named by its path: one list of paths, not two
            if docs.doc_id is docs.path or docs.doc_id == paths:
                docs.doc_id = paths
            docs.path = paths
        return _Files(
            paths,
            pick_array([p.ident for p in parts], rows),
            pick_array([p.times for p in parts], rows),
            pick_array([p.settled for p in parts], rows),
            pick_array([p.whole for p in parts], rows),
            pick_array([p.nbytes for p in parts], rows),
            detail,
            [details[d] for d in kept],
            start,
            docs,
        )

    # ---------------------------------------------------------------- the store's snapshot of a folder
    _ARRAYS = {
        "ident": (np.uint64, 2),
        "times": (np.int64, 3),
        "settled": (np.bool_, 0),
        "whole": (np.bool_, 0),
        "nbytes": (np.int64, 0),
        "detail": (np.int64, 0),
        "start": (np.int64, 0),
        "length": (np.int64, 0),
        "sha": (np.uint8, 32),
        "line": (np.int64, 0),
        "ids": (np.int64, 0),
        "title_hashes": (np.uint32, 0),
        "title_docs": (np.int64, 0),
    }

    def blobs(self) -> Iterator[tuple[str, bytes]]:
        """The columns as named byte strings (numpy arrays as their bytes, lists of strings as JSON), one at a
        time: a million documents' columns are never all encoded at once."""
        d = self.docs
        titles = d.titles
        arrays = {
            "ident": self.ident,
            "times": self.times,
            "settled": self.settled,
            "whole": self.whole,
            "nbytes": self.nbytes,
            "detail": self.detail,
            "start": self.start,
            "length": d.length,
            "sha": d.sha,
            "line": d.line,
            "ids": d.ids,
            "title_hashes": titles.hashes,
            "title_docs": titles.docs,
        }
        for k, v in arrays.items():
            yield k, np.ascontiguousarray(v, dtype=self._ARRAYS[k][0]).tobytes()
        # a document's id is its file's path unless it is a record of a container: 0 stands for "the path"
        doc_ids = [0 if i is p or i == p else i for i, p in zip(d.doc_id, d.path)]
        for k, v in (("paths", self.paths), ("doc_id", doc_ids), ("title", d.title), ("names", d.names)):
            for i in range(0, max(len(v), 1), _PART):  # in parts: no encoding of a million strings at once
                yield f"{k}.{i // _PART:06d}", json.dumps(v[i : i + _PART]).encode("ascii")  # a lone surrogate survives
        yield "details", json.dumps(self.details).encode("ascii")

    @classmethod
    def from_blobs(cls, blobs: Iterable[tuple[str, bytes]]) -> "_Files":
        """The columns of :meth:`blobs` (decoded one at a time); ValueError if any is missing or of the wrong
        size."""
        got: dict = {}
        try:
            for k, data in blobs:
                if k in cls._ARRAYS:
                    dtype, width = cls._ARRAYS[k]
                    x = np.frombuffer(data, dtype=dtype)
                    got[k] = x.reshape(-1, width) if width else x
                else:
                    got[k] = json.loads(data)
            for k in ("paths", "doc_id", "title", "names"):  # its parts, in order
                parts = sorted(name for name in got if name.startswith(f"{k}."))
                if not parts:
                    raise KeyError(k)
                got[k] = [x for name in parts for x in got.pop(name)]
            a = {k: got[k] for k in cls._ARRAYS}
            paths, doc_ids, title, names, details = (got[k] for k in ("paths", "doc_id", "title", "names", "details"))
            del got
        except (KeyError, ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"snapshot unreadable: {exc}") from None
        n, start = len(paths), a["start"]
        m = len(doc_ids)
        if not (len(start) == n + 1 and start[0] == 0 and start[-1] == m and np.all(np.diff(start) >= 0)):
            raise ValueError("snapshot: document offsets do not fit")
        if any(len(a[k]) != n for k in ("ident", "times", "settled", "whole", "nbytes", "detail")):
            raise ValueError("snapshot: file columns of different lengths")
        if any(len(a[k]) != m for k in ("length", "sha", "line", "ids")) or len(title) != m or len(names) != m:
            raise ValueError("snapshot: document columns of different lengths")
        if n and (a["detail"].max() >= len(details)):
            raise ValueError("snapshot: a summary index out of range")
        counts = np.diff(start)
        if m == n and np.all(counts == 1):  # one document per file (the common folder): its path, shared
            path = paths
        else:
            path = [paths[f] for f in np.repeat(np.arange(n), counts).tolist()]
        doc_id = path if doc_ids.count(0) == m else [p if i == 0 else i for i, p in zip(doc_ids, path)]
        docs = DocColumns(doc_id, path, title, names, a["length"], a["sha"], a["line"], a["ids"])
        if len(a["title_docs"]) and (a["title_docs"].max() >= m or len(a["title_hashes"]) != len(a["title_docs"])):
            raise ValueError("snapshot: title index out of range")
        docs.set_titles(TitleIndex(a["title_hashes"], a["title_docs"], names))
        return cls(
            paths, a["ident"], a["times"], a["settled"], a["whole"], a["nbytes"], a["detail"], details, start, docs
        )


class StoreError(Exception):
    """A fault of the statistics store met at any point (open, read, write): an SQLite error, or a stored value that
    does not decode. ``damaged``: the file is wrong (it is set aside and a new one built); else the store is sound
    but cannot be used now (a full disk, a lock held too long: the statistics are kept in memory instead)."""

    def __init__(self, where: str, exc: BaseException):
        super().__init__(f"{where}: {exc}")
        self.cause = exc
        self.damaged = _damaged(exc)


# SQLite's primary result codes of a store that may be sound but cannot be used now: no permission, busy, locked, out
# of memory, read-only, an I/O error, full, cannot be opened, too big, no large-file support
_UNUSABLE = {3, 5, 6, 7, 8, 10, 13, 14, 18, 22}
# what one use of the store may raise on a damaged file: SQLite's errors, and those of decoding what it returned
_FAULTS = (sqlite3.Error, ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError)


def _damaged(exc: BaseException) -> bool:
    """Whether ``exc`` says the store's file is damaged, not merely unusable now."""
    if not isinstance(exc, sqlite3.Error):
        return True  # a stored value that does not decode
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if code is None:
        return not isinstance(exc, sqlite3.OperationalError)
    return code & 0xFF not in _UNUSABLE


class _OldSchema(Exception):
    """A store written by another version of lens: replaced without a word."""


class _Garbled(Exception):
    """A snapshot blob whose checksum does not match: the folder's rows are dropped and its files read again."""


def _checked(blobs: Iterable[tuple[str, bytes, int]]) -> Iterator[tuple[str, bytes]]:
    for name, data, crc in blobs:
        if not isinstance(data, bytes) or zlib.crc32(data) != crc:
            raise _Garbled(name)
        yield name, data


def _set_aside(path: Path) -> Path:
    """Rename a damaged store file, with its -wal and -shm, to ``<name>.corrupt-<time>``: kept, never deleted."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    k = 1
    while aside.exists():
        aside, k = path.with_name(f"{path.name}.corrupt-{stamp}.{k}"), k + 1
    # the log first: a process opening the path meanwhile must not replay the old log onto a new file
    for suffix in ("-wal", "-shm", ""):
        try:
            os.rename(f"{path}{suffix}", f"{aside}{suffix}")
        except FileNotFoundError:
            pass
    return aside


def _file_ident(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _root_of(scope: str) -> str:
    return scope.split("\x00", 1)[0]


class StatsStore:
    """The SQLite file of per-file statistics (``path`` None: in memory, for this process only).

    Every use of it (:meth:`_using`) raises :class:`StoreError` on any fault; :func:`survey_corpus` decides what
    follows. What happened to it is told once (``news``); why it is in memory, with every survey (``note``)."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else None
        self.file = self.path  # the file asked for (``path`` is None once the store is kept in memory instead)
        self.note: str | None = None  # why the store is in memory although a file was asked for
        self.news: list[str] = []  # what befell the store (set aside, a folder re-read), for the next survey to tell
        self.key: str | None = None  # its key among the process's stores (_STORES), if it is one of them
        self._pruned = -float("inf")  # time.monotonic() of the last look for folders to drop
        self._ident: tuple[int, int] | None = None  # (device, inode) of the file opened
        self._lock = threading.RLock()
        self.db = self._connect()

    # ---------------------------------------------------------------- opening
    def _connect(self) -> sqlite3.Connection:
        if self.path is None:
            return self._init(sqlite3.connect(":memory:", check_same_thread=False))
        try:
            return self._open_file()
        except _OldSchema:
            try:
                self._remove_file()
                return self._open_file()
            except (sqlite3.Error, OSError) as exc:
                return self._in_memory(exc)
        except sqlite3.Error as exc:
            if not _damaged(exc):  # cannot be created or written
                return self._in_memory(exc)
            try:  # corrupt or not a database: a cache, rebuilt from the folder; the file is kept for a post-mortem
                aside = _set_aside(self.path)
                self._set_aside_news(exc, aside)
                return self._open_file()
            except (sqlite3.Error, OSError) as again:
                return self._in_memory(again)
        except OSError as exc:
            return self._in_memory(exc)

    def _open_file(self) -> sqlite3.Connection:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        try:
            if db.execute("PRAGMA page_count").fetchone()[0] == 0:  # a new file (set on one in use, it is a write)
                db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # the pages of dropped folders can be handed back
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(f"PRAGMA cache_size={_CACHE_KIB}")
            row = self._init(db).execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            version = row[0] if row else None
            if version != str(_SCHEMA):
                if isinstance(version, str) and version.isdigit():
                    raise _OldSchema(version)
                raise sqlite3.DatabaseError(f"meta row 'schema': {version!r} is not a schema version")
            db.execute("BEGIN IMMEDIATE")  # writable (a read-only file or folder fails here, not mid-survey)
            db.execute("ROLLBACK")
            self._ident = _file_ident(self.path)
        except BaseException:
            db.close()
            raise
        return db

    def _remove_file(self) -> None:
        assert self.path is not None
        for suffix in ("-wal", "-shm", ""):
            try:
                os.unlink(f"{self.path}{suffix}")
            except FileNotFoundError:
                pass

    def _in_memory(self, exc: BaseException) -> sqlite3.Connection:
        self.kept_in_memory(exc)
        self.path = None
        return self._init(sqlite3.connect(":memory:", check_same_thread=False))

    def kept_in_memory(self, why: BaseException | str) -> None:
        """Say, with every survey from now on, that the store asked for is not used and why."""
        self.note = (
            f"file statistics store {self.file}: not usable ({why}); the statistics are kept in memory for this "
            "process, so every new process reads every file again"
        )
        log.info("%s", self.note)  # the answer carries the note; -v shows it as it happens

    def _set_aside_news(self, why: BaseException, aside: Path) -> None:
        self._tell(
            f"file statistics store {self.file}: damaged ({why}); set aside as {aside.name} and a new one built "
            "(each folder is read again when next asked about)"
        )

    def _tell(self, news: str) -> None:
        self.news.append(news)
        log.info("%s", news)

    def notes(self) -> list[str]:
        """What a question should tell with its answer: what befell the store since the last survey (told once),
        and why it is in memory (every time)."""
        with self._lock:
            news, self.news = self.news, []
        return news + ([self.note] if self.note else [])

    @staticmethod
    def _init(db: sqlite3.Connection) -> sqlite3.Connection:
        with db:
            db.executescript(
                """
                CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS scopes(
                    id INTEGER PRIMARY KEY, scope TEXT NOT NULL UNIQUE, gen INTEGER NOT NULL DEFAULT 0,
                    seen INTEGER NOT NULL DEFAULT 0);  -- a question's last use (unix seconds): StatsStore.prune
                CREATE TABLE IF NOT EXISTS files(
                    id INTEGER PRIMARY KEY, scope INTEGER NOT NULL, path TEXT NOT NULL, sig TEXT NOT NULL,
                    settled INTEGER NOT NULL, whole INTEGER NOT NULL, summary TEXT NOT NULL, UNIQUE(scope, path));
                CREATE TABLE IF NOT EXISTS docs(
                    id INTEGER PRIMARY KEY AUTOINCREMENT, file INTEGER NOT NULL, ord INTEGER NOT NULL,
                    doc_id TEXT NOT NULL, title TEXT NOT NULL, names TEXT NOT NULL, length INTEGER NOT NULL,
                    sha256 TEXT NOT NULL, line INTEGER);
                CREATE INDEX IF NOT EXISTS docs_file ON docs(file);
                -- postings by term; a document's row id is never reused (AUTOINCREMENT), so the postings of a
                -- dropped document are orphans no view maps, deleted in bulk now and then (_compact)
                CREATE TABLE IF NOT EXISTS terms(
                    term TEXT NOT NULL, doc INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY(term, doc)
                ) WITHOUT ROWID;
                -- a folder's files as columns (_Files.blobs), valid while the folder's generation is theirs: every
                -- write to a folder's files moves its scopes.gen; crc: zlib.crc32(data), checked on every load
                CREATE TABLE IF NOT EXISTS snapshots(
                    scope INTEGER NOT NULL, name TEXT NOT NULL, gen INTEGER NOT NULL, data BLOB NOT NULL,
                    crc INTEGER NOT NULL, PRIMARY KEY(scope, name));
                """
            )
            db.execute("INSERT OR IGNORE INTO meta VALUES('schema', ?)", (str(_SCHEMA),))
            db.execute("INSERT OR IGNORE INTO meta VALUES('dropped', '0')")
        return db

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _using(self) -> Iterator[None]:
        """One use of the store, under its lock: any fault in it — SQLite's at any point, or a stored value that
        does not decode — is a StoreError naming the store (what the survey recovers from, in one place)."""
        with self._lock:
            try:
                yield
            except _FAULTS as exc:
                raise StoreError(f"file statistics store {self.file or ':memory:'}", exc) from exc

    # ---------------------------------------------------------------- reading
    def _scope_id(self, scope: str, *, create: bool) -> int | None:
        if create:  # another process may be adding the same scope at this moment
            self.db.execute("INSERT OR IGNORE INTO scopes(scope, seen) VALUES(?, ?)", (scope, int(_now())))
        row = self.db.execute("SELECT id FROM scopes WHERE scope=?", (scope,)).fetchone()
        return row[0] if row else None

    def load(self, scope: str) -> _Files:
        """Every file the store holds for ``scope``, with its documents' statistics, and the folder's generation:
        its snapshot when that is of the current generation (a few reads), else its rows (one query). A snapshot
        blob that does not match its checksum drops the folder's rows: its files are read again."""
        with self._using():
            garbled = None
            self.db.execute("BEGIN")  # one read transaction: the generation and what is read agree
            try:
                row = self.db.execute("SELECT id, gen FROM scopes WHERE scope=?", (scope,)).fetchone()
                if row is None:
                    files = _Files.empty()
                    files.gen = 0
                    return files
                sid, gen = row
                try:
                    with self._blob_pages():
                        blobs = self.db.execute(
                            "SELECT name, data, crc FROM snapshots WHERE scope=? AND gen=?", (sid, gen)
                        )
                        try:
                            files = _Files.from_blobs(_checked(blobs))
                        finally:
                            blobs.close()  # a read left open would lock the table for the writes that follow
                    files.saved = True
                    files.gen = gen
                except ValueError:  # none of this generation, or of other lengths: the rows say the same, more slowly
                    files = self._rows(sid)
                    files.gen = gen
                except _Garbled as exc:
                    garbled = exc
                    files = _Files.empty()
                    files.gen = 0  # the folder's as a new one's, once its rows are dropped below
            finally:
                self.db.execute("COMMIT")
            if garbled is not None:  # never served: the rows are not trusted either, the files are read again
                self._forget([sid])
                self._tell(
                    f"file statistics store {self.file or ':memory:'}: the snapshot of {_root_of(scope)} is damaged "
                    f"(blob {garbled} does not match its checksum); its statistics were dropped and its files read "
                    "again"
                )
            return files

    @contextmanager
    def _blob_pages(self) -> Iterator[None]:
        """A snapshot's blobs pass through few cached pages (each is read or written once), and the pages the
        writes before cached are handed back: a million documents' snapshot is not held twice."""
        self.db.execute("PRAGMA cache_size=-2048")
        try:
            yield
        finally:
            self.db.execute(f"PRAGMA cache_size={_CACHE_KIB}")
            self.db.execute("PRAGMA shrink_memory")

    def _rows(self, sid: int) -> _Files:
        """The folder's files from their rows; ValueError naming the row and field of a value that does not
        decode."""
        paths: list[str] = []
        ident: list[tuple] = []
        times: list[tuple] = []
        settled: list[int] = []
        whole: list[int] = []
        nbytes: list[int] = []
        detail: list[int] = []
        details: list[dict] = []
        start = [0]
        doc_id: list[str] = []
        path: list[str] = []
        title: list[str] = []
        names: list[str] = []
        length: list[int] = []
        sha: list[str] = []
        line: list[int] = []
        ids: list[int] = []
        rows = self.db.execute(
            "SELECT f.path, f.sig, f.settled, f.whole, f.summary, d.id, d.doc_id, d.title, d.names, d.length, "
            "d.sha256, d.line FROM files f LEFT JOIN docs d ON d.file = f.id WHERE f.scope = ? ORDER BY f.id, d.ord",
            (sid,),
        )
        last = None
        for p, sig, st, wh, summary, did, d_id, t, nm, ln, sh, li in rows:
            if p != last:
                if last is not None:
                    start.append(len(doc_id))
                last = p
                try:
                    if type(p) is not str:
                        raise ValueError("path is not text")
                    i, tm = _unpack_sig(sig)
                    outcome = _unpack_summary(summary)
                except ValueError as exc:
                    raise ValueError(f"files row {p!r}: {exc}") from None
                paths.append(p)
                ident.append(i)
                times.append(tm)
                settled.append(st)
                whole.append(wh)
                if isinstance(outcome, int):
                    nbytes.append(outcome)
                    detail.append(-1)
                else:
                    nbytes.append(outcome["nbytes"])
                    detail.append(len(details))
                    details.append(outcome)
            if did is not None:
                if not (
                    type(d_id) is str
                    and type(t) is str
                    and type(nm) is str
                    and type(ln) is int
                    and type(sh) is str
                    and _HEX64.fullmatch(sh)
                    and (li is None or type(li) is int)
                ):
                    raise ValueError(f"docs row {did} (of file {p!r}): {_bad_doc_field(d_id, t, nm, ln, sh, li)}")
                doc_id.append(p if d_id == p else d_id)
                path.append(p)
                title.append(t)
                names.append(nm)
                length.append(ln)
                sha.append(sh)
                line.append(-1 if li is None else li)
                ids.append(did)
        if last is not None:
            start.append(len(doc_id))
        docs = DocColumns(
            doc_id, path, title, names, length, np.frombuffer(bytes.fromhex("".join(sha)), np.uint8), line, ids
        )
        return _Files(
            paths,
            np.asarray(ident, dtype=np.uint64).reshape(-1, 2),
            np.asarray(times, dtype=np.int64).reshape(-1, 3),
            np.asarray(settled, dtype=bool),
            np.asarray(whole, dtype=bool),
            np.asarray(nbytes, dtype=np.int64),
            np.asarray(detail, dtype=np.int64),
            details,
            np.asarray(start, dtype=np.int64),
            docs,
        )

    def counts(self, variants: Sequence[str]) -> list[tuple[str, int, int]]:
        """(run, document row id, count) for every document holding one of the runs ``variants``."""
        if not variants:
            return []
        with self._using():
            # as integers whatever a damaged page holds: a count is never a string in the prior's arithmetic
            q = f"SELECT term, CAST(doc AS INTEGER), CAST(n AS INTEGER) FROM terms WHERE term IN ({','.join('?' * len(variants))})"
            return self.db.execute(q, list(variants)).fetchall()

    # ---------------------------------------------------------------- a folder's use, dropping folders
    def visit(self, scope: str) -> bool:
        """Whether the store holds statistics of ``scope``; if so they are marked used now (written at most
        hourly, so a repeated question does not wait on another process's writes)."""
        now = int(_now())
        with self._using():
            row = self.db.execute("SELECT seen FROM scopes WHERE scope=?", (scope,)).fetchone()
            if row is None:
                return False
            if row[0] < now - _SEEN_EVERY_S:
                with self._if_writable():
                    with self.db:
                        self.db.execute("UPDATE scopes SET seen=? WHERE scope=?", (now, scope))
            return True

    def tidy(self, keep_days: float) -> None:
        """:meth:`prune` when this process has not looked for a day (or ever)."""
        if time.monotonic() - self._pruned >= _PRUNE_EVERY_S:
            self._pruned = time.monotonic()
            with self._using(), self._if_writable():
                self.prune(keep_days)

    @contextmanager
    def _if_writable(self, *, wait: bool = False) -> Iterator[None]:
        """A write that can be left for a later question: skipped if the store cannot be written now (a full disk)
        or, unless ``wait``, at once (another process's long write) — it costs a question neither its store nor any
        time. A damaged store still raises."""
        if not wait:
            self.db.execute("PRAGMA busy_timeout=0")
        try:
            yield
        except StoreError as exc:
            if exc.damaged:
                raise
        except sqlite3.Error as exc:
            if _damaged(exc):
                raise
        finally:
            if not wait:
                self.db.execute("PRAGMA busy_timeout=60000")  # connect(timeout=60)

    def prune(self, keep_days: float) -> int:
        """Drop the statistics of every folder no question used for ``keep_days`` (``reader.stats_keep_days``), or
        for a day once the folder no longer exists; how many folders."""
        now = _now()
        with self._using():
            old = [
                sid
                for sid, scope, seen in self.db.execute("SELECT id, scope, seen FROM scopes").fetchall()
                if seen < now - keep_days * 86400 or (seen < now - _GONE_S and not os.path.isdir(_root_of(scope)))
            ]
            self._forget(old)
        return len(old)

    def forget(self, root: str) -> tuple[int, int]:
        """Drop the statistics of the folder ``root`` (its real path) and of every folder inside it: (folders,
        files) dropped."""
        inside = os.path.join(root, "")
        with self._using():
            sids = [
                sid
                for sid, scope in self.db.execute("SELECT id, scope FROM scopes").fetchall()
                if _root_of(scope) == root or _root_of(scope).startswith(inside)
            ]
            marks = ",".join("?" * len(sids))
            files = self.db.execute(f"SELECT count(*) FROM files WHERE scope IN ({marks})", sids).fetchone()[0]
            self._forget(sids)
        return len(sids), files

    def _forget(self, sids: list[int]) -> None:
        """Every row of the folders ``sids`` deleted, their postings once enough are orphaned (:meth:`compact`),
        and the pages freed handed back to the file system."""
        if not sids:
            return
        with self.db:
            for sid in sids:
                dropped = self.db.execute(
                    "DELETE FROM docs WHERE file IN (SELECT id FROM files WHERE scope=?)", (sid,)
                ).rowcount
                for table in ("files", "snapshots"):
                    self.db.execute(f"DELETE FROM {table} WHERE scope=?", (sid,))
                self.db.execute("DELETE FROM scopes WHERE id=?", (sid,))
                self.db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key='dropped'", (dropped,))
        self.compact()
        # every free page handed back (a script is stepped to its end; execute() would free one page), and the file
        # shrinks now, not at the last close
        self.db.executescript("PRAGMA incremental_vacuum; PRAGMA wal_checkpoint(TRUNCATE);")

    # ---------------------------------------------------------------- writing
    # Every write to a folder's files moves its generation and returns (generation before, after): a survey whose
    # writes each began at the generation it knew holds columns equal to the store's, and may save them.
    def _bump(self, sid: int) -> tuple[int, int]:
        before = self.db.execute("SELECT gen FROM scopes WHERE id=?", (sid,)).fetchone()[0]
        self.db.execute("UPDATE scopes SET gen=? WHERE id=?", (before + 1, sid))
        return before, before + 1

    def save(self, scope: str, files: _Files) -> bool:
        """Keep ``files`` as the folder's snapshot, if they are of its current generation."""
        if files.gen is None:
            return False
        try:
            with self._using(), self._blob_pages(), self.db:
                sid = self._scope_id(scope, create=True)
                if self.db.execute("SELECT gen FROM scopes WHERE id=?", (sid,)).fetchone()[0] != files.gen:
                    return False  # another process wrote meanwhile: its survey or the next one saves
                self.db.execute("DELETE FROM snapshots WHERE scope=?", (sid,))
                self.db.executemany(
                    "INSERT INTO snapshots(scope, name, gen, data, crc) VALUES(?,?,?,?,?)",
                    ((sid, k, files.gen, v, zlib.crc32(v)) for k, v in files.blobs()),
                )
        except StoreError as exc:
            if exc.damaged:
                raise
            return False  # too large for a blob, a full disk: the rows still say it all
        files.saved = True
        return True

    def put(self, scope: str, items: Sequence[tuple[str, _Entry, Sequence[Document]]]) -> tuple[int, int]:
        """Store (path, entry, its documents) for each file, replacing what the store held for those paths; each
        entry's ``ids`` are set to its documents' new row ids."""
        postings: list[tuple[str, int, int]] = []
        with self._using(), self.db:
            sid = self._scope_id(scope, create=True)
            assert sid is not None
            gens = self._bump(sid)
            for path, entry, documents in items:
                row = self.db.execute("SELECT id, sig FROM files WHERE scope=? AND path=?", (sid, path)).fetchone()
                if row is not None and row[1] == entry.sig:
                    # another process stored this very content meanwhile: share its rows (replacing them would
                    # orphan the rows that process's memo points at)
                    entry.ids = tuple(
                        r[0] for r in self.db.execute("SELECT id FROM docs WHERE file=? ORDER BY ord", row[:1])
                    )
                    continue
                self._drop(sid, [path])
                cur = self.db.execute(
                    "INSERT INTO files(scope, path, sig, settled, whole, summary) VALUES(?,?,?,?,?,?)",
                    (
                        sid,
                        path,
                        entry.sig,
                        int(entry.settled),
                        int(entry.whole),
                        _pack_summary(entry.summary),
                    ),
                )
                fid = cur.lastrowid
                ids = []
                for k, (d, st) in enumerate(zip(documents, entry.docs)):
                    did = self.db.execute(
                        "INSERT INTO docs(file, ord, doc_id, title, names, length, sha256, line) VALUES(?,?,?,?,?,?,?,?)",
                        (fid, k, st.doc_id, st.title, st.names, st.length, st.sha256, st.line),
                    ).lastrowid
                    ids.append(did)
                    postings.extend((t, did, n) for t, n in _terms_of(d.lowered).items())
                entry.ids = tuple(ids)
            postings.sort()  # in key order: the B-tree is appended to in runs, not split page by page
            self.db.executemany("INSERT INTO terms(term, doc, n) VALUES(?,?,?)", postings)
        return gens

    def settle(self, scope: str, path: str, sig: str, settled: bool) -> tuple[int, int]:
        """Record whether a file whose content (hash) is unchanged is now settled."""
        with self._using(), self.db:
            sid = self._scope_id(scope, create=True)
            assert sid is not None
            gens = self._bump(sid)
            self.db.execute(
                "UPDATE files SET sig=?, settled=? WHERE scope=? AND path=?", (sig, int(settled), sid, path)
            )
        return gens

    def drop(self, scope: str, paths: Iterable[str]) -> tuple[int, int]:
        with self._using(), self.db:
            sid = self._scope_id(scope, create=True)
            assert sid is not None
            gens = self._bump(sid)
            self._drop(sid, list(paths))
        return gens

    def _drop(self, sid: int | None, paths: list[str]) -> None:
        dropped = 0
        for path in paths:
            row = self.db.execute("SELECT id FROM files WHERE scope=? AND path=?", (sid, path)).fetchone()
            if row is None:
                continue
            dropped += self.db.execute("DELETE FROM docs WHERE file=?", row).rowcount
            self.db.execute("DELETE FROM files WHERE id=?", row)
        if dropped:
            self.db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key='dropped'", (dropped,))

    def compact(self) -> bool:
        """Delete orphaned postings once the documents dropped since the last time are a large enough share (or
        later, if the store cannot be written now)."""
        with self._using(), self._if_writable(wait=True):
            dropped = int(self.db.execute("SELECT value FROM meta WHERE key='dropped'").fetchone()[0])
            if not dropped:
                return False
            live = self.db.execute("SELECT count(*) FROM docs").fetchone()[0]
            if dropped <= _COMPACT_AT * max(live, 1):
                return False
            with self.db:
                self.db.execute("DELETE FROM terms WHERE doc NOT IN (SELECT id FROM docs)")
                self.db.execute("UPDATE meta SET value='0' WHERE key='dropped'")
            return True
        return False


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


# --------------------------------------------------------------------------- the survey


def _stat_of(doc: Document) -> DocStat:
    names = NAMES_SEP.join(doc.title_names)
    return DocStat(doc.doc_id, doc.path, doc.title, names, len(doc.lowered), doc.sha256, doc.line)


@dataclass
class _Folder:
    """What this process knows of one folder (scope): its files as last surveyed, that survey's result and
    listing, and the watch on its directories once it is asked about again."""

    files: _Files | None = None
    last: CorpusScan | None = None
    listing: tuple | None = None  # the last survey's (paths, skipped, problems) from listing the folder
    watch: FolderWatch | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self) -> None:
        """Forget what this process knew of the folder (the store no longer holds its rows)."""
        if self.watch is not None:
            self.watch.close()
        self.files = self.last = self.listing = self.watch = None


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
                if not store.visit(scope) and folder.files is not None:
                    folder.reset()  # forgotten or dropped meanwhile: what this process knew of its rows is void
                store.tidy(settings.stats_keep_days)
                scan = _survey(root_path, root_real, settings, store, scope, folder, t0)
            break
        except StoreError as exc:  # a store fault at any point costs time, never the question
            store = _recover(store, exc, last=faults > 0)
            faults += 1
    scan.notes = store.notes()
    return scan


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


def _survey(
    root_path: Path, root_real: str, settings: ReaderSettings, store: StatsStore, scope: str, folder: _Folder, t0: float
) -> CorpusScan:
    if folder.watch is not None and not folder.watch.changed() and folder.last is not None:
        # the watch vouches for the listing, not for the files: an edit through a hard link outside the folder
        # gives its directories no event, so every file whose statistics are reused is stat'ed again
        if folder.files is not None and _unchanged(folder.files, os.path.join(root_path, "")):
            return _again(folder.last, root_path, t0)  # watched, and nothing changed since the last survey
    skipped: Counter = Counter()
    patterns, ignore_unread = _ignore_patterns(root_path, root_real)
    problems: list[str] = [ignore_unread] if ignore_unread else []
    dirs: list[str] = []
    sigs = (array("Q"), array("q"))  # each listed file's signature: (device, inode), (size, mtime_ns, ctime_ns)
    old = folder.files if folder.files is not None else store.load(scope)
    # a path listed where it was last time is the known string again: the listing holds no second million
    paths = _list_files(root_path, settings, skipped, problems, root_real, patterns, dirs, sigs, old.paths)
    if folder.last is not None and settings.watch and not settings.follow_symlinks:  # asked about again
        folder.watch = folder.watch or FolderWatch()
        folder.watch.armed = folder.watch.watch(dirs)  # every directory listed was watched before the listing
    prefix = os.path.join(root_path, "")
    ident = np.asarray(sigs[0], dtype=np.uint64).reshape(-1, 2)
    times = np.asarray(sigs[1], dtype=np.int64).reshape(-1, 3)
    n = len(paths)
    # each listed file's row in what this process (or the store) knew, -1 if new
    if old.paths == paths:
        paths = old.paths  # the same names: one list of them
        pos = np.arange(n, dtype=np.int64)
    else:
        index = dict(zip(old.paths, range(len(old))))
        pos = np.fromiter((index.get(p, -1) for p in paths), dtype=np.int64, count=n)
    known = np.flatnonzero(pos >= 0)
    rows = pos[known]
    same = np.zeros(n, dtype=bool)  # the signature is unchanged
    same[known] = (old.ident[rows] == ident[known]).all(axis=1) & (old.times[rows] == times[known]).all(axis=1)
    fresh = same.copy()  # ... and was settled when read: nothing to do
    fresh[known] &= old.settled[rows]
    gen = old.gen
    listed = np.zeros(len(old), dtype=bool)
    listed[rows] = True
    gone = np.flatnonzero(~listed)
    if len(gone):
        gen = _after(gen, store.drop(scope, [old.paths[i] for i in gone.tolist()]))
    settled = None  # old.settled, copied once a file settles by its content
    settled_before = time.time_ns() - _RACY_NS
    src = pos.copy()  # where each listed file's row comes from: old's rows, then the files read now
    pending: list[tuple[str, _Entry, Sequence[Document]]] = []
    chunks: list[_Files] = []
    pending_docs = changed = 0

    def flush() -> None:
        nonlocal gen, pending, pending_docs
        gen = _after(gen, store.put(scope, pending))
        chunks.append(_Files.of_entries([(p, e) for p, e, _ in pending]))  # columns: no object per file is kept
        pending, pending_docs = [], 0

    for k in np.flatnonzero(~fresh).tolist():
        p = paths[k]
        if same[k]:  # changed moments before it was read: the content decides
            r = int(pos[k])
            digest = old.file_hash(r)
            if digest:
                data = _read_bytes(prefix + p, settings.max_file_bytes, root_real)
                if isinstance(data, bytes) and sha256_hex(data) == digest:
                    if settled is None:
                        settled = old.settled.copy()
                    settled[r] = times[k, 2] < settled_before
                    gen = _after(gen, store.settle(scope, p, old.sig(r), bool(settled[r])))
                    continue
        got: list = []
        res = _read_file(prefix + p, p, settings, root_real, got)
        entry = _Entry(
            _pack_sig(got[0]) if got else "",
            bool(got) and got[0][4] < settled_before,
            not _is_container(p),
            res.outcome(),
            tuple(_stat_of(d) for d in res.documents),
            (),
        )
        src[k] = len(old) + changed
        changed += 1
        pending.append((p, entry, res.documents))
        pending_docs += len(res.documents)
        if len(pending) >= _BATCH or pending_docs >= _BATCH_DOCS:  # shards: thousands of documents per batch
            flush()
    if pending:
        flush()
    if len(gone) or changed:  # rows were dropped or replaced: perhaps enough orphaned postings to delete
        store.compact()
    base = old if settled is None else replace(old, settled=settled)
    if not changed and not len(gone) and old.paths == paths:
        files = base  # the same files (some perhaps settled now): the same documents' columns
    else:
        files = _Files.gather([base, *chunks], src)
        chunks.clear()  # their columns are in files now
    if files is not old:
        files.gen, files.saved = gen, False
    if not files.saved and files.gen is not None and store.path is not None:
        store.save(scope, files)  # the next process loads these columns instead of every file's rows
    folder.files = files
    # the files' own list of paths: equal to the listing's, whose strings are then freed (a million of them)
    listing = (files.paths, Counter(skipped), list(problems))
    if files is old and folder.last is not None and folder.listing == listing:
        scan = _again(folder.last, root_path, t0)  # the same listing, no file changed: the same statistics
    else:
        scan = _scan_of(root_path, root_real, settings, store, files, skipped, problems, ignore_unread)
    folder.last, folder.listing = scan, listing
    scan.seconds = time.perf_counter() - t0
    return scan


def _unchanged(files: _Files, prefix: str) -> bool:
    """Whether every one of ``files`` still has the stat signature (device, inode, size, mtime, ctime) its
    statistics were taken under, each settled when read (≈ 2 µs a file: 10 ms for 5,000)."""
    if not files.settled.all():  # changed moments before its reading: only its content can tell
        return False
    ident, times = array("Q"), array("q")
    for p in files.paths:
        try:
            st = os.stat(prefix + p)
        except OSError:  # gone, or not readable now: the survey says which
            return False
        ident.extend((st.st_dev, st.st_ino))
        times.extend((st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return np.array_equal(np.frombuffer(ident, dtype=np.uint64), files.ident.reshape(-1)) and np.array_equal(
        np.frombuffer(times, dtype=np.int64), files.times.reshape(-1)
    )


def _again(last: CorpusScan, root: Path, t0: float) -> CorpusScan:
    """The last survey's result again, for a folder in which nothing changed."""
    return replace(
        last, root=root, seconds=time.perf_counter() - t0, problems=list(last.problems), skipped=Counter(last.skipped)
    )


def _scan_of(
    root_path: Path,
    root_real: str,
    settings: ReaderSettings,
    store: StatsStore,
    files: _Files,
    skipped: Counter,
    problems: list[str],
    ignore_unread: str | None,
) -> CorpusScan:
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
    table = DocumentTable(root_path, root_real, settings, docs)
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


class DocumentTable(Sequence[Document]):
    """The surveyed documents, each read from its file when first asked for (a few files kept in memory)."""

    def __init__(self, root: Path, root_real: str, settings: ReaderSettings, stats: Sequence[DocStat]):
        self.root, self.root_real, self.settings, self.stats = root, root_real, settings, stats
        self._files: OrderedDict[str, dict[str, Document]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.stats)

    def __iter__(self) -> Iterator[Document]:
        return (self[i] for i in range(len(self.stats)))

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self.stats)))]
        st = self.stats[i]
        with self._lock:
            docs = self._files.get(st.path)
            if docs is None:
                res = _read_file(os.path.join(self.root, st.path), st.path, self.settings, self.root_real)
                docs = {d.doc_id: d for d in res.documents}
                self._files[st.path] = docs
                if len(self._files) > 64:
                    self._files.popitem(last=False)
            else:
                self._files.move_to_end(st.path)
        doc = docs.get(st.doc_id)
        if doc is None:  # changed or gone since the survey: the document as surveyed, its text its title
            doc = Document(
                doc_id=st.doc_id, path=st.path, title=st.title, text=st.title, sha256=st.sha256, line=st.line
            )
        return doc
