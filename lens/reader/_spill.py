"""Held term counts kept on disk: the postings of a survey's parts past what the store holds in memory
(``_store._HELD_BYTES``), in a temporary file beside the store until they are written.

A first survey of a large folder ranks its question before its term counts are written (the write comes after,
:meth:`StatsStore.flush`); at 1.5M documents those counts are ≈ 100M postings, more than a process should hold.
Each part past the bound is written once, sorted by term and document, to a file that has no name (gone with the
process, or when its last part is written): its terms' NUL-separated names with their offsets, then its
documents and counts as 32-bit integers. In memory a part keeps only, per distinct term, a hash of the term
(Python's ``hash``, sorted), the term's index and where its postings start — 16 bytes a term. A look-up
(:meth:`SpilledPart.counts`) finds a term by its hash and reads its name back to compare (a hash is never
trusted alone), then only that term's postings; the write after the question reads a part whole
(:attr:`SpilledPart.postings`), a few at a time.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from lens.reader._postings import Postings

__all__ = ["Spill", "SpilledPart"]


class Spill:
    """A temporary file of spilled parts, appended to and read by offset (``os.pwrite`` / ``os.pread``: safe from
    any thread); it has no name, so nothing is left behind by a process that ends."""

    def __init__(self, where: Path | None):
        self.file = tempfile.TemporaryFile(dir=where, prefix="lens-held-")
        self.end = 0

    def put(self, data: bytes) -> int:
        """Append ``data``; where it starts."""
        at, view = self.end, memoryview(data)
        while view:
            done = os.pwrite(self.file.fileno(), view, at + len(data) - len(view))
            view = view[done:]
        self.end = at + len(data)
        return at

    def read(self, at: int, size: int) -> bytes:
        parts, got = [], 0
        while got < size:
            part = os.pread(self.file.fileno(), size - got, at + got)
            if not part:
                raise OSError(f"held term counts file: {size} bytes at {at} asked for, {got} there")
            parts.append(part)
            got += len(part)
        return b"".join(parts)

    def close(self) -> None:
        self.file.close()


def _hashes(names: Sequence[str]) -> np.ndarray:
    return np.fromiter(map(hash, names), dtype=np.int64, count=len(names))


class SpilledPart:
    """A held part (``_store._HeldPart``'s interface: ``rows``, ``postings``, ``counts``) whose postings are in
    ``spill``: written there once, on creation."""

    def __init__(self, spill: Spill, postings: Postings, rows: np.ndarray):
        self.spill, self.rows = spill, rows
        vocab = postings.vocab
        v = len(vocab)
        term, doc, n = postings.term, postings.doc, postings.n
        key = term.astype(np.int64) << 32 | doc.astype(np.int64)
        if len(key) > 1 and not (key[1:] >= key[:-1]).all():  # a chunk's counts come sorted so: a check, not a sort
            order = np.argsort(key)  # by term, each term's documents ascending (so are their row ids)
            term, doc, n = term[order], doc[order], n[order]
        self.starts = np.zeros(v + 1, dtype=np.int32)  # a part's postings: fewer than 2**31
        np.cumsum(np.bincount(term, minlength=v), out=self.starts[1:])
        # the names one after another, each ended by a NUL (no term's character): where each begins, from the NULs
        names = "\0".join(vocab).encode("utf-8") + b"\0" if v else b""
        ends = np.zeros(v + 1, dtype="<i8")
        nuls = np.flatnonzero(np.frombuffer(names, dtype=np.uint8) == 0) + 1
        if len(nuls) != v:
            raise ValueError("a term holds a NUL")
        ends[1:] = nuls
        self.terms, self.postings_n = v, len(term)
        header = ends.tobytes() + names
        self.at = spill.put(header + doc.astype("<i4").tobytes() + n.astype("<i4").tobytes())
        self.names_at = self.at + 8 * (v + 1)
        self.doc_at = self.at + len(header)
        hashes = _hashes(vocab)
        self.by_hash = np.argsort(hashes, kind="stable").astype(np.int32)
        self.hashes = hashes[self.by_hash]

    def _name(self, i: int) -> str:
        a, b = np.frombuffer(self.spill.read(self.at + 8 * i, 16), dtype="<i8").tolist()
        return self.spill.read(self.names_at + a, b - a - 1).decode("utf-8")

    def _column(self, k: int, a: int, b: int) -> np.ndarray:
        """Postings ``a:b``'s documents (``k`` 0) or counts (1)."""
        at = self.doc_at + 4 * (k * self.postings_n + a)
        return np.frombuffer(self.spill.read(at, 4 * (b - a)), dtype="<i4").astype(np.int64)

    def counts(self, variants: Sequence[str]) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """(term, document row ids, counts) for each of ``variants`` this part holds, documents ascending."""
        out = []
        want = _hashes(variants)
        for term, h, p in zip(variants, want.tolist(), np.searchsorted(self.hashes, want).tolist()):
            while p < self.terms and int(self.hashes[p]) == h:
                i = int(self.by_hash[p])
                p += 1
                if self._name(i) != term:  # another term of the same hash
                    continue
                a, b = int(self.starts[i]), int(self.starts[i + 1])
                rows = self.rows[self._column(0, a, b)]
                keep = rows >= 0
                if keep.any():
                    out.append((term, rows[keep], self._column(1, a, b)[keep]))
        return out

    @property
    def postings(self) -> Postings:
        """The part's postings, read back whole (documents by index in the part)."""
        v, m = self.terms, self.postings_n
        data = self.spill.read(self.at, self.doc_at - self.at + 8 * m)
        ends = np.frombuffer(data, dtype="<i8", count=v + 1)
        names = data[8 * (v + 1) : 8 * (v + 1) + int(ends[-1])]
        vocab = names[:-1].decode("utf-8").split("\0") if v else []
        cols = np.frombuffer(data, dtype="<i4", offset=self.doc_at - self.at, count=2 * m)
        term = np.repeat(np.arange(v, dtype=np.int32), np.diff(self.starts).astype(np.int64))
        return Postings(vocab, term, cols[:m].astype(np.int32), cols[m:].astype(np.int32))
