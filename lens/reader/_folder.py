"""One folder's files as columns — the survey's working set and the store's snapshot of the folder: paths,
signatures, reading outcomes and, per document, its statistics (no object per file or document).
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import numpy as np

from lens.reader._columns import DocColumns, DocStat, TitleIndex, pick_array, pick_strings

__all__ = []


_PART = 100_000  # strings per part of a snapshot's string column


_UNPACKED = frozenset({"sha", "title_hashes"})  # snapshot columns stored as they are (random bytes: nothing to gain)


@dataclass(slots=True)
class _Entry:
    """One file being stored: its signature, whether that was settled when read, its reading's outcome."""

    sig: str  # the stat signature, packed (_pack_sig)
    settled: bool
    whole: bool  # a whole file (its one document's sha256 is the file's), not a container
    summary: dict  # skip, nbytes, bad, malformed, oversized, problems
    docs: Sequence[DocStat]
    ids: Sequence[int]  # the documents' rows in the store


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
    get = summary.get  # each of _TRIVIAL's fields as there (or missing), spelled out: once per file read
    return (
        get("skip") is None
        and get("bad", False) == False  # noqa: E712 - the value, as _TRIVIAL has it (0 too)
        and get("malformed", 0) == 0
        and get("oversized", 0) == 0
        and get("problems", []) == []
    )


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
        """The files of ``items``, as stored."""
        signatures = [_unpack_sig(e.sig) for _, e in items]
        return cls._of(
            [p for p, _ in items],
            [i for i, _ in signatures],
            [t for _, t in signatures],
            [e.settled for _, e in items],
            [e.whole for _, e in items],
            [e.summary for _, e in items],
            [len(e.docs) for _, e in items],
            DocColumns.of([d for _, e in items for d in e.docs], [i for _, e in items for i in e.ids]),
        )

    @classmethod
    def of_read(
        cls,
        paths: list[str],
        sigs: Sequence[tuple | None],
        summaries: Sequence[dict],
        whole: Sequence[bool],
        counts: Sequence[int],
        docs: DocColumns,
    ) -> "_Files":
        """Files just read: ``sigs`` their signatures as taken (None: not opened), ``summaries`` their readings'
        outcomes, ``whole`` whether each is a whole file, ``counts`` how many of ``docs`` each gave, in order. None
        is settled yet (the survey says which are) and no document has a row in the store yet (ids -1). Documents
        named by their files' paths, one a file, share the list of paths (a million strings are not held twice)."""
        if docs.path == paths:
            docs.path = paths
            if docs.doc_id == paths:
                docs.doc_id = paths
        return cls._of(
            paths,
            [s[:2] if s else _NO_IDENT for s in sigs],
            [s[2:] if s else _NO_TIMES for s in sigs],
            np.zeros(len(paths), dtype=bool),
            whole,
            summaries,
            counts,
            docs,
        )

    @classmethod
    def _of(cls, paths, ident, times, settled, whole, summaries, counts, docs: DocColumns) -> "_Files":
        details: list[dict] = []
        detail = []
        for summary in summaries:  # a trivial outcome is its byte count alone
            if _trivial(summary):
                detail.append(-1)
            else:
                detail.append(len(details))
                details.append(summary)
        start = np.zeros(len(paths) + 1, dtype=np.int64)
        np.cumsum(counts, out=start[1:])
        return cls(
            paths,
            np.asarray(ident, dtype=np.uint64).reshape(-1, 2),
            np.asarray(times, dtype=np.int64).reshape(-1, 3),
            np.asarray(settled, dtype=bool),
            np.asarray(whole, dtype=bool),
            np.asarray([s.get("nbytes", 0) for s in summaries], dtype=np.int64),
            np.asarray(detail, dtype=np.int64),
            details,
            start,
            docs,
        )

    def __len__(self) -> int:
        return len(self.paths)

    def sig(self, i: int) -> str:
        if self.times[i, 0] < 0:
            return ""
        return _pack_sig((*self.ident[i].tolist(), *self.times[i].tolist()))

    def entry(self, i: int) -> _Entry:
        """File ``i`` as the entry it was stored from (:meth:`of_entries`), its documents' row ids with it."""
        a, b = int(self.start[i]), int(self.start[i + 1])
        k = int(self.detail[i])
        summary = {"nbytes": int(self.nbytes[i])} if k < 0 else self.details[k]
        ids = tuple(self.docs.ids[a:b].tolist())
        return _Entry(self.sig(i), bool(self.settled[i]), bool(self.whole[i]), summary, tuple(self.docs[a:b]), ids)

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
        ident, times, settled, whole, nbytes = (
            pick_array([getattr(p, k) for p in parts], rows) for k in ("ident", "times", "settled", "whole", "nbytes")
        )
        return _Files(paths, ident, times, settled, whole, nbytes, detail, [details[d] for d in kept], start, docs)

    # ---------------------------------------------------------------- the store's snapshot of a folder
    # name: numpy type code and width (0: one value per row) of each array column, files' then documents'
    _SPEC = "ident:u8:2 times:i8:3 settled:?:0 whole:?:0 nbytes:i8:0 detail:i8:0 start:i8:0 length:i8:0 sha:u1:32 "
    _SPEC += "line:i8:0 ids:i8:0 title_hashes:u4:0 title_docs:i8:0"
    _ARRAYS = {name: (np.dtype(code), int(w)) for name, code, w in (x.split(":") for x in _SPEC.split())}

    def blobs(self, skip: frozenset[str] = frozenset()) -> Iterator[tuple[str, bytes]]:
        """The columns as named byte strings (numpy arrays as their bytes, lists of strings as JSON; compressed,
        but for the few of random bytes), one at a time: a million documents' columns are never all encoded at
        once. The blobs named in ``skip`` are left out (not encoded)."""
        for name, data in self._blobs(skip):
            yield name, data if name in _UNPACKED else zlib.compress(data, 1)

    def _string_columns(self) -> Iterator[tuple[str, list]]:
        d = self.docs
        # a document's id is its file's path unless it is a record of a container: 0 stands for "the path"
        doc_ids = [0 if i is p or i == p else i for i, p in zip(d.doc_id, d.path)]
        yield from (("paths", self.paths), ("doc_id", doc_ids), ("title", d.title), ("names", d.names))

    def same_parts(self, other: "_Files") -> frozenset[str]:
        """The snapshot blobs of string columns (a part of ``_PART`` strings each) that hold the same strings in
        ``other``'s snapshot as in this one's: what a save after a few edits need not encode again."""
        same = []
        for (k, mine), (_, theirs) in zip(self._string_columns(), other._string_columns()):
            for i in range(0, max(len(mine), 1), _PART):
                if mine[i : i + _PART] == theirs[i : i + _PART]:
                    same.append(f"{k}.{i // _PART:06d}")
        return frozenset(same)

    def _blobs(self, skip: frozenset[str] = frozenset()) -> Iterator[tuple[str, bytes]]:
        d = self.docs
        titles = d.titles
        # each array by its name: the files' own columns, then the documents', then the title index's
        owner = {"title_hashes": (titles, "hashes"), "title_docs": (titles, "docs")}
        for k, (dtype, _) in self._ARRAYS.items():
            obj, attr = owner.get(k, (self, k) if hasattr(self, k) else (d, k))
            yield k, np.ascontiguousarray(getattr(obj, attr), dtype=dtype).tobytes()
        for k, v in self._string_columns():
            for i in range(0, max(len(v), 1), _PART):  # in parts: no encoding of a million strings at once
                name = f"{k}.{i // _PART:06d}"
                if name not in skip:
                    yield name, json.dumps(v[i : i + _PART]).encode("ascii")  # a lone surrogate survives
        yield "details", json.dumps(self.details).encode("ascii")

    @classmethod
    def from_blobs(cls, blobs: Iterable[tuple[str, bytes]]) -> "_Files":
        """The columns of :meth:`blobs` (decoded one at a time); ValueError if any is missing or of the wrong
        size."""
        got: dict = {}
        try:
            for k, data in blobs:
                if k not in _UNPACKED:
                    data = zlib.decompress(data)
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
        except (KeyError, ValueError, UnicodeDecodeError, zlib.error) as exc:
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
