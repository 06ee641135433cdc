"""The final answer as a span of the cited evidence, in the evidence's own spelling, or marked unverified
(``docs/pipeline.md`` § The answer span).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from rapidfuzz import fuzz

from lens._terms import STOPWORDS, fold
from lens.question._values import is_yes_no_question

__all__ = ["AnswerSpan", "answer_span"]

_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+(?:'[A-Za-z]+)?")
_PERIOD = re.compile(r"\b(years|period|between|span|spanned|during which|from when|how long)\b", re.I)
_RANGE = re.compile(
    r"(?:from\s+|between\s+)?\b(\d{3,4})\s*(?:–|-|—|to|until|and)\s*(\d{2,4})\b",
    re.I,
)


@dataclass(frozen=True)
class AnswerSpan:
    answer: str
    verified: bool  # the answer is a span of the evidence
    how: str  # "exact" | "fuzzy" | "unit" | "range" | "yes/no" | "unverified" | "empty"
    source: int | None = None  # index of the evidence passage it was read in


def _words(text: str) -> list[tuple[str, int, int]]:
    return [(fold(m.group(0)), m.start(), m.end()) for m in _WORD.finditer(text)]


def _extend(span: tuple[int, int], words: list[tuple[str, int, int]], last: int, text: str, question: str):
    """Widen a bare number to the unit the question names, or a year to the range it sits in."""
    start, end = span
    core = text[start:end]
    if re.fullmatch(r"\d{3,4}", core) and _PERIOD.search(question):
        for m in _RANGE.finditer(text):
            if m.start(1) <= start < m.end() or m.start(1) <= end - 1 < m.end():
                return (m.start(1), m.end()), "range"
    # the word right after the number, with only spaces between ("25 laps"; not "1962) is"), and not a function
    # word the question happens to hold ("1874 and", "1931 was")
    if re.fullmatch(r"[\d.,]+", core) and last + 1 < len(words) and not text[end : words[last + 1][1]].strip():
        unit = words[last + 1][0]
        qwords = {fold(w) for w in _WORD.findall(question)}
        if unit not in STOPWORDS and (unit in qwords or unit.rstrip("s") in {w.rstrip("s") for w in qwords}):
            return (start, words[last + 1][2]), "unit"
    return span, ""


def _closed(text: str, start: int, end: int) -> str:
    """The span ``text[start:end]`` with the bracket it opened and the evidence closes right after it: the span's
    words stop at "series" in "Martin (TV series)"."""
    span = text[start:end]
    if span.count("(") > span.count(")") and text[end : end + 1] == ")":
        return span + ")"
    return span


def answer_span(answer: str, question: str, passages: Sequence[str]) -> AnswerSpan:
    """The evidence span for ``answer`` (see the module docstring)."""
    a = answer.strip()
    if not a:
        return AnswerSpan("", False, "empty")
    if is_yes_no_question(question) and a.lower() in {"yes", "no"}:
        return AnswerSpan(a.lower(), True, "yes/no")
    target = [w for w, _, _ in _words(a)]
    if not target:
        return AnswerSpan(a, False, "unverified")
    n = len(target)
    for pi, text in enumerate(passages):  # exact: the answer's words, in order
        words = _words(text)
        for i in range(len(words) - n + 1):
            if [w for w, _, _ in words[i : i + n]] == target:
                span, how = _extend((words[i][1], words[i + n - 1][2]), words, i + n - 1, text, question)
                return AnswerSpan(_closed(text, *span), True, how or "exact", pi)
    if len(a) <= 4:
        return AnswerSpan(a, False, "unverified")
    joined = " ".join(target)
    best: tuple[float, int, int, int] | None = None
    for pi, text in enumerate(passages):
        words = _words(text)
        for size in {max(1, n - 1), n, n + 1}:
            for i in range(len(words) - size + 1):
                cand = " ".join(w for w, _, _ in words[i : i + size])
                score = fuzz.ratio(joined, cand)
                if score >= 85 and (best is None or score > best[0]):
                    best = (score, pi, words[i][1], words[i + size - 1][2])
    if best is not None:
        _, pi, start, end = best
        return AnswerSpan(_closed(passages[pi], start, end), True, "fuzzy", pi)
    return AnswerSpan(a, False, "unverified")
