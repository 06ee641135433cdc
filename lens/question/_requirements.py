"""Requirements: the question's intent and its atomic facts f_1..f_K, each with search cues.

One LLM call (prompts/decomposition.md) proposes them; code then checks the proposal against the question:
cues must come from the question (names the model invents are dropped), at most four facts, ids unique,
dependencies pointing backwards. Bridge facts name the answer they depend on as ``#R1``; their cues are filled
in when that answer is observed. If the call fails or the budget forbids it, a decomposition is made in code
from the question's wording (named spans, comparison markers), so the loop can always run.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Callable, Literal, Sequence

from pydantic import BaseModel, Field, field_validator

from lens._terms import capitalised_spans, content_terms, title_key, tokens
from lens.llm._prompts import render
from lens.question._values import comparison_of, names_alternatives

__all__ = [
    "Intent",
    "INTENTS",
    "Requirement",
    "Decomposition",
    "DecompositionReply",
    "SubQuestionReply",
    "from_reply",
    "from_subquestions",
    "heuristic_decomposition",
    "decompose",
    "DECOMPOSITION_TOKENS",
    "decomposition_tokens",
    "JsonCall",
    "prompt_for",
    "question_intent",
]


class Intent(str, Enum):
    """What a question asks of its facts; it sets the stopping threshold's factor γ (``loop.gamma``) and how the
    answer is made (comparisons and computations from the extracted values, in code). A ``str``: it equals, and
    serialises as, its name."""

    LOOKUP = "lookup"
    BRIDGE = "bridge"
    COMPARISON = "comparison"
    AGGREGATION = "aggregation"
    COMPUTATION = "computation"

    def __str__(self) -> str:
        return self.value


INTENTS: tuple[str, ...] = tuple(i.value for i in Intent)
MAX_REQUIREMENTS = 4
_REF = re.compile(r"#?R(\d+)\b|#(\d+)\b")
_REF_TOKEN = re.compile(r"#R\d+")  # an unresolved reference left in a resolved text


@dataclass
class Requirement:
    """One atomic fact to localise. ``text`` may refer to another fact's answer as ``#R1``."""

    id: str
    text: str
    cues: list[str] = field(default_factory=list)
    depends_on: str | None = None
    entity: str | None = None

    def resolved_text(self, values: dict[str, str], texts: dict[str, str] | None = None) -> str:
        """The fact with ``#R<n>`` references replaced by the observed answers. A reference whose answer is still
        unknown (or was searched for and not found: an empty value) is kept; with ``texts`` (requirement id →
        text) it is glossed, so the fact still reads as a question when the referenced fact is not listed
        beside it: "In what town did #R1 occur? (#R1: the answer to "Where was X seen?")"."""
        glossed: list[str] = []

        def sub(m: re.Match) -> str:
            rid = f"R{m.group(1) or m.group(2)}"
            if values.get(rid):
                return values[rid]
            if texts and texts.get(rid) and rid not in glossed:
                glossed.append(rid)
            return f"#{rid}"

        if "#" not in self.text:
            return self.text
        out = _REF.sub(sub, self.text)
        for rid in glossed:
            out += f' (#{rid}: the answer to "{texts[rid]}")'  # type: ignore[index]
        return out

    def waiting(self, values: dict[str, str]) -> bool:
        """A bridge fact whose source answer is not known yet."""
        return bool(self.depends_on) and self.depends_on not in values

    def all_cues(self, values: dict[str, str], learned: Sequence[str] = ()) -> list[str]:
        """Its cues, the cues the loop ``learned`` for it (names from observations), and the bridge value."""
        out = list(self.cues) + list(learned)
        if self.depends_on and self.depends_on in values:
            out.append(values[self.depends_on])
        return list(dict.fromkeys(c for c in out if c and not c.startswith("#")))

    def prior_cues(self, values: dict[str, str], learned: Sequence[str] = ()) -> list[str]:
        """The cues the prior ranks documents for this requirement with, given the values known so far: its
        cues, plus its text once it is not waiting for a bridge value (an unknown ``#R`` answer is no cue)."""
        cues = self.all_cues(values, learned)
        if not self.waiting(values):
            cues = cues + [_REF_TOKEN.sub(" ", self.resolved_text(values))]
        return cues

    def subject(self, values: dict[str, str]) -> str | None:
        """What the requirement is about: its entity, or the known answer it depends on (a bridge)."""
        if self.depends_on:
            return values.get(self.depends_on) or None
        return self.entity

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Decomposition:
    """The question's intent and its requirements; ``source`` says whether the LLM's split or the code's."""

    intent: Intent
    requirements: list[Requirement]
    source: Literal["llm", "heuristic"]

    def __post_init__(self) -> None:
        self.intent = Intent(self.intent)  # a name given as a string

    def to_dict(self) -> dict[str, Any]:
        return {"intent": self.intent, "source": self.source, "requirements": [r.to_dict() for r in self.requirements]}


