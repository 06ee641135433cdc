"""The machine-checkable replay contract (paper Table 3) and the checker behind ``lens audit check``.

A run is rejected — as a whole, never averaged — when any of these holds. Each violation is named by a code:

==========================  ===================================================================================
``pit-future-entry``        a PIT row selects an entry at or after its anchor (TVR > 0)
``own-event``               any row selects the anchor's own event
``ineligible-entry``        a Stateless row selects anything, or a Future-h row selects ``j > i + h``
``tvr-mismatch``            a row's recorded TVR / counts differ from those recomputed from its positions
``over-capacity``           a row selects more entries than its capacity
``capacity-mismatch``       paired rows (same anchor) have different capacities
``budget-mismatch``         paired rows have different trace depth, base depth or list depth
``corpus-hash-mismatch``    paired rows disagree on the corpus hash, or it differs from the manifest
``index-hash-mismatch``     paired rows disagree on the index hash, or it differs from the manifest
``binding-mismatch``        paired rows disagree on queries / stream / events / config hash
``naive-future-mismatch``   a Naive row differs from its Future row (selected entries or any metric)
``missing-condition``       a paired anchor lacks a condition that the run replayed elsewhere
``duplicate-row``           two rows claim the same anchor and condition
``output-hash-mismatch``    a run file differs from the bytes and sha256 its manifest recorded, is missing, or is
                            in the run folder without an entry in the manifest's outputs
``manifest-mismatch``       a manifest field is missing or of the wrong type, or disagrees with what it names: the
                            config hash recomputed from ``config.json``, an input file's bytes or sha256, the row
                            count, the kind, a stream binding against the saved stream
``malformed-file``          a run file the check reads cannot be read: a row line that is not JSON or whose field
                            is missing or mistyped, a damaged stream, event log or base list
``metric-mismatch``         a row's metrics differ from those recomputed from its selected positions, the run's
                            base lists and event log, and the labels (:mod:`~harness.audit.rescore`)
==========================  ===================================================================================

A negative PIT effect is a valid result; a positive score with TVR > 0 is not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from harness.audit.config import LensAuditConfig
from harness.audit.manifest import load_manifest, recorded_config, typed_manifest, verify_manifest, verify_outputs
from harness.audit.rescore import MetricDiff, RunFileError, rescore_rows
from harness.audit.rows import BUDGET_FIELDS, PAIR_FIELDS, RowTable, read_rows
from lens import LensError

__all__ = ["CODES", "Violation", "ContractFailed", "check_rows", "check_run", "violations_json"]

CODES = (
    "pit-future-entry",
    "own-event",
    "ineligible-entry",
    "tvr-mismatch",
    "over-capacity",
    "capacity-mismatch",
    "budget-mismatch",
    "corpus-hash-mismatch",
    "index-hash-mismatch",
    "binding-mismatch",
    "naive-future-mismatch",
    "missing-condition",
    "duplicate-row",
    "output-hash-mismatch",
    "manifest-mismatch",
    "malformed-file",
    "metric-mismatch",
)
_SHOW = 8


@dataclass(frozen=True)
class Violation:
    code: str
    message: str
    rows: tuple[int, ...] = ()

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "rows": list(self.rows)}


class ContractFailed(LensError):
    """A run violates the replay contract; it is invalid and no report is published for it."""

    def __init__(self, run_dir: Path | str, violations: list[Violation]) -> None:
        self.violations = violations
        codes = sorted({v.code for v in violations})
        super().__init__(
            f"{run_dir}: run fails the replay contract ({len(violations)} violations: {', '.join(codes)}); no report published"
        )


def _rows_text(ids: np.ndarray) -> str:
    ids = [int(x) for x in ids]
    head = ", ".join(str(i) for i in ids[:_SHOW])
    return head + (f", … (+{len(ids) - _SHOW})" if len(ids) > _SHOW else "")


def _violation(code: str, what: str, row_ids: np.ndarray) -> Violation:
    row_ids = np.asarray(row_ids)
    return Violation(code, f"{len(row_ids)} {what} (rows {_rows_text(row_ids)})", tuple(int(x) for x in row_ids))


def _pair_groups(t: RowTable) -> tuple[np.ndarray, int]:
    parts = [t[f].astype(str) for f in PAIR_FIELDS]
    joined = np.asarray(["\x1f".join(x) for x in zip(*parts)], dtype=object)
    _, inv = np.unique(joined, return_inverse=True)
    return inv.astype(np.int64), int(inv.max()) + 1 if inv.size else 0


def _group_disagrees(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Row mask: the row's value differs from the first value seen in its pair group."""
    first = np.full(n_groups, -1, dtype=np.int64)
    order = np.arange(values.size)[::-1]
    first[groups[order]] = order  # the smallest row index of each group wins
    ref = values[first[groups]]
    return np.asarray(values != ref, dtype=bool)


