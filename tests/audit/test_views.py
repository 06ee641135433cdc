"""Memory views on a small seeded stream: temporal eligibility, equal capacity, Naive = Future, no own event."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.audit.events import EventLog
from harness.audit.memories import PositiveFeedbackCache, TraceMemory
from harness.audit.replay import Budgets, ReplayInputs, choose_anchors, replay_stream
from harness.audit.views import PIT, Future, FutureH, NaiveMemory, Stateless, neighbour_order, select, standard_views
from harness.streams import random_stream


def _setup(n: int, seed: int, ties: bool = True):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 6))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    sim = v @ v.T
    if ties:
        sim = np.round(sim, 1)  # many exact ties: the tie-break must agree across code paths
    order = rng.permutation(n)
    ids = tuple(f"q{i}" for i in order)
    return sim, order, ids


def _select_all(n: int, seed: int, capacity: int, horizons=(3, 10)):
    sim, order, ids = _setup(n, seed)
    anchors = np.arange(n)
    sim_rows = sim[np.ix_(order[anchors], order)]
    cand = neighbour_order(sim_rows, anchors)
    views = standard_views(horizons)
    sels = {v.label: select(v, cand, sim_rows, anchors, capacity) for v in views}
    naive = NaiveMemory.materialise(ids, order, sim, capacity).select([ids[a] for a in anchors])
    return anchors, sels, naive


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pit_never_selects_the_anchor_or_later(seed):
    anchors, sels, _ = _select_all(40, seed, capacity=8)
    pos = sels["pit"].positions
    assert ((pos < anchors[:, None]) | (pos == -1)).all()
    assert (sels["pit"].counts == np.minimum(anchors, 8)).all()  # fills every slot it legally can


@pytest.mark.parametrize("h", [1, 3, 10])
def test_future_h_selects_only_up_to_h_events_ahead(h):
    anchors, sels, _ = _select_all(40, 5, capacity=8, horizons=(h,))
    pos = sels[f"future-h{h}"].positions
    ok = (pos == -1) | (pos < anchors[:, None]) | ((pos > anchors[:, None]) & (pos <= anchors[:, None] + h))
    assert ok.all()
    assert (pos > anchors[:, None]).any()  # and it does read the future it is allowed


def test_own_event_is_never_selected_by_any_view():
    anchors, sels, naive = _select_all(40, 3, capacity=39)  # capacity = everything else
    for s in [*sels.values(), naive]:
        assert not (s.positions == anchors[:, None]).any()
    assert (sels["future"].counts == 39).all()


def test_capacity_is_equal_across_views_and_stateless_is_empty():
    _, sels, naive = _select_all(40, 4, capacity=8)
    assert {s.capacity for s in [*sels.values(), naive]} == {8}
    assert (sels["stateless"].counts == 0).all()
    assert all((s.counts <= 8).all() for s in sels.values())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_naive_equals_future_entry_for_entry(seed):
    _, sels, naive = _select_all(50, seed, capacity=8)
    np.testing.assert_array_equal(naive.positions, sels["future"].positions)
    np.testing.assert_array_equal(naive.sims, sels["future"].sims)


def test_a_view_at_an_anchor_is_an_entry_predicate_for_memory_logs():
    from types import SimpleNamespace

    entries = [SimpleNamespace(position=p) for p in range(8)]
    assert [e.position for e in entries if PIT().at(4)(e)] == [0, 1, 2, 3]
    assert [e.position for e in entries if FutureH(2).at(4)(e)] == [0, 1, 2, 3, 5, 6]
    assert [e.position for e in entries if Future().at(4)(e)] == [0, 1, 2, 3, 5, 6, 7]
    assert not any(Stateless().at(4)(e) for e in entries)


def test_views_are_eligibility_predicates_with_scalar_and_vector_forms():
    assert PIT().eligible(5, 4) and not PIT().eligible(5, 5) and not PIT().eligible(5, 6)
    assert FutureH(2).eligible(5, 7) and not FutureH(2).eligible(5, 8) and not FutureH(2).eligible(5, 5)
    assert Future().eligible(5, 9) and not Future().eligible(5, 5)
    assert not Stateless().eligible(5, 1)
    a, e = np.arange(10)[:, None], np.arange(10)[None, :]
    for v in standard_views((2,)):
        m = v.mask(a, e)
        assert m.shape == (10, 10) and not m.diagonal().any()
        assert all(m[i, j] == v.eligible(i, j) for i in range(10) for j in range(10))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(3, 30), seed=st.integers(0, 10_000), capacity=st.integers(1, 12), h=st.integers(1, 15))
def test_selection_invariants_hold_for_any_small_stream(n, seed, capacity, h):
    anchors, sels, naive = _select_all(n, seed, capacity, horizons=(h,))
    a = anchors[:, None]
    pit, fh, fut = sels["pit"].positions, sels[f"future-h{h}"].positions, sels["future"].positions
    assert ((pit == -1) | (pit < a)).all()
    assert ((fh == -1) | (fh < a) | ((fh > a) & (fh <= a + h))).all()
    assert not any((s.positions == a).any() for s in sels.values())
    np.testing.assert_array_equal(naive.positions, fut)
    # PIT entries are the most similar past events: none better was skipped.
    sim, order, _ = _setup(n, seed)
    for i in range(n):
        chosen = [p for p in pit[i] if p >= 0]
        past = sorted(range(i), key=lambda j: (-sim[order[i], order[j]], j))
        assert chosen == past[:capacity]


def test_replayed_rows_pair_naive_with_future_on_every_metric(workload):
    requests = workload.requests()
    gold = workload.gold()
    rng = np.random.default_rng(0)
    n_assets = len(workload.assets)
    base = np.stack([rng.permutation(n_assets)[:50] for _ in requests])
    sim = np.round(np.corrcoef(rng.normal(size=(len(requests), 8))), 2)
    stream = random_stream(requests, 7)
    events = EventLog.build(stream, lambda q: (base[q, :10], np.linspace(1, 0, 10)), depth=10, version="t")
    inputs = ReplayInputs(
        stream, events, sim, base, gold, workload.asset_type_codes(), workload.type_names(), workload.id_order()
    )
    anchors = choose_anchors(len(stream), per_position=5)
    budgets = Budgets(capacity=6, trace_depth=10, base_depth=50, list_depth=50, cutoffs=(10, 20, 50), headline_k=50)
    blocks = replay_stream(
        inputs, anchors, standard_views((3, 10)), [TraceMemory(), PositiveFeedbackCache(gold)], budgets
    )
    by = {(b.scalars["memory"], b.scalars["view"]): b for b in blocks}
    assert len(blocks) == 2 * 6
    for mem in ("trace", "cache"):
        fut, nav = by[(mem, "future")], by[(mem, "naive")]
        np.testing.assert_array_equal(fut.selected, nav.selected)
        for k in fut.columns:
            np.testing.assert_array_equal(np.asarray(fut.columns[k]), np.asarray(nav.columns[k]))
        assert {b.scalars["capacity"] for (m, _), b in by.items() if m == mem} == {6}
    # Stateless reproduces the base list: its recall is the base list's recall.
    assert by[("trace", "stateless")].columns["n_selected"].sum() == 0


def test_anchor_windows_are_disjoint_and_centred():
    a = choose_anchors(588)
    assert a.positions.size == 400 and np.unique(a.positions).size == 400
    for f in (0.2, 0.4, 0.6, 0.8):
        p = a.positions[a.groups == f]
        assert p.size == 100 and abs(p.mean() - f * 588) <= 1.5
    small = choose_anchors(147)
    assert small.positions.size == 4 * 29 and np.unique(small.positions).size == small.positions.size
    with pytest.raises(ValueError):
        choose_anchors(3)
