"""Layer 2: the budgeted propose–observe–update loop and its explore stage (stop rules: ``lens.loop._stop``;
``docs/pipeline.md`` § The loop).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Callable

from lens._config import LensConfig
from lens._result import RoundTrace, place
from lens._terms import capitalised_spans, content_terms, title_key, tokens
from lens.llm._cost import CostMeter
from lens.llm._llm import LLMClient, LLMDeadlineError
from lens.loop._beliefs import ELSEWHERE, Belief, stopping_threshold
from lens.loop._budget import Budget
from lens.loop._grading import Reading, ReadingModel, reading_features, reading_model_for, subject_named
from lens.loop._oracle import budgeted_call
from lens.loop._reading import TOP_LOGPROBS, Judgement, read_window
from lens.loop._run import QuestionRun
from lens.loop._stop import Stop, StopReason
from lens.prior._prior import Prior, merge_round_robin
from lens.question._requirements import Decomposition, Requirement
from lens.question._values import answer_type, whole_entity
from lens.reader._documents import Document
from lens.reader._view import CorpusView
from lens.reader._windows import Window, windows_for

__all__ = ["LoopState", "Loop", "Observer", "assemble_loop", "explore"]

# An oracle other than the LLM: (question, requirement id, fact text, window, document) -> the reading's
# Judgement, or None for no reply. The oracle-strength simulation uses it.
Observer = Callable[[str, str, str, Window, Document], "Judgement | None"]

log = logging.getLogger("lens.loop")


@dataclass
class CallEnd:
    """How a reading's oracle call ended when it did not simply reply: the stop it forces on the loop (budget
    spent, endpoint failure) and the error it reports, if any. Both None: the call replied (or was not made)."""

    stop: Stop | None = None
    error: str | None = None


PRIOR_RECORD_DEPTH = 100  # documents of each requirement's seed ranking kept as a record (LoopState.prior_record)
DETAIL_CANDIDATES = 4  # candidate windows per requirement a watcher is shown (Loop.progress_detail)


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
    findings: dict[str, list[Reading]] = field(default_factory=dict)  # confirming readings per requirement
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
    readings: list[Reading] = field(default_factory=list)  # every reading, with its features

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
        model: ReadingModel,
        observer: "Observer | None" = None,
        on_round: Callable[[], None] | None = None,
    ):
        self.state = state
        self.client = client
        self.config = config
        self.budget = budget
        self.meter = meter
        self.model = model  # what one reading is worth
        self.observer = observer  # replaces the LLM's reading (a simulated oracle); None: the LLM reads
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
            belief = Belief(req.id, elsewhere_mass=cfg.prior.elsewhere_mass)
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

    def _tag(self, req: Requirement) -> str:
        """A requirement as read: its id and resolved text (a bridge fact re-resolved is a new question)."""
        return f"{req.id}:{req.resolved_text(self.state.values)}"

    def _propose(
        self, outstanding: list[Requirement], threshold: float
    ) -> tuple[list[tuple[Requirement, Window, float]], int]:
        """The unread (requirement, window) pairs with the most belief mass per token, within the admission limit
        and the round's token cap, at most ``readings_per_round``, each worth reading (``_worth_reading``); and
        how many pairs were passed over as not worth it."""
        s, cfg = self.state, self.config
        scored = []
        for req in outstanding:
            tag = self._tag(req)
            for key, p in s.beliefs[req.id].posterior().items():
                w = s.windows.get(key)
                if w is None or p <= 0 or (key, tag) in s.observed:  # None: "elsewhere"
                    continue
                # expected value per token, with a floor so tiny windows are not favoured for being tiny
                scored.append((p / max(w.tokens, 150), -w.doc_index, key, req.id, req, w, p))
        scored.sort(key=lambda x: x[:4], reverse=True)
        picked: list[tuple[Requirement, Window, float]] = []
        tokens = gated = 0
        admitted = set(s.admitted)
        for *_, req, w, p in scored:
            if len(picked) >= cfg.loop.readings_per_round:
                break
            if w.doc_index not in admitted and len(admitted) >= cfg.budget.max_files:
                continue
            if picked and tokens + w.tokens > cfg.loop.window_token_cap:
                continue
            if not self._worth_reading(req, w, threshold):
                gated += 1
                continue
            picked.append((req, w, p))
            tokens += w.tokens
            admitted.add(w.doc_index)
        return picked, gated

    def _worth_reading(self, req: Requirement, w: Window, threshold: float) -> bool:
        """Whether reading ``w`` for ``req`` changes, with probability at least ``loop.min_reading_value``, which
        window ``req`` favours or whether it certifies at ``threshold`` (the value of the reading's information:
        ``docs/readings.md`` § Value of a reading). Each outcome — a named sentence with a value, or none — has
        the probability the reading model and the window's belief give it."""
        least = self.config.loop.min_reading_value
        if least <= 0:
            return True
        belief = self.state.beliefs[req.id]
        p = belief.posterior().get(w.key, 0.0)
        rank, subject = self._rank_subject(req, w)
        favoured, glr = belief.favoured(), belief.glr()
        (tpr, pos), (fpr, neg) = self.model.outcomes(
            subject_window=subject, rank=rank, logprobs=self.config.llm.logprobs and self.observer is None
        )
        value = 0.0
        for if_holds, if_not, log_lr, positive in ((tpr, fpr, pos, True), (1.0 - tpr, 1.0 - fpr, neg, False)):
            fav, new_glr = belief.what_if(w.key, log_lr, confirmed=positive and log_lr > 0)
            if fav != favoured or new_glr >= threshold > glr:
                value += p * if_holds + (1.0 - p) * if_not
        return value >= least

    def _rank_subject(self, req: Requirement, w: Window) -> tuple[int, bool]:
        """The rank of ``w``'s document in ``req``'s prior ranking and whether ``w`` names ``req``'s subject."""
        s = self.state
        ranking = s.prior_ranking.get(req.id, [])
        rank = ranking.index(w.doc_index) if w.doc_index in ranking else len(ranking)
        return rank, subject_named(self._subject(req), w.text(s.view.docs[w.doc_index]))

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

    def run(self, *, threshold_scale: float = 1.0, focus: set[str] | None = None, futility: bool = True) -> Stop:
        """Rounds until certified, out of candidates, out of budget or (with ``futility``) out of reach of
        certification. Returns the stop reason. ``futility=False`` is for measuring the sensor itself
        (``lens calibrate run``), which must read whatever the current calibration says of it."""
        s, cfg = self.state, self.config
        while True:
            threshold = stopping_threshold(len(s.trace), s.decomposition.intent, cfg.loop, threshold_scale)
            outstanding = self._outstanding(threshold, focus)
            if not outstanding and not any(r.waiting(s.values) for r in s.requirements):
                return Stop(StopReason.CERTIFIED)
            if not outstanding:
                # bridge facts whose source gave no value: let them search with the question's own cues
                for r in s.requirements:
                    if r.waiting(s.values):
                        s.values.setdefault(r.depends_on or "", "")
                        self.refresh(r, fresh=True)
                continue
            if futility:
                outstanding = [r for r in outstanding if self._in_reach(r, threshold)]
                if not outstanding:
                    return Stop(StopReason.FUTILE)
            proposal, gated = self._propose(outstanding, threshold)
            if not proposal and not gated and self._expand(outstanding):
                proposal, gated = self._propose(outstanding, threshold)
            if not proposal:  # nothing left to read, or nothing worth reading
                return Stop(StopReason.UNINFORMATIVE if gated else StopReason.CANDIDATES)
            if not self.budget.start_round():
                return Stop.budget(self.budget.exhausted)
            if self.on_round is not None:
                self.on_round()
            stop = self._round(outstanding, proposal, threshold_scale)
            if stop:
                return stop

    def _in_reach(self, req: Requirement, threshold: float) -> bool:
        """Whether reading more could still help ``req``: nothing confirmed yet and one reading could make an unread
        window its favoured one, or some readings in the rounds left could lift its GLR to the threshold (the two
        bounds: ``docs/readings.md`` § Futility)."""
        s, cfg = self.state, self.config
        belief = s.beliefs[req.id]
        tag = self._tag(req)
        read = {key for key in belief.log_w if (key, tag) in s.observed}
        k = max(cfg.budget.max_rounds - self.budget.rounds, 0) * cfg.loop.readings_per_round
        most = self.model.max_abs_log_lr()
        if k and not belief.confirmed and belief.could_favour(read, most):
            return True
        e = belief.posterior().get(ELSEWHERE, 0.0)
        if 0.0 < e < 1.0 and math.log((1.0 - e) / e) + k * most < threshold:
            return False
        if req.depends_on:  # its text, and so what counts as read, changes with the value it waits on
            return True
        return belief.reachable_glr(read, k, most) >= threshold

    def _round(self, outstanding, proposal, threshold_scale) -> Stop | None:
        s, cfg = self.state, self.config
        rnd = len(s.trace) + 1
        record: dict = {"readings": []}
        stop: Stop | None = None
        for req, w, _ in proposal:
            reading, end = self.read(req, w, rnd)
            if end.error is not None:
                record["error"] = end.error
            if end.stop is not None:
                stop = end.stop
                break
            record["readings"].append({"fact": req.id, "window": w.key, **_brief(reading)})
        self.settle(outstanding)
        glrs = {r.id: round(s.beliefs[r.id].glr(), 3) for r in s.requirements}
        threshold = stopping_threshold(rnd, s.decomposition.intent, cfg.loop, threshold_scale)
        ready = [r for r in s.requirements if not r.waiting(s.values)]
        if stop is None and len(ready) == len(s.requirements) and self._all_certify(threshold):
            stop = Stop(StopReason.CERTIFIED)
        s.trace.append(
            RoundTrace(
                round=rnd,
                proposal=[
                    {
                        "fact": req.id,
                        "window": w.key,
                        "path": w.path,
                        "sentences": [w.first, w.last],
                        "tokens": w.tokens,
                        "value": round(p, 4),
                    }
                    for req, w, p in proposal
                ],
                observation=record,
                beliefs={r.id: s.beliefs[r.id].summary() for r in s.requirements},
                glr=glrs,
                threshold=round(threshold, 3),
                stop=None if stop is None else str(stop),
            )
        )
        return stop

    def read(self, req: Requirement, w: Window, rnd: int) -> tuple[Reading | None, CallEnd]:
        """Read ``w`` for ``req`` and move its belief; None when the call gave no usable reply, with how the call
        ended. A window is read once per wording of the requirement, usable reply or not."""
        s = self.state
        judgement, end = self._judge(req, w)
        if end.stop is not None:
            return None, end
        s.admitted.add(w.doc_index)
        s.observed.add((w.key, self._tag(req)))
        return (None if judgement is None else self._apply(req, w, judgement, rnd)), end

    def settle(self, requirements: list[Requirement]) -> None:
        """After readings: each requirement's value from its favoured confirmed window, then the bridge step."""
        self._settle_values(requirements)
        self._bridge()

    def _judge(self, req: Requirement, w: Window) -> tuple[Judgement | None, CallEnd]:
        """One reading of ``w`` for ``req`` (one budgeted oracle call, or the simulated observer), and how the
        call ended."""
        s, cfg = self.state, self.config
        doc = s.view.docs[w.doc_index]
        fact = req.resolved_text(s.values, {r.id: r.text for r in s.requirements})
        if self.observer is not None:
            return self.observer(s.question, req.id, fact, w, doc), CallEnd()
        end = CallEnd()

        def call(messages, max_tokens):
            if self.client is None:
                end.stop = Stop.budget(self.budget.exhausted or ["calls"])
                return None
            done = budgeted_call(
                self.budget,
                self.meter,
                cfg.llm,
                "round",
                messages,
                max_tokens,
                lambda _: self.client.chat(
                    messages,
                    max_tokens=max_tokens,
                    deadline=self.budget.deadline,
                    meter=self.meter,
                    logprobs=cfg.llm.logprobs,
                    top_logprobs=TOP_LOGPROBS if cfg.llm.logprobs else 0,
                ),
            )
            if done.skipped:
                end.stop = Stop.budget(self.budget.exhausted or ["calls"])
            elif isinstance(done.error, LLMDeadlineError):
                end.error, end.stop = "time budget spent", Stop.budget(["time"])
            elif done.error is not None:
                end.error, end.stop = str(done.error), Stop(StopReason.LLM_ERROR)
            return done.reply

        judgement = read_window(s.question, fact, w, doc, call, kind=answer_type(fact), subject=self._subject(req))
        return judgement, end

    def _apply(self, req: Requirement, w: Window, j: Judgement, rnd: int) -> Reading:
        """Move ``w``'s belief for ``req`` by the reading's likelihood ratio; a named sentence that moves it up
        confirms the window (with the value it verified)."""
        s = self.state
        text = req.resolved_text(s.values)
        rank, subject = self._rank_subject(req, w)
        feats = reading_features(j, subject_window=subject, rank=rank)
        with_lp = j.score is not None
        log_lr = self.model.log_lr(feats, logprobs=with_lp)
        confirmed = j.found and log_lr > 0
        s.beliefs[req.id].update(w.key, log_lr, confirmed=confirmed, value=j.value if confirmed else "")
        reading = Reading(
            round=rnd,
            requirement_id=req.id,
            requirement=text,
            window_key=w.key,
            found=j.found,
            features=feats,
            log_lr=log_lr,
            logprobs=with_lp,
            value=j.value,
            sentence=j.sentence,
            quote=j.quote,
            confirmed=confirmed,
            top=j.top,
            reply=j.reply,
        )
        s.readings.append(reading)
        if confirmed:
            s.findings.setdefault(req.id, []).append(reading)
        return reading

    def _settle_values(self, outstanding: list[Requirement]) -> None:
        """The value of a requirement is the one confirmed in its favoured window (latest reading first), when the
        sentence the reading named holds it as a whole entity (not inside a longer name or number); otherwise
        the requirement has no value and a bridge fact depending on it takes its cues from the names in that
        sentence (``_bridge``)."""
        s = self.state
        for req in outstanding:
            fav = s.beliefs[req.id].favoured()
            for f in reversed(s.findings.get(req.id, [])):
                if f.window_key == fav and f.value:
                    if whole_entity(f.value, f.quote):
                        s.values[req.id] = f.value
                    break

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

    def _bridge(self) -> None:
        """Fill in bridge cues from newly known values and re-run the prior for those facts."""
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

    # ------------------------------------------------------------------ summaries
    def progress_detail(self, candidates: int = DETAIL_CANDIDATES) -> dict:
        """The search so far as JSON-ready data, for a watcher (``Progress.detail``): the requirements (their text
        as now resolved, cues, the fact they wait on), every round's readings (requirement, window and its place,
        the sentence named with its text and place, the value, confirmed or not; ``reply`` None when the call gave
        no usable reply) with the GLRs and threshold after the round, and each requirement's belief now: its
        ``candidates`` heaviest windows (posterior, confirmed, their place), the mass left "elsewhere", its GLR,
        the stopping threshold it must reach and whether it reached it. Cumulative: it reads the trace and the
        beliefs, never changes them."""
        s = self.state
        rounds = len(s.trace)
        threshold = (
            s.trace[-1].threshold if s.trace else stopping_threshold(0, s.decomposition.intent, self.config.loop)
        )
        beliefs = {}
        for req in s.requirements:
            belief = s.beliefs.get(req.id)
            if belief is None:  # not seeded yet
                continue
            post = belief.posterior()
            top = sorted(((p, k) for k, p in post.items() if k != ELSEWHERE), reverse=True)[:candidates]
            glr = belief.glr()
            beliefs[req.id] = {
                "candidates": [
                    {**self._place(k), "posterior": round(p, 4), "confirmed": k in belief.confirmed} for p, k in top
                ],
                "elsewhere": round(post.get(ELSEWHERE, 0.0), 4),
                "glr": round(glr, 3),
                "threshold": round(threshold, 3),
                "certified": glr >= threshold,
            }
        return {
            "intent": s.decomposition.intent.value,
            "requirements": [
                {
                    "id": r.id,
                    "text": r.resolved_text(s.values),
                    "cues": r.all_cues(s.values, s.bridge_cues.get(r.id, ())),
                    "depends_on": r.depends_on,
                    "value": s.values.get(r.id) or None,
                }
                for r in s.requirements
            ],
            "rounds": [
                {
                    "round": t.round,
                    "readings": [self._reading_detail(x) for x in t.observation.get("readings", [])],
                    "error": t.observation.get("error"),
                    "glr": t.glr,
                    "threshold": t.threshold,
                }
                for t in s.trace
            ],
            "round": rounds,
            "beliefs": beliefs,
        }

    def _place(self, key: str) -> dict:
        """A window's document and place (its first sentence's), for a watcher."""
        w = self.state.windows[key]
        doc = self.state.doc(key)
        first, last = doc.sentences[w.first], doc.sentences[w.last]
        return {
            "window": key,
            "path": w.path,
            "doc_id": w.doc_id,
            "title": w.title,
            "sha256": w.sha256,
            "sentences": [w.first, w.last],
            "lines": [first.line_start, last.line_end],
            "location": first.where,
            "place": place(first.where),
        }

    def _reading_detail(self, traced: dict) -> dict:
        """One reading as the round's trace recorded it, with its window's place and the sentence it named."""
        out = {"requirement": traced["fact"], **self._place(traced["window"])}
        if traced.get("reply", "") is None:
            return {**out, "reply": None}
        out.update(found=traced["found"], value=traced["value"], confirmed=traced["confirmed"], log_lr=traced["log_lr"])
        named = traced.get("sentence")
        sents = self.state.doc(traced["window"]).sentences
        if named is not None and 0 <= named < len(sents):
            sent = sents[named]
            out.update(
                sentence=named,
                sentence_text=sent.text,
                sentence_lines=[sent.line_start, sent.line_end],
                sentence_location=sent.where,
                sentence_place=place(sent.where),
            )
        return out

    def prior_candidates(self, depth: int) -> list[str]:
        """The prior's candidate documents (doc ids): the requirements' seed rankings merged round robin, at most
        ``depth``."""
        lists = [self.state.prior_record.get(r.id, []) for r in self.state.requirements]
        return [self.state.view.docs[i].doc_id for i in merge_round_robin(lists, depth)]

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


