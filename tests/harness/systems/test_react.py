"""ReAct search over the local snapshot against scripted replies: the four actions, what counts as read
(evidence, retrieved documents), the step cap with its forced finish, bad-format steps, token and time caps."""

from __future__ import annotations

import shutil

import pytest

from harness.bench.systems import LiveSearch, ReActSystem, parse_step
from harness.bench.systems.react import FORCED_FINISH, MAX_STEPS

from .scripted_llm import passages


def react(folder, client, *, max_tokens=100_000, timeout=60.0, context=8192, **kw) -> ReActSystem:
    return ReActSystem(folder, client, question_timeout_s=timeout, max_tokens=max_tokens, context_tokens=context, **kw)


def q_of(bench_data, k=0):
    return bench_data["by_id"][bench_data["G6"][k]]


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "text, action, arg",
    [
        ("Thought 1: look it up\nAction 1: search[Varn03 River]", "search", "Varn03 River"),
        ("Thought: x\nAction: Open[Lake Osk03]\nObservation: invented", "open", "Lake Osk03"),
        ('**Action 2:** lookup["lies in"]', "lookup", "lies in"),
        ("finish[Tallow03]", "finish", "Tallow03"),
        ("Action 3: finish[the [bracketed] answer]", "finish", "the [bracketed] answer"),
    ],
)
def test_a_step_is_the_first_action_of_the_reply(text, action, arg):
    step = parse_step(text)
    assert step.ok and (step.action, step.argument) == (action, arg)


@pytest.mark.parametrize("text", ["I think it is Tallow03.", "Action 1: search[]", "Action 1: fly[home]", ""])
def test_replies_without_a_usable_action_are_bad_format(text):
    assert not parse_step(text).ok


# --------------------------------------------------------------------------- episodes


def test_search_open_lookup_finish(endpoint, responder, client, bench_data):
    q = q_of(bench_data)
    river, lake = q.gold_titles
    n = lake[-2:]
    responder.script["react"] = [
        f"Thought 1: find the river.\nAction 1: search[{river}]\nObservation 1: I imagine this.",
        f"Thought 2: open the lake.\nAction 2: open[{lake.lower()}]",
        "Thought 3: where is it?\nAction 3: lookup[lies in]",
        f"Thought 4: done.\nAction 4: finish[Tallow{n}]",
    ]

    pred = react(bench_data["D6"], client).answer(q.question)

    assert pred.answer == f"Tallow{n}" and pred.error is None
    assert pred.oracle_calls == 4 and pred.details["actions"] == 4 and not pred.details["forced_finish"]
    assert pred.details["bad_format_steps"] == 0 and pred.details["stop"] == "finish"
    assert pred.retrieved_titles == [river, lake]
    assert [p.title for p in pred.evidence] == [river, lake, lake]
    look = pred.evidence[-1]
    assert look.text == f"Lake Osk{n} lies in Tallow{n}." and (look.first_sentence, look.line_start) == (1, 3)
    assert pred.grounded(q.gold_titles)
    # what the model saw: its own invented observation is not kept; real observations are fenced passages
    msgs = responder.calls[-1][1]
    assert "I imagine this" not in "".join(m["content"] for m in msgs if m["role"] == "assistant")
    obs = [m["content"] for m in msgs if m["role"] == "user" and m["content"].startswith("Observation")]
    assert [src for _, src, _ in passages(obs[0])] == [river] and "Other results:" in obs[0]
    assert obs[2].startswith("Observation 3: (Result 1 / 1)")


def test_lookup_cycles_through_matches_and_open_suggests_similar_titles(endpoint, responder, client, bench_data):
    q = q_of(bench_data)
    lake = q.gold_titles[1]
    responder.script["react"] = [
        f"Action 1: open[{lake}]",
        f"Action 2: lookup[{lake}]",
        f"Action 3: lookup[{lake}]",
        f"Action 4: lookup[{lake}]",
        f"Action 5: lookup[{lake}]",
        "Action 6: open[Lake Nowhere]",
        "Action 7: finish[x]",
    ]

    pred = react(bench_data["D6"], client).answer(q.question)

    obs = [m["content"] for m in responder.calls[-1][1] if m["content"].startswith("Observation")]
    assert obs[1].startswith("Observation 2: (Result 1 / 3)") and obs[2].startswith("Observation 3: (Result 2 / 3)")
    assert obs[4] == f"Observation 5: No more results for [{lake}] in {lake}."
    assert obs[5].startswith("Observation 6: No article titled [Lake Nowhere]. Similar: Lake Osk")
    assert pred.answer == "x"


def test_the_step_cap_ends_in_a_forced_finish(endpoint, responder, client, bench_data):
    q = q_of(bench_data)
    responder.script["react"] = [f"Thought {i}: more.\nAction {i}: search[Quarry0{i}]" for i in range(1, 8)] + [
        "finish[Quarry07]"
    ]

    pred = react(bench_data["D6"], client).answer(q.question)

    assert MAX_STEPS == 7
    assert pred.oracle_calls == 8 and pred.answer == "Quarry07"
    assert pred.details["forced_finish"] and pred.details["stop"] == "step cap" and pred.details["actions"] == 7
    assert responder.calls[-1][1][-1]["content"] == FORCED_FINISH
    assert len(pred.retrieved) == 7


