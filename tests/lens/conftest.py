"""Shared fixtures for the library's tests: a respx-mocked OpenAI-compatible endpoint and a client bound to it.

The client under test is the production ``LLMClient`` (real ``openai`` SDK, real ``httpx`` client); only the HTTP
transport is replaced by respx, so every retry, parse and cache decision runs the code path users run.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from lens._cache import ResponseCache
from lens._config import LLMSettings
from lens._llm import LLMClient

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
