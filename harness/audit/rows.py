"""The row contract: one JSON object per (anchor, memory, condition), and columnar reading for checks/reports.

Every row carries what an independent checker needs to recompute its validity without rerunning retrieval:

- identity — ``row_id``, ``workload``, ``memory`` (``label_based`` for stress tests), ``retriever``,
  ``stream`` (name), ``stream_kind``, ``seed``, ``uses_gold``, ``anchor_group`` (0.2/0.4/…), ``anchor``
  (stream position ``i``), ``query_id``, ``condition``, ``horizon`` (Future-h), ``view`` (e.g. ``future-h10``);
- budgets — ``capacity`` (neighbour slots), ``trace_depth`` (assets per stored event), ``base_depth`` (base list
  length), ``list_depth`` (reranked list length);
- the selected entries — ``selected`` (positions, most similar first), ``n_selected``, ``n_future``, ``tvr``,
  ``top_sim`` / ``mean_sim`` (query similarity of the nearest / average selected neighbour);
- metrics — ``recall@k``, typed recall, ``hit@K``, ``complete@K``, ``rank80`` (LENS full mode: ``em``, ``f1``,
  ``ev_rec``);
- bindings — ``corpus_hash``, ``queries_hash``, ``index_hash``, ``stream_hash``, ``events_hash``,
  ``config_hash``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from harness.files import atomic_write, read_jsonl
from lens import LensError

__all__ = [
    "SCHEMA",
    "IDENTITY_FIELDS",
    "BUDGET_FIELDS",
    "BINDING_FIELDS",
    "RowBlock",
    "RowTable",
    "write_rows",
    "read_rows",
]

SCHEMA = "lens-pit-row/1"
IDENTITY_FIELDS = (
    "workload",
    "memory",
    "label_based",
    "retriever",
    "stream",
    "stream_kind",
    "seed",
    "uses_gold",
    "anchor_group",
    "anchor",
    "query_id",
    "condition",
    "horizon",
    "view",
)
BUDGET_FIELDS = ("capacity", "trace_depth", "base_depth", "list_depth")
BINDING_FIELDS = ("corpus_hash", "queries_hash", "index_hash", "stream_hash", "events_hash", "config_hash")
SELECTION_FIELDS = ("selected", "n_selected", "n_future", "tvr", "top_sim", "mean_sim")
# Metric fields besides recall@k / hit@K / complete@K: product coverage, and the LENS full mode's answer scores.
_OTHER_METRICS = ("rank80", "em", "f1", "ev_rec")
# Fields that together name one paired anchor (every condition of one memory at one anchor shares them).
PAIR_FIELDS = ("workload", "memory", "retriever", "stream", "anchor")


class RowBlock:
    """Rows of one replayed (stream, retriever, memory, condition) batch, as columns.

    ``scalars`` maps a field to a value shared by every row; ``columns`` maps a field to an array of length
    ``n``; ``selected`` is an ``(n, capacity)`` array padded with ``-1``.
    """

    def __init__(self, scalars: Mapping[str, Any], columns: Mapping[str, np.ndarray], selected: np.ndarray) -> None:
        self.scalars = dict(scalars)
        self.columns = dict(columns)
        self.selected = selected
        self.n = int(selected.shape[0])

    def records(self) -> Iterator[dict[str, Any]]:
        cols = {k: _to_list(v) for k, v in self.columns.items()}
        sel = self.selected.tolist()
        names = sorted([*self.scalars, *cols, "selected"], key=_field_rank)
        for r in range(self.n):
            rec = {}
            for k in names:
                if k == "selected":
                    rec[k] = [p for p in sel[r] if p >= 0]
                elif k in cols:
                    rec[k] = cols[k][r]
                else:
                    rec[k] = self.scalars[k]
            yield rec


def _field_rank(name: str) -> tuple[int, int]:
    """Row field order: identity, budgets, selection, metrics, bindings (then anything else)."""
    for group, fields in enumerate((IDENTITY_FIELDS, BUDGET_FIELDS, SELECTION_FIELDS)):
        if name in fields:
            return group, fields.index(name)
    if name in BINDING_FIELDS:
        return 4, BINDING_FIELDS.index(name)
    return 3, 0


def _to_list(arr: np.ndarray) -> list:
    out = np.asarray(arr).tolist()
    if np.asarray(arr).dtype.kind == "f":
        return [None if (isinstance(x, float) and math.isnan(x)) else x for x in out]
    return out


def write_rows(path: str | Path, blocks: Iterable[RowBlock]) -> int:
    """Write all rows (numbered from 0) as JSON lines to ``path`` atomically; returns the row count."""
    count = 0

    def _write(fh) -> None:
        nonlocal count
        for block in blocks:
            lines = []
            for rec in block.records():
                rec = {"row_id": count, "schema": SCHEMA, **rec}
                lines.append(json.dumps(rec, separators=(",", ":"), allow_nan=False))
                count += 1
            if lines:
                fh.write(("\n".join(lines) + "\n").encode("utf-8"))

    atomic_write(path, _write)
    return count


class RowTable:
    """Rows read back as columns: ``table[field]`` is a numpy array (object dtype for strings and None);
    ``table.selected`` is ``(n, max capacity)`` int64 padded with -1."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.n = len(records)
        fields = list(dict.fromkeys(k for rec in records for k in rec))
        self.fields = [f for f in fields if f != "selected"]
        self._cols: dict[str, np.ndarray] = {}
        for f in self.fields:
            vals = [rec.get(f) for rec in records]
            self._cols[f] = _column(vals)
        for r, rec in enumerate(records):
            s = rec.get("selected")
            if s is not None and not (isinstance(s, list) and all(type(p) is int and 0 <= p < 2**62 for p in s)):
                raise RowError(r, "selected", "a list of stream positions (integers 0 or more)")
        width = max((len(rec.get("selected") or []) for rec in records), default=0)
        sel = np.full((self.n, width), -1, dtype=np.int64)
        for r, rec in enumerate(records):
            s = rec.get("selected") or []
            sel[r, : len(s)] = s
        self.selected = sel
        self.selected_lists = [list(rec.get("selected") or []) for rec in records]

    def __getitem__(self, field: str) -> np.ndarray:
        return self._cols[field]

    def __contains__(self, field: str) -> bool:
        return field in self._cols

    def metric_fields(self) -> list[str]:
        return [f for f in self.fields if f.startswith(("recall@", "hit@", "complete@")) or f in _OTHER_METRICS]


