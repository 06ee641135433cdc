"""``lens bench …``: argparse registration only (handlers live in their own modules, imported when run)."""

from __future__ import annotations

import argparse
from typing import Callable

__all__ = ["add_bench_parser"]


def add_bench_parser(sub: argparse._SubParsersAction, handler: Callable[[argparse.ArgumentParser, str], None]) -> None:
    p = sub.add_parser("bench", help="the dynamic raw-corpus benchmark (HotpotQA G_n / D_n)")
    b_sub = p.add_subparsers(dest="bench_command", metavar="SUBCOMMAND")
    b_sub.required = True
