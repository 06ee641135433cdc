"""Answer synthesis over the consolidated evidence E*.

- Comparison and computation intents: the atomic values were extracted and verified during the loop; when the
  question's comparison is one we compute (dates, numbers, sameness) and every value parses, the answer is
  computed in code. Otherwise the model answers from the evidence with the confirmed values listed.
- Lookups and bridges: one synthesis call over the evidence.
- The synthesis reply names requirements that no passage states ("missing"), which drives self-correction.
- Answer shortening optionally shortens a long answer to the span a reader expects.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field, field_validator

from lens._result import Evidence
from lens.llm._prompts import fence_passage, render
from lens.question._requirements import Decomposition, Requirement
from lens.question._values import compare, comparison_of, is_yes_no_question, names_alternatives
from lens.reader._documents import source_label

__all__ = [
    "SynthesisReply",
    "CoverageReply",
    "ShortenReply",
    "code_answer",
    "synthesis_messages",
    "coverage_messages",
    "shorten_messages",
    "needs_shortening",
    "clean_answer",
    "is_open_question",
    "answer_text",
]


def _str_list(v: Any) -> Any:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    return [str(x) for x in v if isinstance(x, (str, int))] if isinstance(v, list) else []


def answer_text(v: Any) -> Any:
    """An answer field of a JSON reply as text: small models write ``true``/``false`` for yes/no, bare numbers and
    lists of names; anything else (a string, or something invalid for the schema to reject) passes through."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, list):
        return ", ".join(str(x) for x in v)
    return v


