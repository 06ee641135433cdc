"""Loaders (BEIR, HotpotQA), streams (random, semantic bursts, natural, gold-overlap) and the event log."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.audit.events import EventLog, FrozenLogError
from harness.audit.inputs import load_hotpotqa
from harness.streams import Stream, gold_overlap_stream, natural_stream, random_stream, semantic_stream
from harness.workloads import InputError, Request, load_beir

# ---------------------------------------------------------------------------------------------- loaders


def test_beir_loader_reads_assets_types_queries_and_gold(beir_folder, workload):
    w = load_beir(beir_folder, split="test")
    assert len(w.assets) == len(workload.assets) and w.type_names() == ("table", "text")
    assert [q.gold for q in w.queries] == [q.gold for q in workload.queries]
    assert w.corpus_hash == workload.corpus_hash
    assert set(w.sources) == {str(beir_folder / n) for n in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")}


def test_beir_loader_skips_and_counts_unknown_ids_and_unlabelled_queries(tmp_path):
    d = tmp_path / "b"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text('{"_id": "a1", "title": "T", "text": "x"}\n{"_id": "a2", "text": "y"}\n')
    (d / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "x?", "timestamp": "2024-01-02T00:00:00Z"}\n{"_id": "q2", "text": "y?"}\n'
    )
    (d / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq1\ta1\t1\nq1\tzz\t1\nq9\ta2\t1\nq2\ta2\t0\n")
    w = load_beir(d)
    assert [q.id for q in w.queries] == ["q1"] and w.queries[0].gold == ("a1",)
    assert w.notes == {"qrels_unknown_asset": 1, "qrels_unknown_query": 1, "queries_without_gold": 1}
    assert w.assets[0].text == "T\nx" and w.assets[0].type == "text"
    assert w.queries[0].timestamp == pytest.approx(1704153600.0)


@pytest.mark.parametrize(
    "corpus, message",
    [
        ('{"_id": "a1", "text": "x"}\n{"_id": "a1", "text": "y"}\n', "not unique"),
        ('{"_id": "a1"}\n', 'line 1: field "text" missing'),
        ('{"_id": "a1", "text": "x"\n', "line 1: malformed JSON"),
    ],
)
def test_beir_loader_names_file_line_and_field_of_bad_records(tmp_path, corpus, message):
    d = tmp_path / "b"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text(corpus)
    (d / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n')
    (d / "qrels" / "dev.tsv").write_text("q1\ta1\t1\n")
    with pytest.raises(InputError, match=message):
        load_beir(d)


def test_beir_loader_needs_a_split_when_there_are_several(beir_folder):
    (beir_folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n")
    with pytest.raises(InputError, match="name the qrels split"):
        load_beir(beir_folder)


def test_hotpotqa_loader_uses_articles_as_assets_and_supporting_titles_as_gold(tmp_path):
    arts = [
        {"id": "p0", "title": "Alpha", "text": "A.", "sentences": ["Alpha is a letter.", " It is first."]},
        {"id": "p1", "title": "Beta", "text": "B.", "sentences": ["Beta is second."]},
        {"id": "p2", "title": "Gamma", "text": "G.", "sentences": ["Gamma."]},
    ]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(a) + "\n" for a in arts))
    qs = [
        {
            "_id": "x1",
            "question": "Which letter is first?",
            "answer": "Alpha",
            "type": "bridge",
            "level": "easy",
            "supporting_facts": [["alpha", 0], ["Beta", 0], ["Alpha", 1]],
            "context": [["Alpha", ["Alpha is a letter."]]],
        }
    ]
    (tmp_path / "q.json").write_text(json.dumps(qs))
    w = load_hotpotqa(tmp_path / "q.json", tmp_path / "a.jsonl")
    assert [a.id for a in w.assets] == ["Alpha", "Beta", "Gamma"]
    assert w.assets[0].text == "Alpha\nAlpha is a letter. It is first." and w.assets[0].type == "article"
    assert w.queries[0].gold == ("Alpha", "Beta")  # titles matched case-insensitively, de-duplicated
    qs[0]["supporting_facts"].append(["Delta", 0])
    (tmp_path / "q.json").write_text(json.dumps(qs))
    with pytest.raises(InputError, match="'Delta' is not in"):
        load_hotpotqa(tmp_path / "q.json", tmp_path / "a.jsonl")


# ---------------------------------------------------------------------------------------------- streams


def _requests(n: int, ts: bool = False) -> tuple[Request, ...]:
    return tuple(Request(f"r{i:03d}", f"text {i}", float(1000 - i) if ts else None) for i in range(n))


def test_random_stream_is_a_seeded_permutation_with_a_stable_hash():
    r = _requests(50)
    a, b, c = random_stream(r, 1), random_stream(r, 1), random_stream(r, 2)
    assert sorted(a.order.tolist()) == list(range(50))
    assert a.hash == b.hash and a.hash != c.hash
    assert a.order.tolist() != c.order.tolist()  # the seed drives the permutation, not just the label
    assert a.query_ids == tuple(r[i].id for i in a.order)


def test_semantic_stream_emits_runs_of_4_to_16_from_one_cluster():
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(6, 8)) * 10
    labels = np.repeat(np.arange(6), 25)
    emb = centers[labels] + rng.normal(size=(150, 8))
    s = semantic_stream(_requests(150), emb, seed=3, n_clusters=6)
    assert sorted(s.order.tolist()) == list(range(150))
    runs, cur = [], 1
    seq = labels[s.order]
    for x, y in zip(seq, seq[1:]):
        if x == y:
            cur += 1
        else:
            runs.append(cur)
            cur = 1
    runs.append(cur)
    assert max(runs) <= 16
    assert np.mean([4 <= r <= 16 for r in runs]) > 0.8  # only runs cut short by an emptied cluster are shorter
    assert semantic_stream(_requests(150), emb, seed=3, n_clusters=6).hash == s.hash


def test_natural_stream_orders_by_timestamp_and_needs_one_everywhere():
    s = natural_stream(_requests(5, ts=True))
    assert s.order.tolist() == [4, 3, 2, 1, 0] and not s.uses_gold
    with pytest.raises(InputError, match="no timestamp"):
        natural_stream(_requests(5))


def test_gold_overlap_stream_is_tagged_as_using_labels(workload):
    s = gold_overlap_stream(workload.requests(), workload.gold(), 0)
    assert s.uses_gold and s.kind == "gold-overlap"
    assert sorted(s.order.tolist()) == list(range(len(workload.queries)))


def test_stream_files_round_trip_and_detect_edits(tmp_path):
    s = random_stream(_requests(10), 4)
    s.save(tmp_path / "s.json")
    assert Stream.load(tmp_path / "s.json").hash == s.hash
    data = json.loads((tmp_path / "s.json").read_text())
    data["query_ids"][0], data["query_ids"][1] = data["query_ids"][1], data["query_ids"][0]
    (tmp_path / "s.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="hash"):
        Stream.load(tmp_path / "s.json")


# -------------------------------------------------------------------------------------------- event log


def test_event_log_is_built_in_stream_order_from_each_requests_own_base_output():
    r = _requests(6)
    s = random_stream(r, 0)
    base = {q: (np.array([q, q + 10, q + 20]), np.array([3.0, 2.0, 1.0])) for q in range(6)}
    seen = []

    def behaviour(q):
        seen.append(q)
        return base[q]

    log = EventLog.build(s, behaviour, depth=2, version="bm25:test")
    assert seen == s.order.tolist()  # online: one request at a time, in arrival order
    for j in range(6):
        e = log.event(j)
        assert e.position == j and e.query_id == s.query_ids[j]
        assert e.assets == (s.order[j], s.order[j] + 10) and e.version == "bm25:test"


def test_event_log_is_append_only_and_read_only_once_built():
    log = EventLog.build(
        random_stream(_requests(4), 0), lambda q: (np.array([q]), np.array([1.0])), depth=1, version="v"
    )
    with pytest.raises(FrozenLogError):
        log.append(0, "r000", np.array([1]), np.array([1.0]))
    with pytest.raises(ValueError):
        log.assets[0, 0] = 99
    with pytest.raises(ValueError):
        log.query_index[0] = 3
