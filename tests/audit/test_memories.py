"""Trace memory u_i(a), the combination rule with the base list, and the positive-feedback cache."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.audit.events import EventLog
from harness.audit.memories import Bonus, PositiveFeedbackCache, TraceMemory, rerank, trace_utility
from harness.audit.views import Selection
from harness.streams import Stream
from harness.workloads import GoldLabels

N_ASSETS = 12


def _log(lists: list[list[int]], depth: int = 3) -> EventLog:
    stream = Stream("random", 0, np.arange(len(lists)), tuple(f"q{i}" for i in range(len(lists))))
    return EventLog.build(stream, lambda q: (np.asarray(lists[q]), np.ones(len(lists[q]))), depth=depth, version="t")


def test_trace_utility_is_the_sum_of_squared_similarity_over_log_rank():
    events = _log([[5, 6, 7], [6, 8, 9], [1, 2, 3]])
    sel = Selection(np.array([[0, 1, -1]]), np.array([[0.9, 0.5, 0.0]]))
    u = trace_utility(sel, events, N_ASSETS)
    got = {int(a): v for a, v in zip(u.assets, u.values)}
    lg = lambda r: math.log2(r + 2)  # noqa: E731  (r is the 0-based stored rank)
    assert got[5] == pytest.approx(0.81 / lg(0))
    assert got[6] == pytest.approx(0.81 / lg(1) + 0.25 / lg(0))
    assert got[7] == pytest.approx(0.81 / lg(2))
    assert got[8] == pytest.approx(0.25 / lg(1)) and got[9] == pytest.approx(0.25 / lg(2))
    assert set(got) == {5, 6, 7, 8, 9}  # the unselected event 2 contributes nothing


def test_negative_similarity_contributes_nothing():
    events = _log([[5, 6, 7]])
    u = trace_utility(Selection(np.array([[0]]), np.array([[-0.7]])), events, N_ASSETS)
    assert u.values.size == 0


def test_rule_with_no_memory_returns_the_base_list_unchanged():
    base = np.array([[3, 1, 4, 0, 5]])
    out = rerank(base, Bonus.empty(), N_ASSETS, np.arange(N_ASSETS))
    np.testing.assert_array_equal(out, base)


def test_rule_adds_the_bonus_to_the_reciprocal_base_rank():
    base = np.array([[0, 1, 2, 3]])  # scores 1, 1/2, 1/3, 1/4
    bonus = Bonus(np.array([0, 0]), np.array([3, 9]), np.array([0.3, 0.4]))  # 3: 0.55; 9 (new): 0.4
    out = rerank(base, bonus, N_ASSETS, np.arange(N_ASSETS))
    assert out[0].tolist() == [0, 3, 1, 9]  # 1, 0.55, 0.5, 0.4 — list depth stays 4, asset 2 drops out


def test_rule_breaks_ties_by_asset_id_order():
    base = np.array([[0, 1]])
    bonus = Bonus(np.array([0]), np.array([7]), np.array([1.0]))  # asset 7 ties asset 0 at score 1
    tie = np.arange(N_ASSETS)
    assert rerank(base, bonus, N_ASSETS, tie)[0].tolist() == [0, 7]
    tie2 = tie.copy()
    tie2[[0, 7]] = tie2[[7, 0]]  # now asset 7's id sorts first
    assert rerank(base, bonus, N_ASSETS, tie2)[0].tolist() == [7, 0]


def test_trace_memory_fuses_its_ranked_list_by_reciprocal_rank():
    events = _log([[5, 6, 7]])
    sel = Selection(np.array([[0]]), np.array([[1.0]]))
    bonus = TraceMemory().bonus(sel, events, N_ASSETS, np.arange(N_ASSETS))
    assert dict(zip(bonus.assets.tolist(), bonus.values.tolist())) == {5: 1.0, 6: 0.5, 7: pytest.approx(1 / 3)}
    out = rerank(np.array([[0, 1, 2, 3, 4, 5]]), bonus, N_ASSETS, np.arange(N_ASSETS))
    # 0:1, 5:1/6+1, 6:1/2, 1:1/2, 7:1/3, 2:1/3 … ties by id
    assert out[0].tolist() == [5, 0, 1, 6, 2, 7]


def test_cache_bonus_is_max_squared_similarity_capped_and_uses_neighbour_gold_only():
    events = _log([[0], [0], [0]], depth=1)
    gold = GoldLabels(np.array([0, 2, 3, 4]), np.array([4, 5, 5, 6]), N_ASSETS)  # q0: {4,5}, q1: {5}, q2: {6}
    sel = Selection(np.array([[0, 1]]), np.array([[0.1, 0.12]]))
    b = PositiveFeedbackCache(gold, cap=0.02).bonus(sel, events, N_ASSETS, np.arange(N_ASSETS))
    got = dict(zip(b.assets.tolist(), b.values.tolist()))
    assert got == {4: pytest.approx(0.01), 5: pytest.approx(0.0144)}  # 6 belongs to an unselected event
    strong = Selection(np.array([[0, 1]]), np.array([[0.9, 0.2]]))
    b2 = PositiveFeedbackCache(gold).bonus(strong, events, N_ASSETS, np.arange(N_ASSETS))
    assert dict(zip(b2.assets.tolist(), b2.values.tolist())) == {4: 0.02, 5: 0.02}


def test_cache_lifts_a_clicked_asset_by_at_most_the_score_of_base_rank_50():
    base = np.arange(100)[None, :] + 10
    gold = GoldLabels(np.array([0, 1]), np.array([109]), 200)
    events = _log([[0]], depth=1)
    sel = Selection(np.array([[0]]), np.array([[1.0]]))
    out = rerank(base, PositiveFeedbackCache(gold).bonus(sel, events, 200, np.arange(200)), 200, np.arange(200))
    # base rank 100 → 0.01 + 0.02 = 0.03, between base ranks 33 (0.0303) and 34 (0.0294)
    assert out[0].tolist().index(109) == 33
