"""The ``lens`` command line: argparse subcommands whose handlers are imported only when run.

Every handler is named as ``"module:function"`` and receives the parsed namespace; it returns an exit code.
Known failures (``LensError``) become one line on stderr and exit code 2; Ctrl-C exits 130.
Other packages add command groups through the ``lens.commands`` entry point group: each entry point names a
function ``register(subparsers, handler)`` in a light module (argparse only at import), called here in name
order. The benchmark harness registers ``bench`` and ``audit`` that way; the library never imports it.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys
import threading
from importlib.metadata import entry_points
from typing import Callable, Sequence

from lens._errors import LensError
from lens._progress import for_terminal

__all__ = ["main", "build_parser", "add_config_args", "COMMAND_GROUP"]

COMMAND_GROUP = "lens.commands"


def add_config_args(parser: argparse.ArgumentParser) -> None:
    """The configuration flags shared by every command that talks to an LLM."""
    g = parser.add_argument_group("configuration")
    g.add_argument("--preset", help="named preset (fast, deep; default: deep or $LENS_PRESET)")
    g.add_argument("--config", metavar="FILE", help="TOML file overriding the preset (or $LENS_CONFIG)")
    g.add_argument(
        "--set",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="override one setting, e.g. --set budget.max_rounds=4 (repeatable)",
    )
    g.add_argument("--base-url", help="OpenAI-compatible endpoint (default: the embedded local model)")
    g.add_argument("--model", help="model name at the endpoint")


def _handler(parser: argparse.ArgumentParser, target: str) -> None:
    parser.set_defaults(_handler=target)


BUILTIN_COMMANDS = ("ask", "llm", "corpus", "mcp", "serve")


def _needs_groups(argv: Sequence[str] | None) -> bool:
    """False when the command is one of the library's own: then no entry point metadata is scanned at all."""
    args = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in args if not a.startswith("-")), None)
    return first not in BUILTIN_COMMANDS


def build_parser(*, groups: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lens",
        description="Source-grounded answers over folders of raw, changing documents.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (repeatable)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in (_add_ask, _add_llm, _add_corpus, _add_mcp, _add_serve):
        add(sub)
    # command groups of other packages (the harness: bench, audit) register themselves
    if groups:
        for register in _registered_groups():
            register(sub, _handler)
    return parser


def _add_ask(sub) -> None:
    """``lens ask``."""
    p = sub.add_parser("ask", help="answer a question over a folder, with cited evidence")
    p.add_argument("question")
    p.add_argument("path", help="folder of raw documents (read as it is now; never written)")
    p.add_argument("--json", action="store_true", help="print the full result object as JSON")
    p.add_argument("--memory", metavar="DIR", help="warm-reuse memory folder (read and appended)")
    p.add_argument("--no-trace", action="store_true", help="omit the round-by-round trace from --json")
    add_config_args(p)
    _handler(p, "lens.faces._commands:ask")


def _add_llm(sub) -> None:
    """``lens llm check``."""
    p = sub.add_parser("llm", help="LLM backend commands")
    llm_sub = p.add_subparsers(dest="llm_command", metavar="SUBCOMMAND", required=True)
    q = llm_sub.add_parser("check", help="round-trip a short prompt; report backend, model and tokens/s")
    q.add_argument("--json", action="store_true")
    add_config_args(q)
    _handler(q, "lens.faces._commands:llm_check")


def _add_corpus(sub) -> None:
    """``lens corpus stats, lens corpus forget``."""
    p = sub.add_parser("corpus", help="raw-corpus commands")
    c_sub = p.add_subparsers(dest="corpus_command", metavar="SUBCOMMAND", required=True)
    q = c_sub.add_parser("stats", help="files, documents, bytes, skips by reason and read throughput")
    q.add_argument("path")
    q.add_argument("--json", action="store_true")
    q.add_argument("--follow-symlinks", action="store_true", help="follow symlinked folders inside PATH")
    _handler(q, "lens.faces._commands:corpus_stats")
    q = c_sub.add_parser(
        "forget",
        help="drop a folder's statistics (and those of folders inside it) from the statistics store",
        description="Drop the per-file statistics of PATH and of every folder inside it from the statistics store "
        "(reader.stats_store); the folder need not exist. A folder dropped is read again when next asked about.",
    )
    q.add_argument("path")
    q.add_argument("--config", metavar="FILE", help="TOML file naming reader.stats_store (or $LENS_CONFIG)")
    q.add_argument("--set", metavar="KEY=VALUE", action="append", default=[], help="e.g. --set reader.stats_store=FILE")
    _handler(q, "lens.faces._commands:corpus_forget")


def _add_mcp(sub) -> None:
    """``lens mcp``."""
    p = sub.add_parser(
        "mcp",
        help="serve lens to MCP clients over stdio (tools: ask, corpus_stats)",
        description="Serve the ask and corpus_stats tools over the Model Context Protocol (stdio). Only folders "
        "inside the --root folders can be named (symlinks resolved). Needs the mcp extra.",
    )
    p.add_argument(
        "--root",
        action="append",
        metavar="PATH",
        help="a folder clients may ask about (repeatable; default: the working directory)",
    )
    add_config_args(p)
    _handler(p, "lens.faces._mcp:serve")


def _add_serve(sub) -> None:
    """``lens serve``."""
    p = sub.add_parser(
        "serve",
        help="a local web page: ask about a folder, watch the search, open each cited sentence in its document",
        description="Serve a web page to ask about the FOLDERs (only they can be asked about or opened), watch the "
        "search live and open every cited sentence highlighted in its document. Listens on loopback; any other "
        "--host needs the token printed at start. Needs the serve extra (or mcp).",
    )
    p.add_argument(
        "folder", nargs="*", metavar="FOLDER", help="a folder the page may ask about (default: the working directory)"
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; another one needs the token)"
    )
    p.add_argument("--port", type=_port, default=8765, help="port to listen on (default 8765; 0: any free port)")
    p.add_argument("--memory", metavar="DIR", help="warm-reuse memory folder (read and appended; never in a FOLDER)")
    p.add_argument(
        "--history",
        metavar="FILE",
        help="the SQLite file of past questions (default: serve-history.sqlite in the user data folder)",
    )
    add_config_args(p)
    _handler(p, "lens.faces._serve:serve")


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return int(text)


def _registered_groups() -> list[Callable[..., None]]:
    return [ep.load() for ep in sorted(entry_points(group=COMMAND_GROUP), key=lambda ep: ep.name)]


def _resolve(target: str) -> Callable[[argparse.Namespace], int]:
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(groups=_needs_groups(argv))
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")

    restore = _exit_on_sigterm()
    try:
        return int(_resolve(args._handler)(args) or 0)
    except LensError as exc:
        print(f"lens: error: {for_terminal(str(exc))}", file=sys.stderr)  # it may quote a file or an endpoint
        return 2
    except KeyboardInterrupt:
        print("lens: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    finally:
        restore()


def _exit_on_sigterm() -> Callable[[], None]:
    """SIGTERM becomes ``SystemExit(143)``, so ``finally`` blocks run (a bench run records its session, the
    embedded server is shut down) instead of the process dying mid-write. Returns the undo; a no-op off the main
    thread, where Python cannot set handlers."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)

    def restore() -> None:  # only our own handler: one installed since (the embedded server's, which chains) stays
        if signal.getsignal(signal.SIGTERM) is terminate:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)

    return restore


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
