"""The result of one question: answer, evidence with source traces, per-requirement status, trace and cost."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["Cost", "QuestionCost", "Evidence", "place", "RequirementStatus", "RoundTrace", "AskResult", "STATUS_WORDS"]

# what each evidence status means, in the words `lens ask` prints
STATUS_WORDS = {
    "confirmed": "read and confirmed",
    "found": "read, not settled",
    "candidate": "from the ranking, not read",
}


@dataclass(frozen=True)
class Cost:
    """What one question (or one run) spent. Cache hits count as calls with zero tokens."""

    oracle_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    llm_seconds: float = 0.0
    failed_calls: int = 0  # requests sent that got no usable response (timeouts, 4xx, 5xx, 429), retried or not
    retries: int = 0  # requests re-sent after a failed attempt (not oracle calls, but paid for)
    endpoint_errors: int = 0  # calls given up on because the endpoint failed (after their retries)
    cached_prompt_tokens: int = 0  # prompt tokens the endpoint reused from its prefix cache (part of prompt_tokens)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict:
        d = asdict(self)
        d["tokens"] = self.tokens
        d["llm_seconds"] = round(self.llm_seconds, 3)
        return d


@dataclass(frozen=True)
class QuestionCost(Cost):
    """What one question spent (:class:`Cost`) with its own wall time, the loop rounds it ran, its bound on oracle
    calls (c0 + c1·L for those rounds) and the budget it ran under."""

    seconds: float = 0.0
    rounds: int = 0
    max_oracle_calls: int = 0
    budget: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(Cost)}
        d["tokens"] = self.tokens
        d["llm_seconds"] = round(self.llm_seconds, 3)
        d.update(seconds=self.seconds, rounds=self.rounds, max_oracle_calls=self.max_oracle_calls, budget=self.budget)
        return d


def place(location: dict) -> str:
    """A unit's place as a citation writes it: ``p.3``, ``slide 2``, ``Lighthouses!4``, ``table 1 row 3``, ``¶12``,
    ``message 3``, ``cell 5``, ``section 2``; ``line 7`` for a line."""
    if "sheet" in location:
        return f"{location['sheet']}!{location.get('row', '')}".rstrip("!")
    if "table" in location:
        return f"table {location['table']} row {location.get('row', '')}".rstrip()
    for key, shown in (("page", "p.{}"), ("slide", "slide {}"), ("paragraph", "¶{}"), ("message", "message {}")):
        if key in location:
            return shown.format(location[key])
    for key in ("cell", "section", "line"):
        if key in location:
            return f"{key} {location[key]}"
    return ", ".join(f"{k} {v}" for k, v in location.items())


@dataclass(frozen=True)
class Evidence:
    """One consolidated evidence region: a sentence range of one document, with the hash of what was read."""

    id: str  # "E1"
    path: str  # relative to the asked folder
    doc_id: str  # path, plus "#L<line>" inside a container
    title: str
    first_sentence: int
    last_sentence: int
    line_start: int
    line_end: int
    text: str
    sha256: str  # of the file content (or container line) read for this answer
    requirements: tuple[str, ...]  # ids of the requirements it supports
    # "confirmed" (a reading named a sentence here and the requirement certified) | "found" (named, not certified)
    # | "candidate" (from the prior's ranking, not read)
    status: str
    sentence: int | None = None  # the sentence a reading named (document sentence index)
    sentence_text: str | None = None  # its text as read
    sentence_lines: tuple[int, int] | None = None  # its line range
    sentence_sha256: str | None = None  # sha256 of its text
    # where the cited sentence (else the region's first) stands in its file: {"line": N} for text and records,
    # {"page": N}, {"slide": N}, {"sheet": S, "row": N}, {"paragraph": N}, {"table": T, "row": N},
    # {"message": N}, {"cell": N} or {"section": N} for a unit of a document format (lens.reader.formats)
    location: dict | None = None

    @property
    def citation(self) -> str:
        """Where the evidence is, as a reader finds it: ``path:line`` (or a line range) for text, else the place
        in the document (``report.pdf p.3``, ``lights.xlsx Lighthouses!4``, ``deck.pptx slide 2``)."""
        if self.location and "line" not in self.location:
            return f"{self.path} {place(self.location)}"
        start, end = self.sentence_lines or (self.line_start, self.line_end)
        return f"{self.path}:{start}" if start == end else f"{self.path}:{start}-{end}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["requirements"] = list(self.requirements)
        d["sentence_lines"] = list(self.sentence_lines) if self.sentence_lines else None
        d["citation"] = self.citation
        return d


@dataclass(frozen=True)
class RequirementStatus:
    id: str
    text: str
    status: str  # "certified" | "unresolved"
    value: str | None
    glr: float
    evidence: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"] = list(self.evidence)
        return d


@dataclass(frozen=True)
class RoundTrace:
    """One propose–observe–update round as it happened."""

    round: int
    proposal: list[dict]  # windows proposed: key, path, sentence range, tokens, expected value
    observation: dict  # findings (verified), rejected claims, mentions, error if the call failed
    beliefs: dict[str, dict]  # requirement id -> belief summary
    glr: dict[str, float]
    threshold: float
    stop: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float (nested in dicts, lists, tuples) replaced by None: strict JSON
    has no words for them, and a parser that follows RFC 8259 refuses ``NaN`` and ``Infinity``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_finite(v) for v in value)
    return value


_BRIEF = (
    "answer",
    "best_effort",
    "answer_verified",
    "stop_reason",
    "evidence",
    "requirements",
    "cost",
    "notes",
    "model",
    "config_hash",
)


@dataclass
class AskResult:
    question: str
    answer: str
    best_effort: bool
    intent: str
    requirements: list[RequirementStatus]
    evidence: list[Evidence]
    trace: list[RoundTrace]
    cost: QuestionCost
    corpus: dict[str, Any]
    config_hash: str
    model: str
    stop_reason: str
    notes: list[str] = field(default_factory=list)
    decomposition: dict[str, Any] = field(default_factory=dict)
    stages: list[dict] = field(default_factory=list)  # non-loop oracle calls: decomposition, synthesis, ...
    memory_entries: list[dict] = field(default_factory=list)  # what this answer confirms for warm reuse
    # whether the answer is a span of the cited evidence (computed and yes/no answers count as verified);
    # None where no answer was made (``Agent.explore``)
    answer_verified: bool | None = None

    def to_dict(self, *, trace: bool = True) -> dict[str, Any]:
        """The result as JSON-ready data: strict JSON (a non-finite number, from a faulty endpoint or a division
        by nothing, is null)."""
        out = {
            "question": self.question,
            "answer": self.answer,
            "best_effort": self.best_effort,
            "answer_verified": self.answer_verified,
            "intent": self.intent,
            "stop_reason": self.stop_reason,
            "requirements": [r.to_dict() for r in self.requirements],
            "evidence": [e.to_dict() for e in self.evidence],
            "cost": self.cost.to_dict(),
            "corpus": self.corpus,
            "config_hash": self.config_hash,
            "model": self.model,
            "notes": self.notes,
            "decomposition": self.decomposition,
            "stages": self.stages,
            "memory_entries": self.memory_entries,
            "trace": [t.to_dict() for t in self.trace] if trace else [],
        }
        return _finite(out)

    def brief(self) -> dict[str, Any]:
        """The result as a front end shows it (the MCP ``ask`` tool, the web page): answer, flags, stop reason,
        evidence, requirements, cost, notes, model and configuration hash — no trace, stages or memory entries."""
        full = self.to_dict(trace=False)
        return {k: full[k] for k in _BRIEF}

    def to_json(self, *, trace: bool = True, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(trace=trace), ensure_ascii=False, indent=indent, allow_nan=False)

    @property
    def cited_paths(self) -> list[str]:
        return list(dict.fromkeys(e.path for e in self.evidence))
