"""A reading: the oracle's judgement of one window for one requirement, with a graded score and the sentence.

The window's sentences are numbered 1..n; the oracle names the sentence that states the fact (0: none) and copies
the fact's value from it (``prompts/reading.md``). The prompt holds the instructions, the question and the fact
first and the passage last, so the windows read for one fact share a prompt prefix whose KV cache llama.cpp
reuses. Where the endpoint returns token log-probabilities, the *score* is the probability the number token puts
on some sentence rather than on 0 (renormalised over the number tokens among its top alternatives, in log space);
without them — or where any alternative's log-probability is not finite or above 0 (a faulty endpoint) — the
sampled number alone is the reading. Code checks the reply: the sentence must exist, and the document must
name the requirement's subject ("height of Skerrow Light" is not read in a document that never mentions Skerrow
Light): otherwise the reading found nothing (its score is kept); a value must occur in the window's text as whole
words (else it is dropped, the sentence kept) and have the requirement's answer type.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from lens._terms import STOPWORDS, find_span, normalise, tokens
from lens.llm._prompts import fence_passage, render
from lens.question._values import fits_type
from lens.reader._documents import Document, source_label
from lens.reader._windows import Window

__all__ = [
    "Judgement",
    "ReadingCall",
    "reading_messages",
    "read_window",
    "mentions",
    "READING_TOKENS",
    "TOP_LOGPROBS",
]

READING_TOKENS = 24  # "3 | Harlan Bridge" with room for a long name; a "0" stops at once
TOP_LOGPROBS = 10
LOGPROB_TOLERANCE = 1e-4  # a log-probability this far above 0 is rounding (a probability of 1), beyond it a fault
SCORE_CLIP = 6.0  # |logit(score)| cap: beyond it the top alternatives say nothing more

# values that say "not stated" rather than state a value
NOT_STATED = frozenset(
    {"null", "none", "nil", "unknown", "n a", "na", "not found", "not stated", "not mentioned", "not given"}
)

# (messages, max_tokens) -> the LLM response (``.text``, ``.logprobs``, ``.top_logprobs``), or None for no reply
ReadingCall = Callable[[list[dict[str, str]], int], Any]


@dataclass(frozen=True)
class Judgement:
    """What one reading said about a (requirement, window): ``found`` the oracle named a sentence; ``score``
    P(some sentence states the fact) from the token log-probabilities (None without them); ``sentence`` the
    document sentence index named (None for 0); ``value`` the verified value ('' when none or unverified)."""

    found: bool
    score: float | None
    sentence: int | None
    value: str = ""
    quote: str = ""  # the text of the sentence named
    reply: str = ""
    top: tuple[tuple[str, float], ...] = ()  # the alternatives at the number token (the trace records them)
    sentence_mass: dict[int, float] = field(default_factory=dict)  # document sentence index -> probability

    @property
    def score_logit(self) -> float | None:
        """logit(score), clipped to ±``SCORE_CLIP``; None without log-probabilities."""
        if self.score is None:
            return None
        p = min(max(self.score, 1e-12), 1 - 1e-12)
        return max(-SCORE_CLIP, min(SCORE_CLIP, math.log(p / (1 - p))))


def reading_messages(question: str, fact: str, window: Window, doc: Document) -> list[dict[str, str]]:
    """The reading prompt: instructions, question and fact first (the shared prefix), the numbered window last."""
    numbered = [(n, text) for n, (_, text) in enumerate(window.sentences(doc), 1)]
    passage = fence_passage("P1", source_label(window.path, window.title), numbered)
    return render("reading", question=question, fact=fact, passage=passage)


_REPLY = re.compile(r"^[\s\[\"']*(\d+)[\]\s\".,:]*(?:\|\s*(.*))?$", re.S)


def _logsumexp(values: Sequence[float]) -> float:
    """log(sum(exp(v))) without overflow or underflow; -inf for no values."""
    if not values:
        return -math.inf
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def _number_logmass(alternatives: Sequence[tuple[str, float]]) -> dict[int, float]:
    """Log-probability of each number among one token's top alternatives (variants of one number summed)."""
    out: dict[int, list[float]] = {}
    for tok, lp in alternatives:
        t = tok.strip().strip("[]\"'")
        if t.isdigit():
            out.setdefault(int(t), []).append(lp)
    return {n: _logsumexp(lps) for n, lps in out.items()}


