"""Memory views: which stored events an anchor may read, as eligibility predicates over stream positions.

A view is a predicate ``eligible(anchor_pos, entry_pos) -> bool`` with a vectorised ``mask`` (numpy
broadcasting). The anchor's own event is never eligible. At anchor ``i``:

=============  ====================================  ============
condition      eligible entries ``j``                valid PIT?
=============  ====================================  ============
Stateless      none                                  yes
PIT            ``j < i``                             yes
Future-h       ``j < i`` or ``i < j <= i + h``       no
Future         ``j != i``                            no
=============  ====================================  ============

All views select at the same capacity: candidates are every stored event ordered by query similarity to the
anchor (descending; ties by earlier position), and a view keeps the first ``capacity`` eligible ones
(:func:`select`). The same predicate objects can drive any memory with observable entry times — e.g. the LENS
warm-reuse memory reads its log through ``MemoryView.at(anchor_pos)``, an ``entry -> bool`` predicate.

Naive is deliberately *not* a predicate: :class:`NaiveMemory` pre-materialises, up front and from the whole
stream, each request's nearest stored events keyed by query identity, the way a cache built after the fact
would be. It shares no selection code with the views, so "Naive equals Future on every row" is a real check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

__all__ = [
    "MemoryView",
    "Stateless",
    "PIT",
    "FutureH",
    "Future",
    "Selection",
    "standard_views",
    "neighbour_order",
    "select",
    "NaiveMemory",
]


class MemoryView:
    """Eligibility of entry position ``entry_pos`` for an anchor at ``anchor_pos``."""

    condition: str = ""
    horizon: int | None = None
    valid_pit: bool = False

    @property
    def label(self) -> str:
        """Row label: the condition, with the horizon for Future-h (``future-h10``)."""
        return self.condition if self.horizon is None else f"{self.condition}{self.horizon}"

    def mask(self, anchor_pos: np.ndarray, entry_pos: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def eligible(self, anchor_pos: int, entry_pos: int) -> bool:
        return bool(self.mask(np.asarray(anchor_pos), np.asarray(entry_pos)))

    def at(self, anchor_pos: int) -> Callable[[Any], bool]:
        """This view at one anchor as an entry predicate ``entry -> bool`` over any entry with a ``position``
        (the form ``lens.memory._memory.MemoryStore.lookup`` takes as its ``Eligibility``)."""
        return lambda entry: self.eligible(anchor_pos, entry.position)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()" if self.horizon is None else f"{type(self).__name__}({self.horizon})"


class Stateless(MemoryView):
    condition = "stateless"
    valid_pit = True

    def mask(self, anchor_pos, entry_pos):
        a, e = np.broadcast_arrays(np.asarray(anchor_pos), np.asarray(entry_pos))
        return np.zeros(a.shape, dtype=bool)


class PIT(MemoryView):
    condition = "pit"
    valid_pit = True

    def mask(self, anchor_pos, entry_pos):
        return np.asarray(entry_pos) < np.asarray(anchor_pos)


class FutureH(MemoryView):
    condition = "future-h"

    def __init__(self, horizon: int) -> None:
        if horizon < 1:
            raise ValueError(f"Future-h horizon must be >= 1, got {horizon}")
        self.horizon = int(horizon)

    def mask(self, anchor_pos, entry_pos):
        a, e = np.asarray(anchor_pos), np.asarray(entry_pos)
        return (e < a) | ((e > a) & (e <= a + self.horizon))


class Future(MemoryView):
    condition = "future"

    def mask(self, anchor_pos, entry_pos):
        return np.asarray(entry_pos) != np.asarray(anchor_pos)


def standard_views(horizons: Sequence[int] = (10, 50, 100, 250, 500)) -> list[MemoryView]:
    """Stateless, PIT, Future-h for each horizon (ascending), Future."""
    return [Stateless(), PIT(), *(FutureH(h) for h in sorted(set(horizons))), Future()]


@dataclass(frozen=True)
class Selection:
    """Selected entries per anchor: ``positions (A, capacity)`` best first, ``-1`` in unfilled slots, and the
    query similarity of each (0 in unfilled slots)."""

    positions: np.ndarray
    sims: np.ndarray

    @property
    def capacity(self) -> int:
        return int(self.positions.shape[1])

    @property
    def counts(self) -> np.ndarray:
        return (self.positions >= 0).sum(axis=1)


def neighbour_order(sim_rows: np.ndarray, anchor_pos: np.ndarray) -> np.ndarray:
    """Candidate events for each anchor, most similar first (ties: earlier position), own event removed.

    ``sim_rows (A, n)`` holds the similarity of each anchor's query to the query of every event (stream
    order). Returns ``(A, n - 1)`` positions.
    """
    A, n = sim_rows.shape
    key = -np.asarray(sim_rows, dtype=np.float64)
    key = key.copy()
    key[np.arange(A), anchor_pos] = np.inf  # the anchor's own event sorts last and is cut
    order = np.argsort(key, axis=1, kind="stable")  # stable: equal similarity keeps position order
    return order[:, : n - 1]


def select(
    view: MemoryView, candidates: np.ndarray, sim_rows: np.ndarray, anchor_pos: np.ndarray, capacity: int
) -> Selection:
    """The first ``capacity`` candidates that ``view`` finds eligible, per anchor (vectorised)."""
    A, m = candidates.shape
    elig = view.mask(anchor_pos[:, None], candidates) & (candidates != anchor_pos[:, None])  # never the own event
    take = elig & (np.cumsum(elig, axis=1) <= capacity)
    rows, cols = np.nonzero(take)  # row-major: columns ascend within a row, i.e. similarity order
    starts = np.searchsorted(rows, np.arange(A))
    slots = np.arange(rows.size) - starts[rows]
    positions = np.full((A, capacity), -1, dtype=np.int64)
    sims = np.zeros((A, capacity), dtype=np.float64)
    chosen = candidates[rows, cols]
    positions[rows, slots] = chosen
    sims[rows, slots] = sim_rows[rows, chosen]
    return Selection(positions, sims)


class NaiveMemory:
    """Full-stream memory materialised up front (leak control; must reproduce Future exactly).

    For every request in the stream it stores, keyed by query id, the ``capacity + 1`` most similar events of
    the whole stream (ties: earlier position), computed one request at a time. A lookup removes the entry that
    holds the anchor's own query and keeps ``capacity``.
    """

    def __init__(self, table: dict[str, tuple[np.ndarray, np.ndarray, tuple[str, ...]]], capacity: int) -> None:
        self._table = table
        self.capacity = int(capacity)

    @classmethod
    def materialise(
        cls, stream_query_ids: Sequence[str], stream_order: np.ndarray, query_sim: np.ndarray, capacity: int
    ) -> "NaiveMemory":
        """Build from the stream (``stream_order[j]`` = workload index at position ``j``) and the workload-level
        query similarity matrix ``query_sim (Q, Q)``."""
        order = np.asarray(stream_order, dtype=np.int64)
        positions = np.arange(order.size, dtype=np.int64)
        table: dict[str, tuple[np.ndarray, np.ndarray, tuple[str, ...]]] = {}
        keep = capacity + 1
        for j, q in enumerate(order):
            sims = np.asarray(query_sim[q, order], dtype=np.float64)
            best = np.lexsort((positions, -sims))[:keep]
            table[stream_query_ids[j]] = (positions[best], sims[best], tuple(stream_query_ids[b] for b in best))
        return cls(table, capacity)

    def lookup(self, query_id: str) -> tuple[np.ndarray, np.ndarray]:
        """Positions and similarities of the stored entries served to ``query_id`` (own entry removed)."""
        pos, sims, owners = self._table[query_id]
        keep = np.asarray([o != query_id for o in owners], dtype=bool)
        return pos[keep][: self.capacity], sims[keep][: self.capacity]

    def select(self, anchor_query_ids: Sequence[str]) -> Selection:
        positions = np.full((len(anchor_query_ids), self.capacity), -1, dtype=np.int64)
        sims = np.zeros((len(anchor_query_ids), self.capacity), dtype=np.float64)
        for r, qid in enumerate(anchor_query_ids):
            p, s = self.lookup(qid)
            positions[r, : p.size] = p
            sims[r, : s.size] = s
        return Selection(positions, sims)