class SynthesisReply(BaseModel):
    answer: str
    passages: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)

    @field_validator("answer", mode="before")
    @classmethod
    def _answer(cls, v: Any) -> Any:
        return answer_text(v)

    @field_validator("passages", "missing", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        return _str_list(v)


class CoverageReply(BaseModel):
    complete: bool = False
    missing: list[str] = Field(default_factory=list)
    reason: str = ""

    @field_validator("missing", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        return _str_list(v)


class ShortenReply(BaseModel):
    answer: str

    @field_validator("answer", mode="before")
    @classmethod
    def _answer(cls, v: Any) -> Any:
        return answer_text(v)


# a question that asks for a name, a number, a place …: a wh-word first (after a preposition: "In which year …"),
# or an instruction to name or list something
_OPEN_QUESTION = re.compile(
    r"^\W*(?:(?:in|on|at|from|for|during|by|to|of|with|after|before|since|under|as|between)\s+)?"
    r"(?:what|which|who|whom|whose|when|where|why|how)\b|^\W*(?:name|list|give|identify)\b",
    re.I,
)


def is_open_question(question: str) -> bool:
    """Whether the question asks for something other than yes or no ("Which magazine …", "Name five actors …"):
    a bare yes/no can never answer it."""
    return _OPEN_QUESTION.match(question) is not None


# What small models copy back from a format description instead of answering (the synthesis prompt's own
# example says "the shortest answer"): no answer. Shared with the harness's baselines.
PLACEHOLDER_ANSWERS = frozenset(
    {
        "...",
        "…",
        "answer",
        "the answer",
        "your answer",
        "short answer",
        "the short answer",
        "a short answer",
        "final answer",
        "the final answer",
        "the shortest answer",
        "best short answer",
        "<answer>",
        "<short answer>",
    }
)


def clean_answer(answer: str, question: str) -> str:
    a = answer.strip().strip('"').strip()
    if re.fullmatch(r"\(?[RPE]\d+\)?|none|null|unknown|n/?a", a, re.I) or a.casefold() in PLACEHOLDER_ANSWERS:
        return ""  # a fact or passage id, a refusal or a copied format placeholder is no answer
    a = re.sub(r"\s+", " ", a)
    if a.endswith(".") and not re.search(r"\b[A-Z]\.$", a):
        a = a[:-1]
    if is_yes_no_question(question):
        low = a.lower()
        if re.match(r"yes\b", low):
            return "yes"
        if re.match(r"no\b", low):  # "No, it is not" is no; "Norway" is not
            return "no"
    elif a.lower() in {"yes", "no", "true", "false"} and is_open_question(question):
        return ""  # a yes/no (a JSON true/false) to "which …?" or "name …": no answer, never a wrong one
    return a


def _compared(decomposition: Decomposition) -> list[tuple[Requirement, list[Requirement]]]:
    """The compared chains: for each fact no other fact depends on, (the entity fact its dependency chain starts
    from, the chain from that leaf back to it). A flat comparison is one-fact chains; a bridge comparison ("who
    was born first, the director of X or the director of Y?") compares the leaves' values and names the chains'
    entities. Chains that start from no named entity are not compared; nor is a fact combining two others."""
    # a fact that refers to two or more others ("which is earlier, #R1 or #R2?") combines them: the comparison
    # done here replaces it, so it neither is compared nor makes the facts it refers to inner links of a chain
    facts = [r for r in decomposition.requirements if len(set(re.findall(r"#R(\d+)", r.text))) < 2]
    by_id = {r.id: r for r in facts}
    depended = {r.depends_on for r in facts if r.depends_on}
    chains = []
    for leaf in facts:
        if leaf.id in depended:
            continue
        chain = [leaf]
        while chain[-1].depends_on in by_id and len(chain) <= len(by_id):
            chain.append(by_id[chain[-1].depends_on])  # type: ignore[index]
        if chain[-1].entity:
            chains.append((chain[-1], chain))
    return chains


def code_answer(question: str, decomposition: Decomposition, values: dict[str, str]) -> tuple[str, str] | None:
    """(answer, explanation) computed from verified values, or None when the comparison isn't computable (the
    comparison made is ``comparison_of(question)``).

    Comparison and computation intents are computed; so is a bridge-typed decomposition whose question is worded
    as a comparison between named alternatives ("… , X or Y?", "both", "same"). The compared values are the
    leaves of the dependency chains; the answer names a chain by its entity as the question writes it, or — for a
    "who" question over a chain of two or more facts — by the value of the fact the leaf depends on (the person
    the question asks for)."""
    comparison = comparison_of(question)
    if comparison is None:
        return None
    if decomposition.intent not in ("comparison", "computation") and not names_alternatives(question):
        return None
    chains = _compared(decomposition)
    roots = {root.entity.lower() for root, _ in chains if root.entity}
    if len(chains) < 2 or len(roots) < len(chains) or any(not values.get(chain[0].id) for _, chain in chains):
        return None
    vals = [values[chain[0].id] for _, chain in chains]
    if comparison.kind == "same" and any(len(v.split()) > 3 for v in vals):
        return None  # long free-text values don't compare reliably by string
    who = re.match(r"^\s*(who|whom)\b", question, re.I) is not None
    entities = []
    for root, chain in chains:
        if who and len(chain) > 1 and values.get(chain[1].id):
            entities.append(values[chain[1].id])  # the person found on the way, not the title it started from
            continue
        m = re.search(re.escape(root.entity or ""), question, re.I)  # the entity as the question writes it
        entities.append(m.group(0) if m else (root.entity or ""))
    answer = compare(comparison, entities, vals)
    if answer is None:
        return None
    why = f"{comparison.kind} {comparison.pick} over " + ", ".join(f"{e}={v}" for e, v in zip(entities, vals))
    return answer, why


def _passages(evidence: list[Evidence]) -> tuple[str, dict[str, str]]:
    blocks, labels = [], {}
    for n, e in enumerate(evidence, 1):
        pid = f"P{n}"
        labels[pid] = e.id
        blocks.append(fence_passage(pid, source_label(e.path, e.title), [(0, e.text)]))
    return "\n\n".join(blocks), labels


def _facts(decomposition: Decomposition, values: dict[str, str]) -> str:
    return "\n".join(f"{r.id}: {r.resolved_text(values)}" for r in decomposition.requirements)


def _known(decomposition: Decomposition, values: dict[str, str], evidence: list[Evidence]) -> str:
    """The facts readings confirmed, each with its value and the sentence it was read in (read first)."""
    lines = []
    for r in decomposition.requirements:
        pid, said = next(
            (
                (f"P{n}", e.sentence_text)
                for n, e in enumerate(evidence, 1)
                if r.id in e.requirements and e.sentence_text
            ),
            (None, None),
        )
        value = values.get(r.id, "")
        if said:
            lines.append(f'{r.id}: {value + " — " if value else ""}{pid} says: "{said}"')
        elif value:
            lines.append(f"{r.id}: {value}")
    return "\n".join(lines) or "(none yet)"


def synthesis_messages(
    question: str, decomposition: Decomposition, values: dict[str, str], evidence: list[Evidence]
) -> tuple[list[dict[str, str]], dict[str, str]]:
    passages, labels = _passages(evidence)
    if decomposition.intent in ("comparison", "computation"):
        guidance = "- First find each needed fact's value in the passages, then compare or compute from those values."
    else:
        guidance = "- Follow the facts in order: the answer to an earlier fact tells you what a later fact is about."
    if is_yes_no_question(question):
        guidance += '\n- This is a yes/no question: answer exactly "yes" or "no".'
    msgs = render(
        "synthesis",
        question=question,
        facts=_facts(decomposition, values),
        known=_known(decomposition, values, evidence),
        passages=passages or "(no passages)",
        guidance=guidance,
    )
    return msgs, labels


def coverage_messages(
    question: str, decomposition: Decomposition, values: dict[str, str], evidence: list[Evidence]
) -> list[dict[str, str]]:
    passages, _ = _passages(evidence)
    return render(
        "coverage",
        question=question,
        facts=_facts(decomposition, values),
        known=_known(decomposition, values, evidence),
        passages=passages or "(no passages)",
    )


def needs_shortening(question: str, answer: str) -> bool:
    """Long free-text answers are shortened; yes/no and short spans are left alone."""
    return bool(answer) and not is_yes_no_question(question) and len(answer.split()) > 5


def shorten_messages(question: str, answer: str, evidence: list[Evidence]) -> list[dict[str, str]]:
    passages, _ = _passages(evidence[:2])
    return render("shorten", question=question, answer=answer, passages=passages or "(no passages)")
