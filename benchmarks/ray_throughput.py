"""Questions per minute of ``lens bench run``: local threads vs a Ray cluster with 1 and 2 workers, one run.

    python benchmarks/ray_throughput.py --questions 24 --latency 0.5 --out ray_throughput.json

A synthetic snapshot (the tests' builder: bridge questions over a small article pool) and the tests' scripted
OpenAI-compatible endpoint on a loopback port whose every reply waits ``--latency`` seconds (a model of fixed
speed that serves requests concurrently, like a shared vLLM server). Systems: ``closed`` and ``bm25`` (one call
each per question). Variants, alternated in one run so the host's state affects all alike: local executor with
1 and 2 threads, Ray with 1 and 2 worker actors on a one-node cluster started here (``ray start --head``).
Reported: questions/min per variant and as a ratio to local-1, Ray's start-up (cluster start, driver connect,
first actor ready) and the per-run overhead (wall time minus latency-bound time).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("closed", "bm25")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=24)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds per endpoint reply")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", metavar="FILE")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import ray

    from harness.bench.datasets import load_articles, load_questions
    from harness.bench.executor import LocalExecutor, RayExecutor
    from harness.bench.runner import plan_run, run_benchmark
    from harness.bench.snapshots import build_snapshots, plan_snapshots
    from tests.harness.systems.conftest import make_config, pool, records
    from tests.harness.systems.scripted_llm import Responder, StubServer

    tmp = Path(tempfile.mkdtemp(prefix="lens-ray-bench-"))
    recs = records(args.questions)
    qfile = tmp / "questions.json"
    qfile.write_text(json.dumps(recs), encoding="utf-8")
    afile = tmp / "articles.jsonl"
    afile.write_text("".join(json.dumps(a) + "\n" for a in pool(recs)), encoding="utf-8")
    snap = plan_snapshots(load_questions(qfile), load_articles(afile), (args.questions,), seed=42)
    build_snapshots(snap, tmp / "snap")
    folder = tmp / "snap" / f"D{args.questions}"

    ray_bin = str(Path(sys.executable).with_name("ray"))
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    t0 = time.perf_counter()
    subprocess.run(
        [ray_bin, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false"]
        + ["--node-ip-address=127.0.0.1", f"--temp-dir={tmp / 'ray'}", "--disable-usage-stats"],
        check=True,
        capture_output=True,
        env=env,
    )
    cluster_start = time.perf_counter() - t0
    address = f"127.0.0.1:{port}"
    results: dict[str, list[float]] = {}
    connect: list[float] = []
    responder = Responder()
    responder.delay = args.latency
    try:
        with StubServer(responder) as server:
            config = make_config(**{"llm.base_url": server.base_url, "llm.call_timeout_s": 60})

            def one(name: str, executor, k: int) -> float:
                out = tmp / "runs" / f"{name}-{k}"
                plan = plan_run(
                    snapshot=folder,
                    questions_file=qfile,
                    systems=SYSTEMS,
                    out=out,
                    config=config,
                    index_dir=tmp / "indexes",
                )
                t = time.perf_counter()
                summary = run_benchmark(plan, executor=executor, progress=False, log=open(os.devnull, "w"))
                wall = time.perf_counter() - t
                assert summary.complete, summary
                if isinstance(executor, RayExecutor):
                    connect.append(executor.startup_seconds or 0.0)
                return wall

            one("warmup", LocalExecutor(2), 0)  # indexes built once, imports warm
            for k in range(args.repeats):
                for name, make in (
                    ("local-1", lambda: LocalExecutor(1)),
                    ("local-2", lambda: LocalExecutor(2)),
                    ("ray-1", lambda: RayExecutor(1, address=address)),
                    ("ray-2", lambda: RayExecutor(2, address=address)),
                ):
                    results.setdefault(name, []).append(one(name, make(), k))
                    if ray.is_initialized():
                        ray.shutdown()
    finally:
        subprocess.run([ray_bin, "stop", "--force"], capture_output=True, env=env)
        shutil.rmtree(tmp, ignore_errors=True)

    n = args.questions
    best = {name: min(ws) for name, ws in results.items()}
    qpm = {name: round(60 * n / w, 2) for name, w in best.items()}
    calls = n * len(SYSTEMS)
    summary = {
        "questions": n,
        "systems": list(SYSTEMS),
        "endpoint_latency_s": args.latency,
        "repeats": args.repeats,
        "wall_s_best": {k: round(v, 3) for k, v in best.items()},
        "questions_per_min": qpm,
        "ratio_to_local_1": {k: round(v / qpm["local-1"], 3) for k, v in qpm.items()},
        "latency_bound_s": {"1": round(calls * args.latency, 2), "2": round(calls * args.latency / 2, 2)},
        "ray_cluster_start_s": round(cluster_start, 2),
        "ray_driver_connect_s_median": round(sorted(connect)[len(connect) // 2], 3) if connect else None,
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
