"""FinanceBench run rows without FinanceBench's own text, for the repo, and back (issue 58).

FinanceBench is CC BY-NC evaluation data: its questions, answers and evidence annotations are never copied into
the repo (``../shared/data/financebench/README.md``). A run's rows hold them (the question, the gold answer, the
gold pages, and LENS's decomposition and memory entries repeat the question), so a run is made in a work folder
outside the checkout and the repo keeps what is ours: each row without those fields, every score computed from
them, the judge's verdicts (ids only) and the manifest (ids only). ``restore`` rebuilds rows a run can resume
from, and a report can be made from, out of the kept rows and the data folder — the dropped fields of LENS's
details (its decomposition, requirements and memory entries) are not restored: they stay in the work folder.

  .venv/bin/python benchmarks/financebench_rows.py redact WORK_RUN REPO_RUN --data ../shared/data/financebench
  .venv/bin/python benchmarks/financebench_rows.py restore REPO_RUN WORK_RUN --data ../shared/data/financebench

``redact`` checks its output: no string of a kept row may hold 40 characters of a question of the data, else it
stops naming the row and the field (add the field to ``DETAILS_DROPPED``). (Answers and justifications are not
checked: they quote the filings, whose text the rows rightly hold as the evidence a system read; nor is a
system's answer, which is what a row is for — a model may echo part of its question, as one did.)
The data is read by the harness's loader, so restored fields are the ones a run writes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator

from harness.bench.datasets import DataError
from harness.bench.financebench import load_financebench

__all__ = ["redact_row", "restore_row", "load_questions", "leaks", "main"]

ROW_FIELDS = ("question", "gold_answer", "gold_pages", "question_reasoning")  # FinanceBench's, at the top of a row
DETAILS_DROPPED = (
    "decomposition",
    "requirements",
    "memory_entries",
    "paperqa_answer",
)  # details that repeat the question
CONTEXT_DROPPED = ("summary",)  # the PaperQA2 arm's evidence summaries (details.contexts): they repeat the question
KEPT_AS_IS = ("judge.jsonl", "manifest.json")
SHINGLE = 40  # characters of the data's text that a kept string may not hold


def load_questions(data: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """financebench_id -> the row fields a run writes from it, read by the harness's own loader
    (``harness.bench.financebench.load_financebench``: gold pages 1-based, each once, in the file's order)."""
    try:
        questions, _, _ = load_financebench(data)
    except DataError as exc:
        raise SystemExit(str(exc)) from None
    return {
        q.id: {
            "question": q.question,
            "gold_answer": q.answer,
            "gold_pages": [list(p) for p in q.gold_pages],
            "question_reasoning": q.question_reasoning,
        }
        for q in questions
    }


def redact_row(row: dict[str, Any]) -> dict[str, Any]:
    """The row without FinanceBench's fields and without the details that repeat its question."""
    out = {k: v for k, v in row.items() if k not in ROW_FIELDS}
    pred = out.get("prediction")
    if isinstance(pred, dict) and isinstance(pred.get("details"), dict):
        details = {k: v for k, v in pred["details"].items() if k not in DETAILS_DROPPED}
        if isinstance(details.get("contexts"), list):
            details["contexts"] = [
                {k: v for k, v in c.items() if k not in CONTEXT_DROPPED} if isinstance(c, dict) else c
                for c in details["contexts"]
            ]
        out["prediction"] = {**pred, "details": details}
    return out


def restore_row(row: dict[str, Any], questions: dict[str, dict[str, Any]], where: str) -> dict[str, Any]:
    """A kept row with FinanceBench's fields again (from the data)."""
    q = questions.get(row.get("question_id", ""))
    if q is None:
        raise SystemExit(f"{where}: field 'question_id' {row.get('question_id')!r} is not in the data")
    return {**row, **{k: q[k] for k in ROW_FIELDS}}


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


def leaks(row: dict[str, Any], shingles: set[str]) -> list[str]:
    """The fields of ``row`` holding one of ``shingles`` (windows of the data's text)."""
    out = []
    for path, s in _strings(row, ""):
        if path == ".prediction.answer":
            continue
        if len(s) >= SHINGLE and any(s[i : i + SHINGLE] in shingles for i in range(len(s) - SHINGLE + 1)):
            out.append(path)
    return out


def _shingles(questions: dict[str, dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for q in questions.values():
        text = q["question"]
        out.update(text[i : i + SHINGLE] for i in range(0, max(0, len(text) - SHINGLE + 1)))
    return out


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield n, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise SystemExit(f"{path}:{n}: not a JSON row ({exc})") from None


def _write(src: Path, dst: Path, rows: list[dict[str, Any]]) -> int:
    """``rows`` as ``dst``'s rows.jsonl (replaced whole), with ``src``'s judge verdicts and manifest beside them."""
    dst.mkdir(parents=True, exist_ok=True)
    tmp = dst / "rows.jsonl.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n")
    os.replace(tmp, dst / "rows.jsonl")
    for name in KEPT_AS_IS:
        if (src / name).is_file():
            shutil.copyfile(src / name, dst / name)
    return len(rows)


def redact(src: Path, dst: Path, data: Path) -> int:
    questions = load_questions(data)
    shingles = _shingles(questions)
    kept = []
    for n, row in _rows(src / "rows.jsonl"):
        out = redact_row(row)
        bad = leaks(out, shingles)
        if bad:
            raise SystemExit(f"{src / 'rows.jsonl'}:{n}: FinanceBench text left in {', '.join(bad[:5])}")
        kept.append(out)
    return _write(src, dst, kept)


def restore(src: Path, dst: Path, data: Path) -> int:
    questions = load_questions(data)
    return _write(
        src, dst, [restore_row(r, questions, f"{src / 'rows.jsonl'}:{n}") for n, r in _rows(src / "rows.jsonl")]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=("redact", "restore"))
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--data", required=True, help="the FinanceBench folder (questions.jsonl)")
    a = ap.parse_args(argv)
    n = (redact if a.action == "redact" else restore)(Path(a.src), Path(a.dst), Path(a.data))
    print(f"{a.action}: {n} rows {a.src} -> {a.dst}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
