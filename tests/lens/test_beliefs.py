"""Unit tests for lens/loop/_beliefs.py: the Bayes update with calibrated (tpr, fpr) likelihoods, the per-requirement
GLR, the β(t, δ) threshold and the min-GLR stopping rule of the loop.

Expected numbers are computed by hand from the module docstring:

    says relevant:      P(obs | Z* = w) = tpr        P(obs | Z* ≠ w) = fpr
    says not relevant:  P(obs | Z* = w) = 1 − tpr    P(obs | Z* ≠ w) = 1 − fpr
    GLR_j = log p(favoured) − log max p(alternative, "elsewhere" included), 0 until the favoured is confirmed
    β(t, δ) = log((1 + log(1 + t)) / δ)
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lens._config import LensConfig
from lens.loop._beliefs import ELSEWHERE, Belief, beta
from lens.loop._grading import ReadingModel
from lens.loop._stop import StopReason

STRONG = ReadingModel.from_rates(0.8, 0.1)


def observe(b, key: str, relevant: bool, model: ReadingModel) -> None:
    """One reading that did (not) name a sentence, under a model that knows only that (rates tpr, fpr)."""
    b.update(key, model.log_lr({"found": float(relevant)}, logprobs=False), confirmed=relevant)


def odds(p: float) -> float:
    return p / (1.0 - p)


def fresh(weights: dict[str, float], elsewhere: float = 0.2) -> Belief:
    b = Belief("R1", elsewhere_mass=elsewhere)
    b.init(weights)
    return b


# ---------------------------------------------------------------- prior


def test_init_splits_non_elsewhere_mass_in_proportion_to_weights():
    b = fresh({"a": 1.0, "b": 3.0, "zero": 0.0, "neg": -2.0})
    post = b.posterior()
    assert set(post) == {"a", "b", ELSEWHERE}  # non-positive weights are not candidates
    assert post["a"] == pytest.approx(0.2)
    assert post["b"] == pytest.approx(0.6)
    assert post[ELSEWHERE] == pytest.approx(0.2)


def test_init_without_positive_weights_puts_all_mass_elsewhere():
    b = fresh({"a": 0.0})
    assert b.posterior() == {ELSEWHERE: pytest.approx(1.0)}
    assert b.favoured() is None
    assert b.glr() == 0.0


def test_new_belief_starts_with_only_elsewhere():
    b = Belief("R1", elsewhere_mass=0.3)
    assert b.posterior() == {ELSEWHERE: pytest.approx(1.0)}
    assert b.log_w[ELSEWHERE] == pytest.approx(math.log(0.3))


# ---------------------------------------------------------------- Bayes update


def test_positive_observation_multiplies_the_windows_odds_by_tpr_over_fpr():
    b = fresh({"a": 1.0, "b": 3.0})  # a=0.2, b=0.6, elsewhere=0.2
    observe(b, "a", True, STRONG)
    post = b.posterior()
    # unnormalised: a 0.2·0.8 = 0.16, b 0.6·0.1 = 0.06, elsewhere 0.2·0.1 = 0.02; total 0.24
    assert post["a"] == pytest.approx(0.16 / 0.24)
    assert post["b"] == pytest.approx(0.06 / 0.24)
    assert post[ELSEWHERE] == pytest.approx(0.02 / 0.24)
    assert odds(post["a"]) / odds(0.2) == pytest.approx(0.8 / 0.1)  # Bayes factor tpr/fpr
    assert "a" in b.confirmed and b.observations == 1


def test_negative_observation_multiplies_the_windows_odds_by_miss_ratio():
    b = fresh({"a": 1.0, "b": 3.0})
    observe(b, "b", False, STRONG)
    post = b.posterior()
    # unnormalised: a 0.2·0.9 = 0.18, b 0.6·0.2 = 0.12, elsewhere 0.2·0.9 = 0.18; total 0.48
    assert post["a"] == pytest.approx(0.18 / 0.48)
    assert post["b"] == pytest.approx(0.12 / 0.48)
    assert post[ELSEWHERE] == pytest.approx(0.18 / 0.48)
    assert odds(post["b"]) / odds(0.6) == pytest.approx((1 - 0.8) / (1 - 0.1))
    assert post["b"] < 0.6
    assert b.confirmed == set()  # a negative never confirms
    assert b.observations == 1


def test_update_leaves_the_ratio_between_other_hypotheses_unchanged():
    b = fresh({"a": 1.0, "b": 3.0, "c": 2.0})
    before = b.posterior()
    observe(b, "a", True, STRONG)
    after = b.posterior()
    assert after["b"] / after["c"] == pytest.approx(before["b"] / before["c"])
    assert after["b"] / after[ELSEWHERE] == pytest.approx(before["b"] / before[ELSEWHERE])


def test_oracle_with_tpr_equal_fpr_carries_no_information():
    b = fresh({"a": 1.0, "b": 3.0})
    before = b.posterior()
    useless = ReadingModel.from_rates(0.4, 0.4)
    observe(b, "a", True, useless)
    observe(b, "b", False, useless)
    after = b.posterior()
    for k in before:
        assert after[k] == pytest.approx(before[k])


def test_weak_oracle_moves_beliefs_less_than_a_strong_one():
    weak = ReadingModel.from_rates(0.52, 0.48)
    bw, bs = fresh({"a": 1.0, "b": 1.0}), fresh({"a": 1.0, "b": 1.0})
    prior = bw.posterior()["a"]
    observe(bw, "a", True, weak)
    observe(bs, "a", True, STRONG)
    moved_weak = bw.posterior()["a"] - prior
    moved_strong = bs.posterior()["a"] - prior
    assert 0 < moved_weak < 0.02  # factor 0.52/0.48 ≈ 1.083
    assert odds(bw.posterior()["a"]) / odds(prior) == pytest.approx(0.52 / 0.48)
    assert moved_strong > 10 * moved_weak


def test_observation_of_unknown_window_is_ignored():
    b = fresh({"a": 1.0})
    before = dict(b.log_w)
    observe(b, "nowhere", True, STRONG)
    assert b.log_w == before
    assert b.observations == 0
    assert b.confirmed == set()


def test_log_weights_stay_normalised_after_updates():
    b = fresh({"a": 1.0, "b": 2.0})
    for key, rel in [("a", True), ("b", False), ("a", True), ("b", True)]:
        observe(b, key, rel, STRONG)
        assert sum(math.exp(v) for v in b.log_w.values()) == pytest.approx(1.0)


# ---------------------------------------------------------------- favoured / GLR


def test_favoured_is_the_most_probable_candidate_never_elsewhere():
    b = fresh({"a": 1.0, "b": 1.0}, elsewhere=0.9)  # elsewhere 0.9 > a = b = 0.05
    assert b.posterior()[ELSEWHERE] > b.posterior()["a"]
    assert b.favoured() == "a"  # tie between a and b: the smaller key wins
    observe(b, "b", True, STRONG)
    assert b.favoured() == "b"


def test_glr_is_zero_until_the_favoured_window_is_confirmed():
    b = fresh({"a": 1.0, "b": 9.0})  # b favoured: 0.72 vs 0.08 / 0.2
    assert b.favoured() == "b"
    assert b.glr() == 0.0  # nothing certified unseen, however strong the prior
    observe(b, "a", True, STRONG)  # a confirmed, but b still favoured? 0.08·0.8=0.064 vs 0.72·0.1=0.072
    assert b.favoured() == "b" and "a" in b.confirmed
    assert b.glr() == 0.0  # the confirmed window is not the favoured one


def test_glr_is_log_ratio_of_favoured_to_best_alternative():
    b = fresh({"a": 1.0, "b": 3.0})
    observe(b, "a", True, STRONG)  # a 0.16, b 0.06, elsewhere 0.02 (unnormalised)
    assert b.favoured() == "a"
    assert b.glr() == pytest.approx(math.log(0.16 / 0.06))


def test_glr_counts_elsewhere_as_an_alternative():
    b = fresh({"a": 1.0, "b": 1.0}, elsewhere=0.5)  # a 0.25, b 0.25, elsewhere 0.5
    observe(b, "a", True, STRONG)  # a 0.2, b 0.025, elsewhere 0.05
    assert b.glr() == pytest.approx(math.log(0.2 / 0.05))


def test_each_further_positive_adds_log_tpr_over_fpr_to_the_glr():
    b = fresh({"a": 1.0, "b": 1.0})
    observe(b, "a", True, STRONG)
    g1 = b.glr()
    observe(b, "a", True, STRONG)
    g2 = b.glr()
    assert g2 - g1 == pytest.approx(math.log(0.8 / 0.1))
    observe(b, "a", False, STRONG)  # a negative takes back log((1−fpr)/(1−tpr))
    assert g2 - b.glr() == pytest.approx(math.log(0.9 / 0.2))


def test_glr_is_zero_when_favoured_ties_with_alternative():
    b = fresh({"a": 1.0, "b": 1.0})
    observe(b, "a", True, STRONG)
    observe(b, "b", True, STRONG)
    assert b.favoured() == "a"
    assert b.glr() == pytest.approx(0.0, abs=1e-12)


def test_summary_reports_favoured_glr_and_elsewhere():
    b = fresh({"a": 1.0, "b": 3.0})
    observe(b, "a", True, STRONG)
    s = b.summary(top=2)
    assert s["favoured"] == "a"
    assert s["glr"] == round(math.log(0.16 / 0.06), 3)
    assert s["elsewhere"] == round(0.02 / 0.24, 4)
    assert [k for k, _ in s["top"]] == ["a", "b"]
    assert s["observations"] == 1


# ---------------------------------------------------------------- add_candidates


def test_add_candidates_takes_80_percent_of_elsewhere_and_keeps_existing_beliefs():
    b = fresh({"a": 1.0})  # a 0.8, elsewhere 0.2
    b.add_candidates({"a": 100.0, "b": 1.0, "c": 3.0, "d": 0.0})
    post = b.posterior()
    assert "d" not in post
    assert post["a"] == pytest.approx(0.8)  # existing window keeps its belief (new weight ignored)
    assert post["b"] == pytest.approx(0.16 * 1 / 4)
    assert post["c"] == pytest.approx(0.16 * 3 / 4)
    assert post[ELSEWHERE] == pytest.approx(0.04)


def test_a_late_window_enters_at_the_mass_the_prior_would_have_given_it():
    """Prior weights a 3, b 1 (a 0.6, b 0.2, elsewhere 0.2; 0.2 mass per unit weight). A window ranked after
    them with weight 0.5 would have had 0.1 at the start, so it enters at 0.1: below b, never above it for being
    new (the 80 % share of elsewhere, 0.16, would have put it within 0.04 of b)."""
    b = fresh({"a": 3.0, "b": 1.0})
    b.add_candidates({"a": 3.0, "b": 1.0, "c": 0.5})
    post = b.posterior()
    assert post["a"] == pytest.approx(0.6) and post["b"] == pytest.approx(0.2)
    assert post["c"] == pytest.approx(0.1)
    assert post[ELSEWHERE] == pytest.approx(0.1)
    assert b.tail_prior == pytest.approx(0.1)


def test_a_late_window_carries_the_evidence_that_moved_mass_elsewhere():
    """Readings that lower the enumerated windows raise every unread window alike: ρ = P(elsewhere) / its prior
    mass multiplies the newcomer's prior mass, and stays the same for the windows still outside."""
    b = fresh({"a": 3.0, "b": 1.0})
    b.update("a", math.log(0.25), confirmed=False)  # a: 0.6 → 0.15 before normalising; z = 0.55
    pool = b.posterior()[ELSEWHERE]
    assert pool == pytest.approx(0.2 / 0.55)
    rho = pool / 0.2
    b.add_candidates({"c": 0.5})
    post = b.posterior()
    assert post["c"] == pytest.approx(rho * 0.1)
    assert post["c"] < post["b"]  # b was not read: it keeps its lead over a window the prior ranked lower
    assert post[ELSEWHERE] / b.tail_prior == pytest.approx(rho)


