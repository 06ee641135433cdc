"""The lifecycle audit (LENS paper Table 1, lower block; SPEC §4 "Lifecycle and staleness").

Per system and snapshot D_n: index build seconds, index bytes on disk, peak memory of the build, whether the
system is query-ready right after the corpus grows (D_{n-1} → D_n) and whether it needs a rebuild first.

- **BM25-RAG / Hybrid-RAG** persist indexes (``IndexStore``). Build time covers tokenising (or encoding, model load
  included) and saving; memory is the building process's resident set, sampled during the build (by default each
  build runs in a fresh child process so one build's leftovers never inflate the next). After growth, the index
  built on D_{n-1} is checked against D_n's files: it covers only the old documents (coverage < 100 %), so the
  arm is **not query-ready** and **needs a rebuild**.
- **ReAct** keeps no index on disk; its in-memory search over the folder as it is now is rebuilt at query time
  when the folder changes. Its warm-up (read + in-memory BM25) is measured and reported as a query-time cost.
- **LENS** reads the folder at every question (``lens.scan_corpus``); the scan time is its query-time cost.
- **Closed-Book** reads nothing.
- **PaperQA2** (``--systems …,paperqa``, the optional extra) persists its document collection like the RAG arms: its
  build (parse, chunk, embed, pickle; no LLM call) is measured the same way, and after growth it covers only the old
  files, so it needs a rebuild too.

Index-free arms are checked, not assumed: after growth they must see every document of the grown folder.
"""

from __future__ import annotations

import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from harness.bench.datasets import DataError
from harness.bench.snapshots import read_manifest
from harness.bench.systems.corpus import SnapshotCorpus
from harness.bench.systems.indexes import IndexBuild, IndexStore, PeakRSS
from harness.bench.systems.live_search import LiveSearch
from harness.bench.systems.paperqa_arm import build_paperqa_index, index_folder
from harness.retrieval import DenseEncoder
from lens.parts import scan_corpus

__all__ = ["SystemLifecycle", "measure_lifecycle", "find_stages", "lifecycle_table", "LIFECYCLE_FORMAT"]

LIFECYCLE_FORMAT = "lens-lifecycle/1"
_SYSTEMS = ("lens", "react", "bm25", "hybrid", "closed")


def find_stages(path: str | os.PathLike[str]) -> list[Path]:
    """Snapshot folders D<n> in ``path`` (a folder of stages with their manifests), smallest first; or ``path``
    itself when it is one stage; or the pool of a ``lens bench fullwiki`` folder (the paper's lifecycle arm of
    the open-domain setting: what BM25-RAG and Hybrid-RAG must build over the whole dump)."""
    p = Path(path)
    if (p.parent / f"{p.name}.manifest.json").is_file():
        return [p]
    if p.is_dir() and (p / "fullwiki.manifest.json").is_file() and (p / "pool").is_dir():
        return [p / "pool"]  # a `lens bench fullwiki` folder: its whole pool is the one stage
    if p.name == "pool" and (p.parent / "fullwiki.manifest.json").is_file():
        return [p]
    stages = (
        [
            d
            for d in p.iterdir()
            if d.is_dir() and not d.name.startswith(".") and (p / f"{d.name}.manifest.json").is_file()
        ]
        if p.is_dir()
        else []
    )
    if not stages:
        raise DataError(f"{p}: no snapshot stages (D<n>/ beside D<n>.manifest.json)")
    return sorted(stages, key=lambda d: read_manifest(p / f"{d.name}.manifest.json").get("size", 0))


