"""Reciprocal rank fusion: the formula, k = 60, tie-breaking by document id, determinism."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from harness.retrieval import RRF_K, fuse_index_rankings, reciprocal_rank_fusion


def test_scores_are_sums_of_reciprocal_ranks_with_k_60():
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]]))
    assert RRF_K == 60
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)


def test_order_is_score_descending():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]])
    assert [d for d, _ in fused] == ["a", "c", "b"]


def test_ties_are_broken_by_document_id():
    # "z" and "m" each sit at rank 1 of one list: equal scores, so "m" (smaller id) comes first.
    fused = reciprocal_rank_fusion([["z", "q"], ["m", "b"]])
    assert [d for d, _ in fused] == ["m", "z", "b", "q"]
    assert fused[0][1] == fused[1][1]


def test_result_does_not_depend_on_the_order_of_the_input_lists():
    lists = [["a", "b", "c", "d"], ["d", "c", "e"], ["b", "e", "a"], ["c", "a"]]
    results = {tuple(reciprocal_rank_fusion(list(p))) for p in itertools.permutations(lists)}
    assert len(results) == 1


def test_top_truncates_and_repeated_ids_are_rejected():
    assert len(reciprocal_rank_fusion([["a", "b", "c"]], top=2)) == 2
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a", "a"]])


def test_index_fusion_matches_id_fusion_and_breaks_ties_by_the_given_key():
    rng = np.random.default_rng(3)
    ids = [f"doc{i:02d}" for i in range(30)]
    rank_of_id = np.argsort(np.argsort(ids))  # identity here: ids sort like indices
    a = np.stack([rng.permutation(30)[:10] for _ in range(5)])
    b = np.stack([rng.permutation(30)[:10] for _ in range(5)])
    idx, val = fuse_index_rankings([a, b], top=15, tie_key=rank_of_id)
    for q in range(5):
        ref = reciprocal_rank_fusion([[ids[i] for i in a[q]], [ids[i] for i in b[q]]], top=15)
        assert [ids[i] for i in idx[q] if i >= 0] == [d for d, _ in ref]
        np.testing.assert_allclose(val[q][: len(ref)], [s for _, s in ref])


def test_index_fusion_uses_the_tie_key_not_the_index():
    a = np.array([[0, 1]])
    b = np.array([[1, 0]])  # 0 and 1 tie exactly
    idx, _ = fuse_index_rankings([a, b], top=2)
    assert idx[0].tolist() == [0, 1]
    idx, _ = fuse_index_rankings([a, b], top=2, tie_key=np.array([1, 0]))
    assert idx[0].tolist() == [1, 0]


def test_index_fusion_pads_short_results_and_skips_padding():
    idx, val = fuse_index_rankings([np.array([[3, -1]]), np.array([[-1, -1]])], top=3)
    assert idx[0].tolist() == [3, -1, -1]
    assert val[0][0] == pytest.approx(1 / 61) and val[0][1] == 0


def test_index_fusion_is_deterministic_under_list_permutation():
    rng = np.random.default_rng(0)
    lists = [np.stack([rng.permutation(40)[:20] for _ in range(3)]) for _ in range(4)]
    outs = [fuse_index_rankings(list(p), top=25) for p in itertools.permutations(lists)]
    for idx, val in outs[1:]:
        np.testing.assert_array_equal(idx, outs[0][0])
        np.testing.assert_array_equal(val, outs[0][1])
    assert math.isfinite(float(outs[0][1].sum()))