class RowError(ValueError):
    """Row ``index`` (0-based) lacks ``field`` or holds a value of the wrong type (``what`` it should be)."""

    def __init__(self, index: int, field: str, what: str) -> None:
        super().__init__(f"row {index}: field {field!r} must be {what}")
        self.index, self.field, self.what = index, field, what


# the fields the contract check and the rescoring read, by type (the metrics are numbers too); None is allowed
# only where a number may be missing (NaN)
_INTEGER_FIELDS = ("anchor", *BUDGET_FIELDS, "n_selected", "n_future")
_NUMBER_FIELDS = ("horizon", "top_sim", "mean_sim")
_TEXT_FIELDS = ("workload", "memory", "retriever", "stream", "condition", "view", "corpus_hash", "index_hash")


def check_types(t: "RowTable", records: list[dict[str, Any]]) -> None:
    """Raise :class:`RowError` for the first row (of ``records``, which ``t`` was read from) whose field the
    check reads is missing or mistyped."""
    if not t.n:
        return
    number = (int, float, type(None))
    for f in ("row_id", *_INTEGER_FIELDS):
        if (f in t or f != "row_id") and (f not in t or t[f].dtype != np.int64):
            raise RowError(
                _first(records, f, lambda v: type(v) is not int or not -(2**63) <= v < 2**63), f, "an integer"
            )
    for f in ("tvr", *(g for g in (*_NUMBER_FIELDS, *t.metric_fields()) if g in t)):
        if f not in t or not {type(v) for v in t[f].tolist()} <= set(number):
            raise RowError(_first(records, f, lambda v: type(v) not in number), f, "a number or null")
    for f in (*_TEXT_FIELDS, *(b for b in BINDING_FIELDS if b in t)):
        if f not in t or not {type(v) for v in t[f].tolist()} <= {str}:
            raise RowError(_first(records, f, lambda v: type(v) is not str), f, "a string")


def _first(records: list[dict[str, Any]], field: str, wrong: Any) -> int:
    return next((i for i, rec in enumerate(records) if wrong(rec.get(field))), 0)


def _column(vals: list[Any]) -> np.ndarray:
    kinds = {type(v) for v in vals if v is not None}
    if kinds and kinds <= {int} and all(v is not None and -(2**63) <= v < 2**63 for v in vals):
        return np.asarray(vals, dtype=np.int64)
    if kinds and kinds <= {int, float}:
        return np.asarray([math.nan if v is None else v for v in vals], dtype=np.float64)
    if kinds == {bool} and all(v is not None for v in vals):
        return np.asarray(vals, dtype=bool)
    arr = np.empty(len(vals), dtype=object)
    arr[:] = vals
    return arr


def read_rows(path: str | Path) -> RowTable:
    """Read a row file; raises ``LensError`` naming the line on malformed JSON, and the line and field when a
    field the contract check reads is missing or of the wrong type."""
    path = Path(path)
    if not path.is_file():
        raise LensError(f"{path}: no such row file")
    numbered = list(read_jsonl(path))
    records = [rec for _, rec in numbered]
    try:
        table = RowTable(records)
        check_types(table, records)
    except RowError as exc:
        raise LensError(f"{path}: line {numbered[exc.index][0]}: field {exc.field!r} must be {exc.what}") from None
    return table
