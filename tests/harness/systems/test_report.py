"""lens bench report: tables shaped like the paper's (main, Ev.Rec by size, staleness labelled as the stale arm
with its from/to checksums, cost with McNemar and bootstrap, ablation, failures), CSV and PNG files, and the
binding rules: rows of different bindings never share a table."""

from __future__ import annotations

import csv

import pytest
import respx

from harness.bench.datasets import load_questions
from harness.bench.executor import LocalExecutor
from harness.bench.report import ReportError, build_report, group_runs, load_run
from harness.bench.runner import plan_run, run_benchmark
from harness.bench.samples import draw_samples, write_samples
from lens.llm._llm import LLMClient

from .conftest import BASE_URL, make_config
from .scripted_llm import Responder, respx_side_effect

SYSTEMS = ("lens", "bm25", "closed")


@pytest.fixture(scope="module")
def runs(bench_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    responder = Responder()
    n = bench_data["G6"][0][1:]  # closed-book gets exactly the first question right
    responder.script["closed_book"] = lambda msgs: (
        '{"answer": "%s"}' % (f"Tallow{n}" if f"Varn{n}" in msgs[-1]["content"] else "no idea")
    )
    out = {}
    with respx.mock(assert_all_called=False) as router:
        router.post(f"{BASE_URL}/chat/completions").mock(side_effect=respx_side_effect(responder))

        def go(name, snapshot, config, systems=SYSTEMS, limit=3, **kw):
            client = LLMClient(base_url=BASE_URL, model="test-model", settings=config.llm)
            plan = plan_run(
                snapshot=bench_data[snapshot],
                questions_file=bench_data["questions"],
                systems=systems,
                out=root / name,
                config=config,
                index_dir=root / "indexes",
                limit=limit,
                **kw,
            )
            run_benchmark(plan, executor=LocalExecutor(2), progress=False, client=client)
            out[name] = root / name

        base = make_config()
        go("d6", "D6", base)
        go("d12", "D12", base)
        go("stale", "D12", base, stale_from=bench_data["D6"])
        go("d12-all", "D12", base, systems=("bm25", "lens"), limit=12)
        go("ablation", "D6", make_config(**{"ablation.no_exploration": True}), systems=("lens",))
        go("other-config", "D6", make_config(**{"budget.max_rounds": 1}))
        fs = draw_samples(load_questions(bench_data["questions"]), (6,), seed=7)
        write_samples(fs, root / "samples-seed7")
        go("d6-seed7", "D6", base, sample=root / "samples-seed7", stage=6)
    out["root"] = root
    return out


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_the_report_writes_every_table_as_markdown_and_csv_and_the_plots(runs, tmp_path):
    result = build_report([runs["d6"], runs["d12"], runs["stale"], runs["ablation"]], tmp_path / "rep", resamples=200)

    assert result.refusals == []
    names = {p.name for p in result.files}
    for stem in ("table1_composition", "table1_lifecycle"):
        assert f"{stem}.csv" in names
    for prefix in (
        "table2_main__D6_",
        "table2_main__D12_",
        "table4_evidence_recall__",
        "table5_staleness__D6-to-D12_",
        "cost__D6_",
        "mcnemar__D6_",
        "failures__D6_",
        "table6_ablation__D6_",
    ):
        assert any(n.startswith(prefix) for n in names), prefix
    for png in ("em_vs_tokens.png", "evrec_by_size.png"):
        assert (tmp_path / "rep" / png).read_bytes()[:4] == b"\x89PNG"
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "### Table 2 — controlled evaluation on D6 (%, n=3)" in md and "![em_vs_tokens](em_vs_tokens.png)" in md


def test_the_staleness_table_is_labelled_and_shows_the_stale_index_losing_new_articles(runs, bench_data, tmp_path):
    result = build_report([runs["d6"], runs["stale"]], tmp_path / "rep", resamples=200)

    table = next(t for t in result.tables if t.name.startswith("table5_staleness"))
    from harness.bench.run_store import read_run_manifest

    arm = read_run_manifest(runs["stale"])["binding"]["arm"]
    assert table.caption.startswith("STALE ARM.")
    assert arm["from"]["corpus_checksum"][:16] in table.caption and arm["to"]["corpus_checksum"][:16] in table.caption
    rows = {r[0]: r for r in table.rows}
    assert (
        rows["BM25-RAG"][1] == "D6 index (stale)"
        and rows["LENS"][1] == "reads D12"
        and rows["Closed-Book"][1] == "none"
    )
    assert rows["BM25-RAG"][5] == "100.0" and rows["BM25-RAG"][6] == "0.0" and rows["BM25-RAG"][7] == "-100.0"
    assert rows["Closed-Book"][5] == "—"
    csv_rows = read_csv(tmp_path / "rep" / f"{table.name}.csv")
    assert csv_rows[0][:2] == ["System", "Index"] and len(csv_rows) == 4


def test_the_paired_staleness_table_sets_the_stale_arm_against_fresh_rows_on_the_same_questions(runs, tmp_path):
    result = build_report([runs["d6"], runs["stale"], runs["d12-all"]], tmp_path / "rep", resamples=200)

    assert result.refusals == []
    table = next(t for t in result.tables if t.name.startswith("table5_staleness_paired"))
    assert "n=3" in table.title and table.caption.startswith("STALE ARM against")
    rows = {r[0]: r for r in table.rows}
    assert set(rows) == {"LENS", "BM25-RAG"}  # the systems both runs hold, on the questions both answered
    bm = rows["BM25-RAG"]
    assert (
        bm[1] == "stale index" and bm[6] == "100.0" and bm[7] == "0.0" and bm[8].startswith("-100.0 [-100.0, -100.0]")
    )
    assert rows["LENS"][1] == "reads the folder" and rows["LENS"][8].startswith("+0.0")  # reads D12 either way
    assert not any(
        t.name.startswith("table5_staleness_paired")
        for t in build_report([runs["d6"], runs["stale"]], tmp_path / "rep2", resamples=100).tables
    )  # no fresh D12 run given: no table


def test_the_stale_rows_say_they_are_stale_with_both_checksums(runs):
    from harness.bench.run_store import read_rows

    rows = read_rows(runs["stale"])
    bm = [r for r in rows if r["system"] == "bm25"]
    lens_rows = [r for r in rows if r["system"] == "lens"]
    assert all(r["arm"] == "stale" and r["stale"] and r["index_corpus_checksum"] != r["corpus_checksum"] for r in bm)
    assert all(r["arm"] == "stale" and not r["stale"] and r["index_corpus_checksum"] is None for r in lens_rows)


def test_cost_table_has_mcnemar_and_bootstrap_intervals(runs, tmp_path):
    result = build_report([runs["d6"]], tmp_path / "rep", resamples=200)

    cost = next(t for t in result.tables if t.name.startswith("cost__"))
    closed = next(r for r in cost.rows if r[0] == "Closed-Book")
    assert closed[-1].startswith("33.3 [")  # one of three correct, with its interval
    mc = next(t for t in result.tables if t.name.startswith("mcnemar__"))
    pair = next(r for r in mc.rows if r[0] == "BM25-RAG vs Closed-Book")
    assert pair[3:6] == ["0", "1", "1.0000"]
    assert mc.headers[-1] == "ΔEv.Rec pp [95% CI]" and pair[-1] == "—"  # Closed-Book has no evidence trace
    # LENS vs BM25-RAG: the paired Ev.Rec difference is the mean of the per-question differences
    g = group_runs([load_run(runs["d6"])])[0]
    ids = g.common_ids()
    ev = {s: [g.rows[s][q]["scores"]["ev_rec"] for q in ids] for s in ("lens", "bm25")}
    mean = 100 * sum(a - b for a, b in zip(ev["lens"], ev["bm25"])) / len(ids)
    lens_bm25 = next(r for r in mc.rows if r[0] == "LENS vs BM25-RAG")
    assert lens_bm25[-1].startswith(f"{mean:+.1f} [")
    # every table's caption names the budgets the systems ran under and the code that ran
    assert "budget 2 rounds / 4 files / 16,000 tokens / 120 s per question, 60 s per call" in g.binding_line()
    g.manifest["sessions"] = [{"git_commit": "0b86278a8788945944d9222ed88387f6490a86dc"}, {"git_commit": None}]
    assert g.binding_line().endswith("code: commit `0b86278a8788`")
    g.manifest["sessions"] = [{"git_commit": None}]  # a frozen install outside any checkout records none
    assert g.binding_line().endswith(
        "code: no git commit recorded (each row's `system_hash` fingerprints its arm's code)"
    )


def test_a_missing_reference_refuses_the_staleness_table(runs, tmp_path):
    result = build_report([runs["stale"]], tmp_path / "rep", resamples=100)
    assert any("Table 5" in r and "no reference run" in r for r in result.refusals)
    assert not any(t.name.startswith("table5") for t in result.tables)


def test_two_bindings_over_one_corpus_are_refused_in_one_column(runs, tmp_path):
    # same corpus and configuration, another frozen sample (seed 7): another binding
    result = build_report([runs["d6"], runs["d6-seed7"]], tmp_path / "rep", resamples=100)

    assert any("Table 4" in r and "two bindings over D6" in r for r in result.refusals)
    assert not any(t.name.startswith("table4") for t in result.tables)
    assert len([t for t in result.tables if t.name.startswith("table2_main")]) == 2  # each binding its own table


def test_other_configurations_get_tables_of_their_own(runs, tmp_path):
    result = build_report([runs["d6"], runs["other-config"]], tmp_path / "rep", resamples=100)
    mains = [t for t in result.tables if t.name.startswith("table2_main")]
    assert len(mains) == 2 and len({t.name for t in mains}) == 2
    assert not any(t.name.startswith("table6") for t in result.tables)  # not an ablation: more than ablation.* differs


def test_the_same_rows_twice_are_refused(runs, tmp_path):
    with pytest.raises(ReportError, match="also comes from another run"):
        build_report([runs["d6"], runs["d6"]], tmp_path / "rep")


def test_the_cli_exits_1_when_a_table_is_refused_and_0_otherwise(runs, tmp_path, capsys):
    from lens.faces._cli import main

    assert main(["bench", "report", str(runs["stale"]), "--out", str(tmp_path / "a"), "--resamples", "100"]) == 1
    assert "refused: Table 5" in capsys.readouterr().err
    assert main(["bench", "report", str(runs["d6"]), "--resamples", "100", "--no-plots"]) == 0
    assert (runs["d6"] / "report" / "report.md").is_file()
    assert main(["bench", "report", str(runs["d6"]), str(runs["d12"])]) == 2  # two runs need --out


def test_runs_made_by_different_code_never_share_a_staleness_table(runs, tmp_path):
    import shutil

    from harness.bench.run_store import read_run_manifest, write_run_manifest

    stale = shutil.copytree(runs["stale"], tmp_path / "stale-new-code")
    m = read_run_manifest(stale)
    m["systems"]["lens"]["params"]["code"] = "0123456789abcdef"  # as if the agent had been edited in between
    write_run_manifest(stale, m)

    result = build_report([runs["d6"], stale], tmp_path / "rep", resamples=100)

    assert any("Table 5" in r and "lens differs between D6 and D12 runs in code" in r for r in result.refusals)
    assert not any(t.name.startswith("table5") for t in result.tables)


def test_the_ablation_table_pairs_the_variant_with_the_full_system(runs, tmp_path):
    result = build_report([runs["d6"], runs["ablation"]], tmp_path / "rep", resamples=200)

    t6 = next(t for t in result.tables if t.name.startswith("table6_ablation"))
    head = t6.headers
    for col in ("Cited docs", "Certified", "Full/variant tokens", "s/q", "McNemar EM vs full", "ΔEv.Rec pp [95% CI]"):
        assert col in head, col
    full, variant = t6.rows[0], t6.rows[1]
    assert full[head.index("McNemar EM vs full")] == "—" and full[head.index("Full/variant tokens")] == "—"
    assert ", p=" in variant[head.index("McNemar EM vs full")]
    assert variant[head.index("Full/variant tokens")].endswith("×")
    assert variant[head.index("ΔEv.Rec pp [95% CI]")].count("[") == 1
    assert 0 <= float(full[head.index("Cited docs")]) <= 4
    assert any(n.startswith("LENS (full) stop reasons: ") for n in t6.notes)
