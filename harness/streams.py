"""Deterministic query streams (shared by the audit and ``lens bench stream``): the order in which requests arrive, each request exactly once.

Headline streams never see relevance labels: they take label-free :class:`~harness.workloads.Request`
objects (and, for semantic bursts, query embeddings).

- ``random`` — a seeded permutation (diffuse access).
- ``semantic`` — topical bursts: MiniBatch k-means over query embeddings, then runs of 4–16 requests drawn from
  one cluster at a time (a run is shorter only when its cluster runs out; the same cluster is not drawn twice in
  a row while another has requests left).
- ``natural`` — by timestamp (ties by query id); every request must carry one.
- ``gold-overlap`` — a stress stream that chains requests by Jaccard overlap of their gold products. It reads
  labels, so it is tagged ``uses_gold=True`` and reports exclude it from headline results.

A :class:`Stream` records its kind, seed, parameters and a sha256 over all of them and the ordered query ids.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from harness.files import atomic_write_json, canonical_json, sha256_bytes
from harness.workloads import GoldLabels, InputError, Request

__all__ = [
    "configured_streams",
    "HEADLINE_KINDS",
    "STREAM_KINDS",
    "Stream",
    "random_stream",
    "semantic_stream",
    "natural_stream",
    "gold_overlap_stream",
    "tfidf_vectors",
]

HEADLINE_KINDS = ("random", "semantic", "natural")
STREAM_KINDS = HEADLINE_KINDS + ("gold-overlap",)


@dataclass(frozen=True)
class Stream:
    """An arrival order. ``order[j]`` is the workload index of the request at stream position ``j``."""

    kind: str
    seed: int | None
    order: np.ndarray
    query_ids: tuple[str, ...]
    uses_gold: bool = False
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        order = np.asarray(self.order, dtype=np.int64)
        if order.ndim != 1 or np.unique(order).size != order.size:
            raise ValueError("a stream must list each request exactly once")
        if order.size != len(self.query_ids):
            raise ValueError("stream order and query ids differ in length")
        order.flags.writeable = False
        object.__setattr__(self, "order", order)

    def __len__(self) -> int:
        return int(self.order.size)

    @property
    def name(self) -> str:
        return self.kind if self.seed is None else f"{self.kind}-s{self.seed}"

    @property
    def hash(self) -> str:
        return sha256_bytes(
            canonical_json(
                {
                    "kind": self.kind,
                    "seed": self.seed,
                    "uses_gold": self.uses_gold,
                    "params": dict(self.params),
                    "order": list(self.query_ids),
                }
            )
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "seed": self.seed,
            "uses_gold": self.uses_gold,
            "params": dict(self.params),
            "order": [int(x) for x in self.order],
            "query_ids": list(self.query_ids),
            "hash": self.hash,
        }

    def save(self, path: str | Path) -> Path:
        return atomic_write_json(path, self.to_json())

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Stream":
        s = cls(
            obj["kind"],
            obj["seed"],
            np.asarray(obj["order"]),
            tuple(obj["query_ids"]),
            bool(obj["uses_gold"]),
            dict(obj.get("params", {})),
        )
        if "hash" in obj and obj["hash"] != s.hash:
            raise InputError(f"stream {s.name}: recorded hash does not match its order")
        return s

    @classmethod
    def load(cls, path: str | Path) -> "Stream":
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def _ids(requests: Sequence[Request], order: np.ndarray) -> tuple[str, ...]:
    return tuple(requests[int(i)].id for i in order)


def tfidf_vectors(texts: Sequence[str]) -> np.ndarray:
    """Query-local TF-IDF vectors (sublinear tf, English stopwords, l2-normalised), one dense row per text."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(sublinear_tf=True, stop_words="english", norm="l2")
    try:
        m = vec.fit_transform(texts)
    except ValueError:  # every text is empty or stopwords only
        m = np.zeros((len(texts), 1))
    dense = m.toarray() if hasattr(m, "toarray") else np.asarray(m)
    return dense.astype(np.float64)


def random_stream(requests: Sequence[Request], seed: int) -> Stream:
    """A seeded uniform permutation of the requests."""
    order = np.random.default_rng(seed).permutation(len(requests))
    return Stream("random", int(seed), order, _ids(requests, order))


