"""The event log: one behaviour-only trace per stream position, built once, online, append-only.

Event ``e_j = (query, top-d assets with scores, position j, version)``. :meth:`EventLog.build` walks the stream
in order and appends, for the request at each position, what the fixed base retriever returned for that request
alone — no relevance label, no later request, no condition-dependent state can enter. After the walk the log is
frozen: its arrays are read-only and :meth:`EventLog.append` refuses, so replayed conditions can read the log
but never write to it. ``version`` names the base behaviour (the base-list hash and the trace depth).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from harness.files import atomic_write, canonical_json, sha256_bytes
from harness.streams import Stream

__all__ = ["Event", "EventLog", "FrozenLogError", "AppendOnlyLog"]


class FrozenLogError(RuntimeError):
    """Something tried to write to a frozen event log."""


class AppendOnlyLog:
    """What every event log of the audit is: written position by position while it is built, then frozen —
    read-only for the conditions that replay it. Subclasses append through :meth:`_writable` and expose their
    read-only form in :meth:`_seal`."""

    kind = "event log"

    def __init__(self, version: str) -> None:
        self.version = version
        self._frozen = False

    def _writable(self) -> None:
        if self._frozen:
            raise FrozenLogError(f"the {self.kind} is frozen: conditions read it and never write to it")

    def _seal(self) -> None:
        raise NotImplementedError

    def freeze(self):
        """Stop accepting events; expose the read-only form."""
        if not self._frozen:
            self._seal()
            self._frozen = True
        return self

    @property
    def frozen(self) -> bool:
        return self._frozen


@dataclass(frozen=True)
class Event:
    position: int
    query_index: int
    query_id: str
    assets: tuple[int, ...]
    scores: tuple[float, ...]
    version: str


class EventLog(AppendOnlyLog):
    """Append-only trace log of one stream under one base retriever.

    Arrays: ``query_index (n,)`` workload index of each event's request, ``assets (n, depth)`` asset indices
    best first (``-1`` pads a short list), ``scores (n, depth)`` the base scores. Position ``j`` is the row.
    """

    def __init__(self, depth: int, version: str) -> None:
        if depth < 1:
            raise ValueError(f"trace depth must be >= 1, got {depth}")
        super().__init__(version)
        self.depth = int(depth)
        self._q: list[int] = []
        self._ids: list[str] = []
        self._assets: list[np.ndarray] = []
        self._scores: list[np.ndarray] = []

    # -- writing (only while building) --------------------------------------------------------------------
    def append(self, query_index: int, query_id: str, assets: np.ndarray, scores: np.ndarray) -> int:
        """Append the next event; returns its position. Raises :class:`FrozenLogError` once frozen."""
        self._writable()
        a = np.full(self.depth, -1, dtype=np.int64)
        s = np.zeros(self.depth, dtype=np.float64)
        assets = np.asarray(assets, dtype=np.int64)[: self.depth]
        a[: assets.size] = assets
        s[: assets.size] = np.asarray(scores, dtype=np.float64)[: assets.size]
        self._q.append(int(query_index))
        self._ids.append(str(query_id))
        self._assets.append(a)
        self._scores.append(s)
        return len(self._q) - 1

    def _seal(self) -> None:
        """Read-only arrays."""
        self.query_index = np.asarray(self._q, dtype=np.int64)
        self.assets = np.stack(self._assets) if self._assets else np.zeros((0, self.depth), dtype=np.int64)
        self.scores = np.stack(self._scores) if self._scores else np.zeros((0, self.depth), dtype=np.float64)
        for arr in (self.query_index, self.assets, self.scores):
            arr.flags.writeable = False
        self.query_ids = tuple(self._ids)
        del self._assets, self._scores

    # -- building ---------------------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        stream: Stream,
        base_behaviour: Callable[[int], tuple[np.ndarray, np.ndarray]],
        *,
        depth: int = 50,
        version: str,
    ) -> "EventLog":
        """Walk ``stream`` in order and append ``base_behaviour(query_index)[: depth]`` at each position.

        ``base_behaviour`` maps a workload query index to ``(asset indices, scores)`` best first: the fixed base
        retriever's output for that request. The returned log is frozen.
        """
        log = cls(depth, version)
        for j, q in enumerate(stream.order):
            assets, scores = base_behaviour(int(q))
            pos = log.append(int(q), stream.query_ids[j], assets, scores)
            assert pos == j
        return log.freeze()

    # -- reading ----------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._q) if not self._frozen else int(self.query_index.size)

    def event(self, j: int) -> Event:
        self._require_frozen()
        a = self.assets[j]
        keep = a >= 0
        return Event(
            j,
            int(self.query_index[j]),
            self.query_ids[j],
            tuple(int(x) for x in a[keep]),
            tuple(float(x) for x in self.scores[j][keep]),
            self.version,
        )

    @property
    def hash(self) -> str:
        """sha256 over version, depth, query ids in order, asset and score arrays."""
        self._require_frozen()
        head = canonical_json({"version": self.version, "depth": self.depth, "query_ids": list(self.query_ids)})
        body = np.ascontiguousarray(self.assets).tobytes() + np.ascontiguousarray(self.scores).tobytes()
        return sha256_bytes(head + body)

    def save(self, path: str | Path) -> Path:
        """Write the frozen log as ``.npz`` (query_index, assets, scores, ids, version) atomically."""
        self._require_frozen()

        buf = io.BytesIO()
        np.savez(
            buf,
            query_index=self.query_index,
            assets=self.assets,
            scores=self.scores,
            query_ids=np.asarray(self.query_ids, dtype=str),
            version=np.asarray(self.version),
            depth=np.asarray(self.depth),
        )
        return atomic_write(path, buf.getvalue())

    @classmethod
    def load(cls, path: str | Path) -> "EventLog":
        """Read a log written by :meth:`save` back, frozen."""
        with np.load(path, allow_pickle=False) as z:
            log = cls(int(z["depth"]), str(z["version"]))
            for q, qid, assets, scores in zip(z["query_index"], z["query_ids"], z["assets"], z["scores"]):
                log.append(int(q), str(qid), assets, scores)
        return log.freeze()

    def _require_frozen(self) -> None:
        if not self._frozen:
            raise RuntimeError("the event log is still being built")
