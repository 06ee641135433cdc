"""LENS warm-reuse memory under PIT and Future views — full mode: the agent itself, rerun at a few anchors.

At each anchor ``i`` and for each view, ``lens.Agent.ask(question, folder, eligible=…, position=i, record=False)``
runs with a ``lens.MemoryStore`` materialised from the stream's frozen event log (every entry, each stamped with
its stream position); the view's predicate (``MemoryView.at(i)``, never the own event) decides what the agent's
own lookups may read. Nothing is recorded back (``record=False``): the log stays as built. **Naive** gets, per
anchor, a store materialised from the whole stream *without* the anchor question's own entries (matched by query
identity) and reads it with every entry eligible — a separate path that must reproduce Future.

A :class:`RecordingMemoryStore` (``MemoryStore`` with its production ``lookup``, recording what each lookup
served) gives each row its selected positions. Rows carry answer EM / F1 against the gold answer and Ev.Rec
(gold titles among the cited documents), plus the run's cost. Every ask costs LLM calls: keep anchors few. With
the response cache on (forced), conditions that serve the same memory replay the same calls, so Naive = Future
holds call for call; the decomposition call comes before any memory read and is shared by every condition.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from harness.audit.lens_events import LensEventLog
from harness.audit.lens_memory import NAIVE, LensContext, condition_scalars, entry_predicate, served_columns
from harness.audit.replay import Anchors
from harness.audit.rows import RowBlock
from harness.audit.views import MemoryView
from harness.bench.metrics import answer_scores, evidence_recall
from harness.streams import Stream
from lens import Agent, LensError, LLMError, MemoryEntry, MemoryStore

__all__ = ["RecordingMemoryStore", "FullModeLabels", "replay_lens_full"]


class RecordingMemoryStore(MemoryStore):
    """``MemoryStore`` whose (unchanged) lookups are recorded: ``served[k]`` is what lookup ``k`` returned."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.served: list[list[tuple[MemoryEntry, float]]] = []

    def lookup(self, requirement, eligible, *, capacity=None, embedding=None):  # type: ignore[override]
        got = super().lookup(requirement, eligible, capacity=capacity, embedding=embedding)
        self.served.append(list(got))
        return got

    def append(self, entries):  # type: ignore[override]
        raise RuntimeError("the audit's memory is read-only (record=False): nothing may be appended")


class FullModeLabels:
    """Gold answers and titles per question id: read only to score a finished answer."""

    def __init__(self, answers: Mapping[str, str], titles: Mapping[str, Sequence[str]]) -> None:
        self.answers = dict(answers)
        self.titles = {k: tuple(v) for k, v in titles.items()}


