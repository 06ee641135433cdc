"""The statistics store: one SQLite file outside every folder (``reader.stats_store``) holding, per folder, each
file's stat signature and reading outcome, its documents' statistics and term counts, and the folder's snapshot.
A cache, never an index: every fault met in it is a :class:`StoreError`, which the survey turns into a rebuild or
a store kept in memory (``lens.reader._filestats``).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sqlite3
import struct
import threading
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
from platformdirs import user_cache_dir

from lens.reader._columns import DocStat
from lens.reader._documents import Document
from lens.reader._folder import (
    _HEX64,
    _bad_doc_field,
    _Entry,
    _Files,
    _pack_summary,
    _unpack_sig,
    _unpack_summary,
)
from lens.reader._postings import Postings, count_terms
from lens.reader._spill import Spill, SpilledPart

__all__ = ["StatsStore", "StoreError", "default_store_path"]


log = logging.getLogger("lens.stats")


_SCHEMA = 6  # 4: snapshot checksums, a folder's last use, incremental vacuum; 5: units' text; 6: postings as runs


_CACHE_KIB = -65536  # SQLite page cache while writing (negative: KiB), 64 MiB: large batches insert without thrashing


_WAL_BYTES = 64 << 20  # the write-ahead log is cut back to this after a checkpoint (a first survey writes GBs)


_COMPACT_AT = 0.25  # orphaned postings are deleted once the documents dropped since exceed this share of the live ones


# held writes of one folder written together (StatsStore.flush), up to this many files or documents: a row per term
# per write, the write's runs packed at once (the survey's write batches are of this size too)
_HELD_WRITE = 50_000


# a held write's parts are packed into runs this many documents at a time, at most: a run per term per pack. The
# first survey of 150K files: all 50,000 at once, peak RSS 816 MiB and a store of 121.9 MiB; per part (5,000),
# 609 MiB and 133.5 MiB; 12,500: 632 MiB and 128.0 MiB
_PACK_DOCS = 12_500


# term counts held in memory for a later write (StatsStore.flush), at most this many bytes (12 a posting, and the
# parts' vocabularies beside: ≈ 2.8M postings, 43K documents of Wikipedia abstracts); a survey's parts past it are
# held in a temporary file beside the store (lens.reader._spill): at 1.5M documents ≈ 100M postings, which memory
# would not hold within 2 GiB
_HELD_BYTES = 32 << 20


_SEEN_EVERY_S = 3600  # a folder's last use is written at most this often (a write per question would contend)


_PRUNE_EVERY_S = 86400  # a process looks for folders to drop when it first surveys, then at most this often


_GONE_S = 86400  # a folder that no longer exists is dropped once unused for this long (a drive may be remounted)


_now = time.time  # the clock of a folder's last use


def default_store_path() -> Path:
    """Where the store lives unless ``reader.stats_store`` says otherwise: the user cache folder."""
    return Path(user_cache_dir("lens")) / "stats.sqlite"


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
        self._deferred: list[_Deferred] = []  # term counts held in memory, written by flush (see put_counted)
        self._void: list[_Deferred] = []  # held rows a flush could not write (another process stored them)
        self._at_exit = False
        self._spill: Spill | None = None  # held term counts past _HELD_BYTES (made when first needed)
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
            db.execute(f"PRAGMA journal_size_limit={_WAL_BYTES}")  # the log of a large write shrinks after it
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
                -- postings by term: one row per term per write, keyed by its first document, its data segments
                -- of packed runs (the documents a worker counted together; _unpack_run); a document's row id is
                -- never reused (AUTOINCREMENT), so the postings of a dropped document are orphans no view maps,
                -- cut out in bulk now and then, which joins each term's rows into one (compact)
                CREATE TABLE IF NOT EXISTS terms(
                    term TEXT NOT NULL, doc INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(term, doc)
                ) WITHOUT ROWID;
                -- a folder's files as columns (_Files.blobs), valid while the folder's generation is theirs: every
                -- write to a folder's files moves its scopes.gen; crc: zlib.crc32(data), checked on every load
                -- a document format's unit (a PDF page, a slide, …) as extracted: its text and places, compressed,
                -- so an unchanged file is never parsed again; orphans of dropped documents go with the postings
                CREATE TABLE IF NOT EXISTS units(doc INTEGER PRIMARY KEY, data BLOB NOT NULL);
                CREATE TABLE IF NOT EXISTS snapshots(
                    scope INTEGER NOT NULL, name TEXT NOT NULL, gen INTEGER NOT NULL, data BLOB NOT NULL,
                    crc INTEGER NOT NULL, PRIMARY KEY(scope, name));
                """
            )
            db.execute("INSERT OR IGNORE INTO meta VALUES('schema', ?)", (str(_SCHEMA),))
            db.execute("INSERT OR IGNORE INTO meta VALUES('dropped', '0')")
        return db

    def close(self) -> None:
        """Close the file; term counts still held are dropped (their files are read again)."""
        self._deferred.clear()
        self._void.clear()
        self._unspill()
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
        rows = self.db.execute(
            "SELECT f.path, f.sig, f.settled, f.whole, f.summary, d.id, d.doc_id, d.title, d.names, d.length, "
            "d.sha256, d.line FROM files f LEFT JOIN docs d ON d.file = f.id WHERE f.scope = ? ORDER BY f.id, d.ord",
            (sid,),
        )
        # a path is one file of a folder (UNIQUE(scope, path)), and a file's rows come together (ORDER BY f.id)
        return _Files.of_entries([(p, _entry_of(p, list(group))) for p, group in groupby(rows, key=itemgetter(0))])

    def counts(self, variants: Sequence[str]) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """(run, document row ids, counts) for the documents holding one of the runs ``variants``, a run of
        postings at a time (a run's documents ascending)."""
        if not variants:
            return []
        with self._using():
            q = f"SELECT term, doc, data FROM terms WHERE term IN ({','.join('?' * len(variants))})"
            got = [_unpack_run(term, doc, data) for term, doc, data in self.db.execute(q, list(variants))]
            for held in (*self._deferred, *self._void):
                got.extend(held.counts(variants))
            return got

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
        self._deferred = [d for d in self._deferred if d.sid not in sids]
        self._void = [d for d in self._void if d.sid not in sids]
        self._unspill()
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

    def save(self, scope: str, files: _Files, before: _Files | None = None) -> bool:
        """Keep ``files`` as the folder's snapshot, if they are of its current generation. ``before``: the
        folder's files as its stored snapshot held them (saved, of their generation), whose blobs of unchanged
        strings are kept rather than encoded again."""
        if files.gen is None:
            return False
        same = files.same_parts(before) if before is not None and before.saved and before.gen is not None else None
        try:
            with self._using(), self._blob_pages(), self.db:
                sid = self._scope_id(scope, create=True)
                if self.db.execute("SELECT gen FROM scopes WHERE id=?", (sid,)).fetchone()[0] != files.gen:
                    return False  # another process wrote meanwhile: its survey or the next one saves
                keep: frozenset[str] = frozenset()
                if same and before is not None:  # blobs still of ``before``'s generation whose strings are unchanged
                    q = "SELECT name FROM snapshots WHERE scope=? AND gen=?"
                    keep = same & {name for (name,) in self.db.execute(q, (sid, before.gen))}
                marks = ",".join("?" * len(keep))
                self.db.execute(f"DELETE FROM snapshots WHERE scope=? AND name NOT IN ({marks})", (sid, *keep))
                self.db.execute("UPDATE snapshots SET gen=? WHERE scope=?", (files.gen, sid))  # the kept ones
                self.db.executemany(
                    "INSERT INTO snapshots(scope, name, gen, data, crc) VALUES(?,?,?,?,?)",
                    ((sid, k, files.gen, v, zlib.crc32(v)) for k, v in files.blobs(keep)),
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
        lowered, units = [], []
        for _, _, documents in items:
            lowered.extend(d.lowered for d in documents)
            units.append(tuple(_pack_unit(d) if d.kind == "unit" else None for d in documents))
        runs = _runs(count_terms(lowered), np.arange(len(lowered), dtype=np.int64))
        return self.put_counted(scope, [(p, e, u) for (p, e, _), u in zip(items, units)], [(runs, len(lowered))])

    def put_counted(
        self,
        scope: str,
        items: Sequence[tuple[str, _Entry, Sequence[bytes | None]]],
        counted: Sequence[tuple[Any, int]],
        *,
        defer: bool = False,
    ) -> tuple[int, int]:
        """Store (path, entry, each document's packed unit or None) for each file, with its documents' term
        counts, replacing what the store held for those paths; each entry's ``ids`` are set to its documents' new
        row ids. ``counted``: (runs of postings, documents) of parts of the entries' documents one after another,
        a run's key the index of its first document in its part (:func:`_runs`). Rows are written a table at a
        time.

        ``defer``: ``counted`` holds each part's :class:`Postings` instead of runs, and its term counts are not
        written now but held in this process (:meth:`counts` serves them; in memory up to ``_HELD_BYTES``, then in
        a temporary file beside the store: ``lens.reader._spill``) until :meth:`flush` — at the folder's
        next survey or at the process's exit. Until then the files' rows carry no signature, so a process that
        reads them (this one ended before writing the counts) reads those files again: never a file without its
        counts."""
        with self._using(), self.db:
            sid = self._scope_id(scope, create=True)
            assert sid is not None
            gens = self._bump(sid)  # a write: this transaction holds the write lock from here on
            batch = self._batch(sid, items)
            if batch.stale:
                self._drop_files(batch.stale)
            files = batch.files
            if defer:
                files = [(f[0], f[1], f[2], "", *f[4:]) for f in batch.files]
            self._insert(files, batch.docs, batch.units)
            if defer:
                self._held(_Deferred(sid, scope, _Signatures.of(batch.files), [], os.getpid()), counted, batch.rows)
            else:
                self._insert_terms(_term_rows(counted, batch.rows))
        return gens

    def _insert(self, files: list[tuple], docs: list[tuple], units: list[tuple[int, bytes]]) -> None:
        self.db.executemany(
            "INSERT INTO files(id, scope, path, sig, settled, whole, summary) VALUES(?,?,?,?,?,?,?)", files
        )
        self.db.executemany(
            "INSERT INTO docs(id, file, ord, doc_id, title, names, length, sha256, line) VALUES(?,?,?,?,?,?,?,?,?)",
            docs,
        )
        self.db.executemany("INSERT OR REPLACE INTO units(doc, data) VALUES(?,?)", units)

    def hold(self, scope: str, files: int, counted: Sequence[tuple[Postings, int]]) -> tuple[tuple[int, int], int]:
        """A folder's first survey, a batch at a time: ``files`` files read, whose documents' term counts are
        ``counted`` (each part's :class:`Postings` and its documents, one part after another), held for
        :meth:`flush` as by :meth:`put_counted` with ``defer`` — and the files' and documents' rows held too, not
        written before :meth:`flush`. Only the documents' row ids are taken now: the first of as many as there are
        documents, one after another, is returned (ids are never reused, so no other process's write takes them).
        The rows are written from the folder's columns (:meth:`keep_for_flush`; ≈ 1 KB a file less than rows held
        here) in the transaction of the survey's last held counts (a file's row is never stored before its
        counts). Nothing of the folder is written now: its generation stays as it is (returned as both of the
        generations of :meth:`put_counted`). Not for documents with units (a document format's)."""
        n = sum(k for _, k in counted)
        with self._using(), self.db:
            sid = self._scope_id(scope, create=True)
            assert sid is not None
            gen = self.db.execute("SELECT gen FROM scopes WHERE id=?", (sid,)).fetchone()[0]
            first = self._next_doc()
            if not self.db.execute("UPDATE sqlite_sequence SET seq=? WHERE name='docs'", (first + n - 1,)).rowcount:
                self.db.execute("INSERT INTO sqlite_sequence(name, seq) VALUES('docs', ?)", (first + n - 1,))
            rows = np.arange(first, first + n)
            self._held(_Deferred(sid, scope, _Signatures.of([]), [], os.getpid(), files), counted, rows)
        return (gen, gen), first

    def _next_doc(self) -> int:
        """The next document row id (AUTOINCREMENT's sequence, or past the highest row)."""
        seq = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name='docs'").fetchone()
        return max(seq[0] if seq else 0, self.db.execute("SELECT max(id) FROM docs").fetchone()[0] or 0) + 1

    def _held(self, held: _Deferred, counted: Sequence[tuple[Any, int]], rows: np.ndarray) -> None:
        at = 0
        in_memory = sum(
            12 * len(p.postings) for d in (*self._deferred, *self._void) for p in d.parts if isinstance(p, _HeldPart)
        )
        for postings, n in counted:
            part = None
            if in_memory + 12 * len(postings) > _HELD_BYTES:
                part = self._spilled(postings, rows[at : at + n])
            if part is None:
                part = _HeldPart(postings, rows[at : at + n])
                in_memory += 12 * len(postings)
            held.parts.append(part)
            at += n
        self._deferred.append(held)
        if not self._at_exit:
            atexit.register(self._flush_at_exit)
            self._at_exit = True

    def _spilled(self, postings: Postings, rows: np.ndarray) -> SpilledPart | None:
        """A part's postings held in the temporary file beside the store; None when it cannot be written (they
        are held in memory then)."""
        try:
            if self._spill is None:
                self._spill = Spill(self.path.parent if self.path is not None else None)
            return SpilledPart(self._spill, postings, rows)
        except OSError as exc:
            log.info("file statistics store %s: held term counts kept in memory (%s)", self.file, exc)
            return None

    def _unspill(self) -> None:
        """The temporary file of held term counts closed (its space handed back) once none of its parts is held."""
        if self._spill is not None and not any(
            isinstance(p, SpilledPart) for d in (*self._deferred, *self._void) for p in d.parts
        ):
            self._spill.close()
            self._spill = None

    def _insert_terms(self, merged: dict[str, list]) -> None:
        """One row per term of ``merged`` (:func:`_term_rows`), in key order: the B-tree's pages are filled, not split
        half-empty."""
        self.db.executemany(
            "INSERT INTO terms(term, doc, data) VALUES(?,?,?)",
            ((t, merged[t][0], b"".join(merged[t][1:])) for t in sorted(merged)),
        )

    def deferred(self, scope: str | None = None) -> bool:
        """Whether term counts of ``scope`` (None: of any folder) are held, not yet written (:meth:`flush`)."""
        with self._lock:
            return any(scope is None or d.scope == scope for d in self._deferred)

    def keep_for_flush(self, scope: str, files: _Files, before: _Files | None = None) -> None:
        """``files``, the folder's columns after a survey whose counts are held, saved as its snapshot once they
        are written (a snapshot of files whose rows carry no signature yet would be trusted too early); ``before``:
        as for :meth:`save`. A folder's first survey's rows (:meth:`hold`) are written from them; when this
        survey held such rows, an earlier survey's of the folder, not written yet, are dropped (this one read every
        file again)."""
        with self._lock:
            if any(d.scope == scope and d.under_way for d in self._deferred):  # this survey held rows
                self._deferred = [d for d in self._deferred if not (d.scope == scope and d.rows and not d.under_way)]
            for d in self._deferred:
                if d.scope == scope:
                    d.files, d.before = files, before

    def flush(self, *, wait: bool = True) -> None:
        """Write every held term count (:meth:`put_counted` with ``defer``), and the signatures of their files
        (or their rows, held too), a folder's held writes in one (a row per term); then the snapshots kept for
        after it (:meth:`keep_for_flush`), where no other process wrote to the folder meanwhile. What cannot be
        written now (another process's write holds the store, unless ``wait``; a full disk) stays held for a later
        flush. Held rows that another process has stored files at meanwhile (or whose folder it dropped) are not
        written: they are set aside (still served by :meth:`counts` until :meth:`voided` is asked)."""
        with self._lock:
            # a first survey still under way (in another thread) is written once it is done (keep_for_flush)
            waiting = [d for d in self._deferred if d.under_way]
            self._deferred = [d for d in self._deferred if not d.under_way]
            try:
                self._flush(wait)
            finally:
                self._deferred.extend(waiting)
            self._unspill()

    def _flush(self, wait: bool) -> None:
        """:meth:`flush` of the held writes of finished surveys, a folder's writes together (:meth:`_together`)."""
        while self._deferred:
            same = self._together()
            rows = same[-1].files if any(d.rows for d in same) else None
            # a first survey's rows, written with its last held counts (a file's row never before its counts)
            last = rows is not None and not any(d.rows and d.files is rows for d in self._deferred[len(same) :])
            gens: tuple[int, int] | None = None
            free = True
            with self._using(), self._if_writable(wait=wait):
                with self.db:
                    free = self._free(same)
                    if free:
                        done = self._bump(same[0].sid)
                        merged: dict[str, list] = {}
                        for pack in _packs([p for d in same for p in d.parts]):
                            _merge(merged, _runs(*_joined(pack)))
                        self._insert_terms(merged)
                        # a file replaced by another process meanwhile has another row id: nothing is set on it
                        self.db.executemany(
                            "UPDATE files SET sig=? WHERE id=? AND sig=''",
                            [pair for d in same for pair in d.sigs.pairs()],
                        )
                        if last:
                            assert rows is not None
                            self._insert_folder(same[0].sid, rows)
                if free:
                    gens = done  # committed
            if not free:
                del self._deferred[: len(same)]
                self._void.extend(same)
                continue
            if gens is None:
                return
            del self._deferred[: len(same)]
            held = same[-1]
            files = held.files
            if files is not None and files.gen is not None:
                files.gen = gens[1] if gens[0] == files.gen else None
                rest = [d for d in self._deferred if d.scope == held.scope]
                if rest:
                    rest[0].files, rest[0].before = files, held.before  # saved after the folder's last held write
                elif files.gen is not None and self.path is not None:
                    self.save(held.scope, files, held.before)

    def _free(self, same: list[_Deferred]) -> bool:
        """Whether held writes of a folder's first survey may be written: their folder is still the one they were
        taken for, and no other process stored any of its files meanwhile (its rows would be replaced under its
        memo; this survey's rows are written after all its counts)."""
        if not any(d.rows for d in same):
            return True
        row = self.db.execute("SELECT scope FROM scopes WHERE id=?", (same[0].sid,)).fetchone()
        if row is None or row[0] != same[0].scope:
            return False
        return self.db.execute("SELECT 1 FROM files WHERE scope=? LIMIT 1", (same[0].sid,)).fetchone() is None

    def _insert_folder(self, sid: int, files: _Files) -> None:
        """The rows of a folder's first survey from its columns (:meth:`hold`): each file at a new row id, each
        document at the row id it was given; ``_HELD_WRITE`` files at a time (the rows of 1.5M files made at once
        were 1.4 GB)."""
        fid = (self.db.execute("SELECT max(id) FROM files").fetchone()[0] or 0) + 1
        for a in range(0, len(files), _HELD_WRITE):
            batch = _Batch(np.zeros(0, dtype=np.int64))
            for i in range(a, min(a + _HELD_WRITE, len(files))):
                entry = files.entry(i)
                batch.add(fid + i, sid, files.paths[i], entry, (), entry.ids)
            self._insert(batch.files, batch.docs, batch.units)

    def unhold(self, scope: str) -> None:
        """Drop what a first survey of ``scope`` that did not finish held (its rows are not known: :meth:`hold`);
        its files are read again by the next survey."""
        with self._lock:
            self._deferred = [d for d in self._deferred if not (d.scope == scope and d.under_way)]
            self._unspill()

    def voided(self, scope: str) -> bool:
        """Whether held rows of ``scope`` were set aside by a flush (another process stored its files meanwhile):
        this process's columns of the folder are then not the store's (forgotten now, with those rows)."""
        with self._lock:
            mine = [d for d in self._void if d.scope == scope]
            self._void = [d for d in self._void if d.scope != scope]
            self._unspill()
            return bool(mine)

    def _together(self) -> list[_Deferred]:
        """The held writes at the front written as one: the folder's writes one after another (a survey's chunks),
        up to ``_HELD_WRITE`` files or documents (their runs are packed at once: a row per term and write)."""
        first = self._deferred[0]
        out, files, docs = [], 0, 0
        for d in self._deferred:
            n = sum(len(p.rows) for p in d.parts)
            k = len(d.sigs) + d.rows
            if d.sid != first.sid or out and max(files + k, docs + n) > _HELD_WRITE:
                break
            out.append(d)
            files, docs = files + k, docs + n
        return out

    def _flush_at_exit(self) -> None:
        """At the process's exit: the held counts written (a fault here only costs the next survey a re-read)."""
        if not self._deferred or self._deferred[0].pid != os.getpid():  # a forked child: the parent's to write
            return
        try:
            self.flush()
        except (StoreError, sqlite3.Error, OSError) as exc:
            log.info("file statistics store %s: held term counts not written at exit (%s)", self.file, exc)

    def _batch(self, sid: int, items: Sequence[tuple[str, _Entry, Sequence[bytes | None]]]) -> _Batch:
        """The rows a write of ``items`` adds (its files, documents and units, with new row ids), the stored files
        it replaces, and each document's row id; an entry whose very content another process stored meanwhile
        shares that process's rows (replacing them would orphan the rows its memo points at)."""
        known: dict[str, tuple[int, str]] = {}
        paths = [p for p, _, _ in items]
        for at in range(0, len(paths), 500):
            part = paths[at : at + 500]
            q = f"SELECT path, id, sig FROM files WHERE scope=? AND path IN ({','.join('?' * len(part))})"
            known.update((p, (i, g)) for p, i, g in self.db.execute(q, (sid, *part)))
        fid = (self.db.execute("SELECT max(id) FROM files").fetchone()[0] or 0) + 1
        did = self._next_doc()
        out = _Batch(np.full(sum(len(e.docs) for _, e, _ in items), -1, dtype=np.int64))
        runs: list[tuple[int, int, int]] = []  # (first document in the batch, its row id, documents)
        at = 0
        for path, entry, packed in items:
            k = len(entry.docs)
            row = known.get(path)
            if row is not None and row[1] == entry.sig:  # its counts are that process's already
                entry.ids = tuple(
                    r[0] for r in self.db.execute("SELECT id FROM docs WHERE file=? ORDER BY ord", row[:1])
                )
                at += k
                continue
            if row is not None:
                out.stale.append(row[0])
            entry.ids = tuple(range(did, did + k))
            out.add(fid, sid, path, entry, packed, entry.ids)
            if runs and runs[-1][0] + runs[-1][2] == at:  # row ids follow on as the documents do
                runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + k)
            else:
                runs.append((at, did, k))
            fid, did, at = fid + 1, did + k, at + k
        for at, first, k in runs:  # where the stored files' documents went (few runs: files stored in order)
            out.rows[at : at + k] = np.arange(first, first + k)
        return out

    def unit(self, doc_row: int) -> tuple[str, dict] | None:
        """(the signature of its file when stored, the unit's text and places) for the unit stored as document row
        ``doc_row``; None when the store holds no such unit."""
        with self._using():
            row = self.db.execute(
                "SELECT f.sig, u.data FROM units u JOIN docs d ON d.id = u.doc JOIN files f ON f.id = d.file "
                "WHERE u.doc = ?",
                (int(doc_row),),
            ).fetchone()
            if row is None:
                return None
            try:
                return row[0], json.loads(zlib.decompress(row[1]))
            except (zlib.error, ValueError, TypeError) as exc:
                raise ValueError(f"units row {doc_row}: data does not decode ({exc})") from None

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
        ids = []
        for path in paths:
            row = self.db.execute("SELECT id FROM files WHERE scope=? AND path=?", (sid, path)).fetchone()
            if row is not None:
                ids.append(row[0])
        self._drop_files(ids)

    def _drop_files(self, ids: list[int]) -> None:
        """The files rows ``ids`` deleted with their documents (their postings are orphans from now on)."""
        dropped = 0
        for fid in ids:
            dropped += self.db.execute("DELETE FROM docs WHERE file=?", (fid,)).rowcount
            self.db.execute("DELETE FROM files WHERE id=?", (fid,))
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
                self._cut_orphans()
                self.db.execute("DELETE FROM units WHERE doc NOT IN (SELECT id FROM docs)")
                self.db.execute("UPDATE meta SET value='0' WHERE key='dropped'")
            return True
        return False

    def _cut_orphans(self) -> None:
        """Every term's runs joined into one, without the documents no longer in the store (a term left with
        none is dropped): the table written anew, a term at a time."""
        live = np.fromiter((r[0] for r in self.db.execute("SELECT id FROM docs ORDER BY id")), dtype=np.int64)
        self.db.execute("DROP TABLE IF EXISTS terms_new")
        self.db.execute(
            "CREATE TABLE terms_new(term TEXT NOT NULL, doc INTEGER NOT NULL, data BLOB NOT NULL, "
            "PRIMARY KEY(term, doc)) WITHOUT ROWID"
        )

        def joined() -> Iterator[tuple[str, int, bytes]]:
            rows = self.db.execute("SELECT term, doc, data FROM terms ORDER BY term, doc")
            for term, group in groupby(rows, key=itemgetter(0)):
                runs = [_unpack_run(*r) for r in group]
                docs = np.concatenate([d for _, d, _ in runs])
                counts = np.concatenate([n for _, _, n in runs])
                at = np.minimum(np.searchsorted(live, docs), max(len(live) - 1, 0))
                keep = live[at] == docs if len(live) else np.zeros(len(docs), dtype=bool)
                if keep.any():
                    order = np.argsort(docs[keep], kind="stable")
                    yield term, *_pack_run(docs[keep][order], counts[keep][order])

        self.db.executemany("INSERT INTO terms_new(term, doc, data) VALUES(?,?,?)", joined())
        self.db.execute("DROP TABLE terms")
        self.db.execute("ALTER TABLE terms_new RENAME TO terms")