def test_late_windows_take_at_most_80_percent_of_elsewhere():
    b = fresh({"a": 1.0})  # 0.8 per unit weight: c alone would claim 8.0
    b.add_candidates({"c": 10.0})
    post = b.posterior()
    assert post["c"] == pytest.approx(0.16)
    assert post[ELSEWHERE] == pytest.approx(0.04)
    assert post[ELSEWHERE] / b.tail_prior == pytest.approx(1.0)  # ρ unchanged for what stays outside


def test_add_candidates_without_new_windows_changes_nothing():
    b = fresh({"a": 1.0})
    before = dict(b.log_w)
    b.add_candidates({"a": 5.0, "z": 0.0})
    assert b.log_w == before


# ---------------------------------------------------------------- β and the min-GLR stopping rule


def test_beta_matches_formula():
    assert beta(0, 0.1) == pytest.approx(math.log(10))
    assert beta(3, 0.05) == pytest.approx(math.log((1 + math.log(4)) / 0.05))
    assert beta(-5, 0.1) == beta(0, 0.1)  # negative rounds clamp to 0
    assert beta(10, 0.1) > beta(1, 0.1) > beta(0, 0.1)
    assert beta(1, 0.01) > beta(1, 0.1)  # a smaller error level is harder to reach


def _stuck_loop(beliefs: dict[str, Belief]):
    """A Loop over given beliefs with no windows left and no expansion allowed: ``run`` can only say
    "certified" (every requirement's GLR clears the threshold) or "candidates"."""
    from lens.llm._cost import CostMeter
    from lens.loop._budget import Budget
    from lens.loop._loop import Loop, LoopState
    from lens.question._requirements import Decomposition, Requirement

    cfg = LensConfig()
    reqs = [Requirement(rid, f"fact {rid}") for rid in beliefs]
    state = LoopState("q?", Decomposition("lookup", reqs, "heuristic"), view=None, prior=None)  # type: ignore[arg-type]
    state.beliefs = dict(beliefs)
    state.prior_limit = {rid: 4 * cfg.prior.candidates for rid in beliefs}
    meter = CostMeter()
    return Loop(state, client=None, config=cfg, budget=Budget(cfg.budget, meter), meter=meter, model=STRONG)


