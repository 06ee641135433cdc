"""The ``bench`` extra: which of its modules are missing, and the command that stands in for a group without them.

``lens bench`` and ``lens audit`` are registered with the ``lens`` command through the ``lens.commands`` entry
point group. Their registration imports only argparse; when the packages of ``pip install 'lens-search[bench]'``
are not installed, the group is registered as one command that says so (for any subcommand and for ``--help``).
"""

from __future__ import annotations

import argparse
import importlib.util
from typing import Callable

from lens import LensError

__all__ = ["BENCH_MODULES", "INSTALL", "missing_modules", "add_group_parser"]

# import names of the extra's packages (pyproject.toml [project.optional-dependencies] bench)
BENCH_MODULES = ("scipy", "bm25s", "Stemmer", "matplotlib", "sklearn", "tqdm", "psutil")
INSTALL = "pip install 'lens-search[bench]'"


def missing_modules() -> list[str]:
    return [m for m in BENCH_MODULES if importlib.util.find_spec(m) is None]


def add_group_parser(
    sub: argparse._SubParsersAction, handler: Callable[[argparse.ArgumentParser, str], None], name: str, help_text: str
) -> argparse._SubParsersAction | None:
    """Register the command group ``lens name`` and return its subcommand registry; without the extra's packages,
    register ``name`` as a command that only explains how to install them, and return None."""
    missing = missing_modules()
    if not missing:
        p = sub.add_parser(name, help=help_text)
        return p.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND", required=True)
    why = f"`lens {name}` needs the bench extra: {INSTALL} (missing: {', '.join(missing)})"
    p = sub.add_parser(name, help=f"{help_text} [needs {INSTALL}]", description=why)
    p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(_missing_extra=why)
    handler(p, "harness.extra:explain")
    return None


def explain(args: argparse.Namespace) -> int:
    raise LensError(args._missing_extra)
