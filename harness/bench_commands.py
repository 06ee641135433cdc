"""Handlers of ``lens bench sample | snapshot | score`` (registered in ``harness/bench_cli.py``).

Each takes the parsed namespace and returns an exit code; bad input raises ``DataError`` (a ``LensError``),
which the CLI prints as one line with exit code 2. A failed ``--verify`` prints every problem and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from harness.datasets import DataError, load_articles, load_predictions, load_questions
from harness.metrics import score_official
from harness.samples import FrozenSample, draw_samples, parse_sizes, write_samples
from harness.snapshots import (
    BuildResult,
    SnapshotSet,
    VerifyReport,
    build_snapshots,
    file_sha256,
    path_sha256,
    plan_snapshots,
    verify_snapshots,
)

__all__ = ["sample", "snapshot", "score"]


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
        questions, sizes, seed=args.seed, sf_cap=args.sf_cap, population_sha256=file_sha256(args.questions)
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
        report = verify_snapshots(out)
        if args.json:
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
    if args.questions is None or args.articles is None:
        raise DataError(f"--{'questions' if args.questions is None else 'articles'} is needed to build snapshots")
    t0 = time.perf_counter()
    sizes = parse_sizes(args.sizes)
    questions = load_questions(args.questions)
    articles = load_articles(args.articles)
    inputs = {
        "questions": {"path": str(args.questions), "sha256": file_sha256(args.questions)},
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
    last = snap.plans[-1].composition
    if args.json:
        print(
            json.dumps(
                {
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
                },
                indent=1,
                ensure_ascii=False,
            )
        )
        return 0 if report is None or report.ok else 1
    print(_composition_table(snap, results))
    print()
    print(_hash_table(snap))
    print()
    print(
        f"background pool: {last.background_pool:,} articles linked to no question of the population; "
        f"{snap.plans[-1].name} wanted {last.background_target:,} at {args.background_ratio:g}:1 and got "
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
    if report is not None:
        return _print_verify(report, out)
    return 0


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