# a row's data: one segment or more, each a run of postings of one write (the documents a worker counted together):
# its first document (8 bytes), one byte telling the widths (bits 0-1: the gaps between documents, 2-3: the counts;
# 1, 2, 4 or 8 bytes), how many postings (4 bytes), the gaps from each document to the next, then every count
_WIDTHS = (np.dtype("<u1"), np.dtype("<u2"), np.dtype("<u4"), np.dtype("<u8"))
_FIRST = struct.Struct("<q")
_HEAD = struct.Struct("<qBI")


def _width(largest: np.ndarray) -> np.ndarray:
    """The code (0..3) of the narrowest of _WIDTHS holding each of ``largest``."""
    return (largest > 0xFF).astype(np.int64) + (largest > 0xFFFF) + (largest > 0xFFFFFFFF)


def _pack_run(docs: np.ndarray, counts: np.ndarray) -> tuple[int, bytes]:
    """(first document, data) of one run of ascending documents and their counts, as one segment."""
    gaps = np.diff(docs)
    g = int(_width(np.asarray(gaps.max() if len(gaps) else 0)))
    c = int(_width(np.asarray(counts.max())))
    head = _HEAD.pack(int(docs[0]), g | c << 2, len(docs))
    return int(docs[0]), head + gaps.astype(_WIDTHS[g]).tobytes() + counts.astype(_WIDTHS[c]).tobytes()


