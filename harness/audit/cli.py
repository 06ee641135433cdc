"""``lens audit …``: argparse registration only (handlers live in their own modules, imported when run)."""

from __future__ import annotations

import argparse
from typing import Callable

from harness.extra import add_group_parser

__all__ = ["add_audit_parser"]


_HELP = "point-in-time (PIT) replay audit of retrieval memory"


def add_audit_parser(sub: argparse._SubParsersAction, handler: Callable[[argparse.ArgumentParser, str], None]) -> None:
    a_sub = add_group_parser(sub, handler, "audit", _HELP)
    if a_sub is None:
        return

    q = a_sub.add_parser(
        "run",
        help="replay Stateless/PIT/Future-h/Future/Naive for a config; report only if the contract passes",
        description="Run the PIT audit design of a config (file or packaged preset: audit-small, audit-tatqa, "
        "audit-hotpotqa; audit-lens and audit-lens-full audit the LENS warm-reuse memory of a `lens bench run`, "
        "audit-lens-stream that of a `lens bench stream` run). "
        "Relative data paths resolve against --data-root, else $LENS_DATA_ROOT, else the "
        "current directory. Exit 0: rows, manifest and report written; 1: the run fails the replay contract "
        "(rows and manifest kept, no report); 2: bad input.",
    )
    q.add_argument("--config", required=True, metavar="FILE", help="audit config TOML, or a preset name")
    q.add_argument("--out", required=True, metavar="RUN_DIR", help="new folder for the run (never overwritten)")
    q.add_argument("--data-root", metavar="DIR", help="where relative data paths in the config start")
    q.add_argument("--cache", metavar="DIR", help="reusable cache of base lists and embeddings (default RUN_DIR/cache)")
    q.add_argument(
        "--lens-run", metavar="RUN_DIR", help="lens-memory configs: the `lens bench run` folder (its lens rows)"
    )
    q.add_argument(
        "--snapshot", metavar="DIR", help="lens-memory configs: the folder the prior reads (the run's snapshot)"
    )
    q.add_argument(
        "--questions", metavar="FILE", help="lens-memory configs: the HotpotQA questions file the run was bound to"
    )
    q.add_argument(
        "--workload",
        metavar="DIR",
        help="lens-memory configs over a `lens bench stream` run: its BEIR workload (instead of --questions)",
    )
    q.add_argument("--json", action="store_true", help="print a JSON summary")
    q.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    handler(q, "harness.audit.commands:run")

    q = a_sub.add_parser("check", help="verify a run against the replay contract (non-zero exit naming each violation)")
    q.add_argument("run_dir", metavar="RUN_DIR")
    q.add_argument(
        "--data-root",
        metavar="DIR",
        help="where the config's relative data paths start (default: the run's); the labels are read again from there",
    )
    q.add_argument("--json", action="store_true", help="print violations as JSON")
    handler(q, "harness.audit.commands:check")

    q = a_sub.add_parser("report", help="(re)build the tables and plots of a run that passes the contract")
    q.add_argument("run_dir", metavar="RUN_DIR")
    q.add_argument("--resamples", type=int, help="bootstrap resamples (default: the run's config)")
    q.add_argument("--seed", type=int, help="bootstrap seed (default: the run's config)")
    handler(q, "harness.audit.commands:report")
