"""The record stage: each requirement's status, the warm-reuse entries the question found (appended to the
memory), and the :class:`AskResult`."""

from __future__ import annotations

import json
import time
from dataclasses import asdict

from lens._config import LensConfig
from lens._result import AskResult, QuestionCost, RequirementStatus
from lens.answer._answer import Answered
from lens.llm._llm import rejected_every_call
from lens.loop._loop import Loop, LoopState
from lens.loop._run import QuestionRun
from lens.loop._stop import StopReason
from lens.memory._memory import MemoryEntry, MemoryLogError, MemoryStore, new_entry
from lens.reader._corpus import CorpusScan

__all__ = ["record", "result", "statuses"]


def record(
    run: QuestionRun,
    scan: CorpusScan,
    loop: Loop,
    answered: Answered,
    config: LensConfig,
    *,
    memory: MemoryStore | None,
    position: int,
) -> AskResult:
    """The result of an answered question; its memory entries appended to ``memory`` (None: not recorded)."""
    state = loop.state
    refused = rejected_every_call(run.meter)
    if refused is not None:  # the endpoint rejected the one call made: nothing was asked, nothing is recorded
        raise refused
    if any(state.bridge_cues.values()):
        run.stages.append({"stage": "bridge", "learned_cues": {k: v for k, v in state.bridge_cues.items() if v}})
    status = statuses(state, answered)
    failed = run.meter.cost.endpoint_errors
    if failed:
        run.notes.append(f"{failed} LLM calls failed at the endpoint (last: {run.meter.last_error})")
    best_effort = (
        not answered.answer
        or any(st.status == "unresolved" for st in status)
        or bool(answered.missing)
        or answered.stop.reason is StopReason.BUDGET
        or failed > 0
    )
    entries = memory_entries(state, answered.certified, run.question, position, config.memory.min_posterior)
    if memory is not None and entries:
        try:
            memory.append(entries)
        except MemoryLogError as exc:  # the answer is paid for: keep it, and say what was not kept
            run.notes.append(f"memory: {exc}")
            run.stages.append({"stage": "memory-write", "error": str(exc)})
    return result(run, scan, loop, answered, status, config, best_effort=best_effort, entries=entries)


def result(
    run: QuestionRun,
    scan: CorpusScan,
    loop: Loop,
    answered: Answered,
    status: list[RequirementStatus],
    config: LensConfig,
    *,
    best_effort: bool,
    entries: list[MemoryEntry] = (),  # type: ignore[assignment]
) -> AskResult:
    state = loop.state
    run.report("done")
    cost = QuestionCost(
        **asdict(run.meter.cost),
        seconds=round(time.monotonic() - run.started, 3),
        rounds=run.budget.rounds,
        max_oracle_calls=run.budget.max_calls(),
        budget=run.budget.to_dict(),
    )
    return AskResult(
        question=run.question,
        answer=answered.answer,
        best_effort=best_effort,
        intent=state.decomposition.intent.value,
        requirements=status,
        evidence=answered.evidence,
        trace=state.trace,
        cost=cost,
        corpus={k: v for k, v in scan.stats().items() if k != "problems"},
        config_hash=config.canonical_hash(),
        model=loop.client.model if loop.client is not None else config.llm.served_model,
        stop_reason=str(answered.stop),
        notes=[*scan.notes, *run.notes],  # the scan's: the statistics store's faults, met at any stage
        decomposition=state.decomposition.to_dict(),
        stages=run.stages,
        memory_entries=[json.loads(e.to_json()) for e in entries],
        answer_verified=answered.verified,
    )


def statuses(state: LoopState, answered: Answered) -> list[RequirementStatus]:
    """Each requirement's status: certified by the loop; covered when a reading verified it inside E*; else
    unresolved."""
    out = []
    for r in state.decomposition.requirements:
        ev_ids = tuple(e.id for e in answered.evidence if r.id in e.requirements)
        if r.id in answered.certified:
            status = "certified"
        else:
            status = "covered" if r.id in answered.covered else "unresolved"
        out.append(
            RequirementStatus(
                r.id,
                r.resolved_text(state.values),
                status,
                state.values.get(r.id) or None,
                round(state.beliefs[r.id].glr(), 3),
                ev_ids,
            )
        )
    return out


def memory_entries(state: LoopState, certified: set[str], question: str, position: int, admit: float) -> list:
    """One warm-reuse entry per requirement whose favoured window has calibrated posterior ≥ ``admit`` or whose
    requirement certified, read or not; a window a reading verified narrows to the verified span."""
    entries = []
    for r in state.decomposition.requirements:
        belief = state.beliefs[r.id]
        fav = belief.favoured()
        if fav is None or fav not in state.windows:
            continue
        posterior = belief.posterior().get(fav, 0.0)
        if posterior < admit and r.id not in certified:
            continue
        w = state.windows[fav]
        doc = state.view.docs[w.doc_index]
        sents = sorted({i for f in state.findings.get(r.id, []) if f.window_key == fav for i in f.sentences})
        first, last = (sents[0], sents[-1]) if sents else (w.first, w.last)
        entries.append(
            new_entry(
                position=position,
                question=question,
                requirement=r.resolved_text(state.values),
                path=doc.path,
                doc_id=doc.doc_id,
                first=first,
                last=last,
                line_start=doc.sentences[first].line_start,
                line_end=doc.sentences[last].line_end,
                value=state.values.get(r.id, ""),
                sha256=doc.sha256,
                posterior=round(posterior, 4),
                certified=r.id in certified,
                verified=fav in belief.confirmed,
            )
        )
    return entries
