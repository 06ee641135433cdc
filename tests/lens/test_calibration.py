"""`lens calibrate run` / `fit`: requirement-level labels from supporting sentences, the loop's own readings,
resumable rows, and a graded model whose fit and preset block are checked against known data."""

from __future__ import annotations

import json
import math
import random

import pytest
import respx

from lens._calibration import (
    _read_rows,
    auc,
    calibrate,
    fit_readings,
    hop_articles,
    label_readings,
    logistic_fit,
)
from lens._config import GradedEvidence, load_config

from .conftest import BASE_URL, CHAT_URL, MODEL
from .scripted_oracle import Rule, ScriptedOracle

ARTICLES = {
    "Osk Yard": ["Osk Yard is a boatbuilder in Harrowmouth.", "It was founded in 1887 by Ilse Osk."],
    "Marren Gull": ["The Marren Gull is a ferry.", "She was built by Osk Yard in 1931."],
    "Tally Boatworks": ["Tally Boatworks is a boatbuilder in Dunmere.", "It was founded in 1902."],
    "Dunmere": ["Dunmere is a town with a boatbuilder and a ferry.", "The Marren Gull calls at Dunmere."],
}
QUESTION = {
    "_id": "q1",
    "type": "bridge",
    "answer": "1887",
    "question": "In what year was the boatbuilder that built the ferry Marren Gull founded?",
    "supporting_facts": [["Marren Gull", 1], ["Osk Yard", 1]],
}
REQS = [
    {"id": "R1", "text": "Which boatbuilder built the ferry Marren Gull?", "depends_on": None},
    {"id": "R2", "text": "In what year was #R1 founded?", "depends_on": "R1"},
]


def window(title: str) -> dict:
    return {"title": title, "sentences": {str(i): s for i, s in enumerate(ARTICLES[title])}}


def reading(rid, text, title, found, sentences=(), value=""):
    return {
        "requirement_id": rid,
        "requirement": text,
        "window": f"{title}#w",
        "found": found,
        "sentences": list(sentences),
        "value": value,
    }


def test_hops_are_told_apart_by_which_gold_article_names_the_other():
    hops = hop_articles(QUESTION, ARTICLES)
    assert hops["first"] == ["Marren Gull"] and hops["second"] == ["Osk Yard"]


def test_a_second_hop_article_is_not_a_positive_for_the_first_hop_requirement():
    windows = {f"{t}#w": window(t) for t in ARTICLES}
    rds = [
        # R1 reads Osk Yard's founding sentence: a true sentence, but of the hop R1 did not ask about
        reading("R1", REQS[0]["text"], "Osk Yard", True, [1], "Osk Yard"),
        # R1 misses Osk Yard: not a miss, R1's fact is not there
        reading("R1", REQS[0]["text"], "Osk Yard", False),
        # R1 misses the Marren Gull window: a miss (the window holds R1's supporting sentence)
        reading("R1", REQS[0]["text"], "Marren Gull", False),
        reading("R1", REQS[0]["text"], "Marren Gull", True, [1], "Osk Yard"),
    ]
    label_readings(QUESTION, REQS, rds, windows, ARTICLES)
    assert [r["label"] for r in rds] == [0, 0, 1, 1]


def test_a_verified_quote_of_a_non_supporting_sentence_is_a_negative():
    windows = {f"{t}#w": window(t) for t in ARTICLES}
    rds = [reading("R1", REQS[0]["text"], "Marren Gull", True, [0], "ferry")]  # "The Marren Gull is a ferry."
    label_readings(QUESTION, REQS, rds, windows, ARTICLES)
    assert rds[0]["label"] == 0 and "not in a supporting sentence" in rds[0]["why"]


def test_the_final_requirement_needs_the_gold_answer_as_its_value():
    windows = {f"{t}#w": window(t) for t in ARTICLES}
    asked = "In what year was Osk Yard founded?"
    rds = [
        reading("R2", asked, "Osk Yard", True, [1], "1887"),
        reading("R2", asked, "Osk Yard", True, [1], "1877"),
        reading("R2", asked, "Tally Boatworks", True, [1], "1902"),  # names neither gold title: hop 2 by dependency
    ]
    label_readings(QUESTION, REQS, rds, windows, ARTICLES)
    assert [r["label"] for r in rds] == [1, 0, 0]


def test_the_value_rule_is_not_applied_to_comparisons_or_yes_no():
    q = dict(QUESTION, type="comparison", answer="Osk Yard")
    windows = {f"{t}#w": window(t) for t in ARTICLES}
    rds = [reading("R2", "When was Osk Yard founded?", "Osk Yard", True, [1], "1887")]
    label_readings(q, REQS, rds, windows, ARTICLES)
    assert rds[0]["label"] == 1


