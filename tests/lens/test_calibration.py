"""`lens calibrate`: true/false-positive rates of verified observations, counted against gold articles."""

from __future__ import annotations

import json

import respx

from lens._calibration import calibrate
from lens._config import load_config

from .conftest import BASE_URL, CHAT_URL, MODEL
from .scripted_oracle import Rule, ScriptedOracle

ARTICLES = [
    ("Osk Yard", ["Osk Yard is a boatbuilder in Harrowmouth.", "It was founded in 1887 by Ilse Osk."]),
    ("Marren Gull", ["The Marren Gull is a ferry.", "She was built by Osk Yard in 1931."]),
    ("Tally Boatworks", ["Tally Boatworks is a boatbuilder in Dunmere.", "It was founded in 1902."]),
    ("Dunmere", ["Dunmere is a town with a boatbuilder and a ferry.", "The Marren Gull calls at Dunmere."]),
]
QUESTION = {
    "_id": "q1",
    "question": "In what year was the boatbuilder that built the ferry Marren Gull founded?",
    "supporting_facts": [["Marren Gull", 1], ["Osk Yard", 1]],
}


def test_calibration_counts_verified_claims_against_gold_articles(tmp_path, make_client):
    pool = tmp_path / "articles.jsonl"
    pool.write_text(
        "".join(json.dumps({"id": str(i), "title": t, "sentences": s}) + "\n" for i, (t, s) in enumerate(ARTICLES))
    )
    oracle = ScriptedOracle(
        decompositions={QUESTION["question"]: {"questions": ["Which boatbuilder built the ferry Marren Gull?"]}},
        rules=[
            Rule(
                "boatbuilder built", "built by Osk Yard", "She was built by Osk Yard in 1931.", "Osk Yard"
            ),  # gold: true positive
            Rule(
                "boatbuilder built", "calls at Dunmere", "The Marren Gull calls at Dunmere.", "Dunmere"
            ),  # false positive
            Rule("boatbuilder built", "founded in 1902", "It was founded in 1902.", "1902"),  # never names the subject
            Rule("boatbuilder built", "invented", "an invented quote", "x"),  # never verifies
        ],
    )
    cfg = load_config(
        "deep",
        overrides={"llm": {"base_url": BASE_URL, "model": MODEL, "cache": False}, "loop": {"windows_per_round": 1}},
    )  # one window per judgement
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=oracle.reply)
        record = calibrate(cfg, [QUESTION], str(pool), candidates=4)
    c = record["counts"]
    # 2 gold windows (Marren Gull, Osk Yard) and 2 others; verified claims: Marren Gull (gold) and Dunmere
    # (not gold); the Tally Boatworks claim is rejected because that article never mentions the Marren Gull
    assert c == {"tp": 1, "fn": 1, "fp": 1, "tn": 1}
    assert record["tpr"] == round(2 / 4, 4) and record["fpr"] == round(2 / 4, 4)
    assert record["model"] == MODEL
