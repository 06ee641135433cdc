"""Window-level labels for readings, from HotpotQA's sentence-level supporting facts (title, sent_id).

The label is a property of the hypothesis the loop's belief is about — "window w holds requirement j's evidence" —
never of the reading: a window is **positive** for requirement j when it holds a supporting sentence of j's hop,
whatever the reading said (a reading that names the wrong sentence of an evidence window is still evidence for
that window). Each requirement is assigned the gold articles of its hop:

1. the gold articles whose title the requirement's wording (as asked, bridge value filled in) names;
2. else, in a bridge question, a requirement that depends on another gets the *second-hop* article and one that
   others depend on gets the *first-hop* article, where the second-hop article is the gold article whose title
   the other gold article's supporting sentences name (the bridge entity); when that is ambiguous (both or
   neither name the other), every gold article;
3. else every gold article (a single requirement asks the whole question).

So a second-hop article is not a positive for a first-hop requirement. Two more labels are recorded for reports,
never for the likelihood: whether the sentence a reading named is itself a supporting sentence (citation
precision), and whether a final bridge requirement's value is the gold answer (certified-value precision).
Labels are used only to count; they never reach a call.
"""

from __future__ import annotations

import re
import string
from typing import Any, Iterable

from lens.parts import STOPWORDS, base_title, normalise, title_key, tokens

__all__ = ["hop_articles", "SupportingFacts", "answer_key"]


def answer_key(s: str) -> str:
    """HotpotQA's official answer normalisation (lowercase, no punctuation or articles, spaces collapsed)."""
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


def _names(text: str, title: str) -> bool:
    """Whether ``text`` names the article ``title`` (its words, without a trailing "(film)"-like part)."""
    title = base_title(title)
    words = [w for w in tokens(title) if w not in STOPWORDS] or tokens(title)
    have = set(tokens(text))
    return bool(words) and (all(w in have for w in words) or f" {normalise(title)} " in f" {normalise(text)} ")


def hop_articles(record: dict, articles: dict[str, list[str]]) -> dict[str, Any]:
    """The question's gold articles split into hops: ``{"gold": {title: [sentences]}, "first": [...],
    "second": [...]}`` (first/second empty when the hops cannot be told apart)."""
    gold: dict[str, list[str]] = {}
    for title, sid in record["supporting_facts"]:
        sents = articles.get(title)
        if sents is None or not isinstance(sid, int) or not 0 <= sid < len(sents):
            continue
        gold.setdefault(title, []).append(sents[sid])
    first: list[str] = []
    second: list[str] = []
    if record.get("type") == "bridge" and len(gold) == 2:
        a, b = list(gold)
        a_names_b = any(_names(s, b) for s in gold[a])
        b_names_a = any(_names(s, a) for s in gold[b])
        if a_names_b != b_names_a:
            first, second = ([a], [b]) if a_names_b else ([b], [a])
    return {"gold": gold, "first": first, "second": second}


def _overlaps(a: str, b: str) -> bool:
    na, nb = normalise(a), normalise(b)
    return bool(na) and bool(nb) and (f" {na} " in f" {nb} " or f" {nb} " in f" {na} ")


class SupportingFacts:
    """One question's supporting facts split into hops, as the labels read them (module docstring)."""

    def __init__(self, record: dict, articles: dict[str, list[str]], requirements: list[dict]):
        self.record = record
        self.hops = hop_articles(record, articles)
        self.requirements = {r["id"]: r for r in requirements}
        self.dependents = {r["depends_on"] for r in requirements if r.get("depends_on")}
        self.final = requirements[-1]["id"] if requirements else None
        self.answer = answer_key(str(record.get("answer", "")))
        self.value_rule = record.get("type") == "bridge" and self.answer not in {"yes", "no"}

    def titles(self, rid: str, text: str) -> list[str]:
        """The gold articles of requirement ``rid`` as asked (``text``: its wording, bridge value filled in)."""
        req = self.requirements.get(rid, {"id": rid})
        named = [t for t in self.hops["gold"] if _names(text, t)]
        if named:
            return named
        if self.hops["second"] and req.get("depends_on"):
            return self.hops["second"]
        if self.hops["first"] and rid in self.dependents:
            return self.hops["first"]
        return list(self.hops["gold"])

    def gold_sentences(self, rid: str, text: str, title: str) -> list[str]:
        """The supporting sentences of ``rid``'s hop in the article ``title`` (none for another article)."""
        return [s for t in self.titles(rid, text) if title_key(t) == title_key(title) for s in self.hops["gold"][t]]

    def holds(self, rid: str, text: str, title: str, sentences: Iterable[str]) -> bool:
        """Whether any of ``sentences`` (of the article ``title``) is a supporting sentence of ``rid``'s hop."""
        gold = self.gold_sentences(rid, text, title)
        return any(_overlaps(s, g) for s in sentences for g in gold)

    def value_ok(self, rid: str, value: str) -> bool | None:
        """Whether the final requirement of a bridge question (answer not yes/no) gave the gold answer; None for
        any other requirement (no gold value to check)."""
        if not (self.value_rule and rid == self.final):
            return None
        return answer_key(value) == self.answer