@dataclass
class SystemLifecycle:
    """One row of the lifecycle table."""

    system: str
    snapshot: str
    documents: int
    index_free: bool
    query_ready_after_growth: bool | None  # None: the first stage (no growth to check)
    rebuild_needed: bool | None
    coverage_after_growth: float | None  # share of the grown folder's documents the system can reach
    index_build_s: float
    index_bytes: int
    peak_rss_bytes: int | None  # peak resident memory while building its index / warming up
    peak_delta_bytes: int | None
    query_time_read_s: float | None  # per-question (LENS scan) or once-per-change (ReAct warm-up) cost
    builds: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _build(
    kind: str,
    folder: str,
    index_root: str,
    dense_model: str | None,
    rebuild: bool,
    measured_in: str,
    paperqa_embedding: str = "dense",
) -> dict:
    """Build (or read the record of) one index of one snapshot; runs in a child process by default."""
    store = IndexStore(index_root, measured_in=measured_in)
    corpus = SnapshotCorpus.load(folder)
    if kind == "paperqa":
        target = index_folder(store, corpus.checksum, paperqa_embedding, dense_model)
        if rebuild and target.exists():
            shutil.rmtree(target)
        existing = store.record(target)
        if existing is not None:
            return {**existing.to_json(), "reused": True}
        _, build = build_paperqa_index(store, corpus, paperqa_embedding, dense_model)
        return {**build.to_json(), "reused": False}
    encoder = DenseEncoder(dense_model) if kind == "dense" else None
    target = store.bm25_folder(corpus.checksum) if kind == "bm25" else store.dense_folder(corpus.checksum, encoder)
    if rebuild and target.exists():
        shutil.rmtree(target)
    existing = store.record(target)
    if existing is not None:
        return {**existing.to_json(), "reused": True}
    if kind == "bm25":
        _, build = store.build_bm25(corpus)
    else:
        _, build = store.build_dense(corpus, encoder)
    return {**build.to_json(), "reused": False}


def _run_build(
    kind: str,
    folder: Path,
    index_root: Path,
    dense_model: str | None,
    rebuild: bool,
    isolate: bool,
    paperqa_embedding: str = "dense",
) -> IndexBuild:
    args = (kind, str(folder), str(index_root), dense_model, rebuild)
    if not isolate:
        d = _build(*args, "this process", paperqa_embedding)
    else:
        with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
            d = pool.submit(_build, *args, "child process", paperqa_embedding).result()
    return IndexBuild.from_json(d)


def _coverage(index_ids: set[str], folder_names: list[str]) -> float:
    return sum(1 for n in folder_names if n in index_ids) / len(folder_names) if folder_names else 1.0


def measure_lifecycle(
    stages: list[Path],
    index_root: str | os.PathLike[str],
    *,
    systems: tuple[str, ...] = _SYSTEMS,
    dense_model: str | None = None,
    paperqa_embedding: str = "dense",
    isolate: bool = True,
    rebuild: bool = False,
    log=None,
) -> dict[str, Any]:
    """Measure every system on every stage (smallest first) and check readiness after each growth step."""
    index_root = Path(index_root)
    rows: list[SystemLifecycle] = []
    stages_json: list[dict[str, Any]] = []
    old_ids: set[str] | None = None  # the previous stage's documents: what its state can reach of this folder
    for folder in stages:
        corpus = SnapshotCorpus.load(folder)
        mpath = folder.parent / f"{folder.name}.manifest.json"
        manifest = read_manifest(mpath) if mpath.is_file() else {}
        if manifest and manifest.get("corpus_checksum") != corpus.checksum:
            raise DataError(f"{folder}: corpus checksum differs from {mpath.name}: the snapshot changed")
        stages_json.append(
            {
                "name": folder.name,
                "size": manifest.get("size"),
                "documents": len(corpus),
                "corpus_checksum": corpus.checksum,
                "composition": manifest.get("composition"),
            }
        )
        builds: dict[str, IndexBuild] = {}
        kinds = (["bm25"] if {"bm25", "hybrid"} & set(systems) else []) + (["dense"] if "hybrid" in systems else [])
        kinds += ["paperqa"] if "paperqa" in systems else []
        for kind in kinds:
            t0 = time.perf_counter()
            builds[kind] = b = _run_build(kind, folder, index_root, dense_model, rebuild, isolate, paperqa_embedding)
            if log:
                print(
                    f"{folder.name} {kind}: {b.seconds:.2f} s, {b.bytes / 1e6:.2f} MB, peak RSS {b.peak_rss_bytes / 1e6:.0f} MB "
                    f"({time.perf_counter() - t0:.1f} s wall)",
                    file=log,
                )
        rows += [_system_row(name, folder, corpus, builds, old_ids) for name in systems if name in _MEASURED]
        old_ids = {d.name for d in corpus.docs}
    return {
        "format": LIFECYCLE_FORMAT,
        "index_root": str(index_root),
        "isolated_builds": isolate,
        "dense_model": dense_model,
        **({"paperqa_embedding": paperqa_embedding} if "paperqa" in systems else {}),
        "stages": stages_json,
        "rows": [r.to_json() for r in rows],
    }


