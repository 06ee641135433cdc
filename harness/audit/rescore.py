"""Every row's metrics recomputed for ``lens audit check``: from the row's selected positions, the run's own saved
stream, event log and base lists, and the labels read again from the workload's files.

The workload is loaded from the paths its config names (relative ones against the data root the run recorded,
or the one given); its corpus, queries and labels hashes must be the run's, and so must the query vectors
computed again from it (``RUN_DIR/cache`` is reused when the run kept them there). Each row's selection — its
positions and their query similarity to the anchor — then goes through the replay's own scoring
(:func:`~harness.audit.replay.selection_metrics`). LENS-memory runs rank with the agent's prior over a folder:
their metrics are not recomputed here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from harness.audit.baselists import ArtifactCache, BaseLists, compute_query_vectors
from harness.audit.config import AuditConfig
from harness.audit.events import EventLog
from harness.audit.inputs import load_workload
from harness.audit.manifest import DAMAGE
from harness.audit.memories import PositiveFeedbackCache, TraceMemory
from harness.audit.replay import Budgets, ReplayInputs, selection_metrics
from harness.audit.rows import RowTable
from harness.audit.views import Selection
from harness.streams import Stream
from harness.workloads import Workload
from lens import LensError

__all__ = ["MetricDiff", "RunFileError", "rescore_rows"]

_TOLERANCE = 1e-9  # the replay's own arithmetic gives the same floats; this only absorbs JSON round trips


@dataclass(frozen=True)
class MetricDiff:
    """A row whose stored metric differs from the recomputed one (``metric`` is ``None`` when the row names
    inputs the run did not save, so nothing can be recomputed for it)."""

    row: int
    metric: str | None
    stored: float = math.nan
    recomputed: float = math.nan


def rescore_rows(
    run_dir: Path, manifest: Mapping[str, Any], t: RowTable, data_root: str | Path | None = None
) -> list[MetricDiff]:
    """Every metric of every row of ``t`` that differs from its recomputation. Raises ``LensError`` when the
    workload cannot be read again or is not the run's (the message names the file or the hash)."""
    if manifest.get("memory_kind") == "lens-memory" or t.n == 0:
        return []
    cfg = AuditConfig.model_validate(json.loads((run_dir / "config.json").read_text(encoding="utf-8"))["config"])
    root = Path(data_root) if data_root else Path(manifest.get("data_root") or ".")
    cache = ArtifactCache(run_dir / "cache" if (run_dir / "cache").is_dir() else None)
    ids = t["row_id"].astype(np.int64) if "row_id" in t else np.arange(t.n)
    workload_of = t["workload"].astype(str)
    out: list[MetricDiff] = []
    for spec in cfg.workloads:
        rows = np.flatnonzero(workload_of == spec.name)
        if rows.size:
            workload = load_workload(spec, root, cfg.source)
            out += _rescore_workload(run_dir, cfg, workload, manifest.get("bindings", {}), cache, t, rows, ids)
    known = {w.name for w in cfg.workloads}
    out += [MetricDiff(int(ids[r]), None) for r in np.flatnonzero(~np.isin(workload_of, list(known)))]
    return out


