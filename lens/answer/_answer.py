"""The answer stage: E*, coverage, one bounded re-entry of the loop, synthesis (comparisons computed in code), the
short answer and its span in the evidence."""

from __future__ import annotations

from dataclasses import dataclass, field

from lens._config import LensConfig
from lens._result import Evidence
from lens.answer._consolidation import consolidate
from lens.answer._spans import answer_span
from lens.answer._synthesis import (
    CoverageReply,
    ShortenReply,
    SynthesisReply,
    clean_answer,
    code_answer,
    coverage_messages,
    needs_shortening,
    shorten_messages,
    synthesis_messages,
)
from lens.loop._loop import Loop, LoopState
from lens.loop._run import QuestionRun
from lens.loop._stop import Stop, StopReason
from lens.question._values import comparison_of

__all__ = ["Answered", "answer", "consolidated", "trusted_values"]

_SYNTH_TOKENS = 160
_COVER_TOKENS = 120
_SHORTEN_TOKENS = 48


@dataclass
class Answered:
    """What the answer stage hands to the record stage."""

    answer: str
    stop: Stop
    certified: set[str]  # requirements whose GLR reached the (relaxed, after a re-entry) threshold
    evidence: list[Evidence]  # E*
    covered: set[str] = field(default_factory=set)  # not certified, but a verified reading lies inside E*
    missing: set[str] = field(default_factory=set)  # facts the synthesis reported unstated
    verified: bool | None = None  # the answer is computed in code or a span of the evidence; None: no answer asked


@dataclass
class _Synthesis:
    answer: str
    missing: set[str]
    in_code: bool = False


def consolidated(loop: Loop, certified: set[str], config: LensConfig) -> list[Evidence]:
    """E* for the requirements ``certified``."""
    return consolidate(loop.state, loop.posterior_by_doc(), certified=certified, max_docs=config.loop.evidence_docs)


def answer(run: QuestionRun, loop: Loop, stop: Stop, config: LensConfig, *, may_reenter: bool) -> Answered:
    """Consolidate E*; when rounds remain, ask which facts it does not state and re-enter the loop once for them
    (``may_reenter``: the pipeline explores and the loop did not stop futile); synthesise; shorten; find the span."""
    state = loop.state
    # certification out of reach, or no reading worth its call: a relaxed re-entry would read nothing that counts
    may_reenter = may_reenter and stop.reason not in (StopReason.FUTILE, StopReason.UNINFORMATIVE)
    certified = loop.certified()
    done = Answered("", stop, certified, consolidated(loop, certified, config))
    reentered = False
    unresolved = [r.id for r in state.decomposition.requirements if r.id not in certified]
    if unresolved and may_reenter and done.evidence and _rounds_left(run, config):
        missing = _coverage(run, state, done.evidence, unresolved, trusted_values(loop, done.certified, config))
        if missing:
            _reenter(run, loop, done, missing, config)
            reentered = True
    synthesis = _synthesize(run, state, done.evidence, trusted_values(loop, done.certified, config))
    if synthesis.missing and not reentered and may_reenter and _rounds_left(run, config):
        if run.budget.can_call("fixed", 0, calls=1):  # self-correction: one re-entry, then re-synthesis
            _reenter(run, loop, done, synthesis.missing, config)
            again = _synthesize(run, state, done.evidence, trusted_values(loop, done.certified, config))
            synthesis = _Synthesis(again.answer or synthesis.answer, again.missing, synthesis.in_code or again.in_code)
    done.missing = synthesis.missing
    done.answer = _shorten(run, synthesis.answer, done.evidence)
    done.verified = bool(done.answer)
    if done.answer and not synthesis.in_code:  # the answer as the cited evidence writes it, or marked unverified
        span = answer_span(done.answer, run.question, [e.text for e in done.evidence])
        run.stages.append({"stage": "answer-span", "how": span.how, "verified": span.verified, "from": done.answer})
        if not span.verified:
            run.notes.append(f"the answer {done.answer!r} is not a span of the cited evidence: unverified")
        done.answer, done.verified = span.answer, bool(span.answer) and span.verified
    done.covered = {
        r.id
        for r in state.decomposition.requirements
        if r.id not in done.certified and _verified_in(state, r.id, done.evidence)
    }
    return done


