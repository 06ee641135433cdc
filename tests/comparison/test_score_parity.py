"""Parity: ``lens bench score`` against an independent re-implementation of the official HotpotQA script.

The reference below is written from the rules of ``hotpot_evaluate_v1.py`` (Yang et al., 2018) without using
anything from ``harness``; both score the same few hundred synthetic predictions, which cover the rules'
corners (articles, punctuation, case, yes/no/noanswer, repeated tokens, empty answers, missing predictions,
supporting-fact subsets/supersets/duplicates/wrong case).
"""

from __future__ import annotations

import json
import random
import re
import string
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.faces._cli import main

# ---------------------------------------------------------------- reference (official rules, written plainly)


def ref_normalize(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def ref_f1(prediction, ground_truth):
    p, g = ref_normalize(prediction), ref_normalize(ground_truth)
    if p in ["yes", "no", "noanswer"] and p != g:
        return 0, 0, 0
    if g in ["yes", "no", "noanswer"] and p != g:
        return 0, 0, 0
    pt, gt = p.split(), g.split()
    common = Counter(pt) & Counter(gt)
    same = sum(common.values())
    if same == 0:
        return 0, 0, 0
    precision = 1.0 * same / len(pt)
    recall = 1.0 * same / len(gt)
    return (2 * precision * recall) / (precision + recall), precision, recall


def ref_eval(prediction, gold):
    metrics = dict.fromkeys(
        [
            "em",
            "f1",
            "prec",
            "recall",
            "sp_em",
            "sp_f1",
            "sp_prec",
            "sp_recall",
            "joint_em",
            "joint_f1",
            "joint_prec",
            "joint_recall",
        ],
        0.0,
    )
    missing_answer, missing_sp = [], []
    for dp in gold:
        cur_id = dp["_id"]
        can_eval_joint = True
        if cur_id not in prediction["answer"]:
            missing_answer.append(cur_id)
            can_eval_joint = False
        else:
            em = ref_normalize(prediction["answer"][cur_id]) == ref_normalize(dp["answer"])
            f1, prec, recall = ref_f1(prediction["answer"][cur_id], dp["answer"])
            metrics["em"] += em
            metrics["f1"] += f1
            metrics["prec"] += prec
            metrics["recall"] += recall
        if cur_id not in prediction["sp"]:
            missing_sp.append(cur_id)
            can_eval_joint = False
        else:
            cur = set(map(tuple, prediction["sp"][cur_id]))
            ref = set(map(tuple, dp["supporting_facts"]))
            tp = sum(1 for e in cur if e in ref)
            fp = sum(1 for e in cur if e not in ref)
            fn = sum(1 for e in ref if e not in cur)
            sp_prec = 1.0 * tp / (tp + fp) if tp + fp > 0 else 0.0
            sp_recall = 1.0 * tp / (tp + fn) if tp + fn > 0 else 0.0
            sp_f1 = 2 * sp_prec * sp_recall / (sp_prec + sp_recall) if sp_prec + sp_recall > 0 else 0.0
            sp_em = 1.0 if fp + fn == 0 else 0.0
            metrics["sp_em"] += sp_em
            metrics["sp_f1"] += sp_f1
            metrics["sp_prec"] += sp_prec
            metrics["sp_recall"] += sp_recall
        if can_eval_joint:
            joint_prec = prec * sp_prec
            joint_recall = recall * sp_recall
            joint_f1 = (
                2 * joint_prec * joint_recall / (joint_prec + joint_recall) if joint_prec + joint_recall > 0 else 0.0
            )
            metrics["joint_em"] += em * sp_em
            metrics["joint_f1"] += joint_f1
            metrics["joint_prec"] += joint_prec
            metrics["joint_recall"] += joint_recall
    for k in metrics:
        metrics[k] /= len(gold)
    return metrics, missing_answer, missing_sp


# ---------------------------------------------------------------- synthetic gold and predictions

ANSWERS = [
    "yes",
    "no",
    "Animorphs",
    "The Beatles",
    "an American actor",
    "1912–2005",
    "3",
    "March 5, 1994",
    "Barack Obama",
    "New York City",
    "the Eiffel Tower",
    "U.S.",
    "Dr. Strange",
    "A",
    "Chief of Protocol",
    "Guns N' Roses",
    "Ruth Bader Ginsburg",
    "over 100 films",
    "São Paulo",
    "2,000 yards",
    "the",
    "Kraftwerk",
    "Bora Bora",
    "New York, New York",
    "Walla Walla, Washington",
    "Sing Sing Correctional Facility",
]


def _perturb_answer(rng: random.Random, gold: str) -> str:
    choice = rng.randrange(16)
    words = gold.split()
    if choice == 0:
        return gold
    if choice == 1:
        return gold.upper()
    if choice == 2:
        return "The " + gold + "."
    if choice == 3:
        return gold + " " + rng.choice(["band", "film", "of the", "yes", "city", gold.split()[0]])
    if choice == 4:
        return " ".join(words[:-1]) if len(words) > 1 else gold[:-1]
    if choice == 5:
        return rng.choice(["yes", "no", "Yes.", "NO", "noanswer"])
    if choice == 6:
        return ""
    if choice == 7:
        return " ".join(words + words)  # repeated tokens: multiset overlap
    if choice == 8:
        return rng.choice(ANSWERS)
    if choice == 9:
        return "".join(ch + rng.choice(["", "!", ",", "-"]) for ch in gold)
    if choice == 10:
        return "yes " + gold
    if choice == 11:
        return "  ".join(reversed(words))
    if choice == 12:
        return gold.replace(" ", "-")
    if choice == 13:
        return "a " + gold + " an"
    if choice == 14:
        return "noanswer " + gold
    return " ".join(rng.sample(words, len(words)))


def _perturb_sp(rng: random.Random, gold: list, titles: list[str]) -> list:
    choice = rng.randrange(9)
    if choice == 0:
        return [list(x) for x in gold]
    if choice == 1:
        return [list(x) for x in gold[: max(0, len(gold) - 1)]]
    if choice == 2:
        return [list(x) for x in gold] + [[rng.choice(titles), rng.randrange(5)]]
    if choice == 3:
        return [[t, i + 1] for t, i in gold]
    if choice == 4:
        return [[t.lower(), i] for t, i in gold]  # official titles compare exactly
    if choice == 5:
        return [list(x) for x in gold] + [list(gold[0])]  # duplicates count once
    if choice == 6:
        return []
    if choice == 7:
        return [[rng.choice(titles), rng.randrange(4)] for _ in range(rng.randrange(1, 5))]
    return [list(x) for x in reversed(gold)]


def synthetic(n: int, seed: int) -> tuple[list[dict], dict]:
    rng = random.Random(seed)
    gold, pred = [], {"answer": {}, "sp": {}}
    titles = [f"Article {k}" for k in range(30)]
    for i in range(n):
        qid = f"{seed}-{i:04d}"
        ans = rng.choice(ANSWERS)
        a, b = rng.sample(titles, 2)
        facts = [[a, 0], [b, rng.randrange(3)]] + ([[a, 1]] if rng.random() < 0.4 else [])
        gold.append(
            {
                "_id": qid,
                "question": "?",
                "answer": ans,
                "type": rng.choice(["bridge", "comparison"]),
                "level": "hard",
                "supporting_facts": facts,
                "context": [[a, ["s0", "s1"]], [b, ["s0", "s1", "s2"]]],
            }
        )
        if rng.random() > 0.05:
            pred["answer"][qid] = _perturb_answer(rng, ans)
        if rng.random() > 0.05:
            pred["sp"][qid] = _perturb_sp(rng, facts, titles)
    pred["answer"]["not-a-gold-id"] = "ignored"
    return gold, pred


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lens_bench_score_matches_the_official_rules(tmp_path, capsys, seed):
    gold, pred = synthetic(300, seed)
    gold_path, pred_path = tmp_path / "gold.json", tmp_path / "pred.json"
    gold_path.write_text(json.dumps(gold))
    pred_path.write_text(json.dumps(pred))
    assert main(["bench", "score", "--gold", str(gold_path), "--pred", str(pred_path), "--json"]) == 0
    ours = json.loads(capsys.readouterr().out)
    expected, missing_answer, missing_sp = ref_eval(pred, gold)
    assert set(ours["metrics"]) == set(expected)
    for key, value in expected.items():
        assert ours["metrics"][key] == pytest.approx(value, abs=1e-12), key
    assert ours["missing_answer"] == missing_answer and ours["missing_sp"] == missing_sp
    assert ours["extra_predictions"] == ["not-a-gold-id"]
    # the synthetic set really exercises the rules: not everything right, not everything wrong
    assert 0.1 < expected["em"] < 0.9 and 0.1 < expected["sp_em"] < 0.9 and missing_answer and missing_sp


@settings(max_examples=300, deadline=None)
@given(pred=st.text(max_size=30), gold=st.text(max_size=30))
def test_answer_metrics_match_the_reference_on_arbitrary_text(pred, gold):
    from harness.bench.metrics import answer_f1, exact_match, normalize_answer

    assert normalize_answer(pred) == ref_normalize(pred)
    assert exact_match(pred, gold) == (ref_normalize(pred) == ref_normalize(gold))
    assert answer_f1(pred, gold) == pytest.approx(ref_f1(pred, gold))
