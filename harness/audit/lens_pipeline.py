"""``lens audit run`` for ``kind = "lens-memory"`` configs: the LENS warm-reuse memory, audited end to end.

1. inputs — the bench run's ``lens`` rows as label-free records (:mod:`~harness.audit.lens_events`), the folder
   the prior reads (scanned once, as the agent scans it), and the questions file (gold titles and answers: metrics
   only). The questions file must be the one the run was bound to (sha256), and every question text must match.
2. the agent's configuration — the run's own canonical configuration (its hash must reproduce the run's
   ``config_hash``), plus ``lens.overrides``; the memory is on, at the audit's capacity.
3. streams — random and semantic (label-free; TF-IDF or dense query vectors), and the gold-overlap stress stream
   only when asked (tagged ``uses_gold=true``).
4. event logs — one per stream, built online from the records and frozen before any view is read; saved as
   ``events/<workload>/<stream>.jsonl`` in the memory's own format.
5. replay — cheap mode (:mod:`~harness.audit.lens_memory`: prior candidate recall at every anchor) or full mode
   (:mod:`~harness.audit.lens_full`: the agent rerun at a few anchors of the first streams).
6. audit — rows written, the replay contract checked, the manifest written; a report only for a valid run.

Rows carry the contract fields of every audit row (``harness.audit.rows``), so ``lens audit check`` and ``lens
audit report`` treat them like the trace-memory rows. ``retriever`` names the base behaviour: ``lens-prior``
(cheap) or ``lens-agent`` (full); its ``index_hash`` binds the prior settings, the folder's corpus hash and the
records the anchors' requirements and the events came from.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from harness.audit.baselists import ArtifactCache, compute_query_vectors
from harness.audit.config import AuditConfigError, LensAuditConfig, RetrievalSpec, data_root, resolve_data_path
from harness.audit.lens_events import LensEventLog, LensRun, load_lens_run, rows_digest
from harness.audit.lens_full import FullModeLabels, replay_lens_full
from harness.audit.lens_memory import LensContext, LensCorpus, PriorRanker, agent_min_similarity, replay_lens_stream
from harness.audit.manifest import MANIFEST_NAME, file_record
from harness.audit.pipeline import RunResult, finish_run
from harness.audit.replay import choose_anchors
from harness.audit.views import standard_views
from harness.bench.datasets import load_questions
from harness.bench.stream import folder_manifest_path
from harness.files import atomic_write_json, canonical_json, sha256_bytes, sha256_file
from harness.streams import configured_streams
from harness.workloads import Request, load_beir
from lens import ConfigError, LensError, load_config, open_client
from lens.parts import MAX_REQUIREMENTS, merge_overrides

__all__ = ["agent_config", "run_lens_audit"]

log = logging.getLogger(__name__)
Progress = Callable[[str], None]


def agent_config(
    run: LensRun, config: LensAuditConfig, *, cache_dir: str | Path | None = None
) -> tuple[Any, dict[str, Any]]:
    """The LENS configuration the audit runs the prior (and, in full mode, the agent) with, and a note on how it
    relates to the run's: ``{"reproduces_run_config": bool, ...}``."""
    spec = config.lens
    can = {k: v for k, v in dict(run.config).items() if k != "preset"}
    preset = spec.preset or run.config.get("preset") or "deep"
    base = load_config(preset, env={}, overrides=can or None)
    note: dict[str, Any] = {
        "preset": preset,
        "run_config_hash": run.config_hash,
        "reproduces_run_config": bool(run.config) and base.canonical_hash() == run.config_hash,
    }
    try:
        merged: dict[str, Any] = merge_overrides(can, spec.overrides)
    except ConfigError as exc:
        raise AuditConfigError(f"lens.overrides: {exc}") from None
    forced: dict[str, Any] = {
        "memory": {"enabled": True, "capacity": config.replay.capacity},
        "ablation": {"no_memory": False},
    }
    if config.replay.mode == "full":
        forced["llm"] = {"cache": True}
        if cache_dir is not None:
            forced["llm"]["cache_dir"] = str(cache_dir)
    cfg = load_config(preset, env={}, overrides=merge_overrides(merged, forced))
    note.update(
        overrides=list(spec.overrides),
        config_hash=cfg.canonical_hash(),
        lexical_only_prior=bool(cfg.ablation.lexical_only_prior),
    )
    if cfg.ablation.lexical_only_prior:
        note["warning"] = "ablation.lexical_only_prior: the prior ignores the memory signal, every condition is equal"
    return cfg, note