def _certain(rid: str) -> Belief:
    b = Belief(rid)
    b.init({"a": 1.0, "b": 1.0})
    strong = ReadingModel.from_rates(0.95, 0.02)
    for _ in range(4):
        observe(b, "a", True, strong)
    return b


def test_min_glr_stops_only_when_every_requirement_is_certified():
    threshold = beta(0, LensConfig().loop.delta) * LensConfig().loop.gamma["lookup"]
    r1, r2 = _certain("R1"), _certain("R2")
    assert min(r1.glr(), r2.glr()) > threshold
    assert _stuck_loop({"R1": r1, "R2": r2}).run().reason is StopReason.CERTIFIED


def test_one_unresolved_requirement_keeps_min_glr_low():
    threshold = beta(0, LensConfig().loop.delta)
    r1 = _certain("R1")
    assert r1.glr() > 5 * threshold  # practically certain
    r2 = Belief("R2")
    r2.init({"x": 1.0, "y": 1.0})
    observe(r2, "x", False, STRONG)  # only a negative: nothing confirmed, GLR 0
    assert r2.glr() == 0.0
    assert min(r1.glr(), r2.glr()) == 0.0
    assert _stuck_loop({"R1": r1, "R2": r2}).run().reason is StopReason.CANDIDATES


def test_requirement_just_below_threshold_blocks_stopping():
    cfg = LensConfig()
    threshold = beta(0, cfg.loop.delta) * cfg.loop.gamma["lookup"]  # log 10 ≈ 2.303
    r2 = Belief("R2")
    r2.init({"x": 1.0, "y": 1.0})
    observe(r2, "x", True, ReadingModel.from_rates(0.9, 0.1))  # GLR = log 9 ≈ 2.197 < log 10
    assert 0 < r2.glr() < threshold
    assert _stuck_loop({"R1": _certain("R1"), "R2": r2}).run().reason is StopReason.CANDIDATES


