"""Layer 2: the budgeted propose–observe–update loop.

Each round proposes the unobserved windows with the highest expected value for the outstanding requirements
per token (belief mass of each outstanding requirement the window has not yet been judged for), within the
round's token cap and the ``max_files`` admission limit; one oracle call observes them for *every* outstanding
requirement; every belief is updated from that one observation. A verified value of a fact that a bridge fact
depends on fills in the bridge fact's cues and re-runs the prior for it. The loop stops when the weakest
requirement is certified (min_j GLR_j ≥ β(t, δ)·γ(I)), when no candidate is left to observe, when the
budget (rounds, calls, tokens, time) is spent, or when certification is out of reach: no sequence of readings
the observation model allows could lift some requirement's GLR to the threshold in the rounds left ("futile").
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Callable

from lens._beliefs import ELSEWHERE, Belief, stopping_threshold
from lens._budget import Budget
from lens._config import LensConfig
from lens._corpus import Document
from lens._cost import CostMeter
from lens._grading import ObservationModel, Reading, reading_features
from lens._llm import LLMClient, LLMDeadlineError, LLMError, LLMFormatError, LLMUnavailableError, refusal
from lens._observation import Finding, Observation, normalise, observe
from lens._prior import Prior
from lens._requirements import Decomposition, Requirement
from lens._result import RoundTrace
from lens._terms import capitalised_spans, content_terms, title_key, tokens
from lens._values import answer_type
from lens._view import CorpusView
from lens._windows import Window, estimate_tokens, windows_for

__all__ = ["LoopState", "Loop", "Observer"]

# An oracle other than the LLM: (question, facts [(id, text)], windows, documents, answer kinds by fact id,
# subjects by fact id) -> the verified Observation, or None for no reply. The oracle-strength simulation uses it.
Observer = Callable[
    [str, list[tuple[str, str]], list[Window], list[Document], dict[str, str], dict[str, str]], "Observation | None"
]

log = logging.getLogger("lens.loop")

PRIOR_RECORD_DEPTH = 100  # documents of each requirement's seed ranking kept as a record (LoopState.prior_record)


@dataclass
class LoopState:
    """Everything the loop knows about one question; consolidation and synthesis read it afterwards."""

    question: str
    decomposition: Decomposition
    view: CorpusView
    prior: Prior
    beliefs: dict[str, Belief] = field(default_factory=dict)
    windows: dict[str, Window] = field(default_factory=dict)
    prior_limit: dict[str, int] = field(default_factory=dict)
    observed: set[tuple[str, str]] = field(default_factory=set)  # (window key, requirement id + text)
    values: dict[str, str] = field(default_factory=dict)  # verified value of each requirement's favoured window
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    admitted: set[int] = field(default_factory=set)  # documents admitted to evidence extraction
    trace: list[RoundTrace] = field(default_factory=list)
    memory_signal: dict[str, dict[int, float]] = field(default_factory=dict)
    prior_ranking: dict[str, list[int]] = field(default_factory=dict)  # requirement -> doc indices, prior order
    # requirement -> the seed prior's ranking to PRIOR_RECORD_DEPTH documents: a record (the agent's stage
    # "prior", candidate recall@k in streams), never read by the loop, whose beliefs use the first ``limit``
    prior_record: dict[str, list[int]] = field(default_factory=dict)
    bridged: dict[str, str] = field(default_factory=dict)  # bridge requirement -> source value its prior used
    # cues the loop learned for a bridge requirement (names in observations); the decomposition stays as decided
    bridge_cues: dict[str, list[str]] = field(default_factory=dict)
    readings: list[Reading] = field(default_factory=list)  # every judgement of a window, with its features

    @property
    def requirements(self) -> list[Requirement]:
        return self.decomposition.requirements

    def doc(self, key: str) -> Document:
        return self.view.docs[self.windows[key].doc_index]


class Loop:
    def __init__(
        self,
        state: LoopState,
        *,
        client: LLMClient | None,
        config: LensConfig,
        budget: Budget,
        meter: CostMeter,
        evidence: ObservationModel,
        observer: "Observer | None" = None,
        on_round: Callable[[], None] | None = None,
    ):
        self.state = state
        self.client = client
        self.config = config
        self.budget = budget
        self.meter = meter
        self.evidence = evidence  # what one reading is worth (graded or single-rate)
        self.observer = observer  # replaces the LLM's observation (a simulated oracle); None: the LLM observes
        self.on_round = on_round  # called as each round starts (the agent's progress report)

    # ------------------------------------------------------------------ prior → beliefs
    def _cues(self, req: Requirement) -> list[str]:
        return req.prior_cues(self.state.values, self.state.bridge_cues.get(req.id, ()))

    def seed(self) -> None:
        """Initial beliefs for every requirement from the prior (bridge facts start from the question)."""
        for req in self.state.requirements:
            self.state.prior_limit[req.id] = self.config.prior.candidates
            self.refresh(req, fresh=True)

    def refresh(self, req: Requirement, *, fresh: bool, limit: int | None = None) -> None:
        """Re-run the prior for ``req`` with its current cues; ``fresh`` re-initialises its belief (a bridge
        cue arrived), otherwise new windows are added to the existing belief (expansion)."""
        s, cfg = self.state, self.config
        limit = limit or s.prior_limit.get(req.id, cfg.prior.candidates)
        s.prior_limit[req.id] = limit
        cues = self._cues(req)
        deep = fresh and req.id not in s.prior_record  # the seed: one scoring call serves the record too
        ranked = s.prior.score(
            s.question,
            cues,
            memory=s.memory_signal.get(req.id),
            limit=max(limit, PRIOR_RECORD_DEPTH) if deep else limit,
        )
        if deep:
            s.prior_record[req.id] = [c.index for c in ranked[:PRIOR_RECORD_DEPTH]]
        ranked = ranked[:limit]
        s.prior_ranking[req.id] = [c.index for c in ranked]
        terms = list(dict.fromkeys(t for c in cues + [s.question] for t in content_terms(c)))
        weights: dict[str, float] = {}
        tau = max(cfg.prior.temperature, 1e-6)
        for c in ranked:
            doc = s.view.docs[c.index]
            wins = windows_for(doc, c.index, terms, cfg.prior.window_sentences)
            for rank, w in enumerate(wins):
                s.windows.setdefault(w.key, w)
                # the document's prior mass, split across its windows in cue-hit order
                weights[w.key] = math.exp(c.score / tau) / (1 + rank)
        belief = s.beliefs.get(req.id)
        if belief is None or fresh:
            belief = Belief(req.id)
            belief.init(weights)
            s.beliefs[req.id] = belief
        else:
            belief.add_candidates(weights)

    # ------------------------------------------------------------------ one round
    def certified(self, scale: float = 1.0) -> set[str]:
        """The requirements whose GLR reaches the stopping threshold after the rounds so far (× ``scale``: the
        relaxed threshold of a self-correction)."""
        s = self.state
        threshold = stopping_threshold(len(s.trace), s.decomposition.intent, self.config.loop, scale)
        return {r.id for r in s.requirements if s.beliefs[r.id].glr() >= threshold}

    def _all_certify(self, threshold: float) -> bool:
        return all(self.state.beliefs[r.id].glr() >= threshold for r in self.state.requirements)

    def _outstanding(self, threshold: float, focus: set[str] | None) -> list[Requirement]:
        out = []
        for req in self.state.requirements:
            if req.waiting(self.state.values):
                continue
            if focus is not None and req.id not in focus:
                continue
            if self.state.beliefs[req.id].glr() >= threshold:
                continue
            out.append(req)
        return out

    def _propose(self, outstanding: list[Requirement]) -> list[tuple[Window, float]]:
        s, cfg = self.state, self.config
        scored = []
        for key, w in s.windows.items():
            gain = 0.0
            for req in outstanding:
                tag = f"{req.id}:{req.resolved_text(s.values)}"
                if (key, tag) in s.observed:
                    continue
                gain += s.beliefs[req.id].posterior().get(key, 0.0)
            if gain <= 0:
                continue
            # expected value per token, with a floor so tiny windows are not favoured for being tiny
            scored.append((gain / max(w.tokens, 150), -w.doc_index, key, w, gain))
        scored.sort(key=lambda x: (x[0], x[1], x[2]), reverse=True)
        picked: list[tuple[Window, float]] = []
        tokens = 0
        admitted = set(s.admitted)
        for _, _, _, w, gain in scored:
            if len(picked) >= cfg.loop.windows_per_round:
                break
            if w.doc_index not in admitted and len(admitted) >= cfg.budget.max_files:
                continue
            if picked and tokens + w.tokens > cfg.loop.window_token_cap:
                continue
            picked.append((w, gain))
            tokens += w.tokens
            admitted.add(w.doc_index)
        return picked

    def _expand(self, outstanding: list[Requirement]) -> bool:
        """No window left to observe: widen the candidate set of the outstanding requirements once more."""
        grew = False
        for req in outstanding:
            before = len(self.state.windows)
            limit = self.state.prior_limit.get(req.id, self.config.prior.candidates)
            if limit >= 4 * self.config.prior.candidates:
                continue
            self.refresh(req, fresh=False, limit=limit + self.config.prior.candidates)
            grew = grew or len(self.state.windows) > before
        return grew

    def run(self, *, threshold_scale: float = 1.0, focus: set[str] | None = None, futility: bool = True) -> str:
        """Rounds until certified, out of candidates, out of budget or (with ``futility``) out of reach of
        certification. Returns the stop reason. ``futility=False`` is for measuring the sensor itself
        (``lens calibrate run``), which must read whatever the current calibration says of it."""
        s, cfg = self.state, self.config
        while True:
            threshold = stopping_threshold(len(s.trace), s.decomposition.intent, cfg.loop, threshold_scale)
            outstanding = self._outstanding(threshold, focus)
            if not outstanding and not any(r.waiting(s.values) for r in s.requirements):
                return "certified"
            if not outstanding:
                # bridge facts whose source gave no value: let them search with the question's own cues
                for r in s.requirements:
                    if r.waiting(s.values):
                        s.values.setdefault(r.depends_on or "", "")
                        self.refresh(r, fresh=True)
                continue
            if futility and self._futile(outstanding, threshold):
                return "futile"
            proposal = self._propose(outstanding)
            if not proposal and self._expand(outstanding):
                proposal = self._propose(outstanding)
            if not proposal:
                return "candidates"
            if not self.budget.start_round():
                return "budget:" + ",".join(self.budget.exhausted)
            if self.on_round is not None:
                self.on_round()
            stop = self._round(outstanding, proposal, threshold_scale)
            if stop:
                return stop

    def _futile(self, outstanding: list[Requirement], threshold: float) -> bool:
        """Whether some outstanding requirement cannot certify within the rounds left, however the readings
        come out. Each reading moves one window's log weight by at most L (the observation model's largest
        |log LR|) and never touches "elsewhere", which stays an alternative, so after k more readings
        GLR_j ≤ log((1 − e_j) / e_j) + k·L, e_j = P_j(elsewhere) now; k = rounds left × windows per round; the
        threshold only grows with the rounds. The bound is over the hypotheses enumerated now: a later expansion
        that splits "elsewhere" into new windows (at most 80 % of it each time) changes the hypothesis set
        without any reading, and a GLR raised that way would be bookkeeping, not evidence. A sensor this weak
        cannot settle the question: the loop stops ("futile") instead of spending the budget, and the answer is
        made from the prior's evidence."""
        s, cfg = self.state, self.config
        k = max(cfg.budget.max_rounds - self.budget.rounds, 0) * cfg.loop.windows_per_round
        reach = k * self.evidence.max_abs_log_lr()
        for req in outstanding:
            e = s.beliefs[req.id].posterior().get(ELSEWHERE, 0.0)
            if 0.0 < e < 1.0 and math.log((1.0 - e) / e) + reach < threshold:
                return True
        return False

    def _round(self, outstanding, proposal, threshold_scale) -> str | None:
        s, cfg = self.state, self.config
        windows = [w for w, _ in proposal]
        docs = [s.view.docs[w.doc_index] for w in windows]
        texts = {r.id: r.text for r in s.requirements}
        facts = [(r.id, r.resolved_text(s.values, texts)) for r in outstanding]
        obs_record: dict = {"findings": [], "rejected": [], "mentions": []}
        outcome: dict[str, str] = {}  # what the call ended in, when it gave no reply: "stop", "error"

        def call(messages, schema, max_tokens):
            est = sum(estimate_tokens(m["content"]) for m in messages) + max_tokens
            if self.client is None or not self.budget.can_call("round", est):
                outcome["stop"] = "budget:" + ",".join(self.budget.exhausted or ["calls"])
                return None
            repair = self.budget.can_call("round", est, calls=2)
            before = self.meter.cost.oracle_calls
            try:
                return self.client.chat_json(
                    messages,
                    schema,
                    max_tokens=max_tokens,
                    deadline=self.budget.deadline,
                    meter=self.meter,
                    repair=repair,
                    logprobs=cfg.llm.logprobs,
                )
            except LLMDeadlineError:
                outcome.update(error="time budget spent", stop="budget:time")
            except LLMFormatError as exc:
                outcome["error"] = str(exc)
            except LLMUnavailableError:
                raise
            except LLMError as exc:
                refused = refusal(exc, self.meter, self.config.llm)
                if refused is not None:
                    raise refused from None
                outcome.update(error=str(exc), stop="llm-error")
            finally:
                self.budget.charge("round", self.meter.cost.oracle_calls - before)
            return None

        kinds = {r.id: answer_type(r.resolved_text(s.values)) for r in outstanding}
        subjects = {r.id: subj for r in outstanding if (subj := self._subject(r))}
        if self.observer is not None:
            obs = self.observer(s.question, facts, windows, docs, kinds, subjects)
        else:
            obs = observe(s.question, facts, windows, docs, call, kinds=kinds, subjects=subjects)
        stop: str | None = outcome.get("stop")
        if "error" in outcome:
            obs_record["error"] = outcome["error"]
        for w in windows:
            s.admitted.add(w.doc_index)
        if obs is None and stop is None:
            # an unusable reply is no observation; don't propose the same windows again for these facts
            for req in outstanding:
                tag = f"{req.id}:{req.resolved_text(s.values)}"
                s.observed.update((w.key, tag) for w in windows)
        if obs is not None:
            readings = self._update(outstanding, windows, obs)
            obs_record = {
                "findings": [f.__dict__ | {"sentences": list(f.sentences)} for f in obs.findings],
                "rejected": obs.rejected,
                "mentions": obs.mentions,
                "readings": [
                    {"fact": r.requirement_id, "window": r.window_key, "found": r.found, "log_lr": round(r.log_lr, 3)}
                    for r in readings
                ],
            }
            self._bridge(obs.mentions)
        glrs = {r.id: round(s.beliefs[r.id].glr(), 3) for r in s.requirements}
        threshold = stopping_threshold(len(s.trace) + 1, s.decomposition.intent, cfg.loop, threshold_scale)
        ready = [r for r in s.requirements if not r.waiting(s.values)]
        if stop is None and len(ready) == len(s.requirements) and self._all_certify(threshold):
            stop = "certified"
        s.trace.append(
            RoundTrace(
                round=len(s.trace) + 1,
                proposal=[
                    {
                        "window": w.key,
                        "path": w.path,
                        "sentences": [w.first, w.last],
                        "tokens": w.tokens,
                        "value": round(g, 4),
                    }
                    for w, g in proposal
                ],
                observation=obs_record,
                beliefs={r.id: s.beliefs[r.id].summary() for r in s.requirements},
                glr=glrs,
                threshold=round(threshold, 3),
                stop=stop,
            )
        )
        return stop

    def _update(self, outstanding: list[Requirement], windows: list[Window], obs: Observation) -> list[Reading]:
        """One observation updates the belief of every outstanding requirement: each (requirement, window)
        reading moves the window's weight by its likelihood ratio (``self.evidence``)."""
        s = self.state
        found = {(f.requirement_id, f.window_key): f for f in obs.findings}
        rnd = len(s.trace) + 1
        readings: list[Reading] = []
        for req in outstanding:
            text = req.resolved_text(s.values)
            tag = f"{req.id}:{text}"
            kind, subject = answer_type(text), self._subject(req)
            ranking = s.prior_ranking.get(req.id, [])
            known = s.findings.get(req.id, []) + [f for f in obs.findings if f.requirement_id == req.id]
            belief = s.beliefs[req.id]
            for w in windows:
                f = found.get((req.id, w.key))
                rank = ranking.index(w.doc_index) if w.doc_index in ranking else len(ranking)
                agree = (
                    f is not None
                    and bool(f.value)
                    and any(
                        g.value
                        and normalise(g.value) == normalise(f.value)
                        and s.windows[g.window_key].doc_index != w.doc_index
                        for g in known
                    )
                )
                feats = reading_features(
                    found=f is not None,
                    exact=f is not None and f.match == "exact",
                    value=f.value if f else "",
                    quote=f.quote if f else "",
                    kind=kind,
                    requirement=text,
                    subject=subject,
                    window_text=w.text(s.view.docs[w.doc_index]),
                    rank=rank,
                    agree=agree,
                    logprob=f.logprob if f else None,
                    elsewhere=f is None and any(g.requirement_id == req.id for g in obs.findings),
                    null_logprob=obs.nulls.get(req.id),
                )
                with_lp = obs.logprobs and (f is None or f.logprob is not None)
                log_lr = self.evidence.log_lr(feats, logprobs=with_lp)
                belief.update(w.key, log_lr, confirmed=f is not None, value=f.value if f else "")
                s.observed.add((w.key, tag))
                reading = Reading(
                    rnd,
                    req.id,
                    text,
                    w.key,
                    f is not None,
                    feats,
                    log_lr,
                    with_lp,
                    f.value if f else "",
                    f.sentences if f else (),
                )
                readings.append(reading)
        s.readings.extend(readings)
        for f in obs.findings:
            s.findings.setdefault(f.requirement_id, []).append(f)
        # the value of a requirement is the one read in its favoured confirmed window
        for req in outstanding:
            fav = s.beliefs[req.id].favoured()
            for f in reversed(s.findings.get(req.id, [])):
                if f.window_key == fav and f.value:
                    s.values[req.id] = f.value
                    break
        return readings

    def _subject(self, req: Requirement) -> str | None:
        return req.subject(self.state.values)

    def _quote_names(self, rid: str) -> list[str]:
        """Names in the verified quote of ``rid``'s favoured window that the question does not contain: the
        entity a bridge fact is about, when the oracle's own value was unusable."""
        s = self.state
        fav = s.beliefs[rid].favoured()
        qwords = set(tokens(s.question))
        out = []
        for f in s.findings.get(rid, []):
            if f.window_key != fav:
                continue
            for span in capitalised_spans(f.quote):
                words = tokens(span)
                if words and not set(words) <= qwords and title_key(span) not in out:
                    out.append(span)
        return out

    def _bridge(self, mentions: list[str]) -> None:
        """Fill in bridge cues from newly known values (or mentions) and re-run the prior for those facts."""
        s = self.state
        for req in s.requirements:
            if not req.depends_on:
                continue
            if not s.values.get(req.depends_on):
                names = self._quote_names(req.depends_on)
                if names:
                    s.values[req.depends_on] = names[0]
                    learned = s.bridge_cues.setdefault(req.id, [])
                    learned.extend(n for n in names[1:3] if n not in learned)
            known = s.values.get(req.depends_on)
            if known and s.bridged.get(req.id) != known:
                s.bridged[req.id] = known
                self.refresh(req, fresh=True)
            elif not known and mentions:
                learned = s.bridge_cues.setdefault(req.id, [])
                learned.extend(m for m in mentions if m not in learned)

    # ------------------------------------------------------------------ summaries
    def posterior_by_doc(self) -> dict[int, float]:
        """Σ_j P_j(document holds Z*_j): the expected number of requirements each document serves."""
        out: dict[int, float] = {}
        for belief in self.state.beliefs.values():
            for key, p in belief.posterior().items():
                if key == ELSEWHERE:
                    continue
                idx = self.state.windows[key].doc_index
                out[idx] = out.get(idx, 0.0) + p
        return out
