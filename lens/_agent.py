"""The LENS agent: requirements → prior → propose–observe–update → consolidation → synthesis → result.

Data flows one way: the folder is scanned as it is now; the prior (reading the warm-reuse memory through the
caller's eligibility predicate) seeds the beliefs; the loop spends the round budget; consolidation builds E*;
synthesis answers from E* (computing comparisons in code when the values parse); if synthesis reports a
requirement unmet and budget remains, the loop re-enters once with a relaxed threshold and a wider candidate
set; confirmed evidence is appended to the memory afterwards. The agent's only tools are read-only (the scan and
the window reads): nothing in a document can make it write, delete, or call anything else.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from lens._beliefs import beta
from lens._budget import Budget
from lens._config import LensConfig, load_config
from lens._consolidation import consolidate
from lens._corpus import scan_corpus
from lens._cost import CostMeter
from lens._errors import LensError
from lens._llm import LLMClient, LLMError, LLMUnavailableError, open_client, refusal
from lens._loop import Loop, LoopState
from lens._memory import Eligibility, MemoryStore, all_past, new_entry
from lens._prior import CorpusView, Prior
from lens._prompts import render
from lens._requirements import (
    Decomposition,
    DecompositionReply,
    SubQuestionReply,
    from_reply,
    from_subquestions,
    heuristic_decomposition,
    prompt_for,
)
from lens._result import AskResult, Evidence, RequirementStatus
from lens._synthesis import (
    CalibrationReply,
    CoverageReply,
    SynthesisReply,
    calibration_messages,
    clean_answer,
    code_answer,
    coverage_messages,
    needs_calibration,
    synthesis_messages,
)
from lens._windows import estimate_tokens

__all__ = ["Agent", "ask", "ask_command"]

log = logging.getLogger("lens.agent")
_DECOMP_TOKENS = 200
_SYNTH_TOKENS = 160
_COVER_TOKENS = 120
_CALIB_TOKENS = 48


class Agent:
    """Answers questions over folders with one configuration, one LLM client and an optional memory.

    Thread-safe for concurrent ``ask`` calls: per-question state lives in the call.
    """

    def __init__(
        self,
        config: LensConfig | None = None,
        *,
        client: LLMClient | None = None,
        memory: MemoryStore | None = None,
    ):
        self.config = config or load_config()
        self._client = client
        self.memory = memory

    @property
    def client(self) -> LLMClient:
        if self._client is None:
            self._client = open_client(self.config)
        return self._client

    # ------------------------------------------------------------------ one oracle call from the fixed pool
    def _fixed_call(self, budget: Budget, meter: CostMeter, messages, schema, max_tokens: int, *, keep: int, stages: list, stage: str):
        """A fixed-pool JSON call, leaving ``keep`` calls for later stages; None when it can't be made or fails."""
        est = sum(estimate_tokens(m["content"]) for m in messages) + max_tokens
        if not budget.can_call("fixed", est, calls=1 + keep):
            stages.append({"stage": stage, "skipped": "budget"})
            return None
        repair = budget.can_call("fixed", est, calls=2 + keep)
        before = meter.cost.oracle_calls
        t0 = time.monotonic()
        try:
            resp = self.client.chat_json(
                messages, schema, max_tokens=max_tokens, deadline=budget.deadline, meter=meter, repair=repair
            )
            stages.append({"stage": stage, "calls": meter.cost.oracle_calls - before, "seconds": round(time.monotonic() - t0, 3)})
            return resp.parsed
        except LLMUnavailableError:
            raise  # the endpoint is gone: nothing else this question does can work
        except LLMError as exc:  # a format failure, a timeout, a spent deadline: a best-effort answer follows
            refused = refusal(exc, meter, self.config.llm)
            if refused is not None:
                raise refused from None  # no call has succeeded: an answer from nothing would look like one
            stages.append({"stage": stage, "error": str(exc)})
            return None
        finally:
            budget.charge("fixed", meter.cost.oracle_calls - before)

    # ------------------------------------------------------------------ ask
    def ask(
        self,
        question: str,
        path: str | os.PathLike[str],
        *,
        eligible: Eligibility | None = None,
        position: int | None = None,
        record: bool = True,
    ) -> AskResult:
        """Answer ``question`` from the folder ``path`` as it is now.

        ``eligible`` selects which memory entries may be read (default: every earlier entry); ``position`` is
        this query's stream position (default: next in the memory log); ``record`` appends confirmed evidence
        to the memory. Raises CorpusError for an unusable folder and LLMError when the LLM is unreachable.
        """
        cfg = self.config
        if not question or not question.strip():
            raise LensError("the question is empty")
        if cfg.llm.cache and cfg.llm.cache_dir and _inside(Path(cfg.llm.cache_dir), Path(path)):
            raise LensError(
                f"llm.cache_dir {cfg.llm.cache_dir}: inside the document folder {path}; lens never writes there"
            )
        t_start = time.monotonic()
        meter = CostMeter()
        budget = Budget(cfg.budget, meter)
        stages: list[dict] = []
        notes: list[str] = []

        scan = scan_corpus(path, cfg.reader)
        if not scan.documents:
            raise LensError(f"{path}: no readable documents (skipped: {dict(scan.skipped) or 'none'})")
        view = CorpusView(scan)
        prior = Prior(view, cfg.prior, lexical_only=cfg.ablation.lexical_only_prior)
        client = self.client

        # requirements: one call, checked against the question; heuristic if it can't be had
        # the template follows the intent the wording shows: comparisons split per entity, the rest into
        # ordered sub-questions whose "#k" references are the bridge dependencies
        template = prompt_for(question)
        schema = DecompositionReply if template == "decomposition-comparison" else SubQuestionReply
        reply = self._fixed_call(
            budget, meter, render(template, question=question.strip()), schema,
            _DECOMP_TOKENS, keep=1, stages=stages, stage="decomposition",
        )
        decomposition: Decomposition
        if reply is None:
            decomposition = heuristic_decomposition(question)
        elif isinstance(reply, DecompositionReply):
            decomposition = from_reply(question, reply)
        else:
            decomposition = from_subquestions(question, reply)

        # memory: eligible, similar, unchanged entries become a prior signal per requirement
        use_memory = self.memory is not None and cfg.memory.enabled and not cfg.ablation.no_memory
        memory_signal: dict[str, dict[int, float]] = {}
        pos = position if position is not None else (self.memory.next_position() if self.memory else 0)
        if use_memory:
            view_pred = eligible or all_past(pos)
            by_id = {d.doc_id: i for i, d in enumerate(view.docs)}
            stale = 0
            for req in decomposition.requirements:
                for entry, sim in self.memory.lookup(req.text, view_pred, capacity=cfg.memory.capacity):  # type: ignore[union-attr]
                    idx = by_id.get(entry.doc_id)
                    if idx is None or view.docs[idx].sha256 != entry.sha256:
                        stale += 1
                        continue
                    sig = memory_signal.setdefault(req.id, {})
                    sig[idx] = max(sig.get(idx, 0.0), sim)
            if stale:
                notes.append(f"memory: {stale} stale entries ignored (file changed or gone)")

        state = LoopState(question=question, decomposition=decomposition, view=view, prior=prior, memory_signal=memory_signal)
        loop = Loop(state, client=client, config=cfg, budget=budget, meter=meter, reliability=cfg.reliability())
        loop.seed()
        if cfg.ablation.no_exploration:
            stop = "ablation:no-exploration"
        else:
            stop = loop.run()

        threshold = beta(len(state.trace), cfg.loop.delta) * cfg.loop.gamma.get(decomposition.intent, 1.0)
        certified = {r.id for r in decomposition.requirements if state.beliefs[r.id].glr() >= threshold * 0.999}
        evidence = consolidate(state, loop.posterior_by_doc(), certified=certified, max_docs=cfg.loop.evidence_docs)
        covered: set[str] = set()

        # coverage check: evidence may state a fact the loop could not certify window by window
        unresolved = [r.id for r in decomposition.requirements if r.id not in certified]
        reentered = False
        if unresolved and not cfg.ablation.no_exploration and evidence:
            cov = self._fixed_call(
                budget, meter, coverage_messages(question, decomposition, state.values, evidence), CoverageReply,
                _COVER_TOKENS, keep=1, stages=stages, stage="coverage",
            )
            if cov is not None:
                missing = {m.strip().upper() for m in cov.missing} & set(unresolved)
                covered = set(unresolved) - missing if (cov.complete or cov.missing) else set()
                if missing and budget.rounds < cfg.budget.max_rounds:
                    stop = self._self_correct(loop, missing, stop, stages)
                    reentered = True
                    certified = self._certified(state, decomposition, cfg)
                    evidence = consolidate(state, loop.posterior_by_doc(), certified=certified, max_docs=cfg.loop.evidence_docs)

        answer, synth_missing = self._synthesize(question, decomposition, state, evidence, budget, meter, stages, keep=0)
        if synth_missing and not reentered and not cfg.ablation.no_exploration and budget.rounds < cfg.budget.max_rounds:
            # self-correction: one bounded re-entry with a relaxed threshold, then re-synthesis
            if budget.can_call("fixed", 0, calls=1):
                stop = self._self_correct(loop, synth_missing, stop, stages)
                reentered = True
                certified = self._certified(state, decomposition, cfg)
                evidence = consolidate(state, loop.posterior_by_doc(), certified=certified, max_docs=cfg.loop.evidence_docs)
                answer2, synth_missing = self._synthesize(question, decomposition, state, evidence, budget, meter, stages, keep=0)
                answer = answer2 or answer

        if answer and needs_calibration(question, answer):
            cal = self._fixed_call(
                budget, meter, calibration_messages(question, answer, evidence), CalibrationReply,
                _CALIB_TOKENS, keep=0, stages=stages, stage="calibration",
            )
            if cal is not None and cal.answer.strip() and len(cal.answer) <= len(answer):
                answer = clean_answer(cal.answer, question)

        statuses = []
        for r in decomposition.requirements:
            ev_ids = tuple(e.id for e in evidence if r.id in e.requirements)
            status = "certified" if r.id in certified else ("covered" if r.id in covered else "unresolved")
            statuses.append(
                RequirementStatus(r.id, r.resolved_text(state.values), status, state.values.get(r.id) or None,
                                  round(state.beliefs[r.id].glr(), 3), ev_ids)
            )
        failed = meter.cost.endpoint_errors
        if failed:
            notes.append(f"{failed} LLM calls failed at the endpoint (last: {meter.last_error})")
        best_effort = (
            not answer
            or any(s.status == "unresolved" for s in statuses)
            or bool(synth_missing)
            or stop.startswith("budget")
            or failed > 0
        )
        entries = self._memory_entries(state, decomposition, certified, question, pos)
        if record and use_memory and entries:
            self.memory.append(entries)  # type: ignore[union-attr]

        cost = meter.cost.to_dict()
        cost.update(
            seconds=round(time.monotonic() - t_start, 3),
            rounds=budget.rounds,
            max_oracle_calls=budget.max_calls(),
            budget=budget.to_dict(),
        )
        return AskResult(
            question=question,
            answer=answer,
            best_effort=best_effort,
            intent=decomposition.intent,
            requirements=statuses,
            evidence=evidence,
            trace=state.trace,
            cost=cost,
            corpus={k: v for k, v in scan.stats().items() if k != "problems"},
            config_hash=cfg.canonical_hash(),
            model=client.model,
            stop_reason=stop,
            notes=notes,
            decomposition=decomposition.to_dict(),
            stages=stages,
            memory_entries=[json.loads(e.to_json()) for e in entries],
        )

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _certified(state: LoopState, decomposition: Decomposition, cfg: LensConfig) -> set[str]:
        threshold = beta(len(state.trace), cfg.loop.delta) * cfg.loop.gamma.get(decomposition.intent, 1.0)
        relaxed = threshold * cfg.loop.relaxed_factor
        return {r.id for r in decomposition.requirements if state.beliefs[r.id].glr() >= relaxed * 0.999}

    def _self_correct(self, loop: Loop, missing: set[str], stop: str, stages: list) -> str:
        cfg = self.config
        for req in loop.s.requirements:
            if req.id in missing:
                loop.refresh(req, fresh=False, limit=2 * loop.s.prior_limit.get(req.id, cfg.prior.candidates))
        new_stop = loop.run(threshold_scale=cfg.loop.relaxed_factor, focus=set(missing))
        stages.append({"stage": "self-correction", "missing": sorted(missing), "stop": new_stop})
        return f"{stop}; self-correction: {new_stop}"

    def _synthesize(self, question, decomposition, state, evidence, budget, meter, stages, *, keep: int) -> tuple[str, set[str]]:
        computed = code_answer(question, decomposition, state.values)
        if computed is not None:
            stages.append({"stage": "synthesis", "in_code": computed[1]})
            return computed[0], set()
        messages, _ = synthesis_messages(question, decomposition, state.values, evidence)
        reply = self._fixed_call(budget, meter, messages, SynthesisReply, _SYNTH_TOKENS, keep=keep, stages=stages, stage="synthesis")
        if reply is None:
            # best effort without a synthesis call: the last requirement's verified value, if any
            last = decomposition.requirements[-1].id
            return clean_answer(state.values.get(last, ""), question), set()
        ids = {r.id for r in decomposition.requirements}
        missing = {m.strip().upper() for m in reply.missing} & ids
        answer = clean_answer(reply.answer, question)
        if not answer:  # the model gave an id or nothing: the last fact's verified value is the best effort
            answer = clean_answer(state.values.get(decomposition.requirements[-1].id, ""), question)
        return answer, missing

    @staticmethod
    def _memory_entries(state: LoopState, decomposition: Decomposition, certified: set[str], question: str, pos: int) -> list:
        """The warm-reuse entries this question confirms: one per certified requirement (its favoured window
        narrowed to the verified span)."""
        entries = []
        for r in decomposition.requirements:
            if r.id not in certified:
                continue
            fav = state.beliefs[r.id].favoured()
            if fav is None:
                continue
            w = state.windows[fav]
            doc = state.view.docs[w.doc_index]
            sents = sorted({i for f in state.findings.get(r.id, []) if f.window_key == fav for i in f.sentences})
            first, last = (sents[0], sents[-1]) if sents else (w.first, w.last)
            entries.append(
                new_entry(
                    position=pos, question=question, requirement=r.resolved_text(state.values), path=doc.path,
                    doc_id=doc.doc_id, first=first, last=last, line_start=doc.sentences[first].line_start,
                    line_end=doc.sentences[last].line_end, value=state.values.get(r.id, ""), sha256=doc.sha256,
                )
            )
        return entries


