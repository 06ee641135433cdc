"""The lifecycle audit on D6 → D12: index build seconds, bytes on disk and peak memory for the index-dependent
arms, which are not query-ready after growth (their D6 index reaches only D6's articles) and need a rebuild;
index-free arms see every article of the grown folder."""

from __future__ import annotations

import json
import subprocess
import sys

from harness.bench.lifecycle import find_stages, lifecycle_table, measure_lifecycle
from harness.bench.systems import SnapshotCorpus


def test_growth_leaves_index_arms_unready_and_index_free_arms_ready(bench_data, tmp_path):
    stages = find_stages(bench_data["snap"])
    assert [s.name for s in stages] == ["D6", "D12"]

    data = measure_lifecycle(stages, tmp_path / "idx", systems=("lens", "react", "bm25", "closed"), isolate=False)

    rows = {(r["snapshot"], r["system"]): r for r in data["rows"]}
    n6, n12 = (len(SnapshotCorpus.load(bench_data[k])) for k in ("D6", "D12"))
    bm = rows[("D12", "bm25")]
    assert bm["query_ready_after_growth"] is False and bm["rebuild_needed"] is True
    assert bm["coverage_after_growth"] == n6 / n12
    assert bm["index_build_s"] > 0 and bm["index_bytes"] > 0 and bm["peak_rss_bytes"] > 0
    for name in ("lens", "react"):
        r = rows[("D12", name)]
        assert (
            r["query_ready_after_growth"] is True and r["rebuild_needed"] is False and r["coverage_after_growth"] == 1.0
        )
        assert r["index_bytes"] == 0 and r["query_time_read_s"] > 0
    assert rows[("D6", "bm25")]["query_ready_after_growth"] is None  # the first stage has no growth to check
    assert rows[("D12", "closed")]["query_ready_after_growth"] is True
    headers, table = lifecycle_table(data)
    assert len(table) == 8 and headers[3] == "Query-ready after growth"


def test_the_cli_builds_in_a_child_process_and_writes_json(bench_data, tmp_path):
    out = tmp_path / "lifecycle.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lens.faces._cli",
            "bench",
            "lifecycle",
            "--snapshots",
            str(bench_data["snap"]),
            "--index-dir",
            str(tmp_path / "idx"),
            "--systems",
            "bm25",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    builds = [b for r in data["rows"] for b in r["builds"]]
    assert [b["corpus"] for b in builds] == ["D6", "D12"]
    assert all(b["measured_in"] == "child process" and b["peak_rss_bytes"] > b["rss_before_bytes"] > 0 for b in builds)
    assert "Query-ready after growth" in done.stdout
