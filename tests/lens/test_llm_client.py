"""SPEC §3: the LLM client against a respx-mocked OpenAI-compatible endpoint (production code path).

Retries with backoff on 429/5xx/timeouts ending in typed errors; one JSON repair retry then LLMFormatError;
authoritative token usage; request deadlines.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from pydantic import BaseModel

from lens._errors import LensError
from lens.llm._cost import CostMeter
from lens.llm._llm import (
    LLMDeadlineError,
    LLMError,
    LLMFormatError,
    LLMRateLimitError,
    LLMRequestError,
    LLMServerError,
    LLMTimeoutError,
    LLMUnavailableError,
)

from .conftest import completion, error, sent_messages

Q = [{"role": "user", "content": "What is the capital of France?"}]


class Capital(BaseModel):
    city: str
    country: str


# --------------------------------------------------------------------------- retries


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_transient_status_is_retried_then_succeeds(endpoint, make_client, status):
    endpoint.chat.side_effect = [error(status), error(status), completion("Paris")]
    client = make_client(max_retries=2)

    resp = client.chat(Q)

    assert resp.text == "Paris"
    assert endpoint.chat.call_count == 3


def test_rate_limit_on_every_attempt_raises_rate_limit_error(endpoint, make_client):
    endpoint.chat.side_effect = [error(429)] * 10
    client = make_client(max_retries=2)

    with pytest.raises(LLMRateLimitError, match="3 attempts"):
        client.chat(Q)
    assert endpoint.chat.call_count == 3


def test_server_error_on_every_attempt_raises_server_error(endpoint, make_client):
    endpoint.chat.side_effect = [error(500, "engine overloaded")] * 10
    client = make_client(max_retries=1)

    with pytest.raises(LLMServerError, match="engine overloaded"):
        client.chat(Q)
    assert endpoint.chat.call_count == 2


@pytest.mark.parametrize("exc", [httpx.ReadTimeout, httpx.ConnectTimeout, httpx.TimeoutException])
def test_timeout_on_every_attempt_raises_timeout_error_after_retries(endpoint, make_client, exc):
    endpoint.chat.side_effect = exc("scripted timeout")
    client = make_client(max_retries=2)

    with pytest.raises(LLMTimeoutError, match="timed out 3 times"):
        client.chat(Q)
    assert endpoint.chat.call_count == 3


def test_timeout_then_success_returns_the_answer(endpoint, make_client):
    endpoint.chat.side_effect = [httpx.ReadTimeout("slow"), completion("Paris")]
    client = make_client(max_retries=2)

    assert client.chat(Q).text == "Paris"
    assert endpoint.chat.call_count == 2


def test_unreachable_endpoint_raises_unavailable_error(endpoint, make_client):
    endpoint.chat.side_effect = httpx.ConnectError("connection refused")
    client = make_client(max_retries=1)

    with pytest.raises(LLMUnavailableError, match="cannot reach http://llm.test/v1"):
        client.chat(Q)
    assert endpoint.chat.call_count == 2


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_error_is_not_retried_and_is_typed(endpoint, make_client, status):
    endpoint.chat.side_effect = [error(status, "model not found")] + [completion("never")] * 3
    client = make_client(max_retries=3)

    with pytest.raises(LLMRequestError, match=f"HTTP {status}"):
        client.chat(Q)
    assert endpoint.chat.call_count == 1


def test_typed_errors_are_lens_errors_for_the_cli():
    for cls in (
        LLMTimeoutError,
        LLMRateLimitError,
        LLMServerError,
        LLMUnavailableError,
        LLMRequestError,
        LLMFormatError,
        LLMDeadlineError,
    ):
        assert issubclass(cls, LLMError) and issubclass(cls, LensError)


def test_backoff_waits_grow_between_attempts(endpoint, make_client):
    """With a non-zero backoff the client actually waits (tenacity), so a 429 storm is not hammered."""
    endpoint.chat.side_effect = [error(429), error(429), completion("Paris")]
    client = make_client(max_retries=2, retry_backoff_s=0.05)

    t0 = time.monotonic()
    client.chat(Q)
    # exponential: >= 0.05 s before the 2nd attempt and >= 0.1 s before the 3rd
    assert time.monotonic() - t0 >= 0.14


# --------------------------------------------------------------------------- deadline


def test_spent_deadline_raises_before_calling(endpoint, make_client):
    endpoint.chat.side_effect = [completion("Paris")]
    client = make_client()
    meter = CostMeter()

    with pytest.raises(LLMDeadlineError) as info:
        client.chat(Q, deadline=time.monotonic() + 0.1, meter=meter)
    assert endpoint.chat.call_count == 0
    assert info.value.sent is False and meter.cost.failed_calls == 0  # nothing went out: no failed call


def test_deadline_running_out_during_a_call_counts_one_failed_call(endpoint, make_client):
    def slow(request):
        time.sleep(0.7)  # the deadline passes while the request is out
        raise httpx.ReadTimeout("slow", request=request)

    endpoint.chat.side_effect = slow
    client = make_client()
    meter = CostMeter()

    with pytest.raises(LLMDeadlineError) as info:
        client.chat(Q, deadline=time.monotonic() + 1.0, meter=meter)
    assert info.value.sent is True
    assert endpoint.chat.call_count == 1 and meter.cost.failed_calls == 1


def test_deadline_caps_the_request_timeout(endpoint, make_client):
    endpoint.chat.side_effect = [completion("Paris")]
    client = make_client(call_timeout_s=120)

    client.chat(Q, deadline=time.monotonic() + 5)

    timeout = endpoint.chat.calls.last.request.extensions["timeout"]
    assert 0 < timeout["read"] <= 5


# --------------------------------------------------------------------------- usage and request shape


def test_token_counts_come_from_the_response_usage(endpoint, make_client):
    endpoint.chat.side_effect = [completion("Paris", prompt_tokens=123, completion_tokens=7)]
    client = make_client()
    meter = CostMeter()

    resp = client.chat(Q, meter=meter)

    assert (resp.prompt_tokens, resp.completion_tokens, resp.tokens) == (123, 7, 130)
    assert resp.cache_hit is False
    cost = meter.cost
    assert (cost.oracle_calls, cost.prompt_tokens, cost.completion_tokens, cost.cache_hits) == (1, 123, 7, 0)


def test_missing_usage_counts_zero_tokens(endpoint, make_client):
    reply = completion("Paris")
    body = json.loads(reply.content)
    del body["usage"]
    endpoint.chat.side_effect = [httpx.Response(200, json=body)]
    client = make_client()

    resp = client.chat(Q)

    assert resp.text == "Paris" and resp.tokens == 0


def test_request_carries_model_parameters_and_json_mode(endpoint, make_client):
    endpoint.chat.side_effect = [completion('{"city": "Paris", "country": "France"}')]
    client = make_client(temperature=0.0, seed=7, max_output_tokens=64)

    client.chat_json(Q, Capital)

    body = json.loads(endpoint.chat.calls.last.request.content)
    assert body["model"] == "test-model"
    assert body["messages"] == Q
    assert body["temperature"] == 0.0 and body["seed"] == 7 and body["max_tokens"] == 64
    assert body["response_format"] == {"type": "json_object"}


# --------------------------------------------------------------------------- JSON repair


def test_valid_json_is_parsed_into_the_schema_without_repair(endpoint, make_client):
    endpoint.chat.side_effect = [completion('{"city": "Paris", "country": "France"}')]
    client = make_client()

    resp = client.chat_json(Q, Capital)

    assert resp.parsed == Capital(city="Paris", country="France")
    assert endpoint.chat.call_count == 1


def test_json_in_code_fences_is_accepted(endpoint, make_client):
    endpoint.chat.side_effect = [completion('```json\n{"city": "Paris", "country": "France"}\n```')]
    client = make_client()

    assert client.chat_json(Q, Capital).parsed.city == "Paris"
    assert endpoint.chat.call_count == 1


def test_malformed_json_gets_one_repair_request_that_quotes_the_problem(endpoint, make_client):
    endpoint.chat.side_effect = [
        completion('{"city": "Paris", "country": ', prompt_tokens=10, completion_tokens=5),
        completion('{"city": "Paris", "country": "France"}', prompt_tokens=30, completion_tokens=9),
    ]
    client = make_client()
    meter = CostMeter()

    resp = client.chat_json(Q, Capital, meter=meter)

    assert resp.parsed == Capital(city="Paris", country="France")
    assert endpoint.chat.call_count == 2
    repair = sent_messages(endpoint.chat.calls[1])
    assert repair[: len(Q)] == Q
    assert repair[len(Q)] == {"role": "assistant", "content": '{"city": "Paris", "country": '}
    assert "not valid JSON" in repair[-1]["content"]
    # both calls are paid for
    assert (resp.prompt_tokens, resp.completion_tokens) == (40, 14)
    assert meter.cost.oracle_calls == 2 and meter.cost.tokens == 54


class Steps(BaseModel):
    questions: list[str]


def test_a_reply_cut_off_at_max_tokens_keeps_its_complete_elements_without_repair(endpoint, make_client):
    """A long request's sub-questions overran max_tokens: the complete ones are kept, the cut one dropped."""
    cut = '```json\n{"questions": ["Which plan grants rights?", "How many \\"rights\\" vested in #1?", "What are the'
    endpoint.chat.side_effect = [completion(cut, completion_tokens=200)]
    client = make_client()

    resp = client.chat_json(Q, Steps, max_tokens=200)

    assert resp.parsed.questions == ["Which plan grants rights?", 'How many "rights" vested in #1?']
    assert endpoint.chat.call_count == 1


