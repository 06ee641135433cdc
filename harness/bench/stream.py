"""``lens bench stream``: LENS as a stateful system over a stream of related requests on one folder.

A workload in the audit's generic format (BEIR layout: assets, requests, gold asset ids —
:func:`harness.workloads.load_beir`) becomes:

- **a raw folder**: one file per asset, ``<type>/<asset id>.txt`` (a table's rows one per line, its header row
  first, cells separated by ``|``, as the workload stores them; a passage as its text), and
  ``<folder>.manifest.json`` beside it (never inside: the agent would read it) with every file's sha256, the
  corpus checksum and the file → asset id map. An existing folder is verified against the workload, never
  rewritten;
- **a stream**: the requests in one arrival order — ``random`` (seeded), ``semantic`` (seeded topical bursts
  over TF-IDF request vectors) or ``natural`` (timestamps) — from :mod:`harness.streams`, label-free;
- **rows**: the agent asks every request in stream order (``Agent.ask(text, folder, position=j)``), with the
  warm-reuse memory in ``RUN_DIR/memory`` (``--memory``, the default) or without (``--no-memory``), and appends
  one row per position to ``RUN_DIR/rows.jsonl``: the cited assets, the prior's candidate recall at
  10/20/50/100 (from the agent's recorded prior candidates), oracle calls, tokens, seconds, memory entries
  read (documents the memory signalled) and written, and the agent's details in the layout of the bench's LENS
  rows (so the PIT audit's LENS-memory mode reads them). Gold asset ids are used only for the scores.

**Resume.** Rows are appended and flushed as each request finishes; a rerun of the same command (same
workload, folder, stream, configuration, memory setting and agent code — bound by ``binding_hash``, anything
else is refused) continues at the first position without a row. Memory entries are written by the agent *before* its
row; entries at positions that have no row (a crash between the two) are dropped from the log before the run
continues, so the memory a request reads is exactly the memory of the rows before it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from harness.bench.datasets import DataError
from harness.bench.metrics import bootstrap_ci
from harness.bench.run_store import RowLog, read_row_file
from harness.bench.snapshots import corpus_checksum
from harness.bench.systems.lens_arm import lens_details
from harness.bench.systems.provenance import code_fingerprint
from harness.files import canonical_json, sha256_bytes, write_json_atomic, write_text_atomic
from harness.streams import Stream, natural_stream, random_stream, semantic_stream, tfidf_vectors
from harness.workloads import Asset, Workload
from lens import Agent, LensError, MemoryStore
from lens.parts import scan_corpus

__all__ = [
    "STREAM_ROW_FORMAT",
    "RECALL_CUTOFFS",
    "asset_file",
    "render_asset",
    "folder_manifest_path",
    "materialise_assets",
    "build_stream",
    "StreamSummary",
    "run_stream",
    "compare_memory",
]

STREAM_ROW_FORMAT = "lens-stream-row/1"
STREAM_MANIFEST = "manifest.json"
RECALL_CUTOFFS = (10, 20, 50, 100)


def asset_file(asset: Asset) -> str:
    """The asset's file, relative to the folder: ``<type>/<id>.txt`` (ids are checked to be safe names)."""
    if not asset.id or "/" in asset.id or asset.id.startswith(".") or "\0" in asset.id:
        raise DataError(f"asset id {asset.id!r}: not usable as a file name")
    kind = asset.type if asset.type and "/" not in asset.type and not asset.type.startswith(".") else "asset"
    return f"{kind}/{asset.id}.txt"