_MEASURED = ("bm25", "hybrid", "react", "lens", "closed", "paperqa")


def _system_row(
    name: str, folder: Path, corpus: SnapshotCorpus, builds: dict[str, IndexBuild], old_ids: set[str] | None
) -> SystemLifecycle:
    """One system on one stage; ``old_ids`` (None on the first stage): the documents of the stage before."""
    names = corpus.names
    if name in ("bm25", "hybrid", "paperqa"):
        parts = (
            [builds["paperqa"]]
            if name == "paperqa"
            else [builds["bm25"]] + ([builds["dense"]] if name == "hybrid" else [])
        )
        cov = _coverage(old_ids, names) if old_ids is not None else None
        return SystemLifecycle(
            system=name,
            snapshot=folder.name,
            documents=len(corpus),
            index_free=False,
            query_ready_after_growth=None if cov is None else cov >= 1.0,
            rebuild_needed=None if cov is None else cov < 1.0,
            coverage_after_growth=cov,
            index_build_s=round(sum(b.seconds for b in parts), 4),
            index_bytes=sum(b.bytes for b in parts),
            peak_rss_bytes=max(b.peak_rss_bytes for b in parts),
            peak_delta_bytes=max(b.peak_delta_bytes for b in parts),
            query_time_read_s=None,
            builds=[b.to_json() for b in parts],
        )
    peak = delta = read_s = cov = None
    if name == "react":
        live = LiveSearch(folder)
        with PeakRSS() as mem:
            state, warm = live.current()
        cov = _coverage({d.name for d in state.corpus.docs}, names)
        peak, delta, read_s = mem.peak, max(0, mem.peak - mem.before), round(warm, 4)
        del live, state
    elif name == "lens":
        scan = scan_corpus(folder)
        cov = _coverage({d.path for d in scan.documents}, names)
        read_s = round(scan.seconds, 4)
    first = old_ids is None
    return SystemLifecycle(
        system=name,
        snapshot=folder.name,
        documents=len(corpus),
        index_free=True,
        query_ready_after_growth=None if first else (True if cov is None else cov >= 1.0),
        rebuild_needed=None if first else False,
        coverage_after_growth=None if first else cov,
        index_build_s=0.0,
        index_bytes=0,
        peak_rss_bytes=peak,
        peak_delta_bytes=delta,
        query_time_read_s=read_s,
    )


def _yn(v: bool | None) -> str:
    return "—" if v is None else ("yes" if v else "no")


def lifecycle_table(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the lifecycle table (strings, for markdown/CSV/terminal)."""
    headers = [
        "Snapshot",
        "System",
        "Index-free",
        "Query-ready after growth",
        "Rebuild needed",
        "Coverage after growth",
        "Index build (s)",
        "Index on disk (MB)",
        "Peak RSS (MB)",
        "Δ RSS (MB)",
        "Query-time read (s)",
    ]
    out = []
    for r in data["rows"]:
        cov = r.get("coverage_after_growth")
        out.append(
            [
                r["snapshot"],
                r["system"],
                _yn(r["index_free"]),
                _yn(r["query_ready_after_growth"]),
                _yn(r["rebuild_needed"]),
                "—" if cov is None else f"{100 * cov:.1f}%",
                f"{r['index_build_s']:.2f}",
                f"{r['index_bytes'] / 1e6:.2f}",
                "—" if r["peak_rss_bytes"] is None else f"{r['peak_rss_bytes'] / 1e6:.0f}",
                "—" if r["peak_delta_bytes"] is None else f"{r['peak_delta_bytes'] / 1e6:.0f}",
                "—" if r["query_time_read_s"] is None else f"{r['query_time_read_s']:.2f}",
            ]
        )
    return headers, out
