"""BM25-RAG end to end on a tiny snapshot: the persisted index ranks, the top k go into one answer call; the
index persists, reloads identically and refuses an altered folder; a stale index cannot reach new articles.

(BM25 scores against a second implementation: tests/retrieval/test_bm25.py.)"""

from __future__ import annotations

import shutil

import pytest

from harness.bench.datasets import article_key
from harness.bench.metrics import evidence_recall
from harness.bench.systems import BM25Retriever, IndexStore, RAGSystem, SnapshotCorpus
from harness.bench.systems.indexes import folder_bytes
from harness.retrieval import IndexFolderError

from .scripted_llm import passages


def bm25_arm(root, folder, client, config, k=3):
    index, build, _ = IndexStore(root).ensure_bm25(SnapshotCorpus.load(folder))
    caps = dict(question_timeout_s=config.budget.question_timeout_s, max_tokens=config.budget.max_tokens_per_query)
    return RAGSystem(BM25Retriever(index, build), folder, client, k=k, **caps)


def test_top_k_documents_go_into_one_answer_call(endpoint, responder, client, config, bench_data, tmp_path):
    q = bench_data["by_id"][bench_data["G6"][0]]
    arm = bm25_arm(tmp_path / "idx", bench_data["D6"], client, config, k=3)

    pred = arm.answer(q.question)

    assert responder.kinds() == ["rag"] and pred.oracle_calls == 1
    shown = passages(responder.calls[0][1][-1]["content"])
    assert [src for _, src, _ in shown] == [d.title for d in pred.retrieved]
    assert len(pred.retrieved) == 3
    assert evidence_recall(q.gold_titles, pred.retrieved_titles) == 1.0
    assert pred.answer == pred.retrieved[0].title  # the scripted model answers with the first passage's title
    for p, (_, _, sents) in zip(pred.evidence, shown):
        assert p.text.splitlines() == [p.title, *(s for _, s in sents)]
        assert (p.line_start, p.first_sentence) == (1, 0) and p.line_end == p.last_sentence + 2
    assert pred.details["ranked"] == [d.path for d in pred.retrieved]


def test_the_index_persists_and_reloads_with_identical_rankings(bench_data, tmp_path):
    store = IndexStore(tmp_path / "idx")
    corpus = SnapshotCorpus.load(bench_data["D6"])
    first, build, built = store.ensure_bm25(corpus)
    again, build2, built2 = store.ensure_bm25(corpus)

    assert built and not built2 and build2 == build
    assert again.index_hash == first.index_hash
    for qid in bench_data["G6"]:
        text = bench_data["by_id"][qid].question
        assert again.search_ids(text, 8) == first.search_ids(text, 8)
    folder = store.bm25_folder(corpus.checksum)
    assert build.corpus_checksum == corpus.checksum and build.n_docs == len(corpus)
    assert build.bytes == folder_bytes(folder) > 0
    assert build.seconds > 0 and build.peak_rss_bytes >= build.rss_before_bytes > 0
    assert not [p for p in folder.parent.iterdir() if ".partial-" in p.name]


def test_an_altered_index_folder_is_refused(bench_data, tmp_path):
    store = IndexStore(tmp_path / "idx")
    corpus = SnapshotCorpus.load(bench_data["D6"])
    store.ensure_bm25(corpus)
    victim = next(p for p in (store.bm25_folder(corpus.checksum) / "bm25s").iterdir() if p.is_file())
    victim.write_bytes(victim.read_bytes() + b" ")

    with pytest.raises(IndexFolderError, match="changed after save"):
        store.load_bm25(corpus.checksum)


def test_a_stale_index_cannot_reach_articles_added_after_its_build(endpoint, client, config, bench_data, tmp_path):
    q = bench_data["by_id"][bench_data["new"][0]]  # a question whose gold articles arrived with D12
    stale = bm25_arm(tmp_path / "idx", bench_data["D6"], client, config)
    stale.folder = bench_data["D12"]  # reads the grown folder, ranks with the D6 index
    fresh = bm25_arm(tmp_path / "idx", bench_data["D12"], client, config)

    assert evidence_recall(q.gold_titles, stale.answer(q.question).retrieved_titles) == 0.0
    assert evidence_recall(q.gold_titles, fresh.answer(q.question).retrieved_titles) == 1.0


def test_indexed_files_gone_from_the_folder_are_skipped_and_named(endpoint, client, config, bench_data, tmp_path):
    folder = shutil.copytree(bench_data["D6"], tmp_path / "D6")
    q = bench_data["by_id"][bench_data["G6"][1]]
    arm = bm25_arm(tmp_path / "idx", folder, client, config)
    top = arm.retriever.rank(q.question, 3)[0]
    (folder / top).unlink()

    pred = arm.answer(q.question)

    assert pred.details["missing_files"] == [top]
    assert top not in [d.path for d in pred.retrieved] and len(pred.retrieved) == 2


def test_a_query_matching_nothing_retrieves_nothing_but_still_answers(
    endpoint, responder, client, config, bench_data, tmp_path
):
    arm = bm25_arm(tmp_path / "idx", bench_data["D6"], client, config)

    pred = arm.answer("zzzz qqqq xxyyzz?")

    assert pred.retrieved == [] and pred.evidence == [] and pred.error is None
    assert "(no passages were retrieved)" in responder.calls[0][1][-1]["content"]


def test_documents_that_match_no_query_term_are_not_ranked(bench_data, tmp_path):
    corpus = SnapshotCorpus.load(bench_data["D6"])
    index, build, _ = IndexStore(tmp_path / "idx").ensure_bm25(corpus)
    ranked = BM25Retriever(index, build).rank("Quarry03", 50)
    assert [article_key(corpus.by_name(n).title) for n in ranked] == ["quarry03"]


def test_k_must_be_positive(client, config, bench_data, tmp_path):
    with pytest.raises(ValueError, match="k must be"):
        bm25_arm(tmp_path / "idx", bench_data["D6"], client, config, k=0)
