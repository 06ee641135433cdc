"""A survey's per-document statistics column by column, and the title lookup built on them.

A million documents as a million objects cost seconds to load and gigabytes to hold; as a few lists of strings and
numpy arrays they load from the statistics store's snapshot in a fraction of that (:mod:`lens.reader._filestats`).
:class:`DocColumns` is a ``Sequence[DocStat]`` (an item is built when asked for) with the columns beside it;
:class:`TitleIndex` maps a title key to the documents that go by it, as sorted CRC-32 hashes of the keys checked
against the documents' names, so it needs no dictionary of a million keys.
"""

from __future__ import annotations

import zlib
from array import array
from typing import Iterator, NamedTuple, Sequence

import numpy as np

__all__ = ["DocStat", "DocColumns", "TitleIndex", "NAMES_SEP"]

NAMES_SEP = "\x1f"


class DocStat(NamedTuple):
    """One document as the prior sees it, without its text."""

    doc_id: str
    path: str
    title: str
    names: str  # Document.title_names joined by NAMES_SEP
    length: int  # characters of the folded text
    sha256: str
    line: int | None


def _keys(names: list[str]) -> Iterator[tuple[str, int]]:
    """(title key, document index) for every name of every document."""
    for i, joined in enumerate(names):
        if joined:
            for key in joined.split(NAMES_SEP):
                yield key, i


def _key_hash(key: str) -> int:
    return zlib.crc32(key.encode("utf-8", "surrogatepass"))


def pick_strings(lists: Sequence[list[str]], index: np.ndarray) -> list[str]:
    """``[joined[i] for i in index]`` of the lists one after another, through an array of references: no integer
    object per item, no joined list."""
    if len(lists) == 1 and len(index) == len(lists[0]) and np.array_equal(index, np.arange(len(index))):
        return lists[0]
    refs = np.empty(sum(len(x) for x in lists), dtype=object)
    at = 0
    for x in lists:
        refs[at : at + len(x)] = x
        at += len(x)
    return refs[index].tolist()


def pick_array(arrays: Sequence[np.ndarray], index: np.ndarray) -> np.ndarray:
    """``np.concatenate(arrays)[index]``, the joined copy made only when there is more than one array."""
    if len(arrays) == 1:
        return arrays[0][index]
    return np.concatenate(arrays)[index]


class DocColumns(Sequence[DocStat]):
    """Documents' statistics as columns: ``doc_id``, ``path``, ``title``, ``names`` (lists of str), ``length``,
    ``line`` (-1: none) and ``ids`` (their rows in the store) as int64 arrays, ``sha`` as raw digests (n × 32)."""

    __slots__ = ("doc_id", "path", "title", "names", "length", "sha", "line", "ids", "_titles")

    def __init__(self, doc_id, path, title, names, length, sha, line, ids, titles: "TitleIndex | None" = None):
        self.doc_id: list[str] = doc_id
        self.path: list[str] = path
        self.title: list[str] = title
        self.names: list[str] = names
        self.length: np.ndarray = np.asarray(length, dtype=np.int64)
        self.sha: np.ndarray = np.asarray(sha, dtype=np.uint8).reshape(-1, 32)
        self.line: np.ndarray = np.asarray(line, dtype=np.int64)
        self.ids: np.ndarray = np.asarray(ids, dtype=np.int64)
        self._titles = titles
        n = len(doc_id)
        if not (len(path) == len(title) == len(names) == len(self.length) == len(self.sha) == len(self.line) == n):
            raise ValueError("document columns of different lengths")
        if len(self.ids) != n:
            raise ValueError("document row ids do not match the documents")

    @classmethod
    def of(cls, stats: Sequence[DocStat], ids: Sequence[int] = ()) -> "DocColumns":
        """Columns of ``stats`` (``ids``: their rows in a store, default none: -1)."""
        n = len(stats)
        return cls(
            [s.doc_id for s in stats],
            [s.path for s in stats],
            [s.title for s in stats],
            [s.names for s in stats],
            [s.length for s in stats],
            np.frombuffer(b"".join(bytes.fromhex(s.sha256) for s in stats), dtype=np.uint8),
            [-1 if s.line is None else s.line for s in stats],
            ids if len(ids) else np.full(n, -1, dtype=np.int64),
        )

    @classmethod
    def empty(cls) -> "DocColumns":
        return cls([], [], [], [], [], np.zeros((0, 32), np.uint8), [], [])

    def __len__(self) -> int:
        return len(self.doc_id)

    def __iter__(self) -> Iterator[DocStat]:
        return (self[i] for i in range(len(self)))

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        line = int(self.line[i])
        return DocStat(
            self.doc_id[i],
            self.path[i],
            self.title[i],
            self.names[i],
            int(self.length[i]),
            self.sha[i].tobytes().hex(),
            None if line < 0 else line,
        )

    def sha256(self, i: int) -> str:
        return self.sha[i].tobytes().hex()

    def take(self, index: np.ndarray) -> "DocColumns":
        """The documents at ``index``, in that order."""
        return DocColumns.gather([self], index)

    @staticmethod
    def gather(parts: Sequence["DocColumns"], index: np.ndarray) -> "DocColumns":
        """The documents at ``index`` of the parts one after another, in that order — without building that
        concatenation: one column at a time is joined and picked from."""
        if not parts:
            parts = [DocColumns.empty()]
        path = pick_strings([p.path for p in parts], index)
        ids = all(p.doc_id is p.path for p in parts)  # a document's id is its path: one list, as in the parts
        out = DocColumns(
            path if ids else pick_strings([p.doc_id for p in parts], index),
            path,
            pick_strings([p.title for p in parts], index),
            pick_strings([p.names for p in parts], index),
            pick_array([p.length for p in parts], index),
            pick_array([p.sha for p in parts], index),
            pick_array([p.line for p in parts], index),
            pick_array([p.ids for p in parts], index),
        )
        if any(p._titles is not None for p in parts):  # a title index was built: kept, not built again
            out._titles = TitleIndex.gather([p._titles or p.names for p in parts], index, out.names)
        return out

    @property
    def titles(self) -> "TitleIndex":
        """Title key -> documents, built once per set of columns."""
        if self._titles is None:
            self._titles = TitleIndex.build(self.names)
        return self._titles

    def set_titles(self, titles: "TitleIndex") -> None:
        """A title index built from these very columns (a snapshot's), so it need not be built again."""
        if titles.names is not self.names:
            raise ValueError("a title index of other documents")
        self._titles = titles


