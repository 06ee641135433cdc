"""Candidate evidence windows: runs of consecutive sentences of one document, cut at readable boundaries.

The latent evidence space is every (document, start, end) span; the loop searches only windows of candidate
documents. A short document is one window. A long one yields a few windows around the sentences that hold the
requirement's cue terms, starting at a heading when one is near, so a window reads as a unit.
"""

from __future__ import annotations

from dataclasses import dataclass

from lens._terms import tokens
from lens.reader._documents import Document

__all__ = ["Window", "windows_for", "estimate_tokens"]

_MAX_WINDOWS_PER_DOC = 3


def estimate_tokens(text: str) -> int:
    """A conservative pre-call token estimate (≈3.2 characters per token); never used for accounting."""
    return int(len(text) / 3.2) + 1


@dataclass(frozen=True)
class Window:
    """Sentences ``first..last`` (inclusive) of document ``doc_index`` in the query's corpus view."""

    doc_index: int
    doc_id: str
    path: str
    title: str
    first: int
    last: int
    sha256: str
    tokens: int

    @property
    def key(self) -> str:
        return f"{self.doc_id}#s{self.first}-{self.last}"

    def sentences(self, doc: Document) -> list[tuple[int, str]]:
        return [(s.index, s.text) for s in doc.sentences[self.first : self.last + 1]]

    def text(self, doc: Document) -> str:
        return " ".join(s.text for s in doc.sentences[self.first : self.last + 1])


def _make(doc: Document, index: int, first: int, last: int) -> Window:
    text = " ".join(s.text for s in doc.sentences[first : last + 1])
    return Window(index, doc.doc_id, doc.path, doc.title, first, last, doc.sha256, estimate_tokens(text) + 12)


def windows_for(doc: Document, index: int, terms: list[str], size: int) -> list[Window]:
    """Windows of at most ``size`` sentences (a document of ≤ 2·size sentences is one window)."""
    sents = doc.sentences
    n = len(sents)
    if n == 0:
        return []
    if n <= 2 * size:
        return [_make(doc, index, 0, n - 1)]
    term_set = set(terms)
    hits = []
    for s in sents:
        count = sum(1 for t in tokens(s.text) if t in term_set)
        if count:
            hits.append((count, -s.index, s.index))
    hits.sort(reverse=True)
    spans: list[tuple[int, int]] = []
    for _, _, i in hits:
        if len(spans) >= _MAX_WINDOWS_PER_DOC:
            break
        start = max(0, i - 1)
        for back in range(i, max(-1, i - 3), -1):  # start at a heading just above the hit
            if sents[back].heading:
                start = back
                break
        end = min(n - 1, start + size - 1)
        if any(a <= i <= b for a, b in spans):
            continue
        spans.append((start, end))
    if not spans:
        spans = [(0, min(n - 1, size - 1))]
    spans.sort()
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [_make(doc, index, a, b) for a, b in merged]