def _summary(gold, n_docs: int, n_queries: int) -> dict[str, Any]:
    sizes = gold.sizes()
    owners: dict[int, set[int]] = {}
    for q in range(n_queries):
        for a in gold.indices[gold.indptr[q] : gold.indptr[q + 1]]:
            owners.setdefault(int(a), set()).add(q)
    sharing = {q for qs in owners.values() if len(qs) > 1 for q in qs}
    return {
        "assets": n_docs,
        "queries": n_queries,
        "gold_per_query_mean": float(sizes.mean()) if n_queries else 0.0,
        "queries_sharing_a_gold_asset": len(sharing),
    }


def _question_labels(run: LensRun, qfile: Path, corpus: LensCorpus):
    """Gold documents of a bench run's questions: their supporting titles (HotpotQA questions file)."""
    q_sha = sha256_file(qfile)
    bound = run.binding.get("questions_file_sha256")
    if bound and bound != q_sha:
        raise LensError(
            f"{qfile}: sha256 {q_sha[:12]}… differs from the questions file the run was bound to ({bound[:12]}…)"
        )

    population = {q.id: q for q in load_questions(qfile)}
    for r in run.records:
        q = population.get(r.question_id)
        if q is None:
            raise LensError(f"{qfile}: question {r.question_id} of the run is not in it")
        if q.question != r.question:
            raise LensError(f"{qfile}: question {r.question_id} reads differently from the run's row")
    gold, missing = corpus.gold_labels([population[r.question_id].gold_titles for r in run.records])
    labels_hash = sha256_bytes(
        canonical_json(
            [
                [r.question_id, list(population[r.question_id].gold_titles), population[r.question_id].answer]
                for r in run.records
            ]
        )
    )
    return gold, missing, labels_hash, population


def _stream_labels(run: LensRun, workload_dir: Path, split: str | None, folder: Path, corpus: LensCorpus):
    """Gold documents of a stream run's requests: their gold asset ids (BEIR qrels), mapped to the folder's files
    by the manifest ``lens bench stream`` wrote beside the folder."""
    if run.kind != "stream":
        raise LensError(f"{run.folder}: lens.workload is for `lens bench stream` runs; this is a bench run")
    workload = load_beir(workload_dir, split=split)
    if workload.corpus_hash != run.binding.get("corpus_hash") or workload.queries_hash != run.binding.get(
        "queries_hash"
    ):
        raise LensError(f"{workload_dir}: not the workload the stream run {run.folder} was bound to")

    mpath = folder_manifest_path(folder)
    try:
        files = json.loads(mpath.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError) as exc:
        raise LensError(f"{mpath}: the stream folder's manifest is unreadable ({exc})") from None
    doc_of_asset = {f["asset"]: name for name, f in files.items()}
    queries = {q.id: q for q in workload.queries}
    for r in run.records:
        q = queries.get(r.question_id)
        if q is None or q.text != r.question:
            raise LensError(f"{workload_dir}: request {r.question_id} of the run is missing or reads differently")
    gold, missing = corpus.gold_documents(
        [[doc_of_asset.get(a, a) for a in queries[r.question_id].gold] for r in run.records]
    )
    labels_hash = sha256_bytes(
        canonical_json([[r.question_id, sorted(queries[r.question_id].gold)] for r in run.records])
    )
    return gold, missing, labels_hash


@dataclass
class _LensInputs:
    """Step 1's result: the run's label-free records, the folder the prior reads, the agent's configuration and
    the labels (metrics only)."""

    run_dir: Path
    qfile: Path
    run: LensRun
    snap: Path
    lens_cfg: Any
    cfg_note: dict[str, Any]
    corpus: LensCorpus
    gold: Any
    gold_missing: int
    labels_hash: str
    population: dict[str, Any]  # the questions (full mode scores their answers); none for a stream run
    requests: tuple[Request, ...]
    queries_hash: str
    workload: str


