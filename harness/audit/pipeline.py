"""``lens audit run``: the six replay stages end to end, for every workload of a config.

1. immutable inputs — load each workload, hash its files, corpus, types, queries and labels;
2. base behaviour — query vectors and top-``L`` base lists per retriever (labels never passed);
3. streams — random / semantic / natural (label-free) and, only if asked, the gold-overlap stress stream;
4. event logs — one per (stream, retriever), built online and frozen before any condition is replayed;
5. paired replay — every memory × condition at every anchor, vectorised (:mod:`harness.audit.replay`);
6. audit — rows written, the contract checked, the manifest written; a report only for a run that passes.

The run folder holds ``rows.jsonl``, ``contract.json``, ``manifest.json``, ``config.json``, ``streams/``,
``events/``, ``base/`` and, when valid, ``report/``. A folder that already holds a run is never overwritten.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from harness.audit.baselists import ArtifactCache, combined_index_hash, compute_base_lists, compute_query_vectors
from harness.audit.config import AuditConfig, data_root
from harness.audit.contract import ContractFailed, check_rows, violations_json
from harness.audit.events import EventLog
from harness.audit.inputs import load_workload
from harness.audit.manifest import MANIFEST_NAME, environment, file_record, write_manifest
from harness.audit.memories import PositiveFeedbackCache, TraceMemory
from harness.audit.replay import Budgets, ReplayInputs, choose_anchors, replay_stream
from harness.audit.report import build_report
from harness.audit.rows import read_rows, write_rows
from harness.audit.views import standard_views
from harness.files import atomic_write, atomic_write_json
from harness.streams import Stream, configured_streams
from harness.workloads import Workload, workload_summary
from lens import LensError

__all__ = ["RunResult", "run_audit", "build_streams"]

log = logging.getLogger(__name__)
Progress = Callable[[str], None]


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    rows: int
    violations: int
    report_dir: Path | None
    timings: dict[str, float]


def build_streams(config: AuditConfig, workload: Workload, query_vectors: np.ndarray) -> list[Stream]:
    """The configured streams. Only the gold-overlap stress stream receives labels."""
    return configured_streams(config.streams, workload.requests(), query_vectors, workload.gold)


@dataclass
class _Run:
    """What every step of one audit run shares: the design, where it writes, and what it has recorded so far."""

    config: AuditConfig
    out: Path
    droot: Path
    cache: ArtifactCache
    budgets: Budgets
    views: list
    say: Progress
    timings: dict[str, float] = field(default_factory=dict)
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)


def run_audit(
    config: AuditConfig,
    out_dir: str | Path,
    *,
    root: str | Path | None = None,
    cache_dir: str | Path | None = None,
    progress: Progress | None = None,
    publish: bool = True,
) -> RunResult:
    """Run the whole design of ``config`` into ``out_dir`` (created; must not already hold a run).

    Raises :class:`~harness.audit.contract.ContractFailed` (after writing rows, ``contract.json`` and the
    manifest, but no report) when the rows violate the replay contract, and ``LensError`` on bad input.
    """
    out = Path(out_dir)
    if (out / MANIFEST_NAME).exists() or (out / "rows.jsonl").exists():
        raise LensError(f"{out}: already holds an audit run; choose a new --out folder")
    out.mkdir(parents=True, exist_ok=True)
    budgets = Budgets(
        capacity=config.replay.capacity,
        trace_depth=config.replay.trace_depth,
        base_depth=config.retrieval.depth,
        list_depth=config.retrieval.depth,
        cutoffs=tuple(config.metrics.cutoffs),
        headline_k=config.metrics.headline_k,
    )
    run = _Run(
        config,
        out,
        data_root(root),
        ArtifactCache(cache_dir if cache_dir is not None else out / "cache"),
        budgets,
        standard_views(config.replay.horizons),
        progress or (lambda msg: log.info("%s", msg)),
    )
    t_all = time.perf_counter()
    atomic_write_json(out / "config.json", {"config": config.model_dump(), "config_hash": config.hash})
    run.outputs.append(out / "config.json")
    blocks: list = []
    bindings: dict[str, Any] = {}
    for spec in config.workloads:
        bindings[spec.name] = _audit_workload(run, spec, blocks)
    manifest = {"config_source": config.source, "data_root": str(run.droot), "inputs": run.inputs}
    return finish_run(out, blocks, bindings, run.outputs, run.timings, t_all, config, publish, run.say, manifest)


def _audit_workload(run: _Run, spec: Any, blocks: list) -> dict[str, Any]:
    """Load one workload, compute its base lists, replay every stream into ``blocks``; returns its binding."""
    config = run.config
    t0 = time.perf_counter()
    workload = load_workload(spec, run.droot, config.source)
    for path, digest in workload.sources.items():
        rec = file_record(Path(path))
        if rec["sha256"] != digest:
            raise LensError(f"{path}: changed while the audit was reading it")
        run.inputs.append({**rec, "workload": workload.name})
    summary = workload_summary(workload)
    run.say(
        f"{workload.name}: {summary['assets']} assets, {summary['queries']} queries "
        f"({summary['queries_sharing_a_gold_asset']} share a gold asset)"
    )
    wb: dict[str, Any] = {
        "corpus_hash": workload.corpus_hash,
        "types_hash": workload.types_hash,
        "queries_hash": workload.queries_hash,
        "labels_hash": workload.labels_hash,
        "summary": summary,
        "retrievers": {},
        "streams": {},
    }
    tie = workload.id_order()
    run.timings[f"{workload.name}:load"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    qv, base = _base_lists(run, workload, wb, tie)
    run.timings[f"{workload.name}:base"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    streams = build_streams(config, workload, qv.vectors)
    gold = workload.gold()  # metrics and the label-based cache only
    memories = [
        TraceMemory() if name == "trace" else PositiveFeedbackCache(gold, config.replay.cache_bonus_cap)
        for name in config.replay.memories
    ]
    run.timings[f"{workload.name}:streams"] = time.perf_counter() - t0
    inputs = _WorkloadInputs(
        workload, gold, qv.similarity(), base, memories, wb, workload.asset_type_codes(), workload.type_names(), tie
    )
    t_events = t_replay = 0.0
    for stream in streams:
        te, tr = _replay_stream(run, inputs, stream, blocks)
        t_events, t_replay = t_events + te, t_replay + tr
    run.timings[f"{workload.name}:events"] = t_events
    run.timings[f"{workload.name}:replay"] = t_replay
    return wb


def _base_lists(run: _Run, workload: Workload, wb: dict[str, Any], tie: np.ndarray) -> tuple[Any, dict[str, Any]]:
    """The query vectors and every retriever's base lists of one workload (saved, bound in ``wb``)."""
    config = run.config
    requests = workload.requests()
    qv = compute_query_vectors(requests, config.replay.similarity, config.retrieval, run.cache, workload.queries_hash)
    wb["query_vectors"] = {"method": qv.method, "model": qv.model_id, "hash": qv.hash}
    base = {}
    for r in config.retrieval.retrievers:
        run.say(f"{workload.name}: base lists ({r}, top {config.retrieval.depth})")
        bl = compute_base_lists(
            workload.assets,
            requests,
            r,
            config.retrieval,
            run.cache,
            corpus_hash=workload.corpus_hash,
            queries_hash=workload.queries_hash,
            tie_key=tie,
        )
        base[r] = bl
        p = run.out / "base" / workload.name / f"{r}.npz"
        bl.save(p)
        run.outputs.append(p)
        wb["retrievers"][r] = {
            "base_hash": bl.hash,
            "index_hash": combined_index_hash(bl, qv),
            "params": dict(bl.params),
        }
    return qv, base


