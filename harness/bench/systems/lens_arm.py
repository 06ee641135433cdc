"""The LENS arm: an adapter over the public agent, ``lens.Agent(config, client=...).ask(question, folder)``.

LENS is index-free: every question scans the folder as it is now. The agent runs cold, as in the paper (no
warm-reuse memory: ``memory=None``, nothing recorded). It enforces its own budgets from the shared configuration
(tokens per query, per-call timeout, per-question wall clock), so the adapter only maps the result:

- evidence passages = the agent's consolidated evidence (path, title, text, line range);
- retrieved documents = the documents of that evidence (the files LENS cites);
- supporting facts = (title, sent_id) for every line of every evidence passage, through the snapshot layout
  (``sentences_of_lines``); the title is the file's first line, the authoritative snapshot title;
- a unit of a document-format file (a PDF page, a run of Word paragraphs: ``<file>#u<k>``) is titled by its file's
  title (``corpus.file_title``: the PDF's Title metadata, the Word file's core properties title) and keeps its
  ``location`` (``{"page": 3}``); its sentences do not map to HotpotQA sent_ids (a PDF wraps them), so a
  prediction citing a unit gives no supporting facts (``None``: not evaluated);
- cost = the agent's own accounting (oracle calls, prompt/completion tokens, cache hits).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.bench.snapshots import sentences_of_lines
from harness.bench.systems.base import QuestionBudget, RunLevelError, System, error_text
from harness.bench.systems.corpus import file_title, read_snapshot_doc
from harness.bench.systems.prediction import Passage, Prediction, RetrievedDoc
from lens import Agent, LensError
from lens.parts import is_endpoint_failure

__all__ = ["LensSystem", "prediction_from_result", "lens_details"]


def lens_details(result: Any) -> dict[str, Any]:
    """The agent's own account of one answer, as rows keep it (``prediction.details``): flags, stop reason,
    requirements, evidence (without text), decomposition, memory entries, stages, cost shape, notes. The PIT
    audit's LENS-memory mode reads these fields (:mod:`harness.audit.lens_events`)."""
    cost = result.cost
    return {
        "best_effort": result.best_effort,
        "answer_verified": result.answer_verified,
        "stop_reason": result.stop_reason,
        "intent": result.intent,
        "requirements": [r.to_dict() for r in result.requirements],
        "evidence": [{k: v for k, v in e.to_dict().items() if k != "text"} for e in result.evidence],
        "decomposition": result.decomposition,
        "memory_entries": list(result.memory_entries),
        # how the answer was made: the comparison computed in code, the answer-span step, the calls' stages
        "stages": list(result.stages),
        "rounds": cost.rounds,
        # every reading the loop made: (requirement, window, sentence named, value, log LR, confirmed)
        "readings": [
            {k: r.get(k) for k in ("fact", "window", "sentence", "value", "score", "log_lr", "confirmed")}
            for t in result.trace
            for r in t.observation.get("readings", [])
        ],
        "max_oracle_calls": cost.max_oracle_calls,
        "agent_seconds": cost.seconds,
        "model": result.model,
        "notes": list(result.notes),
    }


def prediction_from_result(result: Any, folder: str | Path, system: str = "lens") -> Prediction:
    """Map a ``lens.AskResult`` to a :class:`Prediction` (titles read from the snapshot files)."""
    folder = Path(folder)
    titles: dict[str, str] = {}
    retrieved: dict[str, RetrievedDoc] = {}
    evidence: list[Passage] = []
    support: list[tuple[str, int]] | None = []
    for e in result.evidence:
        unit = _is_unit(e)
        # a document is a file, a record inside a container (a fullwiki shard) or a unit of a document-format file
        # (a PDF page): keyed by its document id
        if e.doc_id not in titles:
            doc = read_snapshot_doc(folder, e.path) if e.doc_id == e.path else None
            titles[e.doc_id] = doc.title if doc is not None else file_title(e.title, e.path) if unit else e.title
        title = titles[e.doc_id]
        location = dict(e.location) if unit else None
        retrieved.setdefault(e.doc_id, RetrievedDoc(e.doc_id, title, location))
        if unit:
            support = None  # a unit's sentences are not HotpotQA sentences: supporting facts are not evaluated
            evidence.append(Passage(path=e.path, title=title, text=e.text, location=location))
            continue
        # Line ranges of a whole file map to sent_ids; a record inside a bench-written .bz2 shard (official layout:
        # its "text" a list of sentences, which the reader keeps one per sentence) is cited by sentence index,
        # which is the sent_id.
        # A region a reading pinned to one sentence supports with that sentence alone.
        if e.doc_id == e.path:
            sids = list(sentences_of_lines(*(e.sentence_lines or (e.line_start, e.line_end))))
        else:
            sids = [e.sentence] if e.sentence is not None else list(range(e.first_sentence, e.last_sentence + 1))
        evidence.append(
            Passage(
                path=e.path,
                title=title,
                text=e.text,
                line_start=e.line_start,
                line_end=e.line_end,
                first_sentence=sids[0] if sids else None,
                last_sentence=sids[-1] if sids else None,
            )
        )
        if support is not None:
            support.extend((title, s) for s in sids if (title, s) not in support)
    cost = result.cost
    return Prediction(
        system=system,
        answer=result.answer or "",
        retrieved=list(retrieved.values()),
        evidence=evidence,
        supporting_facts=support,
        prompt_tokens=int(cost.prompt_tokens),
        completion_tokens=int(cost.completion_tokens),
        oracle_calls=int(cost.oracle_calls),
        cache_hits=int(cost.cache_hits),
        details=lens_details(result),
    )


def _is_unit(e: Any) -> bool:
    """A unit of a document-format file: its location is a place in the file other than a line."""
    return bool(e.location) and "line" not in e.location and e.doc_id != e.path


class LensSystem(System):
    name = "lens"
    index_free = True

    def __init__(self, folder: str | Path, config: Any, client: Any) -> None:
        super().__init__(
            question_timeout_s=config.budget.question_timeout_s, max_tokens=config.budget.max_tokens_per_query
        )
        self.folder = Path(folder)
        self.config = config
        self.agent = Agent(config, client=client, memory=None)

    def params(self) -> dict[str, Any]:
        # The agent's settings are the shared configuration (its hash binds every row); nothing else varies.
        return {"agent": "lens.Agent", "memory": None}

    def _answer(self, question: str, budget: QuestionBudget) -> Prediction:
        try:
            result = self.agent.ask(question, self.folder, record=False)
        except RunLevelError:
            raise
        except LensError as exc:
            # The agent raised before returning its cost: the calls it made are not known here.
            return Prediction(
                system=self.name,
                answer="",
                error=error_text(exc),
                details={"cost_known": False},
                endpoint_failure=is_endpoint_failure(exc),
            )
        pred = prediction_from_result(result, self.folder, self.name)
        if result.cost.endpoint_errors:  # a best-effort answer the endpoint degraded: not a result
            pred.endpoint_failure = True
            pred.error = pred.error or "endpoint: " + "; ".join(n for n in result.notes if "endpoint" in n)
        return pred