# --------------------------------------------------------------------------- the run, through the loop


def pool_file(tmp_path):
    pool = tmp_path / "articles.jsonl"
    pool.write_text(
        "".join(
            json.dumps({"id": str(i), "title": t, "sentences": s}) + "\n" for i, (t, s) in enumerate(ARTICLES.items())
        )
    )
    return pool


def test_run_records_the_loops_readings_with_labels_and_resumes(tmp_path):
    oracle = ScriptedOracle(
        decompositions={
            QUESTION["question"]: {
                "questions": ["Which boatbuilder built the ferry Marren Gull?", "In what year was #1 founded?"]
            }
        },
        rules=[
            Rule("boatbuilder built", "built by Osk Yard", "She was built by Osk Yard in 1931.", "Osk Yard"),
            Rule("boatbuilder built", "calls at Dunmere", "The Marren Gull calls at Dunmere.", "Dunmere"),
            Rule("year was Osk Yard founded", "founded in 1887", "It was founded in 1887 by Ilse Osk.", "1887"),
        ],
    )
    cfg = load_config(
        "deep",
        overrides={
            "llm": {"base_url": BASE_URL, "model": MODEL, "cache": False, "max_retries": 0},
            "loop": {"windows_per_round": 2},
            "prior": {"candidates": 4},
        },
    )
    out = tmp_path / "cal"
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=oracle.reply)
        assert calibrate(cfg, [QUESTION], str(pool_file(tmp_path)), str(out), rounds=3) == 1
        calls = len(oracle.calls)
        assert calibrate(cfg, [QUESTION], str(pool_file(tmp_path)), str(out), rounds=3) == 0  # resumed: done
    assert len(oracle.calls) == calls
    rows = _read_rows([str(out)])
    assert len(rows) == 1 and rows[0]["observation_model"] == "single-rate"  # the test model has no graded fit
    rds = rows[0]["readings"]
    by = {(r["requirement_id"], rows[0]["windows"][r["window"]], r["found"]): r["label"] for r in rds}
    assert by[("R1", "Marren Gull", True)] == 1  # the built-by sentence
    assert ("R2", "Osk Yard", True) in by and by[("R2", "Osk Yard", True)] == 1  # bridged, value 1887
    assert all(r["requirement_id"] in {"R1", "R2"} for r in rds)
    assert oracle.calls.count("observation") == rows[0]["rounds"] <= 3
    # every observation asked for log-probabilities (the scripted endpoint returns none: clean fallback)
    assert all(b.get("logprobs") for b, k in zip(oracle.requests, oracle.calls) if k == "observation")
    assert not any(r["logprobs"] for r in rds)


def test_a_sensor_calibrated_as_too_weak_to_certify_is_still_read(tmp_path):
    # the agent would stop "futile" at once with these rates (|log LR| ≤ 0.02); calibration must measure anyway
    oracle = ScriptedOracle(
        decompositions={QUESTION["question"]: {"questions": ["Which boatbuilder built the ferry Marren Gull?"]}},
        rules=[Rule("boatbuilder built", "built by Osk Yard", "She was built by Osk Yard in 1931.", "Osk Yard")],
    )
    cfg = load_config(
        "deep",
        overrides={
            "llm": {"base_url": BASE_URL, "model": MODEL, "cache": False, "max_retries": 0},
            "loop": {"windows_per_round": 2, "reliability": {MODEL: {"tpr": 0.5, "fpr": 0.49}}},
            "prior": {"candidates": 4},
        },
    )
    out = tmp_path / "cal"
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=oracle.reply)
        assert calibrate(cfg, [QUESTION], str(pool_file(tmp_path)), str(out), rounds=2) == 1
    row = _read_rows([str(out)])[0]
    assert row["stop"] != "futile" and row["rounds"] >= 1
    assert row["readings"] and oracle.calls.count("observation") == row["rounds"]


def test_a_torn_last_row_is_skipped_and_the_question_rerun(tmp_path):
    out = tmp_path / "cal"
    out.mkdir()
    good = {"id": "a", "readings": [], "observation_model": "graded"}
    (out / "readings.jsonl").write_text(json.dumps(good) + "\n" + '{"id": "b", "read')
    assert [r["id"] for r in _read_rows([str(out)])] == ["a"]
    from lens._files import append_lines

    append_lines(out / "readings.jsonl", [json.dumps(dict(good, id="b"))])
    assert [r["id"] for r in _read_rows([str(out)])] == ["a", "b"]


# --------------------------------------------------------------------------- the fit


