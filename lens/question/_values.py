"""Atomic values extracted by the oracle, compared and computed in code.

Small models name whichever entity a comparison question lists first, even after writing both dates; so once
the values are extracted and verified, the comparison is done here whenever they parse: dates (year, month,
day), numbers (with thousands separators, decimals and scale words), and equality of normalised strings for
"same"/"both" questions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Sequence

from lens._terms import STOPWORDS, normalise

__all__ = [
    "whole_entity",
    "Comparison",
    "parse_date",
    "parse_number",
    "comparison_of",
    "is_yes_no_question",
    "names_alternatives",
    "compare",
    "answer_type",
    "fits_type",
]

_MONTHS = {
    m: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        1,
    )
    for m in names
}
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "k": 1e3, "m": 1e6, "bn": 1e9}


def parse_date(text: str) -> tuple[int, int, int] | None:
    """(year, month, day) from a date-like value; missing parts are 0. BC years are negative."""
    t = text.lower().replace(",", " ")
    year_m = re.search(r"\b(\d{3,4})\s*(bc|bce)?\b", t)
    if not year_m:
        return None
    year = int(year_m.group(1))
    if year_m.group(2):
        year = -year
    month = 0
    for word in re.findall(r"[a-z]+", t):
        if word in _MONTHS:
            month = _MONTHS[word]
            break
    day = 0
    iso = re.search(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", t)
    if iso:
        return int(iso.group(1)), int(iso.group(2)), int(iso.group(3))
    if month:
        d = re.search(r"\b(\d{1,2})(?:st|nd|rd|th)?\b", t.replace(year_m.group(1), " "))
        if d and 1 <= int(d.group(1)) <= 31:
            day = int(d.group(1))
    return year, month, day


def parse_number(text: str) -> float | None:
    """A number from a value like "1,234", "3.5 million", "$12m", "$40k"; None if none is present. The short
    scale words "k", "m" and "bn" count only after a currency sign ("38 m" is 38 metres, "$38m" 38 million)."""
    t = text.lower().replace(",", "")
    m = re.search(r"([$£€¥]\s*)?(-?\d+(?:\.\d+)?)\s*(thousand|million|billion|trillion|bn|k|m)?\b", t)
    if not m:
        return None
    value = float(m.group(2))
    scale = m.group(3)
    if scale and (len(scale) > 2 or m.group(1)):
        value *= _SCALE[scale]
    return value


Kind = Literal["date", "number", "same"]


@dataclass(frozen=True)
class Comparison:
    """What a comparison question asks: the extreme (min/max) of a date or number, or equality."""

    kind: Kind
    pick: Literal["min", "max", "equal"]


_DATE_MIN = r"\b(first|earlier|earliest|older|oldest|sooner|before|preceded)\b"
_DATE_MAX = r"\b(later|latest|last|younger|youngest|more recent(ly)?|most recent(ly)?|newer|newest|after)\b"
_NUM_MAX = r"\b(more|most|larger|largest|bigger|biggest|higher|highest|taller|tallest|longer|longest|greater|greatest|heavier|wider|deeper|further|farther)\b"
_NUM_MIN = r"\b(fewer|fewest|less|least|smaller|smallest|lower|lowest|shorter|shortest|lighter|narrower|shallower)\b"
_SAME = r"\b(both|same|also|either|neither)\b"


# a question answered yes or no: it opens with an auxiliary verb ("Is …", "Were both …", "Would …")
_YES_NO = re.compile(r"^\s*(is|are|was|were|do|does|did|has|have|had|can|could|will|would)\b", re.I)


def is_yes_no_question(question: str) -> bool:
    """Whether ``question`` asks to be answered yes or no (the one test every stage uses)."""
    return _YES_NO.match(question) is not None


def comparison_of(question: str) -> Comparison | None:
    """The comparison a question asks for, from its wording; None when it asks none we compute in code."""
    q = question.lower()
    if is_yes_no_question(q) and re.search(_SAME, q):
        return Comparison("same", "equal")
    if re.search(
        r"\b(born|founded|established|formed|released|published|opened|built|created|started|began|died|launched|came out|premiered|introduced)\b",
        q,
    ) or re.search(r"\b(older|younger|earlier|later|first)\b", q):
        if re.search(_DATE_MIN, q):
            return Comparison("date", "min")
        if re.search(_DATE_MAX, q):
            return Comparison("date", "max")
    if re.search(r"\brank", q) and re.search(r"\b(best|highest|higher|top|better)\b", q):
        return Comparison("number", "min")  # a better ranking is a smaller rank number
    if re.search(_NUM_MAX, q):
        return Comparison("number", "max")
    if re.search(_NUM_MIN, q):
        return Comparison("number", "min")
    return None


def names_alternatives(question: str) -> bool:
    """Whether the question names the alternatives it compares: "…, X or Y?", or both/same/either/neither."""
    return bool(re.search(r"\bor\b", question, re.I) or re.search(r"\b(both|same|either|neither)\b", question, re.I))


def compare(comparison: Comparison, entities: Sequence[str], values: Sequence[str]) -> str | None:
    """The answer in code: the entity with the extreme value, or "yes"/"no"; None if the values don't parse."""
    if len(entities) != len(values) or len(values) < 2:
        return None
    if comparison.kind == "same":
        normed = [normalise(v) for v in values]
        if not all(normed):
            return None
        if all(n in {"yes", "true"} for n in normed):
            return "yes"
        if any(n in {"no", "false"} for n in normed):
            return "no"
        return "yes" if len(set(normed)) == 1 else "no"
    parse = parse_date if comparison.kind == "date" else parse_number
    parsed = [parse(v) for v in values]
    if any(p is None for p in parsed):
        return None
    if comparison.kind == "date":
        # compare at the coarsest precision both values have (a bare year vs a full date)
        if any(p[1] == 0 for p in parsed):  # type: ignore[index]
            parsed = [(p[0], 0, 0) for p in parsed]  # type: ignore[index]
        elif any(p[2] == 0 for p in parsed):  # type: ignore[index]
            parsed = [(p[0], p[1], 0) for p in parsed]  # type: ignore[index]
    if len(set(parsed)) < len(parsed):
        return None  # a tie: leave it to synthesis
    order = sorted(range(len(parsed)), key=lambda i: parsed[i])  # type: ignore[arg-type,return-value]
    best = order[0] if comparison.pick == "min" else order[-1]
    return entities[best]