# ---------------------------------------------------------------- property


@settings(max_examples=60, deadline=None)
@given(
    weights=st.dictionaries(st.sampled_from("abcdef"), st.floats(0.01, 100.0), min_size=1, max_size=6),
    elsewhere=st.floats(0.01, 0.9),
    tpr=st.floats(0.02, 0.98),
    fpr=st.floats(0.02, 0.98),
    steps=st.lists(st.tuples(st.sampled_from("abcdefg"), st.booleans()), max_size=25),
)
def test_posterior_stays_a_probability_distribution(weights, elsewhere, tpr, fpr, steps):
    b = Belief("R1", elsewhere_mass=elsewhere)
    b.init(weights)
    rel = ReadingModel.from_rates(tpr, fpr)
    for key, relevant in steps:
        observe(b, key, relevant, rel)
        post = b.posterior()
        assert set(post) == set(weights) | {ELSEWHERE}
        assert all(0.0 <= p <= 1.0 for p in post.values())
        assert sum(post.values()) == pytest.approx(1.0)
        assert b.glr() >= 0.0
        assert b.favoured() in weights
    assert b.observations == sum(1 for k, _ in steps if k in weights)


@settings(max_examples=60, deadline=None)
@given(
    weights=st.dictionaries(st.sampled_from("abc"), st.floats(0.01, 100.0), min_size=1, max_size=3),
    late=st.dictionaries(st.sampled_from("defg"), st.floats(0.01, 100.0), min_size=1, max_size=4),
    lrs=st.lists(st.tuples(st.sampled_from("abc"), st.floats(-4.0, 4.0)), max_size=8),
)
def test_growing_the_candidate_set_keeps_a_distribution_and_the_outside_evidence_factor(weights, late, lrs):
    b = fresh(weights)
    for key, log_lr in lrs:
        b.update(key, log_lr, confirmed=False)
    before = dict(b.posterior())
    rho = before[ELSEWHERE] / b.tail_prior
    b.add_candidates(late)
    post = b.posterior()
    assert sum(post.values()) == pytest.approx(1.0)
    assert sum(post[k] for k in late) <= 0.8 * before[ELSEWHERE] + 1e-12
    for k in weights:  # enumerated windows keep their mass
        assert post[k] == pytest.approx(before[k])
    assert post[ELSEWHERE] / b.tail_prior == pytest.approx(rho)


