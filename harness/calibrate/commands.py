"""Handlers of ``lens calibrate run | fit | endpoint``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Iterable

from harness.calibrate.fit import fit_readings, preset_block
from harness.calibrate.run import READINGS, calibrate_readings, done_ids
from harness.calibrate.user_config import check_config_target, write_reading_model
from harness.files import read_id_list, read_jsonl
from lens import LensError, config_from_args
from lens.parts import ReadingModel, atomic_write, title_key, user_config_path

__all__ = ["run", "fit", "endpoint", "read_rows", "write_reading_model"]

DATA = "harness.calibrate.data"


def _load_questions(path: str | Path) -> list[dict]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LensError(f"{path}: cannot read questions ({exc})") from None
    if not isinstance(data, list):
        raise LensError(f"{path}: expected a JSON list of questions")
    for i, q in enumerate(data):
        for key in ("_id", "question", "supporting_facts"):
            if not isinstance(q, dict) or key not in q:
                raise LensError(f"{path}: record {i}: field {key!r} missing")
    return data


def _progress(i: int, n: int, row: dict) -> None:
    rd = row["readings"]
    print(
        f"  {i}/{n} {row['id']}: {len(rd)} readings, {sum(r['found'] for r in rd)} named a sentence, "
        f"{sum(r['label'] for r in rd)} in evidence windows, {row['seconds']} s",
        file=sys.stderr,
        flush=True,
    )


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    excluded = set().union(*(read_id_list(p) for p in args.exclude))
    chosen = [q for q in _load_questions(args.questions) if q["_id"] not in excluded]
    if args.require_gold_in_pool:
        with open(args.articles, encoding="utf-8") as fh:
            pool = {title_key(json.loads(line)["title"]) for line in fh if line.strip()}
        chosen = [q for q in chosen if all(title_key(t) in pool for t, _ in q["supporting_facts"])]
    chosen = chosen[args.offset :][: args.limit]
    if not chosen:
        raise LensError("no questions left to calibrate on after --exclude/--offset/--limit")
    before = len(done_ids(args.out))
    written = calibrate_readings(config, chosen, args.articles, args.out, windows=args.windows, progress=_progress)
    print(f"{written} questions written now, {before} before; rows in {Path(args.out) / READINGS}")
    return 0


def read_rows(paths: Iterable[str]) -> list[dict]:
    """Calibration rows of run folders (or readings.jsonl files), each question once; a torn last line (a crash)
    is skipped, any other malformed line is an error naming it."""
    rows, seen = [], set()
    for p in paths:
        path = Path(p) / READINGS if Path(p).is_dir() else Path(p)
        for n, row in read_jsonl(path, torn_tail=True):
            for key in ("id", "readings", "model"):
                if key not in row:
                    raise LensError(f"{path}:{n}: field {key!r} missing")
            for r in row["readings"]:
                if not {"features", "label", "logprobs", "found"} <= set(r):
                    raise LensError(f"{path}:{n}: a reading lacks features, label, logprobs or found")
            if row["id"] not in seen:
                seen.add(row["id"])
                rows.append(row)
    return rows


def _fit_report(rows: list[dict], folds: int) -> dict:
    models = {row.get("model") for row in rows}
    if len(models) > 1:
        raise LensError(f"calibration rows of more than one model: {sorted(map(str, models))}")
    return fit_readings(rows, folds=folds)


def _print_report(report: dict) -> None:
    cv = report["cross_validated"]
    print(
        f"model {report['model']}: {report['questions']} questions, {report['readings']} readings "
        f"({report['positives']} in evidence windows, {report['found']} named a sentence, {report['with_logprobs']} "
        f"with log-probabilities); {report['folds']}-fold cross-validation by question; penalty {report['l2']} "
        f"(chosen in the folds: {report['l2_chosen_in_folds']})"
    )
    print(
        f"  held-out log loss: rank only {cv['log_loss']['base']} → with the reading {cv['log_loss']['model']}; "
        f"AUC {cv['base_auc']} → {cv['model_auc']}; AUC of the reading's log LR alone {cv['lr_auc']} "
        "(by rank: " + ", ".join(f"{k} {v['lr_auc']} (n {v['n']})" for k, v in cv["lr_auc_by_rank"].items()) + ")"
    )
    for name, op in cv["operating_points"].items():
        print(f"  {name}: tpr {op['tpr']}, fpr {op['fpr']}, LR {op['LR']}")
    print("  reliability (bin: n, predicted, observed):")
    for b in cv["reliability"]:
        print(f"    {b['bin']}: {b['n']}, {b['predicted']}, {b['observed']}")
    c = report["citations"]
    print(
        f"  citations: {c['supporting']}/{c['named_in_evidence_windows']} named sentences in evidence windows support"
    )
    print(f"  largest |log LR| of one reading: {report['max_abs_log_lr']}")


def fit(args: argparse.Namespace) -> int:
    rows = read_rows(args.runs)
    if not rows:
        raise LensError("no calibration rows to fit")
    report = _fit_report(rows, args.folds) | {"runs": list(args.runs)}
    if args.out:
        data = (json.dumps(report, indent=2) + "\n").encode("utf-8")
        atomic_write(args.out, lambda fh: fh.write(data))
    if args.json:
        json.dump({k: v for k, v in report.items() if k != "question_ids"}, sys.stdout, indent=2)
        print()
        return 0
    _print_report(report)
    print("the config table:")
    print(preset_block(report))
    return 0


def endpoint(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    model = config.llm.served_model
    out = Path(args.out) if args.out else Path(user_config_path() or ".").parent / "calibration" / model
    target = Path(args.write_config) if args.write_config else user_config_path()
    if target is None:
        raise LensError("no user config file (LENS_USER_CONFIG is empty): name one with --write-config FILE")
    check_config_target(target)  # before the work, not after it
    data = resources.files(DATA)
    questions = json.loads(data.joinpath("questions.json").read_text(encoding="utf-8"))[: args.limit]
    with resources.as_file(data.joinpath("articles.jsonl")) as articles:
        t0 = time.monotonic()
        written = calibrate_readings(
            config, questions, str(articles), str(out), windows=args.windows, progress=_progress
        )
    rows = read_rows([str(out)])
    report = _fit_report(rows, 5) | {"runs": [str(out)], "seconds": round(time.monotonic() - t0, 1)}
    atomic_write(out / "fit.json", lambda fh: fh.write((json.dumps(report, indent=2) + "\n").encode("utf-8")))
    _print_report(report)
    ReadingModel.model_validate(report["reading_model"])
    write_reading_model(target, str(report["model"]), report["reading_model"])
    print(f"{written} questions read now ({len(rows)} in all, {out}); the reading model of {model} is in {target}")
    return 0