class TitleIndex:
    """Title key -> indices of the documents going by it (ascending), like ``{key: [i, ...]}``: the CRC-32 of
    every (key, document) pair sorted, a lookup checked against the candidates' names."""

    __slots__ = ("hashes", "docs", "names")

    def __init__(self, hashes: np.ndarray, docs: np.ndarray, names: list[str]):
        self.hashes, self.docs, self.names = hashes, docs, names
        if len(hashes) != len(docs):
            raise ValueError("title hashes and documents of different lengths")

    @classmethod
    def build(cls, names: list[str]) -> "TitleIndex":
        keys, docs = array("I"), array("q")  # machine integers: millions of keys cost no object each
        for key, i in _keys(names):
            keys.append(_key_hash(key))
            docs.append(i)
        hashes = np.asarray(keys, dtype=np.uint32)
        order = np.argsort(hashes, kind="stable")  # documents stay ascending within one hash
        return cls(hashes[order], np.asarray(docs, dtype=np.int64)[order], names)

    @classmethod
    def gather(cls, parts: Sequence["TitleIndex | list[str]"], index: np.ndarray, names: list[str]) -> "TitleIndex":
        """The index of the documents at ``index`` of the parts one after another (each part its title index, or
        its names where it has none: built for that part alone), whose names are ``names`` — equal to
        ``build(names)``, with no key hashed again for the documents an index already holds."""
        picked = np.sort(index)
        if (picked[1:] == picked[:-1]).any():  # a document picked twice: no one place for it
            return cls.build(names)
        sizes = [len(p.names) if isinstance(p, TitleIndex) else len(p) for p in parts]
        new = np.full(sum(sizes), -1, dtype=np.int64)  # each document of the parts: where it goes (-1: dropped)
        new[index] = np.arange(len(index))
        hashes, docs = [], []
        at = 0
        for part, n in zip(parts, sizes):
            t = part if isinstance(part, TitleIndex) else cls.build(part)
            moved = new[t.docs + at]
            keep = moved >= 0
            hashes.append(t.hashes[keep])
            docs.append(moved[keep])
            at += n
        h, d = np.concatenate(hashes), np.concatenate(docs)
        order = np.lexsort((d, h))  # by hash, documents ascending within one: as build orders them
        return cls(h[order], d[order], names)

    def get(self, key: str, default=None):
        h = np.uint32(_key_hash(key))  # of the array's type: a Python int would cast the whole array per lookup
        lo = int(np.searchsorted(self.hashes, h, "left"))
        if lo == len(self.hashes) or self.hashes[lo] != h:
            return default
        hi = int(np.searchsorted(self.hashes, h, "right"))
        # ascending within one hash; a document twice if two of its names share the hash
        found = list(dict.fromkeys(d for d in self.docs[lo:hi].tolist() if key in self.names[d].split(NAMES_SEP)))
        return found or default

    def __getitem__(self, key: str) -> list[int]:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def items(self) -> Iterator[tuple[str, list[int]]]:
        """Every (key, documents), in no particular order (for tests and inspection: builds a dictionary)."""
        table: dict[str, list[int]] = {}
        for key, i in _keys(self.names):
            table.setdefault(key, []).append(i)
        return iter(table.items())
