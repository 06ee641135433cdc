"""Handlers of ``lens bench sample | snapshot | score | run | lifecycle | report`` (registered in
``harness/bench/cli.py``).

Each takes the parsed namespace and returns an exit code; bad input raises ``DataError`` (a ``LensError``),
which the CLI prints as one line with exit code 2. A failed ``--verify`` prints every problem and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from harness.bench import simulation
from harness.bench.compare import compare_runs
from harness.bench.datasets import DataError, load_articles, load_predictions, load_questions
from harness.bench.executor import LocalExecutor, RayExecutor
from harness.bench.financebench import financebench_report, handcheck_agreement, plan_financebench, write_handcheck
from harness.bench.fullwiki import prepare_fullwiki
from harness.bench.judge import judge_runs
from harness.bench.lifecycle import find_stages, lifecycle_table, measure_lifecycle
from harness.bench.metrics import score_official
from harness.bench.report import build_report
from harness.bench.runner import RunPlan, RunSummary, plan_run, run_benchmark
from harness.bench.samples import FrozenSample, draw_samples, parse_sizes, read_samples, write_samples
from harness.bench.simulation import DEFAULT_POINTS, parse_points, summarise, table, write_summary
from harness.bench.snapshots import (
    BuildResult,
    SnapshotSet,
    VerifyReport,
    build_snapshots,
    path_sha256,
    plan_snapshots,
    verify_snapshots,
)
from harness.bench.stream import build_stream, compare_memory, run_stream
from harness.bench.systems.registry import ArmSettings, parse_systems
from harness.files import sha256_file, write_json_atomic, write_text_atomic
from harness.workloads import load_beir
from lens import open_client
from lens.parts import config_from_args

__all__ = ["sample", "snapshot", "score", "run", "lifecycle", "report"]


def _table(headers: list[str], rows: list[list[str]], right: set[int] | None = None) -> str:
    right = right or set()
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def fmt(cells: list[str]) -> str:
        padded = (c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
        return "  ".join(padded).rstrip()

    return "\n".join([fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)])


# --------------------------------------------------------------------------- sample


def _sample_report(fs: FrozenSample) -> str:
    lines = [
        f"Population: {fs.population_size} questions, seed {fs.seed}, strata type x supporting-fact count "
        f"({fs.sf_cap}+ pooled)"
    ]
    headers = ["Stratum", "Pop.", "Share", *(s.name for s in fs.stages)]
    rows = []
    for label, n in sorted(fs.population_strata.items()):
        rows.append(
            [label, str(n), f"{100 * n / fs.population_size:.2f}%", *(str(s.strata.get(label, 0)) for s in fs.stages)]
        )
    lines += [_table(headers, rows, right=set(range(1, len(headers)))), ""]
    rows = [
        [
            s.name,
            str(s.size),
            s.sample_sha256[:8],
            s.order_sha256[:8],
            f"{100 * s.max_abs_deviation:.2f}",
            str(len(s.empty_strata)),
        ]
        for s in fs.stages
    ]
    lines.append(
        _table(["Stage", "Samples", "Sample hash", "Order hash", "Max dev (pp)", "Empty strata"], rows, {1, 4, 5})
    )
    lines.append("")
    for s in fs.stages:
        lines.append(f"{s.name}  sample_sha256 {s.sample_sha256}  order_sha256 {s.order_sha256}")
    return "\n".join(lines)


def sample(args: argparse.Namespace) -> int:
    questions = load_questions(args.questions)
    sizes = parse_sizes(args.sizes)
    fs = draw_samples(
        questions, sizes, seed=args.seed, sf_cap=args.sf_cap, population_sha256=sha256_file(args.questions)
    )
    written = write_samples(fs, args.out, source=args.questions)
    if args.json:
        data = fs.to_json()
        data.pop("order")
        data["written"] = [str(p) for p in written]
        print(json.dumps(data, indent=1, ensure_ascii=False))
    else:
        print(_sample_report(fs))
        print(f"\nwrote {', '.join(str(p) for p in written)}")
    return 0


# --------------------------------------------------------------------------- fullwiki


def fullwiki(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    build = prepare_fullwiki(
        args.questions,
        args.articles,
        args.out,
        size=args.size,
        seed=args.seed,
        sf_cap=args.sf_cap,
        exclude=args.exclude,
        shard_size=args.shard_size,
    )
    m = build.manifest
    summary = {
        "out": str(build.out),
        "status": build.status,
        "seconds": round(time.perf_counter() - t0, 2),
        "sample": {
            k: m["sample"][k] for k in ("name", "size", "population", "excluded", "sample_sha256", "order_sha256")
        },
        "gold_in_pool": m["gold"]["in_pool"],
        "gold_missing": m["gold"]["missing"],
        "articles": m["pool"]["articles"],
        "shards": len(m["pool"]["shards"]),
        "pool_checksum": m["pool"]["checksum"],
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    s = summary["sample"]
    print(f"fullwiki {build.status}: {build.out} ({summary['seconds']} s)")
    print(f"sample    {s['name']}: {s['size']} of {s['population']} questions ({s['excluded']} excluded)")
    print(f"          sample sha256 {s['sample_sha256']}  order sha256 {s['order_sha256']}")
    print(
        f"gold      all gold articles in the pool for {summary['gold_in_pool']}, some missing for {summary['gold_missing']}"
    )
    print(
        f"pool      {summary['articles']:,} articles in {summary['shards']} shards, checksum {summary['pool_checksum']}"
    )
    return 0


# --------------------------------------------------------------------------- stream


def stream(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise DataError(f"--limit {args.limit}: must be >= 1")
    workload = load_beir(args.workload, split=args.split)
    order = build_stream(workload, args.order, args.seed)
    config = config_from_args(args)
    print(
        f"stream {args.out}: {len(order)} requests of {workload.name} ({order.name}), "
        f"memory {'off' if args.no_memory else 'on'}, config {config.canonical_hash()[:12]}",
        file=sys.stderr,
    )
    summary = run_stream(workload, args.folder, order, args.out, config, memory=not args.no_memory, limit=args.limit)
    data = {
        "out": str(summary.out),
        "rows_before": summary.rows_before,
        "rows_written": summary.rows_written,
        "planned": summary.planned,
        "per_request": {k: round(v, 4) for k, v in summary.per_request.items()},
    }
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        print(
            f"{summary.rows_before + summary.rows_written} of {summary.planned} positions done ({summary.rows_written} now)"
        )
        for k, v in data["per_request"].items():
            print(f"  {k:<18} {v}")
    return 0


def stream_compare(args: argparse.Namespace) -> int:
    c = compare_memory(args.with_memory, args.without)
    if args.out:
        write_json_atomic(args.out, c)
    if args.json:
        print(json.dumps(c, indent=1))
        return 0
    print(f"n = {c['n']} positions of stream {c['stream']['kind']}-s{c['stream']['seed']} (with − without memory)")
    rows = [
        [
            k,
            f"{m['with_memory']:.3f}",
            f"{m['without']:.3f}",
            f"{m['difference']:+.3f}",
            f"[{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}]",
        ]
        for k, m in c["metrics"].items()
    ]
    print(_table(["Metric", "With memory", "Without", "Difference", "95% CI"], rows, right={1, 2, 3}))
    print(f"memory read per request {c['memory_read_per_request']:.2f}, written {c['memory_written_per_request']:.2f}")
    return 0


# --------------------------------------------------------------------------- judge


def judge(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    client = open_client(config)
    try:
        s = judge_runs(args.runs, client, limit=args.limit)
    finally:
        client.close()
    data = {"judged": s.judged, "cached": s.cached, "failed": s.failed, "judge_tokens": s.tokens, "model": client.model}
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        print(
            f"judge {client.model}: {s.judged} verdicts written ({s.failed} failed), {s.cached} already judged, "
            f"{s.tokens:,} judge tokens"
        )
    return 0


# --------------------------------------------------------------------------- snapshot


def _composition_table(snap: SnapshotSet, results: list[BuildResult] | None) -> str:
    status = {r.plan.name: r.status for r in results or []}
    rows = []
    for p in snap.plans:
        c = p.composition
        rows.append(
            [
                p.name,
                str(p.size),
                f"{c.articles:,}",
                f"{c.evidence:,}",
                f"{c.distractors:,}",
                f"{c.background:,}",
                f"{c.background_ratio:.2f}",
                str(len(c.missing_gold)),
                status.get(p.name, "planned"),
            ]
        )
    return _table(
        ["Snapshot", "n", "Articles", "Ev.", "Dist.", "Bg.", "Bg.:linked", "Missing gold", "Status"],
        rows,
        right={1, 2, 3, 4, 5, 6, 7},
    )


def _hash_table(snap: SnapshotSet) -> str:
    rows = [[p.name, p.sample_sha256[:8], p.order_sha256[:8], p.corpus_checksum[:8]] for p in snap.plans]
    out = [_table(["Snapshot", "Sample hash", "Order hash", "Corpus checksum"], rows), ""]
    for p in snap.plans:
        out.append(
            f"{p.name}  sample_sha256 {p.sample_sha256}  order_sha256 {p.order_sha256}  "
            f"corpus_checksum {p.corpus_checksum}"
        )
    return "\n".join(out)


def _print_verify(report: VerifyReport, out: Path) -> int:
    if report.ok:
        print(
            f"verify: OK — {', '.join(report.stages)}: {report.files_checked:,} files match their manifests, "
            "checksums agree, growth is append-only"
        )
        return 0
    for problem in report.problems:
        print(f"verify: {problem}", file=sys.stderr)
    print(f"lens: error: verify failed for {out}: {len(report.problems)} problem(s)", file=sys.stderr)
    return 1


def snapshot(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if args.questions is None and args.articles is None:
        if not args.verify:
            raise DataError("--questions and --articles are needed to build (pass only --out and --verify to check)")
        return _verify_only(out, args.json)
    if args.questions is None or args.articles is None:
        raise DataError(f"--{'questions' if args.questions is None else 'articles'} is needed to build snapshots")
    t0 = time.perf_counter()
    sizes = parse_sizes(args.sizes)
    questions = load_questions(args.questions)
    articles = load_articles(args.articles)
    inputs = {
        "questions": {"path": str(args.questions), "sha256": sha256_file(args.questions)},
        "articles": {"path": str(args.articles), "sha256": path_sha256(args.articles)},
    }
    t_load = time.perf_counter()
    snap = plan_snapshots(
        questions,
        articles,
        sizes,
        seed=args.seed,
        background_ratio=args.background_ratio,
        sf_cap=args.sf_cap,
        population_sha256=inputs["questions"]["sha256"],
        file_format=args.file_format,
    )
    t_plan = time.perf_counter()

    def progress(r: BuildResult) -> None:
        if not args.json:
            print(f"{r.plan.name}: {r.status} ({len(r.plan.files):,} files, {r.seconds:.2f} s)", file=sys.stderr)

    results = build_snapshots(
        snap, out, shards=args.shards, shard_size=args.shard_size, inputs=inputs, on_stage=progress
    )
    t_build = time.perf_counter()
    report = verify_snapshots(out) if args.verify else None
    t_verify = time.perf_counter()
    timing = {
        "load_s": round(t_load - t0, 3),
        "plan_s": round(t_plan - t_load, 3),
        "write_s": round(t_build - t_plan, 3),
        "verify_s": round(t_verify - t_build, 3) if report else None,
        "total_s": round(t_verify - t0, 3),
    }
    if args.json:
        print(json.dumps(_snapshot_json(out, snap, results, timing, report), indent=1, ensure_ascii=False))
        return 0 if report is None or report.ok else 1
    _print_snapshot(snap, results, timing, report, out, args.background_ratio)
    if report is not None:
        return _print_verify(report, out)
    return 0


def _verify_only(out: Path, as_json: bool) -> int:
    """``lens bench snapshot --out DIR --verify``: re-hash every file against the manifests."""
    report = verify_snapshots(out)
    if as_json:
        summary = {
            "out": str(out),
            "ok": report.ok,
            "stages": report.stages,
            "files_checked": report.files_checked,
            "problems": report.problems,
        }
        print(json.dumps(summary, indent=1, ensure_ascii=False))
        return 0 if report.ok else 1
    return _print_verify(report, out)


def _snapshot_json(
    out: Path, snap: SnapshotSet, results: list[BuildResult], timing: dict, report: VerifyReport | None
) -> dict:
    return {
        "out": str(out),
        "stages": [
            {
                "name": p.name,
                "size": p.size,
                "status": r.status,
                "manifest": str(r.manifest_path),
                "composition": p.composition.to_json(),
                "sample_sha256": p.sample_sha256,
                "order_sha256": p.order_sha256,
                "corpus_checksum": p.corpus_checksum,
                "context_mismatches": p.context_mismatches,
            }
            for p, r in zip(snap.plans, results)
        ],
        "diagnostics": snap.diagnostics,
        "timing": timing,
        "verify": None if report is None else {"ok": report.ok, "problems": report.problems},
    }


def _print_snapshot(
    snap: SnapshotSet,
    results: list[BuildResult],
    timing: dict,
    report: VerifyReport | None,
    out: Path,
    background_ratio: float,
) -> None:
    """The human summary: composition and hash tables, the background, warnings, timing."""
    last = snap.plans[-1].composition
    print(_composition_table(snap, results))
    print()
    print(_hash_table(snap))
    print()
    print(
        f"background pool: {last.background_pool:,} articles linked to no question of the population; "
        f"{snap.plans[-1].name} wanted {last.background_target:,} at {background_ratio:g}:1 and got "
        f"{last.background:,} (realised {last.background_ratio:.2f}:1)"
    )
    for p in snap.plans:
        if p.composition.missing_gold:
            shown = ", ".join(repr(t) for t in p.composition.missing_gold[:5])
            print(f"warning: {p.name}: {len(p.composition.missing_gold)} gold articles not in the pool: {shown}")
    mism = snap.plans[-1].context_mismatches
    if mism:
        print(f"note: {mism} linked pool article(s) differ from a question's context paragraph (pool text used)")
    print(
        f"time: load {timing['load_s']:.2f} s, plan {timing['plan_s']:.2f} s, write {timing['write_s']:.2f} s"
        + (f", verify {timing['verify_s']:.2f} s" if report else "")
        + f" (total {timing['total_s']:.2f} s); output in {out}"
    )


# --------------------------------------------------------------------------- score


def score(args: argparse.Namespace) -> int:
    gold = load_questions(args.gold)
    pred = load_predictions(args.pred)
    result = score_official(gold, pred)
    if args.json:
        print(json.dumps(result.to_json(), indent=1, ensure_ascii=False))
        return 0
    m = result.metrics

    def pct(key: str) -> str:
        v = m[key]
        return "n/a" if v is None else f"{100 * v:.2f}"

    rows = [
        ["answer", pct("em"), pct("f1"), pct("prec"), pct("recall")],
        ["supporting facts", pct("sp_em"), pct("sp_f1"), pct("sp_prec"), pct("sp_recall")],
        ["joint", pct("joint_em"), pct("joint_f1"), pct("joint_prec"), pct("joint_recall")],
    ]
    print(f"{result.n} gold questions ({args.gold}); predictions {args.pred}")
    print(_table(["%", "EM", "F1", "Prec", "Recall"], rows, right={1, 2, 3, 4}))
    if not result.sp_evaluated:
        print('no "sp" section: supporting-fact and joint metrics not evaluated')

    def listing(ids: list[str]) -> str:
        return ", ".join(ids[:10]) + (f", … (+{len(ids) - 10})" if len(ids) > 10 else "")

    if result.missing_answer:
        print(f"missing answers (scored 0): {len(result.missing_answer)}: {listing(result.missing_answer)}")
    if result.missing_sp:
        print(f"missing supporting facts (scored 0): {len(result.missing_sp)}: {listing(result.missing_sp)}")
    if result.extra:
        print(f"predictions for unknown ids (ignored): {len(result.extra)}: {listing(result.extra)}")
    return 0


# --------------------------------------------------------------------------- run


def run(args: argparse.Namespace) -> int:
    systems = parse_systems(args.systems)
    if args.concurrency < 1:
        raise DataError(f"--concurrency {args.concurrency}: must be >= 1")
    config = config_from_args(args)
    settings = ArmSettings(
        k=args.k,
        react_steps=args.react_steps,
        dense_model=args.dense_model,
        paperqa_embedding=args.paperqa_embedding,
    )
    plan = plan_run(
        snapshot=args.snapshot,
        questions_file=args.questions,
        systems=systems,
        out=args.out,
        config=config,
        sample=args.sample,
        stage=args.stage,
        limit=args.limit,
        stale_from=args.stale_from,
        index_dir=args.index_dir,
        settings=settings,
    )
    print(
        f"run {plan.out}: {len(plan.questions)} questions x {len(systems)} systems on {plan.corpus.folder.name} "
        f"({plan.arm}{', indexes from ' + plan.index_corpus.folder.name if plan.arm == 'stale' else ''}); "
        f"config {plan.config_hash[:12]}, binding {plan.binding_hash[:12]}",
        file=sys.stderr,
    )
    if args.executor == "ray":
        # the embedded model: one server per Ray node; an endpoint (--base-url): every worker calls it
        executor = RayExecutor(
            args.concurrency, address=args.ray_address, embedded=config.llm.base_url is None, llm_config=config
        )
    else:
        if args.ray_address:
            raise DataError("--ray-address needs --executor ray")
        executor = LocalExecutor(args.concurrency)
    summary = run_benchmark(plan, executor=executor, progress=not args.no_progress)
    if args.json:
        print(json.dumps(_run_json(summary, plan), indent=1))
    else:
        _print_run(summary, systems)
    return _run_exit(summary)


def _run_exit(summary: RunSummary) -> int:
    """What a finished run session says on stderr about endpoint failures and stops, and its exit code."""
    if summary.endpoint_failures:
        print(
            f"endpoint failures: {summary.endpoint_failures} (system, question) attempts got no answer from the "
            f"endpoint (last: {summary.endpoint_error}); they are not rows (logged in {summary.out / 'attempts.jsonl'}) "
            f"and rerunning the same command retries them",
            file=sys.stderr,
        )
    if summary.stopped:
        print(f"lens: error: run stopped: {summary.stopped}; rerun the same command to resume", file=sys.stderr)
        return 2
    if summary.endpoint_failed_all:
        print(f"lens: error: the endpoint failed every question of this run: {summary.endpoint_error}", file=sys.stderr)
        return 2
    if summary.endpoint_failures:
        return 1  # incomplete: the failed attempts are still to do
    return 0


def _run_json(summary: RunSummary, plan: RunPlan) -> dict:
    return {
        "out": str(summary.out),
        "rows_before": summary.rows_before,
        "rows_written": summary.rows_written,
        "rows_total": summary.rows_total,
        "planned": summary.planned,
        "complete": summary.complete,
        "stopped": summary.stopped,
        "per_system": summary.per_system,
        "endpoint_failures": summary.endpoint_failures,
        "endpoint_error": summary.endpoint_error,
        "config_hash": plan.config_hash,
        "binding_hash": plan.binding_hash,
    }


def _print_run(summary: RunSummary, systems: tuple[str, ...]) -> None:
    """The run's per-system table and its row counts."""
    rows = [
        [
            name,
            str(int(m["rows"])),
            f"{100 * m['em']:.1f}",
            f"{100 * m['f1']:.1f}",
            f"{100 * m['ev_rec']:.1f}",
            f"{100 * m['ground']:.1f}",
            f"{m['tokens']:,.0f}",
            f"{m['seconds']:.1f}",
            str(int(m["errors"])),
        ]
        for name, m in sorted(
            summary.per_system.items(), key=lambda kv: systems.index(kv[0]) if kv[0] in systems else 99
        )
    ]
    print(
        _table(
            ["System", "Rows", "EM", "F1", "Ev.Rec", "Ground", "Tokens/q", "Seconds/q", "Errors"],
            rows,
            set(range(1, 9)),
        )
    )
    print(
        f"rows: {summary.rows_written} written now, {summary.rows_before} before, "
        f"{summary.rows_total}/{summary.planned} done; {summary.out / 'rows.jsonl'}"
    )


