"""``lens audit run | check | report`` end to end on a tiny synthetic BEIR workload, and config handling."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.audit.config import AuditConfigError, load_audit_config
from harness.audit.rows import read_rows
from lens.faces._cli import main


def test_audit_registration_imports_nothing_heavy():
    code = (
        "import sys, argparse, harness.audit.cli as c\n"
        "p = argparse.ArgumentParser(); s = p.add_subparsers()\n"
        "c.add_audit_parser(s, lambda parser, target: parser.set_defaults(_handler=target))\n"
        "print([m for m in ('numpy', 'pydantic', 'harness.audit.pipeline', 'bm25s') if m in sys.modules])"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]"


def test_run_writes_rows_manifest_and_a_report(finished_run):
    for name in (
        "rows.jsonl",
        "manifest.json",
        "contract.json",
        "config.json",
        "report/report.md",
        "report/manifest.json",
        "report/tables/hg.csv",
        "report/tables/utility.csv",
        "report/tables/dose.csv",
        "report/tables/audit.csv",
    ):
        assert (finished_run / name).is_file(), name
    assert sorted(p.name for p in (finished_run / "report" / "plots").glob("*.png")) == [
        "anchor-syn-cache.png",
        "anchor-syn-trace.png",
        "dose-syn-cache.png",
        "dose-syn-trace.png",
    ]
    t = read_rows(finished_run / "rows.jsonl")
    # 3 streams (random, semantic, gold-overlap) × 2 seeds × 24 anchors × 6 conditions × 2 memories
    views = {"stateless", "pit", "future-h3", "future-h10", "future", "naive"}
    assert set(t["view"]) == views
    assert t.n == 3 * 2 * 24 * len(views) * 2
    manifest = json.loads((finished_run / "manifest.json").read_text())
    assert manifest["contract"] == {"status": "pass", "violations": 0}
    assert {o["path"] for o in manifest["outputs"]} >= {"rows.jsonl", "contract.json", "streams/syn/random-s0.json"}
    assert all(len(i["sha256"]) == 64 for i in manifest["inputs"])
    summary = json.loads((finished_run / "report" / "summary.json").read_text())
    assert summary["audit"]["max_pit_tvr"] == 0 and summary["audit"]["naive_future_max_abs_diff"] == 0
    assert (
        "| Domain | Memory | Stream | Retriever | HG [95% CI] |" in (finished_run / "report" / "report.md").read_text()
    )


def test_stress_streams_are_tagged_and_kept_out_of_headline_tables(finished_run):
    t = read_rows(finished_run / "rows.jsonl")
    kinds = {(k, bool(u)) for k, u in zip(t["stream_kind"], t["uses_gold"])}
    assert kinds == {("random", False), ("semantic", False), ("gold-overlap", True)}
    tables = finished_run / "report" / "tables"
    for name in ("hg.csv", "utility.csv", "audit.csv", "dose.csv", "anchor_position.csv", "cutoffs.csv"):
        assert "gold-overlap" not in (tables / name).read_text(), name
    stress = (tables / "stress.csv").read_text().splitlines()
    assert len(stress) == 1 + 2 and all(",gold-overlap," in line for line in stress[1:])  # trace and cache


def test_report_is_deterministic_for_a_seed(finished_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    shutil.rmtree(run / "report")
    assert main(["audit", "report", str(run)]) == 0
    a = (finished_run / "report" / "tables" / "utility.csv").read_bytes()
    assert (run / "report" / "tables" / "utility.csv").read_bytes() == a


def test_report_is_refused_for_a_run_that_fails_the_contract(finished_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    shutil.rmtree(run / "report")
    lines = (run / "rows.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["capacity"] += 1
    lines[0] = json.dumps(rec)
    (run / "rows.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["audit", "report", str(run)]) == 1
    err = capsys.readouterr().err
    assert "capacity-mismatch" in err and "no report published" in err
    assert not (run / "report").exists()


def test_run_refuses_to_overwrite_an_existing_run(finished_run, small_config, capsys):
    assert main(["audit", "run", "--config", str(small_config), "--out", str(finished_run), "-q"]) == 2
    assert "already holds an audit run" in capsys.readouterr().err


def test_run_end_to_end_through_the_cli(small_config, tmp_path, capsys):
    out = tmp_path / "cli-run"
    assert main(["audit", "run", "--config", str(small_config), "--out", str(out), "--json", "-q"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["rows"] > 0 and Path(res["report"]).is_dir()
    assert main(["audit", "check", str(out)]) == 0


def test_missing_data_path_names_the_key_the_resolved_path_and_the_rule(tmp_path, capsys, monkeypatch):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[[workloads]]\nname = "w"\nformat = "beir"\npath = "../nowhere/data"\n')
    monkeypatch.delenv("LENS_DATA_ROOT", raising=False)
    assert (
        main(
            [
                "audit",
                "run",
                "--config",
                str(cfg),
                "--out",
                str(tmp_path / "o"),
                "--data-root",
                str(tmp_path / "root"),
                "-q",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "workloads[w].path = '../nowhere/data'" in err and str(tmp_path / "nowhere" / "data") in err
    assert "relative paths resolve against the data root" in err


def test_relative_paths_resolve_against_the_data_root(beir_folder, small_config, tmp_path, monkeypatch):
    from harness.audit.config import data_root, resolve_data_path

    monkeypatch.setenv("LENS_DATA_ROOT", str(beir_folder.parent))
    assert data_root() == beir_folder.parent
    assert resolve_data_path("beir", "k", data_root(), folder=True) == beir_folder.resolve()
    assert data_root(tmp_path) == tmp_path  # an explicit --data-root wins


def test_packaged_presets_load_by_name():
    for name in ("audit-small", "audit-tatqa", "audit-hotpotqa.toml"):
        cfg = load_audit_config(name)
        assert cfg.replay.capacity == 32 and cfg.metrics.bootstrap_resamples == 5000
    assert load_audit_config("audit-hotpotqa").retrieval.retrievers == ["bm25", "hybrid"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("[[workloads]]\nname='w'\nformat='beir'\n", "needs 'path'"),
        ("[[workloads]]\nname='w'\nformat='beir'\npath='x'\n[replay]\ncapacity=0\n", "replay.capacity"),
        ("[[workloads]]\nname='w'\nformat='beir'\npath='x'\n[replay]\nmemmories=['trace']\n", "replay.memmories"),
        ("[[workloads]\n", "malformed TOML"),
    ],
)
def test_bad_configs_name_the_file_and_key(tmp_path, text, message):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(AuditConfigError, match=message):
        load_audit_config(p)


def test_config_hash_ignores_where_data_live_but_not_what_is_run(tmp_path):
    a = load_audit_config("audit-small")
    b = a.model_copy(update={"workloads": [a.workloads[0].model_copy(update={"path": "/elsewhere"})]})
    c = a.model_copy(update={"replay": a.replay.model_copy(update={"capacity": 16})})
    assert a.hash == b.hash and a.hash != c.hash


@pytest.mark.parametrize("fail_at", [1, 3, 6])
def test_a_full_disk_is_one_line_exit_2_and_leaves_no_half_run(small_config, tmp_path, capsys, monkeypatch, fail_at):
    import errno
    import os

    out = tmp_path / "full-disk-run"
    real_fsync = os.fsync
    seen = {"n": 0}

    def fsync(fd):  # the disk fills up at the fail_at-th durable write into the run folder
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if target.startswith(str(out)):
            seen["n"] += 1
            if seen["n"] >= fail_at:
                raise OSError(errno.ENOSPC, "No space left on device", target)
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    rc = main(["audit", "run", "--config", str(small_config), "--out", str(out), "-q"])

    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("lens: error: cannot write the audit run: ") and "No space left on device" in err
    assert not out.exists()  # nothing of the failed run is kept
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert main(["audit", "run", "--config", str(small_config), "--out", str(out), "-q"]) == 0  # room again: it runs
