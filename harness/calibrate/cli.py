"""``lens calibrate …``: argparse registration only (handlers in ``harness.calibrate.commands``)."""

from __future__ import annotations

import argparse
from typing import Callable

from harness.options import add_options
from lens.parts import add_config_args

__all__ = ["add_calibrate_parser"]

Handler = Callable[[argparse.ArgumentParser, str], None]


def add_calibrate_parser(sub: argparse._SubParsersAction, handler: Handler) -> None:
    p = sub.add_parser("calibrate", help="calibrate what a reading of the served model is worth (run, fit, endpoint)")
    c_sub = p.add_subparsers(dest="calibrate_command", metavar="{endpoint,run,fit}", required=True)

    q = c_sub.add_parser(
        "endpoint",
        help="calibrate the configured endpoint's model on the shipped calibration set and save its reading model",
        description="Read the shipped calibration set (123 HotpotQA questions set aside from every evaluation, "
        "1,229 articles) with the configured model, fit its reading model, and write the table "
        '[loop.reading_model."<model>"] to the user config (or --write-config FILE). Resumable: rerun with the '
        "same --out after a stop.",
    )
    q.add_argument("--out", metavar="DIR", help="folder for readings.jsonl and fit.json (default: a cache folder)")
    q.add_argument("--write-config", metavar="FILE", help="the TOML file to write the table to (default: user config)")
    add_options(q, "--windows")
    q.add_argument("--limit", type=int, default=None, help="use only the first N questions (a quick check)")
    add_config_args(q)
    handler(q, "harness.calibrate.commands:endpoint")

    q = c_sub.add_parser(
        "run",
        help="read labelled questions as the loop does and record every reading with its window label",
        description="For HotpotQA questions over an article pool: the agent's decomposition, prior and reading "
        "of each requirement's best candidate windows; one row of labelled readings per question is appended to "
        "OUT/readings.jsonl (resumed if it exists).",
    )
    q.add_argument("--questions", required=True, metavar="FILE", help="HotpotQA JSON with supporting_facts")
    q.add_argument("--articles", required=True, metavar="FILE", help="Wikipedia abstracts JSONL (title, sentences)")
    q.add_argument("--out", required=True, metavar="DIR", help="folder for readings.jsonl (resumed if it exists)")
    q.add_argument("--limit", type=int, default=None, help="questions to use (default: all)")
    q.add_argument("--offset", type=int, default=0, help="skip this many questions first")
    add_options(q, "--windows", "--exclude")
    q.add_argument(
        "--require-gold-in-pool",
        action="store_true",
        help="use only questions whose supporting articles are all in --articles",
    )
    add_config_args(q)
    handler(q, "harness.calibrate.commands:run")

    q = c_sub.add_parser(
        "fit",
        help="fit the reading model on calibration rows; print the report and the config table",
        description="Fit the reading model (what a reading adds beyond the prior rank, penalty by held-out log "
        "loss) on the rows of one or more calibration runs of one model; report nested cross-validated log loss, "
        "AUC, reliability and LR+/LR-, and the [loop.reading_model] table.",
    )
    q.add_argument("runs", nargs="+", metavar="RUN", help="calibration run folders (or readings.jsonl files)")
    q.add_argument("--folds", type=int, default=5, help="cross-validation folds, by question (default 5)")
    q.add_argument("--out", metavar="FILE", help="write the fit report (JSON) here")
    add_options(q, "--json")
    handler(q, "harness.calibrate.commands:fit")