# --------------------------------------------------------------------------- financebench


def financebench(args: argparse.Namespace) -> int:
    systems = tuple(s.strip().lower() for s in args.systems.split(",") if s.strip())
    if args.concurrency < 1:
        raise DataError(f"--concurrency {args.concurrency}: must be >= 1")
    config = config_from_args(args)
    plan = plan_financebench(
        data=args.data,
        systems=systems,
        out=args.out,
        config=config,
        limit=args.limit,
        index_dir=args.index_dir,
        k=args.k,
        passage_chars=args.passage_chars,
        dense_model=args.dense_model,
    )
    print(
        f"financebench {plan.out}: {len(plan.questions)} questions x {len(plan.systems)} systems over "
        f"{plan.snapshot_info['filings']} filings ({plan.snapshot_info['documents']:,} pages with text); RAG k = "
        f"{plan.settings.k} pages of at most {plan.settings.passage_chars:,} characters; config "
        f"{plan.config_hash[:12]}, binding {plan.binding_hash[:12]}",
        file=sys.stderr,
    )
    summary = run_benchmark(plan, executor=LocalExecutor(args.concurrency), progress=not args.no_progress)
    if args.json:
        print(json.dumps(_run_json(summary, plan), indent=1))
    else:
        rows = [
            [
                name,
                str(int(m["rows"])),
                f"{100 * m['correct_by_rule']:.1f}",
                str(int(m["for_the_judge"])),
                "—" if m["page_recall"] is None else f"{100 * m['page_recall']:.1f}",
                "—" if m["filing_recall"] is None else f"{100 * m['filing_recall']:.1f}",
                f"{m['tokens']:,.0f}",
                f"{m['seconds']:.1f}",
                str(int(m["errors"])),
            ]
            for name, m in sorted(summary.per_system.items(), key=lambda kv: plan.systems.index(kv[0]))
        ]
        headers = ["System", "Rows", "Correct (rule)", "For the judge", "Page recall", "Filing recall"]
        print(_table(headers + ["Tokens/q", "Seconds/q", "Errors"], rows, set(range(1, 9))))
        print(
            f"rows: {summary.rows_written} written now, {summary.rows_before} before, "
            f"{summary.rows_total}/{summary.planned} done; {summary.out / 'rows.jsonl'}; next: lens bench judge "
            f"{summary.out}, then lens bench financebench-report {summary.out}"
        )
    return _run_exit(summary)