def assemble_loop(
    question: str,
    decomposition: Decomposition,
    prior: Prior,
    config: LensConfig,
    *,
    client: LLMClient | None,
    meter: CostMeter,
    budget: Budget | None = None,
    memory_signal: dict[str, dict[int, float]] | None = None,
    observer: Observer | None = None,
    on_round: Callable[[], None] | None = None,
) -> Loop:
    """The loop for one question: its state over ``prior`` (and the view the prior scores), the served model's
    reading model, and ``budget`` (default: a fresh one from ``config.budget``, charged to ``meter``). The one
    place a loop is put together: the agent, calibration and the reading-protocol benchmark all call it."""
    state = LoopState(
        question=question,
        decomposition=decomposition,
        view=prior.view,
        prior=prior,
        memory_signal=memory_signal or {},
    )
    return Loop(
        state,
        client=client,
        config=config,
        budget=budget or Budget(config.budget, meter),
        meter=meter,
        model=reading_model_for(config),
        observer=observer,
        on_round=on_round,
    )


def explore(run: QuestionRun, loop: Loop, *, enabled: bool) -> Stop:
    """The explore stage: beliefs seeded from the prior (its candidate documents recorded as stage "prior"), then
    propose–observe–update until a stop rule fires (``enabled`` False: the no-exploration ablation stops here)."""
    loop.seed()
    run.stages.append({"stage": "prior", "candidates": loop.prior_candidates(PRIOR_RECORD_DEPTH)})
    return loop.run() if enabled else Stop(StopReason.NO_EXPLORATION)


def _brief(r: Reading | None) -> dict:
    """A reading as the round's trace records it (None: no usable reply)."""
    if r is None:
        return {"reply": None}
    return {
        "found": r.found,
        "sentence": r.sentence,
        "value": r.value,
        "score": None if not r.logprobs else round(r.features.get("score", 0.0), 3),
        "log_lr": round(r.log_lr, 3),
        "confirmed": r.confirmed,
        "top": [[t, round(lp, 3)] for t, lp in r.top],
        "reply": r.reply,
    }
