"""Lexical search over a folder *as it is now*, for the index-free ReAct arm.

Nothing is persisted: the documents are read and a BM25 index (the shared layer, same analysis as BM25-RAG) is
built in memory on first use, and again whenever the folder's listing changes (a file added, removed or
rewritten — checked with a cheap stat fingerprint at every question). So ReAct is query-ready right after the
corpus grows; it pays the rebuild once, at query time, and that warm-up is reported with the question that paid it.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from harness.bench.systems.corpus import SnapshotCorpus, folder_signature
from harness.retrieval import BM25Index

__all__ = ["LiveSearch", "SearchState"]


@dataclass(frozen=True)
class SearchState:
    """The folder as read at one moment, with its in-memory BM25 index."""

    signature: str
    corpus: SnapshotCorpus
    index: BM25Index

    def search(self, query: str, top: int) -> list[str]:
        """File names of the documents matching ``query``, best first (documents with no matching term are
        never returned)."""
        return [name for name, score in self.index.search_ids(query, top) if score > 0]


class LiveSearch:
    """Thread-safe: concurrent questions share one state; a rebuild happens once per change."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self._lock = threading.Lock()
        self._state: SearchState | None = None
        self.rebuilds = 0

    def current(self) -> tuple[SearchState, float]:
        """(state for the folder as it is now, seconds this call spent reading and indexing it; 0 when unchanged)."""
        sig = folder_signature(self.folder)
        with self._lock:
            if self._state is not None and self._state.signature == sig:
                return self._state, 0.0
            t0 = time.perf_counter()
            corpus = SnapshotCorpus.load(self.folder)
            index = BM25Index.build([d.text for d in corpus.docs], corpus.names)
            self._state = SearchState(sig, corpus, index)
            self.rebuilds += 1
            return self._state, time.perf_counter() - t0
