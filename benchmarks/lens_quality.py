"""LENS answer quality and evidence recall on HotpotQA questions, full agent vs its ablations.

    python benchmarks/lens_quality.py QUESTIONS.json --folder DIR --out RUN.jsonl [--first N] [--offset K]
        [--variant full|no-exploration|lexical-prior|no-memory] [--build] [--set KEY=VALUE ...] [--preset P]

``--build`` writes DIR first: one raw file per context article of the chosen questions (title line, then one
sentence per line; the snapshot builder's safe file names). Each question's row (EM, F1, evidence recall =
gold titles among cited documents, oracle calls, tokens, seconds, answer, cited titles) is appended to OUT as
it finishes, keyed by the configuration hash, so a killed run resumes without duplicates. Then a summary is
printed for every variant found in OUT. Gold labels are read only to score.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

VARIANTS = {
    "full": [],
    "no-exploration": ["ablation.no_exploration=true"],
    "lexical-prior": ["ablation.lexical_only_prior=true"],
    "no-memory": ["ablation.no_memory=true"],
}


def build_folder(questions: list, folder: Path) -> int:
    from harness.bench.snapshots import assign_file_names, render_article

    articles: dict[str, tuple[str, ...]] = {}
    for q in questions:
        for title, sents in q.context:
            articles.setdefault(title, tuple(sents))
    names = assign_file_names(articles)
    folder.mkdir(parents=True, exist_ok=True)
    for title, sents in articles.items():
        (folder / names[title]).write_text(render_article(title, sents), encoding="utf-8")
    return len(articles)


def summarise(rows: list[dict]) -> None:
    by_variant: dict[str, list[dict]] = {}
    for r in rows:
        by_variant.setdefault(r["variant"], []).append(r)
    print(
        f"{'variant':16} {'n':>3} {'EM':>6} {'F1':>6} {'EvRec':>6} {'cited':>5} {'calls':>5} {'tokens':>7} {'sec':>6}"
    )
    for name, rs in by_variant.items():
        n = len(rs)
        print(
            f"{name:16} {n:3d} {100 * sum(r['em'] for r in rs) / n:6.1f} {100 * sum(r['f1'] for r in rs) / n:6.1f} "
            f"{100 * sum(r['evidence_recall'] for r in rs) / n:6.1f} {statistics.mean(len(r['cited']) for r in rs):5.2f} "
            f"{statistics.mean(r['oracle_calls'] for r in rs):5.1f} {statistics.mean(r['tokens'] for r in rs):7.0f} "
            f"{statistics.mean(r['seconds'] for r in rs):6.1f}"
        )


def main() -> int:
    from harness.bench.datasets import load_questions
    from harness.bench.metrics import answer_f1, evidence_recall, exact_match
    from harness.bench.snapshots import title_from_file_name
    from lens import Agent, load_config

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("questions")
    ap.add_argument("--folder", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--first", type=int, default=30)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--variant", choices=sorted(VARIANTS), default="full")
    ap.add_argument("--build", action="store_true")
    ap.add_argument("--preset")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--summary-only", action="store_true")
    args = ap.parse_args()

    out = Path(args.out)
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()] if out.exists() else []
    if args.summary_only:
        summarise(rows)
        return 0
    questions = load_questions(args.questions)[args.offset : args.offset + args.first]
    folder = Path(args.folder)
    if args.build:
        print(f"built {build_folder(questions, folder)} articles in {folder}", file=sys.stderr)
    cfg = load_config(args.preset, overrides=VARIANTS[args.variant] + args.set)
    key = cfg.canonical_hash()
    done = {(r["id"], r["config_hash"]) for r in rows}
    agent = Agent(cfg)
    with out.open("a", encoding="utf-8") as fh:
        for i, q in enumerate(questions):
            if (q.id, key) in done:
                continue
            t0 = time.monotonic()
            try:
                res = agent.ask(q.question, folder)
                answer, cited = res.answer, [title_from_file_name(p) for p in res.cited_paths]
                cost, err = res.cost, None
            except Exception as exc:  # a failed question is a row, not a crash
                answer, cited, cost, err = "", [], {"oracle_calls": 0, "tokens": 0}, f"{type(exc).__name__}: {exc}"
            row = {
                "id": q.id,
                "variant": args.variant,
                "config_hash": key,
                "type": q.type,
                "question": q.question,
                "gold": q.answer,
                "answer": answer,
                "em": float(exact_match(answer, q.answer)),
                "f1": answer_f1(answer, q.answer)[0],
                "evidence_recall": evidence_recall(q.gold_titles, cited),
                "gold_titles": list(q.gold_titles),
                "cited": cited,
                "oracle_calls": cost.get("oracle_calls", 0),
                "tokens": cost.get("tokens", 0),
                "seconds": round(time.monotonic() - t0, 2),
                "error": err,
                "best_effort": getattr(res, "best_effort", None) if err is None else None,
                "stop": getattr(res, "stop_reason", None) if err is None else None,
            }
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            rows.append(row)
            print(
                f"[{i + 1}/{len(questions)}] {args.variant} em={row['em']:.0f} rec={row['evidence_recall']:.2f} "
                f"{row['seconds']}s {answer!r} (gold {q.answer!r})",
                file=sys.stderr,
                flush=True,
            )
    summarise(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
