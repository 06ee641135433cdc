"""``lens audit …``: argparse registration only (handlers live in their own modules, imported when run)."""

from __future__ import annotations

import argparse
from typing import Callable

__all__ = ["add_audit_parser"]


def add_audit_parser(sub: argparse._SubParsersAction, handler: Callable[[argparse.ArgumentParser, str], None]) -> None:
    p = sub.add_parser("audit", help="point-in-time (PIT) replay audit of retrieval memory")
    a_sub = p.add_subparsers(dest="audit_command", metavar="SUBCOMMAND")
    a_sub.required = True