def test_bad_format_steps_are_counted_and_answered_with_the_format(endpoint, responder, client, bench_data):
    q = q_of(bench_data)
    responder.script["react"] = ["The answer is probably Tallow.", "Action 2: search[]", "Action 3: finish[Tallow]"]

    pred = react(bench_data["D6"], client).answer(q.question)

    assert pred.details["bad_format_steps"] == 2 and pred.answer == "Tallow" and pred.oracle_calls == 3
    msgs = responder.calls[-1][1]
    assert msgs[3]["content"].startswith("Observation 1: Invalid format.")
    assert msgs[2] == {"role": "assistant", "content": "The answer is probably Tallow."}


def test_a_forced_finish_answered_with_another_action_gives_no_answer(endpoint, responder, client, bench_data):
    responder.script["react"] = ["Action: search[Quarry01]"] * 8

    pred = react(bench_data["D6"], client).answer(q_of(bench_data).question)

    assert pred.answer == "" and pred.details["bad_format_steps"] == 1 and pred.details["forced_finish"]


def test_a_forced_finish_without_finish_takes_a_short_reply_and_counts_it(endpoint, responder, client, bench_data):
    responder.script["react"] = ["no idea"] * 7 + ["Answer: Tallow04"]

    pred = react(bench_data["D6"], client).answer(q_of(bench_data).question)

    assert pred.answer == "Tallow04" and pred.details["bad_format_steps"] == 8
    assert pred.retrieved == [] and not pred.grounded(q_of(bench_data).gold_titles)


def test_the_token_budget_stops_stepping_and_forces_the_finish(endpoint, responder, client, bench_data):
    responder.usage = (900, 100)
    responder.script["react"] = lambda msgs: (
        "finish[done]" if msgs[-1]["content"] == FORCED_FINISH else "Action: search[Quarry01]"
    )

    pred = react(bench_data["D6"], client, max_tokens=2500).answer(q_of(bench_data).question)

    assert pred.details["stop"] == "token budget" and pred.details["forced_finish"]
    assert pred.answer == "done" and pred.oracle_calls < 8


def test_the_question_deadline_becomes_the_rows_error(endpoint, responder, client, bench_data):
    responder.delay = 0.4
    responder.script["react"] = [f"Action {i}: search[Quarry0{i}]" for i in range(1, 8)]

    pred = react(bench_data["D6"], client, timeout=1.0).answer(q_of(bench_data).question)

    assert pred.error is not None and pred.error.startswith("LLMDeadlineError")
    assert 1 <= pred.oracle_calls <= 3 and pred.seconds < 2.5
    assert pred.retrieved  # what it read before the deadline is kept


def test_old_observations_are_elided_to_fit_the_context_window(endpoint, responder, client, bench_data):
    responder.script["react"] = [f"Action {i}: open[Lake Osk0{i % 6}]" for i in range(1, 8)] + ["finish[x]"]
    q = q_of(bench_data)

    react(bench_data["D6"], client, context=1000).answer(q.question)

    last = responder.calls[-1][1]
    assert any("[elided to fit the context window]" in m["content"] for m in last)
    assert sum(len(m["content"]) for m in last) / 3.5 < 1000


def test_search_sees_articles_added_after_the_first_question(endpoint, responder, client, bench_data, tmp_path):
    folder = shutil.copytree(bench_data["D6"], tmp_path / "D6")
    live = LiveSearch(folder)
    arm = react(folder, client, search=live)
    responder.script["react"] = ["Action 1: search[Zephyrine]", "Action 2: finish[none]"] * 2

    first = arm.answer("Where is Zephyrine?")
    (folder / "Zephyrine Bay").write_text("Zephyrine Bay\nZephyrine Bay is a bay.\n", encoding="utf-8")
    second = arm.answer("Where is Zephyrine?")

    assert first.retrieved == [] and second.retrieved_titles == ["Zephyrine Bay"]
    assert (
        live.rebuilds == 2
        and second.details["search_warmup_s"] > 0
        and second.details["corpus_docs"] == first.details["corpus_docs"] + 1
    )


def test_a_forced_finish_copying_the_placeholder_is_no_answer(endpoint, responder, client, bench_data):
    responder.script["react"] = ["Action: search[Quarry01]"] * 7 + ["finish[answer]"]

    pred = react(bench_data["D6"], client).answer(q_of(bench_data).question)

    assert pred.answer == "" and pred.details["bad_format_steps"] == 1


def test_repeating_an_action_with_the_same_result_is_pointed_out(endpoint, responder, client, bench_data):
    responder.script["react"] = ["Action: lookup[nothing here]"] * 3 + ["finish[x]"]

    react(bench_data["D6"], client).answer(q_of(bench_data).question)

    obs = [m["content"] for m in responder.calls[-1][1] if m["content"].startswith("Observation")]
    assert obs[0] == "Observation 1: No article has been shown yet; use search[...] or open[...] first."
    assert obs[1].startswith("Observation 2: (You already did exactly this at step 1;")
    assert obs[2].startswith("Observation 3: (You already did exactly this at step 1;")
