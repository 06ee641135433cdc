"""``lens bench …``: argparse registration only (handlers live in their own modules, imported when run).

Each subcommand has one ``_add_<name>`` function below, called from ``add_bench_parser``; a new subcommand is
one more function and one more line there.
"""

from __future__ import annotations

import argparse
from typing import Callable

__all__ = ["add_bench_parser"]

Handler = Callable[[argparse.ArgumentParser, str], None]


def add_bench_parser(sub: argparse._SubParsersAction, handler: Handler) -> None:
    p = sub.add_parser("bench", help="the dynamic raw-corpus benchmark (HotpotQA G_n / D_n)")
    b_sub = p.add_subparsers(dest="bench_command", metavar="SUBCOMMAND")
    b_sub.required = True
    _add_sample(b_sub, handler)
    _add_snapshot(b_sub, handler)
    _add_score(b_sub, handler)


def _add_sample(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "sample",
        help="draw the frozen stratified nested samples G_n (writes sample.json and G<n>.txt)",
        description="Stratify by type x supporting-fact count, draw one frozen stratum-balanced order "
        "(seeded), cut G_n as its prefixes; print the sample and order hashes and each prefix's maximum "
        "deviation from the population's stratum shares.",
    )
    q.add_argument("--questions", required=True, metavar="FILE", help="official HotpotQA JSON (the population)")
    q.add_argument("--out", required=True, metavar="DIR", help="folder for sample.json and G<n>.txt")
    q.add_argument("--sizes", default="125,250,500", help="nested sample sizes (default 125,250,500)")
    q.add_argument("--seed", type=int, default=42, help="sampling seed (default 42)")
    q.add_argument("--sf-cap", type=int, default=5, help="pool supporting-fact counts >= this (default 5)")
    q.add_argument("--json", action="store_true", help="print the sample summary as JSON")
    handler(q, "harness.bench_commands:sample")


def _add_snapshot(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "snapshot",
        help="build (or verify) the nested raw snapshots D_n: one file per article, manifests, checksums",
        description="Build D_n (gold + context distractors of G_n + background at 3:1) as one extensionless "
        "file per article under DIR/D<n>/ with DIR/D<n>.manifest.json. Existing stages are verified and "
        "kept; growth is append-only. With only --out and --verify, verify an existing build.",
    )
    q.add_argument("--questions", metavar="FILE", help="official HotpotQA JSON (the population)")
    q.add_argument("--articles", metavar="FILE", help="article pool: JSONL, a .bz2 shard, or a folder of shards")
    q.add_argument("--out", required=True, metavar="DIR", help="output folder (D<n>/ and manifests)")
    q.add_argument("--sizes", default="125,250,500", help="nested snapshot sizes (default 125,250,500)")
    q.add_argument("--seed", type=int, default=42, help="sampling and background seed (default 42)")
    q.add_argument("--sf-cap", type=int, default=5, help="pool supporting-fact counts >= this (default 5)")
    q.add_argument("--background-ratio", type=float, default=3.0, help="background : linked (default 3)")
    q.add_argument("--shards", action="store_true", help="also write the articles as .bz2 JSONL shards")
    q.add_argument("--shard-size", type=int, default=500, help="articles per .bz2 shard (default 500)")
    q.add_argument("--verify", action="store_true", help="re-hash every file against the manifests")
    q.add_argument("--json", action="store_true", help="print the summary as JSON")
    handler(q, "harness.bench_commands:snapshot")


def _add_score(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "score",
        help="official HotpotQA EM/F1, supporting-fact and joint scores of a prediction file",
        description='Score a prediction file in the official layout {"answer": {id: text}, "sp": {id: '
        "[[title, sent_id], ...]}} against gold questions. Missing predictions score 0 and are listed.",
    )
    q.add_argument("--gold", required=True, metavar="FILE", help="official HotpotQA JSON with answers")
    q.add_argument("--pred", required=True, metavar="FILE", help="prediction JSON (official layout)")
    q.add_argument("--json", action="store_true", help="print the scores as JSON (fractions in [0, 1])")
    handler(q, "harness.bench_commands:score")