def _metric_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return (a == b) | (np.isnan(a) & np.isnan(b))


def check_rows(t: RowTable, bindings: Mapping[str, Any] | None = None) -> list[Violation]:
    """Every contract violation in a row table. ``bindings`` (the manifest's) adds the check that rows carry the
    corpus and index hashes the run recorded for their workload and retriever."""
    if t.n == 0:
        return [Violation("missing-condition", "the run holds no rows")]
    ids = t["row_id"] if "row_id" in t else np.arange(t.n)
    groups, n_groups = _pair_groups(t)
    return [
        *_selection_violations(t, ids),
        *_pair_violations(t, ids, groups, n_groups),
        *(_manifest_violations(t, ids, bindings) if bindings else []),
        *_pairing_violations(t, ids, groups),
        *_naive_violations(t, ids, groups),
    ]


def _selection_violations(t: RowTable, ids: np.ndarray) -> list[Violation]:
    """Selected entries recomputed from positions (never trusting recorded TVR): eligibility, counts, capacity."""
    out: list[Violation] = []
    anchor = t["anchor"].astype(np.int64)
    cond = t["condition"].astype(str)
    lists = t.selected_lists
    n_sel = np.asarray([len(s) for s in lists], dtype=np.int64)
    n_fut = np.asarray([sum(1 for p in s if p > a) for s, a in zip(lists, anchor)], dtype=np.int64)
    at_or_after = np.asarray([any(p >= a for p in s) for s, a in zip(lists, anchor)], dtype=bool)
    own = np.asarray([a in s for s, a in zip(lists, anchor)], dtype=bool)
    m = (cond == "pit") & at_or_after
    if m.any():
        out.append(_violation("pit-future-entry", "PIT rows select an entry at or after their anchor", ids[m]))
    if own.any():
        out.append(_violation("own-event", "rows select the anchor's own event", ids[own]))
    bad = (cond == "stateless") & (n_sel > 0)
    horizon = t["horizon"].astype(np.float64) if "horizon" in t else np.full(t.n, np.nan)
    fh = cond == "future-h"
    beyond = np.asarray(
        [bool(f) and any(p > a + h for p in s) for s, a, h, f in zip(lists, anchor, horizon, fh)], dtype=bool
    )
    bad |= beyond | (fh & np.isnan(horizon))
    if bad.any():
        out.append(
            _violation(
                "ineligible-entry",
                "rows select entries their view does not allow (Stateless or beyond a Future-h horizon)",
                ids[bad],
            )
        )
    tvr = np.divide(n_fut, n_sel, out=np.zeros(t.n), where=n_sel > 0)
    rec_tvr = t["tvr"].astype(np.float64)
    m = (
        ~np.isclose(rec_tvr, tvr, rtol=0, atol=1e-12)
        | (t["n_selected"].astype(np.int64) != n_sel)
        | (t["n_future"].astype(np.int64) != n_fut)
    )
    if m.any():
        out.append(
            _violation("tvr-mismatch", "rows record TVR or counts that differ from their selected positions", ids[m])
        )
    cap = t["capacity"].astype(np.int64)
    m = n_sel > cap
    if m.any():
        out.append(_violation("over-capacity", "rows select more entries than their capacity", ids[m]))

    return out


