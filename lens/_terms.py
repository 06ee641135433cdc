"""Terms and cues: how questions, requirements and titles are cut into matchable words.

One place defines tokenisation, stopwords and the light suffix folding the prior's scan uses, so the prior, the
memory's lexical similarity and the requirement cues agree on what a "term" is.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from rapidfuzz import fuzz

__all__ = [
    "STOPWORDS",
    "tokens",
    "content_terms",
    "fold",
    "title_key",
    "base_title",
    "capitalised_spans",
    "normalise",
    "find_span",
]

STOPWORDS = frozenset(
    """a an the and or but if of at by for with about against between into through during before after above below
    to from up down in out on off over under again further then once here there when where why how all any both
    each few more most other some such no nor not only own same so than too very can will just don should now is
    are was were be been being have has had having do does did doing i me my we our you your he him his she her it
    its they them their what which who whom this that these those am as until while also s t would could may might
    must shall one ones whose known name named called based first second""".split()
)
_WORD = re.compile(r"[0-9a-z\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF]+")


_COMBINING = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


def fold(text: str) -> str:
    """Lowercase and strip accents (combining marks after NFKD); ASCII text takes a fast path."""
    if text.isascii():
        return text.lower()
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text)).lower()


_POSSESSIVE = re.compile(r"['’]s\b")


def tokens(text: str) -> list[str]:
    """Lowercased, accent-folded word tokens; a possessive 's is dropped ("Wood's" -> "wood") and other
    apostrophes split words ("O'Brien" -> "o", "brien"), as a word-start match in raw text sees them."""
    folded = fold(text)
    if "'" in folded or "’" in folded:
        folded = _POSSESSIVE.sub("", folded)
    return _WORD.findall(folded)


def content_terms(text: str, *, min_len: int = 2) -> list[str]:
    """Tokens without stopwords, in order, unique."""
    seen: dict[str, None] = {}
    for t in tokens(text):
        if len(t) >= min_len and t not in STOPWORDS:
            seen.setdefault(t, None)
    return list(seen)


_PAREN = re.compile(r"\s*\([^)]*\)\s*$")


def base_title(title: str) -> str:
    """A title without a trailing disambiguation: "Ed Wood (film)" -> "Ed Wood"."""
    return _PAREN.sub("", title).strip() or title.strip()


@lru_cache(maxsize=262_144)
def title_key(title: str) -> str:
    """Case- and accent-insensitive key for comparing titles and names."""
    return " ".join(tokens(title))


_CAP_SPAN = re.compile(
    r"(?:\"([^\"]{2,80})\")|((?:[A-Z0-9][\w'’.&-]*)(?:\s+(?:(?:of|the|and|de|von|van|la|le|du|del|da|in|on|for|&)\s+)*[A-Z0-9][\w'’.&-]*)*)"
)


def capitalised_spans(text: str) -> list[str]:
    """Quoted strings and runs of capitalised words ("Ed Wood", "University of Texas"): likely names."""
    out: list[str] = []
    for m in _CAP_SPAN.finditer(text):
        span = (m.group(1) or m.group(2) or "").strip(" .,'’")
        if not span:
            continue
        words = span.split()
        # a sentence-initial stopword ("The", "Which") is not a name on its own
        while words and words[0].lower() in STOPWORDS and len(words) > 0:
            words = words[1:]
        if words:
            out.append(" ".join(words))
    return out


def normalise(text: str) -> str:
    """Lowercase, unify quotes, drop punctuation and collapse spaces: the form in which quotes and values are
    checked against document text."""
    text = text.lower().replace("’", "'").replace("“", '"').replace("”", '"')
    return " ".join(re.findall(r"[0-9a-z\u00c0-\u024f']+", text))


def find_span(haystack: str, needle: str) -> tuple[int, int] | None:
    """Where ``needle`` occurs in ``haystack`` (both ``normalise``d), as a character span: an exact match on word
    boundaries ("12" is not in "1912"), or — for needles of 12+ characters — a near-exact fuzzy alignment of the
    *whole* needle inside the haystack (never a short haystack found inside a longer invented needle)."""
    if not needle or not haystack:
        return None
    at = f" {haystack} ".find(f" {needle} ")
    if at >= 0:
        return at, at + len(needle)
    if len(needle) < 12 or len(needle) > len(haystack):
        return None
    hit = fuzz.partial_ratio_alignment(needle, haystack, score_cutoff=94)
    if hit is None or hit.src_start != 0 or hit.src_end != len(needle):
        return None
    return hit.dest_start, hit.dest_end