AnswerType = Literal["date", "number", "name", "yesno", "any"]


def whole_entity(value: str, sentence: str) -> bool:
    """Whether ``value`` stands in ``sentence`` as a whole: no letter or digit touches it on either side, and a
    name is not the start or end of a longer capitalised name ("Martins" in "Obafemi Martins" is not; a sentence's
    "In Harrowmouth" still holds "Harrowmouth")."""
    v = value.strip()
    if not v:
        return False
    for m in re.finditer(re.escape(v), sentence, re.IGNORECASE):
        before, after = sentence[: m.start()], sentence[m.end() :]
        if before[-1:].isalnum() or after[:1].isalnum():
            continue
        if v[:1].isupper() and (_joins_name(_WORD_BEFORE.search(before)) or _joins_name(_WORD_AFTER.match(after))):
            continue
        return True
    return False


_WORD_BEFORE = re.compile(r"([A-Z][\w'’-]*) $")  # a capitalised word one space before
_WORD_AFTER = re.compile(r"^ ([A-Z][\w'’-]*)")  # … or after


def _joins_name(m: re.Match | None) -> bool:
    """Whether the capitalised word next to a value continues its name (a function word does not)."""
    return m is not None and m.group(1).lower() not in STOPWORDS


def answer_type(question: str) -> AnswerType:
    """The kind of value a (sub-)question asks for, from its wording."""
    q = question.strip().lower()
    if is_yes_no_question(q):
        return "yesno"
    if re.search(r"\b(when|what year|which year|in what year|what date|which date|date of birth|birth date|year)\b", q):
        return "date"
    if re.search(r"\bhow (many|much|long|tall|high|old|far|big|large|deep|wide)\b", q):
        return "number"
    if re.match(r"^(who|whom|whose)\b", q) or re.search(
        r"\b(which|what) (\w+ ){0,2}(person|company|band|team|city|town|country|state|island|shipyard|film|album|song|group|school|university|club|station|river|place|man|woman|actor|actress|singer|writer|author|director|composer|architect|engineer|player)\b",
        q,
    ):
        return "name"
    return "any"


def fits_type(value: str, kind: AnswerType) -> bool:
    """Whether an extracted value can be the answer to a question of this kind."""
    v = value.strip()
    if not v or kind == "any":
        return bool(v)
    low = v.lower()
    if kind == "yesno":
        return low in {"yes", "no", "true", "false"}
    if kind == "date":
        return parse_date(v) is not None or parse_number(v) is not None
    if kind == "number":
        return parse_number(v) is not None
    # a name: not a bare number or date, not yes/no
    return low not in {"yes", "no", "true", "false", "none", "null"} and not re.fullmatch(r"[\d\s.,:/-]+", v)