def _rescore_workload(run_dir, cfg, workload: Workload, bindings, cache, t: RowTable, rows, ids) -> list[MetricDiff]:
    bound = bindings.get(workload.name, {})
    for field in ("corpus_hash", "queries_hash", "labels_hash"):
        if getattr(workload, field) != bound.get(field):
            raise LensError(
                f"workload {workload.name}: its {field} is {getattr(workload, field)[:12]}…, the run's "
                f"{str(bound.get(field))[:12]}…: the files changed since the run, so its metrics cannot be recomputed"
            )
    qv = compute_query_vectors(workload.requests(), cfg.replay.similarity, cfg.retrieval, cache, workload.queries_hash)
    if qv.hash != bound.get("query_vectors", {}).get("hash"):
        raise LensError(
            f"workload {workload.name}: its query vectors ({qv.method}, {qv.model_id}) differ from the run's; "
            "its metrics cannot be recomputed"
        )
    query_sim = qv.similarity()
    gold = workload.gold()
    memories = {"trace": TraceMemory(), "cache": PositiveFeedbackCache(gold, cfg.replay.cache_bonus_cap)}
    type_codes, type_names, tie = workload.asset_type_codes(), workload.type_names(), workload.id_order()
    out: list[MetricDiff] = []
    keys = np.asarray(
        [f"{s}\x1f{r}" for s, r in zip(t["stream"][rows].astype(str), t["retriever"][rows].astype(str))], dtype=object
    )
    for key in np.unique(keys):
        stream_name, retriever = key.split("\x1f")
        group = rows[keys == key]
        paths = (
            run_dir / "streams" / workload.name / f"{stream_name}.json",
            run_dir / "events" / workload.name / retriever / f"{stream_name}.npz",
            run_dir / "base" / workload.name / f"{retriever}.npz",
        )
        if not all(p.is_file() for p in paths):
            out += [MetricDiff(int(ids[r]), None) for r in group]
            continue
        stream, events, base = (
            _load(load, path, run_dir) for load, path in zip((Stream.load, EventLog.load, BaseLists.load), paths)
        )
        inputs = ReplayInputs(stream, events, query_sim, base.indices, gold, type_codes, type_names, tie)
        out += _rescore_group(inputs, memories, cfg, t, group, ids)
    return out


class RunFileError(LensError):
    """A file of the run folder that the rescoring reads is damaged (the message names it)."""


def _load(load, path: Path, run_dir: Path):
    try:
        return load(path)
    except DAMAGE as exc:
        raise RunFileError(f"{path.relative_to(run_dir)}: cannot be read ({type(exc).__name__}: {exc})") from None


def _rescore_group(inputs: ReplayInputs, memories, cfg, t: RowTable, group, ids) -> list[MetricDiff]:
    """Rows of one (stream, retriever), scored per (memory, view, base depth, list depth)."""
    n = len(inputs.stream)
    anchor = t["anchor"][group].astype(np.int64)
    positions = t.selected[group]
    ok = (anchor >= 0) & (anchor < n) & (positions < n).all(axis=1)
    sub = [
        f"{m}\x1f{v}\x1f{b}\x1f{d}"
        for m, v, b, d in zip(
            t["memory"][group].astype(str),
            t["view"][group].astype(str),
            t["base_depth"][group].astype(np.int64),
            t["list_depth"][group].astype(np.int64),
        )
    ]
    sub = np.asarray(sub, dtype=object)
    out = [MetricDiff(int(ids[r]), None) for r in group[~ok]]
    for key in np.unique(sub[ok]):
        memory_name, _, base_depth, list_depth = key.split("\x1f")
        take = ok & (sub == key)
        if memory_name not in memories:
            out += [MetricDiff(int(ids[r]), None) for r in group[take]]
            continue
        pos = positions[take]
        a_q = inputs.stream.order[anchor[take]]
        filled = pos >= 0
        sims = np.where(filled, inputs.query_sim[a_q[:, None], inputs.stream.order[np.where(filled, pos, 0)]], 0.0)
        budgets = Budgets(
            capacity=pos.shape[1],
            trace_depth=inputs.events.depth,
            base_depth=int(base_depth),
            list_depth=int(list_depth),
            cutoffs=tuple(cfg.metrics.cutoffs),
            headline_k=cfg.metrics.headline_k,
        )
        metrics = selection_metrics(inputs, memories[memory_name], Selection(pos, sims), a_q, budgets)
        for name, recomputed in metrics.items():
            stored = t[name][group[take]].astype(np.float64) if name in t else np.full(recomputed.size, np.nan)
            same = (np.abs(stored - recomputed) <= _TOLERANCE) | (np.isnan(stored) & np.isnan(recomputed))
            for r, s, c in zip(group[take][~same], stored[~same], recomputed[~same]):
                out.append(MetricDiff(int(ids[r]), name, float(s), float(c)))
    return out
