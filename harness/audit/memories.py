"""Memory mechanisms replayed by the audit, and the one rule that combines a memory with the base list.

**Combination rule (every memory).** The base top-``L`` list scores asset ``a`` by its reciprocal rank,
``1 / r_base(a)`` (rank 1-based; 0 outside the list). A memory contributes a non-negative bonus ``b_i(a)``;
the reranked list orders assets by ``1 / r_base(a) + b_i(a)`` descending, ties by asset id, and keeps ``L``.
Assets outside the base list can enter through their bonus. With no selected entries the bonus is empty and
the output is exactly the base list (Stateless).

**(a) Trace memory** — behaviour only, no labels. Over the selected neighbour events ``N_i``::

    u_i(a) = Σ_{j ∈ N_i} s_ij² / log2(r_ja + 2)

with ``s_ij`` the query similarity (clipped at 0: an anti-similar query is no evidence), ``r_ja`` the 0-based
rank of ``a`` in event ``j``'s stored top-``d`` list. The assets with ``u_i(a) > 0``, ordered by ``u``
descending (ties by asset id), form the memory's ranked list, and ``b_i(a) = 1 / r_mem(a)``: the memory list is
fused with the base list on the same reciprocal-rank scale, so neither the scale of ``u`` nor any tuned weight
enters.

**(b) Positive-feedback cache** — a *label-based stress test*: the gold assets of each selected neighbour's
request stand in for perfectly observed clicks, and ``b_i(a) = min(cap, max_{j ∈ N_i, a ∈ gold(j)} s_ij²)``
with ``cap = 0.02``, the reciprocal score of base rank 50.

Both take the same :class:`~harness.audit.views.Selection`; only the cache is given labels, at construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.audit.events import EventLog
from harness.audit.views import Selection
from harness.workloads import GoldLabels

__all__ = ["Bonus", "TraceMemory", "PositiveFeedbackCache", "trace_utility", "rerank", "base_reciprocal"]


@dataclass(frozen=True)
class Bonus:
    """Sparse per-anchor bonus: one entry per (row, asset) with ``values > 0``; rows index the anchors."""

    rows: np.ndarray
    assets: np.ndarray
    values: np.ndarray

    @classmethod
    def empty(cls) -> "Bonus":
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z.copy(), np.zeros(0, dtype=np.float64))


def _aggregate(keys: np.ndarray, values: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    """Sum or max ``values`` per distinct key; a stable sort fixes the order in which parts are combined."""
    if keys.size == 0:
        return keys, values
    order = np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    red = np.add.reduceat(v, starts) if how == "sum" else np.maximum.reduceat(v, starts)
    return k[starts], red


def trace_utility(selection: Selection, events: EventLog, n_assets: int, order_key: np.ndarray | None = None) -> Bonus:
    """``u_i(a)`` for every anchor row and asset with ``u > 0`` (not yet turned into a bonus).

    Entries come grouped by row and, within a row, ordered by ``order_key[asset]`` (default: asset index).
    Each ``u`` is summed in selection order (slot, then stored rank), so equal selections give equal floats.
    """
    pos = selection.positions
    valid = pos >= 0
    weight = np.where(valid, np.maximum(selection.sims, 0.0) ** 2, 0.0)  # (A, C)
    ev_assets = events.assets[np.where(valid, pos, 0)]  # (A, C, d)
    d = ev_assets.shape[2]
    discount = 1.0 / np.log2(np.arange(d, dtype=np.float64) + 2.0)  # rank 0 → 1
    contrib = weight[:, :, None] * discount[None, None, :]
    rows = np.broadcast_to(np.arange(pos.shape[0], dtype=np.int64)[:, None, None], ev_assets.shape)
    ok = valid[:, :, None] & (ev_assets >= 0) & (contrib > 0)
    assets = ev_assets[ok]
    key = assets if order_key is None else np.asarray(order_key, dtype=np.int64)[assets]
    k, u = _aggregate(rows[ok] * n_assets + key, contrib[ok], "sum")
    r, a = k // n_assets, k % n_assets
    if order_key is not None:
        inv = np.empty(n_assets, dtype=np.int64)
        inv[order_key] = np.arange(n_assets)
        a = inv[a]
    return Bonus(r, a, u)


def _order_within_rows(rows: np.ndarray, neg_values: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Order entries within each row by ``neg_values`` ascending, keeping the incoming order among equals.

    Entries must arrive grouped by row (rows ascending) and, within a row, in tie-break order. Returns
    ``(order, rank)``: the permutation that sorts them and each sorted entry's 1-based rank in its row.
    Each row is sorted on its own (a padded matrix, one stable sort per row), which is exact and cheaper
    than a three-key lexsort.
    """
    counts = np.bincount(rows, minlength=n_rows)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    slot = np.arange(rows.size) - starts[rows]
    width = int(counts.max()) if rows.size else 0
    mat = np.full((n_rows, width), np.inf)
    mat[rows, slot] = neg_values
    within = np.argsort(mat, axis=1, kind="stable")
    valid = np.arange(width)[None, :] < counts[:, None]
    order = (within + starts[:, None])[valid]  # row-major: rows ascending, then by value
    rank = np.broadcast_to(np.arange(1, width + 1)[None, :], mat.shape)[valid]
    return order, rank


