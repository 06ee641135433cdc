"""Calibration of the oracle's reliability: how often a *verified* relevance claim is right.

The loop's likelihoods need, per model, P(verified positive | window from a gold article) (tpr) and
P(verified positive | window from any other article) (fpr). This command measures them with the loop's own
machinery on labelled HotpotQA questions: the question is decomposed, the prior ranks the article pool (no
LLM), the top ``--candidates`` windows are observed in batches with the production observation prompt, every
claim is verified against the text, and each observed window is labelled by whether its article is a gold
supporting article of the question. Labels are used only here, to count; they never reach the calls.

Rates are doc-level (the data says which articles are gold, not which requirement each serves) and smoothed
with a Beta(1, 1) prior. Calibrate on questions you will not evaluate on (``--offset``, ``--exclude``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

__all__ = ["calibrate", "calibrate_command"]


def _pool_view(articles_path: str):
    """A CorpusView over the article pool, one document per article (title line, one sentence per line)."""
    from lens._corpus import CorpusScan, Document
    from lens._view import CorpusView

    docs = []
    with open(articles_path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                a = json.loads(line)
                title = a["title"]
                sents = a.get("sentences") or a.get("text")
            except (json.JSONDecodeError, KeyError) as exc:
                from lens._errors import LensError

                raise LensError(f"{articles_path}: line {n}: not an article record ({exc})") from None
            if isinstance(sents, str):
                sents = [sents]
            text = title + "\n" + "\n".join(s.strip() for s in sents)
            docs.append(
                Document(
                    doc_id=title,
                    path=title,
                    title=title,
                    text=text,
                    sha256=hashlib.sha256(text.encode()).hexdigest(),
                )
            )
    return CorpusView(CorpusScan(root=Path(articles_path), documents=docs, files=len(docs)))


def calibrate(config, questions: list[dict], articles_path: str, *, candidates: int = 8, progress=None) -> dict:
    """Measure tpr/fpr of verified observations; returns the calibration record."""
    from lens._agent import Agent
    from lens._cost import CostMeter
    from lens._llm import LLMError
    from lens._observation import observe
    from lens._prior import Prior
    from lens._requirements import decompose
    from lens._terms import content_terms, title_key
    from lens._windows import windows_for

    view = _pool_view(articles_path)
    prior = Prior(view, config.prior)
    agent = Agent(config)
    client = agent.client
    meter = CostMeter()

    def call(messages, schema, max_tokens):
        try:
            return client.chat_json(messages, schema, max_tokens=max_tokens, meter=meter).parsed
        except LLMError:
            return None

    tp = fn = fp = tn = 0
    per_question = []
    t0 = time.monotonic()
    for qi, q in enumerate(questions):
        question = q["question"]
        gold = {title_key(t) for t, _ in q["supporting_facts"]}
        dec = decompose(question, call)  # the agent's decomposition: same prompt, max_tokens and checks
        ready = [r for r in dec.requirements if not r.depends_on]
        cues = [c for r in ready for c in r.cues]
        ranked = prior.score(question, cues, limit=candidates)
        terms = list(dict.fromkeys(t for c in cues + [question] for t in content_terms(c)))
        wins = [
            w
            for c in ranked
            for w in windows_for(view.docs[c.index], c.index, terms, config.prior.window_sentences)[:1]
        ]
        facts = [(r.id, r.resolved_text({})) for r in ready]
        subjects = {r.id: subj for r in ready if (subj := r.subject({}))}  # as the loop checks them
        q_tp = q_fp = q_pos = q_neg = 0
        step = config.loop.windows_per_round
        for i in range(0, len(wins), step):
            batch = wins[i : i + step]
            docs = [view.docs[w.doc_index] for w in batch]
            # the loop's observation: same prompt, max_tokens and verification
            obs = observe(question, facts, batch, docs, call, subjects=subjects)
            if obs is None:
                continue  # an unusable reply is no observation, as in the loop
            positive = {f.window_key for f in obs.findings}
            for w in batch:
                is_gold = title_key(view.docs[w.doc_index].title) in gold
                said = w.key in positive
                if is_gold:
                    q_pos += 1
                    q_tp += said
                else:
                    q_neg += 1
                    q_fp += said
        tp += q_tp
        fn += q_pos - q_tp
        fp += q_fp
        tn += q_neg - q_fp
        per_question.append({"id": q.get("_id"), "gold_windows": q_pos, "tp": q_tp, "other_windows": q_neg, "fp": q_fp})
        if progress:
            progress(qi + 1, len(questions), tp, fn, fp, tn)
    tpr = (tp + 1) / (tp + fn + 2)
    fpr = (fp + 1) / (fp + tn + 2)
    cost = meter.cost.to_dict()
    return {
        "model": client.model,
        "tpr": round(tpr, 4),
        "fpr": round(fpr, 4),
        "n": tp + fn + fp + tn,
        "counts": {"tp": tp, "fn": fn, "fp": fp, "tn": tn},
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        "questions": len(questions),
        "candidates": candidates,
        "config_hash": config.canonical_hash(),
        "seconds": round(time.monotonic() - t0, 1),
        "cost": cost,
        "per_question": per_question,
    }


def calibrate_command(args: argparse.Namespace) -> int:
    from lens._cli import config_from_args
    from lens._errors import LensError

    config = config_from_args(args)
    try:
        data = json.loads(Path(args.questions).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise LensError(f"{args.questions}: cannot read questions ({exc})") from None
    if not isinstance(data, list):
        raise LensError(f"{args.questions}: expected a JSON list of questions")
    skip: set[str] = set()
    for path in args.exclude or []:
        try:
            other = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise LensError(f"{path}: cannot read the --exclude file ({exc})") from None
        skip |= {q["_id"] if isinstance(q, dict) else str(q) for q in other}
    for i, q in enumerate(data):
        for key in ("_id", "question", "supporting_facts"):
            if not isinstance(q, dict) or key not in q:
                raise LensError(f"{args.questions}: record {i}: field {key!r} missing")
    pool_titles = None
    if args.require_gold_in_pool:
        from lens._terms import title_key

        with open(args.articles, encoding="utf-8") as fh:
            pool_titles = {title_key(json.loads(line)["title"]) for line in fh if line.strip()}
    chosen = [q for q in data if q["_id"] not in skip]
    if pool_titles is not None:
        chosen = [q for q in chosen if all(title_key(t) in pool_titles for t, _ in q["supporting_facts"])]
    chosen = chosen[args.offset : args.offset + args.limit]
    if not chosen:
        raise LensError("no questions left to calibrate on after --exclude/--offset/--limit")

    def progress(i, n, tp, fn, fp, tn):
        print(f"\r  {i}/{n} questions  tp {tp} fn {fn} fp {fp} tn {tn}", end="", file=sys.stderr, flush=True)

    record = calibrate(config, chosen, args.articles, candidates=args.candidates, progress=progress)
    print(file=sys.stderr)
    record["questions_file"] = args.questions
    record["question_ids"] = [q["_id"] for q in chosen]
    if args.out:
        from lens._files import atomic_write

        data = (json.dumps(record, indent=2) + "\n").encode("utf-8")
        atomic_write(args.out, lambda fh: fh.write(data))
    if args.json:
        json.dump({k: v for k, v in record.items() if k != "per_question"}, sys.stdout, indent=2)
        print()
    else:
        c = record["counts"]
        print(
            f"model {record['model']}: tpr {record['tpr']}  fpr {record['fpr']}  "
            f"(tp {c['tp']} fn {c['fn']} fp {c['fp']} tn {c['tn']}; precision {record['precision']}, "
            f"recall {record['recall']}; {record['questions']} questions, {record['seconds']} s)"
        )
        print("add to the preset:")
        print(f'[loop.reliability."{record["model"]}"]')
        print(f"tpr = {record['tpr']}\nfpr = {record['fpr']}\nn = {record['n']}")
    return 0
