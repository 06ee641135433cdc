"""LENS warm-reuse memory under PIT and Future views — cheap mode: the prior's candidate recall, no LLM.

At anchor ``i`` (the question arriving at stream position ``i``) and for each view, the memory is read **the way
``lens.Agent.ask`` reads it** and fed to the **production prior** (``lens.prior._prior.Prior.score``):

1. for every requirement of the anchor's own decomposition (from its bench row), look the memory up with the
   requirement's ``lens.memory_key`` (requirement text, then the question), through the view's eligibility predicate, at the agent's capacity (default 32 entries per
   lookup) and minimum similarity — ``MemoryStore.lookup``'s rule: ineligible entries are never scored; the
   remaining ones are ranked by the lexical cosine of requirement terms (ties: the most recent position, then log
   order) and the first ``capacity`` kept;
2. drop **stale** entries — the document is gone from the folder or its content sha256 differs from the one the
   entry recorded (ignored, never served, as the agent does);
3. the memory signal of a requirement is ``{document: max similarity × posterior}`` over its fresh entries
   (``lens.memory_signal``, what ``Agent.ask`` builds); the prior scores
   the folder for the question and the requirement's seed cues (``Loop._cues`` before any observation) with that
   signal, exactly as the loop's seed does;
4. the requirements' ranked lists are merged round-robin (rank 1 of each requirement, then rank 2, …, duplicates
   skipped) into one candidate list of ``list_depth`` documents, whose recall of the question's gold titles at
   k ∈ cutoffs (2, 4, 10 by default) is the row's metric. Stateless (no memory) is the prior without memory.

The views' lookups are vectorised: every (anchor, requirement) lookup's similarity to every log entry is one
sparse product, ranked once; each view applies its mask (``MemoryView.mask``, the vectorised form of
``MemoryView.at(i)``) to that one ranking at the same capacity, and never the anchor's own event. **Naive** is a
separate path: a real ``lens.MemoryStore`` holding every entry of the whole stream, materialised up front; each
question's lookups go through ``MemoryStore.lookup`` itself with every entry eligible, and the entries written
by the question itself (matched by query identity) are removed afterwards. Naive = Future on every row
therefore also certifies that the vectorised lookup reproduces the agent's own lookup.

The prior runs once per distinct (question, requirement, memory signal) — Stateless and every view that serves
the same documents share one call.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from harness.audit.lens_events import LensEventLog, LensRecord
from harness.audit.metrics import row_metrics, temporal_violation
from harness.audit.replay import Anchors
from harness.audit.rows import RowBlock
from harness.audit.views import MemoryView
from harness.bench.datasets import article_key
from harness.bench.snapshots import corpus_checksum
from harness.streams import Stream
from harness.workloads import GoldLabels
from lens import LensError, MemoryEntry, MemoryStore
from lens.parts import (
    CorpusView,
    Prior,
    Requirement,
    content_terms,
    memory_key,
    memory_signal,
    merge_round_robin,
    scan_corpus,
)

__all__ = [
    "agent_min_similarity",
    "entry_predicate",
    "seed_cues",
    "merge_round_robin",
    "LensCorpus",
    "PriorRanker",
    "LensContext",
    "LookupTable",
    "NaiveLensMemory",
    "AnchorMemory",
    "memory_signals",
    "served_by_views",
    "served_by_naive",
    "replay_lens_stream",
]

NAIVE = "naive"


def agent_min_similarity() -> float:
    """The minimum requirement similarity of the memory the agent opens (``MemoryStore``'s default)."""
    return float(next(f.default for f in dataclasses.fields(MemoryStore) if f.name == "min_similarity"))


def entry_predicate(view: MemoryView, anchor_pos: int):
    """The eligibility predicate an anchor passes to the agent: the view at ``anchor_pos``, never the own event."""
    at = view.at(anchor_pos)
    return lambda entry: entry.position != anchor_pos and at(entry)


def seed_cues(requirement: Mapping[str, Any]) -> list[str]:
    """A requirement's cues when the loop seeds its belief (``Loop._cues`` with no value observed yet)."""
    req = Requirement(
        str(requirement["id"]),
        str(requirement["text"]),
        list(requirement.get("cues") or []),
        requirement.get("depends_on"),
        requirement.get("entity"),
    )
    return req.prior_cues({})


# ---------------------------------------------------------------------------------------------- the folder


@dataclass
class LensCorpus:
    """The folder as the agent reads it (one scan), with the lookups the audit needs."""

    folder: Path
    scan: Any  # lens.CorpusScan
    view: Any  # lens.CorpusView
    by_id: dict[str, int]
    corpus_hash: str

    @classmethod
    def read(cls, folder: str | Path, reader: Any = None) -> "LensCorpus":
        scan = scan_corpus(folder, reader)
        if not scan.documents:
            raise LensError(f"{folder}: no readable documents")
        view = CorpusView(scan)
        by_id = {d.doc_id: i for i, d in enumerate(view.docs)}
        return cls(Path(folder), scan, view, by_id, corpus_checksum((d.doc_id, d.sha256) for d in view.docs))

    def __len__(self) -> int:
        return len(self.view.docs)

    def freshness(self, entries: Sequence[MemoryEntry]) -> tuple[np.ndarray, np.ndarray]:
        """Per entry: the document index it points at now (-1 if gone) and whether its content is unchanged."""
        doc = np.full(len(entries), -1, dtype=np.int64)
        fresh = np.zeros(len(entries), dtype=bool)
        for k, e in enumerate(entries):
            idx = self.by_id.get(e.doc_id)
            if idx is not None:
                doc[k] = idx
                fresh[k] = self.view.docs[idx].sha256 == e.sha256
        return doc, fresh

    def gold_documents(self, gold_ids: Sequence[Sequence[str]]) -> tuple[GoldLabels, int]:
        """Gold documents per query given as document ids (a stream run's asset files). An id with no document
        in the folder stays in the denominator as an unreachable asset. Returns (labels, missing)."""
        return self._labels(gold_ids, self.by_id.get)

    def gold_labels(self, gold_titles: Sequence[Sequence[str]]) -> tuple[GoldLabels, int]:
        """Gold documents per query (titles matched by ``harness.bench.datasets.article_key``). A gold title with no
        document in the folder stays in the denominator as an unreachable asset. Returns (labels, missing)."""
        index: dict[str, int] = {}
        for i, d in enumerate(self.view.docs):
            index.setdefault(article_key(d.title), i)
        return self._labels([[article_key(t) for t in titles] for titles in gold_titles], index.get)

    def _labels(self, keys_per_query: Sequence[Sequence[str]], find) -> tuple[GoldLabels, int]:
        n_docs = len(self.view.docs)
        indptr, indices, missing = [0], [], 0
        for keys in keys_per_query:
            got: set[int] = set()
            for t in dict.fromkeys(keys):
                i = find(t)
                if i is None:
                    i = n_docs + missing
                    missing += 1
                got.add(i)
            indices.extend(sorted(got))
            indptr.append(len(indices))
        return GoldLabels(
            np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64), n_docs + missing
        ), missing


