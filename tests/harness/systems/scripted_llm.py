"""A scripted OpenAI-compatible chat endpoint for the benchmark tests.

``Responder`` looks at a request's messages, recognises which prompt it is (the first words of each prompt file's
system part, read from ``prompts/`` so the recognition follows the templates) and returns a plausible reply built
from the request itself: passages are parsed out of the prompt, so replies quote real document text. Tests
override any kind with a function or a list of scripted replies. Two transports serve it: ``respx`` (in-process,
through the real ``openai`` client) and ``StubServer`` (a real HTTP server on a loopback port, for tests that
run the CLI in another process).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import httpx

_ROOT = Path(__file__).resolve().parents[3]
PROMPT_DIRS = (_ROOT / "prompts", _ROOT / "harness" / "prompts")  # the agent's, the baselines'

_PASSAGE = re.compile(r'<passage id="([^"]+)" source="([^"]*)">\n(.*?)\n</passage>', re.DOTALL)
_SENT = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)

Reply = str | Callable[[list[dict[str, str]]], str]


def _opening(name: str) -> str:
    path = next(d / f"{name}.md" for d in PROMPT_DIRS if (d / f"{name}.md").is_file())
    text = path.read_text(encoding="utf-8")
    return text.split("---- user ----", 1)[0].strip()[:40]


def kind_of(messages: list[dict[str, str]]) -> str:
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    for name in ("react", "rag", "closed_book", "decomposition", "reading", "synthesis", "coverage", "shorten"):
        if system.startswith(_opening(name)):
            return name
    return "other"


def passages(text: str) -> list[tuple[str, str, list[tuple[int, str]]]]:
    """(id, source, [(sentence number, text)]) of every fenced passage in ``text``."""
    return [(pid, src, [(int(n), s) for n, s in _SENT.findall(body)]) for pid, src, body in _PASSAGE.findall(text)]


def last_user(messages: list[dict[str, str]]) -> str:
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def question_of(messages: list[dict[str, str]]) -> str:
    for m in messages:
        if m["role"] == "user":
            for line in m["content"].splitlines():
                if line.startswith("Question: "):
                    return line[len("Question: ") :]
    return ""


class Responder:
    """Default replies per prompt kind; ``script[kind]`` overrides (a function of the messages, or a list of
    replies consumed in order). Thread-safe; records every request."""

    def __init__(self, **script: Reply | list[Reply]) -> None:
        self.script: dict[str, Any] = dict(script)
        self.calls: list[tuple[str, list[dict[str, str]]]] = []
        self.lock = threading.Lock()
        self.delay = 0.0
        self.usage = (20, 5)
        # an endpoint fault for every request while set: an HTTP status (401, 404, 429, 500, ...) or "timeout"
        # (the reply waits ``timeout_s`` seconds); a function of the messages may choose per request (None: answer)
        self.fault: int | str | Callable[[list[dict[str, str]]], int | str | None] | None = None
        self.timeout_s = 2.0
        self.faulted = 0
        self.fault_message: str | None = None  # the error body's message (default: "scripted fault <status>")

    def fault_for(self, messages: list[dict[str, str]]) -> int | str | None:
        f = self.fault(messages) if callable(self.fault) else self.fault
        if f is not None:
            with self.lock:
                self.faulted += 1
        return f

    def __call__(self, messages: list[dict[str, str]]) -> str:
        kind = kind_of(messages)
        with self.lock:
            self.calls.append((kind, messages))
            s = self.script.get(kind)
            if isinstance(s, list):
                s = s.pop(0) if s else None
        if self.delay:
            time.sleep(self.delay)
        if s is not None:
            return s(messages) if callable(s) else s
        return getattr(self, f"_{kind}")(messages)

    def kinds(self) -> list[str]:
        return [k for k, _ in self.calls]

    # -- defaults ------------------------------------------------------------------------------------------
    def _closed_book(self, messages):
        return json.dumps({"answer": "closed book guess"})

    def _rag(self, messages):
        ps = passages(last_user(messages))
        return json.dumps({"answer": ps[0][1] if ps else "nothing"})

    def _react(self, messages):
        steps = sum(1 for m in messages if m["role"] == "assistant")
        if steps == 0:
            return f"Thought 1: I should search.\nAction 1: search[{question_of(messages)}]"
        ps = passages("\n".join(m["content"] for m in messages if m["role"] == "user"))
        return f"Thought 2: Found it.\nAction 2: finish[{ps[0][1] if ps else 'unknown'}]"

    def _decomposition(self, messages):
        q = question_of(messages)
        return json.dumps(
            {
                "intent": "lookup",
                "facts": [{"id": "R1", "text": q, "search": q.split()[:4], "depends_on": None, "entity": q}],
            }
        )

    def _reading(self, messages):
        """Names the passage's last sentence, with its first word as the value."""
        ps = passages(last_user(messages))
        if ps and ps[0][2]:
            n, s = ps[0][2][-1]
            return f"{n} | {s.split()[0]}"
        return "0"

    def _synthesis(self, messages):
        ps = passages(last_user(messages))
        title = ps[0][1].split(" — ", 1)[-1] if ps else "unknown"
        return json.dumps({"answer": title, "passages": [ps[0][0]] if ps else [], "missing": []})

    def _coverage(self, messages):
        return json.dumps({"complete": True, "missing": [], "reason": "all stated"})

    def _shorten(self, messages):
        m = re.search(r"^Long answer: (.*)$", last_user(messages), re.MULTILINE)
        return json.dumps({"answer": m.group(1) if m else ""})

    def _other(self, messages):
        return "{}"


def completion_body(text: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message or f"scripted fault {status}", "type": "scripted", "code": status}}


def respx_side_effect(responder: Responder):
    """A respx side effect answering every chat request with ``responder``."""

    def effect(request: httpx.Request) -> httpx.Response:
        messages = json.loads(request.content)["messages"]
        fault = responder.fault_for(messages)
        if fault == "timeout":
            raise httpx.ReadTimeout("scripted timeout", request=request)
        if fault is not None:
            return httpx.Response(int(fault), json=error_body(int(fault), responder.fault_message))
        return httpx.Response(200, json=completion_body(responder(messages), responder.usage))

    return effect


class StubServer:
    """``responder`` behind a real HTTP server on 127.0.0.1 (OpenAI chat-completions shape)."""

    def __init__(self, responder: Responder) -> None:
        resp = responder

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                fault = resp.fault_for(body["messages"])
                status = 200
                if fault == "timeout":
                    time.sleep(resp.timeout_s)
                    fault = None
                if fault is not None:
                    status, data = int(fault), json.dumps(error_body(int(fault), resp.fault_message)).encode()
                else:
                    data = json.dumps(completion_body(resp(body["messages"]), resp.usage)).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "StubServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