def _check_spec(config: LensAuditConfig) -> None:
    """Refuse a config that does not name the run and its questions (or workload), or asks what cannot be done."""
    spec = config.lens
    unset = [k for k in ("run",) if not getattr(spec, k)]
    if not spec.questions and not spec.workload:
        unset.append("questions")
    if unset:
        raise AuditConfigError(
            f"{config.source or 'config'}: lens.{unset[0]} is not set (set it in the config, or pass "
            "--lens-run / --questions to lens audit run; a stream run takes lens.workload instead)"
        )
    if spec.workload and config.replay.mode == "full":
        raise AuditConfigError(
            f'{config.source or "config"}: replay.mode = "full" scores answers against HotpotQA gold; a stream '
            "run over a BEIR workload is audited in cheap mode (prior candidate recall of the gold assets)"
        )


def _read_inputs(config: LensAuditConfig, droot: Path, out: Path, say: Progress) -> _LensInputs:
    """Step 1: read and check every input; labels only for metrics."""
    spec = config.lens
    run_dir = resolve_data_path(spec.run, "lens.run", droot, config=config.source, folder=True)
    if spec.workload:
        qfile = resolve_data_path(spec.workload, "lens.workload", droot, config=config.source, folder=True)
    else:
        qfile = resolve_data_path(spec.questions, "lens.questions", droot, config=config.source)
    run = load_lens_run(run_dir, spec.system, spec.system_hash)
    snap_ref = spec.snapshot or run.snapshot_path
    if not snap_ref:
        raise AuditConfigError(
            f"{config.source or 'config'}: lens.snapshot is not set and {run_dir}/manifest.json names no snapshot (pass --snapshot)"
        )
    snap = resolve_data_path(snap_ref, "lens.snapshot", droot, config=config.source, folder=True)
    lens_cfg, cfg_note = agent_config(
        run, config, cache_dir=(config.full.llm_cache or out / "llm-cache") if config.replay.mode == "full" else None
    )
    corpus = LensCorpus.read(snap, lens_cfg.reader)
    population: dict[str, Any] = {}
    if spec.workload:
        gold, gold_missing, labels_hash = _stream_labels(run, qfile, spec.split, snap, corpus)
    else:
        gold, gold_missing, labels_hash, population = _question_labels(run, qfile, corpus)
    requests = tuple(Request(r.question_id, r.question) for r in run.records)
    queries_hash = sha256_bytes(canonical_json([[q.id, q.text] for q in requests]))
    workload = spec.name or snap.name
    say(
        f"{workload}: {len(run.records)} questions from {run_dir} ({run.event_sources}), {len(corpus)} documents in {snap}"
        + (f"; {gold_missing} gold titles not in the folder" if gold_missing else "")
    )
    if not cfg_note["reproduces_run_config"]:
        say(f"note: the agent configuration does not reproduce the run's config hash {run.config_hash[:12]}")
    return _LensInputs(
        run_dir,
        qfile,
        run,
        snap,
        lens_cfg,
        cfg_note,
        corpus,
        gold,
        gold_missing,
        labels_hash,
        population,
        requests,
        queries_hash,
        workload,
    )


def _binding(x: _LensInputs, config: LensAuditConfig, ctx: LensContext, ranker: PriorRanker) -> dict[str, Any]:
    """The workload's binding: what the rows are bound to (corpus, queries, labels, the prior's settings, the
    bench run). Streams are added as they are replayed."""
    run, corpus, lens_cfg = x.run, x.corpus, x.lens_cfg
    full = config.replay.mode == "full"
    index_params = {
        "mode": config.replay.mode,
        "prior": lens_cfg.canonical()["prior"],
        "reader": lens_cfg.canonical()["reader"],
        "lexical_only_prior": bool(lens_cfg.ablation.lexical_only_prior),
        "list_depth": ranker.depth,
        "min_similarity": ctx.min_similarity,
        "agent_config_hash": lens_cfg.canonical_hash() if full else None,
    }
    index_hash = sha256_bytes(
        canonical_json({"params": index_params, "corpus": corpus.corpus_hash, "records": rows_digest(run.records)})
    )
    return {
        "corpus_hash": corpus.corpus_hash,
        "queries_hash": x.queries_hash,
        "labels_hash": x.labels_hash,
        "summary": _summary(x.gold, len(corpus), len(run.records)),
        "retrievers": {_retriever(config): {"index_hash": index_hash, "params": index_params}},
        "streams": {},
        "lens_run": {
            "folder": str(x.run_dir.resolve()),
            "system": run.system,
            "system_hash": run.system_hash,
            "rows_sha256": run.rows_sha256,
            "manifest_sha256": run.manifest_sha256,
            "config_hash": run.config_hash,
            "binding_hash": run.binding_hash,
            "corpus_checksum": run.corpus_checksum,
            "event_sources": run.event_sources,
            "decomposition_sources": run.decomposition_sources,
        },
        "folder": {
            "path": str(x.snap.resolve()),
            "documents": len(corpus),
            "skipped": dict(corpus.scan.skipped),
            "same_corpus_as_run": run.corpus_checksum == corpus.corpus_hash,
        },
        "gold_titles_missing_from_folder": x.gold_missing,
        "agent_config": x.cfg_note,
    }