def financebench_report_cmd(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else Path(args.run_dir) / "report"
    files = financebench_report(args.run_dir, out, resamples=args.resamples, seed=args.seed)
    print(f"wrote {files[0]} and {len(files) - 1} CSV tables to {out}")
    return 0


def financebench_handcheck(args: argparse.Namespace) -> int:
    if args.graded:
        result = handcheck_agreement(args.graded)
        if args.json:
            print(json.dumps(result, indent=1))
        elif not result["graded"]:
            print(f"{args.graded}: no row has a grade in its human column yet")
        else:
            kappa = "undefined" if result["kappa"] is None else f"{result['kappa']:.2f}"
            print(
                f"{result['graded']} graded rows: the automatic verdict agrees with the human grade on "
                f"{result['agree']} ({100 * result['agreement']:.1f} %), Cohen's kappa {kappa}; correct: automatic "
                f"{result['auto_correct']}, human {result['human_correct']}"
            )
            for rule, r in result["per_rule"].items():
                print(f"  {rule}: {r['agree']}/{r['graded']} agree")
        return 0
    if not args.run_dir or not args.out:
        raise DataError("give RUN_DIR and --out FILE to write a hand-check sheet, or --graded FILE to score one")
    n = write_handcheck(args.run_dir, args.out, n=args.n, seed=args.seed)
    print(
        f"wrote {n} rows to {args.out}: fill its human column with correct or incorrect, then run "
        f"lens bench financebench-handcheck --graded {args.out}"
    )
    return 0


# --------------------------------------------------------------------------- lifecycle


def lifecycle(args: argparse.Namespace) -> int:
    stages = find_stages(args.snapshots)
    data = measure_lifecycle(
        stages,
        args.index_dir,
        systems=parse_systems(args.systems),
        dense_model=args.dense_model,
        paperqa_embedding=args.paperqa_embedding,
        isolate=not args.in_process,
        rebuild=args.rebuild,
        log=None if args.json else sys.stderr,
    )
    if args.out:
        write_json_atomic(args.out, data)
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    headers, rows = lifecycle_table(data)
    print(_table(headers, rows, right=set(range(5, len(headers)))))
    if args.out:
        print(f"wrote {args.out}")
    return 0


# --------------------------------------------------------------------------- report


def report(args: argparse.Namespace) -> int:
    if args.out is None and len(args.run_dirs) > 1:
        raise DataError("--out is needed when reporting more than one run folder")
    out = Path(args.out) if args.out else Path(args.run_dirs[0]) / "report"
    result = build_report(
        args.run_dirs,
        out,
        lifecycle_files=args.lifecycle,
        resamples=args.resamples,
        seed=args.seed,
        plots=not args.no_plots,
    )
    print(f"wrote {len(result.tables)} tables and {sum(p.suffix == '.png' for p in result.files)} plots to {out}")
    print(f"  {result.files[0]}")
    for r in result.refusals:
        print(f"refused: {r}", file=sys.stderr)
    return 1 if result.refusals else 0


def compare(args: argparse.Namespace) -> int:
    table = compare_runs(args.run_a, args.run_b, args.out, margin=args.margin, resamples=args.resamples, seed=args.seed)
    print(table.markdown())
    print(f"wrote compare.md, compare.csv and differences.csv to {args.out or Path(args.run_b) / 'compare'}")
    return 0


def simulate(args: argparse.Namespace) -> int:
    try:
        points = parse_points(args.points) if args.points else list(DEFAULT_POINTS)
    except ValueError as exc:
        raise DataError(str(exc)) from None
    config = config_from_args(args)
    questions = read_samples(args.sample).questions(load_questions(args.questions), args.stage)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    total = len(points) * len(questions)
    count = [0]

    def progress(row):
        count[0] += 1
        if count[0] % 50 == 0:
            print(f"  {count[0]} rows (tpr {row['tpr']}, fpr {row['fpr']})", file=sys.stderr, flush=True)

    rows = simulation.simulate(
        questions, args.snapshot, points, config, seed=args.seed, out=out / "rows.jsonl", progress=progress
    )
    summary = summarise(rows)
    write_summary(out / "summary.json", summary)
    write_text_atomic(out / "table.md", table(summary))
    print(table(summary), end="")
    print(f"{len(rows)}/{total} rows in {out / 'rows.jsonl'}", file=sys.stderr)
    return 0