class PriorRanker:
    """The production prior over one folder, memoised per (question, cues, memory signal)."""

    def __init__(self, corpus: LensCorpus, settings: Any, *, lexical_only: bool = False, depth: int = 10) -> None:
        self.prior = Prior(corpus.view, settings, lexical_only=lexical_only)
        self.depth = int(depth)
        self._memo: dict[tuple, tuple[int, ...]] = {}
        self.calls = 0

    def ranked(self, question: str, cues: Sequence[str], signal: Mapping[int, float] | None) -> tuple[int, ...]:
        sig = tuple(sorted((signal or {}).items()))
        key = (question, tuple(cues), sig)
        got = self._memo.get(key)
        if got is None:
            self.calls += 1
            got = tuple(c.index for c in self.prior.score(question, cues, memory=dict(sig) or None, limit=self.depth))
            self._memo[key] = got
        return got


@dataclass
class LensContext:
    """Everything a replay reads that does not depend on the stream: questions, their decompositions, the folder,
    the prior and the gold labels (metrics only). Indexed by workload query order (bench order)."""

    records: Sequence[LensRecord]
    corpus: LensCorpus
    ranker: PriorRanker
    gold: GoldLabels
    capacity: int = 32
    min_similarity: float = 0.35
    cutoffs: tuple[int, ...] = (2, 4, 10)
    headline_k: int = 10
    trace_depth: int = 4

    def __post_init__(self) -> None:
        self.index = {r.question_id: i for i, r in enumerate(self.records)}
        self.cues = [[seed_cues(req) for req in r.requirements] for r in self.records]

    @property
    def list_depth(self) -> int:
        return self.ranker.depth


# ---------------------------------------------------------------------------------------------- lookups