def _unpack_run(term: Any, key: Any, data: Any) -> tuple[str, np.ndarray, np.ndarray]:
    """(term, documents, counts) of one stored row, its segments one after another; ValueError naming the row if
    it does not decode."""
    if type(term) is not str or type(key) is not int or not isinstance(data, bytes) or not data:
        raise ValueError(f"terms row ({term!r:.40}, {key!r:.20}): not a run of postings")
    docs, counts = [], []
    at = 0
    while at < len(data):
        if len(data) - at < _HEAD.size:
            raise ValueError(f"terms row ({term!r:.40}, {key}): a segment cut short at byte {at}")
        first, tag, m = _HEAD.unpack_from(data, at)
        gw, cw = _WIDTHS[tag & 3], _WIDTHS[(tag >> 2) & 3]
        at += _HEAD.size
        end = at + (m - 1) * gw.itemsize + m * cw.itemsize
        if tag >> 4 or m < 1 or end > len(data):
            raise ValueError(f"terms row ({term!r:.40}, {key}): a segment that is not a run of postings")
        d = np.empty(m, dtype=np.int64)
        d[0] = first
        np.cumsum(np.frombuffer(data, gw, m - 1, at), dtype=np.int64, out=d[1:])
        d[1:] += first
        docs.append(d)
        counts.append(np.frombuffer(data, cw, m, at + (m - 1) * gw.itemsize).astype(np.int64))
        at = end
    if len(docs) == 1:
        return term, docs[0], counts[0]
    return term, np.concatenate(docs), np.concatenate(counts)


