"""PaperQA2 against LENS on FinanceBench, paired on the questions both arms have rows for (issue 61), from the rows
kept in the repo (redacted: ids, scores, pages, cost) and the hand grades beside this script.

A question's correctness: by the rule where the rule grades it (``scores.correct_rule`` "numeric": within 1 % of
the gold figure; "yes_no": the answer's yes or no; "empty": no answer — as for every arm), else by hand (``financebench-handgrades.csv``: the 1.5B judge does not hold for
PaperQA2's sentence answers, as measured on G125). A question graded by neither is listed and left out of the
correctness count. Page and filing recall as ``lens bench financebench`` scores them; paired bootstrap (10,000
resamples, seed 42) on the per-question differences, exact McNemar on correctness.

    .venv/bin/python benchmarks/results/paperqa/financebench_paired.py [RUN] [--grades CSV] [--json OUT]
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


def load(run: Path) -> dict[str, dict[str, dict]]:
    rows: dict[str, dict[str, dict]] = {}
    with (run / "rows.jsonl").open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                r = json.loads(line)
                rows.setdefault(r["system"], {})[r["question_id"]] = r
            except (json.JSONDecodeError, KeyError) as exc:
                raise SystemExit(f"{run / 'rows.jsonl'}:{n}: not a run row ({exc})") from None
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


def correctness(row: dict, grades: dict[tuple[str, str], bool]) -> bool | None:
    if row["scores"].get("correct_rule") in ("numeric", "yes_no", "empty"):
        return bool(row["scores"]["correct"])
    return grades.get((row["question_id"], row["system"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", nargs="?", default=str(HERE.parent / "financebench-1.5b" / "run"))
    ap.add_argument("--grades", default=str(HERE / "financebench-handgrades.csv"))
    ap.add_argument("--json", help="write the summary here too")
    args = ap.parse_args(argv)
    rows = load(Path(args.run))
    grades = hand_grades(Path(args.grades))
    ids = sorted(set(rows.get("lens", {})) & set(rows.get("paperqa", {})))
    if not ids:
        raise SystemExit(f"{args.run}: no question has rows of both lens and paperqa")
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
