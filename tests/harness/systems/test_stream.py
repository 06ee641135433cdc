"""``lens bench stream`` (issue: warm-reuse memory that pays off): a BEIR workload becomes a raw folder, its
requests a label-free stream; the agent asks them in order with its memory, one resumable row per position —
later requests read what earlier ones wrote, a rerun continues without duplicates, entries a crash left
without their row are dropped, and a changed binding is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.bench.datasets import DataError
from harness.bench.stream import asset_file, build_stream, materialise_assets, run_stream
from harness.workloads import load_beir

from .conftest import make_config


def _workload(root: Path) -> Path:
    """Six requests over three topics; requests of one topic share their gold assets (planted reuse)."""
    w = root / "workload"
    (w / "qrels").mkdir(parents=True)
    assets, queries, qrels = [], [], []
    for t, topic in enumerate(("ferry fares", "harbour dues", "lamp oil")):
        assets.append(
            {
                "_id": f"tab-{t}",
                "title": "",
                "type": "table",
                "text": f" | Item | 2019 | 2018\n{topic} total | {100 + t} | {90 + t}\n",
            }
        )
        assets.append(
            {
                "_id": f"txt-{t}",
                "title": "",
                "type": "text",
                "text": f"The {topic} rose in 2019 because of the new quay.",
            }
        )
        for k in range(2):
            qid = f"q{t}{k}"
            queries.append({"_id": qid, "text": f"Compile the {topic} by year, version {k}."})
            qrels += [f"{qid}\ttab-{t}\t1", f"{qid}\ttxt-{t}\t1"]
    for n in range(6):
        assets.append({"_id": f"bg-{n}", "title": "", "type": "text", "text": f"Background note {n} on weather."})
    (w / "corpus.jsonl").write_text("".join(json.dumps(a) + "\n" for a in assets))
    (w / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (w / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels) + "\n")
    return w


def _config():
    return make_config(**{"memory.min_posterior": 0.0})  # admit every verified finding: the test is the plumbing


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines() if line.strip()]


def test_assets_become_one_raw_file_each_and_are_verified(tmp_path):
    wl = load_beir(_workload(tmp_path))
    folder = tmp_path / "assets"
    m = materialise_assets(wl, folder)
    assert (folder / "table" / "tab-0.txt").read_text().startswith("| Item | 2019 | 2018\n")
    assert (tmp_path / "assets.manifest.json").exists() and not (folder / "assets.manifest.json").exists()
    assert {f["asset"] for f in m["files"].values()} == {a.id for a in wl.assets}
    assert materialise_assets(wl, folder)["corpus_checksum"] == m["corpus_checksum"]  # verified, kept
    (folder / "text" / "txt-0.txt").write_text("edited\n")
    with pytest.raises(DataError, match="missing or changed"):
        materialise_assets(wl, folder)
    with pytest.raises(DataError, match="not usable as a file name"):
        asset_file(type(wl.assets[0])("../x", "text", "t"))


def test_a_stream_run_writes_reads_and_resumes_its_memory(tmp_path, endpoint):
    wl = load_beir(_workload(tmp_path))
    order = build_stream(wl, "random", 3)
    folder, out = tmp_path / "assets", tmp_path / "run"
    first = run_stream(wl, folder, order, out, _config(), limit=2)
    assert first.rows_written == 2
    # a crash after the agent wrote position 2's entries but before its row: the orphans are dropped on resume
    log = out / "memory" / "memory.jsonl"
    orphan = json.loads(log.read_text().splitlines()[0])
    orphan["position"] = 2
    with open(log, "a") as fh:
        fh.write(json.dumps(orphan) + "\n")
    done = run_stream(wl, folder, order, out, _config())
    assert done.rows_before == 2 and done.rows_written == 4 and done.planned == 6
    rows = _rows(out)
    assert [r["position"] for r in rows] == list(range(6)) and len({r["question_id"] for r in rows}) == 6
    assert [r["question_id"] for r in rows] == list(order.query_ids)
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    written = {r["position"]: r["memory"]["written"] for r in rows}
    for pos in range(6):
        assert sum(e["position"] == pos for e in entries) == written[pos]  # the log holds exactly the rows' entries
    assert sum(written.values()) > 0
    assert any(r["memory"]["read"] > 0 for r in rows[1:])  # a later request read what an earlier one wrote
    assert rows[0]["memory"]["read"] == 0
    for r in rows:
        s = r["scores"]
        assert 0 <= s["prior_recall@10"] <= s["prior_recall@100"] <= 1
        assert set(r["prediction"]["cited_assets"]) <= {a.id for a in wl.assets}
        assert r["prediction"]["details"]["decomposition"] and "memory_entries" in r["prediction"]["details"]
        assert r["gold_assets"] and r["prediction"]["oracle_calls"] >= 2
    # another stream on the same run folder is refused; so is the memory switched off
    with pytest.raises(DataError, match="other bindings"):
        run_stream(wl, folder, build_stream(wl, "random", 4), out, _config())
    with pytest.raises(DataError, match="other bindings"):
        run_stream(wl, folder, order, out, _config(), memory=False)


def test_without_memory_nothing_is_read_or_written(tmp_path, endpoint):
    wl = load_beir(_workload(tmp_path))
    out = tmp_path / "run"
    run_stream(wl, tmp_path / "assets", build_stream(wl, "random", 3), out, _config(), memory=False)
    rows = _rows(out)
    assert len(rows) == 6 and all(
        r["memory"] == {"read": 0, "requirements_served": 0, "stale": 0, "written": 0} for r in rows
    )
    assert not (out / "memory").exists()


def test_the_cli_runs_a_stream(tmp_path, endpoint, capsys):
    from lens.faces._cli import main

    w = _workload(tmp_path)
    code = main(
        [
            "bench",
            "stream",
            "--workload",
            str(w),
            "--folder",
            str(tmp_path / "assets"),
            "--out",
            str(tmp_path / "run"),
            "--order",
            "semantic",
            "--seed",
            "1",
            "--limit",
            "3",
            "--json",
            "--preset",
            "fast",
            "--base-url",
            "http://bench-llm.test/v1",
            "--model",
            "test-model",
            "--set",
            "llm.cache=false",
            "--set",
            "llm.max_retries=0",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows_written"] == 3 and summary["planned"] == 3


AUDIT = """
kind = "lens-memory"
name = "stream-test"
[lens]
run = "{run}"
workload = "{workload}"
[streams]
kinds = ["random"]
seeds = [0, 1]
[replay]
mode = "cheap"
capacity = 4
horizons = [2]
anchors_per_position = 2
[metrics]
cutoffs = [2, 4, 10]
headline_k = 4
bootstrap_resamples = 100
"""


def test_the_pit_audit_reads_a_stream_run_with_its_workload_labels(tmp_path, endpoint):
    from harness.audit.config import load_audit_config
    from harness.audit.contract import check_run
    from harness.audit.lens_pipeline import run_lens_audit
    from harness.audit.rows import read_rows

    w = _workload(tmp_path)
    wl = load_beir(w)
    out = tmp_path / "run"
    run_stream(wl, tmp_path / "assets", build_stream(wl, "random", 3), out, _config())
    cfg_file = tmp_path / "audit.toml"
    cfg_file.write_text(AUDIT.format(run=out.as_posix(), workload=w.as_posix()))
    run_lens_audit(load_audit_config(cfg_file), tmp_path / "audit")
    assert check_run(tmp_path / "audit") == []
    t = read_rows(tmp_path / "audit" / "rows.jsonl")
    cond = t["condition"].astype(str)
    assert {"stateless", "pit", "future", "naive"} <= set(cond)
    assert (t["tvr"][cond == "pit"] == 0).all()
    manifest = json.loads((tmp_path / "audit" / "manifest.json").read_text())
    (wb,) = manifest["bindings"].values()
    assert wb["folder"]["same_corpus_as_run"] and wb["gold_titles_missing_from_folder"] == 0
    # a bench-style questions file is not how a stream run is labelled; full mode is refused
    bad = tmp_path / "bad.toml"
    bad.write_text(AUDIT.format(run=out.as_posix(), workload=w.as_posix()).replace('mode = "cheap"', 'mode = "full"'))
    from harness.audit.config import AuditConfigError

    with pytest.raises(AuditConfigError, match="cheap mode"):
        run_lens_audit(load_audit_config(bad), tmp_path / "audit-full")


def test_with_and_without_memory_compare_on_the_same_stream(tmp_path, endpoint, capsys):
    from harness.bench.stream import compare_memory
    from lens.faces._cli import main

    wl = load_beir(_workload(tmp_path))
    order = build_stream(wl, "random", 3)
    run_stream(wl, tmp_path / "assets", order, tmp_path / "mem", _config())
    run_stream(wl, tmp_path / "assets", order, tmp_path / "nomem", _config(), memory=False)
    c = compare_memory(tmp_path / "mem", tmp_path / "nomem", resamples=200)
    assert c["n"] == 6 and c["memory_written_per_request"] > 0
    m = c["metrics"]["tokens"]
    assert m["ci95"][0] <= m["difference"] <= m["ci95"][1]
    assert m["difference"] == pytest.approx(m["with_memory"] - m["without"])
    with pytest.raises(DataError, match="the run with memory"):
        compare_memory(tmp_path / "nomem", tmp_path / "mem")
    run_stream(wl, tmp_path / "assets", build_stream(wl, "random", 9), tmp_path / "other", _config(), memory=False)
    with pytest.raises(DataError, match="more than the memory: stream"):
        compare_memory(tmp_path / "mem", tmp_path / "other")
    assert main(["bench", "stream-compare", str(tmp_path / "mem"), str(tmp_path / "nomem")]) == 0
    assert "With memory" in capsys.readouterr().out