def test_windows_that_verified_the_same_value_are_one_hypothesis():
    """Two documents stating the same fact are not rival answers: their mass is pooled, so it can certify."""
    split = Belief("R1")
    split.init({"a": 1.0, "b": 1.0, "c": 1.0})
    for key in ("a", "b"):
        split.update(key, math.log(40), confirmed=True, value="Osk Yard")
    rivals = Belief("R1")
    rivals.init({"a": 1.0, "b": 1.0, "c": 1.0})
    rivals.update("a", math.log(40), confirmed=True, value="Osk Yard")
    rivals.update("b", math.log(40), confirmed=True, value="Tally Boatworks")
    assert rivals.glr() == pytest.approx(0.0)  # two different answers, equally supported
    post = split.posterior()
    expected = math.log(post["a"] + post["b"]) - math.log(max(post["c"], post[ELSEWHERE]))
    assert split.glr() == pytest.approx(expected) and split.glr() > 3
    assert split.favoured() in {"a", "b"}
    # the heaviest group wins over a single heavier window
    g = Belief("R1")
    g.init({"a": 1.0, "b": 1.0, "c": 1.5})
    g.update("a", math.log(10), confirmed=True, value="x")
    g.update("b", math.log(10), confirmed=True, value="X")  # same value once normalised
    g.update("c", math.log(10), confirmed=True, value="y")
    assert g.favoured() in {"a", "b"} and g.glr() > 0


def test_reachable_glr_is_infinite_while_no_read_window_stands_as_an_alternative():
    b = Belief("R1", elsewhere_mass=0.1)
    b.init({"a": 3.0, "b": 1.0})
    b.update("a", 1.0, confirmed=True, value="27")
    assert b.reachable_glr({"a"}, readings=2, most=1.0) == math.inf


def test_reachable_glr_is_out_of_reach_when_the_read_rival_is_heavy_and_unread_windows_light():
    b = Belief("R1", elsewhere_mass=0.02)
    b.init({"a": 5.0, "b": 4.0, "c": 0.1})
    b.update("a", 1.0, confirmed=True, value="27")
    b.update("b", -0.1, confirmed=False)
    post = b.posterior()
    most = 2.0
    gain = (post["c"] + post[ELSEWHERE]) * math.exp(most)
    expected = math.log((post["a"] + gain) / post["b"])
    assert b.reachable_glr({"a", "b"}, readings=4, most=most) == pytest.approx(expected)
    assert b.reachable_glr({"a", "b"}, readings=4, most=most) < beta(2, 0.1)
    assert b.reachable_glr({"a", "b"}, readings=0, most=most) == pytest.approx(b.glr())


@settings(max_examples=60, deadline=None)
@given(
    weights=st.lists(st.floats(0.05, 5.0), min_size=2, max_size=6),
    lrs=st.lists(st.tuples(st.integers(0, 5), st.floats(-2.0, 2.0), st.booleans()), min_size=1, max_size=6),
    k=st.integers(0, 4),
)
def test_no_sequence_of_readings_of_unread_windows_beats_the_reachable_glr(weights, lrs, k):
    keys = [f"w{i}" for i in range(len(weights))]
    b = Belief("R1", elsewhere_mass=0.1)
    b.init(dict(zip(keys, weights)))
    read = set()
    for i, lr, ok in lrs:
        key = keys[i % len(keys)]
        if key in read:
            continue
        b.update(key, lr, confirmed=ok and lr > 0, value="v" if ok else "")
        read.add(key)
    bound = b.reachable_glr(read, readings=k, most=2.0)
    unread = [key for key in keys if key not in read]
    # the best any k readings can do: each at ±2, joining the confirmed value "v" or falling
    best = b.glr()
    for chosen in itertools.combinations(unread, min(k, len(unread))):
        for signs in itertools.product((2.0, -2.0), repeat=len(chosen)):
            c = Belief("R1", elsewhere_mass=0.1)
            c.log_w, c.confirmed, c.values = dict(b.log_w), set(b.confirmed), dict(b.values)
            for key, lr in zip(chosen, signs):
                c.update(key, lr, confirmed=lr > 0, value="v")
            best = max(best, c.glr())
    assert best <= bound + 1e-9