def test_logistic_fit_recovers_known_coefficients():
    rng = random.Random(0)
    X, y = [], []
    for _ in range(4000):
        a, b = rng.random(), float(rng.random() < 0.5)
        z = -1.0 + 2.0 * a + 1.5 * b
        X.append([a, b])
        y.append(int(rng.random() < 1 / (1 + math.exp(-z))))
    coef, intercept = logistic_fit(X, y, l2=0.0)
    assert coef == pytest.approx([2.0, 1.5], abs=0.3) and intercept == pytest.approx(-1.0, abs=0.2)


def test_auc_counts_ties_as_half():
    assert auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    assert auc([0.5, 0.5], [0, 1]) == 0.5
    assert auc([0.5], [1]) is None


def synthetic_rows(n_questions=60, seed=1):
    """Readings whose exact-quote feature tells the truth far better than 'found' alone."""
    from lens._grading import FEATURES

    rng = random.Random(seed)
    rows = []
    for q in range(n_questions):
        readings = []
        for rank in range(6):
            label = int(rng.random() < (0.5 if rank == 0 else 0.15))
            found = rng.random() < (0.7 if label else 0.35)
            exact = found and rng.random() < (0.9 if label else 0.2)
            feats = dict.fromkeys(FEATURES, 0.0)
            feats.update(found=float(found), exact=float(exact), log_rank=math.log1p(rank))
            readings.append({"label": label, "found": found, "features": feats, "logprobs": False})
        rows.append({"id": f"q{q}", "model": MODEL, "observation_model": "single-rate", "readings": readings})
    return rows


def test_the_graded_model_beats_the_single_rate_where_features_carry_signal():
    report = fit_readings(synthetic_rows(), folds=5)
    cv = report["cross_validated"]
    assert cv["graded"]["auc"] > cv["single"]["auc"] > 0.5
    assert cv["graded"]["lr_auc"] > cv["single"]["lr_auc"] > 0.5 and "lr_auc" not in cv["base"]
    assert cv["graded"]["brier"] < cv["single"]["brier"]
    assert sum(b["n"] for b in cv["graded"]["reliability"]) == report["readings"]
    graded = GradedEvidence.model_validate(report["graded"])  # the preset block is a valid config
    assert graded.features[graded.features.index("exact")] == "exact"
    assert graded.coef[graded.features.index("exact")] > 0


def test_readings_without_evidence_beyond_the_rank_get_a_likelihood_ratio_near_one():
    """A noisy sensor: 'found' and 'exact' are drawn independently of the label, so the rank is all there is.
    The penalty chosen by cross-validation shrinks what a reading adds, and the loop's log LR stays near 0."""
    from lens._grading import FEATURES

    rng = random.Random(3)
    rows = []
    for q in range(40):
        readings = []
        for rank in range(6):
            label = int(rng.random() < (0.5 if rank == 0 else 0.1))
            found, exact = rng.random() < 0.3, rng.random() < 0.15
            feats = dict.fromkeys(FEATURES, 0.0)
            feats.update(found=float(found), exact=float(exact), log_rank=math.log1p(rank))
            readings.append({"label": label, "found": found, "features": feats, "logprobs": False})
        rows.append({"id": f"q{q}", "model": MODEL, "observation_model": "single-rate", "readings": readings})
    report = fit_readings(rows, folds=5)
    assert report["l2"] >= 30.0
    graded = GradedEvidence.model_validate(report["graded"])
    feats = dict.fromkeys(FEATURES, 0.0)
    for found, exact, rank in [(1.0, 1.0, 0), (0.0, 0.0, 0), (1.0, 0.0, 3)]:
        feats.update(found=found, exact=exact, log_rank=math.log1p(rank))
        assert abs(graded.logit(feats, logprobs=False) - graded.base_logit(feats)) < 0.15
    # with a fixed small penalty the same readings move beliefs further (the noise is fitted)
    loose = GradedEvidence.model_validate(fit_readings(rows, folds=5, l2=0.3)["graded"])
    feats.update(found=1.0, exact=1.0, log_rank=0.0)
    assert abs(loose.logit(feats, logprobs=False) - loose.base_logit(feats)) > abs(
        graded.logit(feats, logprobs=False) - graded.base_logit(feats)
    )


def test_the_printed_preset_block_loads_as_configuration(tmp_path, capsys):
    import argparse

    from lens._calibration import fit_command

    runs = tmp_path / "r" / "readings.jsonl"
    runs.parent.mkdir()
    runs.write_text("".join(json.dumps(r) + "\n" for r in synthetic_rows()))
    fit_command(argparse.Namespace(runs=[str(runs.parent)], folds=5, l2=1.0, out=None, json=False))
    out = capsys.readouterr().out
    block = out.split("add to the preset:\n", 1)[1]
    user = tmp_path / "user.toml"
    user.write_text(block)
    cfg = load_config("deep", file=user, overrides={"llm": {"model": MODEL, "base_url": BASE_URL}})
    assert cfg.reliability().graded is not None and cfg.reliability().n == 360
