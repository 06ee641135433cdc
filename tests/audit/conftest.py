"""Tiny synthetic workloads for the PIT audit tests: topical queries whose gold products overlap within a topic."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.workloads import Asset, Query, Workload, make_workload


def synthetic_workload(
    n_queries: int = 60,
    n_topics: int = 6,
    assets_per_topic: int = 30,
    gold_size: int = 5,
    seed: int = 0,
    name: str = "syn",
) -> Workload:
    rng = np.random.default_rng(seed)
    vocab = {t: [f"topic{t}word{k}" for k in range(12)] for t in range(n_topics)}
    common = [f"common{k}" for k in range(20)]
    assets: list[Asset] = []
    by_topic: dict[int, list[str]] = {}
    for t in range(n_topics):
        for k in range(assets_per_topic):
            aid = f"t{t}-a{k:03d}"
            words = list(rng.choice(vocab[t], 6)) + list(rng.choice(common, 4))
            assets.append(Asset(aid, "table" if k % 4 == 0 else "text", " ".join(words)))
            by_topic.setdefault(t, []).append(aid)
    queries: list[Query] = []
    for q in range(n_queries):
        t = int(rng.integers(n_topics))
        pool = by_topic[t][: assets_per_topic // 2]  # a shared core, so products overlap within a topic
        gold = tuple(sorted(rng.choice(pool, gold_size, replace=False)))
        text = " ".join(rng.choice(vocab[t], 4)) + " " + " ".join(rng.choice(common, 2))
        queries.append(Query(f"q{q:03d}", text, gold))
    return make_workload(name, assets, queries, {"synthetic": "0" * 64})


def write_beir(w: Workload, folder: Path, split: str = "test") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for a in w.assets:
            fh.write(json.dumps({"_id": a.id, "title": "", "text": a.text, "type": a.type}) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as fh:
        for q in w.queries:
            rec = {"_id": q.id, "text": q.text}
            if q.timestamp is not None:
                rec["timestamp"] = q.timestamp
            fh.write(json.dumps(rec) + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    with open(folder / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q in w.queries:
            for g in q.gold:
                fh.write(f"{q.id}\t{g}\t1\n")
    return folder


SMALL_CONFIG = """
name = "test-small"
[[workloads]]
name = "syn"
format = "beir"
path = "{path}"
split = "test"
[retrieval]
retrievers = ["bm25"]
depth = 100
[streams]
kinds = ["random", "semantic", "gold-overlap"]
seeds = [0, 1]
[replay]
capacity = 8
trace_depth = 20
horizons = [3, 10]
anchor_positions = [0.2, 0.4, 0.6, 0.8]
anchors_per_position = 6
memories = ["trace", "cache"]
similarity = "tfidf"
[metrics]
cutoffs = [10, 20, 50, 100]
headline_k = 100
bootstrap_resamples = 200
bootstrap_seed = 0
"""


@pytest.fixture
def workload_factory():
    """The synthetic workload builder, for tests that need a differently sized workload."""
    return synthetic_workload


@pytest.fixture
def workload() -> Workload:
    return synthetic_workload()


@pytest.fixture
def beir_folder(tmp_path, workload) -> Path:
    return write_beir(workload, tmp_path / "beir")


@pytest.fixture
def small_config(tmp_path, beir_folder) -> Path:
    p = tmp_path / "audit-test.toml"
    p.write_text(SMALL_CONFIG.format(path=beir_folder.as_posix()), encoding="utf-8")
    return p


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> Path:
    """One small audit run (BM25, TF-IDF similarity), shared read-only by the tests that inspect a run."""
    from harness.audit.config import load_audit_config
    from harness.audit.pipeline import run_audit

    base = tmp_path_factory.mktemp("run")
    folder = write_beir(synthetic_workload(), base / "beir")
    cfg = base / "audit.toml"
    cfg.write_text(SMALL_CONFIG.format(path=folder.as_posix()), encoding="utf-8")
    run_audit(load_audit_config(cfg), base / "run")
    return base / "run"
