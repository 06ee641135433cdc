"""benchmarks/loop_changes.py: the paired report issue 59's closing numbers come from (a script, loaded by path)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import load_script


@pytest.fixture(scope="module")
def loop_changes():
    return load_script("loop_changes")


def _row(qid: str, pos: int, answer: str, em: int, ev: float, tokens: int, evidence: list[str], **details) -> dict:
    return {
        "system": "lens",
        "question_id": qid,
        "position": pos,
        "type": "bridge",
        "gold_answer": "Paris",
        "scores": {"em": em, "ev_rec": ev},
        "prediction": {
            "answer": answer,
            "tokens": tokens,
            "error": None,
            "details": {"evidence": [{"title": t} for t in evidence], **details},
        },
    }


def _write(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir()
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_the_report_pairs_questions_and_orders_each_interval_low_to_high(tmp_path, loop_changes):
    full, abl = [], []
    for k in range(20):  # full right on 0-5, the ablation on 0-1: full wins four, loses none
        full.append(_row(f"q{k}", k, "Paris" if k < 6 else "Rome", int(k < 6), 1.0 if k < 10 else 0.5, 200, ["A"]))
        abl.append(_row(f"q{k}", k, "Paris" if k < 2 else "Rome", int(k < 2), 0.5, 100, ["A"]))
    abl.append(_row("only-in-ablation", 99, "Paris", 1, 1.0, 100, ["A"]))  # not paired: left out
    text = loop_changes.compare(_write(tmp_path / "full", full), _write(tmp_path / "abl", abl))
    assert text.startswith("n = 20 paired questions")
    assert "| full | 30.0 | 75.0 | 200 |" in text and "| ablation | 10.0 | 50.0 | 100 |" in text
    m = re.search(r"ΔEM ([+-][\d.]+) pp \[([+-][\d.]+), ([+-][\d.]+)\], McNemar 4:0", text)
    assert m, text
    point, low, high = map(float, m.groups())
    assert point == 20.0 and low <= point <= high and low < high
    m = re.search(r"ΔEv.Rec ([+-][\d.]+) pp \[([+-][\d.]+), ([+-][\d.]+)\]", text)
    point, low, high = map(float, m.groups())
    assert point == 25.0 and low <= point <= high
    assert "tokens 2.00× the ablation's" in text
    assert "| synthesis | 4 | 0 | 0 |" in text  # the same evidence, answered differently


def test_a_differing_answer_is_put_down_to_the_stage_that_changed_it(tmp_path, loop_changes):
    abl = _row("q", 0, "Rome", 0, 1.0, 100, ["A", "B"])
    value = _row("q", 0, "Paris", 1, 1.0, 100, ["A", "B"], readings=[{"value": "Paris"}])
    code = _row("q", 0, "Paris", 1, 1.0, 100, ["A"], stages=[{"stage": "synthesis", "in_code": True}])
    windows = _row("q", 0, "Paris", 1, 1.0, 100, ["A", "C"])
    bridged = _row(
        "q",
        0,
        "Paris",
        1,
        1.0,
        100,
        ["A", "C"],
        decomposition={"requirements": [{"id": "R2", "depends_on": "R1"}]},
        requirements=[{"value": "France"}],
    )
    assert loop_changes.cause(value, abl) == "reading value"
    assert loop_changes.cause(code, abl) == "comparison in code"
    assert loop_changes.cause(windows, abl) == "window choice"
    assert loop_changes.cause(bridged, abl) == "cue fill"


def test_a_folder_without_rows_is_one_line_and_a_non_zero_exit(tmp_path, loop_changes):
    with pytest.raises(SystemExit) as exc:
        loop_changes.main([str(tmp_path), str(tmp_path)])
    assert str(exc.value) == f"loop_changes: {tmp_path}: no rows.jsonl (a lens bench run folder)"
