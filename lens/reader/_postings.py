"""Term counts of many documents at once, as columns: (term, document, count) for every term of every document,
with no Python object per token or per (document, term) on the common path.

A term is a maximal run of ``str.isalnum()`` characters of the folded text (``Document.lowered``), exactly what
``re.findall(r"[^\\W_]+", lowered)`` gives (:func:`terms_of`, the rule's reference). The documents are joined
into one UTF-8 buffer (separated by NUL, which is no term's character) and its bytes classified in NumPy (a
character beyond ASCII by its code point, each distinct one asked of ``str.isalnum`` once); each run of at most 8
ASCII letters and digits — most words of most text — is its own 48-bit key (6 bits a character), sorted with its
document's index beside it, so one sort of integers groups and counts them; runs of 9 to 16 are keyed by two such
words. The rest (longer runs, runs with letters beyond ASCII) are cut out as strings and grouped in a dictionary:
exact either way, only slower (a corpus of CJK text goes all that way, about as fast as the old rule).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["Postings", "count_terms", "terms_of"]


_RUN = re.compile(r"[^\W_]+")  # a maximal run of str.isalnum() characters: the rule


def terms_of(lowered: str) -> Counter:
    """One folded text's term counts by the rule itself (the reference :func:`count_terms` equals)."""
    return Counter(_RUN.findall(lowered))


# the ASCII letters and digits (exactly the ASCII characters str.isalnum() admits) as 6-bit codes 1..62, 0 else
_ALPHABET = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_CODE = np.zeros(256, dtype=np.uint8)
_CODE[np.frombuffer(_ALPHABET, dtype=np.uint8)] = np.arange(1, 63, dtype=np.uint8)
_CHAR32 = np.frombuffer(b"\x00" + _ALPHABET, dtype=np.uint8).astype("<u4")  # a code's character (0: none)


_SHIFTS = np.arange(0, 48, 6, dtype=np.uint64)  # where each of a key's 8 codes sits
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)  # the low k bytes


_DOCS_PER_PASS = 1 << 16  # a document's index is the low 16 bits of a short run's sort key
_PASS_CHARS = 4_000_000  # characters counted in one pass, at most (its arrays: ≈ 40 bytes a character at most)


def _pack(words: np.ndarray) -> np.ndarray:
    """Eight 6-bit codes, one per byte, packed into the low 48 bits (the byte order kept)."""
    x = words
    x = (x & np.uint64(0x003F003F003F003F)) | ((x & np.uint64(0x3F003F003F003F00)) >> np.uint64(2))
    x = (x & np.uint64(0x00000FFF00000FFF)) | ((x & np.uint64(0x0FFF00000FFF0000)) >> np.uint64(4))
    return (x & np.uint64(0x0000000000FFFFFF)) | ((x & np.uint64(0x00FFFFFF00000000)) >> np.uint64(8))


def _unpack(keys: np.ndarray) -> list[str]:
    """The runs whose :func:`_pack`ed codes are ``keys`` (at most 8 characters each): their characters' code points
    read as fixed-width strings, whose trailing NULs (no code) NumPy drops."""
    return _CHAR32[_codes(keys)].view("<U8").ravel().tolist()


def _codes(keys: np.ndarray) -> np.ndarray:
    """The 8 codes each of ``keys`` packs, one row a key."""
    return ((keys[:, None] >> _SHIFTS) & np.uint64(63)).astype(np.intp)