def _pair_violations(t: RowTable, ids: np.ndarray, groups: np.ndarray, n_groups: int) -> list[Violation]:
    """Paired rows (one anchor of one stream) must share capacity, budgets and every binding hash."""
    out: list[Violation] = []
    cap = t["capacity"].astype(np.int64)
    m = _group_disagrees(cap, groups, n_groups)
    if m.any():
        out.append(_violation("capacity-mismatch", "rows differ in capacity from their paired rows", ids[m]))
    m = np.zeros(t.n, dtype=bool)
    for f in BUDGET_FIELDS[1:]:
        m |= _group_disagrees(t[f].astype(np.int64), groups, n_groups)
    if m.any():
        out.append(_violation("budget-mismatch", "rows differ in trace/base/list depth from their paired rows", ids[m]))
    for f, code in (("corpus_hash", "corpus-hash-mismatch"), ("index_hash", "index-hash-mismatch")):
        m = _group_disagrees(t[f].astype(str), groups, n_groups)
        if m.any():
            out.append(_violation(code, f"rows differ in {f} from their paired rows", ids[m]))
    m = np.zeros(t.n, dtype=bool)
    for f in ("queries_hash", "stream_hash", "events_hash", "config_hash"):
        if f in t:
            m |= _group_disagrees(t[f].astype(str), groups, n_groups)
    if m.any():
        out.append(
            _violation(
                "binding-mismatch", "rows differ in queries/stream/events/config hash from their paired rows", ids[m]
            )
        )

    return out


def _manifest_violations(t: RowTable, ids: np.ndarray, bindings: Mapping[str, Any]) -> list[Violation]:
    """Rows must carry the corpus and index hashes the manifest recorded for their workload and retriever."""
    out: list[Violation] = []
    wl = t["workload"].astype(str)
    ret = t["retriever"].astype(str)
    exp_c = np.asarray([bindings.get(w, {}).get("corpus_hash") for w in wl], dtype=object)
    m = exp_c != t["corpus_hash"].astype(object)
    if m.any():
        out.append(_violation("corpus-hash-mismatch", "rows carry a corpus hash other than the manifest's", ids[m]))
    exp_i = np.asarray(
        [bindings.get(w, {}).get("retrievers", {}).get(r, {}).get("index_hash") for w, r in zip(wl, ret)],
        dtype=object,
    )
    m = exp_i != t["index_hash"].astype(object)
    if m.any():
        out.append(_violation("index-hash-mismatch", "rows carry an index hash other than the manifest's", ids[m]))
    return out


def _pairing_violations(t: RowTable, ids: np.ndarray, groups: np.ndarray) -> list[Violation]:
    """One row per (anchor, view), every view of its memory present at every anchor."""
    out: list[Violation] = []
    view = t["view"].astype(str)
    key = np.asarray([f"{g}\x1f{v}" for g, v in zip(groups, view)], dtype=object)
    _, first_idx, counts = np.unique(key, return_index=True, return_counts=True)
    if (counts > 1).any():
        dup = np.isin(key, np.unique(key)[counts > 1])
        out.append(_violation("duplicate-row", "rows repeat an (anchor, condition) pair", ids[dup]))
    views_by_memory: dict[str, set[str]] = {}
    mem = t["memory"].astype(str)
    for mm, v in zip(mem, view):
        views_by_memory.setdefault(mm, set()).add(v)
    have: dict[int, set[str]] = {}
    for g, v in zip(groups, view):
        have.setdefault(int(g), set()).add(v)
    first_row = {}
    for r, g in enumerate(groups):
        first_row.setdefault(int(g), r)
    missing = [first_row[g] for g, vs in have.items() if vs != views_by_memory[mem[first_row[g]]]]
    if missing:
        out.append(
            _violation(
                "missing-condition",
                "paired anchors lack a condition replayed elsewhere (first row of each shown)",
                ids[np.asarray(sorted(missing))],
            )
        )
    return out


