"""The paired replay: every condition at every anchor of one stream, vectorised over anchors.

For one (stream, base retriever) the replay

1. takes the anchors' similarity to every stored event and orders the candidates once (:func:`neighbour_order`);
2. applies each view's eligibility predicate to that one ordering at the same capacity, and separately asks the
   pre-materialised :class:`~harness.audit.views.NaiveMemory` for its entries;
3. for each memory, turns each selection into a bonus, reranks the anchors' shared base lists with the one
   combination rule (:func:`~harness.audit.memories.rerank`), and scores the result.

All anchors of a condition are processed as arrays at once; nothing here loops over anchors except Naive's
lookup (a separate code path on purpose). The event log is read, never written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from harness.audit.events import EventLog
from harness.audit.memories import rerank
from harness.audit.metrics import CUTOFFS, row_metrics, temporal_violation
from harness.audit.rows import RowBlock
from harness.audit.views import MemoryView, NaiveMemory, Selection, neighbour_order, select
from harness.streams import Stream
from harness.workloads import GoldLabels

__all__ = ["Anchors", "choose_anchors", "Budgets", "ReplayInputs", "selection_metrics", "replay_stream"]


@dataclass(frozen=True)
class Anchors:
    """Stream positions to evaluate and the nominal stream fraction each was chosen around."""

    positions: np.ndarray
    groups: np.ndarray


def choose_anchors(n: int, fractions: Sequence[float] = (0.2, 0.4, 0.6, 0.8), per_position: int = 100) -> Anchors:
    """Contiguous windows of anchors centred on each fraction of a stream of length ``n``.

    Each window holds ``w = min(per_position, floor(g * n))`` positions, where ``g`` is the smallest gap
    between consecutive fractions, so windows never overlap and each anchor belongs to one position group
    (HotpotQA's 588 requests give 4 × 100; the 147 TAT-QA dev requests give 4 × 29). Raises ``ValueError``
    for fractions outside (0, 1) or a stream too short for one anchor per window.
    """
    fr = sorted(float(f) for f in fractions)
    if not fr or any(not 0 < f < 1 for f in fr) or len(set(fr)) != len(fr):
        raise ValueError(f"anchor fractions must be distinct values in (0, 1), got {list(fractions)}")
    gap = min([b - a for a, b in zip(fr, fr[1:])] + [1.0])
    w = min(int(per_position), int(np.floor(gap * n)))
    if w < 1:
        raise ValueError(f"a stream of {n} requests is too short for anchors at {fr}")
    pos, grp = [], []
    for f in fr:
        start = int(np.floor(f * n - w / 2))
        start = min(max(start, 0), n - w)
        pos.append(np.arange(start, start + w))
        grp.append(np.full(w, f))
    positions = np.concatenate(pos)
    if np.unique(positions).size != positions.size:
        raise ValueError(f"anchor windows overlap for n={n}, fractions {fr}; use fewer anchors per position")
    return Anchors(positions.astype(np.int64), np.concatenate(grp))


@dataclass(frozen=True)
class Budgets:
    """Equal for every condition of a paired anchor."""

    capacity: int = 32
    trace_depth: int = 50
    base_depth: int = 200
    list_depth: int = 200
    cutoffs: tuple[int, ...] = CUTOFFS
    headline_k: int = 100


@dataclass
class ReplayInputs:
    """Everything one replay reads: stream, frozen event log, workload-level similarity and base lists."""

    stream: Stream
    events: EventLog
    query_sim: np.ndarray  # (Q, Q) similarity between workload queries
    base: np.ndarray  # (Q, base_depth) asset indices, best first
    gold: GoldLabels  # for metrics (and the cache memory, which received it at construction)
    type_codes: np.ndarray
    type_names: tuple[str, ...]
    tie_key: np.ndarray
    bindings: Mapping[str, Any] = field(default_factory=dict)


def _selections(
    views: Sequence[MemoryView], inputs: ReplayInputs, anchors: Anchors, capacity: int
) -> list[tuple[MemoryView | None, Selection]]:
    stream = inputs.stream
    a_pos = anchors.positions
    a_q = stream.order[a_pos]
    sim_rows = inputs.query_sim[np.ix_(a_q, stream.order)]
    cand = neighbour_order(sim_rows, a_pos)
    out: list[tuple[MemoryView | None, Selection]] = [(v, select(v, cand, sim_rows, a_pos, capacity)) for v in views]
    naive = NaiveMemory.materialise(stream.query_ids, stream.order, inputs.query_sim, capacity)
    out.append((None, naive.select([stream.query_ids[p] for p in a_pos])))
    return out


def selection_metrics(
    inputs: ReplayInputs, memory: Any, sel: Selection, anchor_queries: np.ndarray, budgets: Budgets
) -> dict[str, np.ndarray]:
    """The row metrics of each anchor (workload query ``anchor_queries``) under one memory and its selection:
    the selection's bonus, the anchor's base list reranked with it by the one combination rule, scored against
    the labels. The replay and ``lens audit check`` both score rows with it."""
    n_assets = inputs.gold.n_assets
    bonus = memory.bonus(sel, inputs.events, n_assets, inputs.tie_key)
    base = inputs.base[anchor_queries, : budgets.base_depth]
    final = rerank(base, bonus, n_assets, inputs.tie_key, budgets.list_depth)
    return row_metrics(
        final,
        anchor_queries,
        inputs.gold,
        inputs.type_codes,
        inputs.type_names,
        cutoffs=budgets.cutoffs,
        headline_k=budgets.headline_k,
    )


def replay_stream(
    inputs: ReplayInputs,
    anchors: Anchors,
    views: Sequence[MemoryView],
    memories: Sequence[Any],
    budgets: Budgets = Budgets(),
    scalars: Mapping[str, Any] | None = None,
) -> list[RowBlock]:
    """Rows for every memory × condition (views, then Naive) at every anchor of ``inputs.stream``.

    ``memories`` are objects with ``name``, ``label_based`` and ``bonus(selection, events, n_assets,
    tie_key)``. ``scalars`` are copied into every row (workload, retriever, bindings …).
    """
    stream, events = inputs.stream, inputs.events
    if events.depth != budgets.trace_depth:
        raise ValueError(f"event log depth {events.depth} differs from the trace-depth budget {budgets.trace_depth}")
    if len(events) != len(stream):
        raise ValueError("event log and stream differ in length")
    a_pos = anchors.positions
    a_q = stream.order[a_pos]
    query_ids = np.asarray([stream.query_ids[p] for p in a_pos], dtype=object)
    selections = _selections(views, inputs, anchors, budgets.capacity)
    common = {
        "stream": stream.name,
        "stream_kind": stream.kind,
        "seed": stream.seed,
        "uses_gold": stream.uses_gold,
        "capacity": budgets.capacity,
        "trace_depth": budgets.trace_depth,
        "base_depth": budgets.base_depth,
        "list_depth": budgets.list_depth,
        **dict(inputs.bindings),
        **dict(scalars or {}),
    }
    blocks: list[RowBlock] = []
    for memory in memories:
        for view, sel in selections:
            metrics = selection_metrics(inputs, memory, sel, a_q, budgets)
            tvr, n_sel, n_fut = temporal_violation(sel.positions, a_pos)
            filled = sel.positions >= 0
            with np.errstate(invalid="ignore"):
                top_sim = (
                    np.where(filled[:, 0], sel.sims[:, 0], np.nan) if sel.capacity else np.full(len(a_pos), np.nan)
                )
                mean_sim = np.where(n_sel > 0, (sel.sims * filled).sum(axis=1) / np.maximum(n_sel, 1), np.nan)
            cond = "naive" if view is None else view.condition
            label = "naive" if view is None else view.label
            scal = {
                **common,
                "memory": memory.name,
                "label_based": bool(memory.label_based),
                "condition": cond,
                "horizon": None if view is None else view.horizon,
                "view": label,
            }
            cols = {
                "anchor_group": anchors.groups,
                "anchor": a_pos,
                "query_id": query_ids,
                "n_selected": n_sel,
                "n_future": n_fut,
                "tvr": tvr,
                "top_sim": np.round(top_sim, 6),
                "mean_sim": np.round(mean_sim, 6),
                **metrics,
            }
            blocks.append(RowBlock(scal, cols, sel.positions))
    return blocks
