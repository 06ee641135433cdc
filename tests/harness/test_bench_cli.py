"""``lens bench sample | snapshot | score`` end to end through the real CLI entry point."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lens.faces._cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_bench_registration_imports_nothing_heavy():
    code = (
        "import sys, argparse, harness.bench.cli as b\n"
        "p = argparse.ArgumentParser(); s = p.add_subparsers()\n"
        "b.add_bench_parser(s, lambda parser, target: parser.set_defaults(_handler=target))\n"
        "heavy = [m for m in ('numpy', 'scipy', 'harness.bench.commands', 'harness.bench.snapshots') if m in sys.modules]\n"
        "print(heavy)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]"


def test_sample_writes_ids_and_prints_hashes_and_deviation(tmp_path, small_data, capsys):
    qpath, _ = small_data
    out_dir = str(tmp_path / "s")
    code, out, _ = run(capsys, "bench", "sample", "--questions", str(qpath), "--out", out_dir, "--sizes", "10,20")
    assert code == 0
    data = json.loads((tmp_path / "s" / "sample.json").read_text())
    g10 = data["stages"][0]
    assert g10["name"] == "G10" and g10["order_sha256"][:8] in out and g10["sample_sha256"] in out
    assert "Max dev (pp)" in out and "Empty strata" in out
    assert (tmp_path / "s" / "G20.txt").read_text().splitlines()[:10] == data["order"][:10]


def test_snapshot_prints_the_composition_table_and_hashes_then_verifies(tmp_path, small_data, capsys):
    qpath, apath = small_data
    out_dir = tmp_path / "snap"
    args = [
        "bench",
        "snapshot",
        "--questions",
        str(qpath),
        "--articles",
        str(apath),
        "--sizes",
        "10,20,40",
        "--out",
        str(out_dir),
        "--verify",
    ]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    header = next(line for line in out.splitlines() if line.startswith("Snapshot"))
    assert header.split()[:7] == ["Snapshot", "n", "Articles", "Ev.", "Dist.", "Bg.", "Bg.:linked"]
    row = next(line for line in out.splitlines() if line.startswith("D10 "))
    assert row.split()[:7] == ["D10", "10", "160", "20", "20", "120", "3.00"]
    m40 = json.loads((out_dir / "D40.manifest.json").read_text())
    assert m40["corpus_checksum"] in out and m40["sample"]["order_sha256"] in out
    assert "realised 2.50:1" in out and "verify: OK" in out
    # run again: every stage is kept as it is
    code, out, err = run(capsys, *args)
    assert code == 0 and "D10: existing" in err and "D40: existing" in err


def test_verify_only_mode_fails_with_the_tampered_file_named(tmp_path, small_data, capsys):
    qpath, apath = small_data
    out_dir = tmp_path / "snap"
    run(
        capsys,
        "bench",
        "snapshot",
        "--questions",
        str(qpath),
        "--articles",
        str(apath),
        "--sizes",
        "10",
        "--out",
        str(out_dir),
    )
    code, out, _ = run(capsys, "bench", "snapshot", "--out", str(out_dir), "--verify")
    assert code == 0 and "verify: OK" in out
    victim = sorted((out_dir / "D10").iterdir())[5]
    victim.write_text(victim.read_text() + "appended\n")
    code, _, err = run(capsys, "bench", "snapshot", "--out", str(out_dir), "--verify")
    assert code == 1
    assert f"D10/{victim.name}: content changed" in err and "verify failed" in err
    code, out, _ = run(capsys, "bench", "snapshot", "--out", str(out_dir), "--verify", "--json")
    report = json.loads(out)
    assert code == 1 and not report["ok"] and report["problems"][0].startswith(f"D10/{victim.name}: content changed")


def test_snapshot_without_inputs_or_verify_is_a_clear_error(tmp_path, capsys):
    code, _, err = run(capsys, "bench", "snapshot", "--out", str(tmp_path))
    assert code == 2 and err.startswith("lens: error: --questions and --articles are needed")


def test_malformed_questions_give_one_line_naming_the_record(tmp_path, make, capsys):
    recs = make.population(20)
    del recs[17]["answer"]
    path = make.write_json(tmp_path / "questions.json", recs)
    code, out, err = run(capsys, "bench", "sample", "--questions", str(path), "--out", str(tmp_path / "s"))
    assert code == 2 and out == ""
    assert err == f'lens: error: {path}: record 17: field "answer" missing\n'


def test_sizes_beyond_the_population_are_refused(tmp_path, small_data, capsys):
    qpath, _ = small_data
    code, _, err = run(capsys, "bench", "sample", "--questions", str(qpath), "--out", str(tmp_path), "--sizes", "10,41")
    assert code == 2 and "exceeds the population of 40" in err


def test_score_reports_metrics_and_missing_predictions(tmp_path, make, capsys):
    recs = make.population(4)
    gold = make.write_json(tmp_path / "gold.json", recs)
    pred = make.write_json(
        tmp_path / "pred.json",
        {
            "answer": {"q000": "Answer q000!", "q001": "answer", "q002": "nothing"},
            "sp": {r["_id"]: r["supporting_facts"] for r in recs[:3]},
        },
    )
    code, out, _ = run(capsys, "bench", "score", "--gold", str(gold), "--pred", str(pred), "--json")
    assert code == 0
    res = json.loads(out)
    assert res["n"] == 4 and res["missing_answer"] == ["q003"] and res["missing_sp"] == ["q003"]
    m = res["metrics"]
    # q000 exact; q001 "answer" vs "answer q001": p 1, r 1/2, F1 2/3; q002 0; q003 missing 0
    assert m["em"] == pytest.approx(1 / 4)
    assert m["f1"] == pytest.approx((1 + 2 / 3) / 4)
    assert m["sp_em"] == pytest.approx(3 / 4)
    assert m["joint_em"] == pytest.approx(1 / 4)
    code, out, _ = run(capsys, "bench", "score", "--gold", str(gold), "--pred", str(pred))
    assert code == 0 and "missing answers (scored 0): 1: q003" in out
    assert "answer" in out and "25.00" in out


def test_score_of_a_truncated_prediction_file_is_one_error(tmp_path, make, capsys):
    gold = make.write_json(tmp_path / "gold.json", make.population(2))
    pred = tmp_path / "pred.json"
    pred.write_text('{"answer": {"q000": "x"')
    code, _, err = run(capsys, "bench", "score", "--gold", str(gold), "--pred", str(pred))
    assert code == 2 and err.count("\n") == 1 and "malformed JSON" in err