def _materialise(folder: Path, entries: Sequence[MemoryEntry]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "memory.jsonl"
    path.write_bytes("".join(e.to_json() + "\n" for e in entries).encode("utf-8"))
    return folder


def replay_lens_full(
    ctx: LensContext,
    stream: Stream,
    log: LensEventLog,
    anchors: Anchors,
    views: Sequence[MemoryView],
    *,
    agent_config: Any,
    client: Any,
    labels: FullModeLabels,
    work_folder: str | Path,
    scalars: Mapping[str, Any] | None = None,
    say=lambda msg: None,
) -> list[RowBlock]:
    """Rows for every view (then Naive) at every anchor: the agent rerun with the memory each condition allows."""
    if not log.frozen:
        raise ValueError("replay needs a frozen event log")
    work = Path(work_folder)
    shared = _materialise(work / "memory", log.entries)
    a_pos = anchors.positions.astype(np.int64)
    by_doc = {d.doc_id: d for d in ctx.corpus.view.docs}
    conditions: list[MemoryView | None] = [*views, None]
    results: dict[int, list[dict[str, Any]]] = {c: [] for c in range(len(conditions))}
    for i in a_pos:
        qid = stream.query_ids[int(i)]
        for c, view in enumerate(conditions):
            if view is None:
                own = [e for e in log.entries if log.owner(e) != qid]
                store = RecordingMemoryStore(_materialise(work / "naive" / f"a{int(i)}", own), capacity=ctx.capacity)
                pred = lambda e: True  # noqa: E731 - Naive: everything the materialised store holds
            else:
                store = RecordingMemoryStore(shared, capacity=ctx.capacity)
                pred = entry_predicate(view, int(i))
            agent = Agent(agent_config, client=client, memory=store)
            question = ctx.records[ctx.index[qid]].question
            out = _ask_at(agent, store, question, ctx.corpus.folder, pred, int(i), by_doc)
            out.update(_scores(out.pop("result"), by_doc, labels.answers[qid], labels.titles[qid]))
            results[c].append(out)
            say(
                f"full mode {stream.name}: anchor {int(i)} {NAIVE if view is None else view.label}: "
                f"{len(out['positions'])} entries, EM {out['em']:.0f}, Ev.Rec {out['ev_rec']:.2f}"
            )
    common = {
        "stream": stream.name,
        "stream_kind": stream.kind,
        "seed": stream.seed,
        "uses_gold": stream.uses_gold,
        "memory": "lens-full",
        "label_based": False,
        "retriever": "lens-agent",
        "mode": "full",
        "lookup_capacity": ctx.capacity,
        "trace_depth": ctx.trace_depth,
        "base_depth": int(agent_config.prior.candidates),
        "list_depth": int(agent_config.loop.evidence_docs),
        **dict(scalars or {}),
    }
    query_ids = np.asarray([stream.query_ids[int(p)] for p in a_pos], dtype=object)
    return [_block(results[c], view, common, anchors, query_ids, ctx.capacity) for c, view in enumerate(conditions)]


def _ask_at(
    agent: Agent, store: RecordingMemoryStore, question: str, folder: Path, pred: Any, i: int, by_doc: Mapping
) -> dict[str, Any]:
    """One anchor under one condition: the agent's result (None on a LENS error) and what the memory served
    (stale: an entry whose document is gone or changed)."""
    out: dict[str, Any] = {"error": None}
    try:
        out["result"] = agent.ask(question, folder, eligible=pred, position=i, record=False)
    except LLMError:
        raise
    except LensError as exc:
        out["result"] = None
        out["error"] = f"{type(exc).__name__}: {exc}"
    served = [(e, s) for lk in store.served for e, s in lk]
    out["positions"] = [e.position for e, _ in served]
    out["sims"] = [s for _, s in served]
    out["lookups"] = len(store.served)
    out["stale"] = sum(1 for e, _ in served if e.doc_id not in by_doc or by_doc[e.doc_id].sha256 != e.sha256)
    return out


def _scores(res: Any, by_doc: Mapping[str, Any], answer: str, gold_titles: Sequence[str]) -> dict[str, Any]:
    """The answer's scores and costs (NaN scores for a failed ask); labels are read here only."""
    if res is None:
        return dict(em=math.nan, f1=math.nan, ev_rec=math.nan, answer="", calls=0, tokens=0, seconds=0.0, cited=[])
    cited = list(dict.fromkeys(by_doc[e.doc_id].title if e.doc_id in by_doc else e.title for e in res.evidence))
    a = answer_scores(res.answer or "", answer)
    return dict(
        em=a.em,
        f1=a.f1,
        ev_rec=evidence_recall(gold_titles, cited) if gold_titles else math.nan,
        answer=res.answer or "",
        calls=int(res.cost.oracle_calls),
        tokens=int(res.cost.tokens),
        seconds=float(res.cost.seconds),
        cited=cited,
    )


def _block(
    outs: list[dict[str, Any]],
    view: MemoryView | None,
    common: dict[str, Any],
    anchors: Anchors,
    query_ids: np.ndarray,
    cap: int,
) -> RowBlock:
    """One condition's rows over every anchor."""
    a_pos = anchors.positions.astype(np.int64)
    selected, served = served_columns([o["positions"] for o in outs], [o["sims"] for o in outs], a_pos)
    lookups = np.asarray([o["lookups"] for o in outs], dtype=np.int64)
    scal = condition_scalars(common, view)
    cols = {
        "anchor_group": anchors.groups,
        "anchor": a_pos,
        "query_id": query_ids,
        "capacity": cap * lookups,
        "lookups": lookups,
        **served,
        "n_stale": np.asarray([o["stale"] for o in outs], dtype=np.int64),
        "em": np.asarray([o["em"] for o in outs], dtype=np.float64),
        "f1": np.round(np.asarray([o["f1"] for o in outs], dtype=np.float64), 6),
        "ev_rec": np.asarray([o["ev_rec"] for o in outs], dtype=np.float64),
        "answer": np.asarray([o["answer"] for o in outs], dtype=object),
        "cited": _obj([o["cited"] for o in outs]),
        "oracle_calls": np.asarray([o["calls"] for o in outs], dtype=np.int64),
        "tokens": np.asarray([o["tokens"] for o in outs], dtype=np.int64),
        "seconds": np.asarray([o["seconds"] for o in outs], dtype=np.float64),
        "error": _obj([o["error"] for o in outs]),
    }
    return RowBlock(scal, cols, selected)


def _obj(values: list) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr
