"""What the MCP server adds to an answer: ``lens ask`` (a fresh CLI process per question) vs ``lens mcp`` driven by
the MCP SDK's client over stdio, same question, same folder, same endpoint, alternated in one run.

    python benchmarks/mcp_overhead.py --repeats 5                       # the scripted loopback endpoint
    python benchmarks/mcp_overhead.py --base-url http://127.0.0.1:PORT/v1 --model NAME --repeats 1   # a real one

With no ``--base-url`` the endpoint is the tests' scripted OpenAI-compatible server on a loopback port (replies
built from the prompt, no model), so the timings are lens's own work plus process start and transport. Reported
per variant (medians): wall seconds per question; for MCP the cold call (server start, handshake, first ask) and
warm calls (later asks in the same session, the agent already built); and the agent's own seconds
(``cost.seconds``), so wall − agent is the overhead of each way in. ``--transcript FILE`` writes the last MCP
call's request and result (JSON).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Which is taller, Calder Point Light or Skerrow Light?"


def _sets(extra: list[str]) -> list[str]:
    return [a for kv in ["llm.cache=false", *extra] for a in ("--set", kv)]


def _cli(question: str, folder: Path, base_url: str, model: str, extra: list[str]) -> tuple[float, dict]:
    argv = [sys.executable, "-m", "lens.faces._cli", "ask", question, str(folder), "--json", "--no-trace"]
    argv += ["--base-url", base_url, "--model", model, *_sets(extra)]
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, check=True, env={**os.environ})
    return time.perf_counter() - t0, json.loads(p.stdout)


async def _mcp(
    question: str, folder: Path, base_url: str, model: str, calls: int, extra: list[str]
) -> tuple[float, list, list]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lens.faces._cli", "mcp", "--root", str(folder), "--base-url", base_url, "--model", model]
        + _sets(extra),
        env={k: v for k, v in os.environ.items() if k in ("OPENAI_API_KEY", "LENS_API_KEY", "PYTHONPATH")},
    )
    walls, results = [], []
    t0 = time.perf_counter()
    async with Client(params) as client:
        connected = time.perf_counter() - t0
        for _ in range(calls):
            t = time.perf_counter()
            r = await client.call_tool("ask", {"question": question, "path": str(folder)})
            walls.append(time.perf_counter() - t)
            results.append(r.structured_content or json.loads(r.content[0].text))
    return connected, walls, results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folder", default=str(ROOT / "corpora" / "demo"))
    ap.add_argument("--question", default=QUESTION)
    ap.add_argument("--base-url", help="a real OpenAI-compatible endpoint (default: the scripted loopback one)")
    ap.add_argument("--model", default="test-model")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warm-calls", type=int, default=3, help="asks per MCP session (the first is the cold one)")
    ap.add_argument("--transcript", metavar="FILE")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="configuration override")
    ap.add_argument("--skip-cli", action="store_true", help="only the MCP calls (e.g. for a transcript)")
    ap.add_argument("--out", metavar="FILE", help="write the summary (JSON)")
    args = ap.parse_args(argv)
    folder = Path(args.folder).resolve()
    os.environ.setdefault("OPENAI_API_KEY", "bench-key")

    stub = None
    base_url = args.base_url
    if base_url is None:
        sys.path.insert(0, str(ROOT))
        from tests.harness.systems.scripted_llm import Responder, StubServer

        stub = StubServer(Responder()).__enter__()
        base_url = stub.base_url
    cli_wall, cli_agent, cold, connect, warm, warm_over, mcp_agent = [], [], [], [], [], [], []
    last: dict = {}
    try:
        for _ in range(args.repeats):  # alternated: the host's state affects both alike
            if not args.skip_cli:
                w, res = _cli(args.question, folder, base_url, args.model, args.set)
                cli_wall.append(w)
                cli_agent.append(res["cost"]["seconds"])
            c, walls, results = asyncio.run(
                _mcp(args.question, folder, base_url, args.model, args.warm_calls, args.set)
            )
            connect.append(c)
            cold.append(c + walls[0])
            warm += walls[1:]
            warm_over += [w - r["cost"]["seconds"] for w, r in zip(walls[1:], results[1:])]
            mcp_agent += [r["cost"]["seconds"] for r in results]
            last = results[-1]
    finally:
        if stub is not None:
            stub.__exit__(None, None, None)

    def med(xs: list[float]) -> float | None:
        return round(statistics.median(xs), 3) if xs else None

    summary = {
        "endpoint": "scripted loopback" if args.base_url is None else args.base_url,
        "model": args.model,
        "question": args.question,
        "folder": str(folder),
        "repeats": args.repeats,
        "cli_wall_s": med(cli_wall),
        "cli_agent_s": med(cli_agent),
        "cli_overhead_s": med([w - a for w, a in zip(cli_wall, cli_agent)]),
        "mcp_connect_s": med(connect),
        "mcp_cold_call_s": med(cold),
        "mcp_warm_call_s": med(warm),
        "mcp_agent_s": med(mcp_agent),
        "mcp_warm_overhead_s": med(warm_over),
        "answer": last.get("answer"),
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if args.transcript:
        Path(args.transcript).write_text(
            json.dumps(
                {"tool": "ask", "arguments": {"question": args.question, "path": str(folder)}, "result": last},
                indent=2,
                ensure_ascii=False,
            )
            + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