def ask(question: str, path: str | os.PathLike[str], *, config: LensConfig | None = None, **kwargs: Any) -> AskResult:
    """One-shot convenience: ``Agent(config).ask(question, path, ...)``."""
    return Agent(config).ask(question, path, **kwargs)


# ---------------------------------------------------------------------- CLI


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


def ask_command(args: argparse.Namespace) -> int:
    from lens._cli import config_from_args

    cfg = config_from_args(args)
    memory = None
    if args.memory:
        mem_dir = Path(args.memory)
        if _inside(mem_dir, Path(args.path)):
            raise LensError(f"--memory {mem_dir}: inside the document folder {args.path}; lens never writes there")
        memory = MemoryStore(mem_dir, capacity=cfg.memory.capacity)
    agent = Agent(cfg, memory=memory)
    result = agent.ask(args.question, args.path)
    if args.json:
        sys.stdout.write(result.to_json(trace=not args.no_trace) + "\n")
        return 0
    flag = "  (best effort: " + _why(result) + ")" if result.best_effort else ""
    print(f"Answer: {result.answer or '(no answer found)'}{flag}")
    if result.evidence:
        print("Evidence:")
        for e in result.evidence:
            snippet = e.text if len(e.text) <= 160 else e.text[:157] + "..."
            reqs = ",".join(e.requirements) or "-"
            print(f"  [{e.id}] {e.citation}  ({e.status}; {reqs})  {snippet}")
    c = result.cost
    failed = f"; {c['failed_calls']} failed requests, {c['retries']} retried" if c.get("failed_calls") else ""
    print(
        f"Cost: {c['oracle_calls']} oracle calls ({c['cache_hits']} cached, bound {c['max_oracle_calls']}{failed}), "
        f"{c['tokens']:,} tokens ({c['prompt_tokens']:,} prompt + {c['completion_tokens']:,} completion), "
        f"{c['seconds']:.1f} s, {c['rounds']} rounds · stop: {result.stop_reason} · model {result.model}"
    )
    skipped = ", ".join(f"{n} {reason}" for reason, n in (result.corpus.get("skipped") or {}).items())
    bad = result.corpus.get("bad_encoding") or 0
    if skipped or bad:
        extra = f" · {bad} files with invalid UTF-8 read with U+FFFD" if bad else ""
        print(f"Skipped: {skipped or 'none'}{extra}")
    for note in result.notes:
        print(f"Note: {note}")
    return 0


def _why(result: AskResult) -> str:
    unresolved = [r.id for r in result.requirements if r.status == "unresolved"]
    if unresolved:
        return "unresolved " + ", ".join(unresolved)
    return result.stop_reason
