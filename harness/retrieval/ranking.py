"""Deterministic top-k selection: score descending, ties broken by a fixed key (document order by default).

``numpy.argpartition`` and most top-k helpers return tied documents in an unspecified order, which makes two
runs over the same index disagree at the cut-off. Every ranked list in the retrieval layer comes from
:func:`top_k`, so equal scores always resolve the same way.
"""

from __future__ import annotations

import numpy as np

__all__ = ["top_k"]


def top_k(scores: np.ndarray, k: int, *, tie_key: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` columns of each row of ``scores``.

    ``scores`` is ``(n_docs,)`` or ``(n_queries, n_docs)``. Returns ``(indices, values)``, each of shape
    ``(n_queries, min(k, n_docs))``: indices are int64 column numbers ordered by score descending, then by
    ``tie_key`` ascending (a per-column integer; default the column number itself). Rows are independent.
    Raises ``ValueError`` for ``k < 1`` or non-finite scores.
    """
    scores = np.asarray(scores)
    if scores.ndim == 1:
        scores = scores[None, :]
    if scores.ndim != 2:
        raise ValueError(f"scores must be 1-D or 2-D, got shape {scores.shape}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    n_rows, n = scores.shape
    kk = min(k, n)
    if n_rows and n and not np.isfinite(scores).all():
        raise ValueError("scores contain NaN or infinite values")
    key = np.arange(n, dtype=np.int64) if tie_key is None else np.asarray(tie_key, dtype=np.int64)
    if key.shape != (n,):
        raise ValueError(f"tie_key must have shape ({n},), got {key.shape}")
    out_idx = np.empty((n_rows, kk), dtype=np.int64)
    out_val = np.empty((n_rows, kk), dtype=scores.dtype)
    for r in range(n_rows):
        row = scores[r]
        if kk < n:
            kth = np.partition(row, n - kk)[n - kk]  # the k-th largest value
            cand = np.flatnonzero(row >= kth)  # a superset holding every tie at the boundary
        else:
            cand = np.arange(n)
        order = np.lexsort((key[cand], -row[cand]))[:kk]
        out_idx[r] = cand[order]
        out_val[r] = row[cand[order]]
    return out_idx, out_val
