"""PaperQA2 against LENS on FinanceBench, paired on the questions both arms have rows for (issue 61), from the rows
kept in the repo (redacted: ids, scores, pages, cost) and the hand grades beside this script. Rows are read from
each run folder given (default: ``../financebench-1.5b/run``, every arm and PaperQA2's questions 1-21, and
``../financebench-1.5b/run-paperqa-22-49``, PaperQA2's questions 22-49 over its rebuilt index:
``run-financebench-22-49.sh`` says why); a (system, question) found twice is an error.

A question's correctness: by the rule where the rule grades it (``scores.correct_rule`` "numeric": within 1 % of
the gold figure; "yes_no": the answer's yes or no; "empty": no answer — as for every arm), else by hand
(``financebench-handgrades.csv``: the 1.5B judge does not hold for PaperQA2's sentence answers, as measured on
G125). A question graded by neither is listed and left out of the correctness count. **Strict**, beside it: a
yes/no answer graded by hand where it has a grade there too — the right word *and* a reason that is not false or
self-contradictory (a "Yes" followed by the opposite claim has the rule's yes). Page and filing recall as
``lens bench financebench`` scores them; paired bootstrap (10,000 resamples, seed 42) on the per-question
differences, exact McNemar on correctness.

    .venv/bin/python benchmarks/results/paperqa/financebench_paired.py [RUN ...] [--grades CSV] [--json OUT]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

from harness.bench.metrics import bootstrap_ci, mcnemar_exact

HERE = Path(__file__).parent
SYSTEMS = ("lens", "paperqa")


def load(runs: list[Path]) -> dict[str, dict[str, dict]]:
    rows: dict[str, dict[str, dict]] = {}
    for run in runs:
        with (run / "rows.jsonl").open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                try:
                    r = json.loads(line)
                    system, qid = r["system"], r["question_id"]
                except (json.JSONDecodeError, KeyError) as exc:
                    raise SystemExit(f"{run / 'rows.jsonl'}:{n}: not a run row ({exc})") from None
                if qid in rows.get(system, {}):
                    raise SystemExit(f"{run / 'rows.jsonl'}:{n}: {system} {qid} has a row in another run folder too")
                rows.setdefault(system, {})[qid] = r
    return rows


def hand_grades(path: Path) -> dict[tuple[str, str], bool]:
    grades: dict[tuple[str, str], bool] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        for n, rec in enumerate(csv.DictReader(fh), 2):
            grade = (rec.get("human") or "").strip().lower()
            if grade not in ("correct", "incorrect"):
                raise SystemExit(f"{path}:{n}: field 'human' is {grade!r}; write correct or incorrect")
            grades[(rec["question_id"], rec["system"])] = grade == "correct"
    return grades


def correctness(row: dict, grades: dict[tuple[str, str], bool], strict: bool = False) -> bool | None:
    rule = row["scores"].get("correct_rule")
    hand = grades.get((row["question_id"], row["system"]))
    if rule in ("numeric", "empty") or (rule == "yes_no" and not (strict and hand is not None)):
        return bool(row["scores"]["correct"])
    return hand


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    runs = HERE.parent / "financebench-1.5b"
    ap.add_argument("runs", nargs="*", default=[str(runs / "run"), str(runs / "run-paperqa-22-49")])
    ap.add_argument("--grades", default=str(HERE / "financebench-handgrades.csv"))
    ap.add_argument("--json", help="write the summary here too")
    args = ap.parse_args(argv)
    rows = load([Path(r) for r in args.runs])
    grades = hand_grades(Path(args.grades))
    ids = sorted(set(rows.get("lens", {})) & set(rows.get("paperqa", {})))
    if not ids:
        raise SystemExit(f"{', '.join(args.runs)}: no question has rows of both lens and paperqa")
    out: dict = {"n": len(ids), "systems": {}}
    verdicts = {s: {q: correctness(rows[s][q], grades) for q in ids} for s in SYSTEMS}
    ungraded = sorted({q for s in SYSTEMS for q in ids if verdicts[s][q] is None})
    graded = [q for q in ids if q not in ungraded]
    for s in SYSTEMS:
        rs = [rows[s][q] for q in ids]
        out["systems"][s] = {
            "correct": sum(verdicts[s][q] for q in graded),
            "page_recall": statistics.fmean(r["scores"]["page_recall"] or 0 for r in rs),
            "filing_recall": statistics.fmean(r["scores"]["filing_recall"] or 0 for r in rs),
            "tokens_per_q": statistics.fmean(r["prediction"]["tokens"] for r in rs),
            "calls_per_q": statistics.fmean(r["prediction"]["oracle_calls"] for r in rs),
            "seconds_median": statistics.median(r["prediction"]["seconds"] for r in rs),
        }
    m = mcnemar_exact([verdicts["lens"][q] for q in graded], [verdicts["paperqa"][q] for q in graded])
    strict = {s: {q: correctness(rows[s][q], grades, strict=True) for q in graded} for s in SYSTEMS}
    ms = mcnemar_exact([bool(strict["lens"][q]) for q in graded], [bool(strict["paperqa"][q]) for q in graded])
    out["strict"] = {s: sum(bool(v) for v in strict[s].values()) for s in SYSTEMS}
    out["strict_mcnemar"] = {"lens_only": ms.b, "paperqa_only": ms.c, "both": ms.both, "p": ms.p_value}
    out["correct_graded"] = len(graded)
    out["ungraded"] = ungraded
    out["mcnemar"] = {"lens_only": m.b, "paperqa_only": m.c, "both": m.both, "neither": m.neither, "p": m.p_value}
    for metric in ("page_recall", "filing_recall"):
        diff = [(rows["lens"][q]["scores"][metric] or 0) - (rows["paperqa"][q]["scores"][metric] or 0) for q in ids]
        ci = bootstrap_ci(diff)
        out[f"{metric}_lens_minus_paperqa"] = {"mean": ci.mean, "low": ci.low, "high": ci.high}
    print(f"n = {len(ids)} questions with rows of both arms ({len(graded)} graded for correctness)")
    print("| System | Correct | Page recall | Filing recall | Tokens/q | LLM calls/q | Seconds/q (median) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for s, v in out["systems"].items():
        print(
            f"| {s} | {v['correct']} / {len(graded)} | {100 * v['page_recall']:.1f} | {100 * v['filing_recall']:.1f} "
            f"| {v['tokens_per_q']:,.0f} | {v['calls_per_q']:.1f} | {v['seconds_median']:.0f} |"
        )
    print(f"McNemar on correctness: LENS only {m.b}, PaperQA2 only {m.c}, both {m.both}, p = {m.p_value:.3f}")
    print(
        f"strict (yes/no by hand too): LENS {out['strict']['lens']}, PaperQA2 {out['strict']['paperqa']} of "
        f"{len(graded)}; LENS only {ms.b}, PaperQA2 only {ms.c}, p = {ms.p_value:.3f}"
    )
    for metric in ("page_recall", "filing_recall"):
        d = out[f"{metric}_lens_minus_paperqa"]
        print(f"{metric} LENS − PaperQA2: {100 * d['mean']:+.1f} pp [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]")
    if ungraded:
        print(f"not graded (rule or hand): {', '.join(ungraded)}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