def trusted_values(loop: Loop, certified: set[str], config: LensConfig) -> dict[str, str]:
    """The values readings copied that the answer may take as facts: a certified requirement's, when the served
    model's measured value precision reaches ``loop.min_value_precision``. Any other value only located the
    evidence (and gave a bridge fact its cues): the answer is read from the evidence's text."""
    precision = loop.model.value_precision
    if precision is None or precision < config.loop.min_value_precision:
        return {}
    return {rid: v for rid, v in loop.state.values.items() if rid in certified and v}


def _rounds_left(run: QuestionRun, config: LensConfig) -> bool:
    return run.budget.rounds < config.budget.max_rounds


def _coverage(
    run: QuestionRun, state: LoopState, evidence: list[Evidence], unresolved: list[str], values: dict[str, str]
) -> set[str]:
    """The unresolved facts the coverage call says the evidence does not state (``values``: the trusted ones)."""
    messages = coverage_messages(run.question, state.decomposition, values, evidence)
    cov = run.fixed_call(messages, CoverageReply, _COVER_TOKENS, keep=1, stage="coverage")
    return {m.strip().upper() for m in cov.missing} & set(unresolved) if cov is not None else set()


def _reenter(run: QuestionRun, loop: Loop, done: Answered, missing: set[str], config: LensConfig) -> None:
    """Self-correction: the loop runs again for the missing facts with a relaxed threshold and a wider candidate
    set; ``done`` takes the combined stop, the relaxed certification and the new E*."""
    for req in loop.state.requirements:
        if req.id in missing:
            limit = 2 * loop.state.prior_limit.get(req.id, config.prior.candidates)
            loop.refresh(req, fresh=False, limit=limit)
    again = loop.run(threshold_scale=config.loop.relaxed_factor, focus=set(missing))
    run.stages.append({"stage": "self-correction", "missing": sorted(missing), "stop": str(again)})
    done.stop = Stop(done.stop.reason, done.stop.detail, reentry=again)
    done.certified = loop.certified(config.loop.relaxed_factor)
    done.evidence = consolidated(loop, done.certified, config)


def _synthesize(run: QuestionRun, state: LoopState, evidence: list[Evidence], trusted: dict[str, str]) -> _Synthesis:
    """A comparison computed in code when the values read parse, else one synthesis call over the evidence (each
    reading's sentence first; only ``trusted`` values given as facts); when the call fails or names no answer,
    the last requirement's trusted value."""
    question, decomposition = run.question, state.decomposition
    computed = code_answer(question, decomposition, state.values)
    if computed is not None:
        c = comparison_of(question)  # the comparison code_answer computed
        run.stages.append({"stage": "synthesis", "in_code": computed[1], "comparison": f"{c.kind}-{c.pick}"})
        return _Synthesis(computed[0], set(), in_code=True)
    messages, _ = synthesis_messages(question, decomposition, trusted, evidence)
    reply = run.fixed_call(messages, SynthesisReply, _SYNTH_TOKENS, keep=0, stage="synthesis")
    last_value = clean_answer(trusted.get(decomposition.requirements[-1].id, ""), question)
    if reply is None:
        return _Synthesis(last_value, set())
    missing = {m.strip().upper() for m in reply.missing} & {r.id for r in decomposition.requirements}
    return _Synthesis(clean_answer(reply.answer, question) or last_value, missing)


def _shorten(run: QuestionRun, answer: str, evidence: list[Evidence]) -> str:
    """A long answer cut to the span a reader expects by one more call, when one is needed and it is shorter."""
    if not answer or not needs_shortening(run.question, answer):
        return answer
    messages = shorten_messages(run.question, answer, evidence)
    short = run.fixed_call(messages, ShortenReply, _SHORTEN_TOKENS, keep=0, stage="shorten")
    if short is not None and short.answer.strip() and len(short.answer) <= len(answer):
        return clean_answer(short.answer, run.question) or answer  # cut to no answer: the long one stands
    return answer


def _verified_in(state: LoopState, rid: str, evidence: list[Evidence]) -> bool:
    """Whether a finding verified for ``rid`` (its quote or value found in the document's text) lies inside one
    of the evidence regions."""
    for f in state.findings.get(rid, []):
        doc_id = state.view.docs[state.windows[f.window_key].doc_index].doc_id
        for e in evidence:
            if e.doc_id == doc_id and all(e.first_sentence <= i <= e.last_sentence for i in f.sentences):
                return True
    return False
