"""The LENS memory audit against the agent itself, with a scripted LLM behind a respx-mocked endpoint.

- parity: at an anchor, the memory signal and seed ranking cheap mode computes are exactly those ``Agent.ask``
  hands its prior when it reads the same materialised log through the same eligibility predicate;
- full mode: the agent rerun at anchors under every view; rows pass the contract (PIT TVR 0, Naive = Future),
  carry EM / F1 / Ev.Rec, and the report uses Ev.Rec as its headline.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import respx

from harness.audit.config import load_audit_config
from harness.audit.contract import check_run
from harness.audit.lens_events import LensEventLog, load_lens_run
from harness.audit.lens_memory import (
    LensContext,
    LensCorpus,
    PriorRanker,
    agent_min_similarity,
    entry_predicate,
    memory_signals,
    seed_cues,
    served_by_views,
)
from harness.audit.lens_pipeline import run_lens_audit
from harness.audit.rows import read_rows
from harness.audit.views import PIT, Future, FutureH
from harness.streams import random_stream
from harness.workloads import Request
from lens.parts import ReadingModel

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


lm = _load("_lens_memory_fixtures", HERE / "test_lens_memory.py")
so = _load("_scripted_oracle", HERE.parent / "lens" / "scripted_oracle.py")

BASE_URL = "http://llm.audit.test/v1"
CHAT_URL = f"{BASE_URL}/chat/completions"
MODEL = "audit-test-model"


def oracle(n_groups: int = 5, per_group: int = 6, bridge_for: str | None = None):
    decomps = {}
    for g in range(n_groups):
        for k in range(per_group):
            q = lm.question_text(g, k)
            subs = [lm.requirement_text(g, k)]
            if f"q{g}-{k}" == bridge_for:
                subs.append("Which shelf of the archive holds #1?")
            decomps[q] = {"questions": subs}
    return so.ScriptedOracle(
        decompositions=decomps,
        rules=[so.Rule(r"keeper ledger", "old ledgers", "The archive holds old ledgers.", "old ledgers")],
        synthesis=lambda p: "old ledgers" if "old ledgers" in p else "unknown",
    )


@pytest.fixture
def client():
    from lens._config import LLMSettings
    from lens.llm._llm import LLMClient

    c = LLMClient(base_url=BASE_URL, model=MODEL, settings=LLMSettings(retry_backoff_s=0, max_retries=0))
    yield c
    c.close()


def agent_config(capacity: int = 4):
    from lens._config import load_config

    return load_config(
        "deep",
        env={},
        overrides={
            "llm": {"base_url": BASE_URL, "model": MODEL, "cache": False},
            "loop": {"reading_model": {MODEL: ReadingModel.from_rates(0.95, 0.02).model_dump()}},
            "memory": {"enabled": True, "capacity": capacity},
        },
    )


@pytest.mark.parametrize("view", [PIT(), FutureH(3), Future()], ids=lambda v: v.label)
def test_cheap_mode_gives_the_prior_exactly_what_the_agent_does(tmp_path, client, monkeypatch, view):
    from lens._agent import Agent
    from lens.memory._memory import MemoryStore
    from lens.prior._prior import Prior

    run_dir, snap, _ = lm.build_bench(tmp_path / "bench")
    run = load_lens_run(run_dir)
    requests = tuple(Request(r.question_id, r.question) for r in run.records)
    stream = random_stream(requests, 4)
    log = LensEventLog.build(stream, {r.question_id: r for r in run.records}, version="parity")
    log.save(tmp_path / "mem" / "memory.jsonl")
    cfg = agent_config()
    # an anchor deep in the stream whose question also has a bridge fact waiting on R1
    i = int(len(stream) * 0.7)
    qid = stream.query_ids[i]
    g, k = (int(x) for x in qid[1:].split("-"))

    seen = []
    orig = Prior.score

    def spy(self, question, cues=(), *, memory=None, limit=None):
        out = orig(self, question, cues, memory=memory, limit=limit)
        seen.append(
            (
                [*cues],
                {self.view.docs[d].doc_id: s for d, s in (memory or {}).items()},
                [self.view.docs[c.index].doc_id for c in out],
            )
        )
        return out

    monkeypatch.setattr(Prior, "score", spy)
    orc = oracle(bridge_for=qid)
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=orc.reply)
        agent = Agent(cfg, client=client, memory=MemoryStore(tmp_path / "mem", capacity=4))
        result = agent.ask(
            run.records[[r.question_id for r in run.records].index(qid)].question,
            snap,
            eligible=entry_predicate(view, i),
            position=i,
            record=False,
        )
    monkeypatch.setattr(Prior, "score", orig)
    reqs = result.decomposition["requirements"]
    assert len(reqs) == 2 and reqs[1]["depends_on"] == "R1"

    # cheap mode, with the anchor's requirements as its bench row would record them (AskResult.decomposition)
    records = [
        r if r.question_id != qid else type(r)(**{**r.__dict__, "requirements": tuple(reqs)}) for r in run.records
    ]
    corpus = LensCorpus.read(snap)
    gold, _ = corpus.gold_labels([[] for _ in records])
    ctx = LensContext(
        records,
        corpus,
        PriorRanker(corpus, cfg.prior, depth=cfg.prior.candidates),
        gold,
        capacity=4,
        min_similarity=agent_min_similarity(),
    )
    (served,) = served_by_views(ctx, stream, log, np.asarray([i]), [view])
    doc, fresh = corpus.freshness(log.entries)
    signals, stale = memory_signals(served[0], doc, fresh, np.asarray([e.posterior for e in log.entries]))
    assert stale == 0
    expected_signal = [{corpus.view.docs[d].doc_id: s for d, s in sig.items()} for sig in signals]
    seed_calls = seen[: len(reqs)]
    assert [c[1] for c in seed_calls] == expected_signal
    assert any(expected_signal), "the view served nothing: the parity check would be vacuous"
    q = ctx.index[qid]
    for k_req, (cues, _, ranked) in enumerate(seed_calls):
        assert cues == seed_cues(reqs[k_req])
        mine = ctx.ranker.ranked(records[q].question, ctx.cues[q][k_req], signals[k_req])
        # the seed's one scoring call also serves the agent's 100-deep record: its first ``candidates`` are the loop's
        assert [corpus.view.docs[d].doc_id for d in mine] == ranked[: cfg.prior.candidates]
    if isinstance(view, PIT):
        assert all(p < i for p in served[0].positions(log))


def test_full_mode_reruns_the_agent_under_every_view(tmp_path, client):
    run_dir, _, qfile = lm.build_bench(tmp_path / "bench")
    cfg_path = lm.write_config(tmp_path, run_dir, qfile, mode="full", kinds='["random"]')
    cfg = load_audit_config(cfg_path)
    cfg = cfg.model_copy(
        update={
            "lens": cfg.lens.model_copy(
                update={
                    "overrides": [
                        f"llm.base_url={BASE_URL}",
                        f"llm.model={MODEL}",
                        f"loop.reading_model.{MODEL}={json.dumps(ReadingModel.from_rates(0.95, 0.02).model_dump())}",
                    ]
                }
            )
        }
    )
    orc = oracle()
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=orc.reply)
        res = run_lens_audit(cfg, tmp_path / "full", client=client)
    out = tmp_path / "full"
    assert res.rows == 4 * 6  # 4 anchors × (Stateless, PIT, Future-h2, Future-h5, Future, Naive)
    assert check_run(out) == []
    t = read_rows(out / "rows.jsonl")
    cond = t["condition"].astype(str)
    assert set(t["memory"].astype(str)) == {"lens-full"} and set(t["retriever"].astype(str)) == {"lens-agent"}
    assert (t["tvr"][cond == "pit"] == 0).all() and (t["n_selected"][cond == "stateless"] == 0).all()
    for f in ("em", "f1", "ev_rec"):
        assert np.isfinite(t[f]).all()
    # the memory matters to the agent: with the group's archive served, it cites it
    ev = {c: t["ev_rec"][cond == c].mean() for c in ("stateless", "future")}
    assert ev["future"] > ev["stateless"]
    fut, nav = np.flatnonzero(cond == "future"), np.flatnonzero(cond == "naive")
    assert [t.selected_lists[r] for r in fut] == [t.selected_lists[r] for r in nav]
    assert (t["em"][fut] == t["em"][nav]).all() and (t["answer"][fut] == t["answer"][nav]).all()
    summary = json.loads((out / "report" / "summary.json").read_text())
    assert summary["headline"] == "ev_rec"
