"""Handlers of ``lens calibrate run | fit | endpoint``."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Iterable

from harness.calibrate.fit import fit_readings, preset_block
from harness.calibrate.run import READINGS, article_pool, calibrate_readings, done_ids
from harness.calibrate.user_config import check_config_target, write_reading_model
from harness.files import read_id_list, read_jsonl
from lens import LensError
from lens.parts import ReadingModel, atomic_write, config_from_args, title_key, user_config_path

__all__ = ["run", "fit", "endpoint", "read_rows", "write_reading_model"]

DATA = "harness.calibrate.data"
MAX_LOG_RANK = 50.0  # log(1 + rank): beyond e^50 no rank is real (and exp() of it would overflow later)


def _load_questions(path: str | Path) -> list[dict]:
    """HotpotQA questions with supporting facts; a record that lacks a field or holds one of the wrong type is an
    error naming the file, record and field."""
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
        for key in ("_id", "question"):
            if not isinstance(q[key], str) or not q[key].strip():
                raise LensError(f"{path}: record {i}: field {key!r} must be a non-empty string, not {q[key]!r:.60}")
        facts = q["supporting_facts"]
        bad = next((f for f in facts if not _is_fact(f)), None) if isinstance(facts, list) else facts
        if not isinstance(facts, list) or bad is not None:
            raise LensError(
                f"{path}: record {i}: field 'supporting_facts' must be a list of [title, sentence number] pairs "
                f"(found {bad!r:.60})"
            )
    return data


def _is_fact(fact: object) -> bool:
    return (
        isinstance(fact, list)
        and len(fact) == 2
        and isinstance(fact[0], str)
        and isinstance(fact[1], int)
        and not isinstance(fact[1], bool)
        and fact[1] >= 0
    )


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
    for flag, value in (("--limit", args.limit), ("--offset", args.offset)):
        if value is not None and value < 0:
            raise LensError(f"{flag} must be 0 or more (got {value})")
    excluded = set().union(*(read_id_list(p) for p in args.exclude))
    chosen = [q for q in _load_questions(args.questions) if q["_id"] not in excluded]
    pool = article_pool(args.articles)  # checked before any question is read
    if args.require_gold_in_pool:
        titles = {title_key(t) for t in pool[1]}
        chosen = [q for q in chosen if all(title_key(t) in titles for t, _ in q["supporting_facts"])]
    chosen = chosen[args.offset :][: args.limit]
    if not chosen:
        raise LensError("no questions left to calibrate on after --exclude/--offset/--limit")
    before = len(done_ids(args.out))
    written = calibrate_readings(
        config, chosen, args.articles, args.out, windows=args.windows, progress=_progress, pool=pool
    )
    print(f"{written} questions written now, {before} before; rows in {Path(args.out) / READINGS}")
    return 0


def read_rows(paths: Iterable[str]) -> list[dict]:
    """Calibration rows of run folders (or readings.jsonl files), each question once; a torn last line (a crash)
    is skipped, any other malformed line — a field missing or of the wrong type, a feature that is not a finite
    number — is an error naming the file, line and field."""
    rows, seen = [], set()
    for p in paths:
        path = Path(p) / READINGS if Path(p).is_dir() else Path(p)
        for n, row in read_jsonl(path, torn_tail=True):
            _check_row(f"{path}:{n}", row)
            if row["id"] not in seen:
                seen.add(row["id"])
                rows.append(row)
    return rows


def _check_row(where: str, row: dict) -> None:
    """A calibration row as the fit reads it (module ``harness.calibrate.run`` writes them)."""
    for key in ("id", "readings", "model"):
        if key not in row:
            raise LensError(f"{where}: field {key!r} missing")
    for key in ("id", "model"):
        if not isinstance(row[key], str) or not row[key]:
            raise LensError(f"{where}: field {key!r} must be a non-empty string, not {row[key]!r:.60}")
    if not isinstance(row["readings"], list):
        raise LensError(f"{where}: field 'readings' must be a list, not {row['readings']!r:.60}")
    for k, r in enumerate(row["readings"]):
        at = f"{where}: readings[{k}]"
        if not isinstance(r, dict) or not {"features", "label", "logprobs", "found"} <= set(r):
            raise LensError(f"{at}: a reading lacks features, label, logprobs or found")
        if r["label"] not in (0, 1) or not isinstance(r["label"], int):
            raise LensError(f"{at}: field 'label' must be 0 or 1, not {r['label']!r:.60}")
        for key in ("logprobs", "found"):
            if not isinstance(r[key], bool):
                raise LensError(f"{at}: field {key!r} must be true or false, not {r[key]!r:.60}")
        feats = r["features"]
        if not isinstance(feats, dict) or "log_rank" not in feats:
            raise LensError(f"{at}: field 'features' must be an object with 'log_rank', not {feats!r:.60}")
        for name, value in feats.items():
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise LensError(f"{at}: feature {name!r} must be a finite number, not {value!r:.60}")
        if not 0 <= feats["log_rank"] <= MAX_LOG_RANK:
            raise LensError(f"{at}: feature 'log_rank' must be log(1 + rank), not {feats['log_rank']!r}")


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
    if args.folds < 2:
        raise LensError(f"--folds must be 2 or more (got {args.folds}): cross-validation holds out one fold")
    if args.out and Path(args.out).is_dir():
        raise LensError(f"{args.out}: a folder; --out names the file for the fit report")
    rows = read_rows(args.runs)
    if not rows:
        raise LensError("no calibration rows to fit")
    report = _fit_report(rows, args.folds) | {"runs": list(args.runs)}
    if args.out:
        data = (json.dumps(report, indent=2) + "\n").encode("utf-8")
        try:
            atomic_write(args.out, lambda fh: fh.write(data))
        except OSError as exc:
            raise LensError(f"{args.out}: cannot write the fit report ({exc.strerror or exc})") from None
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