class TraceMemory:
    """Behaviour-only trace reranker (no labels)."""

    name = "trace"
    label_based = False

    def bonus(self, selection: Selection, events: EventLog, n_assets: int, tie_key: np.ndarray) -> Bonus:
        u = trace_utility(selection, events, n_assets, order_key=tie_key)
        if u.rows.size == 0:
            return Bonus.empty()
        order, rank = _order_within_rows(u.rows, -u.values, selection.positions.shape[0])
        return Bonus(u.rows[order], u.assets[order], 1.0 / rank)


class PositiveFeedbackCache:
    """Gold assets of selected neighbours as clicks; bonus = max squared similarity, capped (label-based)."""

    name = "cache"
    label_based = True

    def __init__(self, gold: GoldLabels, cap: float = 0.02) -> None:
        if cap <= 0:
            raise ValueError(f"cache bonus cap must be > 0, got {cap}")
        self.gold = gold
        self.cap = float(cap)

    def bonus(self, selection: Selection, events: EventLog, n_assets: int, tie_key: np.ndarray) -> Bonus:
        pos = selection.positions
        valid = pos >= 0
        A, C = pos.shape
        nb_query = np.where(valid, events.query_index[np.where(valid, pos, 0)], 0)
        sizes = np.where(valid, self.gold.sizes()[nb_query], 0).ravel()
        starts = self.gold.indptr[nb_query].ravel()
        total = int(sizes.sum())
        if total == 0:
            return Bonus.empty()
        owner = np.repeat(np.arange(A * C), sizes)  # flat (row, slot) of each click
        offset = np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        assets = self.gold.indices[np.repeat(starts, sizes) + offset]
        value = np.minimum(self.cap, np.maximum(selection.sims.ravel(), 0.0) ** 2)[owner]
        rows = owner // C
        keep = value > 0
        k, v = _aggregate(rows[keep] * n_assets + assets[keep], value[keep], "max")
        return Bonus(k // n_assets, k % n_assets, v)


def base_reciprocal(depth: int) -> np.ndarray:
    """Reciprocal-rank score of base ranks 1..depth."""
    return 1.0 / np.arange(1, depth + 1, dtype=np.float64)


def rerank(base: np.ndarray, bonus: Bonus, n_assets: int, tie_key: np.ndarray, depth: int | None = None) -> np.ndarray:
    """Apply the combination rule: ``(A, depth)`` asset indices ordered by ``1/r_base + bonus`` (ties by
    ``tie_key``), ``-1`` where fewer assets exist. ``base`` is ``(A, L)`` asset indices (``-1`` pads);
    ``tie_key`` must be a permutation of ``range(n_assets)`` (the asset-id order)."""
    A, L = base.shape
    depth = L if depth is None else depth
    inv_tie = np.empty(n_assets, dtype=np.int64)
    inv_tie[tie_key] = np.arange(n_assets)
    base_rows = np.broadcast_to(np.arange(A, dtype=np.int64)[:, None], base.shape)
    base_score = np.broadcast_to(base_reciprocal(L)[None, :], base.shape)
    ok = base >= 0
    # Keys order entries by (row, tie key), so equal totals keep asset-id order through the stable sort.
    keys = np.concatenate([base_rows[ok] * n_assets + tie_key[base[ok]], bonus.rows * n_assets + tie_key[bonus.assets]])
    vals = np.concatenate([base_score[ok], bonus.values])
    k, total = _aggregate(keys, vals, "sum")  # base part first, then the bonus: a fixed order
    rows = k // n_assets
    # Every base asset scores >= 1/L, so where a row's base list is full an asset scoring below 1/L cannot
    # reach its top L; dropping those before the sort changes nothing but the cost.
    if depth <= L:
        keep = (total >= 1.0 / L) | ~ok.all(axis=1)[rows]
        k, total, rows = k[keep], total[keep], rows[keep]
    order, rank = _order_within_rows(rows, -total, A)
    rows_s, assets_s, slot = rows[order], inv_tie[k[order] % n_assets], rank - 1
    keep = slot < depth
    out = np.full((A, depth), -1, dtype=np.int64)
    out[rows_s[keep], slot[keep]] = assets_s[keep]
    return out