def _runs(postings: Postings, rows: np.ndarray) -> list[tuple[str, int, bytes]]:
    """(term, first document, segment without its first document) for every term of ``postings`` (document
    ``i`` stored as row id ``rows[i]``; -1: not stored), in key order: numbers packed a width class at a time,
    one bytes object per term."""
    keep = rows[postings.doc] >= 0 if len(postings) else np.zeros(0, dtype=bool)
    if not keep.any():
        return []
    vocab = postings.vocab
    by_name = sorted(range(len(vocab)), key=vocab.__getitem__)
    rank = np.empty(len(vocab), dtype=np.int64)
    rank[by_name] = np.arange(len(vocab))
    term, doc, n = rank[postings.term[keep]], rows[postings.doc[keep]], postings.n[keep]
    low = int(doc.min())
    if len(vocab) < 1 << 24 and int(doc.max()) - low < 1 << 24 and int(n.max()) < 1 << 16:
        # (term, document, count) in one integer: sorting it is sorting the postings, with no index to follow
        key = np.sort(term << 40 | (doc - low) << 16 | n)
        term, doc, n = key >> 40, (key >> 16 & 0xFFFFFF) + low, key & 0xFFFF
    else:
        order = np.lexsort((doc, term))
        term, doc, n = term[order], doc[order], n[order]
    first = np.ones(len(term), dtype=bool)
    first[1:] = term[1:] != term[:-1]
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, len(term)))
    gaps = np.diff(doc, prepend=doc[:1])
    gaps[starts] = 0
    code = _width(np.maximum.reduceat(gaps, starts)) | _width(np.maximum.reduceat(n, starts)) << 2
    data = np.empty(len(starts), dtype=object)
    # a width class at a time: its numbers packed at once, then cut per run (bincount, not np.unique: that imports
    # numpy.ma, 15 ms, on its first call in a process)
    for c in np.flatnonzero(np.bincount(code)).tolist():
        runs = np.flatnonzero(code == c)
        size = sizes[runs]
        at = np.repeat(starts[runs] - np.cumsum(size) + size, size) + np.arange(size.sum())  # their postings
        gw, cw = _WIDTHS[c & 3], _WIDTHS[c >> 2]
        g = gaps[at[~first[at]]].astype(gw).tobytes()
        k = n[at].astype(cw).tobytes()
        m = size.astype("<u4").tobytes()
        g_end = np.cumsum(size - 1) * gw.itemsize
        k_end = np.cumsum(size) * cw.itemsize
        g_start, k_start = (g_end - (size - 1) * gw.itemsize).tolist(), (k_end - size * cw.itemsize).tolist()
        tag = bytes([c])
        data[runs] = [
            tag + m[4 * i : 4 * i + 4] + g[a:b] + k[e:f]
            for i, (a, b, e, f) in enumerate(zip(g_start, g_end.tolist(), k_start, k_end.tolist()))
        ]
    names = [vocab[t] for t in np.asarray(by_name)[term[starts]].tolist()]
    return list(zip(names, doc[starts].tolist(), data.tolist()))


