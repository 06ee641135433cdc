"""Consolidation: from per-requirement beliefs to one compact, source-grounded evidence set E*
(``docs/pipeline.md`` § Consolidation).
"""

from __future__ import annotations

from dataclasses import dataclass

from lens._files import sha256_hex
from lens._result import Evidence
from lens.loop._beliefs import ELSEWHERE
from lens.loop._loop import LoopState

__all__ = ["consolidate"]


@dataclass
class _Region:
    """Sentences ``first``..``last`` of one document, the requirements they serve, their status and the sentence a
    reading named."""

    first: int
    last: int
    reqs: set[str]
    status: str
    named: int | None = None


def consolidate(
    state: LoopState,
    doc_weight: dict[int, float],
    *,
    certified: set[str],
    max_docs: int,
    token_cap: int = 3000,
) -> list[Evidence]:
    regions: dict[int, list[_Region]] = {}  # doc index -> its regions, documents in the order they were admitted
    for doc_idx, region in _read_spans(state, certified):
        regions.setdefault(doc_idx, []).append(region)
    for doc_idx, _ in sorted(doc_weight.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(regions) >= max_docs:
            break
        if doc_idx not in regions and (best := _best_window(state, doc_idx)) is not None:
            regions[doc_idx] = [best]
    evidence: list[Evidence] = []
    used_tokens = 0
    for doc_idx in list(regions)[:max_docs]:
        doc = state.view.docs[doc_idx]
        for region in _merged(regions[doc_idx]):
            sents = doc.sentences[region.first : region.last + 1]
            text = " ".join(s.text for s in sents)
            cost = len(text) // 4
            if evidence and used_tokens + cost > token_cap:
                continue
            used_tokens += cost
            evidence.append(_evidence(f"E{len(evidence) + 1}", doc, region, text))
    return evidence


def _read_spans(state: LoopState, certified: set[str]) -> list[tuple[int, _Region]]:
    """Per requirement in hop order, its favoured window when a reading confirmed it or it certified."""
    out = []
    for req in state.requirements:
        belief = state.beliefs[req.id]
        fav = belief.favoured()
        if fav is None or (req.id not in certified and fav not in belief.confirmed):
            continue
        win = state.windows[fav]
        named = [f.sentence for f in state.findings.get(req.id, []) if f.window_key == fav and f.sentence is not None]
        status = "confirmed" if req.id in certified else "found"
        out.append((win.doc_index, _Region(win.first, win.last, {req.id}, status, named[-1] if named else None)))
    return out


def _best_window(state: LoopState, doc_idx: int) -> _Region | None:
    """The document's most probable window, with the requirements that favour it; None if it has none."""
    best_key, best_p = None, -1.0
    for belief in state.beliefs.values():
        for key, p in belief.posterior().items():
            if key == ELSEWHERE or state.windows[key].doc_index != doc_idx:
                continue
            if p > best_p:
                best_key, best_p = key, p
    if best_key is None:
        return None
    reqs = {rid for rid, belief in state.beliefs.items() if belief.posterior().get(best_key, 0.0) >= 0.05}
    w = state.windows[best_key]
    return _Region(w.first, w.last, reqs, "candidate")


def _merged(regions: list[_Region]) -> list[_Region]:
    """Regions that overlap or touch, merged: the union of their requirements, the strongest status."""
    merged: list[_Region] = []
    for r in sorted(regions, key=lambda r: (r.first, r.last)):
        if merged and r.first <= merged[-1].last + 1:
            m = merged[-1]
            m.last = max(m.last, r.last)
            m.reqs |= r.reqs
            m.status = next(st for st in ("confirmed", "found", "candidate") if st in (m.status, r.status))
            m.named = m.named if m.named is not None else r.named
        else:
            merged.append(_Region(r.first, r.last, set(r.reqs), r.status, r.named))
    return merged


def _evidence(eid: str, doc, region: _Region, text: str) -> Evidence:
    sents = doc.sentences[region.first : region.last + 1]
    named = None if region.named is None else doc.sentences[region.named]
    return Evidence(
        id=eid,
        path=doc.path,
        doc_id=doc.doc_id,
        title=doc.title,
        first_sentence=region.first,
        last_sentence=region.last,
        line_start=sents[0].line_start,
        line_end=sents[-1].line_end,
        text=text,
        sha256=doc.sha256,
        requirements=tuple(sorted(region.reqs)),
        status=region.status,
        sentence=region.named,
        sentence_text=None if named is None else named.text,
        sentence_lines=None if named is None else (named.line_start, named.line_end),
        sentence_sha256=None if named is None else sha256_hex(named.text),
        location=(named or sents[0]).where,
    )
