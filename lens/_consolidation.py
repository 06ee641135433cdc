"""Consolidation: from per-requirement beliefs to one compact, source-grounded evidence set E*.

1. Every requirement, in hop order, whose favoured window a reading confirmed contributes that window, cited by
   the sentence the reading named (its line and the sha256 of its text) — "confirmed" when the requirement
   certified, "found" when it did not; synthesis reads those sentences first.
2. Documents are then admitted by evidence weight: first those holding such spans, then the rest by
   Σ_j P_j(document) — the expected number of requirements a document serves under the posterior (which, with no
   observation, is the prior). At most ``max_docs`` documents are kept. A document without a certified span
   contributes its most probable window, marked "candidate".
3. Regions of one document that overlap or touch are merged; each keeps the requirements it supports and the
   sha256 of the content read. The order is certified first, then by weight.
"""

from __future__ import annotations

from lens._beliefs import ELSEWHERE
from lens._loop import LoopState
from lens._result import Evidence, sha256_text

__all__ = ["consolidate"]


def consolidate(
    state: LoopState,
    doc_weight: dict[int, float],
    *,
    certified: set[str],
    max_docs: int,
    token_cap: int = 3000,
) -> list[Evidence]:
    regions: dict[int, list[list]] = {}  # doc index -> [[first, last, {req ids}, status, named sentence]]
    order: list[int] = []

    def add(doc_idx: int, first: int, last: int, reqs: set[str], status: str, named: int | None = None) -> None:
        if doc_idx not in regions:
            regions[doc_idx] = []
            order.append(doc_idx)
        regions[doc_idx].append([first, last, set(reqs), status, named])

    for req in state.requirements:
        belief = state.beliefs[req.id]
        fav = belief.favoured()
        if fav is None or (req.id not in certified and fav not in belief.confirmed):
            continue
        win = state.windows[fav]
        named = [f.sentence for f in state.findings.get(req.id, []) if f.window_key == fav and f.sentence is not None]
        status = "confirmed" if req.id in certified else "found"
        add(win.doc_index, win.first, win.last, {req.id}, status, named[-1] if named else None)

    ranked = sorted(doc_weight.items(), key=lambda kv: (-kv[1], kv[0]))
    for doc_idx, _ in ranked:
        if len(order) >= max_docs:
            break
        if doc_idx in regions:
            continue
        # the document's most probable window, and the requirements that favour it
        best_key, best_p, reqs = None, -1.0, set()
        for rid, belief in state.beliefs.items():
            for key, p in belief.posterior().items():
                if key == ELSEWHERE or state.windows[key].doc_index != doc_idx:
                    continue
                if p > best_p:
                    best_key, best_p = key, p
        if best_key is None:
            continue
        for rid, belief in state.beliefs.items():
            post = belief.posterior()
            if post.get(best_key, 0.0) >= 0.05:
                reqs.add(rid)
        w = state.windows[best_key]
        add(doc_idx, w.first, w.last, reqs, "candidate")

    evidence: list[Evidence] = []
    used_tokens = 0
    for doc_idx in order[:max_docs]:
        doc = state.view.docs[doc_idx]
        merged: list[list] = []
        for first, last, reqs, status, named in sorted(regions[doc_idx], key=lambda r: (r[0], r[1])):
            if merged and first <= merged[-1][1] + 1:
                m = merged[-1]
                m[1] = max(m[1], last)
                m[2] |= reqs
                m[3] = next(st for st in ("confirmed", "found", "candidate") if st in (m[3], status))
                m[4] = m[4] if m[4] is not None else named
            else:
                merged.append([first, last, set(reqs), status, named])
        for first, last, reqs, status, named in merged:
            sents = doc.sentences[first : last + 1]
            text = " ".join(s.text for s in sents)
            cost = len(text) // 4
            if evidence and used_tokens + cost > token_cap:
                continue
            used_tokens += cost
            evidence.append(
                Evidence(
                    id=f"E{len(evidence) + 1}",
                    path=doc.path,
                    doc_id=doc.doc_id,
                    title=doc.title,
                    first_sentence=first,
                    last_sentence=last,
                    line_start=sents[0].line_start,
                    line_end=sents[-1].line_end,
                    text=text,
                    sha256=doc.sha256,
                    requirements=tuple(sorted(reqs)),
                    status=status,
                    sentence=named,
                    sentence_text=None if named is None else doc.sentences[named].text,
                    sentence_lines=None
                    if named is None
                    else (doc.sentences[named].line_start, doc.sentences[named].line_end),
                    sentence_sha256=None if named is None else sha256_text(doc.sentences[named].text),
                )
            )
    return evidence
