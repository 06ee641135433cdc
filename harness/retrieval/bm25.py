"""BM25 over a fixed list of documents: bm25s, Lucene variant, k1 = 0.9, b = 0.4, English stemming and stopwords.

The index is built once from texts (optionally with string ids), answers top-k queries deterministically
(score descending, ties by document index) and saves to / loads from a folder whose files are sha256-checked.
``corpus_hash`` identifies the indexed texts and ids; ``index_hash`` identifies texts, ids and parameters, so two
indexes with the same ``index_hash`` score every query identically.

bm25s and PyStemmer are imported on first use, not at import time.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from harness.files import canonical_json, sha256_bytes
from harness.retrieval.ranking import top_k
from harness.retrieval.store import IndexedIds, IndexFolderError, read_folder_record, write_folder_record
from lens import LensError

__all__ = ["BM25Params", "BM25Index", "tokenize", "corpus_hash"]

log = logging.getLogger(__name__)
_KIND = "bm25"


@dataclass(frozen=True)
class BM25Params:
    """Scoring and analysis settings; all of them enter ``index_hash``."""

    k1: float = 0.9
    b: float = 0.4
    method: str = "lucene"
    stemmer: str = "english"  # a PyStemmer language, or "" for none
    stopwords: str = "en"  # a bm25s stopword list name, or "" for none


@functools.lru_cache(maxsize=8)
def _stemmer(language: str):
    if not language:
        return None
    import Stemmer  # PyStemmer

    try:
        return Stemmer.Stemmer(language)
    except KeyError as exc:
        raise LensError(f"bm25: unknown stemmer language {language!r}") from exc


def _quiet_bm25s() -> None:
    # bm25s pins its logger to DEBUG at import, which floods the CLI; keep its warnings only.
    lg = logging.getLogger("bm25s")
    if lg.level == logging.DEBUG:
        lg.setLevel(logging.WARNING)


def tokenize(texts: Sequence[str], params: BM25Params = BM25Params()) -> list[list[str]]:
    """Lower-cased word tokens (2+ word characters) with stopwords removed and stems applied, per text."""
    import bm25s

    _quiet_bm25s()
    if not texts:
        return []
    out = bm25s.tokenize(
        list(texts),
        lower=True,
        stopwords=params.stopwords or None,
        stemmer=_stemmer(params.stemmer),
        return_ids=False,
        show_progress=False,
    )
    # bm25s marks an empty token list with a single "" token; an empty list is the honest form.
    return [[t for t in toks if t] for toks in out]


def corpus_hash(texts: Sequence[str], ids: Sequence[str]) -> str:
    """sha256 over the ordered (id, text) pairs."""
    return sha256_bytes(canonical_json([[i, t] for i, t in zip(ids, texts)]))


class BM25Index(IndexedIds):
    """A built BM25 index; create with :meth:`build` or :meth:`load`."""

    def __init__(self, retriever: Any, ids: list[str], params: BM25Params, corpus_sha256: str) -> None:
        self._retriever = retriever
        self._ids = list(ids)
        self._pos = {d: i for i, d in enumerate(self._ids)}
        self.params = params
        self.corpus_hash = corpus_sha256

    # -- construction -------------------------------------------------------------------------------------
    @classmethod
    def build(
        cls, texts: Sequence[str], ids: Sequence[str] | None = None, params: BM25Params = BM25Params()
    ) -> "BM25Index":
        """Index ``texts`` (ids default to ``"0"``, ``"1"``, …). Raises ``LensError`` on an empty corpus or
        duplicate / mismatched ids."""
        import bm25s

        texts = list(texts)
        if not texts:
            raise LensError("bm25: cannot build an index over an empty corpus")
        ids = [str(i) for i in range(len(texts))] if ids is None else [str(i) for i in ids]
        if len(ids) != len(texts):
            raise LensError(f"bm25: {len(ids)} ids for {len(texts)} texts")
        if len(set(ids)) != len(ids):
            raise LensError("bm25: document ids are not unique")
        tokens = tokenize(texts, params)
        retriever = bm25s.BM25(method=params.method, k1=params.k1, b=params.b)
        # A document with no indexable token still needs a row; bm25s's empty token keeps it at score 0.
        retriever.index([t if t else [""] for t in tokens], show_progress=False)
        return cls(retriever, ids, params, corpus_hash(texts, ids))

    # -- identity -----------------------------------------------------------------------------------------
    @property
    def index_hash(self) -> str:
        """sha256 of (corpus hash, parameters): equal hashes score every query identically."""
        return sha256_bytes(canonical_json({"kind": _KIND, "corpus": self.corpus_hash, "params": asdict(self.params)}))

    def position(self, doc_id: str) -> int:
        """The index position of ``doc_id``; raises ``KeyError`` if it is not indexed."""
        return self._pos[doc_id]

    # -- scoring ------------------------------------------------------------------------------------------
    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (float32, shape ``(n_docs,)``; 0 where no term matches)."""
        return self._scores_for_tokens(tokenize([query], self.params)[0])

    def _scores_for_tokens(self, tokens: list[str]) -> np.ndarray:
        vocab = self._retriever.vocab_dict
        toks = [t for t in tokens if t in vocab]
        if not toks:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.asarray(self._retriever.get_scores(toks), dtype=np.float32)

    def search(self, queries: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` documents per query: ``(indices, scores)`` of shape ``(len(queries), min(k, n_docs))``.

        Always returns ``min(k, n_docs)`` documents per query, zero-score ones last; ties (including the zero
        tail) are broken by ascending document index.
        """
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        kk = min(k, self.n_docs)
        idx = np.empty((len(queries), kk), dtype=np.int64)
        val = np.empty((len(queries), kk), dtype=np.float32)
        for r, toks in enumerate(tokenize(list(queries), self.params)):
            i, v = top_k(self._scores_for_tokens(toks), kk)
            idx[r], val[r] = i[0], v[0]
        return idx, val

    def search_ids(self, query: str, k: int) -> list[tuple[str, float]]:
        """Top ``k`` as ``(doc_id, score)`` pairs, best first."""
        idx, val = self.search([query], k)
        return [(self._ids[i], float(s)) for i, s in zip(idx[0], val[0])]

    # -- persistence --------------------------------------------------------------------------------------
    def save(self, folder: str | Path) -> Path:
        """Write the index into ``folder`` (created if needed) with a sha256 record of every file."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self._retriever.save(str(folder / "bm25s"), show_progress=False)
        (folder / "ids.json").write_text(json.dumps(self._ids, ensure_ascii=False), encoding="utf-8")
        files = ["ids.json"] + [f"bm25s/{p.name}" for p in sorted((folder / "bm25s").iterdir()) if p.is_file()]
        write_folder_record(
            folder,
            {
                "kind": _KIND,
                "params": asdict(self.params),
                "corpus_hash": self.corpus_hash,
                "index_hash": self.index_hash,
                "n_docs": self.n_docs,
            },
            files,
        )
        return folder

    @classmethod
    def load(cls, folder: str | Path, *, expected_hash: str | None = None) -> "BM25Index":
        """Load a folder written by :meth:`save`, verifying every file's sha256 (and ``index_hash`` if given).

        Raises :class:`~harness.retrieval.store.IndexFolderError` when the folder is missing, altered, or holds
        a different index than ``expected_hash``.
        """
        import bm25s

        folder = Path(folder)
        record = read_folder_record(folder, _KIND)
        try:
            params = BM25Params(**record["params"])
            ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
            retriever = bm25s.BM25.load(str(folder / "bm25s"), show_progress=False)
        except (KeyError, TypeError, ValueError, OSError) as exc:
            raise IndexFolderError(f"{folder}: cannot load bm25 index ({exc})") from exc
        index = cls(retriever, ids, params, record.get("corpus_hash", ""))
        if index.index_hash != record.get("index_hash"):
            raise IndexFolderError(f"{folder}: recorded index_hash does not match its parameters and corpus")
        if expected_hash is not None and index.index_hash != expected_hash:
            raise IndexFolderError(f"{folder}: holds index {index.index_hash[:12]}…, expected {expected_hash[:12]}…")
        return index
