"""Handlers of the library's own CLI commands (``ask``, ``llm check``, ``corpus stats``, ``corpus forget``,
``calibrate``)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

from lens._agent import Agent
from lens._config import ReaderSettings, config_from_args
from lens._errors import LensError
from lens._files import is_inside
from lens._progress import Progress, TerminalProgress, for_terminal
from lens._result import STATUS_WORDS, AskResult
from lens.llm._llm import open_client
from lens.loop._stop import Stop, StopReason
from lens.memory._memory import MemoryStore
from lens.reader._corpus import scan_corpus
from lens.reader._filestats import forget_folder

__all__ = ["ask", "llm_check", "corpus_stats", "corpus_forget", "cost_line", "best_effort_reason", "stop_words"]


def _print_json(obj: object) -> None:
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


# --------------------------------------------------------------------------- llm check

_PROMPT_PROBE = "Read the following notes and reply with the single word OK.\n\n" + " ".join(
    f"Note {i}: the archive in room {i} holds {i * 3} boxes of letters sorted by year and sender." for i in range(1, 25)
)


def llm_check(args: argparse.Namespace) -> int:
    """Backend, model, a short round-trip answer, prompt and generation tokens/s (uncached calls)."""
    config = config_from_args(args, **{"llm.cache": "false"})
    t0 = time.monotonic()
    client = open_client(config)
    ready_s = time.monotonic() - t0
    answer = client.chat(
        [{"role": "user", "content": "What is the capital of France? Answer with one word."}], max_tokens=8
    )
    # prompt throughput: a long prompt, one generated token
    probe = client.chat([{"role": "user", "content": _PROMPT_PROBE}], max_tokens=1)
    prompt_tps = probe.prompt_tokens / probe.seconds if probe.seconds > 0 else 0.0
    # generation throughput: a short prompt, many generated tokens, minus the prompt time
    gen = client.chat(
        [{"role": "user", "content": "Count from 1 to 60, separated by spaces."}], max_tokens=96, temperature=0.0
    )
    gen_time = max(gen.seconds - gen.prompt_tokens / prompt_tps if prompt_tps else gen.seconds, 1e-6)
    gen_tps = gen.completion_tokens / gen_time
    report = {
        "backend": client.backend,
        "base_url": client.base_url if config.llm.base_url else "embedded (loopback)",
        "model": client.model,
        "runtime": client.runtime or None,  # embedded: runtime, version, llama.cpp system_info (CPU features used)
        "config_hash": config.canonical_hash(),
        "ready_seconds": round(ready_s, 2),
        "answer": answer.text.strip(),
        "answer_seconds": round(answer.seconds, 3),
        "prompt_tokens_per_s": round(prompt_tps, 1),
        "generation_tokens_per_s": round(gen_tps, 1),
        "probe": {
            "prompt_tokens": probe.prompt_tokens,
            "prompt_seconds": round(probe.seconds, 3),
            "generated_tokens": gen.completion_tokens,
            "generation_seconds": round(gen.seconds, 3),
        },
    }
    client.close()
    if args.json:
        _print_json(report)
    else:
        print(f"backend     {report['backend']}")
        print(f"model       {report['model']}")
        if client.runtime:
            rt = client.runtime
            print(f"runtime     {rt.get('runtime', '?')} {rt.get('version', '')}".rstrip())
            print(f"cpu         {rt.get('system_info', '?')}")
        print(f"ready in    {report['ready_seconds']} s")
        print(f"answer      {report['answer']!r} ({report['answer_seconds']} s)")
        print(f"prompt      {report['prompt_tokens_per_s']} tok/s ({probe.prompt_tokens} tokens)")
        print(f"generation  {report['generation_tokens_per_s']} tok/s ({gen.completion_tokens} tokens)")
    return 0


# --------------------------------------------------------------------------- corpus stats


def corpus_stats(args: argparse.Namespace) -> int:
    scan = scan_corpus(args.path, ReaderSettings(follow_symlinks=args.follow_symlinks))
    stats = scan.stats() | {"formats": scan.formats(), "extract_seconds": round(scan.extract_seconds, 3)}
    if args.json:
        _print_json(stats)
        return 0
    print(f"folder      {stats['root']}")
    print(f"files       {stats['files']:,}")
    print(f"documents   {stats['documents']:,}")
    print(f"bytes       {stats['bytes']:,}")
    print(f"read        {stats['seconds']:.3f} s  ({stats['mb_per_s']:.1f} MB/s)")
    for name, n in stats["formats"].items():  # documents read through the table of formats
        units = "pages" if name == "PDF" else "units"
        print(f"  {name:<10}{n['files']:,} files, {n['units']:,} {units}")
    if stats["formats"]:
        print(f"extraction  {stats['extract_seconds']:.3f} s, summed over files (isolated workers, in parallel)")
    skipped = stats["skipped"]
    print("skipped     " + (", ".join(f"{k} {v}" for k, v in skipped.items()) if skipped else "none"))
    if stats["bad_encoding"]:
        print(
            f"encoding    {stats['bad_encoding']:,} files with invalid UTF-8 (read with U+FFFD in place of bad bytes)"
        )
    for line in stats["problems"][:10]:
        print(f"  {line}")
    if len(scan.problems) > 10:
        print(f"  … {len(scan.problems) - 10} more")
    return 0


def corpus_forget(args: argparse.Namespace) -> int:
    store, folders, files, notes = forget_folder(args.path, config_from_args(args).reader)
    for note in notes:
        print(f"Note: {for_terminal(note)}")
    if folders:
        print(for_terminal(f"forgot {folders} folder{'s' * (folders > 1)} ({files:,} files) in {store}"))
    else:
        print(for_terminal(f"no statistics of {args.path} in {store}"))
    return 0


# --------------------------------------------------------------------------- ask


def ask(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    memory = None
    if args.memory:
        mem_dir = Path(args.memory)
        if is_inside(mem_dir, args.path):
            raise LensError(f"--memory {mem_dir}: inside the document folder {args.path}; lens never writes there")
        memory = MemoryStore(mem_dir, capacity=cfg.memory.capacity, min_similarity=cfg.memory.min_similarity)
    # progress on a terminal only (stderr a TTY, not --json); the last snapshot is kept for an interrupted run
    terminal = TerminalProgress(sys.stderr) if sys.stderr.isatty() and not args.json else None
    last: list[Progress] = []

    def watch(p: Progress) -> None:
        last[:] = [p]
        if terminal is not None:
            terminal(p)

    agent = Agent(cfg, memory=memory, progress=watch)
    t0 = time.monotonic()
    try:
        with terminal if terminal is not None else contextlib.nullcontext():
            result = agent.ask(args.question, args.path)
    except KeyboardInterrupt:
        if last:  # what the interrupted question had spent when its last stage started
            p = last[0]
            print(
                f"lens: stopped during {p.stage}"
                + (f" (round {p.round}/{p.max_rounds})" if p.stage == "round" else "")
                + f"; {p.oracle_calls} oracle calls and {p.tokens:,} tokens spent before it, "
                f"{time.monotonic() - t0:.1f} s in all",
                file=sys.stderr,
            )
        raise
    if args.json:
        sys.stdout.write(result.to_json(trace=not args.no_trace) + "\n")
        return 0

    def say(line: str) -> None:  # document text, the model's answer and file names: never terminal commands
        print(for_terminal(line))

    flag = "  (best effort: " + best_effort_reason(result) + ")" if result.best_effort else ""
    say(f"Answer: {result.answer or '(no answer found)'}{flag}")
    say("Facts:")
    for r in result.requirements:
        value = f" → {r.value}" if r.value else ""
        cited = " ".join(f"[{e}]" for e in r.evidence)
        say(f"  {r.id} {REQUIREMENT_WORDS.get(r.status, r.status)}: {r.text}{value}  {cited}".rstrip())
    if result.evidence:
        say("Evidence:")
        for e in result.evidence:
            text = f'"{e.sentence_text}"' if e.sentence_text else e.text
            snippet = text if len(text) <= 160 else text[:157] + "..."
            reqs = ",".join(e.requirements) or "-"
            say(f"  [{e.id}] {e.citation}  ({STATUS_WORDS.get(e.status, e.status)}; {reqs})  {snippet}")
    say(f"Cost: {cost_line(result)}")
    skipped = ", ".join(f"{n} {reason}" for reason, n in (result.corpus.get("skipped") or {}).items())
    bad = result.corpus.get("bad_encoding") or 0
    if skipped or bad:
        extra = f" · {bad} files with invalid UTF-8 read with U+FFFD" if bad else ""
        say(f"Skipped: {skipped or 'none'}{extra}")
    for note in result.notes:
        say(f"Note: {note}")
    return 0


# what each requirement status means, in the words `lens ask` prints
REQUIREMENT_WORDS = {
    "certified": "read and confirmed",
    "covered": "stated in the evidence",
    "unresolved": "not settled",
}


_STOP_WORDS = {
    StopReason.CERTIFIED: "stopped: every fact read and confirmed",
    StopReason.FUTILE: "stopped: more reading could not settle it within the budget",
    StopReason.UNINFORMATIVE: "stopped: no reading left was likely to change what the evidence is",
    StopReason.CANDIDATES: "stopped: nothing left to read",
    StopReason.LLM_ERROR: "stopped: llm-error",
    StopReason.NO_EXPLORATION: "no reading (no-exploration)",
}


def stop_words(reason: str) -> str:
    """Why the reading stopped, in words (the machine form is ``AskResult.stop_reason``)."""
    words = []
    stop: Stop | None = Stop.parse(reason)
    while stop is not None:
        budget = f"stopped: budget spent ({stop.detail})"
        words.append(budget if stop.reason is StopReason.BUDGET else _STOP_WORDS[stop.reason])
        stop = stop.reentry
    return "; ".join(words)


def cost_line(result: AskResult) -> str:
    """What the answer cost and why the reading stopped, in words (``lens ask``'s ``Cost:`` line, the page's)."""
    c = result.cost
    failed = f"; {c.failed_calls} failed requests, {c.retries} retried" if c.failed_calls else ""
    return (
        f"{c.oracle_calls} oracle calls ({c.cache_hits} cached, bound {c.max_oracle_calls}{failed}), "
        f"{c.tokens:,} tokens ({c.prompt_tokens:,} prompt + {c.completion_tokens:,} completion), "
        f"{c.seconds:.1f} s, {c.rounds} rounds · {stop_words(result.stop_reason)} · model {result.model}"
    )


def best_effort_reason(result: AskResult) -> str:
    """Why a best-effort answer is one: the facts not settled, else why the reading stopped."""
    unresolved = [r.id for r in result.requirements if r.status == "unresolved"]
    if unresolved:
        return "not settled: " + ", ".join(unresolved)
    return stop_words(result.stop_reason)
