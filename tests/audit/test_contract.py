"""The replay contract: a clean run passes; each kind of tampering — of the rows, the run files or the manifest's
own metadata — is caught and named, never passed and never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.audit.contract import check_run
from harness.audit.manifest import file_record
from lens.faces._cli import main


def _copy(run: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(run, dst, ignore=lambda folder, names: ["report"] if Path(folder) == run else [])
    return dst


def _rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "rows.jsonl").read_text(encoding="utf-8").splitlines()]


def _save(run: Path, rows: list[dict]) -> None:
    (run / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _codes(run: Path) -> set[str]:
    return {v.code for v in check_run(run)}


def _first(rows: list[dict], **match) -> dict:
    return next(r for r in rows if all(r[k] == v for k, v in match.items()))


def test_a_clean_run_passes(finished_run):
    assert check_run(finished_run) == []


def test_a_future_entry_slipped_into_a_pit_row_is_caught(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    rows = _rows(run)
    r = _first(rows, condition="pit", anchor_group=0.6)
    # The forger also fixes the bookkeeping so that only the positions give it away.
    r["selected"] = r["selected"][:-1] + [r["anchor"] + 2]
    r["n_future"], r["tvr"] = 0, 0.0
    _save(run, rows)
    codes = _codes(run)
    assert "pit-future-entry" in codes
    assert "tvr-mismatch" in codes  # recorded TVR 0 does not match the positions


def test_a_changed_capacity_is_caught(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    rows = _rows(run)
    _first(rows, condition="future")["capacity"] = 64
    _save(run, rows)
    assert "capacity-mismatch" in _codes(run)


def test_a_changed_corpus_hash_is_caught(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    rows = _rows(run)
    _first(rows, condition="pit")["corpus_hash"] = "0" * 64
    _save(run, rows)
    assert "corpus-hash-mismatch" in _codes(run)


def test_a_corpus_hash_changed_on_every_row_still_disagrees_with_the_manifest(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    rows = _rows(run)
    for r in rows:
        r["corpus_hash"] = "f" * 64
    _save(run, rows)
    assert "corpus-hash-mismatch" in _codes(run)


def test_an_altered_naive_row_is_caught(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    rows = _rows(run)
    r = _first(rows, condition="naive", memory="trace")
    r["recall@100"] = min(1.0, r["recall@100"] + 0.05) if r["recall@100"] < 1 else 0.5
    _save(run, rows)
    assert "naive-future-mismatch" in _codes(run)


def test_a_naive_row_with_other_entries_is_caught(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    rows = _rows(run)
    r = _first(rows, condition="naive", memory="cache")
    r["selected"] = list(reversed(r["selected"]))
    _save(run, rows)
    assert "naive-future-mismatch" in _codes(run)


def test_own_event_stateless_entries_and_horizon_breaches_are_caught(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    rows = _rows(run)
    fut = _first(rows, condition="future")
    fut["selected"] = fut["selected"][:-1] + [fut["anchor"]]
    st = _first(rows, condition="stateless")
    st["selected"], st["n_selected"] = [0], 1
    fh = next(r for r in rows if r["condition"] == "future-h" and r["horizon"] == 3 and r["anchor"] > 0)
    fh["selected"] = fh["selected"][:-1] + [fh["anchor"] + 7]
    _save(run, rows)
    codes = _codes(run)
    assert {"own-event", "ineligible-entry"} <= codes


def test_changed_budgets_missing_and_duplicate_rows_are_caught(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    rows = _rows(run)
    _first(rows, condition="pit")["trace_depth"] = 49
    dropped = _first(rows, condition="future-h", memory="cache")
    rows = [r for r in rows if r is not dropped]
    rows.append(dict(_first(rows, condition="stateless", memory="cache")))
    _save(run, rows)
    assert {"budget-mismatch", "missing-condition", "duplicate-row"} <= _codes(run)


def test_an_index_hash_other_than_the_manifests_is_caught(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    rows = _rows(run)
    for r in rows:
        r["index_hash"] = "a" * 64
    _save(run, rows)
    assert "index-hash-mismatch" in _codes(run)


def test_any_edit_to_a_run_file_breaks_its_manifest_hash(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    with open(run / "streams" / "syn" / "random-s0.json", "a", encoding="utf-8") as fh:
        fh.write(" ")
    assert _codes(run) == {"output-hash-mismatch"}


def test_metrics_raised_behind_a_rehashed_manifest_are_caught_naming_the_row_and_metric(finished_run, tmp_path, capsys):
    run = _copy(finished_run, tmp_path)
    rows = _rows(run)
    pit = [r for r in rows if r["condition"] == "pit"]
    for r in pit:  # the forger raises PIT recall and makes the manifest agree with the new file
        r["recall@10"] += 0.3
        r["recall@100"] += 0.3
    _save(run, rows)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    (rec,) = [o for o in manifest["outputs"] if o["path"] == "rows.jsonl"]
    rec.update(file_record(run / "rows.jsonl", run))
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")

    assert main(["audit", "check", str(run)]) == 1

    out = capsys.readouterr().out.splitlines()
    (line,) = [v for v in out if v.startswith("violation ")]
    assert line.startswith(f"violation metric-mismatch: {len(pit)} rows record metrics that differ from")
    first = pit[0]
    assert (
        f"row {first['row_id']}: recall@10 is {first['recall@10']:.6g}, recomputed {first['recall@10'] - 0.3:.6g}"
        in line
    )
    assert "recall@100" in line


def test_check_command_exits_non_zero_and_names_each_violation(finished_run, tmp_path, capsys):
    assert main(["audit", "check", str(finished_run)]) == 0
    assert "contract pass" in capsys.readouterr().out
    run = _copy(finished_run, tmp_path)
    rows = _rows(run)
    _first(rows, condition="future")["capacity"] = 5
    _first(rows, condition="pit")["corpus_hash"] = "1" * 64
    _save(run, rows)
    assert main(["audit", "check", str(run)]) == 1
    out = capsys.readouterr().out
    for code in ("capacity-mismatch", "corpus-hash-mismatch", "output-hash-mismatch"):
        assert f"violation {code}:" in out
    assert main(["audit", "check", str(run), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "fail" and {v["code"] for v in data["violations"]} >= {"capacity-mismatch"}


def _drop_entry(manifest: dict, path: str) -> None:
    manifest["outputs"] = [o for o in manifest["outputs"] if o["path"] != path]


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def tamper(run: Path, manifest: dict) -> None:
        node = manifest
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return tamper


def _garbage(path: str, data: bytes):
    """A run file replaced by ``data`` and its manifest entry removed, so that no sha256 gives it away."""

    def tamper(run: Path, manifest: dict) -> None:
        (run / path).write_bytes(data)
        _drop_entry(manifest, path)

    return tamper


def _row_field(field: str, value):
    def tamper(run: Path, manifest: dict) -> None:
        rows = _rows(run)
        rows[3][field] = value
        _save(run, rows)
        (rec,) = [o for o in manifest["outputs"] if o["path"] == "rows.jsonl"]
        rec.update(file_record(run / "rows.jsonl", run))  # the forger rehashes the rows

    return tamper


MANIFEST_TAMPERS = {  # id: (tamper(run, manifest), the violation code, what its message names)
    "config-hash": (_set("config_hash", "f" * 64), "manifest-mismatch", "config_hash"),
    "input-sha256": (_set("inputs", 0, "sha256", "e" * 64), "manifest-mismatch", "inputs.0"),
    "row-count": (_set("rows", 5), "manifest-mismatch", "rows: records 5"),
    "kind": (_set("kind", "audit-report"), "manifest-mismatch", "kind"),
    "stream-kind": (_set("bindings", "syn", "streams", "random-s0", "kind", "semantic"), "manifest-mismatch", "kind"),
    "output-entry-deleted": (
        lambda run, m: _drop_entry(m, "streams/syn/random-s0.json"),
        "output-hash-mismatch",
        "streams/syn/random-s0.json is in the run folder but has no entry",
    ),
    "output-bytes": (_set("outputs", 0, "bytes", 1), "output-hash-mismatch", "base/syn/bm25.npz has changed"),
    "output-not-an-object": (_set("outputs", 0, "x"), "manifest-mismatch", "outputs.0"),
    "output-path-a-number": (_set("outputs", 0, "path", 5), "manifest-mismatch", "outputs.0.path"),
    "output-path-outside": (_set("outputs", 0, "path", "../../etc/passwd"), "manifest-mismatch", "outputs.0.path"),
    "sha256-a-number": (_set("outputs", 1, "sha256", 5), "manifest-mismatch", "outputs.1.sha256"),
    "bindings-a-list": (_set("bindings", "syn", []), "manifest-mismatch", "bindings.syn"),
    "event-log-garbage": (_garbage("events/syn/bm25/random-s0.npz", b"PK\x03\x04 not a zip"), "malformed-file", "npz"),
    "stream-garbage": (_garbage("streams/syn/random-s0.json", b"{oops"), "malformed-file", "random-s0.json"),
    "config-invalid": (
        _garbage("config.json", b'{"config": {"workloads": "all"}, "config_hash": 1}'),
        "manifest-mismatch",
        "config.json: config.workloads",
    ),
    "row-anchor-a-string": (_row_field("anchor", "9"), "malformed-file", "rows.jsonl: line 4: field 'anchor'"),
    "row-selected-a-string": (_row_field("selected", "abc"), "malformed-file", "line 4: field 'selected'"),
}


@pytest.mark.parametrize("tamper, code, names", MANIFEST_TAMPERS.values(), ids=MANIFEST_TAMPERS.keys())
def test_edited_manifest_metadata_and_damaged_files_are_named_violations_never_a_pass_or_traceback(
    finished_run, tmp_path, capsys, tamper, code, names
):
    run = _copy(finished_run, tmp_path)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    tamper(run, manifest)
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")

    assert main(["audit", "check", str(run)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith(f"violation {code}: ") and names in line for line in lines), lines
    assert lines[-1].endswith("violations)") and "contract FAIL" in lines[-1]
