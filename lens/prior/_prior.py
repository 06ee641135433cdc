"""Layer 1: the low-cost prior over the folder as it is now (no LLM, no persistent index): per document, a sum of
signals (lexical, title, layout, link hop, memory), each kept for the trace. ``docs/pipeline.md`` § The prior.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
from rapidfuzz import fuzz, process

from lens._config import PriorSettings
from lens._terms import STOPWORDS, base_title, capitalised_spans, content_terms, title_key, tokens
from lens.reader._view import CorpusView

__all__ = ["PriorScore", "Prior", "Signal", "SIGNALS", "merge_round_robin"]


@dataclass(frozen=True)
class PriorScore:
    """One candidate document with its prior score and the contribution of each signal."""

    index: int
    score: float
    signals: Mapping[str, float]


@dataclass(frozen=True)
class Query:
    """What every signal sees of one scoring: the question, the requirement's cues, the terms looked up (cue terms
    first) and their hits, the memory's signal by document, and how many candidates are wanted."""

    question: str
    cues: list[str]
    terms: list[str]
    cue_terms: list[str]
    q_terms: list[str]
    hits: tuple[np.ndarray, np.ndarray]
    memory: Mapping[int, float]
    limit: int


def _idf(counts: np.ndarray, n_docs: int) -> np.ndarray:
    """BM25's idf of each term (column of ``counts``: the documents with any of the terms) among ``n_docs``."""
    df = (counts > 0).sum(axis=0)
    return np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def _bm25(
    hits: tuple[np.ndarray, np.ndarray], lengths: np.ndarray, avg_len: float, weights: np.ndarray, k1: float, b: float
) -> np.ndarray:
    """BM25 of every document from the term counts of those with any (``CorpusView.term_hits``); the others
    score 0, exactly as their rows of zeros would."""
    rows, counts = hits
    n_docs = len(lengths)
    idf = _idf(counts, n_docs)
    norm = k1 * (1.0 - b + b * lengths[rows] / max(avg_len, 1e-9))
    tf = counts * (k1 + 1.0) / (counts + norm[:, None])
    out = np.zeros(n_docs)
    out[rows] = (tf * (idf * weights)[None, :]).sum(axis=1)
    return out