@dataclass(frozen=True)
class LookupTable:
    """Every (anchor, requirement) lookup ranked once against every log entry (``MemoryStore.lookup``'s order).

    ``order (L, E)`` entry indices best first; ``sims (L, E)`` their similarity; ``owner (L,)`` the anchor row of
    each lookup and ``req (L,)`` the requirement's index in its anchor's decomposition.
    """

    order: np.ndarray
    sims: np.ndarray
    owner: np.ndarray
    req: np.ndarray

    @classmethod
    def build(cls, texts: Sequence[str], owner: np.ndarray, req: np.ndarray, log: LensEventLog) -> "LookupTable":
        from scipy import sparse

        entries = log.entries
        vocab: dict[str, int] = {}

        def matrix(term_lists: Sequence[Sequence[str]]) -> tuple[Any, np.ndarray]:
            rows, cols = [], []
            sizes = np.zeros(len(term_lists), dtype=np.int64)
            for r, terms in enumerate(term_lists):
                uniq = set(terms)
                sizes[r] = len(uniq)
                for t in uniq:
                    rows.append(r)
                    cols.append(vocab.setdefault(t, len(vocab)))
            return (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)), sizes

        (qr, qc), q_size = matrix([content_terms(t) for t in texts])
        (er, ec), e_size = matrix([e.terms for e in entries])
        V = max(len(vocab), 1)
        Q = sparse.csr_matrix((np.ones(qr.size), (qr, qc)), shape=(len(texts), V))
        Em = sparse.csr_matrix((np.ones(er.size), (er, ec)), shape=(len(entries), V))
        inter = np.asarray((Q @ Em.T).todense(), dtype=np.float64).reshape(len(texts), len(entries))
        denom = np.sqrt((q_size[:, None] * e_size[None, :]).astype(np.float64))
        # the same float operations as lens.memory._memory.similarity: |a ∩ b| / sqrt(|a| * |b|), 0 for an empty side
        sims = np.divide(inter, denom, out=np.zeros_like(inter), where=denom > 0)
        pos = np.broadcast_to(log.entry_pos[None, :].astype(np.float64), sims.shape)
        idx = np.broadcast_to(np.arange(len(entries), dtype=np.float64)[None, :], sims.shape)
        order = np.lexsort((idx, -pos, -sims), axis=1) if len(entries) else np.zeros((len(texts), 0), dtype=np.int64)
        return cls(order, np.take_along_axis(sims, order, axis=1), np.asarray(owner), np.asarray(req))

    def select(
        self, view: MemoryView, anchor_pos: np.ndarray, entry_pos: np.ndarray, capacity: int, min_similarity: float
    ) -> list[list[tuple[int, float]]]:
        """(entry index, similarity) pairs each lookup serves under ``view``: eligible (never the own event),
        similar enough, the first ``capacity`` in ranking order."""
        if self.order.shape[1] == 0:
            return [[] for _ in range(self.order.shape[0])]
        a = anchor_pos[self.owner][:, None]
        pos = entry_pos[self.order]
        ok = view.mask(a, pos) & (pos != a) & (self.sims >= min_similarity)
        take = ok & (np.cumsum(ok, axis=1) <= capacity)
        out = []
        for r in range(self.order.shape[0]):
            cols = np.flatnonzero(take[r])
            out.append(list(zip(self.order[r, cols].tolist(), self.sims[r, cols].tolist())))
        return out


class NaiveLensMemory:
    """The leak control: one ``lens.MemoryStore`` holding every entry of the whole stream, materialised up front,
    and each question's lookups answered from it by query identity (own entries removed after the lookup)."""

    def __init__(self, table: dict[str, list[list[tuple[int, float]]]], store: MemoryStore) -> None:
        self._table = table
        self.store = store

    @classmethod
    def materialise(
        cls, log: LensEventLog, requirement_texts: Mapping[str, Sequence[str]], capacity: int, folder: str | Path
    ) -> "NaiveLensMemory":
        folder = Path(folder)
        store = MemoryStore(folder, capacity=capacity)
        if store.log_path.exists():
            store.log_path.unlink()  # materialised afresh from this log, never appended to another
        store.append(log.entries)
        store.log_path.parent.mkdir(parents=True, exist_ok=True)
        store.log_path.touch()  # an empty memory is still a memory: its (empty) log is an output of the run
        stored = store.entries()
        index = {id(e): k for k, e in enumerate(stored)}
        own_count: dict[str, int] = {}
        for e in stored:
            own_count[log.owner(e)] = own_count.get(log.owner(e), 0) + 1
        table: dict[str, list[list[tuple[int, float]]]] = {}
        for qid, texts in requirement_texts.items():
            extra = own_count.get(qid, 0)
            per = []
            for text in texts:
                got = store.lookup(text, lambda e: True, capacity=capacity + extra)
                per.append([(index[id(e)], s) for e, s in got if log.owner(e) != qid][:capacity])
            table[qid] = per
        return cls(table, store)

    def lookup(self, query_id: str) -> list[list[tuple[int, float]]]:
        return self._table[query_id]


