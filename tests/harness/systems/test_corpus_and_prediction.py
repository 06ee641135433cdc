"""Snapshot folders as documents (titles, sentence lines, checksum), and the prediction record."""

from __future__ import annotations

import shutil

import pytest

from harness.bench.datasets import DataError
from harness.bench.snapshots import read_manifest
from harness.bench.systems import Passage, Prediction, RetrievedDoc, SnapshotCorpus
from harness.bench.systems.corpus import folder_signature, read_snapshot_doc


def test_corpus_reads_title_lines_and_sentence_lines(bench_data):
    corpus = SnapshotCorpus.load(bench_data["D6"])
    qid = read_manifest(bench_data["snap"] / "D6.manifest.json")["sample"]["question_ids"][0]
    n = qid[1:]
    lake = corpus.by_title(f"lake osk{n}")  # titles compare case-insensitively
    assert lake.title == f"Lake Osk{n}"
    assert lake.sentences[1] == f"Lake Osk{n} lies in Tallow{n}."  # sent_id 1 = line 3
    assert corpus.names == sorted(corpus.names, key=lambda n: n.encode())


def test_corpus_checksum_is_the_manifests(bench_data):
    for name in ("D6", "D12"):
        manifest = read_manifest(bench_data["snap"] / f"{name}.manifest.json")
        assert SnapshotCorpus.load(bench_data[name]).checksum == manifest["corpus_checksum"]


def test_folder_signature_changes_when_a_file_is_added(bench_data, tmp_path):
    folder = shutil.copytree(bench_data["D6"], tmp_path / "D6")
    before = folder_signature(folder)
    (folder / "New article").write_text("New article\nIt is new.\n", encoding="utf-8")
    assert folder_signature(folder) != before


def test_missing_or_empty_folder_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="no such snapshot folder"):
        SnapshotCorpus.load(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no readable documents"):
        SnapshotCorpus.load(tmp_path / "empty")


def test_a_vanished_file_reads_as_none(bench_data):
    assert read_snapshot_doc(bench_data["D6"], "No such article") is None


def test_prediction_round_trips_through_json_and_grounds_by_the_metrics_rule():
    pred = Prediction(
        system="react",
        answer="Tallow03",
        retrieved=[RetrievedDoc("Lake Osk03", "Lake Osk03")],
        evidence=[Passage("Lake Osk03", "Lake Osk03", "Lake Osk03 lies in Tallow03.", 3, 3, 1, 1)],
        supporting_facts=[("Lake Osk03", 1)],
        prompt_tokens=7,
        completion_tokens=2,
        oracle_calls=1,
        details={"steps": []},
    )
    again = Prediction.from_json(pred.to_json())
    assert again == pred
    assert pred.to_json()["tokens"] == 9
    assert pred.grounded(["Varn03 River", "Lake Osk03"])
    assert not Prediction(system="x", answer="Elsewhere", evidence=pred.evidence).grounded(["Lake Osk03"])
    # yes/no needs a passage from every gold article
    yes = Prediction(system="x", answer="yes", evidence=pred.evidence)
    assert not yes.grounded(["Varn03 River", "Lake Osk03"]) and yes.grounded(["Lake Osk03"])
