"""The LENS agent: requirements → prior → propose–observe–update → consolidation → synthesis → result.

Data flows one way: the folder is scanned as it is now; the prior (reading the warm-reuse memory through the
caller's eligibility predicate) seeds the beliefs; the loop spends the round budget; consolidation builds E*;
synthesis answers from E* (computing comparisons in code when the values parse); if synthesis reports a
requirement unmet and budget remains, the loop re-enters once with a relaxed threshold and a wider candidate
set; confirmed evidence is appended to the memory afterwards. The agent's only tools are read-only (the scan and
the window reads): nothing in a document can make it write, delete, or call anything else.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from lens._budget import Budget
from lens._config import LensConfig, load_config
from lens._consolidation import consolidate
from lens._corpus import scan_corpus
from lens._cost import CostMeter
from lens._errors import LensError
from lens._llm import LLMClient, LLMError, LLMUnavailableError, open_client, refusal, rejected_every_call
from lens._loop import PRIOR_RECORD_DEPTH, Loop, LoopState, Observer
from lens._memory import Eligibility, MemoryLogError, MemoryStore, all_past, memory_key, memory_signal, new_entry
from lens._prior import Prior, merge_round_robin
from lens._progress import Progress, ProgressCallback
from lens._requirements import Decomposition, decompose
from lens._result import AskResult, Evidence, RequirementStatus
from lens._spans import answer_span
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
from lens._values import comparison_of
from lens._view import CorpusView
from lens._windows import estimate_tokens

__all__ = ["Agent", "ask", "MAX_QUESTION_CHARS"]

log = logging.getLogger("lens.agent")
# a question is one or a few sentences (HotpotQA's longest: 223 characters); a longer one is refused up front
# rather than costing the prior and the prompts time and tokens in proportion to its length
MAX_QUESTION_CHARS = 4000
_SYNTH_TOKENS = 160
_COVER_TOKENS = 120
_CALIB_TOKENS = 48


class Agent:
    """Answers questions over folders with one configuration, one LLM client and an optional memory.

    Thread-safe for concurrent ``ask`` calls: per-question state lives in the call. ``progress`` is called with
    a :class:`~lens._progress.Progress` snapshot as each stage of a question starts and when it ends. ``within``:
    real paths of the only folders a question may read (checked on the folder as the scan opens it); None: any.
    """

    def __init__(
        self,
        config: LensConfig | None = None,
        *,
        client: LLMClient | None = None,
        memory: MemoryStore | None = None,
        progress: ProgressCallback | None = None,
        within: Sequence[str | os.PathLike[str]] | None = None,
    ):
        self.config = config or load_config()
        self._client = client
        self.memory = memory
        self.progress = progress
        self.within = within

    @property
    def client(self) -> LLMClient:
        if self._client is None:
            self._client = open_client(self.config)
        return self._client

    # ------------------------------------------------------------------ one oracle call from the fixed pool
    def _fixed_call(
        self,
        q: "_Question",
        messages,
        schema,
        max_tokens: int,
        *,
        keep: int,
        stage: str,
    ):
        """A fixed-pool JSON call, leaving ``keep`` calls for later stages; None when it can't be made or fails."""
        budget, meter, stages = q.budget, q.meter, q.stages
        q.report(stage)
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
            stages.append(
                {"stage": stage, "calls": meter.cost.oracle_calls - before, "seconds": round(time.monotonic() - t0, 3)}
            )
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
        to the memory. Raises LensError for an empty question or one over ``MAX_QUESTION_CHARS``, CorpusError
        for an unusable folder and LLMError when the LLM is unreachable.
        """
        cfg = self.config
        q, scan, loop, pos, use_memory = self._begin(question, path, eligible, position)
        state = loop.state
        decomposition = state.decomposition
        stop = self._explore(q, loop)
        answer, stop, certified, covered, evidence, missing = self._answer(q, loop, stop)
        refused = rejected_every_call(q.meter)
        if refused is not None:  # the endpoint rejected the one call made: nothing was asked, nothing is recorded
            raise refused
        if any(state.bridge_cues.values()):
            q.stages.append({"stage": "bridge", "learned_cues": {k: v for k, v in state.bridge_cues.items() if v}})
        statuses = self._statuses(state, certified, covered, evidence)
        failed = q.meter.cost.endpoint_errors
        if failed:
            q.notes.append(f"{failed} LLM calls failed at the endpoint (last: {q.meter.last_error})")
        best_effort = (
            not answer
            or any(st.status == "unresolved" for st in statuses)
            or bool(missing)
            or stop.startswith("budget")
            or failed > 0
        )
        entries = self._memory_entries(state, decomposition, certified, question, pos, cfg.memory.min_posterior)
        if record and use_memory and entries:
            try:
                self.memory.append(entries)  # type: ignore[union-attr]
            except MemoryLogError as exc:  # the answer is paid for: keep it, and say what was not kept
                q.notes.append(f"memory: {exc}")
                q.stages.append({"stage": "memory-write", "error": str(exc)})
        spans = [st for st in q.stages if st["stage"] == "answer-span"]
        verified = bool(answer) and (not spans or spans[-1]["verified"])
        return self._result(
            q, scan, loop, answer, stop, statuses, evidence, entries, best_effort=best_effort, answer_verified=verified
        )

    def _result(
        self, q, scan, loop, answer, stop, statuses, evidence, entries, *, best_effort: bool, answer_verified=None
    ) -> AskResult:
        state, cfg = loop.state, self.config
        q.report("done")
        cost = q.meter.cost.to_dict()
        cost.update(
            seconds=round(time.monotonic() - q.started, 3),
            rounds=q.budget.rounds,
            max_oracle_calls=q.budget.max_calls(),
            budget=q.budget.to_dict(),
        )
        return AskResult(
            question=q.question,
            answer=answer,
            best_effort=best_effort,
            intent=state.decomposition.intent,
            requirements=statuses,
            evidence=evidence,
            trace=state.trace,
            cost=cost,
            corpus={k: v for k, v in scan.stats().items() if k != "problems"},
            config_hash=cfg.canonical_hash(),
            model=loop.client.model if loop.client is not None else cfg.llm.served_model,
            stop_reason=stop,
            notes=q.notes,
            decomposition=state.decomposition.to_dict(),
            stages=q.stages,
            memory_entries=[json.loads(e.to_json()) for e in entries],
            answer_verified=answer_verified,
        )

    def explore(
        self,
        question: str,
        path: str | os.PathLike[str],
        *,
        decomposition: Decomposition | None = None,
        observer: Observer | None = None,
    ) -> AskResult:
        """The loop without an answer: the requirements (``decomposition``, else the LLM's), the prior, the
        propose–observe–update loop — observed by ``observer`` instead of the LLM when given (a simulated
        oracle; with both ``decomposition`` and ``observer`` no LLM is touched) —, and the consolidated evidence. No synthesis and no memory
        write; ``answer`` is empty and ``best_effort`` says whether every requirement certified."""
        q, scan, loop, _, _ = self._begin(question, path, None, None, decomposition=decomposition, observer=observer)
        stop = self._explore(q, loop)
        certified = loop.certified()
        evidence = self._consolidate(loop, certified)
        statuses = self._statuses(loop.state, certified, set(), evidence)
        return self._result(q, scan, loop, "", stop, statuses, evidence, [], best_effort=len(certified) < len(statuses))

    def _begin(self, question, path, eligible, position, *, decomposition=None, observer=None):
        """What every question starts with: checks, the scan, the requirements, the memory signal, the loop."""
        cfg = self.config
        if not question or not question.strip():
            raise LensError("the question is empty")
        if len(question) > MAX_QUESTION_CHARS:
            raise LensError(f"the question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}")
        try:
            question.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate (a "\ud800" JSON escape): no request can carry it
            raise LensError(
                f"the question is not valid Unicode: a lone surrogate at character {exc.start + 1}"
            ) from None
        if cfg.llm.cache and cfg.llm.cache_dir and _inside(Path(cfg.llm.cache_dir), Path(path)):
            raise LensError(
                f"llm.cache_dir {cfg.llm.cache_dir}: inside the document folder {path}; lens never writes there"
            )
        meter = CostMeter()
        q = _Question(question, time.monotonic(), meter, Budget(cfg.budget, meter), progress=self.progress)
        q.report("scan")
        scan = scan_corpus(path, cfg.reader, within=self.within)
        if not scan.documents:
            raise LensError(f"{path}: no readable documents (skipped: {dict(scan.skipped) or 'none'})")
        if scan.ignore_unread:  # files the user meant to exclude may be read: said with the answer
            q.notes.append(scan.ignore_unread)
        view = CorpusView.of(scan)
        if decomposition is None:
            decomposition = self._decompose(q)
        use_memory = self.memory is not None and cfg.memory.enabled and not cfg.ablation.no_memory
        try:
            pos = position if position is not None else (self.memory.next_position() if self.memory else 0)
            signal = self._read_memory(q, decomposition, view, eligible or all_past(pos)) if use_memory else {}
        except MemoryLogError as exc:  # an unreadable memory costs its signal, never the question
            q.notes.append(f"memory: {exc}; answered without it, and nothing was written to it")
            q.stages.append({"stage": "memory", "error": str(exc)})
            pos, use_memory, signal = position or 0, False, {}
        state = LoopState(
            question=question,
            decomposition=decomposition,
            view=view,
            prior=Prior(view, cfg.prior, lexical_only=cfg.ablation.lexical_only_prior, deadline=q.budget.deadline),
            memory_signal=signal,
        )
        reading_model = cfg.reading_model()
        calibrated = cfg.llm.served_model in cfg.loop.reading_model
        q.stages.append({"stage": "reading-model", "calibrated": calibrated, "n": reading_model.n})
        client = self.client if observer is None else self._client
        loop = Loop(
            state,
            client=client,
            config=cfg,
            budget=q.budget,
            meter=q.meter,
            model=reading_model,
            observer=observer,
            on_round=lambda: q.report("round"),
        )
        return q, scan, loop, pos, use_memory

    # ------------------------------------------------------------------ the stages
    def _decompose(self, q: "_Question") -> Decomposition:
        """Requirements: one budgeted call (one more kept for the answer), a code decomposition if it fails."""

        def call(messages, schema, max_tokens):
            return self._fixed_call(q, messages, schema, max_tokens, keep=1, stage="decomposition")

        return decompose(q.question, call)

    def _read_memory(self, q: "_Question", decomposition: Decomposition, view: CorpusView, eligible: Eligibility):
        """Per requirement, the prior's memory signal from the eligible, similar, unchanged entries."""
        by_id = {d.doc_id: i for i, d in enumerate(view.docs)}
        signals: dict[str, dict[int, float]] = {}
        stale = 0
        for req in decomposition.requirements:
            served = self.memory.lookup(  # type: ignore[union-attr]
                memory_key(q.question, req.text), eligible, capacity=self.config.memory.capacity
            )
            signal, n_stale = memory_signal(
                (idx, idx is not None and view.docs[idx].sha256 == e.sha256, sim, e.posterior)
                for e, sim in served
                for idx in [by_id.get(e.doc_id)]
            )
            stale += n_stale
            if signal:
                signals[req.id] = signal
        if stale:
            q.notes.append(f"memory: {stale} stale entries ignored (file changed or gone)")
        q.stages.append(
            {
                "stage": "memory",
                "served": sum(len(s) for s in signals.values()),  # documents signalled, summed over requirements
                "requirements_served": len(signals),
                "stale": stale,
            }
        )
        return signals

    def _explore(self, q: "_Question", loop: Loop) -> str:
        """Seed the beliefs from the prior, then propose–observe–update until the stop rule fires. The prior's
        candidate documents (each requirement's seed ranking to ``PRIOR_RECORD_DEPTH``, merged round robin) are
        recorded as stage "prior"."""
        loop.seed()
        q.stages.append({"stage": "prior", "candidates": _prior_candidates(loop.state, PRIOR_RECORD_DEPTH)})
        if self.config.ablation.no_exploration:
            return "ablation:no-exploration"
        return loop.run()

    def _answer(self, q: "_Question", loop: Loop, stop: str):
        """Consolidate E*, check coverage, synthesise (in code when values parse); one bounded re-entry of the
        loop when a fact is reported missing; answer-span calibration. Returns (answer, stop, certified,
        covered, evidence, missing); a requirement not certified is covered when a reading confirmed it inside
        the evidence (checked in code, never the model's say-so)."""
        cfg, state = self.config, loop.state
        decomposition = state.decomposition
        # a futile loop (certification out of reach for this observation model) re-enters for nothing
        explore = not cfg.ablation.no_exploration and not stop.startswith("futile")
        certified = loop.certified()
        evidence = self._consolidate(loop, certified)
        reentered = False

        # coverage: when rounds remain, ask which facts the evidence does not state and re-enter for those
        unresolved = [r.id for r in decomposition.requirements if r.id not in certified]
        if unresolved and explore and evidence and q.budget.rounds < cfg.budget.max_rounds:
            cov = self._fixed_call(
                q,
                coverage_messages(q.question, decomposition, state.values, evidence),
                CoverageReply,
                _COVER_TOKENS,
                keep=1,
                stage="coverage",
            )
            missing = {m.strip().upper() for m in cov.missing} & set(unresolved) if cov is not None else set()
            if missing:
                stop, certified, evidence = self._reenter(q, loop, missing, stop)
                reentered = True

        answer, missing = self._synthesize(q, state, evidence)
        if missing and not reentered and explore and q.budget.rounds < cfg.budget.max_rounds:
            # self-correction: one bounded re-entry with a relaxed threshold, then re-synthesis
            if q.budget.can_call("fixed", 0, calls=1):
                stop, certified, evidence = self._reenter(q, loop, missing, stop)
                answer2, missing = self._synthesize(q, state, evidence)
                answer = answer2 or answer

        if answer and needs_calibration(q.question, answer):
            cal = self._fixed_call(
                q,
                calibration_messages(q.question, answer, evidence),
                CalibrationReply,
                _CALIB_TOKENS,
                keep=0,
                stage="calibration",
            )
            if cal is not None and cal.answer.strip() and len(cal.answer) <= len(answer):
                answer = clean_answer(cal.answer, q.question)
        if answer and not any(st.get("in_code") for st in q.stages if st["stage"] == "synthesis"):
            # the answer as the cited evidence writes it (lens/_spans.py), or marked unverified
            span = answer_span(answer, q.question, [e.text for e in evidence])
            q.stages.append({"stage": "answer-span", "how": span.how, "verified": span.verified, "from": answer})
            if not span.verified:
                q.notes.append(f"the answer {answer!r} is not a span of the cited evidence: unverified")
            answer = span.answer
        covered = {
            r.id for r in decomposition.requirements if r.id not in certified and _verified_in(state, r.id, evidence)
        }
        return answer, stop, certified, covered, evidence, missing

    def _reenter(self, q: "_Question", loop: Loop, missing: set[str], stop: str):
        """Self-correction: the loop re-enters once for the missing facts with a relaxed threshold and a wider
        candidate set; returns (stop, certified under the relaxed threshold, consolidated evidence)."""
        cfg = self.config
        for req in loop.state.requirements:
            if req.id in missing:
                limit = 2 * loop.state.prior_limit.get(req.id, cfg.prior.candidates)
                loop.refresh(req, fresh=False, limit=limit)
        new_stop = loop.run(threshold_scale=cfg.loop.relaxed_factor, focus=set(missing))
        q.stages.append({"stage": "self-correction", "missing": sorted(missing), "stop": new_stop})
        certified = loop.certified(cfg.loop.relaxed_factor)
        return f"{stop}; self-correction: {new_stop}", certified, self._consolidate(loop, certified)

    def _consolidate(self, loop: Loop, certified: set[str]) -> list[Evidence]:
        return consolidate(
            loop.state, loop.posterior_by_doc(), certified=certified, max_docs=self.config.loop.evidence_docs
        )

    @staticmethod
    def _statuses(state: LoopState, certified: set[str], covered: set[str], evidence: list[Evidence]):
        """Each requirement's status: certified by the loop; covered when the coverage reply says the evidence
        states it *and* the evidence holds a span the code verified for it (the reply alone proves nothing);
        else unresolved."""
        out = []
        for r in state.decomposition.requirements:
            ev_ids = tuple(e.id for e in evidence if r.id in e.requirements)
            status = "certified" if r.id in certified else ("covered" if r.id in covered else "unresolved")
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

    # ------------------------------------------------------------------ helpers
    def _synthesize(self, q: "_Question", state: LoopState, evidence: list[Evidence]) -> tuple[str, set[str]]:
        question, decomposition = q.question, state.decomposition
        computed = code_answer(question, decomposition, state.values)
        if computed is not None:
            c = comparison_of(question)  # the comparison code_answer computed
            q.stages.append({"stage": "synthesis", "in_code": computed[1], "comparison": f"{c.kind}-{c.pick}"})
            return computed[0], set()
        messages, _ = synthesis_messages(question, decomposition, state.values, evidence)
        reply = self._fixed_call(q, messages, SynthesisReply, _SYNTH_TOKENS, keep=0, stage="synthesis")
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
    def _memory_entries(
        state: LoopState, decomposition: Decomposition, certified: set[str], question: str, pos: int, admit: float
    ) -> list:
        """The warm-reuse entries this question found: one per requirement whose favoured window has calibrated
        posterior ≥ ``admit`` (or whose requirement was certified), read or not — the posterior already says
        what the readings added, and an oracle too weak to read (the futility stop) leaves the prior's
        calibrated belief, which is still what the system knew. Each entry records the posterior, whether the
        requirement was certified and whether a reading verified a finding in the window (its window then
        narrowed to the verified span)."""
        entries = []
        for r in decomposition.requirements:
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
                    position=pos,
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


def ask(question: str, path: str | os.PathLike[str], *, config: LensConfig | None = None, **kwargs: Any) -> AskResult:
    """One-shot convenience: ``Agent(config).ask(question, path, ...)``."""
    return Agent(config).ask(question, path, **kwargs)


def _prior_candidates(state: LoopState, depth: int) -> list[str]:
    """The prior's candidate documents (doc ids): the requirements' seed rankings (each to
    ``PRIOR_RECORD_DEPTH``) merged round robin, at most ``depth``."""
    lists = [state.prior_record.get(r.id, []) for r in state.requirements]
    return [state.view.docs[i].doc_id for i in merge_round_robin(lists, depth)]


def _verified_in(state: LoopState, rid: str, evidence: list[Evidence]) -> bool:
    """Whether a finding verified for ``rid`` (its quote or value found in the document's text) lies inside one
    of the evidence regions."""
    for f in state.findings.get(rid, []):
        doc_id = state.view.docs[state.windows[f.window_key].doc_index].doc_id
        for e in evidence:
            if e.doc_id == doc_id and all(e.first_sentence <= i <= e.last_sentence for i in f.sentences):
                return True
    return False


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


@dataclass
class _Question:
    """What one ``ask`` call carries between its stages: the question, its meter and budget, stage records."""

    question: str
    started: float
    meter: CostMeter
    budget: Budget  # over ``meter``
    stages: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    progress: ProgressCallback | None = None

    def report(self, stage: str) -> None:
        """Tell the watcher (if any) that ``stage`` starts, with the cost so far; a failing watcher is logged."""
        if self.progress is None:
            return
        cost = self.meter.cost
        snapshot = Progress(
            stage=stage,
            round=self.budget.rounds,
            max_rounds=self.budget.settings.max_rounds,
            oracle_calls=cost.oracle_calls,
            tokens=cost.tokens,
            elapsed_s=round(time.monotonic() - self.started, 3),
        )
        try:
            self.progress(snapshot)
        except Exception:  # a watcher never breaks the question it watches
            log.exception("progress callback failed at stage %s", stage)
