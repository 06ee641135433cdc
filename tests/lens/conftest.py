"""Shared fixtures for the library's tests: a respx-mocked OpenAI-compatible endpoint and a client bound to it.

The client under test is the production ``LLMClient`` (real ``openai`` SDK, real ``httpx`` client); only the HTTP
transport is replaced by respx, so every retry, parse and cache decision runs the code path users run.
"""

from __future__ import annotations

import json
import os
import resource
import signal
from typing import Any, Callable

import httpx
import pytest
import respx

from lens._config import LLMSettings
from lens.llm._cache import ResponseCache
from lens.llm._llm import LLMClient

BASE_URL = "http://llm.test/v1"
CHAT_URL = f"{BASE_URL}/chat/completions"
MODEL = "test-model"


def completion(text: str, prompt_tokens: int = 11, completion_tokens: int = 3) -> httpx.Response:
    """A 200 chat-completion reply with ``text`` and the given usage, shaped like OpenAI's."""
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


def error(status: int, message: str = "scripted failure") -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message, "type": "test", "code": status}})


def sent_messages(call: Any) -> list[dict[str, str]]:
    """The ``messages`` of a recorded respx call."""
    return json.loads(call.request.content)["messages"]


@pytest.fixture
def endpoint():
    """A respx router for the fake endpoint; every test scripts its own replies on ``endpoint.chat``."""
    with respx.mock(assert_all_called=False) as router:
        router.chat = router.post(CHAT_URL)
        yield router


@pytest.fixture
def make_client(tmp_path):
    """Build clients bound to the fake endpoint with zero backoff; closed after the test."""
    clients: list[LLMClient] = []

    def make(*, cache: bool | ResponseCache = False, api_key: str | None = None, **settings: Any) -> LLMClient:
        settings.setdefault("retry_backoff_s", 0)
        settings.setdefault("max_retries", 2)
        if cache is True:
            cache = ResponseCache(tmp_path / "cache")
        client = LLMClient(
            base_url=BASE_URL,
            model=MODEL,
            settings=LLMSettings(**settings),
            api_key=api_key,
            cache=cache or None,
        )
        clients.append(client)
        return client

    yield make
    for c in clients:
        c.close()


def _write(root, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


@pytest.fixture
def harbour(tmp_path) -> Any:
    root = tmp_path / "harbour"
    _write(
        root,
        "ferries/marren-gull.md",
        "# Marren Gull\n\nThe Marren Gull is a passenger ferry on the coast.\n"
        "She was built by Osk Yard and launched in 1931.\nShe carries 120 passengers.\n",
    )
    _write(
        root,
        "yards/osk-yard.txt",
        "Osk Yard\n\nOsk Yard is a boatbuilder in Harrowmouth.\n"
        "It was founded in 1887 by Ilse Osk.\nIt builds small boats.\n",
    )
    _write(
        root,
        "yards/tally.txt",
        "Tally Boatworks\n\nTally Boatworks is a boatbuilder in Dunmere.\nIt was founded in 1902.\n",
    )
    _write(
        root,
        "ferries/timetable.md",
        "# Ferry timetable\n\nThe ferry Marren Gull leaves at nine.\nThe ferry Brisk Tern leaves at ten.\n",
    )
    _write(
        root,
        "notes/shipyard-history.txt",
        "Shipyards of the coast\n\nMany a shipyard was founded in the "
        "year of the great storm.\nA shipyard built the ferry slip.\n",
    )
    return root


def with_full_disk(limit: int, fn: Callable[[], Any]) -> Any:
    """``fn()`` run in a forked child on a "disk" that is full once a file reaches ``limit`` bytes
    (``RLIMIT_FSIZE``, with SIGXFSZ ignored: the write that crosses the limit writes what fits, the next fails with
    EFBIG). Returns what ``fn`` returned (JSON-able); what it raised comes back as ``AssertionError``."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(r)
        try:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
            out = {"result": fn()}
        except BaseException as exc:  # noqa: BLE001 — reported to the parent
            out = {"error": f"{type(exc).__name__}: {exc}"}
        with os.fdopen(w, "w") as fh:  # a pipe: not limited
            json.dump(out, fh)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    out = json.loads(data)
    if "error" in out:
        raise AssertionError(f"in the full-disk child: {out['error']}")
    return out["result"]
