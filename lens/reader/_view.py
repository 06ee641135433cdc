"""A corpus view: one survey of the folder with the lookups the prior needs, built once per state of the folder.

Per document its statistics (``lens.reader._columns.DocColumns``: title, names, length, sha256, column by column) and its
row in the statistics store, where its term counts are; a title index (full title, title without
"(disambiguation)", file stem) for maximal word n-gram title matches. The documents themselves are read only when
asked for.

``CorpusView.of(scan)`` is how a question gets its view. The view is a pure function of the documents'
statistics, so a process keeps the last view it built per folder and hands it out again when the new survey holds
the very same columns — which a survey hands out again only when no file was added, removed or changed. Like the
store this is a cache, not an index: every question still lists and stats the folder as it is now (or knows from
the folder's watch that nothing moved), and the view always equals the one built from reading every file.
"""

from __future__ import annotations

import os
import time
from typing import Sequence

import numpy as np

from lens._terms import tokens
from lens.reader._columns import NAMES_SEP, DocColumns, TitleIndex
from lens.reader._corpus import CorpusScan
from lens.reader._documents import Document
from lens.reader._filestats import SUFFIXES, _stat_of, recount
from lens.reader._folder import _Entry
from lens.reader._store import StatsStore, StoreError

__all__ = ["CorpusView"]

_MAX_NGRAM = 10  # longest title, in words, looked up as an n-gram of a text

# the last view built per folder (real path), for CorpusView.of; a few folders at most, so memory stays bounded
_LAST: dict[str, "CorpusView"] = {}
_LAST_MAX = 4


class CorpusView:
    """One survey of the folder, with the lookups the prior needs (get it with ``CorpusView.of``). A scan of
    documents held in memory (``scan_corpus``, a built list) gets its statistics in a store of its own."""

    def __init__(self, scan: CorpusScan):
        self.scan = scan
        self.docs: Sequence[Document] = scan.documents
        if scan.doc_stats is None:
            store = StatsStore(None)
            entry = _Entry("", True, False, {}, [_stat_of(d) for d in scan.documents], ())
            store.put("", [("", entry, scan.documents)])
            columns = DocColumns.of(entry.docs, entry.ids)
            scan.doc_stats = (columns, columns.ids, store)
        self.stats: DocColumns
        self.stats, self._ids, self._store = scan.doc_stats
        self._index_ids()
        # document length in characters: BM25 only uses length relative to the average, so characters
        # serve as well as words and cost no pass over the text
        self.lengths = self.stats.length.astype(np.float64)
        self.avg_len = float(self.lengths.mean()) if len(self.stats) else 1.0
        self._title_keys: list[str] | None = None

    def _index_ids(self) -> None:
        self._id_order = np.argsort(self._ids, kind="stable")
        self._sorted_ids = self._ids[self._id_order]

    def _counts(self, variants: list[str]) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """The store's postings of ``variants``; after a store fault, those of the store the folder is surveyed
        into again (a fault costs time, never the question)."""
        try:
            return self._store.counts(variants)
        except StoreError as exc:
            self._ids, self._store = recount(self.scan, self.stats, self._store, exc)
            self._index_ids()
            return self._store.counts(variants)

    @classmethod
    def of(cls, scan: CorpusScan) -> "CorpusView":
        """The view of ``scan``: the last one built for its folder when the scan holds the same documents'
        statistics (nothing changed on disk since), else a new one, remembered for the next question."""
        key = os.path.realpath(scan.root)
        last = _LAST.get(key)
        new = scan.doc_stats[0] if scan.doc_stats is not None else None
        if last is not None and new is not None and last._store is scan.doc_stats[2] and last.stats is new:
            last.scan = scan  # the newest scan's counts (files, bytes, seconds) for whoever reports them
            last.docs = scan.documents
            return last
        view = cls(scan)
        _LAST.pop(key, None)
        if len(_LAST) >= _LAST_MAX:
            _LAST.pop(next(iter(_LAST)))
        _LAST[key] = view
        return view

    def __len__(self) -> int:
        return len(self.stats)

    def title(self, index: int) -> str:
        """Document ``index``'s title, without reading it."""
        return self.stats.title[index]

    # ---------------------------------------------------------------- titles
    @property
    def titles(self) -> TitleIndex:
        """Title key (full title, title without disambiguation, file stem) -> document indices."""
        return self.stats.titles

    @property
    def title_keys(self) -> list[str]:
        """Each document's first title key ("" if it has none)."""
        if self._title_keys is None:
            self._title_keys = [names.split(NAMES_SEP, 1)[0] for names in self.stats.names]
        return self._title_keys

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
        """Matrix [documents × terms]: how often each term occurs as a word of its own, or with a folded suffix
        ("film" counts "films", "filmed"), in each document (dense: for inspection; the prior uses
        :meth:`term_hits`)."""
        counts = np.zeros((len(self.stats), len(terms)), dtype=np.float64)
        rows, hits = self.term_hits(terms)
        counts[rows] = hits
        return counts

    def term_hits(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The documents in which any of ``terms`` occurs (ascending indices) and their rows of
        :meth:`term_counts`: the only rows that are not zero, so a million documents cost no dense matrix."""
        none = (np.zeros(0, dtype=np.int64), np.zeros((0, len(terms)), dtype=np.float64))
        if not terms or not self.stats:
            return none
        columns: dict[str, list[int]] = {}
        for j, term in enumerate(terms):
            for form in (term, *(term + suffix for suffix in SUFFIXES)):
                columns.setdefault(form, []).append(j)
        runs = self._counts(list(columns))
        if not runs:
            return none
        # every run once per column its term counts for ("films" for "film" and for "films")
        cols = [(j, r) for r, (term, _, _) in enumerate(runs) for j in columns[term]]
        ids = np.concatenate([runs[r][1] for _, r in cols])
        n = np.concatenate([runs[r][2] for _, r in cols]).astype(np.float64)
        col = np.repeat(np.asarray([j for j, _ in cols], dtype=np.int64), [len(runs[r][1]) for _, r in cols])
        at = np.minimum(np.searchsorted(self._sorted_ids, ids), len(self._sorted_ids) - 1)
        mine = np.flatnonzero(self._sorted_ids[at] == ids)  # rows of other folders in a shared store: not this view's
        if not len(mine):
            return none
        index = self._id_order[at[mine]]
        docs, row_of = np.unique(index, return_inverse=True)
        hits = np.zeros((len(docs), len(terms)), dtype=np.float64)
        np.add.at(hits, (row_of, col[mine]), n[mine])
        return docs, hits
