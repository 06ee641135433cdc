"""Where FinanceBench's evidence pages are lost: the prior's ranking of the page units, and, for a run's LENS
rows, whether a gold page was among the loop's candidates and whether it was cited.

    python benchmarks/financebench_prior.py --data ../shared/data/financebench [--run RUN_DIR] [--out FILE.json]

No LLM. For every question, the prior (deep preset) scores the filings' page units — ``lens.reader`` reads the
PDFs exactly as ``lens ask`` does — twice: with the question's own cues (its capitalised spans and content terms,
as ``benchmarks/prior_recall.py`` and the scale curve do), and as the lexical-only prior (BM25 over the same
units). Reported per ranking: a gold page in the top 1 / 4 / 10 / 20 / 50 (page hit), the gold filing ranked
first, and the share of the top 10 from the gold filing. With ``--run`` (a ``lens bench financebench`` run
folder), each LENS row's own candidates (the prior's merged ranking with the decomposition's cues, the row's
``stages``) are read too: a gold page among them, at which rank, and whether the row cited one — so a miss is
placed at the prior (never a candidate) or at the loop and answer (a candidate, not cited).

Gold labels are read only to score; nothing here changes a setting.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from harness.bench.datasets import DataError
from harness.bench.financebench import filing_of, load_financebench
from lens import load_config
from lens.parts import CorpusView, Prior, capitalised_spans, content_terms, survey_corpus

TOPS = (1, 4, 10, 20, 50)


def _cues(question: str) -> list[str]:
    return list(dict.fromkeys(capitalised_spans(question) + content_terms(question)))


def _summary(ranks: list[int | None], first_filing: list[bool], share: list[float]) -> dict:
    n = len(ranks)
    out = {f"hit@{k}": sum(1 for r in ranks if r is not None and r < k) / n for k in TOPS}
    out["filing@1"] = sum(first_filing) / n
    out["filing share of top 10"] = statistics.fmean(share)
    out["n"] = n
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="FinanceBench folder (questions.jsonl, pdfs/)")
    ap.add_argument("--run", help="a lens bench financebench run folder: its LENS rows' candidates and citations")
    ap.add_argument("--out", help="write the per-question table and the summary as JSON here")
    args = ap.parse_args(argv)
    try:
        questions, _, pdfs = load_financebench(args.data)
    except DataError as exc:
        raise SystemExit(f"financebench_prior: {exc}") from None
    if args.run and not (Path(args.run) / "rows.jsonl").is_file():
        raise SystemExit(f"financebench_prior: {args.run}: no rows.jsonl (a lens bench financebench run folder)")
    cfg = load_config("deep", env={})
    t0 = time.perf_counter()
    scan = survey_corpus(pdfs, cfg.reader)
    view = CorpusView.of(scan)
    survey_s = time.perf_counter() - t0
    # each unit's (filing, 1-based page), by its index and by its id: its location (u<k> counts units, and a page
    # without text has none); each document read once
    page_of: dict[int, tuple[str, int]] = {}
    page_by_id: dict[str, tuple[str, int]] = {}
    for i, d in enumerate(view.docs):
        if d.location:
            page_of[i] = page_by_id[d.doc_id] = (filing_of(d.doc_id), int(d.location["page"]))
    known = set(page_by_id.values())
    arms = {"prior": Prior(view, cfg.prior), "lexical": Prior(view, cfg.prior, lexical_only=True)}
    per_q: list[dict] = []
    stats: dict[str, tuple[list, list, list]] = {a: ([], [], []) for a in arms}
    for q in questions:
        gold = set(q.gold_pages)
        row: dict = {"id": q.id, "filing": q.doc_name, "gold": sorted(gold)}
        for name, prior in arms.items():
            ranked = [c.index for c in prior.score(q.question, _cues(q.question), limit=max(TOPS))]
            pages = [page_of.get(i) for i in ranked]
            rank = next((r for r, p in enumerate(pages) if p in gold), None)
            first = bool(pages) and pages[0] is not None and pages[0][0] == q.doc_name
            share = sum(1 for p in pages[:10] if p and p[0] == q.doc_name) / 10
            ranks, firsts, shares = stats[name]
            ranks.append(rank)
            firsts.append(first)
            shares.append(share)
            row[name] = {"gold rank": rank, "filing first": first, "top": [list(p) if p else None for p in pages[:4]]}
        row["gold pages with text"] = sum(1 for g in gold if g in known)
        per_q.append(row)
    summary = {name: _summary(*stats[name]) for name in arms}
    summary["survey seconds"] = round(survey_s, 2)
    summary["units"] = len(view.docs)
    if args.run:
        summary["run"] = _run_rows(Path(args.run), {q.id: q for q in questions}, per_q, page_by_id)
    print(json.dumps(summary, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "questions": per_q}, indent=1) + "\n")
    return 0


def _run_rows(run: Path, questions: dict, per_q: list[dict], page_by_id: dict) -> dict:
    """For each LENS row of a run: a gold page among its candidates (and where), and among what it cited."""
    by_id = {r["id"]: r for r in per_q}
    rows = [json.loads(x) for x in (run / "rows.jsonl").read_text().splitlines() if x.strip()]
    lens_rows = [r for r in rows if r.get("system") == "lens"]
    cand_ranks: list[int | None] = []
    cited_hits = 0
    for r in lens_rows:
        q = questions[r["question_id"]]
        gold = set(q.gold_pages)
        details = r["prediction"].get("details") or {}
        cands = next((s.get("candidates") for s in details.get("stages", []) if "candidates" in s), []) or []
        pages = [page_by_id.get(c) for c in cands]
        rank = next((i for i, p in enumerate(pages) if p in gold), None)
        cand_ranks.append(rank)
        hit = (r.get("scores") or {}).get("page_hit") or 0
        cited_hits += bool(hit)
        by_id[q.id]["lens row"] = {
            "candidates": len(cands),
            "gold candidate rank": rank,
            "cited a gold page": bool(hit),
        }
    n = len(lens_rows)
    if not n:
        return {"lens rows": 0}
    among = sum(1 for x in cand_ranks if x is not None)
    return {
        "lens rows": n,
        "a gold page among the candidates": among / n,
        "gold candidate rank (median, where one is)": statistics.median([x for x in cand_ranks if x is not None])
        if among
        else None,
        "cited a gold page": cited_hits / n,
        "a candidate, not cited": sum(
            1 for r, x in zip(lens_rows, cand_ranks) if x is not None and not (r.get("scores") or {}).get("page_hit")
        )
        / n,
    }


if __name__ == "__main__":
    sys.exit(main())
