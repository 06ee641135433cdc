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
from lens import MAX_REQUIREMENTS, ConfigError, LensError, load_config, merge_overrides, open_client

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
    droot = data_root(root)
    run_dir = resolve_data_path(spec.run, "lens.run", droot, config=config.source, folder=True)
    if spec.workload:
        qfile = resolve_data_path(spec.workload, "lens.workload", droot, config=config.source, folder=True)
    else:
        qfile = resolve_data_path(spec.questions, "lens.questions", droot, config=config.source)

    # 1. inputs: label-free records; labels only for metrics
    t_all = t0 = time.perf_counter()
    run = load_lens_run(run_dir, spec.system, spec.system_hash)
    snap_ref = spec.snapshot or run.snapshot_path
    if not snap_ref:
        raise AuditConfigError(
            f"{config.source or 'config'}: lens.snapshot is not set and {run_dir}/manifest.json names no snapshot (pass --snapshot)"
        )
    snap = resolve_data_path(snap_ref, "lens.snapshot", droot, config=config.source, folder=True)
    timings: dict[str, float] = {}
    outputs: list[Path] = []
    records = run.records
    lens_cfg, cfg_note = agent_config(
        run, config, cache_dir=(config.full.llm_cache or out / "llm-cache") if config.replay.mode == "full" else None
    )
    corpus = LensCorpus.read(snap, lens_cfg.reader)
    population: dict[str, Any] = {}  # the questions (full mode scores their answers); none for a stream run
    if spec.workload:
        gold, gold_missing, labels_hash = _stream_labels(run, qfile, spec.split, snap, corpus)
    else:
        gold, gold_missing, labels_hash, population = _question_labels(run, qfile, corpus)
    requests = tuple(Request(r.question_id, r.question) for r in records)
    queries_hash = sha256_bytes(canonical_json([[q.id, q.text] for q in requests]))
    workload = spec.name or snap.name
    say(
        f"{workload}: {len(records)} questions from {run_dir} ({run.event_sources}), {len(corpus)} documents in {snap}"
        + (f"; {gold_missing} gold titles not in the folder" if gold_missing else "")
    )
    if not cfg_note["reproduces_run_config"]:
        say(f"note: the agent configuration does not reproduce the run's config hash {run.config_hash[:12]}")
    timings["inputs"] = time.perf_counter() - t0

    # 2. prior, context, bindings
    cutoffs = tuple(sorted(config.metrics.cutoffs))
    ranker = PriorRanker(corpus, lens_cfg.prior, lexical_only=lens_cfg.ablation.lexical_only_prior, depth=max(cutoffs))

    ctx = LensContext(
        records,
        corpus,
        ranker,
        gold,
        capacity=config.replay.capacity,
        min_similarity=agent_min_similarity(),
        cutoffs=cutoffs,
        headline_k=config.metrics.headline_k,
        trace_depth=MAX_REQUIREMENTS,
    )
    full = config.replay.mode == "full"
    retriever = "lens-agent" if full else "lens-prior"
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
        canonical_json({"params": index_params, "corpus": corpus.corpus_hash, "records": rows_digest(records)})
    )
    wb: dict[str, Any] = {
        "corpus_hash": corpus.corpus_hash,
        "queries_hash": queries_hash,
        "labels_hash": labels_hash,
        "summary": _summary(gold, len(corpus), len(records)),
        "retrievers": {retriever: {"index_hash": index_hash, "params": index_params}},
        "streams": {},
        "lens_run": {
            "folder": str(run_dir.resolve()),
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
            "path": str(snap.resolve()),
            "documents": len(corpus),
            "skipped": dict(corpus.scan.skipped),
            "same_corpus_as_run": run.corpus_checksum == corpus.corpus_hash,
        },
        "gold_titles_missing_from_folder": gold_missing,
        "agent_config": cfg_note,
    }
    inputs = [
        {**file_record(run_dir / "rows.jsonl"), "workload": workload, "role": "lens bench rows"},
        {**file_record(run_dir / "manifest.json"), "workload": workload, "role": "lens bench manifest"},
        *(
            [
                {**file_record(f), "workload": workload, "role": "stream workload (labels: metrics only)"}
                for f in sorted(qfile.rglob("*"))
                if f.is_file()
            ]
            if spec.workload
            else [{**file_record(qfile), "workload": workload, "role": "questions (labels: metrics only)"}]
        ),
    ]
    snap_manifest = snap.parent / f"{snap.name}.manifest.json"
    if snap_manifest.is_file():
        inputs.append({**file_record(snap_manifest), "workload": workload, "role": "snapshot manifest"})
    out.mkdir(parents=True, exist_ok=True)  # only once every input has been read and checked
    atomic_write_json(
        out / "config.json", {"config": config.model_dump(), "config_hash": config.hash, "headline": config.headline}
    )
    outputs.append(out / "config.json")

    # 3. streams (labels only for the tagged stress stream)
    t0 = time.perf_counter()
    vectors = None
    if "semantic" in config.streams.kinds:
        cache = ArtifactCache(cache_dir if cache_dir is not None else out / "cache")
        qv = compute_query_vectors(requests, config.replay.similarity, RetrievalSpec(), cache, queries_hash)
        vectors = qv.vectors
        wb["query_vectors"] = {"method": qv.method, "model": qv.model_id, "hash": qv.hash}
    streams = configured_streams(config.streams, requests, vectors, lambda: gold)
    if full:
        streams = streams[: config.full.streams]
    timings["streams"] = time.perf_counter() - t0

    # 4–5. event logs, replay
    views = standard_views(config.replay.horizons)
    blocks = []
    t_events = t_replay = 0.0
    by_id = {r.question_id: r for r in records}
    client_opened = None
    if full and client is None:
        client = client_opened = open_client(lens_cfg)
    try:
        for stream in streams:
            sp = out / "streams" / workload / f"{stream.name}.json"
            stream.save(sp)
            outputs.append(sp)
            per = config.full.anchors_per_position if full else config.replay.anchors_per_position
            anchors = choose_anchors(len(stream), config.replay.anchor_positions, per)
            t1 = time.perf_counter()
            events = LensEventLog.build(
                stream, by_id, version=f"lens-bench:{run.rows_sha256[:16]}:{run.system_hash[:16]}"
            )
            ep = events.save(out / "events" / workload / f"{stream.name}.jsonl")
            outputs.extend([ep, ep.with_name(ep.stem + ".positions.json")])
            t_events += time.perf_counter() - t1
            wb["streams"][stream.name] = {
                "hash": stream.hash,
                "kind": stream.kind,
                "seed": stream.seed,
                "uses_gold": stream.uses_gold,
                "anchors": int(anchors.positions.size),
                "entries": len(events.entries),
                "events": {retriever: events.hash},
            }
            scalars = {
                "workload": workload,
                "corpus_hash": corpus.corpus_hash,
                "queries_hash": queries_hash,
                "index_hash": index_hash,
                "stream_hash": stream.hash,
                "events_hash": events.hash,
                "config_hash": config.hash,
            }
            t1 = time.perf_counter()
            if full:
                labels = FullModeLabels(
                    {r.question_id: population[r.question_id].answer for r in records},
                    {r.question_id: population[r.question_id].gold_titles for r in records},
                )
                new = replay_lens_full(
                    ctx,
                    stream,
                    events,
                    anchors,
                    views,
                    agent_config=lens_cfg,
                    client=client,
                    labels=labels,
                    work_folder=out / "full" / workload / stream.name,
                    scalars=scalars,
                    say=say,
                )
            else:
                new = replay_lens_stream(
                    ctx,
                    stream,
                    events,
                    anchors,
                    views,
                    naive_folder=out / "naive" / workload / stream.name,
                    scalars=scalars,
                )
                naive_log = out / "naive" / workload / stream.name / "memory.jsonl"
                outputs.append(naive_log)
            blocks.extend(new)
            t_replay += time.perf_counter() - t1
            say(
                f"{workload}: replayed {stream.name} ({int(anchors.positions.size)} anchors × {len(views) + 1} conditions, "
                f"{len(events.entries)} memory entries; {ranker.calls} prior calls so far)"
            )
    finally:
        if client_opened is not None:
            client_opened.close()
    timings["events"], timings["replay"] = t_events, t_replay
    bindings = {workload: wb}

    # 6. rows, contract, manifest, report
    manifest = {
        "memory_kind": "lens-memory",
        "mode": config.replay.mode,
        "config_source": config.source,
        "data_root": str(droot),
        "inputs": inputs,
        "prior_calls": ranker.calls,
    }
    return finish_run(out, blocks, bindings, outputs, timings, t_all, config, publish, say, manifest)