def _retriever(config: LensAuditConfig) -> str:
    return "lens-agent" if config.replay.mode == "full" else "lens-prior"


def _input_records(x: _LensInputs, workload_files: bool) -> list[dict[str, Any]]:
    """The manifest's inputs: the bench run's rows and manifest, the labels' files, the snapshot's manifest."""

    def record(f: Path, role: str) -> dict[str, Any]:
        return {**file_record(f), "workload": x.workload, "role": role}

    inputs = [
        record(x.run_dir / "rows.jsonl", "lens bench rows"),
        record(x.run_dir / "manifest.json", "lens bench manifest"),
    ]
    if workload_files:
        role = "stream workload (labels: metrics only)"
        inputs += [record(f, role) for f in sorted(x.qfile.rglob("*")) if f.is_file()]
    else:
        inputs.append(record(x.qfile, "questions (labels: metrics only)"))
    snap_manifest = x.snap.parent / f"{x.snap.name}.manifest.json"
    if snap_manifest.is_file():
        inputs.append(record(snap_manifest, "snapshot manifest"))
    return inputs


def _streams(x: _LensInputs, config: LensAuditConfig, out: Path, cache_dir: str | Path | None, wb: dict[str, Any]):
    """Step 3: the configured streams (labels only for the tagged stress stream); full mode keeps the first few."""
    vectors = None
    if "semantic" in config.streams.kinds:
        cache = ArtifactCache(cache_dir if cache_dir is not None else out / "cache")
        qv = compute_query_vectors(x.requests, config.replay.similarity, RetrievalSpec(), cache, x.queries_hash)
        vectors = qv.vectors
        wb["query_vectors"] = {"method": qv.method, "model": qv.model_id, "hash": qv.hash}
    streams = configured_streams(config.streams, x.requests, vectors, lambda: x.gold)
    return streams[: config.full.streams] if config.replay.mode == "full" else streams


def _replay_one(
    x: _LensInputs,
    config: LensAuditConfig,
    ctx: LensContext,
    stream: Any,
    wb: dict[str, Any],
    out: Path,
    outputs: list[Path],
    client: Any,
    say: Progress,
) -> tuple[list, float, float]:
    """Steps 4–5 for one stream: its event log (frozen before any view reads it), then the replay at its anchors;
    returns the row blocks and the seconds spent on events and on the replay."""
    full, run, workload = config.replay.mode == "full", x.run, x.workload
    sp = out / "streams" / workload / f"{stream.name}.json"
    stream.save(sp)
    outputs.append(sp)
    per = config.full.anchors_per_position if full else config.replay.anchors_per_position
    anchors = choose_anchors(len(stream), config.replay.anchor_positions, per)
    t1 = time.perf_counter()
    by_id = {r.question_id: r for r in run.records}
    events = LensEventLog.build(stream, by_id, version=f"lens-bench:{run.rows_sha256[:16]}:{run.system_hash[:16]}")
    ep = events.save(out / "events" / workload / f"{stream.name}.jsonl")
    outputs.extend([ep, ep.with_name(ep.stem + ".positions.json")])
    t_events = time.perf_counter() - t1
    wb["streams"][stream.name] = {
        "hash": stream.hash,
        "kind": stream.kind,
        "seed": stream.seed,
        "uses_gold": stream.uses_gold,
        "anchors": int(anchors.positions.size),
        "entries": len(events.entries),
        "events": {_retriever(config): events.hash},
    }
    scalars = {
        "workload": workload,
        "corpus_hash": x.corpus.corpus_hash,
        "queries_hash": x.queries_hash,
        "index_hash": wb["retrievers"][_retriever(config)]["index_hash"],
        "stream_hash": stream.hash,
        "events_hash": events.hash,
        "config_hash": config.hash,
    }
    views = standard_views(config.replay.horizons)
    t1 = time.perf_counter()
    if full:
        pop = x.population
        labels = FullModeLabels(
            {r.question_id: pop[r.question_id].answer for r in run.records},
            {r.question_id: pop[r.question_id].gold_titles for r in run.records},
        )
        new = replay_lens_full(
            ctx,
            stream,
            events,
            anchors,
            views,
            agent_config=x.lens_cfg,
            client=client,
            labels=labels,
            work_folder=out / "full" / workload / stream.name,
            scalars=scalars,
            say=say,
        )
    else:
        naive = out / "naive" / workload / stream.name
        new = replay_lens_stream(ctx, stream, events, anchors, views, naive_folder=naive, scalars=scalars)
        outputs.append(naive / "memory.jsonl")
    t_replay = time.perf_counter() - t1
    say(
        f"{workload}: replayed {stream.name} ({int(anchors.positions.size)} anchors × {len(views) + 1} conditions, "
        f"{len(events.entries)} memory entries; {ctx.ranker.calls} prior calls so far)"
    )
    return new, t_events, t_replay


