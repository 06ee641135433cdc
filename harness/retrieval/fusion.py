"""Reciprocal rank fusion (Cormack et al., 2009) with k = 60 and deterministic tie-breaking.

score(d) = Σ over input rankings that contain d of 1 / (k + rank(d)), rank 1-based. The fused list is ordered by
score descending, then by document id ascending. Scores are summed exactly (``math.fsum`` for id lists; a fixed
canonical order for index arrays), so the result does not depend on the order in which the rankings are given.
"""

from __future__ import annotations

import math
from typing import Hashable, Sequence

import numpy as np

__all__ = ["RRF_K", "reciprocal_rank_fusion", "fuse_index_rankings"]

RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[Hashable]], *, k: int = RRF_K, top: int | None = None
) -> list[tuple[Hashable, float]]:
    """Fuse ranked id lists (best first) into ``[(id, score), …]``, best first, at most ``top`` long.

    Ids must be mutually comparable (they are the tie-breaker). A ranking that repeats an id is rejected
    (``ValueError``): its rank would be ambiguous.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    parts: dict[Hashable, list[float]] = {}
    for ranking in rankings:
        seen: set[Hashable] = set()
        for rank, doc in enumerate(ranking, start=1):
            if doc in seen:
                raise ValueError(f"ranking lists {doc!r} twice")
            seen.add(doc)
            parts.setdefault(doc, []).append(1.0 / (k + rank))
    fused = sorted(((doc, math.fsum(v)) for doc, v in parts.items()), key=lambda p: (-p[1], p[0]))
    return fused if top is None else fused[:top]


def fuse_index_rankings(
    rankings: Sequence[np.ndarray],
    *,
    k: int = RRF_K,
    top: int,
    tie_key: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """RRF over per-query ranked arrays of document indices.

    Each element of ``rankings`` is ``(n_queries, depth_m)`` int (best first; ``-1`` pads a short list). Returns
    ``(indices, scores)`` of shape ``(n_queries, top)``: fused document indices (``-1`` where fewer than ``top``
    distinct documents exist) and their RRF scores (0 there). Ties go to the smaller ``tie_key[doc]``
    (default: the document index; pass the rank of each document's id to break ties by id).
    """
    if not rankings:
        raise ValueError("no rankings to fuse")
    n_q = rankings[0].shape[0]
    if any(r.ndim != 2 or r.shape[0] != n_q for r in rankings):
        raise ValueError("every ranking must be (n_queries, depth) with the same n_queries")
    out_idx = np.full((n_q, top), -1, dtype=np.int64)
    out_val = np.zeros((n_q, top), dtype=np.float64)
    for q in range(n_q):
        docs_l, score_l = [], []
        for r in rankings:  # fixed list order → identical float sums on every run
            row = np.asarray(r[q], dtype=np.int64)
            ranks = np.arange(1, row.size + 1, dtype=np.float64)
            ok = row >= 0
            docs_l.append(row[ok])
            score_l.append(1.0 / (k + ranks[ok]))
        docs = np.concatenate(docs_l)
        scores = np.concatenate(score_l)
        # Sum each document's parts in a canonical order (by value), so list order cannot change the floats.
        canon = np.lexsort((scores, docs))
        docs, scores = docs[canon], scores[canon]
        uniq, inv = np.unique(docs, return_inverse=True)
        total = np.zeros(uniq.size, dtype=np.float64)
        np.add.at(total, inv, scores)
        key = uniq if tie_key is None else np.asarray(tie_key, dtype=np.int64)[uniq]
        order = np.lexsort((key, -total))[:top]
        out_idx[q, : order.size] = uniq[order]
        out_val[q, : order.size] = total[order]
    return out_idx, out_val