def test_a_cut_off_reply_whose_complete_part_lacks_a_field_is_still_repaired(endpoint, make_client):
    endpoint.chat.side_effect = [completion('{"questions": '), completion('{"questions": ["a"]}')]
    client = make_client()

    assert client.chat_json(Q, Steps).parsed.questions == ["a"]
    assert endpoint.chat.call_count == 2
    assert "not valid JSON" in sent_messages(endpoint.chat.calls[1])[-1]["content"]


def test_json_of_the_wrong_shape_is_repaired_naming_the_field(endpoint, make_client):
    endpoint.chat.side_effect = [
        completion('{"city": "Paris"}'),
        completion('{"city": "Paris", "country": "France"}'),
    ]
    client = make_client()

    resp = client.chat_json(Q, Capital)

    assert resp.parsed.country == "France"
    assert "country" in sent_messages(endpoint.chat.calls[1])[-1]["content"]


def test_two_malformed_replies_raise_format_error(endpoint, make_client):
    endpoint.chat.side_effect = [completion("Paris, France."), completion("I think it is Paris.")] + [
        completion('{"city": "Paris", "country": "France"}')
    ] * 3
    client = make_client()

    with pytest.raises(LLMFormatError, match="Capital"):
        client.chat_json(Q, Capital)
    assert endpoint.chat.call_count == 2  # exactly one repair, never more
