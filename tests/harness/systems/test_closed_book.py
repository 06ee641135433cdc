"""Closed-Book end to end against the scripted endpoint: one call, the answer parsed, cost from usage, and
failures recorded as the question's error (only an unreachable endpoint stops a run)."""

from __future__ import annotations

import httpx
import pytest

from harness.bench.systems import ClosedBookSystem, RunLevelError

from .scripted_llm import kind_of


def closed(client, config) -> ClosedBookSystem:
    return ClosedBookSystem(
        client, question_timeout_s=config.budget.question_timeout_s, max_tokens=config.budget.max_tokens_per_query
    )


def test_one_call_gives_the_answer_and_its_cost(endpoint, responder, client, config):
    responder.script["closed_book"] = '{"answer": "  Tallow03 "}'

    pred = closed(client, config).answer("Where is the lake that the Varn03 River flows into?")

    assert pred.answer == "Tallow03"
    assert (pred.oracle_calls, pred.prompt_tokens, pred.completion_tokens) == (1, 20, 5)
    assert pred.retrieved == [] and pred.evidence == [] and pred.supporting_facts is None
    assert pred.error is None and pred.seconds > 0
    assert responder.kinds() == ["closed_book"]
    assert "Varn03 River" in responder.calls[0][1][-1]["content"]


def test_a_number_answer_becomes_text(endpoint, responder, client, config):
    responder.script["closed_book"] = '{"answer": 1869}'
    assert closed(client, config).answer("When?").answer == "1869"


def test_malformed_replies_become_an_error_row_after_one_repair(endpoint, responder, client, config):
    responder.script["closed_book"] = ["not json at all", '{"wrong": 1}']

    pred = closed(client, config).answer("Where?")

    assert pred.answer == ""
    assert pred.error.startswith("LLMFormatError")
    assert pred.oracle_calls == 2  # the call and its one repair request, both counted


def test_a_server_error_is_recorded_not_raised(endpoint, client, config):
    endpoint.chat.mock(return_value=httpx.Response(500, json={"error": {"message": "boom"}}))

    pred = closed(client, config).answer("Where?")

    assert pred.error.startswith("LLMServerError") and pred.answer == ""


def test_an_unreachable_endpoint_stops_the_run(endpoint, client, config):
    endpoint.chat.mock(side_effect=httpx.ConnectError("refused"))

    with pytest.raises(RunLevelError):
        closed(client, config).answer("Where?")


def test_the_prompt_is_the_closed_book_file():
    from lens.parts import render

    msgs = render("closed_book", package="harness.prompts", question="Q?")
    assert kind_of(msgs) == "closed_book" and msgs[1]["content"] == "Question: Q?"


def test_a_copied_format_placeholder_is_no_answer(endpoint, responder, client, config):
    responder.script["closed_book"] = '{"answer": "the shortest answer"}'
    assert closed(client, config).answer("Where?").answer == ""
    responder.script["closed_book"] = '{"answer": "[Yes]"}'
    assert closed(client, config).answer("Is it?").answer == "Yes"
