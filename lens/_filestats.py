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
one transaction per batch). It is a cache, never an index to keep fresh: a corrupt store is rebuilt, a store
that cannot be written is replaced by one in memory (the scan's notes say so), and whatever it holds, a survey
gives the statistics that reading every file now would give.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Sequence

import numpy as np
from platformdirs import user_cache_dir

from lens._config import ReaderSettings
from lens._corpus import (
    CorpusScan,
    Document,
    _ignore_patterns,
    _is_container,
    _list_files,
    _open_folder,
    _read_bytes,
    _read_file,
    _signature,
    tally,
)
from lens._files import is_inside, sha256_hex
from lens._watch import FolderWatch

__all__ = ["StatsStore", "DocStat", "DocumentTable", "survey_corpus", "default_store_path", "SUFFIXES"]

# suffixes folded onto a term match (-s, -es, -ed, -ing, ...): a cheap stand-in for stemming. A possessive ('s)
# needs no entry: the apostrophe already ends the run.
SUFFIXES = ("s", "es", "ed", "ing", "ly", "er", "ers")
_RUN = re.compile(r"[^\W_]+")  # a maximal run of str.isalnum() characters
_RACY_NS = 2_000_000_000  # a file changed this close to its reading is checked by content next time
_BATCH = 20_000  # files per write transaction, at most (larger batches touch each B-tree page fewer times)
_BATCH_DOCS = 50_000  # documents held for one write transaction, at most (≈ 100 MB of text)
_SCHEMA = 2
NAMES_SEP = "\x1f"
_COMPACT_AT = 0.25  # orphaned postings are deleted once the documents dropped since exceed this share of the live ones


def default_store_path() -> Path:
    """Where the store lives unless ``reader.stats_store`` says otherwise: the user cache folder."""
    return Path(user_cache_dir("lens")) / "stats.sqlite"


class DocStat(NamedTuple):
    """One document as the prior sees it, without its text (a tuple: a million of them load fast)."""

    doc_id: str
    path: str
    title: str
    names: str  # Document.title_names joined by NAMES_SEP
    length: int  # characters of the folded text
    sha256: str
    line: int | None


@dataclass(slots=True)
class _Entry:
    """One file's statistics: its signature, whether that was settled when read, its reading's outcome."""

    sig: str  # the stat signature, packed (_pack_sig)
    settled: bool
    whole: bool  # a whole file (its one document's sha256 is the file's), not a container
    summary: dict  # skip, nbytes, bad, malformed, oversized, problems
    docs: Sequence[DocStat]
    ids: Sequence[int]  # the documents' rows in the store

    @property
    def hash(self) -> str:
        """sha256 of a whole file's bytes, "" for a container or a file without a document."""
        return self.docs[0].sha256 if self.whole and self.docs else ""


def _terms_of(lowered: str) -> Counter:
    return Counter(_RUN.findall(lowered))


def _pack_sig(sig: tuple) -> str:
    return ",".join(map(str, sig))


_TRIVIAL = {"skip": None, "bad": False, "malformed": 0, "oversized": 0, "problems": []}


def _pack_summary(summary: dict) -> str:
    """A file's reading outcome: its byte count alone in the common case, JSON otherwise."""
    if all(summary.get(k, v) == v for k, v in _TRIVIAL.items()):
        return str(summary.get("nbytes", 0))
    return json.dumps(summary)


_NBYTES: dict[int, dict] = {}  # one shared summary per byte count (read only): a million files need no million dicts


def _unpack_summary(text: str) -> dict:
    if not text.isdigit():
        return json.loads(text)
    n = int(text)
    hit = _NBYTES.get(n)
    if hit is None:
        hit = _NBYTES[n] = _TRIVIAL | {"nbytes": n}
    return hit


class StatsStore:
    """The SQLite file of per-file statistics (``path`` None: in memory, for this process only)."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else None
        self.note: str | None = None  # why the store is in memory although a file was asked for
        self._lock = threading.RLock()
        self.db = self._connect()

    # ---------------------------------------------------------------- opening
    def _connect(self) -> sqlite3.Connection:
        if self.path is None:
            return self._init(sqlite3.connect(":memory:", check_same_thread=False))
        try:
            return self._open_file()
        except sqlite3.DatabaseError:  # corrupt or not a database: rebuilt from the folder, it is only a cache
            try:
                self._remove_file()
                return self._open_file()
            except (sqlite3.Error, OSError) as exc:
                return self._in_memory(exc)
        except (sqlite3.Error, OSError) as exc:  # cannot be created or written
            return self._in_memory(exc)

    def _open_file(self) -> sqlite3.Connection:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA cache_size=-65536")  # 64 MiB of pages: large batches insert without thrashing
            version = self._init(db).execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if version is None or int(version[0]) != _SCHEMA:
                raise sqlite3.DatabaseError(f"schema {version} is not {_SCHEMA}")
            db.execute("BEGIN IMMEDIATE")  # writable (a read-only file or folder fails here, not mid-survey)
            db.execute("ROLLBACK")
        except BaseException:
            db.close()
            raise
        return db

    def _remove_file(self) -> None:
        assert self.path is not None
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except FileNotFoundError:
                pass

    def _in_memory(self, exc: BaseException) -> sqlite3.Connection:
        self.note = f"file statistics store {self.path}: not usable ({exc}); kept in memory for this process"
        self.path = None
        return self._init(sqlite3.connect(":memory:", check_same_thread=False))

    @staticmethod
    def _init(db: sqlite3.Connection) -> sqlite3.Connection:
        with db:
            db.executescript(
                """
                CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS scopes(id INTEGER PRIMARY KEY, scope TEXT NOT NULL UNIQUE);
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
                """
            )
            db.execute("INSERT OR IGNORE INTO meta VALUES('schema', ?)", (str(_SCHEMA),))
            db.execute("INSERT OR IGNORE INTO meta VALUES('dropped', '0')")
        return db

    def close(self) -> None:
        self.db.close()

    # ---------------------------------------------------------------- reading
    def _scope_id(self, scope: str, *, create: bool) -> int | None:
        if create:  # another process may be adding the same scope at this moment
            self.db.execute("INSERT OR IGNORE INTO scopes(scope) VALUES(?)", (scope,))
        row = self.db.execute("SELECT id FROM scopes WHERE scope=?", (scope,)).fetchone()
        return row[0] if row else None

    def entries(self, scope: str) -> dict[str, _Entry]:
        """Every file the store holds for ``scope``, with its documents' statistics (one pass over one query)."""
        out: dict[str, _Entry] = {}
        summaries: dict[str, dict] = {}
        with self._lock:
            sid = self._scope_id(scope, create=False)
            rows = self.db.execute(
                "SELECT f.path, f.sig, f.settled, f.whole, f.summary, d.id, d.doc_id, d.title, d.names, d.length, "
                "d.sha256, d.line FROM files f LEFT JOIN docs d ON d.file = f.id WHERE f.scope = ? ORDER BY f.id, d.ord",
                (sid,),
            )
            entry = None
            last = None
            docs: list[DocStat] = []
            ids: list[int] = []
            for path, sig, settled, whole, summary, did, doc_id, title, names, length, sha, line in rows:
                if path != last:
                    if entry is not None:  # tuples: a million files hold no million spare list slots
                        entry.docs, entry.ids = tuple(docs), tuple(ids)
                        docs, ids = [], []
                    last = path
                    sm = summaries.get(summary)
                    if sm is None:
                        sm = summaries[summary] = _unpack_summary(summary)
                    entry = out[path] = _Entry(sig, bool(settled), bool(whole), sm, (), ())
                if did is not None:
                    docs.append(DocStat(path if doc_id == path else doc_id, path, title, names, length, sha, line))
                    ids.append(did)
            if entry is not None:
                entry.docs, entry.ids = tuple(docs), tuple(ids)
        return out

    def counts(self, variants: Sequence[str]) -> list[tuple[str, int, int]]:
        """(run, document row id, count) for every document holding one of the runs ``variants``."""
        if not variants:
            return []
        with self._lock:
            q = f"SELECT term, doc, n FROM terms WHERE term IN ({','.join('?' * len(variants))})"
            return self.db.execute(q, list(variants)).fetchall()

    # ---------------------------------------------------------------- writing
    def put(self, scope: str, items: Sequence[tuple[str, _Entry, Sequence[Document]]]) -> None:
        """Store (path, entry, its documents) for each file, replacing what the store held for those paths; each
        entry's ``ids`` are set to its documents' new row ids."""
        postings: list[tuple[str, int, int]] = []
        with self._lock, self.db:
            sid = self._scope_id(scope, create=True)
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

    def settle(self, scope: str, path: str, entry: _Entry) -> None:
        """Record a new signature for a file whose content (hash) is unchanged."""
        with self._lock, self.db:
            self.db.execute(
                "UPDATE files SET sig=?, settled=? WHERE scope=(SELECT id FROM scopes WHERE scope=?) AND path=?",
                (entry.sig, int(entry.settled), scope, path),
            )

    def drop(self, scope: str, paths: Iterable[str]) -> None:
        with self._lock, self.db:
            self._drop(self._scope_id(scope, create=True), list(paths))

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
        """Delete orphaned postings once the documents dropped since the last time are a large enough share."""
        with self._lock:
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


# one store per file path per process
_STORES: dict[str, StatsStore] = {}
_STORES_LOCK = threading.Lock()


def _store_for(settings: ReaderSettings, root_real: str) -> StatsStore:
    path = Path(settings.stats_store) if settings.stats_store else default_store_path()
    if settings.stats_store == ":memory:" or is_inside(path, root_real):  # never written inside the folder
        key = f":memory:{root_real}"
        with _STORES_LOCK:
            if key not in _STORES:
                _STORES[key] = StatsStore(None)
                if settings.stats_store != ":memory:":
                    _STORES[key].note = f"file statistics store {path}: inside the folder; kept in memory instead"
            return _STORES[key]
    key = str(path.resolve())
    with _STORES_LOCK:
        if key not in _STORES:
            _STORES[key] = StatsStore(path)
        return _STORES[key]


# --------------------------------------------------------------------------- the survey


def _stat_of(doc: Document) -> DocStat:
    names = NAMES_SEP.join(doc.title_names)
    return DocStat(doc.doc_id, doc.path, doc.title, names, len(doc.lowered), doc.sha256, doc.line)


@dataclass
class _Folder:
    """What this process knows of one folder (scope): the entries of its files as last surveyed, that survey's
    result and listing, and the watch on its directories once it is asked about again."""

    entries: dict[str, _Entry] = field(default_factory=dict)
    last: CorpusScan | None = None
    listing: tuple | None = None  # the last survey's (paths, skipped, problems) from listing the folder
    watch: FolderWatch | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


_FOLDERS: dict[tuple[str, str], _Folder] = {}  # (store path, scope) -> folder
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
    with _STORES_LOCK:
        folder = _FOLDERS.setdefault((str(store.path), scope), _Folder())
    with folder.lock:  # threads of one process asking about one folder survey it one at a time
        return _survey(root_path, root_real, settings, store, scope, folder, t0)


def _survey(
    root_path: Path, root_real: str, settings: ReaderSettings, store: StatsStore, scope: str, folder: _Folder, t0: float
) -> CorpusScan:
    if folder.watch is not None and not folder.watch.changed() and folder.last is not None:
        return _again(folder.last, root_path, t0)  # watched, and nothing changed since the last survey
    skipped: Counter = Counter()
    patterns, ignore_unread = _ignore_patterns(root_path, root_real)
    problems: list[str] = [ignore_unread] if ignore_unread else []
    dirs: list[str] = []
    paths = _list_files(root_path, settings, skipped, problems, root_real, patterns, dirs)
    if folder.last is not None and settings.watch and not settings.follow_symlinks:  # asked about again
        folder.watch = folder.watch or FolderWatch()
        folder.watch.armed = folder.watch.watch(dirs)  # every directory listed was watched before the listing
    if not folder.entries:  # this process's first survey of the folder: what the store holds
        folder.entries = store.entries(scope)
    prefix = os.path.join(root_path, "")
    listed = set(paths)
    gone = [p for p in folder.entries if p not in listed]
    for p in gone:
        del folder.entries[p]
    if gone:
        store.drop(scope, gone)
    settled_before = time.time_ns() - _RACY_NS
    pending: list[tuple[str, _Entry, Sequence[Document]]] = []
    pending_docs = changed = 0
    for p in paths:
        entry = folder.entries.get(p)
        try:
            st = os.stat(prefix + p)
            sig, ctime = _pack_sig(_signature(st)), st.st_ctime_ns
        except OSError:
            sig, ctime = None, None
        if entry is not None and sig == entry.sig:
            if entry.settled:
                continue
            if entry.hash:  # changed moments before it was read: the content decides
                data = _read_bytes(prefix + p, settings.max_file_bytes, root_real)
                if isinstance(data, bytes) and sha256_hex(data) == entry.hash:
                    entry.settled = ctime is not None and ctime < settled_before
                    store.settle(scope, p, entry)
                    continue
        got: list = []
        res = _read_file(prefix + p, p, settings, root_real, got)
        changed += 1
        entry = _Entry(
            _pack_sig(got[0]) if got else "",
            bool(got) and got[0][4] < settled_before,
            not _is_container(p),
            _unpack_summary(_pack_summary(res.outcome())),  # the shared dict in the common case
            tuple(_stat_of(d) for d in res.documents),
            (),
        )
        folder.entries[p] = entry
        pending.append((p, entry, res.documents))
        pending_docs += len(res.documents)
        if len(pending) >= _BATCH or pending_docs >= _BATCH_DOCS:  # shards: thousands of documents per batch
            store.put(scope, pending)
            pending, pending_docs = [], 0
    if pending:
        store.put(scope, pending)
    if gone or changed:  # rows were dropped or replaced: perhaps enough orphaned postings to delete
        store.compact()
    listing = (paths, Counter(skipped), list(problems))
    if not changed and not gone and folder.last is not None and folder.listing == listing:
        scan = _again(folder.last, root_path, t0)  # the same listing, no file changed: the same statistics
    else:
        scan = _scan_of(root_path, root_real, settings, store, folder, paths, skipped, problems, ignore_unread)
    folder.last, folder.listing = scan, listing
    scan.seconds = time.perf_counter() - t0
    return scan


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
    folder: _Folder,
    paths: list[str],
    skipped: Counter,
    problems: list[str],
    ignore_unread: str | None,
) -> CorpusScan:
    stats: list[DocStat] = []
    ids: list[int] = []
    files = nbytes = bad = 0
    for p in paths:
        e = folder.entries[p]
        s = e.summary
        if not tally(s, skipped, problems):
            continue
        files += 1
        bad += s["bad"]
        nbytes += s["nbytes"]
        stats.extend(e.docs)
        ids.extend(e.ids)
    if store.note:
        problems.insert(0, store.note)
    table = DocumentTable(root_path, root_real, settings, stats)
    return CorpusScan(
        root=root_path,
        documents=table,  # type: ignore[arg-type]
        files=files,
        bytes_read=nbytes,
        skipped=skipped,
        problems=problems,
        bad_encoding=bad,
        ignore_unread=ignore_unread,
        doc_stats=(stats, np.asarray(ids, dtype=np.int64), store),
    )


class DocumentTable(Sequence[Document]):
    """The surveyed documents, each read from its file when first asked for (a few files kept in memory)."""

    def __init__(self, root: Path, root_real: str, settings: ReaderSettings, stats: list[DocStat]):
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
