"""Stop reasons: a closed set whose strings are the ones rows and traces have always carried."""

from __future__ import annotations

import pytest

from lens.faces._commands import stop_words
from lens.loop._stop import Stop, StopReason


@pytest.mark.parametrize(
    "text",
    [
        "certified",
        "futile",
        "candidates",
        "llm-error",
        "ablation:no-exploration",
        "budget:fixed calls,rounds",
        "budget:time",
        "budget:",
        "futile; self-correction: budget:rounds",
        "candidates; self-correction: certified",
    ],
)
def test_a_stop_reads_back_from_its_string(text):
    assert str(Stop.parse(text)) == text


def test_the_strings_are_the_serialized_ones():
    assert [r.value for r in StopReason] == [
        "certified",
        "futile",
        "candidates",
        "uninformative",
        "budget",
        "llm-error",
        "ablation:no-exploration",
    ]
    again = Stop(StopReason.FUTILE, reentry=Stop.budget(["fixed calls", "rounds"]))
    assert str(again) == "futile; self-correction: budget:fixed calls,rounds"
    assert Stop.parse(str(again)).reentry.reason is StopReason.BUDGET


def test_stop_words():
    assert stop_words("futile; self-correction: budget:rounds") == (
        "stopped: more reading could not settle it within the budget; stopped: budget spent (rounds)"
    )
    assert stop_words("ablation:no-exploration") == "no reading (no-exploration)"