@dataclass
class Postings:
    """Term counts of a batch of documents: ``vocab[term[i]]`` occurs ``n[i]`` times in document ``doc[i]`` (its
    index in the batch). Each (document, term) once; in no particular order; ``vocab`` without repeats."""

    vocab: list[str]
    term: np.ndarray  # int64
    doc: np.ndarray  # int64
    n: np.ndarray  # int64

    @classmethod
    def empty(cls) -> "Postings":
        z = np.zeros(0, dtype=np.int64)
        return cls([], z, z.copy(), z.copy())

    def __len__(self) -> int:
        return len(self.n)

    @staticmethod
    def concat(parts: Sequence["Postings"], docs: Sequence[int]) -> "Postings":
        """The parts one after another, part k's documents numbered on after the ``docs[:k]`` before it; one
        vocabulary, sorted (a look-up per distinct term of each part, not per posting)."""
        if not parts:
            return Postings.empty()
        vocab = sorted(set().union(*(p.vocab for p in parts)))
        index = dict(zip(vocab, range(len(vocab))))
        terms, doc_ids = [], []
        at = 0
        for p, n in zip(parts, docs):
            ids = np.fromiter(map(index.__getitem__, p.vocab), dtype=np.int64, count=len(p.vocab))
            terms.append(ids[p.term])
            doc_ids.append(p.doc + at)
            at += n
        return Postings(vocab, np.concatenate(terms), np.concatenate(doc_ids), np.concatenate([p.n for p in parts]))

    @staticmethod
    def disjoint(parts: Sequence["Postings"]) -> "Postings":
        """The postings of one batch's documents counted in parts no two of which share a term (runs by length
        and alphabet): their vocabularies one after another, no look-up."""
        offsets = np.cumsum([0] + [len(p.vocab) for p in parts[:-1]])
        return Postings(
            [t for p in parts for t in p.vocab],
            np.concatenate([p.term + int(o) for p, o in zip(parts, offsets.tolist())]),
            np.concatenate([p.doc for p in parts]),
            np.concatenate([p.n for p in parts]),
        )

    def counters(self, ndocs: int) -> list[Counter]:
        """Each document's counts as a Counter (for tests and inspection)."""
        out = [Counter() for _ in range(ndocs)]
        for t, d, n in zip(self.term.tolist(), self.doc.tolist(), self.n.tolist()):
            out[d][self.vocab[t]] += n
        return out


def count_terms(lowered: Sequence[str]) -> Postings:
    """The term counts of each folded text of ``lowered`` (document ``i`` is ``lowered[i]``), a pass over at most
    ``_PASS_CHARS`` characters at a time (a pass holds a few integers per run of its text)."""
    texts = list(lowered)
    bounds = [0]
    size = 0
    for i, t in enumerate(texts):
        if i > bounds[-1] and (size + len(t) > _PASS_CHARS or i - bounds[-1] == _DOCS_PER_PASS):
            bounds.append(i)
            size = 0
        size += len(t)
    bounds.append(len(texts))
    if len(bounds) == 2:
        return _count(texts)
    parts = [_count(texts[a:b]) for a, b in zip(bounds, bounds[1:])]
    return Postings.concat(parts, [b - a for a, b in zip(bounds, bounds[1:])])


def _count(texts: list[str]) -> Postings:
    """:func:`count_terms` of at most ``_DOCS_PER_PASS`` texts."""
    if not texts:
        return Postings.empty()
    raw = [t.encode("utf-8", "surrogatepass") for t in texts]  # a lone surrogate (from JSON) is no letter either
    buf = b"\x00".join(raw)
    u8 = np.frombuffer(buf, dtype=np.uint8)
    code = _CODE.take(u8)
    alnum, wide = _letters_and_digits(buf, u8, code)
    fenced = np.zeros(len(alnum) + 2, dtype=bool)  # no letter before the first byte or after the last
    fenced[1:-1] = alnum
    flips = np.flatnonzero(fenced[1:] != fenced[:-1])  # where a run starts, then where it ends, by turns
    starts, ends = flips[0::2], flips[1::2]
    if not len(starts):
        return Postings.empty()
    lengths = ends - starts
    doc_starts = np.zeros(len(texts), dtype=np.int64)
    np.cumsum([len(t) + 1 for t in raw[:-1]], out=doc_starts[1:])
    # each run's document: the runs are in document order, so each document's first run is looked up (a search per
    # document, not per run) and the documents repeated over their runs
    firsts = np.searchsorted(starts, doc_starts)
    doc = np.repeat(np.arange(len(texts), dtype=np.uint64), np.diff(firsts, append=len(starts)))
    plain = np.ones(len(starts), dtype=bool)  # a run of ASCII letters and digits only
    if len(wide):  # a run holding a letter beyond ASCII is cut out as a string: found from those few bytes
        run = np.searchsorted(starts, wide, side="right") - 1  # the last run starting at or before each byte
        held = run >= 0
        run, at = run[held], wide[held]
        plain[run[at < ends[run]]] = False  # the byte lies inside that run
    padded = np.zeros(len(code) + 16, dtype=np.uint8)
    padded[: len(code)] = code
    # the 8 codes from every offset, read in place (unaligned, overlapping: one view, no copy)
    words = np.ndarray((len(code) + 9,), dtype="<u8", buffer=padded, strides=(1,))
    runs = _Runs(buf, words, starts, ends, doc)
    parts = [
        part
        for part in (
            runs.short(np.flatnonzero(plain & (lengths <= 8)), lengths),
            runs.middle(np.flatnonzero(plain & (lengths > 8) & (lengths <= 16)), lengths),
            runs.rest(np.flatnonzero(~plain | (lengths > 16)), len(texts)),
        )
        if part is not None
    ]
    if len(parts) == 1:
        return parts[0]
    return Postings.disjoint(parts)