@dataclass
class _WorkloadInputs:
    """One workload's replay inputs shared by its streams."""

    workload: Workload
    gold: Any
    query_sim: np.ndarray
    base: dict[str, Any]
    memories: list
    wb: dict[str, Any]
    type_codes: np.ndarray
    type_names: tuple[str, ...]
    tie: np.ndarray


def _replay_stream(run: _Run, w: _WorkloadInputs, stream: Stream, blocks: list) -> tuple[float, float]:
    """Save one stream, build and save its event log per retriever, replay it into ``blocks``; returns the
    seconds spent on events and on the replay."""
    config, workload = run.config, w.workload
    sp = run.out / "streams" / workload.name / f"{stream.name}.json"
    stream.save(sp)
    run.outputs.append(sp)
    anchors = choose_anchors(len(stream), config.replay.anchor_positions, config.replay.anchors_per_position)
    sb = {
        "hash": stream.hash,
        "kind": stream.kind,
        "seed": stream.seed,
        "uses_gold": stream.uses_gold,
        "anchors": int(anchors.positions.size),
        "events": {},
    }
    t_events = t_replay = 0.0
    for r, bl in w.base.items():
        t1 = time.perf_counter()
        d = config.replay.trace_depth
        events = EventLog.build(
            stream, lambda q, bl=bl: (bl.indices[q, :d], bl.scores[q, :d]), depth=d, version=f"{r}:{bl.hash[:16]}:d{d}"
        )
        ep = run.out / "events" / workload.name / r / f"{stream.name}.npz"
        events.save(ep)
        run.outputs.append(ep)
        sb["events"][r] = events.hash
        t_events += time.perf_counter() - t1
        t1 = time.perf_counter()
        bindings = {
            "corpus_hash": workload.corpus_hash,
            "queries_hash": workload.queries_hash,
            "index_hash": w.wb["retrievers"][r]["index_hash"],
            "stream_hash": stream.hash,
            "events_hash": events.hash,
            "config_hash": config.hash,
        }
        ri = ReplayInputs(
            stream, events, w.query_sim, bl.indices, w.gold, w.type_codes, w.type_names, w.tie, bindings=bindings
        )
        scalars = {"workload": workload.name, "retriever": r}
        blocks.extend(replay_stream(ri, anchors, run.views, w.memories, run.budgets, scalars))
        t_replay += time.perf_counter() - t1
    w.wb["streams"][stream.name] = sb
    run.say(
        f"{workload.name}: replayed {stream.name} ({int(anchors.positions.size)} anchors × "
        f"{len(run.views) + 1} conditions × {len(w.memories)} memories × {len(w.base)} retrievers)"
    )
    return t_events, t_replay


