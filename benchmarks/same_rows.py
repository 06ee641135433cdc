"""Behaviour check for refactors: the benchmark's rows for a fixed scripted endpoint, volatile fields removed.

Usage: python benchmarks/same_rows.py OUT.jsonl [--snapshot /tmp/snap/D125] [--questions HOTPOT.json]
       [--limit 20] [--systems lens,closed,bm25] [--compare BEFORE.jsonl]

Runs ``lens bench run`` (a subprocess, so ``PYTHONPATH`` picks the tree under test) on the first ``--limit``
questions of the snapshot's frozen order against a deterministic OpenAI-compatible endpoint served on a loopback
port, one question at a time (then LENS alone on 8 questions under a tight budget, each ablation and the fast
preset: ``VARIANTS``), then writes the rows sorted by (system, position) with the fields that change from
run to run or with the code removed (see ``VOLATILE``). ``--compare`` exits 1 and prints the first difference when
the rows differ from an earlier recording.

The endpoint answers every prompt of the agent deterministically from the request alone: decompositions split on
" and " (comparisons: one fact per capitalised name), a reading names the first sentence that shares two content
words with the fact (with token log-probabilities derived from a hash of the request), coverage reports the facts
whose words no passage holds, synthesis copies the first three words of the first passage's first sentence.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Keys dropped wherever they occur: wall-clock times, dates, hosts and code fingerprints. ``config_hash`` is
# dropped too: it hashes every setting, so it changes when a tuning literal becomes a described setting even
# though the setting's default (and the behaviour) stays the same.
VOLATILE = {
    "seconds",
    "agent_seconds",
    "finished_at",
    "started_at",
    "system_hash",
    "config_hash",
    "binding_hash",
    "host",
    "pid",
    "code",
    "lens_version",
    "observed_at",
}

_PASSAGE = re.compile(r'<passage id="([^"]+)" source="([^"]*)">\n(.*?)\n</passage>', re.S)
_SENT = re.compile(r"^\[(\d+)\] (.*)$", re.M)
_FACT = re.compile(r"^(R\d+): (.+)$", re.M)
_STOP = set(
    "the a an of in on at to for by with and or is was were are who what which when where how did does do".split()
)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 2}


def _hash01(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def _field(user: str, label: str) -> str:
    m = re.search(rf"^{label}:? (.*)$", user, re.M)
    return m.group(1).strip() if m else ""


def reply(messages: list[dict]) -> tuple[str, float | None]:
    """The reply text to one chat request, and the answer token's probability for a reading (else None)."""
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    user = next((m["content"] for m in messages if m["role"] == "user"), "")
    if system.startswith("You split a question"):
        q = user.split("Q:")[-1].strip()
        parts = [p.strip(" ?") + "?" for p in re.split(r"\band\b", q) if p.strip(" ?")]
        if len(parts) > 1:
            parts = [parts[0], f"{parts[1]} #1"]
        return json.dumps({"questions": parts[:3]}), None
    if system.startswith("You break a comparison"):
        q = user.split("Q:")[-1].strip()
        names = re.findall(r"\b[A-Z][\w'-]+(?: [A-Z][\w'-]+)*", q)[1:3] or [q]
        return json.dumps({"facts": [{"text": f"attribute of {n}", "entity": n} for n in names]}), None
    if system.startswith("You check whether a passage states one fact"):
        fact = _field(user, "Fact to find")
        found = _PASSAGE.findall(user)
        body = found[0][2] if found else ""
        for n, sentence in _SENT.findall(body):
            if len(_words(fact) & _words(sentence)) >= 2:
                value = " ".join(sentence.split()[:2])
                return f"{n} | {value}", 0.55 + 0.44 * _hash01(user)
        return "0", 0.6 + 0.39 * _hash01(user)
    if system.startswith("You decide whether"):
        passages = " ".join(body for _, _, body in _PASSAGE.findall(user))
        have = _words(passages)
        needed = user.split("Facts needed:", 1)[-1].split("Facts already confirmed:", 1)[0]
        missing = [rid for rid, text in _FACT.findall(needed) if len(_words(text) & have) < 2]
        return json.dumps({"complete": not missing, "missing": missing, "reason": "scripted"}), None
    if system.startswith("You answer a question using"):
        found = _PASSAGE.findall(user)
        sents = _SENT.findall(found[0][2]) if found else []
        answer = " ".join(sents[0][1].split()[:3]) if sents else "unknown"
        return json.dumps({"answer": answer, "passages": [found[0][0]] if found else [], "missing": []}), None
    if system.startswith("You shorten"):
        return json.dumps({"answer": " ".join(_field(user, "Long answer").split()[:2])}), None
    if "closed" in system.lower() or "from memory" in system.lower():
        return json.dumps({"answer": "closed book guess"}), None
    found = _PASSAGE.findall(user)
    return json.dumps({"answer": found[0][1] if found else "unknown"}), None


