"""Choosing the reading gate on the calibration questions (issue 59): full LENS at a few values of
``loop.min_reading_value`` against its no-exploration ablation, paired, on distractor questions outside every
evaluation sample.

    python benchmarks/loop_gate.py --questions ../shared/data/hotpotqa/hotpot_dev_distractor.json \\
        --articles ../shared/data/hotpotqa/wiki_articles.jsonl \\
        --ids benchmarks/results/calibration/distractor-calibration-ids.txt --work /tmp/loop-gate \\
        --base-url http://127.0.0.1:8090/v1 --model qwen2.5-coder-1.5b-instruct \\
        --arms ablation,gate=0,gate=0.1,gate=0.2 --limit 40 --out benchmarks/results/loop-gate/rows.jsonl
    python benchmarks/loop_gate.py --summary benchmarks/results/loop-gate/rows.jsonl

The folder is the whole article pool, one file per article (title line, then one sentence per line), built once
under ``--work``. Every question is asked by every arm before the next question (a stopped run stays paired);
rows are appended as they finish and a rerun skips the (question, arm) pairs it has. Deep preset, response cache
off. A row: the arm, the answer and its EM/F1, the titles cited and their evidence recall of the gold
supporting titles, tokens, oracle calls, readings made, the stop reason. Only calibration questions: the
evaluation questions (G500, F150) are never asked here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from harness.bench.metrics import answer_scores, evidence_recall, mcnemar_exact
from harness.bench.snapshots import render_article, safe_file_name
from lens import Agent, load_config


def build_pool(articles: Path, root: Path) -> Path:
    """The article pool as a folder, one file per article (built once)."""
    folder = root / "pool"
    if (root / "pool.done").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for line in articles.open(encoding="utf-8"):
        a = json.loads(line)
        name = safe_file_name(a["title"])
        while name in seen:
            name += "_"
        seen.add(name)
        (folder / name).write_text(render_article(a["title"], a["sentences"]), encoding="utf-8")
    (root / "pool.done").write_text(str(len(seen)))
    return folder


def arm_config(arm: str, base_url: str, model: str):
    over = {"llm": {"base_url": base_url, "model": model, "cache": False}}
    if arm == "ablation":
        over["ablation"] = {"no_exploration": True}
    else:
        over["loop"] = {"min_reading_value": float(arm.split("=", 1)[1])}
    return load_config("deep", overrides=over)


def row_of(q: dict, arm: str, result, seconds: float) -> dict:
    gold_titles = sorted({t for t, _ in q["supporting_facts"]})
    cited = list(dict.fromkeys(e.title for e in result.evidence))
    scores = answer_scores(result.answer or "", q["answer"])
    return {
        "id": q["_id"],
        "arm": arm,
        "type": q.get("type"),
        "answer": result.answer,
        "gold": q["answer"],
        "em": scores.em,
        "f1": round(scores.f1, 4),
        "cited": cited,
        "ev_rec": evidence_recall(gold_titles, cited),
        "tokens": result.cost.tokens,
        "oracle_calls": result.cost.oracle_calls,
        "readings": sum(len(t.observation.get("readings", [])) for t in result.trace),
        "stop": result.stop_reason,
        "seconds": round(seconds, 2),
    }


def run(args: argparse.Namespace) -> None:
    questions = {q["_id"]: q for q in json.load(open(args.questions, encoding="utf-8"))}
    ids = [i.strip() for i in open(args.ids, encoding="utf-8") if i.strip()][args.offset :][: args.limit]
    folder = build_pool(Path(args.articles), Path(args.work))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {(r["id"], r["arm"]) for r in map(json.loads, out.open())} if out.exists() else set()
    arms = args.arms.split(",")
    agents = {arm: Agent(arm_config(arm, args.base_url, args.model)) for arm in arms}
    for n, qid in enumerate(ids, 1):
        for arm in arms:
            if (qid, arm) in done:
                continue
            t0 = time.monotonic()
            result = agents[arm].ask(questions[qid]["question"], folder, record=False)
            row = row_of(questions[qid], arm, result, time.monotonic() - t0)
            with out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(f"{n}/{len(ids)} {arm}: em {row['em']} ev {row['ev_rec']} {row['tokens']} tok", flush=True)


def summary(path: Path) -> None:
    rows = [json.loads(x) for x in path.open()]
    by: dict[str, dict[str, dict]] = {}
    for r in rows:
        by.setdefault(r["arm"], {})[r["id"]] = r
    base = by.get("ablation", {})
    print("| arm | n | EM | Ev.Rec | tokens/q | readings/q | vs ablation EM (won:lost, McNemar p) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for arm, got in by.items():
        ids = sorted(set(got) & set(base)) if arm != "ablation" else sorted(got)
        n = len(ids)
        em = 100 * sum(got[i]["em"] for i in ids) / max(n, 1)
        ev = 100 * sum(got[i]["ev_rec"] for i in ids) / max(n, 1)
        tok = sum(got[i]["tokens"] for i in ids) / max(n, 1)
        rd = sum(got[i]["readings"] for i in ids) / max(n, 1)
        vs = ""
        if arm != "ablation" and n:
            m = mcnemar_exact({i: bool(got[i]["em"]) for i in ids}, {i: bool(base[i]["em"]) for i in ids})
            vs = f"{m.b}:{m.c}, p = {m.p_value:.2f}"
        print(f"| {arm} | {n} | {em:.1f} | {ev:.1f} | {tok:,.0f} | {rd:.2f} | {vs} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions")
    ap.add_argument("--articles")
    ap.add_argument("--ids")
    ap.add_argument("--work", default="/tmp/loop-gate")
    ap.add_argument("--base-url")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    ap.add_argument("--arms", default="ablation,gate=0,gate=0.1,gate=0.2")
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--out")
    ap.add_argument("--summary")
    args = ap.parse_args(argv)
    if args.summary:
        summary(Path(args.summary))
    else:
        run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