# ---------------------------------------------------------------------------------------------- scoring


@dataclass
class AnchorMemory:
    """What one condition served one anchor: per requirement, the (entry index, similarity) pairs in order."""

    served: list[list[tuple[int, float]]]

    def positions(self, log: LensEventLog) -> list[int]:
        return [int(log.entry_pos[e]) for lst in self.served for e, _ in lst]


def memory_signals(
    mem: AnchorMemory, doc: np.ndarray, fresh: np.ndarray, posterior: np.ndarray
) -> tuple[list[dict[int, float]], int]:
    """Per requirement, the prior's memory signal ``{document index: max similarity × posterior}`` over the
    *fresh* served entries (what ``Agent.ask`` builds), and how many served entries were stale (ignored, never
    served)."""
    signals, stale = [], 0
    for served in mem.served:
        signal, n_stale = memory_signal((int(doc[e]), bool(fresh[e]), s, float(posterior[e])) for e, s in served)
        signals.append(signal)
        stale += n_stale  # the document is gone or its content changed since the entry was confirmed
    return signals, stale


def _lookups(
    ctx: LensContext, stream: Stream, log: LensEventLog, a_pos: np.ndarray
) -> tuple[np.ndarray, np.ndarray, LookupTable]:
    a_q = np.asarray([ctx.index[stream.query_ids[p]] for p in a_pos], dtype=np.int64)
    owner, req, texts = [], [], []
    for r, q in enumerate(a_q):
        for k, rq in enumerate(ctx.records[q].requirements):
            owner.append(r)
            req.append(k)
            texts.append(memory_key(ctx.records[q].question, rq["text"]))
    n_req = np.asarray([len(ctx.records[q].requirements) for q in a_q], dtype=np.int64)
    return a_q, n_req, LookupTable.build(texts, np.asarray(owner, dtype=np.int64), np.asarray(req, dtype=np.int64), log)


def served_by_views(
    ctx: LensContext, stream: Stream, log: LensEventLog, anchor_positions: np.ndarray, views: Sequence[MemoryView]
) -> list[list[AnchorMemory]]:
    """For each view, what each anchor's lookups serve (vectorised over every anchor and requirement)."""
    a_pos = np.asarray(anchor_positions, dtype=np.int64)
    _, n_req, table = _lookups(ctx, stream, log, a_pos)
    out = []
    for view in views:
        chosen = table.select(view, a_pos, log.entry_pos, ctx.capacity, ctx.min_similarity)
        per_anchor = [AnchorMemory([[] for _ in range(n)]) for n in n_req]
        for lk, served in enumerate(chosen):
            per_anchor[table.owner[lk]].served[table.req[lk]] = served
        out.append(per_anchor)
    return out


def served_by_naive(
    ctx: LensContext, stream: Stream, log: LensEventLog, anchor_positions: np.ndarray, folder: str | Path
) -> list[AnchorMemory]:
    """What the pre-materialised full-stream memory serves each anchor (its own separate code path)."""
    naive = NaiveLensMemory.materialise(
        log,
        {
            r.question_id: [memory_key(r.question, rq["text"]) for rq in r.requirements]
            for r in ctx.records
            if r.question_id in log.position_of
        },
        ctx.capacity,
        folder,
    )
    return [AnchorMemory(naive.lookup(stream.query_ids[int(p)])) for p in anchor_positions]


def condition_scalars(common: Mapping[str, Any], view: MemoryView | None) -> dict[str, Any]:
    """A block's scalars: the replay's common ones and its condition (``view`` None: Naive)."""
    return {
        **common,
        "condition": NAIVE if view is None else view.condition,
        "horizon": None if view is None else view.horizon,
        "view": NAIVE if view is None else view.label,
    }