def completion(text: str, confidence: float | None, logprobs: bool) -> dict:
    choice: dict = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if confidence is not None and logprobs:
        number, _, rest = text.partition(" ")
        other = "1" if number == "0" else "0"
        lp, alt = math.log(confidence), math.log(max(1e-9, 1 - confidence))
        tops = [{"token": number, "logprob": lp, "bytes": None}, {"token": other, "logprob": alt, "bytes": None}]
        content = [{"token": number, "logprob": lp, "bytes": None, "top_logprobs": tops}]
        if rest:
            tok = {"token": " " + rest, "logprob": -0.01, "bytes": None}
            content.append({**tok, "top_logprobs": [tok]})
        choice["logprobs"] = {"content": content}
    usage = {"prompt_tokens": 100, "completion_tokens": max(1, len(text) // 4)}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice], "usage": usage}


class Endpoint:
    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                text, conf = reply(body["messages"])
                data = json.dumps(completion(text, conf, bool(body.get("logprobs")))).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


# (variant, systems, limit, settings): the default run, then LENS alone under a tight budget and each ablation
VARIANTS = [
    ("default", None, None, []),
    ("tight-budget", "lens", 8, ["budget.max_rounds=1", "budget.c0=2", "budget.c1=2"]),
    ("no-exploration", "lens", 8, ["ablation.no_exploration=true"]),
    ("lexical-only", "lens", 8, ["ablation.lexical_only_prior=true"]),
    ("no-memory", "lens", 8, ["ablation.no_memory=true"]),
    ("fast", "lens", 8, []),
]


def run(args) -> list[dict]:
    endpoint = Endpoint()
    rows: list[dict] = []
    for variant, systems, limit, sets in VARIANTS:
        preset = "fast" if variant == "fast" else "deep"
        got = run_one(args, endpoint, systems or args.systems, min(limit or args.limit, args.limit), sets, preset)
        rows += [{"variant": variant, **r} for r in got]
    endpoint.server.shutdown()
    return rows


def run_one(args, endpoint: Endpoint, systems: str, limit: int, sets: list[str], preset: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LENS_")}
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "lens.faces._cli", "bench", "run", "--snapshot", args.snapshot]
        cmd += ["--questions", args.questions, "--systems", systems, "--out", str(out)]
        cmd += ["--limit", str(limit), "--concurrency", "1", "--no-progress", "--base-url", endpoint.base_url]
        cmd += ["--model", "scripted", "--preset", preset, "--set", "llm.cache=false", "--set", "llm.max_retries=0"]
        for item in sets:
            cmd += ["--set", item]
        proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"bench run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines() if line.strip()]
    return sorted((strip(r) for r in rows), key=lambda r: (r.get("system", ""), r.get("position", 0)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--snapshot", default="/tmp/snap/D125")
    ap.add_argument("--questions", default="/work/shared/data/hotpotqa/hotpot_dev_distractor.json")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--systems", default="lens,closed,bm25")
    ap.add_argument("--compare", help="an earlier recording: exit 1 when the rows differ")
    args = ap.parse_args()
    rows = run(args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} rows -> {args.out}")
    if args.compare:
        before = [json.loads(x) for x in Path(args.compare).read_text().splitlines() if x.strip()]
        if before == rows:
            print(f"identical to {args.compare}")
            return 0
        print(f"DIFFERENT from {args.compare}: {len(before)} rows before, {len(rows)} now")
        for a, b in zip(before, rows):
            if a != b:
                keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                print(
                    f"first difference: {a.get('variant')} {a.get('system')} position {a.get('position')}, keys {keys}"
                )
                break
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
