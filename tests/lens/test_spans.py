"""The answer span (issue: answers at the reading ceiling): the final answer is a span of the cited
evidence as the evidence writes it, widened to a unit or range the question asks for, or marked unverified."""

from __future__ import annotations

import pytest

from lens.answer._spans import answer_span

EVIDENCE = [
    "The Australian Labour Party won the 1910 election. The race ran over 25 laps of the circuit.",
    "He served as mayor of Dunmere from 1905 to 1911, and later as a senator.",
    "Sonic the Hedgehog is voiced by Jim Cummings in the series.",
]


@pytest.mark.parametrize(
    "answer, question, expected, how",
    [
        ("Labor", "Which party won the 1910 election?", "Labour", "fuzzy"),  # the evidence's spelling
        ("australian labor party", "Which party won?", "Australian Labour Party", "fuzzy"),
        ("jim cummings", "Who voices Sonic?", "Jim Cummings", "exact"),  # the evidence's casing
        ("Sonic", "What hedgehog did he voice?", "Sonic", "exact"),  # not lengthened to the longer name
        ("25", "How many laps did the race run?", "25 laps", "unit"),  # the unit the question names
        ("25", "How long was the race in total?", "25", "exact"),  # no unit asked: the number alone
        ("1905", "During which years was he mayor of Dunmere?", "1905 to 1911", "range"),
        ("1905", "When did he become mayor?", "1905", "exact"),  # one year asked: no range
    ],
)
def test_the_answer_becomes_the_span_the_evidence_writes(answer, question, expected, how):
    span = answer_span(answer, question, EVIDENCE)
    assert (span.answer, span.how, span.verified) == (expected, how, True)
    assert span.answer in EVIDENCE[span.source]


@pytest.mark.parametrize(
    "text, question",
    [
        ("Tsubasa (1962) is a manga about a girl of 16.", "In what year is the manga set, and who is the girl?"),
        ("It was first lit in 1874 and rebuilt later.", "When was it first lit and rebuilt?"),
        ("The count rose to 96, unsolved since.", "How many cases are unsolved?"),
    ],
)
def test_a_number_is_not_widened_over_punctuation_or_to_a_function_word(text, question):
    number = next(w for w in ("1962", "1874", "96") if w in text)
    span = answer_span(number, question, [text])
    assert (span.answer, span.how) == (number, "exact")


@pytest.mark.parametrize("answer", ["Martin (TV series)", "Martin (TV series", "martin tv series"])
def test_a_bracket_the_span_opens_is_closed_as_the_evidence_closes_it(answer):
    text = "She is known from Martin (TV series) and from film."
    span = answer_span(answer, "Which show is she known from?", [text])
    assert span.answer == "Martin (TV series)" and span.verified


def test_an_answer_absent_from_the_evidence_is_flagged_and_kept():
    span = answer_span("Osk Yard", "Which yard built it?", EVIDENCE)
    assert (span.answer, span.verified, span.how, span.source) == ("Osk Yard", False, "unverified", None)
    short = answer_span("Lab", "Which party?", EVIDENCE)  # four characters or fewer: no near match
    assert not short.verified


def test_yes_no_is_untouched():
    assert answer_span("Yes", "Is Sonic voiced by Jim Cummings?", EVIDENCE).answer == "yes"
    assert answer_span("no", "Did he serve as mayor?", []).how == "yes/no"
    assert answer_span("", "Who?", EVIDENCE).how == "empty"


# --------------------------------------------------------------------------- through the agent


def _ask(make_client, harbour, synthesis):
    import respx

    from lens._agent import Agent

    from .conftest import CHAT_URL
    from .scripted_oracle import Rule, ScriptedOracle
    from .test_agent import config

    q = "Which shipyard built the ferry Marren Gull?"
    oracle = ScriptedOracle(
        decompositions={q: {"questions": [q]}},
        rules=[Rule("shipyard built", "built by Osk Yard", "She was built by Osk Yard and launched in 1931.", "")],
        synthesis=synthesis,
    )
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=oracle.reply)
        return Agent(config(), client=make_client(max_retries=0)).ask(q, harbour)


def test_the_agent_answers_with_the_evidence_spelling(make_client, harbour):
    result = _ask(make_client, harbour, lambda prompt: "osk yard")
    assert result.answer == "Osk Yard" and result.answer_verified is True
    stage = next(s for s in result.stages if s["stage"] == "answer-span")
    assert stage == {"stage": "answer-span", "how": "exact", "verified": True, "from": "osk yard"}
    assert result.to_dict()["answer_verified"] is True


def test_an_answer_the_evidence_does_not_hold_is_marked_unverified(make_client, harbour):
    result = _ask(make_client, harbour, lambda prompt: "Quill Brothers")
    assert result.answer == "Quill Brothers" and result.answer_verified is False
    assert any("not a span of the cited evidence" in n for n in result.notes)