class Prior:
    """Scores every document of a CorpusView for a question and one requirement's cues. Past ``deadline`` (a
    ``time.monotonic()`` instant: the question's) the title and link-hop signals stop where they are."""

    def __init__(
        self,
        view: CorpusView,
        settings: PriorSettings | None = None,
        *,
        lexical_only: bool = False,
        deadline: float | None = None,
    ):
        self.view = view
        self.settings = settings or PriorSettings()
        self.lexical_only = lexical_only
        self.deadline = deadline

    def _late(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def score(
        self,
        question: str,
        cues: Iterable[str] = (),
        *,
        memory: Mapping[int, float] | None = None,
        limit: int | None = None,
    ) -> list[PriorScore]:
        """Candidates best first (at most ``limit``, default ``settings.candidates``)."""
        view, s = self.view, self.settings
        limit = limit or s.candidates
        if not len(view):
            return []
        cues = [c for c in cues if c and c.strip()]
        q_terms = content_terms(question)
        cue_terms = [t for c in cues for t in content_terms(c)]
        terms = list(dict.fromkeys(cue_terms + q_terms))
        if not terms:
            terms = list(dict.fromkeys(tokens(question)))[:8]
        query = Query(question, cues, terms, cue_terms, q_terms, view.term_hits(terms), memory or {}, limit)
        signals: dict[str, np.ndarray] = {}
        total = np.zeros(len(view))
        for signal in SIGNALS:  # in order: a signal may read the total of those before it
            if (self.lexical_only and signal.name != "lexical") or not signal.enabled(s, query):
                continue
            signals[signal.name] = signal.weight(s) * signal.compute(self, query, total)
            total = total + signals[signal.name]
        order = np.lexsort((np.arange(len(view)), -total))[:limit]
        return [
            PriorScore(int(i), float(total[i]), {k: float(v[i]) for k, v in signals.items() if v[i]})
            for i in order
            if total[i] > 0
        ]

    # ---------------------------------------------------------------- signals
    def _lexical(self, q: Query, total: np.ndarray) -> np.ndarray:
        """BM25 of the terms, a term only the cues name weighted up; scaled so the best document has 1."""
        s = self.settings
        hits, terms, cue_terms, q_terms = q.hits, q.terms, q.cue_terms, q.q_terms
        weights = np.array([s.cue_term_weight if t in set(cue_terms) and t not in set(q_terms) else 1.0 for t in terms])
        lexical = _bm25(hits, self.view.lengths, self.view.avg_len, weights, s.bm25_k1, s.bm25_b)
        top_lex = float(lexical.max()) if lexical.size else 0.0
        return lexical / top_lex if top_lex > 0 else lexical

    def _title(self, q: Query, total: np.ndarray) -> np.ndarray:
        """Titles named in the question or cues (as specific as the name), then fuzzy name matches."""
        view, s = self.view, self.settings
        question, cues, terms, hits = q.question, q.cues, q.terms, q.hits
        title = np.zeros(len(view))
        named = " \n ".join([question, *cues])
        idf = _idf(hits[1], len(view))
        idf_of = {t: float(idf[j]) / max(float(idf.max()), 1e-9) for j, t in enumerate(terms)}
        capitalised = {w for span in capitalised_spans(named) for w in tokens(span)}
        for idx, n_words in view.titles_in(named, deadline=self.deadline).items():
            words = view.title_keys[idx].split()
            if all(w in STOPWORDS or w.isdigit() for w in words):
                continue
            if n_words >= 2:
                specificity = 1.0 if n_words >= len(words) else s.partial_title_specificity
            else:  # one word: only as specific as the word is rare, and only if written as a name
                w = words[0] if len(words) == 1 else next((x for x in words if x in idf_of), words[0])
                specificity = idf_of.get(w, 0.5) * (
                    s.name_word_specificity if w in capitalised else s.plain_word_specificity
                )
            # several documents sharing one name ("Home (film)", "Home (song)") split the signal
            ambiguity = len(view.titles.get(title_key(base_title(view.title(idx))), [idx]))
            title[idx] = max(title[idx], specificity / math.sqrt(max(ambiguity, 1)))
        for span in self._name_cues(question, cues):
            if self._late():
                break
            for idx, sim in self._fuzzy_titles(span):
                title[idx] = max(title[idx], s.fuzzy_title_weight * sim)
        return title

    def _layout(self, q: Query, total: np.ndarray) -> np.ndarray:
        """The share of the terms in the title line of the best documents so far."""
        terms, limit = q.terms, q.limit
        layout = np.zeros(len(self.view))
        term_set = set(terms)
        for idx in np.argsort(-total)[: max(limit * 5, self.settings.layout_pool)]:
            head = set(tokens(self.view.title(idx)))
            if term_set:
                layout[idx] = len(head & term_set) / len(term_set)
        return layout

    def _memory(self, q: Query, total: np.ndarray) -> np.ndarray:
        """Past questions' confirmed windows: each document's best lookup similarity × posterior."""
        mem = np.zeros(len(self.view))
        for idx, sim in q.memory.items():
            mem[idx] = max(mem[idx], sim)
        return mem

    @staticmethod
    def _name_cues(question: str, cues: Sequence[str]) -> list[str]:
        spans = capitalised_spans(question)
        spans += [c for c in cues if c[:1].isupper() or '"' in c]
        out = []
        for sp in spans:
            key = title_key(sp)
            if key and len(key) >= 4 and key not in STOPWORDS:
                out.append(key)
        return list(dict.fromkeys(out))

    def _fuzzy_titles(self, span: str) -> list[tuple[int, float]]:
        cutoff = self.settings.fuzzy_title_cutoff
        hits = process.extract(span, self.view.title_keys, scorer=fuzz.ratio, limit=5, score_cutoff=cutoff)
        return [(idx, score / 100.0) for _, score, idx in hits]

    def _link_hop(self, q: Query, total: np.ndarray) -> np.ndarray:
        """Titles named in the best documents, weighted by how much of the question they share."""
        view, s = self.view, self.settings
        q_terms = q.q_terms + q.cue_terms
        hop = np.zeros(len(view))
        seeds = np.lexsort((np.arange(len(view)), -total))[: s.link_hop_seeds]
        qset = set(q_terms)
        for rank, seed in enumerate(seeds):
            if total[seed] <= 0 or self._late():
                continue
            for idx, n_words in view.titles_in(view.docs[seed].text, deadline=self.deadline).items():
                if idx == seed:
                    continue
                words = view.title_keys[idx].split()
                if n_words < 2 and (len(words) > 1 or words[0] in STOPWORDS):
                    continue  # single common words inside a text are not links
                overlap = len(qset & set(tokens(view.docs[idx].text[:2000]))) / max(len(qset), 1)
                hop[idx] = max(hop[idx], overlap / (1 + rank))
        return hop


@dataclass(frozen=True)
class Signal:
    """One signal of the prior: its name in the trace, its weight from the settings, when it applies, and its
    value per document (0..1) given the query and the total of the signals before it."""

    name: str
    weight: Callable[[PriorSettings], float]
    enabled: Callable[[PriorSettings, Query], bool]
    compute: Callable[[Prior, Query, np.ndarray], np.ndarray]


def _always(settings: PriorSettings, query: Query) -> bool:
    return True


# The prior's signals in the order they are summed (a later one may read the total so far). A new signal is one
# function of (Prior, Query, total) and one weight setting; the lexical-only ablation keeps "lexical" alone.
SIGNALS: tuple[Signal, ...] = (
    Signal("lexical", lambda s: s.lexical_weight, _always, Prior._lexical),
    Signal("title", lambda s: s.title_weight, _always, Prior._title),
    Signal("layout", lambda s: s.layout_weight, _always, Prior._layout),
    Signal("hop", lambda s: s.title_weight * s.hop_weight, lambda s, q: s.link_hop, Prior._link_hop),
    Signal("memory", lambda s: s.memory_weight, lambda s, q: bool(q.memory), Prior._memory),
)


def merge_round_robin(lists: Sequence[Sequence[int]], depth: int) -> list[int]:
    """Rank 1 of every list (in list order), then rank 2, …; duplicates skipped; at most ``depth`` items — how
    the requirements' prior rankings become one candidate list (the agent's recorded candidates, the PIT audit's
    cheap mode)."""
    out: list[int] = []
    seen: set[int] = set()
    longest = max((len(x) for x in lists), default=0)
    for rank in range(longest):
        for lst in lists:
            if rank < len(lst) and lst[rank] not in seen:
                seen.add(lst[rank])
                out.append(lst[rank])
                if len(out) == depth:
                    return out
    return out