def _naive_violations(t: RowTable, ids: np.ndarray, groups: np.ndarray) -> list[Violation]:
    """The leak control: Naive identical to Future on every row (entries and every metric)."""
    out: list[Violation] = []
    cond = t["condition"].astype(str)
    lists = t.selected_lists
    fut = {int(g): r for r, (g, c) in enumerate(zip(groups, cond)) if c == "future"}
    nav = [(r, fut.get(int(g))) for r, (g, c) in enumerate(zip(groups, cond)) if c == "naive"]
    pairs = np.asarray([(a, b) for a, b in nav if b is not None], dtype=np.int64).reshape(-1, 2)
    if pairs.size:
        a, b = pairs[:, 0], pairs[:, 1]
        differ = np.asarray([lists[i] != lists[j] for i, j in zip(a, b)], dtype=bool)
        for f in t.metric_fields() + ["tvr", "n_selected", "n_future", "top_sim", "mean_sim"]:
            if f in t:
                differ |= ~_metric_equal(t[f][a], t[f][b])
        if differ.any():
            out.append(_violation("naive-future-mismatch", "Naive rows differ from their Future rows", ids[a[differ]]))
    return out


def check_run(run_dir: str | Path, data_root: str | Path | None = None) -> list[Violation]:
    """Check a run folder: its manifest (every field typed) against the files and the config it names, every
    row against the contract, and every row's metrics against their recomputation (the workload's files read
    again, relative paths from ``data_root``, default the run's). Damage to any run file is a violation.

    Raises ``LensError`` when the folder is not a run (no manifest or rows), or its workload cannot be read again.
    """
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    rows_path = run_dir / "rows.jsonl"
    if not rows_path.is_file():
        raise LensError(f"{run_dir}: no rows.jsonl (not a finished audit run)")
    typing = typed_manifest(manifest)
    if typing:  # nothing else can be checked against a manifest whose fields cannot be read
        return [Violation("manifest-mismatch", msg) for msg in typing]
    out = [Violation("output-hash-mismatch", msg) for msg in verify_outputs(run_dir, manifest)]
    try:
        table = read_rows(rows_path)
    except LensError as exc:
        return [*out, Violation("malformed-file", str(exc).replace(f"{run_dir}/", "", 1))]
    out.extend(Violation("manifest-mismatch", msg) for msg in verify_manifest(run_dir, manifest, table.n, data_root))
    out.extend(check_rows(table, manifest["bindings"]))
    try:
        lens_memory = isinstance(recorded_config(run_dir), LensAuditConfig)
    except LensError:
        return out  # named above; metrics are recomputed under the recorded config, not one that cannot be read
    if lens_memory != (manifest.get("memory_kind") == "lens-memory"):
        return out  # named above: which recomputation applies is not known
    try:
        diffs = rescore_rows(run_dir, manifest, table, data_root)
    except RunFileError as exc:
        out.append(Violation("malformed-file", str(exc)))
        return out
    if diffs:
        out.append(_metric_violation(diffs))
    return out


def _metric_violation(diffs: list[MetricDiff]) -> Violation:
    rows = np.asarray(sorted({d.row for d in diffs}), dtype=np.int64)
    metrics = sorted({d.metric for d in diffs if d.metric})
    first = min(diffs, key=lambda d: (d.row, d.metric is None, d.metric or ""))
    if first.metric is None:
        detail = f"row {first.row}: names a stream, retriever or memory the run saved no inputs for"
    else:
        detail = f"row {first.row}: {first.metric} is {first.stored:.6g}, recomputed {first.recomputed:.6g}"
    what = "rows record metrics that differ from those recomputed from their selected positions and the labels"
    return Violation(
        "metric-mismatch",
        f"{rows.size} {what} ({', '.join(metrics) or 'no inputs'}; rows {_rows_text(rows)}); first: {detail}",
        tuple(int(x) for x in rows),
    )


def violations_json(violations: Iterable[Violation]) -> str:
    vs = list(violations)
    return json.dumps({"status": "pass" if not vs else "fail", "violations": [v.to_json() for v in vs]}, indent=2)
