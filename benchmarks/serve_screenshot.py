"""The page of ``lens serve`` after a real answer: a screenshot, and the time from submit to the first progress event
and to the answer, next to ``lens ask`` for the same question over the same folder and endpoint.

    python benchmarks/serve_screenshot.py                                   # the embedded model (lens starts it)
    python benchmarks/serve_screenshot.py --base-url http://127.0.0.1:PORT/v1 --model NAME
    python benchmarks/serve_screenshot.py --base-url … --no-ask             # the page alone

It starts ``lens serve corpora/demo`` (a history of its own in a temporary folder), opens the page in Debian's
Chromium through Playwright (``--chromium``; the dev extra installs Playwright, ``.ci/run`` the browser), asks
the README's demo question, waits for the answer, opens its first citation (the document view, the cited
sentence marked) and saves a full-page PNG (``--out``). With the embedded model, the first question also starts
the model; ``--warmup`` asks once before the timed question so both timings are of a warm model. Then, unless
``--no-ask``, it times ``lens ask`` with the same configuration (a fresh process: its time includes starting the
embedded model, which ``--warmup`` does not remove; compare with that in mind). The response cache is off.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Which is taller, Calder Point Light or Skerrow Light?"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _config(args: argparse.Namespace) -> list[str]:
    out = ["--set", "llm.cache=false"]
    for kv in args.set:
        out += ["--set", kv]
    if args.base_url:
        out += ["--base-url", args.base_url]
    if args.model:
        out += ["--model", args.model]
    return out


def _start(args: argparse.Namespace, tmp: Path) -> tuple[subprocess.Popen, str]:
    argv = [sys.executable, "-m", "lens.faces._cli", "serve", str(args.folder), "--port", "0"]
    argv += ["--history", str(tmp / "history.sqlite"), *_config(args)]
    log = open(tmp / "serve.log", "w")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, env={**os.environ})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            m = re.match(r"lens serve: (http://\S+)", proc.stdout.readline())
            if m:
                port = m.group(1).split(":")[2].split("/")[0]
                return proc, f"http://127.0.0.1:{port}/"
        if proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit(f"lens serve did not start; its log: {(tmp / 'serve.log').read_text()[-2000:]}")


def _ask_on_page(page, question: str, timeout_s: float) -> tuple[float, float]:
    """Submit ``question``; seconds to the first progress event on the page and to the answer."""
    page.fill("#question", question)
    t0 = time.perf_counter()
    page.click("#submit")
    page.wait_for_selector("#stages li", timeout=timeout_s * 1000)
    first = time.perf_counter() - t0
    page.wait_for_selector("#answer:not([hidden]) .answer-text, #error:not([hidden])", timeout=timeout_s * 1000)
    answered = time.perf_counter() - t0
    if page.is_visible("#error"):
        raise SystemExit(f"the question failed: {page.text_content('#error')}")
    return first, answered


def _lens_ask(args: argparse.Namespace) -> tuple[float, dict]:
    argv = [sys.executable, "-m", "lens.faces._cli", "ask", args.question, str(args.folder), "--json", "--no-trace"]
    t0 = time.perf_counter()
    p = subprocess.run(argv + _config(args), capture_output=True, text=True, env={**os.environ})
    if p.returncode != 0:
        raise SystemExit(f"lens ask failed: {p.stderr[-2000:]}")
    return time.perf_counter() - t0, json.loads(p.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", help="OpenAI-compatible endpoint (default: the embedded model, started by lens)")
    ap.add_argument("--model", help="model name at the endpoint")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting, as lens takes it")
    ap.add_argument("--folder", type=Path, default=ROOT / "corpora" / "demo")
    ap.add_argument("--question", default=QUESTION)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "serve-demo.png")
    ap.add_argument("--chromium", default="/usr/bin/chromium", help="the browser Playwright drives")
    ap.add_argument("--warmup", action="store_true", help="ask once before the timed question (a warm model)")
    ap.add_argument("--no-ask", action="store_true", help="do not time `lens ask`")
    ap.add_argument("--timeout", type=float, default=900, help="seconds a question may take")
    args = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright  # the dev extra

    with tempfile.TemporaryDirectory(prefix="lens-serve-shot-") as tmp:
        proc, url = _start(args, Path(tmp))
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1600, "height": 1000})
                page.goto(url)
                page.wait_for_selector("body[data-ready='1']")
                if args.warmup:
                    _ask_on_page(page, args.question, args.timeout)
                first, answered = _ask_on_page(page, args.question, args.timeout)
                answer = page.text_content(".answer-text")
                cost = page.text_content("#answer .cost")
                cite = page.locator("#answer .evidence a.cite").first
                if cite.count():
                    cite.click()
                    page.locator("#document mark").first.wait_for(timeout=30_000)
                args.out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.out), full_page=True)
                browser.close()
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(f"question           {args.question}")
    print(f"answer (page)      {answer}")
    print(f"{cost}")
    print(f"first event        {first:.2f} s after submit")
    print(f"answer             {answered:.2f} s after submit" + (" (warm model)" if args.warmup else ""))
    print(f"screenshot         {args.out}")
    if not args.no_ask:
        wall, result = _lens_ask(args)
        print(
            f"lens ask           {wall:.2f} s wall (a fresh process), {result['cost']['seconds']:.2f} s answering; "
            f"answer {result['answer']!r}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
