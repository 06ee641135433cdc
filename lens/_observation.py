"""The proposal-and-observation interface: one oracle call judges a batch of windows for every outstanding
requirement at once, and every claim is verified against the document text before it counts.

The oracle returns, per (requirement, window), whether the window states the fact, the sentence ids, a quote and
the extracted value, plus names that later (bridge) facts may be about. Code then checks each claim:

- the quote must occur in the window's text (case-, space- and punctuation-insensitive, on word boundaries; a
  near-exact fuzzy alignment of the whole quote allowed for quotes of 12+ characters), or, without a usable
  quote, the value must occur in the sentences it cites;
- sentence ids are re-derived from where the quote actually occurs;
- a value must itself occur in the window's text as whole words (yes/no values excepted), else it is dropped;
- mentions are kept only if they occur in an observed window as whole words;
- a claim whose value says the fact is not there ("null", "none", "unknown", "not stated"…) is no finding.

An unverifiable claim is discarded: the window counts as read with nothing found. Each kept finding records
how its quote matched (``exact``, ``fuzzy``, or ``cited``: only the value in the cited sentences) and, where
the endpoint returned token log-probabilities, the mean log-probability of its value (or quote) — features of
the graded evidence model (``lens._grading``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from lens._corpus import Document
from lens._prompts import fence_passage, render
from lens._values import fits_type
from lens._windows import Window

__all__ = [
    "Finding",
    "Observation",
    "ObservationReply",
    "observation_messages",
    "verify_reply",
    "normalise",
    "mentions",
    "observe",
    "observation_tokens",
]


class _FindingReply(BaseModel):
    fact: str
    passage: str
    sentences: list[int] = Field(default_factory=list)
    quote: str = ""
    value: str = ""

    @field_validator("sentences", mode="before")
    @classmethod
    def _ints(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, (int, str)):
            v = [v]
        out = []
        for x in v if isinstance(v, list) else []:
            try:
                out.append(int(str(x).strip("[] ")))
            except ValueError:
                continue
        return out

    @field_validator("passage", mode="before")
    @classmethod
    def _passage(cls, v: Any) -> Any:
        if isinstance(v, int):
            return f"P{v}"
        return "" if v is None else str(v)

    @field_validator("quote", "value", "fact", mode="before")
    @classmethod
    def _str(cls, v: Any) -> Any:
        if v is None:
            return ""
        if isinstance(v, list):
            return " ".join(str(x) for x in v)
        return str(v)


class ObservationReply(BaseModel):
    """The oracle's reply. Accepted shapes: ``{"R1": {"passage", "sentence", "quote", "value"} | null, ...,
    "names": [...]}`` (what the prompt asks for) or ``{"findings": [...], "mentions": [...]}``."""

    findings: list[_FindingReply] = Field(default_factory=list)
    mentions: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _keyed(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "findings" in data:
            return data
        findings = []
        for key, value in data.items():
            if re.fullmatch(r"#?[Rr]\d+", str(key).strip()) and isinstance(value, dict):
                item = dict(value)
                item["fact"] = str(key)
                if "sentences" not in item and "sentence" in item:
                    item["sentences"] = item.get("sentence")
                findings.append(item)
        mentions = data.get("names", data.get("mentions", []))
        return {"findings": findings, "mentions": mentions}

    @field_validator("mentions", mode="before")
    @classmethod
    def _mentions(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, str):
            return [v]
        return [str(x) for x in v if isinstance(x, (str, int))]

    @field_validator("findings", mode="before")
    @classmethod
    def _findings(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, dict):
            return [v]
        return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


@dataclass(frozen=True)
class Finding:
    """A verified claim: window ``window_key`` states requirement ``requirement_id`` in ``sentences``."""

    requirement_id: str
    window_key: str
    sentences: tuple[int, ...]
    quote: str
    value: str
    match: str = "exact"  # "exact" | "fuzzy" | "cited"
    logprob: float | None = None  # log P(the model pointed at this window for this fact), where the endpoint says


@dataclass
class Observation:
    findings: list[Finding] = field(default_factory=list)
    rejected: list[dict] = field(default_factory=list)  # claims that failed verification, with the reason
    mentions: list[str] = field(default_factory=list)
    logprobs: bool = False  # whether the reply carried token log-probabilities
    nulls: dict[str, float] = field(default_factory=dict)  # fact id -> log-probability of the null it got


# values that say "not stated" rather than state a value: the claim is no finding
NOT_STATED = frozenset(
    {"null", "none", "nil", "unknown", "n a", "na", "not found", "not stated", "not mentioned", "not given"}
)


def normalise(text: str) -> str:
    """Lowercase, unify quotes, drop punctuation and collapse spaces: the form in which quotes are checked."""
    text = text.lower().replace("’", "'").replace("“", '"').replace("”", '"')
    return " ".join(re.findall(r"[0-9a-z\u00c0-\u024f']+", text))


def _span(haystack: str, needle: str) -> tuple[int, int] | None:
    """Where normalised ``needle`` occurs in normalised ``haystack``, as a character span: an exact match on word
    boundaries ("12" is not in "1912", "tom" is not in "tomorrow"), or — for needles of 12+ characters — a
    near-exact fuzzy alignment of the *whole* needle inside the haystack (never a short haystack sentence found
    inside a longer invented quote)."""
    if not needle or not haystack:
        return None
    at = f" {haystack} ".find(f" {needle} ")
    if at >= 0:
        return at, at + len(needle)
    if len(needle) < 12 or len(needle) > len(haystack):
        return None
    from rapidfuzz import fuzz

    hit = fuzz.partial_ratio_alignment(needle, haystack, score_cutoff=94)
    if hit is None or hit.src_start != 0 or hit.src_end != len(needle):
        return None
    return hit.dest_start, hit.dest_end


def _contains(haystack: str, needle: str) -> bool:
    return _span(haystack, needle) is not None


def mentions(doc: Document, name: str) -> bool:
    """Whether a document (title or text) names ``name``: all its content words appear, or a near-exact
    fuzzy match of the whole name does."""
    from lens._terms import STOPWORDS, tokens

    words = [w for w in tokens(name) if w not in STOPWORDS] or tokens(name)
    if not words:
        return True
    have = set(tokens(doc.title)) | set(tokens(doc.text))
    if all(w in have for w in words):
        return True
    return _contains(normalise(doc.title + " " + doc.text), normalise(name))


def observation_messages(
    question: str,
    facts: list[tuple[str, str]],
    windows: list[Window],
    docs: list[Document],
) -> tuple[list[dict[str, str]], dict[str, Window]]:
    """The observation prompt for ``windows`` (labelled P1..Pn) and outstanding ``facts`` (id, text)."""
    labels: dict[str, Window] = {}
    blocks = []
    for n, (w, d) in enumerate(zip(windows, docs), 1):
        pid = f"P{n}"
        labels[pid] = w
        blocks.append(fence_passage(pid, f"{w.path} — {w.title}", w.sentences(d)))
    fact_lines = "\n".join(f"{rid}: {text}" for rid, text in facts)
    return render("observation", question=question, facts=fact_lines, passages="\n\n".join(blocks)), labels


def _sentences_spanned(normed: list[tuple[int, str]], span: tuple[int, int] | None) -> list[int]:
    """The ids of the sentences that the character ``span`` of their space-joined text overlaps."""
    if span is None:
        return []
    out, at = [], 0
    for i, t in normed:
        if t and at < span[1] and span[0] < at + len(t):
            out.append(i)
        at += len(t) + 1
    return out


def verify_reply(
    reply: ObservationReply,
    labels: dict[str, Window],
    docs_by_key: dict[str, Document],
    outstanding: set[str],
    kinds: dict[str, str] | None = None,
    subjects: dict[str, str] | None = None,
) -> Observation:
    """Keep only claims that the window text supports (see module docstring). ``kinds`` gives each
    requirement's expected answer type; a value of the wrong type is dropped (the span is kept).
    ``subjects`` names what a requirement is about ("height of Skerrow Light" is about Skerrow Light); a
    claim from a document that never mentions its subject is rejected."""
    kinds = kinds or {}
    subjects = subjects or {}
    obs = Observation()
    seen: set[tuple[str, str]] = set()
    for f in reply.findings:
        rid = f.fact.strip().lstrip("#").upper()
        pid = f.passage.strip().upper()
        if not pid.startswith("P"):
            pid = f"P{pid}"
        win = labels.get(pid)
        claim = {"fact": rid, "passage": pid, "quote": f.quote[:200], "value": f.value[:100]}
        if rid not in outstanding:
            obs.rejected.append({**claim, "reason": "unknown or settled fact"})
            continue
        if win is None:
            obs.rejected.append({**claim, "reason": "unknown passage"})
            continue
        if normalise(f.value) in NOT_STATED:
            # small models fill the format and then say so in the value: {"quote": "...", "value": "null"}
            obs.rejected.append({**claim, "reason": "the oracle's value says the fact is not stated"})
            continue
        if (rid, win.key) in seen:
            continue
        doc = docs_by_key[win.key]
        subject = subjects.get(rid)
        if subject and not mentions(doc, subject):
            obs.rejected.append({**claim, "reason": f"the document never mentions {subject!r}"})
            continue
        sents = win.sentences(doc)
        normed = [(i, normalise(t)) for i, t in sents]
        window_text = " ".join(t for _, t in normed)
        quote, value = normalise(f.quote), normalise(f.value)
        where = [i for i, t in normed if quote and _contains(t, quote)]
        if quote and not where:
            where = _sentences_spanned(normed, _span(window_text, quote))
        match = "exact" if quote and f" {quote} " in f" {window_text} " else "fuzzy"
        if not where:
            cited = [i for i, t in normed if i in set(f.sentences)]
            cited_text = " ".join(t for i, t in normed if i in set(f.sentences))
            if value and value not in {"yes", "no"} and cited and _contains(cited_text, value):
                where, match = cited, "cited"
        if not where:
            obs.rejected.append({**claim, "reason": "quote not found in the passage"})
            continue
        if value and value not in {"yes", "no", "true", "false"} and not _contains(window_text, value):
            value = ""  # the value is not in the text: keep the span, drop the value
        if value and not fits_type(f.value, kinds.get(rid, "any")):  # type: ignore[arg-type]
            value = ""  # "Which shipyard...?" answered with a year
        seen.add((rid, win.key))
        obs.findings.append(
            Finding(rid, win.key, tuple(sorted(set(where))), f.quote.strip(), f.value.strip() if value else "", match)
        )
    all_text = " ".join(normalise(w.text(docs_by_key[w.key])) for w in labels.values())
    for m in reply.mentions:
        nm = normalise(m)
        if nm and len(nm) > 2 and f" {nm} " in f" {all_text} ":
            obs.mentions.append(m.strip())
    return obs


def observation_tokens(n_facts: int) -> int:
    """The observation reply's max_tokens: one short finding per fact plus a few names."""
    return 60 + 70 * n_facts


