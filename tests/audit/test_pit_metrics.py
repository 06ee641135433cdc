"""Row metrics, TVR, the query-cluster bootstrap, contrasts and the verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.audit.metrics import Bootstrap, Estimate, contrast_set, row_metrics, temporal_violation, verdict
from harness.workloads import GoldLabels


def _gold(lists: list[list[int]], n_assets: int) -> GoldLabels:
    indptr = np.cumsum([0] + [len(g) for g in lists])
    return GoldLabels(
        indptr.astype(np.int64), np.asarray([x for g in lists for x in sorted(g)], dtype=np.int64), n_assets
    )


def test_recall_hit_complete_and_rank80_on_a_hand_example():
    gold = _gold([[1, 2, 3, 4, 5], [7]], 10)
    final = np.array([[1, 9, 2, 3, 8, 4, 0, 5, 6, -1], [0, 1, 2, 3, 4, 5, 6, 8, 9, -1]])
    m = row_metrics(
        final, np.array([0, 1]), gold, np.zeros(10, dtype=np.int64), ("text",), cutoffs=(2, 4, 8), headline_k=8
    )
    assert m["recall@2"].tolist() == [0.2, 0.0]
    assert m["recall@4"].tolist() == [0.6, 0.0]
    assert m["recall@8"].tolist() == [1.0, 0.0]
    assert m["hit@8"].tolist() == [1.0, 0.0]
    assert m["complete@8"].tolist() == [1.0, 0.0]
    assert m["rank80"].tolist() == [6.0, 11.0]  # 4 of 5 found at rank 6; never reached → depth + 1


def test_type_specific_recall_only_counts_gold_of_that_type():
    gold = _gold([[0, 1, 2, 3]], 6)
    types = np.array([0, 0, 1, 1, 0, 1])  # 0 = table, 1 = text
    final = np.array([[0, 2, 4, 5, -1, -1]])
    m = row_metrics(final, np.array([0]), gold, types, ("table", "text"), cutoffs=(4,), headline_k=4)
    assert m["recall@4:table"][0] == 0.5 and m["recall@4:text"][0] == 0.5
    gold2 = _gold([[0, 1]], 6)
    m2 = row_metrics(final, np.array([0]), gold2, types, ("table", "text"), cutoffs=(4,), headline_k=4)
    assert math.isnan(m2["recall@4:text"][0])


def test_tvr_is_the_share_of_selected_entries_after_the_anchor():
    pos = np.array([[1, 7, 9, -1], [-1, -1, -1, -1], [0, 1, 2, 3]])
    tvr, n_sel, n_fut = temporal_violation(pos, np.array([5, 5, 5]))
    assert tvr.tolist() == [2 / 3, 0.0, 0.0] and n_sel.tolist() == [3, 0, 4] and n_fut.tolist() == [2, 0, 0]


def _simulated(effect: float, n_clusters: int, seed: int, per_cluster: int = 4):
    rng = np.random.default_rng(seed)
    cluster_effect = effect + rng.normal(0, 1.0, n_clusters)  # heterogeneity across queries
    clusters = np.repeat(np.arange(n_clusters), per_cluster)
    diffs = cluster_effect[clusters] + rng.normal(0, 0.5, clusters.size)
    return diffs, clusters.astype(str)


def test_bootstrap_is_deterministic_for_a_seed():
    d, c = _simulated(1.0, 80, 0)
    a = Bootstrap(c, resamples=2000, seed=11).estimate(d)
    b = Bootstrap(c, resamples=2000, seed=11).estimate(d)
    other = Bootstrap(c, resamples=2000, seed=12).estimate(d)
    assert a == b
    assert (a.lo, a.hi) != (other.lo, other.hi)


def test_bootstrap_point_estimate_is_the_mean_of_query_means():
    d = np.array([1.0, 3.0, 10.0])  # query a has two observations, b one
    est = Bootstrap(np.array(["a", "a", "b"]), resamples=100, seed=0).estimate(d)
    assert est.mean == pytest.approx((2.0 + 10.0) / 2) and est.n_clusters == 2 and est.n_pairs == 3


def test_bootstrap_interval_covers_a_known_effect_in_simulation():
    effect = 0.8
    single = Bootstrap(_simulated(effect, 120, 1)[1], resamples=5000, seed=0).estimate(_simulated(effect, 120, 1)[0])
    assert single.lo < effect < single.hi and single.lo > 0
    covered = 0
    trials = 60
    for s in range(trials):
        d, c = _simulated(effect, 60, 100 + s)
        e = Bootstrap(c, resamples=1000, seed=s).estimate(d)
        covered += e.lo <= effect <= e.hi
    assert covered / trials >= 0.85  # nominal 95 %; a broken interval (e.g. per-pair, not per-cluster) falls short


def test_contrasts_share_one_bootstrap_and_mhf_is_hg_over_abs_dpit():
    rng = np.random.default_rng(0)
    n = 200
    clusters = np.repeat(np.arange(50), 4).astype(str)
    S = rng.normal(50, 5, n)
    P = S - 10 + rng.normal(0, 1, n)
    F = P + 4 + rng.normal(0, 1, n)
    est = contrast_set({"stateless": S, "pit": P, "future": F, "future-h10": P + 1}, clusters, resamples=2000, seed=0)
    assert est["HG"].mean == pytest.approx(np.mean(F - P), abs=1e-9)
    assert est["dPIT"].mean == pytest.approx(np.mean(P - S), abs=1e-9)
    assert est["MHF"].mean == pytest.approx(est["HG"].mean / abs(est["dPIT"].mean))
    assert 0.3 < est["MHF"].mean < 0.5 and est["MHF"].lo < est["MHF"].mean < est["MHF"].hi
    assert est["HG_h10"].mean == pytest.approx(1.0)


def test_verdict_follows_the_interval_and_the_contract():
    assert verdict(Estimate(2.0, 0.5, 3.0, 10, 10), True) == "helps"
    assert verdict(Estimate(-2.0, -3.0, -0.5, 10, 10), True) == "harms"
    assert verdict(Estimate(0.5, -0.5, 1.5, 10, 10), True) == "inconclusive"
    assert verdict(Estimate(2.0, 0.5, 3.0, 10, 10), False) == "invalid"
