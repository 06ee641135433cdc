"""BM25 index: parity with a straightforward Lucene BM25, analysis (stems, stopwords), ties, persistence."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from harness.retrieval import BM25Index, BM25Params, IndexFolderError, tokenize
from lens._errors import LensError

# Words that are neither stopwords nor changed by the English stemmer, so both implementations see the
# same tokens and the comparison is about scoring alone.
CORPUS = [
    "plum banana lemon plum",
    "banana banana kiwi",
    "lemon kiwi mango papaya melon",
    "plum",
    "mango mango mango banana",
    "kiwi melon",
]


def reference_bm25(docs: list[list[str]], query: list[str], k1: float = 0.9, b: float = 0.4) -> list[float]:
    """Lucene BM25 written out: idf = ln(1 + (N - df + 0.5) / (df + 0.5)); tf part tf / (tf + k1 (1 - b + b dl / avgdl))."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    df = Counter(t for d in docs for t in set(d))
    scores = []
    for d in docs:
        tf = Counter(d)
        s = 0.0
        for t in query:
            if tf[t] == 0:
                continue
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            s += idf * tf[t] / (tf[t] + k1 * (1 - b + b * len(d) / avgdl))
        scores.append(s)
    return scores


@pytest.mark.parametrize("query", ["plum", "banana kiwi", "mango melon papaya", "lemon plum banana kiwi", "kiwi kiwi"])
def test_scores_match_a_straightforward_lucene_bm25(query):
    index = BM25Index.build(CORPUS)
    docs = [d.split() for d in CORPUS]
    assert tokenize(CORPUS) == docs  # the premise: analysis leaves these words alone
    expected = reference_bm25(docs, query.split())
    np.testing.assert_allclose(index.scores(query), expected, rtol=1e-5, atol=1e-6)


def test_parameters_reach_the_scorer():
    index = BM25Index.build(CORPUS, params=BM25Params(k1=1.5, b=0.75))
    expected = reference_bm25([d.split() for d in CORPUS], ["banana", "mango"], k1=1.5, b=0.75)
    np.testing.assert_allclose(index.scores("banana mango"), expected, rtol=1e-5, atol=1e-6)


def test_defaults_are_lucene_k1_09_b_04_with_english_analysis():
    p = BM25Params()
    assert (p.method, p.k1, p.b, p.stemmer, p.stopwords) == ("lucene", 0.9, 0.4, "english", "en")


def test_stemming_and_stopwords_apply_to_documents_and_queries():
    index = BM25Index.build(["The runners were running quickly", "a cat sat on the mat"], ids=["run", "cat"])
    assert index.search_ids("run", 1)[0][0] == "run"
    assert index.scores("the a on")[0] == 0.0 and index.scores("the a on")[1] == 0.0


def test_search_breaks_ties_by_document_index_and_returns_k_documents():
    index = BM25Index.build(["kiwi", "mango", "kiwi", "melon"])
    idx, val = index.search(["kiwi", "absentword"], 4)
    assert idx[0].tolist() == [0, 2, 1, 3]
    assert val[0][0] == val[0][1] > 0 and val[0][2] == val[0][3] == 0
    assert idx[1].tolist() == [0, 1, 2, 3]  # a query with no known term: all zero, index order


def test_search_ids_maps_positions_to_ids():
    index = BM25Index.build(CORPUS, ids=[f"d{i}" for i in range(len(CORPUS))])
    top = index.search_ids("mango", 2)
    assert [d for d, _ in top] == ["d4", "d2"]


def test_save_and_load_round_trip_keeps_scores_and_hash(tmp_path):
    index = BM25Index.build(CORPUS, ids=list("abcdef"))
    index.save(tmp_path / "ix")
    loaded = BM25Index.load(tmp_path / "ix", expected_hash=index.index_hash)
    assert loaded.ids == list("abcdef")
    assert loaded.index_hash == index.index_hash
    np.testing.assert_array_equal(loaded.scores("banana kiwi"), index.scores("banana kiwi"))


def test_load_rejects_an_altered_folder(tmp_path):
    index = BM25Index.build(CORPUS)
    index.save(tmp_path / "ix")
    (tmp_path / "ix" / "ids.json").write_text('["x","y","z","u","v","w"]', encoding="utf-8")
    with pytest.raises(IndexFolderError, match="ids.json"):
        BM25Index.load(tmp_path / "ix")


def test_load_rejects_a_different_index(tmp_path):
    BM25Index.build(CORPUS).save(tmp_path / "ix")
    other = BM25Index.build(CORPUS[:3])
    with pytest.raises(IndexFolderError, match="expected"):
        BM25Index.load(tmp_path / "ix", expected_hash=other.index_hash)


def test_index_hash_depends_on_text_ids_and_parameters():
    base = BM25Index.build(CORPUS).index_hash
    assert BM25Index.build(CORPUS[:-1] + ["kiwi"]).index_hash != base
    assert BM25Index.build(CORPUS, ids=list("abcdef")).index_hash != base
    assert BM25Index.build(CORPUS, params=BM25Params(k1=1.2)).index_hash != base
    assert BM25Index.build(list(CORPUS)).index_hash == base


def test_empty_corpus_and_duplicate_ids_are_errors():
    with pytest.raises(LensError, match="empty corpus"):
        BM25Index.build([])
    with pytest.raises(LensError, match="not unique"):
        BM25Index.build(["a b", "c d"], ids=["x", "x"])
