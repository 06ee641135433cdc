"""benchmarks/financebench_rows.py: a FinanceBench run's rows kept in the repo without the data's own text, and
restored from them (a script, loaded by path). The data here is made up in FinanceBench's shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import load_script


@pytest.fixture(scope="module")
def rows_mod():
    return load_script("financebench_rows")


QUESTION = "What was the harbour authority's total revenue in FY2021 in USD millions, rounded to one decimal?"


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    rec = {
        "financebench_id": "fb_1",
        "doc_name": "HARBOUR_2021_10K",
        "question": QUESTION,
        "answer": "$12.5",
        "justification": "Revenue line of the income statement.",
        "question_type": "metrics-generated",
        "question_reasoning": "Information extraction",
        "evidence": [
            {"doc_name": "HARBOUR_2021_10K", "evidence_page_num": 4},
            {"doc_name": "HARBOUR_2021_10K", "evidence_page_num": 4},
            {"doc_name": "HARBOUR_2021_10K", "evidence_page_num": 9},
        ],
    }
    (d / "questions.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
    (d / "pdfs").mkdir()
    (d / "pdfs" / "HARBOUR_2021_10K.pdf").write_bytes(b"%PDF-1.4\n")  # the loader checks the filing is there
    return d


def _row(system="lens", **details):
    return {
        "question_id": "fb_1",
        "system": system,
        "question": QUESTION,
        "gold_answer": "$12.5",
        "gold_pages": [["HARBOUR_2021_10K", 5], ["HARBOUR_2021_10K", 10]],
        "question_reasoning": "Information extraction",
        "question_type": "metrics-generated",
        "doc_name": "HARBOUR_2021_10K",
        "scores": {"correct": True, "page_recall": 0.5},
        "prediction": {
            "answer": "12.5",
            "evidence": [{"text": "Total revenue was $12.5 million.", "location": {"page": 5}}],
            "details": {
                "decomposition": {"requirements": [{"text": QUESTION}]},
                "requirements": [{"text": QUESTION}],
                "memory_entries": [{"question": QUESTION}],
                "stages": [{"stage": "prior"}],
                **details,
            },
        },
    }


def _run(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "judge.jsonl").write_text('{"question_id": "fb_1", "verdict": true}\n', encoding="utf-8")
    (folder / "manifest.json").write_text('{"questions": ["fb_1"]}', encoding="utf-8")
    return folder


def test_the_kept_rows_hold_no_question_and_restore_to_the_run_less_the_dropped_details(rows_mod, data, tmp_path):
    work = _run(tmp_path / "work", [_row(), _row("bm25")])
    assert rows_mod.main(["redact", str(work), str(tmp_path / "repo"), "--data", str(data)]) == 0
    kept = (tmp_path / "repo" / "rows.jsonl").read_text(encoding="utf-8")
    assert "harbour authority" not in kept and "Information extraction" not in kept
    assert not any(k in json.loads(line) for line in kept.splitlines() for k in ("gold_answer", "gold_pages"))
    assert (tmp_path / "repo" / "judge.jsonl").read_text() == (work / "judge.jsonl").read_text()
    assert rows_mod.main(["restore", str(tmp_path / "repo"), str(tmp_path / "back"), "--data", str(data)]) == 0
    back = [json.loads(line) for line in (tmp_path / "back" / "rows.jsonl").read_text().splitlines()]
    want = _row()
    for k in ("decomposition", "requirements", "memory_entries"):
        del want["prediction"]["details"][k]
    assert back[0] == want  # gold pages recomputed from the data: 1-based, each once, in order
    assert back[1]["system"] == "bm25" and back[1]["question"] == QUESTION


def test_question_text_left_anywhere_else_stops_the_redaction_naming_the_row_and_field(rows_mod, data, tmp_path):
    work = _run(tmp_path / "work", [_row(), _row(readings=[{"said": "asked: " + QUESTION}])])
    with pytest.raises(
        SystemExit, match=r"rows.jsonl:2: FinanceBench text left in .prediction.details.readings\[0\].said"
    ):
        rows_mod.main(["redact", str(work), str(tmp_path / "repo"), "--data", str(data)])
    assert not (tmp_path / "repo" / "rows.jsonl").exists()  # nothing half written


def test_a_system_answer_that_echoes_its_question_is_kept(rows_mod, data, tmp_path):
    row = _row()
    row["prediction"]["answer"] = QUESTION[:60]
    work = _run(tmp_path / "work", [row])
    rows_mod.main(["redact", str(work), str(tmp_path / "repo"), "--data", str(data)])
    assert json.loads((tmp_path / "repo" / "rows.jsonl").read_text())["prediction"]["answer"] == QUESTION[:60]


def test_a_row_of_a_question_not_in_the_data_is_named(rows_mod, data, tmp_path):
    row = _row()
    row["question_id"] = "fb_9"
    repo = _run(tmp_path / "repo", [rows_mod.redact_row(row)])
    with pytest.raises(SystemExit, match=r"rows.jsonl:1: field 'question_id' 'fb_9' is not in the data"):
        rows_mod.main(["restore", str(repo), str(tmp_path / "back"), "--data", str(data)])


def test_paperqa_evidence_summaries_are_dropped_the_rest_of_its_contexts_kept(rows_mod):
    row = {
        "question": "What was the revenue?",
        "prediction": {
            "answer": "x",
            "details": {"contexts": [{"key": "k1", "summary": "the revenue …", "cited": True}]},
        },
    }
    kept = rows_mod.redact_row(row)
    assert kept["prediction"]["details"]["contexts"] == [{"key": "k1", "cited": True}] and "question" not in kept
