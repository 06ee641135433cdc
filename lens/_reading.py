"""A reading: the oracle's judgement of one window for one requirement, with a graded score and the sentence.

The window's sentences are numbered 1..n; the oracle names the sentence that states the fact (0: none) and copies
the fact's value from it (``prompts/reading.md``). The prompt starts with the instructions, the question and the
fact and ends with the passage, so the windows read for one fact share a prompt prefix whose KV cache llama.cpp
reuses. Where the endpoint returns token log-probabilities, the *score* is the probability mass the first number
token puts on some sentence rather than on 0 (renormalised over the number tokens among the top alternatives), and
the distribution over sentence numbers points at the sentence; without them, the sampled number alone is the
reading. Code then checks the reply: the sentence must exist, a value must occur in the window's text as whole
words (else it is dropped, the sentence kept), and must have the requirement's answer type.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from lens._corpus import Document
from lens._observation import NOT_STATED, _span, normalise
from lens._prompts import fence_passage, render
from lens._values import fits_type
from lens._windows import Window

__all__ = ["Judgement", "reading_messages", "read_window", "READING_TOKENS", "TOP_LOGPROBS"]

READING_TOKENS = 24  # "3 | Harlan Bridge" with room for a long name; a "0" stops at once
TOP_LOGPROBS = 10
SCORE_CLIP = 6.0  # |logit(score)| cap: beyond it the top-k alternatives say nothing more

# (messages, max_tokens) -> the LLM response (``.text``, ``.top_logprobs``, ``.logprobs``) or None
ReadingCall = Callable[[list[dict[str, str]], int], Any]


@dataclass(frozen=True)
class Judgement:
    """What one reading said about a (requirement, window): ``found`` the oracle named a sentence; ``score``
    P(some sentence states the fact) from the token log-probabilities (None without them); ``sentence`` the
    document sentence index named (None for 0); ``value`` the verified value ('' when none or not verified)."""

    found: bool
    score: float | None
    sentence: int | None
    value: str = ""
    quote: str = ""  # the text of the sentence named
    reply: str = ""
    top: tuple[tuple[str, float], ...] = ()  # the alternatives at the number token, for the trace
    sentence_mass: dict[int, float] = field(default_factory=dict)  # document sentence index -> probability

    @property
    def score_logit(self) -> float | None:
        if self.score is None:
            return None
        p = min(max(self.score, 1e-12), 1 - 1e-12)
        return max(-SCORE_CLIP, min(SCORE_CLIP, math.log(p / (1 - p))))


def reading_messages(question: str, fact: str, window: Window, doc: Document) -> list[dict[str, str]]:
    """The reading prompt: instructions, question and fact first (the shared prefix), the numbered window last."""
    numbered = [(n, text) for n, (_, text) in enumerate(window.sentences(doc), 1)]
    passage = fence_passage("P1", f"{window.path} — {window.title}", numbered)
    return render("reading", question=question, fact=fact, passage=passage)


_REPLY = re.compile(r"^\W*?(\d+)\W*(?:\|\s*(.*))?$", re.S)


def _number_mass(alternatives: Sequence[tuple[str, float]]) -> dict[int, float]:
    """Probability of each number among a token's top alternatives (variants of one number summed)."""
    out: dict[int, float] = {}
    for tok, lp in alternatives:
        t = tok.strip().strip("[]\"'")
        if t.isdigit():
            out[int(t)] = out.get(int(t), 0.0) + math.exp(lp)
    return out


def _decision(resp: Any) -> tuple[dict[int, float], tuple[tuple[str, float], ...]] | None:
    """The number distribution at the first generated token that holds a digit, or None without alternatives."""
    tokens, tops = getattr(resp, "logprobs", None), getattr(resp, "top_logprobs", None)
    if not tokens or not tops:
        return None
    for (tok, _), alts in zip(tokens, tops):
        if any(ch.isdigit() for ch in tok):
            mass = _number_mass(alts)
            return (mass, tuple(alts)) if mass else None
    return None


def read_window(
    question: str,
    fact: str,
    window: Window,
    doc: Document,
    call: ReadingCall,
    *,
    kind: str = "any",
) -> Judgement | None:
    """One reading of ``window`` for ``fact``; None when the call gave no usable reply."""
    resp = call(reading_messages(question, fact, window, doc), READING_TOKENS)
    if resp is None:
        return None
    sents = window.sentences(doc)
    m = _REPLY.match(resp.text.strip())
    if m is None:
        return None
    number, raw_value = int(m.group(1)), (m.group(2) or "").strip().strip('"').strip()
    decided = _decision(resp)
    score, mass, top = None, {}, ()
    if decided is not None:
        numbers, top = decided
        none = numbers.get(0)
        named = {n: p for n, p in numbers.items() if 1 <= n <= len(sents)}
        if none is None:  # "0" is not among the top alternatives: less likely than the least likely listed
            none = 0.5 * min(math.exp(lp) for _, lp in top)
        total = none + sum(named.values())
        score = sum(named.values()) / total if total > 0 else None
        mass = {sents[n - 1][0]: p / total for n, p in named.items()} if total > 0 else {}
    if not 1 <= number <= len(sents):
        return Judgement(False, score, None, reply=resp.text[:200], top=top, sentence_mass=mass)
    index, quote = sents[number - 1]
    value = "" if normalise(raw_value) in NOT_STATED else raw_value
    nv = normalise(value)
    if nv and nv not in {"yes", "no", "true", "false"} and _span(normalise(window.text(doc)), nv) is None:
        value = ""  # not in the text: keep the sentence, drop the value
    if value and not fits_type(value, kind):  # type: ignore[arg-type]
        value = ""
    return Judgement(True, score, index, value[:200], quote, resp.text[:200], top, mass)


# ------------------------------------------------------------------ the pointwise yes/no protocol (measured)
def yesno_messages(question: str, fact: str, window: Window, doc: Document) -> list[dict[str, str]]:
    passage = fence_passage("P1", f"{window.path} — {window.title}", window.sentences(doc))
    return render("reading-yesno", question=question, fact=fact, passage=passage)


def read_yesno(question: str, fact: str, window: Window, doc: Document, call: ReadingCall) -> Judgement | None:
    resp = call(yesno_messages(question, fact, window, doc), 2)
    if resp is None:
        return None
    said = resp.text.strip().lower()
    found = said.startswith("yes")
    score, top = None, ()
    tokens, tops = getattr(resp, "logprobs", None), getattr(resp, "top_logprobs", None)
    if tokens and tops:
        top = tuple(tops[0])
        yes = sum(math.exp(lp) for t, lp in top if t.strip().lower() == "yes")
        no = sum(math.exp(lp) for t, lp in top if t.strip().lower() == "no")
        if yes + no > 0:
            score = yes / (yes + no)
    return Judgement(found, score, None, reply=resp.text[:50], top=top)