def finish_run(
    out: Path,
    blocks: list,
    bindings: dict[str, Any],
    outputs: list[Path],
    timings: dict[str, float],
    t_all: float,
    config: Any,
    publish: bool,
    say: Callable[[str], None],
    manifest: dict[str, Any],
) -> RunResult:
    """The last step of every audit run: write the rows (``blocks`` is emptied to free its memory), check them
    against the replay contract, write ``contract.json`` and the manifest (``manifest`` adds the run's own
    fields), then build the report — unless the contract fails, which raises ``ContractFailed`` after the rows
    and manifest are on disk."""
    t0 = time.perf_counter()
    n_rows = write_rows(out / "rows.jsonl", blocks)
    outputs.append(out / "rows.jsonl")
    timings["write_rows"] = time.perf_counter() - t0
    blocks.clear()

    t0 = time.perf_counter()
    violations = check_rows(read_rows(out / "rows.jsonl"), bindings)
    timings["check"] = time.perf_counter() - t0
    atomic_write(out / "contract.json", violations_json(violations).encode("utf-8"))
    outputs.append(out / "contract.json")
    timings["total"] = time.perf_counter() - t_all
    write_manifest(
        out,
        {
            "kind": "audit-run",
            "config_hash": config.hash,
            **manifest,
            "bindings": bindings,
            "rows": n_rows,
            "contract": {"status": "pass" if not violations else "fail", "violations": len(violations)},
            "environment": environment(),
            "timings": {k: round(v, 3) for k, v in timings.items()},
        },
        outputs,
    )
    say(f"wrote {n_rows} rows; contract: {'pass' if not violations else 'FAIL'}")
    if violations:
        raise ContractFailed(out, violations)
    report_dir = None
    if publish:
        report_dir = build_report(out, resamples=config.metrics.bootstrap_resamples, seed=config.metrics.bootstrap_seed)
    return RunResult(out, n_rows, len(violations), report_dir, timings)
