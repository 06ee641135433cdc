"""The LENS arm: the adapter maps the agent's public result (evidence, cost) onto a Prediction, and runs the real
``lens.Agent`` end to end against the scripted endpoint on a tiny snapshot."""

from __future__ import annotations

from pathlib import Path

from harness.bench.systems import LensSystem, prediction_from_result
from harness.bench.systems.corpus import read_snapshot_doc
from lens import AskResult, Evidence, RequirementStatus
from lens.parts import QuestionCost


def evidence(path, title, first_line, last_line, text="t") -> Evidence:
    return Evidence("E1", path, path, title, 0, 0, first_line, last_line, text, "0" * 64, ("R1",), "confirmed")


def result(ev, answer="Tallow03", cost=None) -> AskResult:
    return AskResult(
        question="q",
        answer=answer,
        best_effort=False,
        intent="bridge",
        requirements=[RequirementStatus("R1", "r", "certified", "v", 9.0, ("E1",))],
        evidence=ev,
        trace=[],
        cost=cost
        or QuestionCost(oracle_calls=5, prompt_tokens=100, completion_tokens=20, cache_hits=1, seconds=2.0, rounds=2),
        corpus={},
        config_hash="c",
        model="m",
        stop_reason="certified",
    )


def test_evidence_lines_become_supporting_facts_under_the_files_title(bench_data):
    q = bench_data["by_id"][bench_data["G6"][0]]
    river, lake = q.gold_titles
    ev = [evidence(lake, "lens-title", 3, 3, "lies in"), evidence(river, river, 1, 3), evidence(lake, lake, 3, 4)]

    pred = prediction_from_result(result(ev), bench_data["D6"])

    assert pred.retrieved_titles == [lake, river]  # distinct cited documents, first citation first
    assert pred.supporting_facts == [(lake, 1), (river, 0), (river, 1), (lake, 2)]  # title line 1 maps to none
    assert [(p.first_sentence, p.last_sentence) for p in pred.evidence] == [(1, 1), (0, 1), (1, 2)]
    assert pred.evidence[0].title == lake  # the file's first line, not the agent's label
    assert (pred.oracle_calls, pred.prompt_tokens, pred.completion_tokens, pred.cache_hits) == (5, 100, 20, 1)
    assert pred.details["stop_reason"] == "certified" and pred.details["rounds"] == 2


def test_a_record_in_a_shard_is_cited_by_sentence_index_which_is_the_sent_id(tmp_path):
    """Fullwiki: the pool's .bz2 shards hold the official layout (text = the list of sentences); the agent cites
    record sentences by index, which the supporting facts keep as HotpotQA sent_ids."""
    import bz2
    import json

    from lens.parts import scan_corpus

    (tmp_path / "AA").mkdir()
    recs = [
        {"id": "1", "url": "u", "title": "Calder Point", "text": ["Calder Point is a cape.", " It has a light."]},
        {"id": "2", "url": "u", "title": "Skerrow", "text": ["Skerrow is an island.", " Boats moor.", " Gulls."]},
    ]
    with bz2.open(tmp_path / "AA" / "wiki_00.bz2", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in recs)
    (doc,) = [d for d in scan_corpus(tmp_path).documents if d.title == "Skerrow"]
    assert [s.text.strip() for s in doc.sentences] == ["Skerrow is an island.", "Boats moor.", "Gulls."]
    ev = Evidence("E1", doc.path, doc.doc_id, "Skerrow", 1, 2, 2, 2, "Boats moor. Gulls.", "0" * 64, ("R1",), "found")

    pred = prediction_from_result(result([ev]), tmp_path)

    assert pred.supporting_facts == [("Skerrow", 1), ("Skerrow", 2)]
    assert pred.retrieved_titles == ["Skerrow"] and pred.evidence[0].first_sentence == 1


def test_no_evidence_means_empty_supporting_facts_not_none(bench_data):
    pred = prediction_from_result(result([], answer=""), bench_data["D6"])
    assert pred.supporting_facts == [] and pred.retrieved == [] and not pred.grounded(["x"])


def test_the_agent_end_to_end_on_a_snapshot(endpoint, responder, client, config, bench_data):
    q = bench_data["by_id"][bench_data["G6"][0]]
    arm = LensSystem(bench_data["D6"], config, client)

    pred = arm.answer(q.question)

    assert pred.error is None, pred.error
    assert pred.oracle_calls == len(responder.calls) > 0
    assert pred.prompt_tokens == 20 * len(responder.calls) and pred.completion_tokens == 5 * len(responder.calls)
    assert pred.oracle_calls <= config.budget.c0 + config.budget.c1 * config.budget.max_rounds
    assert pred.retrieved and pred.evidence
    for p in pred.evidence:
        doc = read_snapshot_doc(bench_data["D6"], p.path)
        assert doc is not None and p.title == doc.title
        if p.first_sentence is not None:
            assert p.line_start <= p.first_sentence + 2 <= p.last_sentence + 2 <= p.line_end
    assert {t for t, _ in pred.supporting_facts} <= set(pred.retrieved_titles)
    assert arm.index_free and arm.params()["memory"] is None
    assert not any(Path(bench_data["D6"]).glob(".*"))  # nothing written into the corpus
