"""A corpus view: one scan of the folder with the lookups the prior needs, built once per state of the folder.

The documents' lowered, accent-folded text joined into one string (``\x00`` between documents) with the start
offset of each document, so one multi-pattern (Aho–Corasick) pass counts every term in every document; a title
table (full title, title without "(disambiguation)", file stem) for maximal word n-gram title matches.

``CorpusView.of(scan)`` is how a question gets its view. The view is a pure function of the scan's documents, so
a process keeps the last view it built per folder and hands it out again when the new scan holds the very same
document objects — which the scan's read memo returns only for files whose stat signature is unchanged. Any
added, removed or changed file gives a scan with other objects, and the view is rebuilt from it. Like the read
memo this is a per-process memo, not an index: every question still lists and stats the folder as it is now,
nothing is written anywhere, and the view always equals the one built from scratch.
"""

from __future__ import annotations

import operator
import os
import time
from typing import Sequence

import ahocorasick
import numpy as np

from lens._corpus import CorpusScan, Document
from lens._terms import tokens

__all__ = ["CorpusView"]

# suffixes folded onto a term match (-s, -es, -ed, -ing, 's, ...): a cheap stand-in for stemming
_SUFFIXES = ("s", "es", "ed", "ing", "'s", "’s", "ly", "er", "ers")
_MAX_NGRAM = 10  # longest title, in words, looked up as an n-gram of a text

# the last view built per folder (real path), for CorpusView.of; a few folders at most, so memory stays bounded
_LAST: dict[str, "CorpusView"] = {}
_LAST_MAX = 4


class CorpusView:
    """One scan of the folder, with the lookups the prior needs (get it with ``CorpusView.of``)."""

    def __init__(self, scan: CorpusScan):
        self.scan = scan
        self.docs: list[Document] = scan.documents
        lowered = [d.lowered for d in self.docs]  # lowercased, accent-folded ("Gutiérrez" ~ "gutierrez")
        self._big = "\x00".join(lowered)
        starts = np.zeros(len(lowered) + 1, dtype=np.int64)
        if lowered:
            starts[1:] = np.cumsum([len(t) + 1 for t in lowered])
        self._starts = starts
        # document length in characters: BM25 only uses length relative to the average, so characters
        # serve as well as words and cost no pass over the text
        self.lengths = np.fromiter((len(t) for t in lowered), dtype=np.float64, count=len(lowered))
        self.avg_len = float(self.lengths.mean()) if len(lowered) else 1.0
        self._titles: dict[str, list[int]] | None = None
        self._title_keys: list[str] | None = None

    @classmethod
    def of(cls, scan: CorpusScan) -> "CorpusView":
        """The view of ``scan``: the last one built for its folder when the scan holds the same document objects
        (nothing changed on disk since), else a new one, remembered for the next question."""
        key = os.path.realpath(scan.root)
        last = _LAST.get(key)
        docs = scan.documents
        if last is not None and len(last.docs) == len(docs) and all(map(operator.is_, last.docs, docs)):
            last.scan = scan  # the newest scan's counts (files, bytes, seconds) for whoever reports them
            return last
        view = cls(scan)
        _LAST.pop(key, None)
        if len(_LAST) >= _LAST_MAX:
            _LAST.pop(next(iter(_LAST)))
        _LAST[key] = view
        return view

    def __len__(self) -> int:
        return len(self.docs)

    # ---------------------------------------------------------------- titles
    def _build_titles(self) -> None:
        table: dict[str, list[int]] = {}
        keys: list[str] = []
        for i, d in enumerate(self.docs):
            names = d.title_names
            keys.append(names[0] if names else "")
            for name in names:
                table.setdefault(name, []).append(i)
        self._titles, self._title_keys = table, keys

    @property
    def titles(self) -> dict[str, list[int]]:
        """Title key (full title, title without disambiguation, file stem) -> document indices."""
        if self._titles is None:
            self._build_titles()
        return self._titles  # type: ignore[return-value]

    @property
    def title_keys(self) -> list[str]:
        if self._title_keys is None:
            self._build_titles()
        return self._title_keys  # type: ignore[return-value]

    def titles_in(self, text: str, *, deadline: float | None = None) -> dict[int, int]:
        """Documents whose title occurs as a *maximal* word n-gram of ``text``: index -> length in words.

        A title match inside a longer title match ("Bass" inside "Electoral district of Bass") is dropped:
        the longer name is what the text refers to. Linear in the words of ``text``; past ``deadline`` (a
        ``time.monotonic()`` instant) the rest of the text is not looked at.
        """
        words = tokens(text)
        table = self.titles
        found: dict[int, int] = {}
        # the longest match at each start, in order of start: it lies inside a longer match iff one that starts
        # earlier reaches as far, so one running end ("reach") decides maximality
        reach = 0
        for i in range(len(words)):
            if deadline is not None and not i & 1023 and time.monotonic() > deadline:
                break
            key = ""
            length, hits = 0, None
            for n in range(1, min(_MAX_NGRAM, len(words) - i) + 1):
                key = words[i] if n == 1 else f"{key} {words[i + n - 1]}"
                h = table.get(key)
                if h:
                    length, hits = n, h
            if hits is None or i + length <= reach:
                continue
            reach = i + length
            for h in hits:
                found[h] = max(found.get(h, 0), length)
        return found

    # ---------------------------------------------------------------- term counts
    def term_counts(self, terms: Sequence[str]) -> np.ndarray:
        """Matrix [documents × terms] of word-start matches with simple suffix folding."""
        counts = np.zeros((len(self.docs), len(terms)), dtype=np.float64)
        if not terms or not self.docs:
            return counts
        auto = ahocorasick.Automaton()
        for j, term in enumerate(terms):
            auto.add_word(term, (j, len(term)))
        auto.make_automaton()
        big = self._big
        n = len(big)
        ends: list[int] = []
        cols: list[int] = []
        for end, (j, length) in auto.iter(big):
            start = end - length + 1
            if start > 0 and big[start - 1].isalnum():
                continue
            nxt = end + 1
            if nxt < n and big[nxt].isalnum():
                ok = False
                for suf in _SUFFIXES:
                    stop = nxt + len(suf)
                    if big.startswith(suf, nxt) and (stop >= n or not big[stop].isalnum()):
                        ok = True
                        break
                if not ok:
                    continue
            ends.append(end)
            cols.append(j)
        if ends:
            rows = np.searchsorted(self._starts, np.asarray(ends), side="right") - 1
            np.add.at(counts, (rows, np.asarray(cols)), 1.0)
        return counts
