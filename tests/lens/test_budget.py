"""Unit tests for lens/loop/_budget.py: oracle calls ≤ c0 + c1·L from two pools (fixed c0, c1 per round run), the
round limit, the token limit (pre-call estimate against what responses were charged) and the wall-clock
deadline."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from lens._config import BudgetSettings
from lens.llm._cost import CostMeter
from lens.loop._budget import Budget


def make(**kw) -> Budget:
    base = {"c0": 4, "c1": 2, "max_rounds": 3, "max_tokens_per_query": 1000, "question_timeout_s": 300.0}
    base.update(kw)
    return Budget(BudgetSettings(**base), CostMeter())


def spend_tokens(b: Budget, n: int) -> None:
    b.meter.add(prompt_tokens=n, completion_tokens=0, cache_hit=False, seconds=0.0)


def test_max_calls_is_c0_plus_c1_times_rounds_run():
    b = make(c0=5, c1=3, max_rounds=4)
    assert b.max_calls() == 5
    for r in range(1, 5):
        assert b.start_round()
        assert b.max_calls() == 5 + 3 * r
    assert not b.start_round()
    assert b.max_calls() == 5 + 3 * 4 == b.settings.max_oracle_calls


def test_fixed_pool_holds_exactly_c0_calls():
    b = make(c0=4)
    assert b.can_call("fixed", 10, calls=4)
    assert not b.can_call("fixed", 10, calls=5)
    b.charge("fixed", 3)
    assert b.can_call("fixed", 10)
    assert not b.can_call("fixed", 10, calls=2)  # a call plus its repair no longer fits
    b.charge("fixed", 1)
    assert not b.can_call("fixed", 10)
    assert b.exhausted == ["fixed calls"]


def test_round_pool_grows_by_c1_per_round_only():
    b = make(c1=2)
    assert not b.can_call("round", 10)  # no round opened yet
    assert b.start_round()
    assert b.can_call("round", 10, calls=2)
    assert not b.can_call("round", 10, calls=3)
    b.charge("round", 1)  # an unused repair call carries over into the next round
    assert b.start_round()
    assert b.can_call("round", 10, calls=3)
    assert not b.can_call("round", 10, calls=4)


def test_pools_are_independent():
    b = make(c0=1, c1=1)
    b.charge("fixed", 1)
    assert b.start_round()
    assert not b.can_call("fixed", 0)
    assert b.can_call("round", 0)  # the fixed pool being spent does not touch the round pool
    b.charge("round", 1)
    assert not b.can_call("round", 0)
    assert b.fixed_used == 1 and b.round_used == 1


def test_round_limit_stops_rounds():
    b = make(max_rounds=2)
    assert b.start_round() and b.start_round()
    assert not b.start_round()
    assert b.rounds == 2
    assert b.exhausted == ["rounds"]


def test_zero_rounds_allows_only_the_fixed_pool():
    b = make(max_rounds=0, c0=4)
    assert not b.start_round()
    assert b.max_calls() == 4
    assert not b.can_call("round", 0)


def test_tokens_are_checked_against_the_estimate_and_charged_usage():
    b = make(max_tokens_per_query=1000)
    assert b.tokens_left() == 1000
    assert b.can_call("fixed", 1000)
    assert not b.can_call("fixed", 1001)
    assert b.exhausted == ["tokens"]
    spend_tokens(b, 600)
    b.meter.add(prompt_tokens=0, completion_tokens=150, cache_hit=False, seconds=0.0)
    assert b.tokens_left() == 250
    assert b.can_call("fixed", 250)
    assert not b.can_call("fixed", 251)


def test_spent_tokens_stop_new_rounds():
    b = make(max_tokens_per_query=100)
    spend_tokens(b, 100)
    assert b.tokens_left() == 0
    assert not b.start_round()
    assert b.rounds == 0
    assert b.exhausted == ["tokens"]
    spend_tokens(b, 5)  # overspent by a response: negative, still stopped
    assert b.tokens_left() == -5
    assert not b.start_round()


def test_deadline_is_start_plus_timeout():
    b = make(question_timeout_s=42.0)
    assert b.deadline == b.started + 42.0
    assert 40.0 < b.seconds_left() <= 42.0


def test_time_running_out_stops_rounds_and_calls():
    b = make(question_timeout_s=10.0)
    b.started = time.monotonic() - 9.5  # half a second left: under the 1 s margin
    assert b.seconds_left() < 1.0
    assert not b.start_round()
    assert not b.can_call("fixed", 0)
    assert b.exhausted == ["time"]


def test_exhausted_reasons_are_recorded_once_in_order():
    b = make(c0=0, max_rounds=1, max_tokens_per_query=10)
    assert not b.can_call("fixed", 0)
    assert not b.can_call("fixed", 0)
    assert b.start_round()
    assert not b.can_call("round", 11)
    assert not b.start_round()
    assert b.exhausted == ["fixed calls", "tokens", "rounds"]
    d = b.to_dict()
    assert d == {
        "rounds": 1,
        "max_oracle_calls": 0 + 2 * 1,
        "fixed_calls": 0,
        "round_calls": 0,
        "tokens_left": 10,
        "exhausted": ["fixed calls", "tokens", "rounds"],
    }
    d["exhausted"].append("x")
    assert b.exhausted == ["fixed calls", "tokens", "rounds"]  # to_dict returns a copy


@settings(max_examples=150, deadline=None)
@given(
    c0=st.integers(0, 6),
    c1=st.integers(1, 4),
    max_rounds=st.integers(0, 6),
    ops=st.lists(
        st.one_of(
            st.just(("round", 0)),
            st.tuples(st.sampled_from(["fixed", "call"]), st.integers(1, 3)),
        ),
        max_size=60,
    ),
)
def test_calls_never_exceed_c0_plus_c1_times_rounds(c0, c1, max_rounds, ops):
    """Whatever the order of rounds and calls (each call charged only if the pool allowed it, as the agent
    and the loop do), charged calls stay within c0 + c1·L for the L rounds run, and L ≤ max_rounds."""
    b = make(c0=c0, c1=c1, max_rounds=max_rounds)
    for op, n in ops:
        if op == "round":
            b.start_round()
        else:
            pool = "fixed" if op == "fixed" else "round"
            if b.can_call(pool, 1, calls=n):
                b.charge(pool, n)
        assert b.fixed_used <= c0
        assert b.round_used <= c1 * b.rounds
        assert b.fixed_used + b.round_used <= b.max_calls() == c0 + c1 * b.rounds
        assert b.rounds <= max_rounds
    assert b.max_calls() <= b.settings.max_oracle_calls
