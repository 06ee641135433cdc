"""Gold-article recall of the no-LLM prior (Layer 1) at top 2/4/6/10, and its time per question.

Usage: python benchmarks/prior_recall.py FOLDER QUESTIONS.json [--limit N] [--exclude-ids OTHER.json]
       [--lexical-only] [--set prior.key=value ...]

FOLDER holds one raw file per article (title line first), e.g. built from wiki_articles.jsonl. The question
text is the only cue (no LLM decomposition), so this measures the prior alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from lens import load_config
from lens.parts import CorpusView, Prior, scan_corpus, title_key


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("questions")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--exclude-ids", help="JSON file whose question ids are skipped (e.g. evaluation questions)")
    ap.add_argument("--lexical-only", action="store_true")
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    cfg = load_config("deep", overrides=args.set)
    questions = json.load(open(args.questions))
    if args.exclude_ids:
        skip = {q["_id"] for q in json.load(open(args.exclude_ids))}
        questions = [q for q in questions if q["_id"] not in skip]
    t0 = time.perf_counter()
    scan = scan_corpus(args.folder, cfg.reader)
    view = CorpusView(scan)
    setup = time.perf_counter() - t0
    keyset = {title_key(d.title) for d in view.docs}
    ks = (2, 4, 6, 10)
    hits = {k: 0 for k in ks}
    total = 0
    used = 0
    times = []
    prior = Prior(view, cfg.prior, lexical_only=args.lexical_only)
    for q in questions:
        gold = {title_key(t) for t, _ in q["supporting_facts"]}
        if not gold <= keyset:
            continue
        if args.limit and used >= args.limit:
            break
        used += 1
        t = time.perf_counter()
        ranked = prior.score(q["question"], limit=10)
        times.append(time.perf_counter() - t)
        titles = [title_key(view.docs[c.index].title) for c in ranked]
        for k in ks:
            hits[k] += len(gold & set(titles[:k]))
        total += len(gold)
    print(f"questions {used}  gold articles {total}  docs {len(view)}  scan+view {setup:.2f}s")
    print("recall " + "  ".join(f"@{k} {100 * hits[k] / max(total, 1):.1f}%" for k in ks))
    print(f"prior seconds/question: median {statistics.median(times):.4f}  mean {statistics.mean(times):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