def _rerun(runs: list[tuple[str, int, bytes]], rows: np.ndarray) -> list[tuple[str, int, bytes]]:
    """:func:`_runs` again of ``runs`` (keys: document indices), document ``i`` now row ``rows[i]`` (-1: not
    stored)."""
    got = [_unpack_run(t, f, _FIRST.pack(f) + b) for t, f, b in runs]
    vocab = [t for t, _, _ in got]
    sizes = [len(d) for _, d, _ in got]
    postings = Postings(
        vocab,
        np.repeat(np.arange(len(vocab), dtype=np.int64), sizes),
        np.concatenate([d for _, d, _ in got]) if got else np.zeros(0, dtype=np.int64),
        np.concatenate([n for _, _, n in got]) if got else np.zeros(0, dtype=np.int64),
    )
    return _runs(postings, rows)


def _entry_of(path: Any, rows: list[tuple]) -> _Entry:
    """One file's entry from its rows (its columns, then one document's per row); ValueError naming the row and
    the field of a value that does not decode."""
    _, sig, settled, whole, summary = rows[0][:5]
    try:
        if type(path) is not str:
            raise ValueError("path is not text")
        _unpack_sig(sig)
        outcome = _unpack_summary(summary)
    except ValueError as exc:
        raise ValueError(f"files row {path!r}: {exc}") from None
    docs, ids = [], []
    for *_, did, d_id, t, nm, ln, sh, li in rows:
        if did is None:  # a file without documents (skipped, empty)
            continue
        if not (
            type(d_id) is str
            and type(t) is str
            and type(nm) is str
            and type(ln) is int
            and type(sh) is str
            and _HEX64.fullmatch(sh)
            and (li is None or type(li) is int)
        ):
            raise ValueError(f"docs row {did} (of file {path!r}): {_bad_doc_field(d_id, t, nm, ln, sh, li)}")
        docs.append(DocStat(path if d_id == path else d_id, path, t, nm, ln, sh, li))
        ids.append(did)
    summary = {"nbytes": outcome} if isinstance(outcome, int) else outcome
    return _Entry(sig, bool(settled), bool(whole), summary, tuple(docs), tuple(ids))