def observe(
    question: str,
    facts: list[tuple[str, str]],
    windows: list[Window],
    docs: list[Document],
    call: Any,
    *,
    kinds: dict[str, str] | None = None,
    subjects: dict[str, str] | None = None,
) -> Observation | None:
    """One observation: the oracle reads ``windows`` for every outstanding fact (id, text) in one call made
    through ``call(messages, ObservationReply, max_tokens)``, which returns the LLM response (``.parsed``,
    ``.logprobs``) or None (no reply), and its claims are verified against the text (quotes, values, answer
    types — ``kinds``, by default from each fact's wording —, the fact's subject). The loop (and so
    ``lens calibrate``, which runs the loop) observes through this function."""
    from dataclasses import replace

    from lens._grading import reply_confidence
    from lens._values import answer_type

    messages, labels = observation_messages(question, facts, windows, docs)
    resp = call(messages, ObservationReply, observation_tokens(len(facts)))
    if resp is None or resp.parsed is None:
        return None
    if kinds is None:
        kinds = {rid: answer_type(text) for rid, text in facts}
    docs_by_key = {w.key: d for w, d in zip(windows, docs)}
    obs = verify_reply(resp.parsed, labels, docs_by_key, {rid for rid, _ in facts}, kinds, subjects)
    lps = getattr(resp, "logprobs", None)
    if lps:
        obs.logprobs = True
        conf = {rid: reply_confidence(lps, rid) for rid, _ in facts}
        found = {f.requirement_id for f in obs.findings}
        obs.nulls = {rid: c[0] for rid, c in conf.items() if c is not None and rid not in found and c[2]}
        obs.findings = [
            replace(f, logprob=None if (c := conf.get(f.requirement_id)) is None else c[0] + c[1]) for f in obs.findings
        ]
    return obs