def render_asset(asset: Asset) -> str:
    """The file's text: the asset's lines with surrounding spaces trimmed (a table keeps its header row first
    and its ``|`` cell separators); UTF-8, one final newline."""
    lines = [line.strip() for line in asset.text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def folder_manifest_path(folder: str | os.PathLike[str]) -> Path:
    """Where a stream folder's manifest lives: beside it, ``<folder>.manifest.json`` (never inside it)."""
    folder = Path(folder)
    return folder.with_name(folder.name + ".manifest.json")


def materialise_assets(workload: Workload, folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Write (or verify) the folder and its manifest; returns the manifest."""
    folder = Path(folder)
    manifest_path = folder_manifest_path(folder)
    files = {}
    blobs = {}
    for a in workload.assets:
        name = asset_file(a)
        data = render_asset(a).encode("utf-8")
        blobs[name] = data
        files[name] = {"asset": a.id, "type": a.type, "sha256": sha256_bytes(data)}
    manifest = {
        "format": "lens-stream-folder/1",
        "workload": workload.name,
        "corpus_hash": workload.corpus_hash,
        "corpus_checksum": corpus_checksum((n, f["sha256"]) for n, f in files.items()),
        "files": files,
    }
    if manifest_path.exists():
        old = json.loads(manifest_path.read_text(encoding="utf-8"))
        if old.get("corpus_checksum") != manifest["corpus_checksum"]:
            raise DataError(f"{folder}: holds another workload's assets ({manifest_path}); use a new folder")
        for name, f in files.items():
            p = folder / name
            if not p.is_file() or sha256_bytes(p.read_bytes()) != f["sha256"]:
                raise DataError(f"{p}: missing or changed since the folder was written ({manifest_path})")
        return old
    for name, data in blobs.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    write_json_atomic(manifest_path, manifest)
    return manifest


def build_stream(workload: Workload, kind: str, seed: int) -> Stream:
    """The arrival order (label-free): random, semantic (TF-IDF request vectors) or natural."""
    requests = workload.requests()
    if kind == "random":
        return random_stream(requests, seed)
    if kind == "natural":
        return natural_stream(requests)
    if kind == "semantic":
        return semantic_stream(requests, tfidf_vectors([r.text for r in requests]), seed)
    raise DataError(f"--order {kind!r}: expected random, semantic or natural")


@dataclass
class StreamSummary:
    out: Path
    rows_before: int
    rows_written: int
    planned: int
    per_request: dict[str, float]


def _recall(ranked: Sequence[str], gold: set[str], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold) if gold else 0.0


def _drop_orphan_entries(memory_dir: Path, next_position: int) -> int:
    """Remove memory entries at positions >= ``next_position`` (written before a crash cut their row)."""
    log = memory_dir / "memory.jsonl"
    if not log.exists():
        return 0
    keep, dropped = [], 0
    for line in log.read_text(encoding="utf-8").splitlines(keepends=True):
        if not line.strip():
            continue
        if not line.endswith("\n"):
            dropped += 1  # a torn last line
            continue
        if json.loads(line).get("position", -1) >= next_position:
            dropped += 1
            continue
        keep.append(line)
    if dropped:  # a fresh temporary file, never a fixed name a planted symlink could redirect
        write_text_atomic(log, "".join(keep))
    return dropped


@dataclass(frozen=True)
class _StreamBinding:
    """What a stream run's rows are bound to, and the hashes every row carries."""

    binding: dict[str, Any]
    binding_hash: str
    system_hash: str
    memory: bool

    @classmethod
    def of(cls, workload: Workload, manifest: dict[str, Any], stream: Stream, config: Any, memory: bool):
        binding = {
            "workload": workload.name,
            "corpus_hash": workload.corpus_hash,
            "queries_hash": workload.queries_hash,
            "folder_checksum": manifest["corpus_checksum"],
            "stream": {"kind": stream.kind, "seed": stream.seed, "hash": stream.hash},
            "config_hash": config.canonical_hash(),
            "memory": memory,
            "code": code_fingerprint("lens"),  # rows made before and after an edit of the agent are never mixed
        }
        system_hash = sha256_bytes(canonical_json({k: binding[k] for k in ("config_hash", "memory", "code")}))
        return cls(binding, sha256_bytes(canonical_json(binding)), system_hash, memory)


def _resume_at(out: Path, existing: list[dict[str, Any]]) -> int:
    """The first position without a row; refuses rows that are not a prefix of the stream."""
    done = {r["position"] for r in existing}
    next_pos = 0
    while next_pos in done:
        next_pos += 1
    if len(done) != next_pos:
        raise DataError(f"{out}/rows.jsonl: rows are not a prefix of the stream (positions {sorted(done)[:5]}…)")
    return next_pos


def run_stream(
    workload: Workload,
    folder: str | os.PathLike[str],
    stream: Stream,
    out: str | os.PathLike[str],
    config: Any,
    *,
    memory: bool = True,
    limit: int | None = None,
    client: Any = None,
    log=None,
) -> StreamSummary:
    """Ask every request of ``stream`` (first ``limit``) in order; resumable (see the module docstring)."""
    log = log or sys.stderr
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = materialise_assets(workload, folder)
    folder = Path(folder)
    file_asset = {name: f["asset"] for name, f in manifest["files"].items()}
    b = _StreamBinding.of(workload, manifest, stream, config, memory)
    mpath = out / STREAM_MANIFEST
    if mpath.exists():
        old = json.loads(mpath.read_text(encoding="utf-8"))
        if old.get("binding_hash") != b.binding_hash:
            diff = [k for k in b.binding if old.get("binding", {}).get(k) != b.binding[k]]
            raise DataError(f"{out}: holds a stream run with other bindings ({', '.join(diff)}); use a new --out")
    rows_log = RowLog(out / "rows.jsonl", STREAM_ROW_FORMAT)
    existing, cut = rows_log.recover({"binding_hash": b.binding_hash, "config_hash": b.binding["config_hash"]})
    next_pos = _resume_at(out, existing)
    store = None
    if memory:
        dropped = _drop_orphan_entries(out / "memory", next_pos)
        if dropped:
            print(f"resume: dropped {dropped} memory entries written after the last row", file=log)
        store = MemoryStore(out / "memory", capacity=config.memory.capacity)
    write_json_atomic(
        mpath,
        {
            "format": "lens-stream-run/1",
            "binding": b.binding,
            "binding_hash": b.binding_hash,
            "stream": stream.to_json(),
            "folder": str(folder.resolve()),
            "config": config.canonical(),
            "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )
    scan_corpus(folder, config.reader)  # an unusable folder fails here, before any LLM call
    queries = {q.id: q for q in workload.queries}
    planned = len(stream) if limit is None else min(limit, len(stream))
    agent = Agent(config, client=client, memory=store)
    rows = list(existing)
    rows_log.open()
    try:
        for pos in range(next_pos, planned):
            row = _ask(agent, queries[stream.query_ids[pos]], pos, folder, file_asset, b)
            rows_log.append(row)
            rows.append(row)
    finally:
        rows_log.close()
    return StreamSummary(out, len(existing), len(rows) - len(existing), planned, _per_request(rows))


def _ask(agent: Agent, q: Any, pos: int, folder: Path, file_asset: dict[str, str], b: _StreamBinding) -> dict:
    """Ask the request at ``pos`` and return its row; a LENS error or a memory that was not read or written
    stops the run (resumable)."""
    t0 = time.monotonic()
    try:
        result = agent.ask(q.text, folder, position=pos)
    except LensError as exc:  # an unusable folder or a dead endpoint: stop, resumable
        raise DataError(f"position {pos} ({q.id}): {exc}") from exc
    lost = [st["error"] for st in result.stages if st.get("stage", "").startswith("memory") and "error" in st]
    if lost:  # a row on a memory that was not read or not written would misstate the stream: stop, resumable
        raise DataError(f"position {pos} ({q.id}): {lost[0]}; rerun to resume")
    seconds = time.monotonic() - t0
    cited = [file_asset.get(e.path) for e in result.evidence]
    cited_assets = sorted({c for c in cited if c})
    prior = next((st["candidates"] for st in result.stages if st.get("stage") == "prior"), [])
    prior_assets = [file_asset[p] for p in prior if p in file_asset]
    read = next((st for st in result.stages if st.get("stage") == "memory"), {})
    gold = set(q.gold)
    cost = result.cost
    return {
        "format": STREAM_ROW_FORMAT,
        "binding_hash": b.binding_hash,
        "config_hash": b.binding["config_hash"],
        "system": "lens",
        "system_hash": b.system_hash,
        "memory_on": b.memory,
        "position": pos,
        "question_id": q.id,
        "question": q.text,
        "prediction": {
            "answer": result.answer,
            "cited_assets": cited_assets,
            "tokens": int(cost.tokens),
            "prompt_tokens": int(cost.prompt_tokens),
            "completion_tokens": int(cost.completion_tokens),
            "oracle_calls": int(cost.oracle_calls),
            "seconds": round(seconds, 3),
            "error": None,
            "details": lens_details(result),
        },
        "memory": {
            "read": int(read.get("served", 0)),
            "requirements_served": int(read.get("requirements_served", 0)),
            "stale": int(read.get("stale", 0)),
            "written": len(result.memory_entries) if b.memory else 0,
        },
        "gold_assets": sorted(gold),  # labels: scoring only
        "scores": {
            "cited_recall": _recall(cited_assets, gold, len(cited_assets)) if cited_assets else 0.0,
            "cited_precision": len(set(cited_assets) & gold) / len(cited_assets) if cited_assets else None,
            **{f"prior_recall@{k}": _recall(prior_assets, gold, k) for k in RECALL_CUTOFFS},
        },
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _per_request(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Means per request over every row of the run (resumed rows included)."""
    n = max(len(rows), 1)
    return {
        "oracle_calls": sum(r["prediction"]["oracle_calls"] for r in rows) / n,
        "tokens": sum(r["prediction"]["tokens"] for r in rows) / n,
        "seconds": sum(r["prediction"]["seconds"] for r in rows) / n,
        "cited_recall": sum(r["scores"]["cited_recall"] for r in rows) / n,
        "memory_read": sum(r["memory"]["read"] for r in rows) / n,
        "memory_written": sum(r["memory"]["written"] for r in rows) / n,
        **{f"prior_recall@{k}": sum(r["scores"][f"prior_recall@{k}"] for r in rows) / n for k in RECALL_CUTOFFS},
    }


# --------------------------------------------------------------------------- with vs without memory

STREAM_METRICS = ("oracle_calls", "tokens", "seconds", "cited_recall", "prior_recall@10", "prior_recall@20")


def _stream_rows(run_dir: Path) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    manifest = json.loads((run_dir / STREAM_MANIFEST).read_text(encoding="utf-8"))
    return manifest, {r["position"]: r for r in read_row_file(run_dir / "rows.jsonl", STREAM_ROW_FORMAT)}


def _metric(row: dict[str, Any], name: str) -> float:
    if name in ("oracle_calls", "tokens", "seconds"):
        return float(row["prediction"][name])
    return float(row["scores"][name])


def compare_memory(with_memory: str | os.PathLike[str], without: str | os.PathLike[str], *, resamples: int = 10_000):
    """What the memory buys on the same stream: per metric, the means with and without memory over the positions
    both runs answered, and a paired bootstrap interval of the difference (with − without). The runs must differ
    only in the memory setting (same workload, folder, stream, configuration and agent code): this is the PIT
    saving — each request read only what earlier requests wrote."""
    (ma, ra), (mb, rb) = _stream_rows(Path(with_memory)), _stream_rows(Path(without))
    ba, bb = dict(ma["binding"]), dict(mb["binding"])
    if not (ba.pop("memory") and not bb.pop("memory")):
        raise DataError(f"{with_memory} must be the run with memory and {without} the run without")
    if ba != bb:
        diff = [k for k in ba if ba.get(k) != bb.get(k)]
        raise DataError(f"the two stream runs differ in more than the memory: {', '.join(diff)}")
    positions = sorted(set(ra) & set(rb))
    if not positions:
        raise DataError("the two stream runs share no answered position")
    out = {"n": len(positions), "stream": ba["stream"], "metrics": {}}
    for name in STREAM_METRICS:
        a = [_metric(ra[p], name) for p in positions]
        b = [_metric(rb[p], name) for p in positions]
        ci = bootstrap_ci([x - y for x, y in zip(a, b)], resamples=resamples)
        out["metrics"][name] = {
            "with_memory": sum(a) / len(a),
            "without": sum(b) / len(b),
            "difference": ci.mean,
            "ci95": [ci.low, ci.high],
        }
    out["memory_read_per_request"] = sum(ra[p]["memory"]["read"] for p in positions) / len(positions)
    out["memory_written_per_request"] = sum(ra[p]["memory"]["written"] for p in positions) / len(positions)
    return out
