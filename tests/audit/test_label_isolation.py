"""No relevance label reaches stream construction, base behaviour, the event log or the trace memory."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from harness.audit.baselists import ArtifactCache, compute_base_lists, compute_query_vectors
from harness.audit.config import AuditConfig, RetrievalSpec
from harness.audit.events import EventLog
from harness.audit.memories import PositiveFeedbackCache, TraceMemory, rerank
from harness.audit.pipeline import build_streams
from harness.audit.replay import choose_anchors
from harness.audit.views import PIT, Future, neighbour_order, select
from harness.streams import random_stream, semantic_stream
from harness.workloads import Query, Request, Workload, make_workload


def _forbid_labels(monkeypatch):
    def no_labels(self):
        raise AssertionError("relevance labels were read")

    monkeypatch.setattr(Workload, "gold", no_labels)


def _trace_lists(w: Workload, seed: int = 0):
    """Everything the trace memory path computes, from label-free inputs only."""
    requests = w.requests()
    spec = RetrievalSpec(retrievers=["bm25"], depth=60)
    cache = ArtifactCache(None)
    qv = compute_query_vectors(requests, "tfidf", spec, cache, w.queries_hash)
    base = compute_base_lists(
        w.assets,
        requests,
        "bm25",
        spec,
        cache,
        corpus_hash=w.corpus_hash,
        queries_hash=w.queries_hash,
        tie_key=w.id_order(),
    )
    stream = semantic_stream(requests, qv.vectors, seed)
    events = EventLog.build(stream, lambda q: (base.indices[q, :20], base.scores[q, :20]), depth=20, version="v")
    anchors = choose_anchors(len(stream), per_position=5).positions
    sim = qv.similarity()
    rows = sim[np.ix_(stream.order[anchors], stream.order)]
    cand = neighbour_order(rows, anchors)
    lists = {}
    for view in (PIT(), Future()):
        sel = select(view, cand, rows, anchors, 8)
        bonus = TraceMemory().bonus(sel, events, len(w.assets), w.id_order())
        lists[view.label] = rerank(base.indices[stream.order[anchors]], bonus, len(w.assets), w.id_order())
    return stream, base, events, lists, (cand, rows, anchors)


def test_requests_carry_no_labels(workload):
    assert [f.name for f in dataclasses.fields(Request)] == ["id", "text", "timestamp"]
    assert all(not hasattr(r, "gold") for r in workload.requests())


def test_headline_streams_are_built_without_labels(monkeypatch, workload):
    cfg = AuditConfig.model_validate(
        {
            "workloads": [{"name": "syn", "format": "beir", "path": "x"}],
            "streams": {"kinds": ["random", "semantic"], "seeds": [0, 1]},
        }
    )
    vectors = np.random.default_rng(0).normal(size=(len(workload.queries), 5))
    _forbid_labels(monkeypatch)
    streams = build_streams(cfg, workload, vectors)
    assert [s.name for s in streams] == ["random-s0", "random-s1", "semantic-s0", "semantic-s1"]
    assert not any(s.uses_gold for s in streams)
    # Positive control: the stress stream does read labels, so the guard above is live.
    stress = cfg.model_copy(update={"streams": cfg.streams.model_copy(update={"kinds": ["gold-overlap"]})})
    with pytest.raises(AssertionError, match="labels were read"):
        build_streams(stress, workload, vectors)


def test_trace_memory_path_runs_with_labels_withheld(monkeypatch, workload):
    _forbid_labels(monkeypatch)
    stream, base, events, lists, _ = _trace_lists(workload)
    assert len(events) == len(stream) and lists["pit"].shape[1] == 60


def test_changing_every_label_changes_nothing_on_the_label_free_path(workload):
    rng = np.random.default_rng(9)
    ids = [a.id for a in workload.assets]
    relabelled = make_workload(
        workload.name,
        workload.assets,
        [Query(q.id, q.text, tuple(rng.choice(ids, 3, replace=False)), q.timestamp) for q in workload.queries],
    )
    assert relabelled.labels_hash != workload.labels_hash
    s1, b1, e1, l1, sel_inputs = _trace_lists(workload)
    s2, b2, e2, l2, _ = _trace_lists(relabelled)
    assert s1.hash == s2.hash and b1.hash == b2.hash and e1.hash == e2.hash
    for k in l1:
        np.testing.assert_array_equal(l1[k], l2[k])
    # Positive control: the label-based cache *does* change with the labels.
    cand, rows, anchors = sel_inputs
    sel = select(Future(), cand, rows, anchors, 8)
    base = b1.indices[s1.order[anchors]]
    n, tie = len(workload.assets), workload.id_order()
    c1 = rerank(base, PositiveFeedbackCache(workload.gold()).bonus(sel, e1, n, tie), n, tie)
    c2 = rerank(base, PositiveFeedbackCache(relabelled.gold()).bonus(sel, e1, n, tie), n, tie)
    assert not np.array_equal(c1, c2)


def test_streams_depend_only_on_request_order_and_seed(workload):
    a = random_stream(workload.requests(), 3)
    b = random_stream(tuple(Request(r.id, r.text, r.timestamp) for r in workload.requests()), 3)
    assert a.hash == b.hash
