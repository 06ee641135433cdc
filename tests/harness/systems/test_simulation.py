"""``lens bench simulate``: the real loop with a supporting-fact oracle (no LLM), tagged uses_gold, resumable."""

from __future__ import annotations

import json

import respx

from harness.bench.datasets import load_questions
from harness.bench.simulation import SimulatedOracle, simulate, simulated_decomposition, summarise, table

from .conftest import make_config


def questions(bench_data):
    by = bench_data["by_id"]
    return [by[i] for i in bench_data["G6"]]


def test_a_strong_simulated_oracle_certifies_and_a_weak_one_does_not(bench_data, tmp_path):
    qs = questions(bench_data)
    out = tmp_path / "rows.jsonl"
    with respx.mock(assert_all_called=True) as router:  # no route: any LLM request would fail the test
        rows = simulate(qs, bench_data["D6"], [(0.95, 0.02), (0.3, 0.25)], make_config("deep"), out=out)
    assert not router.calls
    assert len(rows) == 2 * len(qs) and all(r["uses_gold"] for r in rows)
    s = {(p["tpr"], p["fpr"]): p for p in summarise(rows)}
    strong, weak = s[(0.95, 0.02)], s[(0.3, 0.25)]
    assert strong["certified_share"] > 50 and weak["certified_share"] == 0
    assert strong["ev_rec"] >= weak["ev_rec"] and strong["rounds"] < make_config("deep").budget.max_rounds
    assert all(r["cited_docs"] <= 4 for r in rows)
    assert all(r["oracle_calls"] <= 2 * r["rounds"] for r in rows)  # at most c1 readings per round
    assert "uses_gold=true" in table(summarise(rows))


def test_a_rerun_keeps_the_rows_it_has(bench_data, tmp_path):
    qs = questions(bench_data)[:2]
    out = tmp_path / "rows.jsonl"
    simulate(qs, bench_data["D6"], [(0.9, 0.05)], make_config("deep"), out=out)
    before = out.read_text()
    rows = simulate(qs, bench_data["D6"], [(0.9, 0.05)], make_config("deep"), out=out)
    assert out.read_text() == before and len(rows) == 2
    # a row a kill interrupted is cut off and rerun: no row twice
    out.write_text(before.splitlines()[0] + "\n" + before.splitlines()[1][:20])
    rows = simulate(qs, bench_data["D6"], [(0.9, 0.05)], make_config("deep"), out=out)

    def ids(text):
        return [json.loads(line)["id"] for line in text.splitlines()]

    assert ids(out.read_text()) == ids(before) and out.read_text().startswith(before.splitlines()[0])


def test_a_bridge_question_gets_a_first_hop_and_a_dependent_requirement(bench_data):
    q = load_questions(bench_data["questions"])[1]
    dec = simulated_decomposition(q)
    oracle = SimulatedOracle(q, dec, 0.999999, 1e-9, seed=0)
    assert [r.id for r in dec.requirements] == (
        ["R1", "R2"] if q.type == "bridge" else [r.id for r in dec.requirements]
    )
    assert oracle.bridge in {t for t, _ in q.supporting_facts}


def test_the_cli_writes_rows_summary_and_table(bench_data, tmp_path, capsys):
    from lens.faces._cli import main

    sample = tmp_path / "sample"
    assert (
        main(["bench", "sample", "--questions", str(bench_data["questions"]), "--out", str(sample), "--sizes", "6"])
        == 0
    )
    out = tmp_path / "sim"
    code = main(
        [
            "bench",
            "simulate",
            "--snapshot",
            str(bench_data["D6"]),
            "--questions",
            str(bench_data["questions"]),
            "--sample",
            str(sample),
            "--stage",
            "6",
            "--points",
            "0.9:0.05",
            "--out",
            str(out),
            "--set",
            "llm.base_url=http://127.0.0.1:9/v1",
        ]
    )
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["uses_gold"] is True and summary["points"][0]["questions"] == 6
    assert "| 0.9 | 0.05 |" in (out / "table.md").read_text()
    assert len((out / "rows.jsonl").read_text().splitlines()) == 6
