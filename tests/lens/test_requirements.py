"""Unit tests for lens/question/_requirements.py: bridge references in a fact's text."""

from __future__ import annotations

from lens.question._requirements import DECOMPOSITION_TOKENS, Requirement, decompose

BRIDGE = Requirement("R2", "In what Texas town did #R1 occur?", depends_on="R1")
TEXTS = {"R1": "Where was Rosemary Willis seen in the grass?", "R2": BRIDGE.text}


def test_a_known_answer_replaces_the_reference():
    assert BRIDGE.resolved_text({"R1": "Dealey Plaza"}, TEXTS) == "In what Texas town did Dealey Plaza occur?"


def test_an_unknown_answer_keeps_the_reference():
    assert BRIDGE.resolved_text({}) == "In what Texas town did #R1 occur?"


def test_an_answer_searched_for_and_not_found_never_leaves_a_blank():
    # the loop records "" for a source fact that gave no value, so the bridge fact can search on its own cues
    assert BRIDGE.resolved_text({"R1": ""}) == "In what Texas town did #R1 occur?"


def test_with_texts_an_unknown_reference_is_glossed_once():
    twice = Requirement("R3", "Was #R1 older than #1?", depends_on="R1")
    assert twice.resolved_text({"R1": ""}, TEXTS) == (
        'Was #R1 older than #R1? (#R1: the answer to "Where was Rosemary Willis seen in the grass?")'
    )


def test_a_fact_without_references_is_unchanged():
    plain = Requirement("R1", TEXTS["R1"])
    assert plain.resolved_text({"R1": "x"}, TEXTS) == TEXTS["R1"]


def test_a_long_request_gets_a_decomposition_reply_long_enough_to_restate_it():
    asked = []

    def call(messages, schema, max_tokens):
        asked.append(max_tokens)
        return None  # the heuristic decomposition answers

    decompose("When did the Mervale Observatory open?", call)
    request = "Compile a dataset of the company's goodwill, debt and investments by year. " * 14  # ~1,050 chars
    decompose(request, call)
    assert asked[0] == DECOMPOSITION_TOKENS
    assert asked[1] >= len(request) // 2 > DECOMPOSITION_TOKENS