def _pack_unit(doc: Document) -> bytes:
    """A unit's text (its title line first) and places, as the store keeps them."""
    data = {"text": doc.text, "location": doc.location, "lines": list(doc.line_locations)}
    return zlib.compress(json.dumps(data, ensure_ascii=True).encode("ascii"), 6)


@dataclass
class _Batch:
    """The rows one write adds, the stored files it replaces, and each of its documents' row id (-1: shared)."""

    rows: np.ndarray
    files: list[tuple] = field(default_factory=list)
    docs: list[tuple] = field(default_factory=list)
    units: list[tuple[int, bytes]] = field(default_factory=list)
    stale: list[int] = field(default_factory=list)

    def add(
        self, fid: int, sid: int, path: str, entry: _Entry, packed: Sequence[bytes | None], ids: Sequence[int]
    ) -> None:
        """A file's rows: its own as row ``fid`` of folder ``sid``, its documents' at row ids ``ids``, their units."""
        summary = _pack_summary(entry.summary)
        self.files.append((fid, sid, path, entry.sig, int(entry.settled), int(entry.whole), summary))
        for o, (st, i) in enumerate(zip(entry.docs, ids)):
            self.docs.append((i, fid, o, st.doc_id, st.title, st.names, st.length, st.sha256, st.line))
        self.units.extend((i, u) for i, u in zip(ids, packed) if u is not None)


