"""The curated public surface of harness.retrieval."""

from __future__ import annotations

import harness.retrieval


def test_retrieval_exports_exactly_its_public_names():
    assert set(harness.retrieval.__all__) == {
        "BM25Index",
        "BM25Params",
        "DenseEncoder",
        "DenseIndex",
        "DenseUnavailable",
        "IndexFolderError",
        "RRF_K",
        "default_model_path",
        "fuse_index_rankings",
        "reciprocal_rank_fusion",
        "tokenize",
        "top_k",
    }
    for name in harness.retrieval.__all__:
        assert getattr(harness.retrieval, name) is not None