def _usable(lp: float) -> bool:
    """A log-probability a model could give: finite and at most 0 (up to rounding)."""
    return math.isfinite(lp) and lp <= LOGPROB_TOLERANCE


def _decision(resp: Any) -> tuple[dict[int, float], tuple[tuple[str, float], ...]] | None:
    """The log-probability of each number at the first generated token holding a digit, with its alternatives
    (each at most 0); None without alternatives, or with one that is not a log-probability (NaN, ±inf, > 0)."""
    tokens, tops = getattr(resp, "logprobs", None), getattr(resp, "top_logprobs", None)
    if not tokens or not tops:
        return None
    for (tok, _), alts in zip(tokens, tops):
        if any(ch.isdigit() for ch in tok):
            if not all(_usable(lp) for _, lp in alts):
                return None  # a faulty endpoint: read as one that sends no log-probabilities
            alts = tuple((t, min(lp, 0.0)) for t, lp in alts)
            mass = _number_logmass(alts)
            return (mass, alts) if mass else None
    return None


def mentions(doc: Document, name: str) -> bool:
    """Whether a document (title or text) names ``name``: all its content words appear, or a near-exact fuzzy
    match of the whole name does."""
    words = [w for w in tokens(name) if w not in STOPWORDS] or tokens(name)
    if not words:
        return True
    have = set(tokens(doc.title)) | set(tokens(doc.text))
    return (
        all(w in have for w in words) or find_span(normalise(doc.title + " " + doc.text), normalise(name)) is not None
    )


def read_window(
    question: str,
    fact: str,
    window: Window,
    doc: Document,
    call: ReadingCall,
    *,
    kind: str = "any",
    subject: str | None = None,
) -> Judgement | None:
    """One reading of ``window`` for ``fact`` (``kind``: its answer type; ``subject``: what it is about); None
    when the call gave no usable reply."""
    resp = call(reading_messages(question, fact, window, doc), READING_TOKENS)
    if resp is None:
        return None
    m = _REPLY.match(resp.text.strip())
    if m is None:
        return None
    sents = window.sentences(doc)
    number, raw_value = int(m.group(1)), (m.group(2) or "").strip().strip('"').strip()
    score: float | None = None
    mass: dict[int, float] = {}
    top: tuple[tuple[str, float], ...] = ()
    decided = _decision(resp)
    if decided is not None:
        numbers, top = decided
        named = {n: lp for n, lp in numbers.items() if 1 <= n <= len(sents)}
        # "0" missing from the top alternatives: less likely than the least likely one listed
        none = numbers.get(0, math.log(0.5) + min(lp for _, lp in top))
        # in log space: every alternative far below exp()'s range (-1e4) still gives a ratio
        some = _logsumexp(list(named.values()))
        total = _logsumexp([none, some])
        score = math.exp(some - total)
        mass = {sents[n - 1][0]: math.exp(lp - total) for n, lp in named.items()}
    if not 1 <= number <= len(sents) or (subject and not mentions(doc, subject)):
        return Judgement(False, score, None, reply=resp.text[:200], top=top, sentence_mass=mass)
    index, quote = sents[number - 1]
    value = "" if normalise(raw_value) in NOT_STATED else raw_value
    nv = normalise(value)
    if nv and nv not in {"yes", "no", "true", "false"} and find_span(normalise(window.text(doc)), nv) is None:
        value = ""  # not in the text: keep the sentence, drop the value
    if value and not fits_type(value, kind):  # type: ignore[arg-type]
        value = ""  # "Which shipyard...?" answered with a year
    return Judgement(True, score, index, value[:200], quote, resp.text[:200], top, mass)
