"""The reading-ceiling arm (gold-passages: labels, uses_gold) and the formatting control (bm25-span): what they
read, how they answer, and that the report keeps the gold arm out of headline tables and significance tests."""

from __future__ import annotations

import json

import pytest
import respx

from harness.bench.datasets import DataError
from harness.bench.executor import LocalExecutor
from harness.bench.report import build_report
from harness.bench.run_store import read_rows, read_run_manifest
from harness.bench.runner import plan_run, run_benchmark
from harness.bench.systems.registry import parse_systems, uses_gold
from lens.llm._llm import LLMClient

from .conftest import BASE_URL, make_config
from .scripted_llm import Responder, respx_side_effect


@pytest.fixture(scope="module")
def ref_run(bench_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("ref")
    seen: list[str] = []
    responder = Responder()

    def rag(msgs):
        prompt = msgs[-1]["content"]
        seen.append(prompt)
        # answers in lowercase: the span arm must restore the passage's own spelling
        for n in range(12):
            if f"lies in Tallow{n:02d}" in prompt and f"Varn{n:02d}" in prompt:
                return json.dumps({"answer": f"tallow{n:02d}"})
        return json.dumps({"answer": "unknown"})

    responder.script["rag"] = rag
    config = make_config()
    with respx.mock(assert_all_called=False) as router:
        router.post(f"{BASE_URL}/chat/completions").mock(side_effect=respx_side_effect(responder))
        client = LLMClient(base_url=BASE_URL, model="test-model", settings=config.llm)
        plan = plan_run(
            snapshot=bench_data["D6"],
            questions_file=bench_data["questions"],
            systems=("lens", "bm25", "bm25-span", "gold-passages"),
            out=root / "run",
            config=config,
            index_dir=root / "indexes",
            limit=4,
        )
        run_benchmark(plan, executor=LocalExecutor(1), progress=False, client=client)
    return {"out": root / "run", "prompts": seen, "root": root}


def test_the_new_arms_are_named_and_only_the_gold_arm_uses_labels():
    assert parse_systems("gold-passages,bm25-span,lens") == ("lens", "bm25-span", "gold-passages")
    assert uses_gold("gold-passages") and not any(uses_gold(s) for s in ("lens", "bm25", "bm25-span", "hybrid"))
    with pytest.raises(DataError, match="unknown gold"):
        parse_systems("gold")


def test_the_gold_arm_reads_exactly_the_gold_articles(ref_run, bench_data):
    rows = [r for r in read_rows(ref_run["out"]) if r["system"] == "gold-passages"]
    assert len(rows) == 4
    for r in rows:
        titles = {d["title"] for d in r["prediction"]["retrieved"]}
        assert titles == set(r["gold_titles"])  # the supporting articles, nothing else
        assert r["scores"]["ev_rec"] == 1.0
    manifest = read_run_manifest(ref_run["out"])
    assert manifest["systems"]["gold-passages"]["uses_gold"] is True
    assert manifest["systems"]["bm25"]["uses_gold"] is False


def test_the_span_arm_answers_as_the_passage_writes_it(ref_run):
    rows = {(r["system"], r["question_id"]): r for r in read_rows(ref_run["out"])}
    spans = [r for (s, _), r in rows.items() if s == "bm25-span"]
    assert spans
    for r in spans:
        plain = rows[("bm25", r["question_id"])]
        if plain["prediction"]["answer"].startswith("tallow"):
            assert r["prediction"]["answer"] == plain["prediction"]["answer"].capitalize()  # "Tallow03"
            assert r["prediction"]["details"]["answer_span"]["how"] == "exact"


def test_the_report_shows_the_ceiling_and_keeps_the_gold_arm_out_of_tables_and_tests(ref_run, tmp_path):
    result = build_report([ref_run["out"]], tmp_path / "rep", resamples=100)
    main = next(t for t in result.tables if t.name.startswith("table2_main"))
    assert "Gold passages" not in {r[0] for r in main.rows} and "BM25-RAG + span" in {r[0] for r in main.rows}
    mc = next(t for t in result.tables if t.name.startswith("mcnemar__"))
    assert not any("Gold" in r[0] for r in mc.rows)
    cost = next(t for t in result.tables if t.name.startswith("cost__"))
    assert not any("Gold" in r[0] for r in cost.rows)
    ceiling = next(t for t in result.tables if t.name.startswith("reading_ceiling"))
    assert ceiling.rows[0][0] == "Gold passages (uses gold)" and ceiling.rows[0][-1] == "1.00"
    assert {r[0] for r in ceiling.rows[1:]} == {"LENS", "BM25-RAG", "BM25-RAG + span"}
    assert "uses gold" in ceiling.title


@pytest.mark.parametrize(
    "prediction, gold, kind",
    [
        ("Sonic the Hedgehog", "Sonic", "answer contains gold"),
        ("25", "25 laps", "gold contains answer"),
        ("Labor Party", "Labour Party", "spelling variant"),
        ("herbaceous perennial plants", "genus of plants", "other"),
    ],
)
def test_near_misses_are_classified(prediction, gold, kind):
    from harness.bench.report import near_miss_class

    assert near_miss_class(prediction, gold) == kind


def test_the_near_miss_table_counts_every_arm(ref_run, tmp_path):
    result = build_report([ref_run["out"]], tmp_path / "rep", resamples=100)
    t = next(t for t in result.tables if t.name.startswith("near_misses"))
    labels = [r[0] for r in t.rows]
    assert labels[-1] == "Gold passages (uses gold)" and "LENS" in labels
    for r in t.rows:
        assert int(r[2]) == sum(int(x) for x in r[3:]) <= int(r[1])


def test_the_answer_path_table_counts_how_lens_answered(ref_run, tmp_path):
    rows = [r for r in read_rows(ref_run["out"]) if r["system"] == "lens"]
    assert rows and all("stages" in r["prediction"]["details"] for r in rows)
    result = build_report([ref_run["out"]], tmp_path / "rep", resamples=100)
    t = next(t for t in result.tables if t.name.startswith("answer_paths"))
    assert [r[0] for r in t.rows] == ["LENS"]  # only arms that record their stages
    (row,) = t.rows
    computed = sum(
        any(st.get("in_code") for st in r["prediction"]["details"]["stages"] if st["stage"] == "synthesis")
        for r in rows
    )
    assert int(row[1]) == computed == sum(int(x) for x in row[2:7])
    verified = sum(r["prediction"]["details"]["answer_verified"] is True for r in rows)
    assert int(row[-4]) == verified
    assert float(row[-1]) == round(100 * sum(bool(r["scores"]["em"]) for r in rows) / len(rows), 1)