def semantic_stream(
    requests: Sequence[Request],
    embeddings: np.ndarray,
    seed: int,
    *,
    min_run: int = 4,
    max_run: int = 16,
    n_clusters: int | None = None,
) -> Stream:
    """Topical bursts over query ``embeddings`` (one row per request, workload order).

    ``n_clusters`` defaults to ``ceil(n / 10)`` (at least 2, at most n). Clustering and run draws are seeded.
    """
    from sklearn.cluster import MiniBatchKMeans

    n = len(requests)
    emb = np.asarray(embeddings, dtype=np.float64)
    if emb.shape[0] != n:
        raise ValueError(f"{emb.shape[0]} embeddings for {n} requests")
    if not 1 <= min_run <= max_run:
        raise ValueError(f"need 1 <= min_run <= max_run, got {min_run}, {max_run}")
    k = n_clusters or max(2, math.ceil(n / 10))
    k = max(1, min(k, n))
    km = MiniBatchKMeans(n_clusters=k, random_state=seed, n_init=3, batch_size=min(1024, max(n, 1)))
    labels = km.fit_predict(emb)
    rng = np.random.default_rng(seed)
    queues = [list(rng.permutation(np.flatnonzero(labels == c))) for c in range(k)]
    order: list[int] = []
    last = -1
    while True:
        live = [c for c in range(k) if queues[c]]
        if not live:
            break
        choices = [c for c in live if c != last] or live
        c = int(choices[int(rng.integers(len(choices)))])
        run = int(rng.integers(min_run, max_run + 1))
        order.extend(int(x) for x in queues[c][:run])
        queues[c] = queues[c][run:]
        last = c
    arr = np.asarray(order, dtype=np.int64)
    params = {
        "min_run": min_run,
        "max_run": max_run,
        "n_clusters": k,
        "embeddings": sha256_bytes(np.ascontiguousarray(emb).tobytes()),
    }
    return Stream("semantic", int(seed), arr, _ids(requests, arr), params=params)


def natural_stream(requests: Sequence[Request]) -> Stream:
    """Requests in timestamp order (ties by id). Raises ``InputError`` if any request has no timestamp."""
    missing = [r.id for r in requests if r.timestamp is None]
    if missing:
        raise InputError(f"natural stream: {len(missing)} requests have no timestamp (first: {missing[0]!r})")
    order = np.asarray(
        sorted(range(len(requests)), key=lambda i: (requests[i].timestamp, requests[i].id)), dtype=np.int64
    )
    return Stream("natural", None, order, _ids(requests, order))


def gold_overlap_stream(requests: Sequence[Request], gold: GoldLabels, seed: int) -> Stream:
    """Stress stream (uses labels): a greedy chain where each next request has the largest gold-product
    Jaccard overlap with the current one (ties by a seeded random rank). Tagged ``uses_gold=True``."""
    from scipy import sparse

    n = len(requests)
    if gold.n_queries != n:
        raise ValueError("gold labels and requests differ in length")
    g = sparse.csr_matrix((np.ones(gold.indices.size), gold.indices, gold.indptr), shape=(n, gold.n_assets))
    inter = (g @ g.T).toarray()
    sizes = gold.sizes().astype(np.float64)
    union = sizes[:, None] + sizes[None, :] - inter
    jac = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    rng = np.random.default_rng(seed)
    tie = rng.permutation(n)
    visited = np.zeros(n, dtype=bool)
    cur = int(rng.integers(n))
    order = [cur]
    visited[cur] = True
    for _ in range(n - 1):
        cand = np.flatnonzero(~visited)
        best = cand[np.lexsort((tie[cand], -jac[cur, cand]))[0]]
        order.append(int(best))
        visited[best] = True
        cur = int(best)
    arr = np.asarray(order, dtype=np.int64)
    return Stream("gold-overlap", int(seed), arr, _ids(requests, arr), uses_gold=True)


def configured_streams(
    settings: Any,
    requests: Sequence[Request],
    vectors: np.ndarray | None,
    gold: "Callable[[], GoldLabels]",
) -> list[Stream]:
    """The streams a config's ``[streams]`` section asks for (kinds × seeds; "natural" once), in its order.
    ``gold`` is called only for the gold-overlap stress stream: the one stream that reads labels (tagged
    ``uses_gold``). Used by the generic and the LENS-memory audits alike."""
    out: list[Stream] = []
    for kind in settings.kinds:
        if kind == "natural":
            out.append(natural_stream(requests))
            continue
        for seed in settings.seeds:
            if kind == "random":
                out.append(random_stream(requests, seed))
            elif kind == "semantic":
                out.append(
                    semantic_stream(
                        requests,
                        vectors,
                        seed,
                        min_run=settings.min_run,
                        max_run=settings.max_run,
                        n_clusters=settings.clusters,
                    )
                )
            else:  # gold-overlap
                out.append(gold_overlap_stream(requests, gold(), seed))
    return out