def served_columns(
    sel_lists: Sequence[Sequence[int]], sim_lists: Sequence[Sequence[float]], a_pos: np.ndarray
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """What the memory served at each anchor, as row columns: the selected event positions (padded with -1),
    ``n_selected``, ``n_future``, ``tvr`` and the top and mean similarity of the served entries (NaN: none)."""
    width = max((len(s) for s in sel_lists), default=0)
    selected = np.full((len(sel_lists), width), -1, dtype=np.int64)
    sims = np.zeros((len(sel_lists), width), dtype=np.float64)
    for r, (s, m) in enumerate(zip(sel_lists, sim_lists)):
        selected[r, : len(s)] = s
        sims[r, : len(m)] = m
    tvr, n_sel, n_fut = temporal_violation(selected, a_pos)
    filled = selected >= 0
    with np.errstate(invalid="ignore"):
        top = np.where(n_sel > 0, np.where(filled, sims, -np.inf).max(axis=1, initial=-np.inf), np.nan)
        mean = np.where(n_sel > 0, (sims * filled).sum(axis=1) / np.maximum(n_sel, 1), np.nan)
    return selected, {
        "n_selected": n_sel,
        "n_future": n_fut,
        "tvr": tvr,
        "top_sim": np.round(top, 6),
        "mean_sim": np.round(mean, 6),
    }


def _prior_lists(
    ctx: LensContext,
    a_q: np.ndarray,
    mems: Sequence[AnchorMemory],
    doc: np.ndarray,
    fresh: np.ndarray,
    posterior: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At each anchor, the prior's candidates with the memory it was served (one list per requirement, merged
    round-robin, padded with -1), the stale entries served and the documents the memory signalled."""
    final = np.full((len(a_q), ctx.list_depth), -1, dtype=np.int64)
    n_stale = np.zeros(len(a_q), dtype=np.int64)
    n_docs = np.zeros(len(a_q), dtype=np.int64)
    for r, q in enumerate(a_q.tolist()):
        signals, n_stale[r] = memory_signals(mems[r], doc, fresh, posterior)
        lists = [ctx.ranker.ranked(ctx.records[q].question, ctx.cues[q][k], sig) for k, sig in enumerate(signals)]
        ranked = merge_round_robin(lists, ctx.list_depth)
        final[r, : len(ranked)] = ranked
        n_docs[r] = len({d for sig in signals for d in sig})
    return final, n_stale, n_docs


def replay_lens_stream(
    ctx: LensContext,
    stream: Stream,
    log: LensEventLog,
    anchors: Anchors,
    views: Sequence[MemoryView],
    *,
    naive_folder: str | Path,
    scalars: Mapping[str, Any] | None = None,
) -> list[RowBlock]:
    """Rows for every view (then Naive) at every anchor of ``stream``: the LENS prior's candidate recall with the
    memory each condition serves. The log is read, never written."""
    if not log.frozen:
        raise ValueError("replay needs a frozen event log")
    if tuple(log.query_ids) != tuple(stream.query_ids):
        raise ValueError("the event log was not built from this stream")
    a_pos = anchors.positions.astype(np.int64)
    a_q = np.asarray([ctx.index[stream.query_ids[p]] for p in a_pos], dtype=np.int64)
    n_req = np.asarray([len(ctx.records[q].requirements) for q in a_q], dtype=np.int64)
    doc, fresh = ctx.corpus.freshness(log.entries)
    posterior = np.asarray([e.posterior for e in log.entries], dtype=np.float64)
    conditions: list[tuple[MemoryView | None, list[AnchorMemory]]] = list(
        zip(views, served_by_views(ctx, stream, log, a_pos, views))
    )
    conditions.append((None, served_by_naive(ctx, stream, log, a_pos, naive_folder)))

    common = {
        "stream": stream.name,
        "stream_kind": stream.kind,
        "seed": stream.seed,
        "uses_gold": stream.uses_gold,
        "memory": "lens",
        "label_based": False,
        "retriever": "lens-prior",
        "mode": "cheap",
        "lookup_capacity": ctx.capacity,
        "trace_depth": ctx.trace_depth,
        "base_depth": ctx.list_depth,
        "list_depth": ctx.list_depth,
        **dict(scalars or {}),
    }
    query_ids = np.asarray([stream.query_ids[p] for p in a_pos], dtype=object)
    dsource = np.asarray([ctx.records[q].decomposition_source for q in a_q], dtype=object)
    blocks: list[RowBlock] = []
    for view, mems in conditions:
        final, n_stale, n_docs = _prior_lists(ctx, a_q, mems, doc, fresh, posterior)
        sel_lists = [m.positions(log) for m in mems]
        sim_lists = [[s for lst in m.served for _, s in lst] for m in mems]
        metrics = row_metrics(
            final,
            a_q,
            ctx.gold,
            np.zeros(ctx.gold.n_assets, dtype=np.int64),
            ("document",),
            cutoffs=ctx.cutoffs,
            headline_k=ctx.headline_k,
        )
        selected, served = served_columns(sel_lists, sim_lists, a_pos)
        scal = condition_scalars(common, view)
        cols = {
            "anchor_group": anchors.groups,
            "anchor": a_pos,
            "query_id": query_ids,
            "capacity": ctx.capacity * n_req,
            "lookups": n_req,
            **served,
            "n_stale": n_stale,
            "memory_docs": n_docs,
            "decomposition_source": dsource,
            **metrics,
        }
        blocks.append(RowBlock(scal, cols, selected))
    return blocks
