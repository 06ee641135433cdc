"""What every benchmark system returns for one question: a :class:`Prediction`.

A prediction holds what the system *did* (answer, documents it retrieved, evidence passages it read, cost, error);
it never sees the gold answer. Scores that need the gold (EM/F1, Ev.Rec, Ground, supporting facts, failure class)
are computed by the runner from the prediction and the question (``harness.bench.runner.score_prediction``);
:meth:`Prediction.grounded` applies ``harness.bench.metrics.is_grounded`` to the prediction's evidence.

Paths are relative to the corpus folder the system read. Line numbers are 1-based file lines; sentence ids are
HotpotQA sent_ids derived from lines through the snapshot layout (``harness.bench.snapshots.sentences_of_lines``),
``None`` where a passage is not a line range of a snapshot file. A document that is a unit of a document-format file
(``<file>#u<k>``: a PDF page) carries its ``location`` in the file (``{"page": 3}``), as LENS cites it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from harness.bench.metrics import is_grounded

__all__ = ["RetrievedDoc", "Passage", "Prediction"]


@dataclass(frozen=True)
class RetrievedDoc:
    """One document a system retrieved (for RAG: placed in the answer prompt; for ReAct: read; for LENS: cited)."""

    path: str
    title: str
    location: dict | None = None  # a unit's place in its file ({"page": 3}); None for a whole file or record

    def to_json(self) -> dict[str, Any]:
        out = {"path": self.path, "title": self.title}
        if self.location is not None:
            out["location"] = self.location
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "RetrievedDoc":
        return cls(d["path"], d["title"], d.get("location"))


@dataclass(frozen=True)
class Passage:
    """One evidence passage: text the system read from one document, and where it sits in that document."""

    path: str
    title: str
    text: str
    line_start: int | None = None
    line_end: int | None = None
    first_sentence: int | None = None
    last_sentence: int | None = None
    location: dict | None = None  # where in a document-format file ({"page": 3}); None for text

    def to_json(self) -> dict[str, Any]:
        out = {
            "path": self.path,
            "title": self.title,
            "text": self.text,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "first_sentence": self.first_sentence,
            "last_sentence": self.last_sentence,
        }
        if self.location is not None:
            out["location"] = self.location
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Passage":
        return cls(
            d["path"],
            d["title"],
            d["text"],
            d.get("line_start"),
            d.get("line_end"),
            d.get("first_sentence"),
            d.get("last_sentence"),
            d.get("location"),
        )


@dataclass
class Prediction:
    """One system's answer to one question, with its retrieval trace and cost.

    ``supporting_facts`` is a list of (title, sent_id) when the system gives sentence-level evidence (LENS), else
    ``None`` (supporting-fact metrics are then not evaluated for it). ``error`` is ``"<Type>: <message>"`` when the
    system failed on this question; the answer may then be empty or best effort. ``details`` holds
    system-specific facts (ReAct steps, LENS stop reason, retrieval lists, ...), JSON-serialisable.
    """

    system: str
    answer: str
    retrieved: list[RetrievedDoc] = field(default_factory=list)
    evidence: list[Passage] = field(default_factory=list)
    supporting_facts: list[tuple[str, int]] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    oracle_calls: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # some call failed at the endpoint (auth, model, rate limit, 5xx, timeouts): not a result of the question,
    # so the runner logs the attempt and retries the question on resume instead of writing a row
    endpoint_failure: bool = False

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def retrieved_titles(self) -> list[str]:
        return [d.title for d in self.retrieved]

    def grounded(self, gold_titles: Iterable[str]) -> bool:
        """Ground as ``harness.bench.metrics.is_grounded`` defines it, over this prediction's evidence passages."""
        return is_grounded(self.answer, [(p.title, p.text) for p in self.evidence], gold_titles)

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "answer": self.answer,
            "retrieved": [d.to_json() for d in self.retrieved],
            "evidence": [p.to_json() for p in self.evidence],
            "supporting_facts": None
            if self.supporting_facts is None
            else [[t, int(s)] for t, s in self.supporting_facts],
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "tokens": self.tokens,
            "oracle_calls": self.oracle_calls,
            "cache_hits": self.cache_hits,
            "seconds": round(self.seconds, 4),
            "error": self.error,
            "details": self.details,
            "endpoint_failure": self.endpoint_failure,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Prediction":
        sp = d.get("supporting_facts")
        return cls(
            system=d["system"],
            answer=d["answer"],
            retrieved=[RetrievedDoc.from_json(x) for x in d.get("retrieved", [])],
            evidence=[Passage.from_json(x) for x in d.get("evidence", [])],
            supporting_facts=None if sp is None else [(t, int(s)) for t, s in sp],
            prompt_tokens=int(d.get("prompt_tokens", 0)),
            completion_tokens=int(d.get("completion_tokens", 0)),
            oracle_calls=int(d.get("oracle_calls", 0)),
            cache_hits=int(d.get("cache_hits", 0)),
            seconds=float(d.get("seconds", 0.0)),
            error=d.get("error"),
            details=dict(d.get("details", {})),
            endpoint_failure=bool(d.get("endpoint_failure", False)),
        )
