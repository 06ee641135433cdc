"""Base behaviour shared by every condition: the top-``L`` base lists and the query representations.

Computed once per workload from assets and label-free requests only, cached on disk by content hash, and
identical for every stream, seed, memory and condition:

- base lists per retriever — ``bm25`` (bm25s, Lucene, k1 0.9, b 0.4), ``dense`` (cosine over normalised
  sentence-transformers vectors) or ``hybrid`` (BM25 top-``L`` and dense top-``L`` fused by RRF, k = 60,
  ties by asset id);
- query vectors (``dense`` embeddings, or query-local ``tfidf``) for semantic streams and neighbour similarity.

The ``index_hash`` written into every row binds the base lists *and* the query vectors, the two inputs that
fix which entries a view can select and what the reranker starts from.
"""

from __future__ import annotations

import functools
import io
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from harness.audit.config import RetrievalSpec
from harness.files import atomic_write, canonical_json, sha256_bytes
from harness.retrieval import BM25Index, BM25Params, DenseEncoder, DenseIndex, fuse_index_rankings
from harness.retrieval.store import IndexFolderError
from harness.streams import tfidf_vectors
from harness.workloads import Asset, Request

__all__ = [
    "BaseLists",
    "QueryVectors",
    "ArtifactCache",
    "compute_base_lists",
    "compute_query_vectors",
    "combined_index_hash",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BaseLists:
    """``indices (Q, L)`` asset indices best first (``-1`` pads) and ``scores (Q, L)`` per workload query."""

    retriever: str
    indices: np.ndarray
    scores: np.ndarray
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def hash(self) -> str:
        head = canonical_json({"retriever": self.retriever, "params": dict(self.params)})
        return sha256_bytes(
            head
            + np.ascontiguousarray(self.indices, dtype=np.int64).tobytes()
            + np.ascontiguousarray(self.scores, dtype=np.float64).tobytes()
        )

    def save(self, path: Path) -> Path:
        buf = io.BytesIO()
        np.savez(
            buf,
            indices=self.indices.astype(np.int64),
            scores=self.scores.astype(np.float64),
            meta=np.asarray(json.dumps({"retriever": self.retriever, "params": dict(self.params), "hash": self.hash})),
        )
        return atomic_write(path, buf.getvalue())

    @classmethod
    def load(cls, path: Path) -> "BaseLists":
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            bl = cls(meta["retriever"], z["indices"], z["scores"], meta["params"])
        if bl.hash != meta["hash"]:
            raise IndexFolderError(f"{path}: base lists do not match their recorded hash")
        return bl


@dataclass(frozen=True)
class QueryVectors:
    """L2-normalised query representations (workload order) and what produced them."""

    vectors: np.ndarray
    method: str
    model_id: str

    @property
    def hash(self) -> str:
        head = canonical_json({"method": self.method, "model": self.model_id})
        return sha256_bytes(head + np.ascontiguousarray(self.vectors, dtype=np.float64).tobytes())

    def similarity(self) -> np.ndarray:
        """Cosine similarity between every pair of queries (float64, ``(Q, Q)``)."""
        v = np.asarray(self.vectors, dtype=np.float64)
        return v @ v.T


def combined_index_hash(base: BaseLists, queries: QueryVectors) -> str:
    return sha256_bytes(canonical_json({"base": base.hash, "query_vectors": queries.hash}))


class ArtifactCache:
    """A folder of derived artifacts keyed by the hash of what they were computed from (None: no cache)."""

    def __init__(self, folder: str | Path | None) -> None:
        self.folder = Path(folder) if folder else None

    def path(self, kind: str, key: Mapping[str, Any]) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / f"{kind}-{sha256_bytes(canonical_json(dict(key)))[:24]}"


@functools.lru_cache(maxsize=4)
def _encoder_for(model: str | None, batch_size: int) -> DenseEncoder:
    return DenseEncoder(model, batch_size=batch_size)


def _encoder(spec: RetrievalSpec) -> DenseEncoder:
    """One encoder per model for the whole process: the model loads once."""
    return _encoder_for(spec.dense_model, spec.batch_size)


def _dense_vectors(
    texts: Sequence[str], ids: Sequence[str], what: str, content_hash: str, encoder: DenseEncoder, cache: ArtifactCache
) -> DenseIndex:
    folder = cache.path(f"dense-{what}", {"content": content_hash, "model": encoder.model_id})
    if folder is not None and folder.exists():
        try:
            idx = DenseIndex.load(folder)
            if idx.ids == list(ids) and idx.model_id == encoder.model_id:
                return idx
        except IndexFolderError as exc:
            log.warning("ignoring damaged cache %s (%s)", folder, exc)
    log.info("encoding %d %s with %s", len(texts), what, encoder.model_id)
    idx = DenseIndex(encoder.encode(texts, show_progress=len(texts) > 2000), ids, encoder.model_id)
    if folder is not None:
        idx.save(folder)
    return idx


def compute_query_vectors(
    requests: Sequence[Request], method: str, spec: RetrievalSpec, cache: ArtifactCache, queries_hash: str
) -> QueryVectors:
    """Query vectors from label-free requests: ``dense`` (the retrieval encoder) or query-local ``tfidf``."""
    texts = [r.text for r in requests]
    if method == "dense":
        enc = _encoder(spec)
        idx = _dense_vectors(texts, [r.id for r in requests], "queries", queries_hash, enc, cache)
        return QueryVectors(np.asarray(idx.vectors, dtype=np.float64), "dense", enc.model_id)
    if method == "tfidf":
        return QueryVectors(tfidf_vectors(texts), "tfidf", "sklearn-tfidf(sublinear,english-stopwords)")
    raise ValueError(f"unknown similarity {method!r}")


def compute_base_lists(
    assets: Sequence[Asset],
    requests: Sequence[Request],
    retriever: str,
    spec: RetrievalSpec,
    cache: ArtifactCache,
    *,
    corpus_hash: str,
    queries_hash: str,
    tie_key: np.ndarray,
) -> BaseLists:
    """Top-``spec.depth`` base lists of one retriever for every request (cached by content hash)."""
    params: dict[str, Any] = {"depth": spec.depth}
    if retriever in ("bm25", "hybrid"):
        params["bm25"] = {"k1": spec.k1, "b": spec.b, "method": "lucene", "stemmer": "english", "stopwords": "en"}
    enc = None
    if retriever in ("dense", "hybrid"):
        enc = _encoder(spec)
        params["dense_model"] = enc.model_id
    if retriever == "hybrid":
        params["rrf_k"] = spec.fusion_k
    key = {"corpus": corpus_hash, "queries": queries_hash, "retriever": retriever, "params": params}
    path = cache.path(f"base-{retriever}", key)
    npz = None if path is None else path.with_suffix(".npz")
    if npz is not None and npz.exists():
        try:
            bl = BaseLists.load(npz)
            if bl.indices.shape == (len(requests), min(spec.depth, len(assets))):
                return bl
        except (IndexFolderError, OSError, KeyError, ValueError) as exc:
            log.warning("ignoring damaged cache %s (%s)", npz, exc)

    texts = [a.text for a in assets]
    ids = [a.id for a in assets]
    qtexts = [r.text for r in requests]
    depth = min(spec.depth, len(assets))
    lists: list[np.ndarray] = []
    if retriever in ("bm25", "hybrid"):
        bm = BM25Index.build(texts, ids, BM25Params(k1=spec.k1, b=spec.b))
        b_idx, b_val = bm.search(qtexts, depth)
        lists.append(b_idx)
    if retriever in ("dense", "hybrid"):
        assert enc is not None
        docs = _dense_vectors(texts, ids, "assets", corpus_hash, enc, cache)
        qv = _dense_vectors(qtexts, [r.id for r in requests], "queries", queries_hash, enc, cache)
        d_idx, d_val = docs.search(qv.vectors, depth)
        lists.append(d_idx)
        params = {**params, "dense_index": docs.index_hash, "dense_queries": qv.index_hash}  # bind the vectors used
    if retriever == "bm25":
        idx, val = b_idx, b_val.astype(np.float64)
    elif retriever == "dense":
        idx, val = d_idx, d_val.astype(np.float64)
    else:
        idx, val = fuse_index_rankings(lists, k=spec.fusion_k, top=depth, tie_key=tie_key)
    bl = BaseLists(retriever, np.asarray(idx, dtype=np.int64), np.asarray(val, dtype=np.float64), params)
    if npz is not None:
        bl.save(npz)
    return bl