class _FactReply(BaseModel):
    id: str | None = None
    text: str = Field(min_length=1)
    search: list[str] = Field(default_factory=list)
    depends_on: str | None = None
    entity: str | None = None

    @field_validator("search", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, str):
            return [v]
        return [str(x) for x in v if isinstance(x, (str, int, float))]

    @field_validator("depends_on", "entity", "id", mode="before")
    @classmethod
    def _stringify(cls, v: Any) -> Any:
        if v is None or v == "" or isinstance(v, str):
            return v or None
        if isinstance(v, list):
            return str(v[0]) if v else None
        return str(v)


class DecompositionReply(BaseModel):
    """Comparison decomposition: one fact per compared entity (prompts/decomposition-comparison.md)."""

    intent: str = "comparison"
    facts: list[_FactReply] = Field(min_length=1)

    @field_validator("intent", mode="before")
    @classmethod
    def _intent(cls, v: Any) -> Any:
        v = str(v or "lookup").strip().lower()
        return v if v in INTENTS else "lookup"


class SubQuestionReply(BaseModel):
    """Lookup/bridge decomposition: ordered sub-questions, later ones citing earlier answers as #1, #2
    (prompts/decomposition.md)."""

    questions: list[str] = Field(min_length=1)

    @field_validator("questions", mode="before")
    @classmethod
    def _strings(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [v]
        if isinstance(v, list):
            return [str(x.get("question", x.get("text", ""))) if isinstance(x, dict) else str(x) for x in v if x]
        return v


def question_intent(question: str) -> str | None:
    """The intent the wording makes certain (comparisons); None when the structure must decide."""
    return _question_intent(question)


def prompt_for(question: str) -> str:
    """Which decomposition template fits the question's intent."""
    return "decomposition-comparison" if _question_intent(question) == "comparison" else "decomposition"


DECOMPOSITION_TOKENS = 200  # the reply's max_tokens for a question of ordinary length (every caller)


def decomposition_tokens(question: str) -> int:
    """The decomposition reply's ``max_tokens`` (agent, calibration and audit alike): ``DECOMPOSITION_TOKENS``,
    or for a long request (a data-product request runs to 1,000+ characters) about twice its own length in
    tokens, since the sub-questions restate it — at 200 such a reply was cut off mid-JSON and the whole request
    fell back to one requirement."""
    return max(DECOMPOSITION_TOKENS, 60 + len(question) // 2)


# How a caller makes one JSON call: (messages, reply schema, max_tokens) -> the parsed reply, or None when the
# call could not be made or failed (the caller's budget and error policy live in this function).
JsonCall = Callable[[list[dict[str, str]], type, int], Any]


def decompose(question: str, call: JsonCall) -> Decomposition:
    """The question's requirements: one decomposition call through ``call`` (its template follows the intent the
    wording shows — comparisons split per entity, the rest into ordered sub-questions whose ``#k`` references
    are bridge dependencies), checked against the question; a decomposition made in code if the call gives
    nothing."""
    template = prompt_for(question)
    schema = DecompositionReply if template == "decomposition-comparison" else SubQuestionReply
    asked = question.strip()
    reply = call(render(template, question=asked), schema, decomposition_tokens(asked))
    if reply is None:
        return heuristic_decomposition(question)
    if isinstance(reply, DecompositionReply):
        return from_reply(question, reply)
    return from_subquestions(question, reply)


def _names_grounded(sub: str, question: str) -> bool:
    """Every name in ``sub`` (beyond its first word) occurs in the question."""
    qwords = set(tokens(question))
    for span in capitalised_spans(sub):
        words = [w for w in tokens(span) if not re.fullmatch(r"r?\d+", w)]
        if words and not all(w in qwords for w in words):
            if sub.strip().startswith(span) and len(span.split()) == 1:
                continue  # "Which", "Who": a capitalised first word is not a name
            return False
    return True


def from_subquestions(question: str, reply: SubQuestionReply) -> Decomposition:
    """Requirements from ordered sub-questions: ``#k`` references become dependencies."""
    # a sub-question naming something the question never names was copied from an example: drop it
    subs = [q.strip() for q in reply.questions if q and q.strip() and _names_grounded(q, question)]
    subs = subs[:MAX_REQUIREMENTS]
    reqs: list[Requirement] = []
    for n, text in enumerate(subs, 1):
        refs = [int(m.group(1) or m.group(2)) for m in _REF.finditer(text)]
        refs = [k for k in refs if 1 <= k < n]
        dep = f"R{max(refs)}" if refs else None
        text = _REF.sub(lambda m: f"#R{m.group(1) or m.group(2)}", text)
        names = _names(text, question)
        cues = names or [t for t in content_terms(text) if t in set(tokens(question))][:4]
        reqs.append(Requirement(id=f"R{n}", text=text, cues=cues, depends_on=dep, entity=names[0] if names else None))
    if not reqs:
        return heuristic_decomposition(question)
    return Decomposition(_intent_of(question, reqs), reqs, "llm")


def _question_intent(question: str) -> str | None:
    """Intent the wording makes certain; overrides the model, which mislabels comparisons."""
    if comparison_of(question) is not None and names_alternatives(question):
        return "comparison"
    return None


def _grounded_cues(cues: list[str], question: str) -> list[str]:
    """Cues whose words all occur in the question (the model must not search for its own guesses)."""
    qwords = set(tokens(question))
    out = []
    for c in cues:
        words = tokens(c)
        if words and all(w in qwords for w in words):
            out.append(c.strip())
    return list(dict.fromkeys(out))


def from_reply(question: str, reply: DecompositionReply) -> Decomposition:
    """Check the model's decomposition against the question and normalise it."""
    facts = reply.facts[:MAX_REQUIREMENTS]
    ids: dict[str, str] = {}
    reqs: list[Requirement] = []
    for n, fact in enumerate(facts, 1):
        rid = f"R{n}"
        if fact.id:
            ids[fact.id.strip().lstrip("#").upper()] = rid
        text = fact.text.strip()
        reqs.append(
            Requirement(
                id=rid,
                text=text,
                cues=_grounded_cues(fact.search, question),
                depends_on=fact.depends_on,
                entity=fact.entity,
            )
        )
    for r in reqs:
        dep = (r.depends_on or "").strip().lstrip("#").upper()
        dep = ids.get(dep, dep if re.fullmatch(r"R\d+", dep) else "")
        r.depends_on = dep if dep and dep < r.id and any(x.id == dep for x in reqs) else None
        # renumbered references in the text ("#R1") follow the new ids
        r.text = _REF.sub(
            lambda m: f"#{ids.get('R' + (m.group(1) or m.group(2)), 'R' + (m.group(1) or m.group(2)))}", r.text
        )
        if r.entity and r.entity.startswith("#"):
            r.entity = None
        if r.entity and not _grounded_cues([r.entity], question):
            r.entity = None
        if r.entity and r.entity not in r.cues:
            r.cues.insert(0, r.entity)
        if not r.cues and not r.depends_on:
            r.cues = _names(r.text, question) or content_terms(r.text)[:4]
    return Decomposition(_intent_of(question, reqs), reqs, "llm")


def _intent_of(question: str, reqs: list[Requirement]) -> Intent:
    """Intent from the wording and the facts' structure; the model's own label is unreliable (small models
    call most multi-fact questions comparisons), so it is not used."""
    worded = _question_intent(question)
    if worded:
        return Intent(worded)
    if any(r.depends_on for r in reqs) or len(reqs) > 1:
        return Intent.BRIDGE
    return Intent.LOOKUP


def _names(text: str, question: str) -> list[str]:
    return _grounded_cues(capitalised_spans(text), question)


def heuristic_decomposition(question: str) -> Decomposition:
    """A decomposition from the wording alone (no LLM): named spans become cues; comparisons split."""
    names = [n for n in capitalised_spans(question) if title_key(n) and len(title_key(n)) > 2]
    names = list(dict.fromkeys(names))
    intent = _question_intent(question)
    if intent == "comparison" and len(names) >= 2:
        # the two names nearest an "or"/"and" are the compared entities
        pair = names[-2:]
        attr = " ".join(content_terms(question)[:6])
        reqs = [Requirement(f"R{i}", f"{attr} — {n}", [n], None, n) for i, n in enumerate(pair, 1)]
        return Decomposition(Intent.COMPARISON, reqs, "heuristic")
    return Decomposition(
        Intent.LOOKUP,
        [Requirement("R1", question.strip(), names[:4] or content_terms(question)[:6])],
        "heuristic",
    )