def _term_rows(counted: Sequence[tuple[list[tuple[str, int, bytes]], int]], rows: np.ndarray) -> dict[str, list]:
    """Every part's runs of a term joined as one row's segments (a row per distinct term of the write): term ->
    [its first document's row id, its segments]; each part's runs keyed by its documents' row ids ``rows`` (the
    parts' documents one after another)."""
    merged: dict[str, list] = {}
    at = 0
    for part, n in counted:
        ids = rows[at : at + n]
        at += n
        if not n:
            continue
        if ids[0] >= 0 and np.array_equal(ids, np.arange(ids[0], ids[0] + n)):
            base = int(ids[0])  # the part's documents stored one after another: only the firsts move
            _merge(merged, ((t, base + f, b) for t, f, b in part))
        else:  # some of its files were stored by another process: the runs of the others, anew
            _merge(merged, _rerun(part, ids))
    return merged


def _merge(merged: dict[str, list], segments: Iterable[tuple[str, int, bytes]]) -> None:
    """Runs of postings keyed by row id (:func:`_runs`) joined into ``merged``: term -> [its first document's row
    id, its segments]."""
    pack = _FIRST.pack
    for t, f, b in segments:
        row = merged.get(t)
        if row is None:
            merged[t] = [f, pack(f) + b]
        else:
            row.append(pack(f) + b)


