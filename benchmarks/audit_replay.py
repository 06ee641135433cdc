"""Replay throughput benchmark: rows/s and peak memory for the paper-sized designs.

    python benchmarks/audit_replay.py --config audit-hotpotqa --seeds 5 --cache /tmp/lens-audit/cache
    python benchmarks/audit_replay.py --config audit-hotpotqa --seeds 15 --cache /tmp/lens-audit/cache

One memory (default ``trace``) over 2 streams × 2 retrievers × ``seeds`` × 400 anchors × 9 conditions gives the
72,000-row design at 5 seeds and the 216,000-row design (the paper's size) at 15. Base lists and query vectors
come from the cache (computed first if missing, and timed separately); the timed stages are stream construction,
event logs, the vectorised replay, and — with ``--write`` — writing and contract-checking the rows. Peak memory
is the process's maximum resident set size (``ru_maxrss``) after the replay stage and again after writing and
checking; ``--trace-alloc`` adds the peak of Python/numpy allocations during the replay (``tracemalloc``, which
slows the replay about twofold, so its timings are not comparable).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

__all__ = ["main"]


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux reports KiB


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/audit_replay.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="audit-hotpotqa", help="audit config file or preset (default audit-hotpotqa)")
    ap.add_argument(
        "--seeds", type=int, default=5, help="seeds per stream kind (5: 72K rows, 15: 216K rows per memory)"
    )
    ap.add_argument("--memories", default="trace", help="comma-separated memories to replay (trace, cache)")
    ap.add_argument("--cache", help="artifact cache folder (base lists, embeddings)")
    ap.add_argument("--data-root", help="where relative data paths start")
    ap.add_argument("--write", action="store_true", help="also write rows.jsonl and run the contract check (timed)")
    ap.add_argument("--trace-alloc", action="store_true", help="also measure peak allocations with tracemalloc (slow)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from harness.audit.baselists import ArtifactCache, combined_index_hash, compute_base_lists, compute_query_vectors
    from harness.audit.config import data_root, load_audit_config
    from harness.audit.contract import check_rows
    from harness.audit.events import EventLog
    from harness.audit.inputs import load_workload
    from harness.audit.memories import PositiveFeedbackCache, TraceMemory
    from harness.audit.pipeline import build_streams
    from harness.audit.replay import Budgets, ReplayInputs, choose_anchors, replay_stream
    from harness.audit.rows import read_rows, write_rows
    from harness.audit.views import standard_views

    cfg = load_audit_config(args.config)
    cfg = cfg.model_copy(update={"streams": cfg.streams.model_copy(update={"seeds": list(range(args.seeds))})})
    spec = cfg.workloads[0]
    t0 = time.perf_counter()
    w = load_workload(spec, data_root(args.data_root), cfg.source)
    requests, gold, tie = w.requests(), w.gold(), w.id_order()
    cache = ArtifactCache(args.cache or Path(tempfile.gettempdir()) / "lens-audit-bench-cache")
    qv = compute_query_vectors(requests, cfg.replay.similarity, cfg.retrieval, cache, w.queries_hash)
    sim = qv.similarity()
    base = {
        r: compute_base_lists(
            w.assets,
            requests,
            r,
            cfg.retrieval,
            cache,
            corpus_hash=w.corpus_hash,
            queries_hash=w.queries_hash,
            tie_key=tie,
        )
        for r in cfg.retrieval.retrievers
    }
    t_prep = time.perf_counter() - t0

    names = [m.strip() for m in args.memories.split(",") if m.strip()]
    memories = [
        TraceMemory() if n == "trace" else PositiveFeedbackCache(gold, cfg.replay.cache_bonus_cap) for n in names
    ]
    views = standard_views(cfg.replay.horizons)
    budgets = Budgets(
        cfg.replay.capacity,
        cfg.replay.trace_depth,
        cfg.retrieval.depth,
        cfg.retrieval.depth,
        tuple(cfg.metrics.cutoffs),
        cfg.metrics.headline_k,
    )
    types = (w.asset_type_codes(), w.type_names())

    rss0 = _rss_mib()
    if args.trace_alloc:
        tracemalloc.start()
    t0 = time.perf_counter()
    streams = build_streams(cfg, w, qv.vectors)
    t_streams = time.perf_counter() - t0
    t_events = t_replay = 0.0
    blocks = []
    for stream in streams:
        anchors = choose_anchors(len(stream), cfg.replay.anchor_positions, cfg.replay.anchors_per_position)
        for r, bl in base.items():
            t1 = time.perf_counter()
            d = cfg.replay.trace_depth
            ev = EventLog.build(stream, lambda q, bl=bl: (bl.indices[q, :d], bl.scores[q, :d]), depth=d, version=r)
            t_events += time.perf_counter() - t1
            t1 = time.perf_counter()
            ri = ReplayInputs(
                stream,
                ev,
                sim,
                bl.indices,
                gold,
                *types,
                tie,
                bindings={
                    "corpus_hash": w.corpus_hash,
                    "queries_hash": w.queries_hash,
                    "index_hash": combined_index_hash(bl, qv),
                    "stream_hash": stream.hash,
                    "events_hash": ev.hash,
                    "config_hash": cfg.hash,
                },
            )
            blocks.extend(replay_stream(ri, anchors, views, memories, budgets, {"workload": w.name, "retriever": r}))
            t_replay += time.perf_counter() - t1
    traced_peak = None
    if args.trace_alloc:
        traced_peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    rows = sum(b.n for b in blocks)
    result = {
        "workload": w.name,
        "design": f"{len(cfg.streams.kinds)} streams × {len(base)} retrievers × {args.seeds} seeds × "
        f"{int(choose_anchors(len(requests), cfg.replay.anchor_positions, cfg.replay.anchors_per_position).positions.size)} anchors × "
        f"{len(views) + 1} conditions × {len(memories)} memories",
        "rows": rows,
        "prepare_s (cached base lists + query vectors)": round(t_prep, 2),
        "streams_s": round(t_streams, 2),
        "event_logs_s": round(t_events, 2),
        "replay_s": round(t_replay, 2),
        "replay_rows_per_s": round(rows / t_replay, 1) if t_replay else None,
        "stages_rows_per_s (streams+events+replay)": round(rows / (t_streams + t_events + t_replay), 1),
        "rss_before_replay_mib": round(rss0, 1),
        "peak_rss_after_replay_mib": round(_rss_mib(), 1),
        **({"replay_traced_peak_mib": round(traced_peak, 1)} if traced_peak is not None else {}),
    }
    if args.write:
        with tempfile.TemporaryDirectory() as tmp:
            t1 = time.perf_counter()
            write_rows(Path(tmp) / "rows.jsonl", blocks)
            result["write_rows_s"] = round(time.perf_counter() - t1, 2)
            result["rows_file_mib"] = round((Path(tmp) / "rows.jsonl").stat().st_size / 2**20, 1)
            del blocks
            t1 = time.perf_counter()
            violations = check_rows(read_rows(Path(tmp) / "rows.jsonl"))
            result["read_and_check_s"] = round(time.perf_counter() - t1, 2)
            result["violations"] = len(violations)
            result["peak_rss_after_write_and_check_mib"] = round(_rss_mib(), 1)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        for k, v in result.items():
            print(f"{k:>44}: {v}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
