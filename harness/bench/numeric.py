"""Answer correctness for questions over financial filings (FinanceBench): numbers within 1 %, yes/no by polarity.

A FinanceBench answer is often a number with a unit written one of many ways — ``$1,577 million``, ``1577.00``,
``$1.577 billion``, ``1.9%``, ``(1,234)`` — and the gold is rounded as the question asks. :func:`decide` grades a
prediction against a gold answer by rule where a rule can:

- **numeric** — the gold is one quantity (a number with at most a currency sign, a scale word, a percent sign and
  a few unit words: ``$11588.00``, ``24.26``, ``30.8%``, ``$2,018mn``, ``2.7 times``). The prediction is correct
  when any quantity in it (a bare year such as 2019 is not taken, unless the gold is one) matches the gold's:
  their values agree within 1 % (``|a − b| ≤ 0.01 · max(|a|, |b|)``) after scale words are applied
  (``1.5 billion`` = ``1,500 million``); a side without a scale word may also be counted in thousands, millions or
  billions when either side names a currency or a scale (filings state money in millions: ``$1,577 million`` =
  ``1577.00`` = ``$1.577 billion``); a percentage may also be compared as a fraction (``30.8%`` = ``0.308``) or
  as its bare number (``30.8``). Signs must agree (``(1,234)`` and ``-1,234`` are negative).
- **yes/no** — the gold starts with "Yes" or "No": the prediction is correct when its polarity (its first word,
  else the one of "yes"/"no" it contains) is the gold's. A prediction with no polarity is left to the judge.
- **judge** — anything else (a sentence, a list of names): ``None`` here; the run's LLM judge decides
  (``lens bench judge``, ``harness.bench.judge``).

An empty prediction is incorrect by rule (``empty``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "Quantity",
    "Decision",
    "TOLERANCE",
    "quantities",
    "single_quantity",
    "quantities_match",
    "polarity",
    "decide",
]

TOLERANCE = 0.01

_SCALES = {
    "thousand": 1e3,
    "thousands": 1e3,
    "k": 1e3,
    "million": 1e6,
    "millions": 1e6,
    "mn": 1e6,
    "mm": 1e6,
    "mln": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "billions": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "trillions": 1e12,
    "tn": 1e12,
}
_ONE_LETTER = {"k", "m", "b"}  # only attached to the number ("$5m", "1.5B"): "5 m" may be metres
_QUANTITY = re.compile(
    r"""
    (?<![\w.])                                   # not inside a word or a number ("FY2019", "Q2", "1.2.3")
    (?P<cur0>US\$|\$|USD|€|£)?\s*                 # "$(1,234)"
    (?P<open>\()?\s*
    (?P<sign1>[-−–])?\s*
    (?P<cur>US\$|\$|USD|€|£)?\s*
    (?P<sign2>[-−–])?
    (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)
    (?![\d]|[.,]\d)                               # the whole number, never a prefix of it
    (?P<space>\s*)
    (?P<scale>thousands?|millions?|billions?|trillions?|mln|mn|mm|bn|tn|[kmb])?
    (?P<times>[x×])?
    (?![A-Za-z]|-[A-Za-z])                        # "10-K", "3rd": not quantities
    \s*(?P<pct>%|percent(?:age\s+points?)?|per\s?cent|pct)?
    (?P<close>\))?
    (?:\s*(?P<scale2>thousands?|millions?|billions?|trillions?)\b)?   # "(1,234) million"
    """,
    re.IGNORECASE | re.VERBOSE,
)
_UNIT_WORDS = frozenset(
    "usd us dollars dollar approximately approx about around roughly times x ratio of per cent percent".split()
)
_WORD = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class Quantity:
    """One number as written: ``value`` (sign applied, scale not), ``scale`` (1, 1e3, 1e6, …), percent, currency."""

    value: float
    scale: float = 1.0
    percent: bool = False
    currency: bool = False
    year_like: bool = False  # a bare integer 1900–2100 with nothing around it: a year, not an amount
    span: tuple[int, int] = (0, 0)

    @property
    def amount(self) -> float:
        return self.value * self.scale


def quantities(text: str) -> list[Quantity]:
    """Every quantity in ``text``, in order."""
    out: list[Quantity] = []
    for m in _QUANTITY.finditer(text or ""):
        raw = m.group("num")
        scale_word = (m.group("scale") or "").lower()
        if scale_word in _ONE_LETTER and m.group("space"):
            scale_word = ""  # "5 m": not a scale
        scale_word = scale_word or (m.group("scale2") or "").lower()
        value = float(raw.replace(",", ""))
        negative = bool(m.group("sign1") or m.group("sign2")) or bool(m.group("open") and m.group("close"))
        if negative:
            value = -value
        pct = bool(m.group("pct"))
        cur = bool(m.group("cur") or m.group("cur0"))
        year = (
            not (cur or pct or scale_word or negative)
            and re.fullmatch(r"\d{4}", raw) is not None
            and 1900 <= int(raw) <= 2100
        )
        start, end = m.span()
        if m.group("open") and not m.group("close"):  # an opening bracket that is not an accounting negative
            start = m.start("sign1") if m.group("sign1") else m.start("cur") if m.group("cur") else m.start("num")
        if m.group("scale") and not scale_word:  # "5 m": the letter is not part of the quantity
            end = m.end("num")
        out.append(Quantity(value, _SCALES.get(scale_word, 1.0), pct, cur, year, (start, end)))
    return out


def single_quantity(text: str) -> Quantity | None:
    """The gold's one quantity when the text is nothing more (a few unit words and punctuation allowed), else None."""
    found = [q for q in quantities(text) if not q.year_like] or quantities(text)
    if len(found) != 1:
        return None
    q = found[0]
    rest = text[: q.span[0]] + " " + text[q.span[1] :]
    if any(ch.isdigit() for ch in rest):
        return None
    if any(w.lower() not in _UNIT_WORDS for w in _WORD.findall(rest)):
        return None
    return q