def run_lens_audit(
    config: LensAuditConfig,
    out_dir: str | Path,
    *,
    root: str | Path | None = None,
    cache_dir: str | Path | None = None,
    progress: Progress | None = None,
    publish: bool = True,
    client: Any = None,
) -> RunResult:
    """Run the LENS memory audit of ``config`` into ``out_dir`` (new folder). ``client`` (full mode) is the LLM
    client the agent uses; by default the one its configuration opens. Raises ``ContractFailed`` (rows, contract
    and manifest written, no report) for an invalid run and ``LensError`` on bad input."""
    say = progress or (lambda msg: log.info("%s", msg))
    out = Path(out_dir)
    if (out / MANIFEST_NAME).exists() or (out / "rows.jsonl").exists():
        raise LensError(f"{out}: already holds an audit run; choose a new --out folder")
    _check_spec(config)
    droot = data_root(root)
    timings: dict[str, float] = {}
    t_all = t0 = time.perf_counter()
    x = _read_inputs(config, droot, out, say)  # 1. inputs
    timings["inputs"] = time.perf_counter() - t0

    # 2. prior, context, bindings
    cutoffs = tuple(sorted(config.metrics.cutoffs))
    lexical_only = x.lens_cfg.ablation.lexical_only_prior
    ranker = PriorRanker(x.corpus, x.lens_cfg.prior, lexical_only=lexical_only, depth=max(cutoffs))
    ctx = LensContext(
        x.run.records,
        x.corpus,
        ranker,
        x.gold,
        capacity=config.replay.capacity,
        min_similarity=agent_min_similarity(),
        cutoffs=cutoffs,
        headline_k=config.metrics.headline_k,
        trace_depth=MAX_REQUIREMENTS,
    )
    wb = _binding(x, config, ctx, ranker)
    inputs = _input_records(x, bool(config.lens.workload))
    out.mkdir(parents=True, exist_ok=True)  # only once every input has been read and checked
    atomic_write_json(
        out / "config.json", {"config": config.model_dump(), "config_hash": config.hash, "headline": config.headline}
    )
    outputs: list[Path] = [out / "config.json"]

    t0 = time.perf_counter()
    streams = _streams(x, config, out, cache_dir, wb)  # 3. streams
    timings["streams"] = time.perf_counter() - t0

    blocks, t_events, t_replay = [], 0.0, 0.0  # 4–5. event logs, replay
    client_opened = None
    if config.replay.mode == "full" and client is None:
        client = client_opened = open_client(x.lens_cfg)
    try:
        for stream in streams:
            new, te, tr = _replay_one(x, config, ctx, stream, wb, out, outputs, client, say)
            blocks.extend(new)
            t_events, t_replay = t_events + te, t_replay + tr
    finally:
        if client_opened is not None:
            client_opened.close()
    timings["events"], timings["replay"] = t_events, t_replay

    manifest = {  # 6. rows, contract, manifest, report
        "memory_kind": "lens-memory",
        "mode": config.replay.mode,
        "config_source": config.source,
        "data_root": str(droot),
        "inputs": inputs,
        "prior_calls": ranker.calls,
    }
    return finish_run(out, blocks, {x.workload: wb}, outputs, timings, t_all, config, publish, say, manifest)