def _letters_and_digits(buf: bytes, u8: np.ndarray, code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which bytes belong to a letter or digit (``str.isalnum``), and the offsets of the bytes beyond ASCII (none:
    an ASCII buffer): a character beyond ASCII is classified by its code point, read from its bytes."""
    alnum = code > 0
    if buf.isascii():
        return alnum, np.zeros(0, dtype=np.intp)
    wide = np.flatnonzero(u8 >= 0x80)  # every byte of a character beyond ASCII
    leads = wide[u8[wide] >= 0xC0]  # its first byte
    b = np.zeros(len(u8) + 3, dtype=np.uint8)  # a character's bytes after its first, read past the end
    b[: len(u8)] = u8
    first = b[leads].astype(np.int64)
    size = 2 + (first >= 0xE0) + (first >= 0xF0)
    cp = first & np.where(size == 2, 0x1F, np.where(size == 3, 0x0F, 0x07))
    for k in (1, 2, 3):
        cp = np.where(k < size, cp << 6 | (b[leads + k] & 0x3F).astype(np.int64), cp)
    chars, which = np.unique(cp, return_inverse=True)  # the few distinct characters, each asked once
    is_alnum = np.fromiter((chr(c).isalnum() for c in chars.tolist()), dtype=bool, count=len(chars))
    alnum[wide] = is_alnum[which][np.searchsorted(leads, wide, side="right") - 1]
    return alnum, wide


class _Runs:
    """The runs of one pass (their start and end offsets in ``buf``, their document) counted into postings by
    length: up to 8 ASCII characters packed into one integer, up to 16 into two, the rest as strings."""

    def __init__(self, buf: bytes, words: np.ndarray, starts: np.ndarray, ends: np.ndarray, doc: np.ndarray):
        self.buf, self.words, self.starts, self.ends, self.doc = buf, words, starts, ends, doc

    def short(self, short: np.ndarray, lengths: np.ndarray) -> Postings | None:
        if not len(short):
            return None
        s, n = self.starts[short], lengths[short]
        key = np.sort((_pack(self.words[s] & _MASKS[n]) << np.uint64(16)) | self.doc[short])
        new = np.ones(len(key), dtype=bool)
        new[1:] = key[1:] != key[:-1]
        at = np.flatnonzero(new)
        terms = key[at] >> np.uint64(16)
        first = np.ones(len(at), dtype=bool)
        first[1:] = terms[1:] != terms[:-1]
        return Postings(
            _unpack(terms[first]),
            np.cumsum(first) - 1,
            (key[at] & np.uint64(0xFFFF)).astype(np.int64),
            np.diff(np.append(at, len(key))),
        )

    def middle(self, middle: np.ndarray, lengths: np.ndarray) -> Postings | None:
        if not len(middle):
            return None
        s, n = self.starts[middle], lengths[middle]
        lo = _pack(self.words[s])
        hi = _pack(self.words[s + 8] & _MASKS[n - 8])
        order = np.lexsort((hi, lo))  # stable: documents stay ascending within a run
        lo, hi, d = lo[order], hi[order], self.doc[middle][order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
        new = first.copy()
        new[1:] |= d[1:] != d[:-1]
        at = np.flatnonzero(new)
        codes = np.hstack((_codes(lo[first]), _codes(hi[first])))  # 9 to 16 characters, NUL-padded
        vocab = _CHAR32[codes].view("<U16").ravel().tolist()
        return Postings(vocab, (np.cumsum(first) - 1)[at], d[at].astype(np.int64), np.diff(np.append(at, len(d))))

    def rest(self, rest: np.ndarray, n_docs: int) -> Postings | None:
        if not len(rest):
            return None
        index: dict[str, int] = {}
        runs = [self.buf[a:b].decode("utf-8") for a, b in zip(self.starts[rest].tolist(), self.ends[rest].tolist())]
        ids = np.fromiter((index.setdefault(r, len(index)) for r in runs), dtype=np.int64, count=len(runs))
        keys, n = np.unique(ids * n_docs + self.doc[rest].astype(np.int64), return_counts=True)
        return Postings(list(index), keys // n_docs, keys % n_docs, n)