def _close(a: float, b: float, tol: float = TOLERANCE) -> bool:
    if a == b:
        return True
    if (a < 0) != (b < 0):
        return False
    return abs(a - b) <= tol * max(abs(a), abs(b))


def quantities_match(gold: Quantity, pred: Quantity, tol: float = TOLERANCE) -> bool:
    """Whether two quantities state the same value (see the module docstring)."""
    if _close(gold.amount, pred.amount, tol):
        return True
    if gold.percent != pred.percent:
        pct, other = (gold, pred) if gold.percent else (pred, gold)
        if other.scale == 1 and (_close(pct.value / 100, other.value, tol) or _close(pct.value, other.value, tol)):
            return True
    if gold.percent or pred.percent:
        return False
    if (gold.currency or pred.currency or gold.scale != 1 or pred.scale != 1) and (gold.scale == 1 or pred.scale == 1):
        for m in (1e3, 1e6, 1e9):
            if gold.scale == 1 and _close(gold.amount * m, pred.amount, tol):
                return True
            if pred.scale == 1 and _close(gold.amount, pred.amount * m, tol):
                return True
    return False


_POLAR = re.compile(r"[a-z]+")


def polarity(text: str) -> str | None:
    """ "yes" or "no": the first word when it is one, else the only one of the two the text contains; else None."""
    words = _POLAR.findall((text or "").lower())
    if not words:
        return None
    if words[0] in ("yes", "no"):
        return words[0]
    found = {w for w in words if w in ("yes", "no")}
    return found.pop() if len(found) == 1 else None


@dataclass(frozen=True)
class Decision:
    """``correct`` (None: the rule cannot decide, the judge must) and the ``rule`` that decided it."""

    correct: bool | None
    rule: str  # "numeric" | "yes_no" | "judge" | "empty"


def decide(gold: str, prediction: str) -> Decision:
    """Grade ``prediction`` against ``gold`` by rule (see the module docstring)."""
    if not (prediction or "").strip():
        return Decision(False, "empty")
    g = single_quantity(gold)
    if g is not None:
        cands = [q for q in quantities(prediction) if g.year_like or not q.year_like]
        return Decision(any(quantities_match(g, q) for q in cands), "numeric")
    gp = _gold_polarity(gold)
    if gp is not None:
        pp = polarity(prediction)
        return Decision(None, "judge") if pp is None else Decision(pp == gp, "yes_no")
    return Decision(None, "judge")


def _gold_polarity(gold: str) -> str | None:
    words = _POLAR.findall((gold or "").lower())
    return words[0] if words and words[0] in ("yes", "no") else None