def _packs(parts: list[_HeldPart | SpilledPart]) -> Iterator[list[_HeldPart | SpilledPart]]:
    """Held parts, one after another, in packs of up to ``_PACK_DOCS`` documents (a part at least)."""
    pack: list[_HeldPart | SpilledPart] = []
    docs = 0
    for part in parts:
        if pack and docs + len(part.rows) > _PACK_DOCS:
            yield pack
            pack, docs = [], 0
        pack.append(part)
        docs += len(part.rows)
    if pack:
        yield pack


def _joined(parts: Sequence[_HeldPart | SpilledPart]) -> tuple[Postings, np.ndarray]:
    """Held parts' postings as one, with their documents' row ids: packed at once, a term's postings are one run
    (per part, a term had a run each: a chunk read per part, ten in a write of 50,000 files)."""
    postings = Postings.concat([p.postings for p in parts], [len(p.rows) for p in parts])
    rows = np.concatenate([p.rows for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    return postings, rows


@dataclass
class _HeldPart:
    """A part's term counts held for a later write: its postings (documents by index in the part) and each of its
    documents' row id (-1: shared with another process's rows, whose counts are there)."""

    postings: Postings
    rows: np.ndarray
    index: dict[str, int] | None = None  # term -> its index in the vocabulary, made on the first look-up

    def counts(self, variants: Sequence[str]) -> list[tuple[str, np.ndarray, np.ndarray]]:
        p = self.postings
        if self.index is None:
            self.index = dict(zip(p.vocab, range(len(p.vocab))))
        wanted = [self.index[v] for v in variants if v in self.index]
        if not wanted:
            return []
        at = np.flatnonzero(np.isin(p.term, wanted))
        at = at[self.rows[p.doc[at]] >= 0]
        at = at[np.argsort(p.term[at], kind="stable")]
        terms = p.term[at]
        cuts = np.flatnonzero(np.diff(terms)) + 1
        return [
            (p.vocab[int(t[0])], self.rows[p.doc[a]].astype(np.int64), p.n[a].astype(np.int64))
            for t, a in zip(np.split(terms, cuts), np.split(at, cuts))
            if len(a)
        ]


@dataclass
class _Signatures:
    """Files' row ids and the signatures to set on them once their counts are written, as two columns (a tuple a
    file was ≈ 170 bytes: 250 MB held through a first survey of 1.5M files)."""

    ids: np.ndarray
    text: str  # the signatures, one a line

    @classmethod
    def of(cls, files: Sequence[tuple]) -> "_Signatures":
        """Of files' rows (:class:`_Batch`'s: row id first, signature fourth)."""
        return cls(np.array([f[0] for f in files], dtype=np.int64), "\n".join(f[3] for f in files))

    def __len__(self) -> int:
        return len(self.ids)

    def pairs(self) -> Iterator[tuple[str, int]]:
        """(signature, row id) for each file."""
        return zip(self.text.split("\n") if len(self.ids) else [], self.ids.tolist())


@dataclass
class _Deferred:
    """One write's term counts held in this process (:meth:`StatsStore.put_counted` with ``defer``): its folder,
    each file's row id and signature to set once the counts are written, the parts, the process that holds them,
    the files' rows where they are held too, and the folder's columns to save as its snapshot after."""

    sid: int
    scope: str
    sigs: _Signatures
    parts: list[_HeldPart | SpilledPart]
    pid: int
    rows: int = 0  # how many files' rows are held too (hold): written from ``files``, the survey's columns
    files: _Files | None = None
    before: _Files | None = None

    @property
    def under_way(self) -> bool:
        """Whether it holds a first survey's rows that cannot be written yet: the survey has no columns yet."""
        return bool(self.rows) and self.files is None

    def counts(self, variants: Sequence[str]) -> list[tuple[str, np.ndarray, np.ndarray]]:
        return [hit for part in self.parts for hit in part.counts(variants)]
