"""The fullwiki setting (issue: Tables 3 and 6): the sample is frozen and reproducible (hashes), disjoint from the
excluded (calibration) ids, the shards round-trip every article, and questions whose golds are missing from
the pool are kept and flagged."""

from __future__ import annotations

import bz2
import json
from pathlib import Path

import pytest

from harness.bench.datasets import DataError, load_articles
from harness.bench.fullwiki import prepare_fullwiki, read_fullwiki_manifest
from harness.bench.samples import ids_sha256, read_samples
from harness.files import read_id_list, sha256_file
from lens import LensError

from .conftest import pool_for, population, write_json, write_jsonl


@pytest.fixture
def fw_data(tmp_path: Path) -> dict:
    recs = population(40)
    articles = pool_for(recs, n_background=30)
    # two questions lose a gold article from the pool (the shared pool lacks some fullwiki golds)
    dropped = {recs[3]["supporting_facts"][0][0], recs[7]["supporting_facts"][1][0]}
    articles = [a for a in articles if a["title"] not in dropped]
    calibration = [recs[i]["_id"] for i in (0, 1, 2, 5)]
    return {
        "questions": write_json(tmp_path / "fullwiki.json", recs),
        "articles": write_jsonl(tmp_path / "articles.jsonl", articles),
        "exclude": write_jsonl(tmp_path / "readings.jsonl", [{"id": i, "requirements": []} for i in calibration]),
        "calibration": set(calibration),
        "n_articles": len(articles),
        "missing": {recs[3]["_id"], recs[7]["_id"]},
        "ids": [r["_id"] for r in recs],
        "root": tmp_path,
    }


def test_the_sample_is_frozen_reproducible_and_excludes_calibration(fw_data):
    a = prepare_fullwiki(
        fw_data["questions"],
        fw_data["articles"],
        fw_data["root"] / "a",
        size=20,
        exclude=[fw_data["exclude"]],
        shard_size=16,
    )
    b = prepare_fullwiki(
        fw_data["questions"],
        fw_data["articles"],
        fw_data["root"] / "b",
        size=20,
        exclude=[fw_data["exclude"]],
        shard_size=16,
    )
    sa, sb = a.manifest["sample"], b.manifest["sample"]
    assert sa["question_ids"] == sb["question_ids"] and sa["order_sha256"] == sb["order_sha256"]
    assert len(sa["question_ids"]) == 20 and not set(sa["question_ids"]) & fw_data["calibration"]
    assert sa["population"] == 36 and sa["excluded"] == 4
    assert sa["excluded_ids_sha256"] == ids_sha256(sorted(fw_data["calibration"]))
    # the sample folder is a regular frozen sample: `lens bench run --sample DIR/sample --stage 20` reads it
    fs = read_samples(fw_data["root"] / "a" / "sample")
    assert list(fs.stage(20).ids) == sa["question_ids"]
    assert sha256_file(fw_data["root"] / "a" / "sample" / "G20.txt") == sa["order_sha256"]
    # without the exclusion the draw differs (calibration ids would be sampled)
    c = prepare_fullwiki(fw_data["questions"], fw_data["articles"], fw_data["root"] / "c", size=20, shard_size=16)
    assert c.manifest["sample"]["sample_sha256"] != sa["sample_sha256"]


def test_shards_round_trip_every_article_in_the_official_layout(fw_data):
    out = fw_data["root"] / "fw"
    build = prepare_fullwiki(fw_data["questions"], fw_data["articles"], out, size=10, shard_size=16)
    pool = build.manifest["pool"]
    assert pool["articles"] == fw_data["n_articles"] and [s["path"] for s in pool["shards"]][:2] == [
        "AA/wiki_00.bz2",
        "AA/wiki_01.bz2",
    ]
    assert sum(s["articles"] for s in pool["shards"]) == pool["articles"]
    original = {a.id: a for a in load_articles(fw_data["articles"])}
    back = {a.id: a for a in load_articles(out / "pool")}
    assert back == original  # ids, titles and sentences, every article
    first = json.loads(bz2.open(out / "pool" / "AA" / "wiki_00.bz2").readline())
    assert set(first) == {"id", "url", "title", "text"} and isinstance(first["text"], list)
    for s in pool["shards"]:
        assert sha256_file(out / "pool" / s["path"]) == s["sha256"]


def test_missing_gold_questions_are_kept_and_flagged(fw_data):
    build = prepare_fullwiki(fw_data["questions"], fw_data["articles"], fw_data["root"] / "fw", size=40, shard_size=16)
    flags = build.manifest["gold"]["questions"]
    assert set(flags) == set(fw_data["ids"])  # every question sampled, none dropped
    flagged = {i for i, f in flags.items() if not f["gold_in_pool"]}
    assert flagged == fw_data["missing"] and all(flags[i]["missing_gold"] for i in flagged)
    assert build.manifest["gold"]["missing"] == 2 and build.manifest["gold"]["in_pool"] == 38


def test_a_rerun_verifies_and_keeps_the_build_and_other_inputs_are_refused(fw_data):
    out = fw_data["root"] / "fw"
    prepare_fullwiki(fw_data["questions"], fw_data["articles"], out, size=10, shard_size=16)
    again = prepare_fullwiki(fw_data["questions"], fw_data["articles"], out, size=10, shard_size=16)
    assert again.status == "existing"
    with pytest.raises(DataError, match="other inputs or parameters"):
        prepare_fullwiki(fw_data["questions"], fw_data["articles"], out, size=12, shard_size=16)
    (out / "pool" / "AA" / "wiki_00.bz2").write_bytes(b"tampered")
    with pytest.raises(DataError, match="does not verify"):
        prepare_fullwiki(fw_data["questions"], fw_data["articles"], out, size=10, shard_size=16)
    assert read_fullwiki_manifest(out)["format"] == "lens-fullwiki/1"


def test_id_lists_are_read_in_every_documented_form(tmp_path):
    (tmp_path / "a.txt").write_text("q1\nq2\n")
    (tmp_path / "b.json").write_text(json.dumps(["q1", {"_id": "q3"}]))
    (tmp_path / "c.jsonl").write_text('{"id": "q4"}\n{"_id": "q5"}\n')
    (tmp_path / "d.jsonl").write_text('{"name": "q6"}\n')
    assert read_id_list(tmp_path / "a.txt") == {"q1", "q2"}
    assert read_id_list(tmp_path / "b.json") == {"q1", "q3"}
    assert read_id_list(tmp_path / "c.jsonl") == {"q4", "q5"}
    with pytest.raises(LensError, match='line 1: no "id" or "_id" field'):
        read_id_list(tmp_path / "d.jsonl")


def test_the_cli_prepares_and_reports(fw_data, capsys):
    from lens.faces._cli import main

    code = main(
        [
            "bench",
            "fullwiki",
            "--questions",
            str(fw_data["questions"]),
            "--articles",
            str(fw_data["articles"]),
            "--out",
            str(fw_data["root"] / "cli"),
            "--size",
            "12",
            "--exclude",
            str(fw_data["exclude"]),
            "--shard-size",
            "16",
            "--json",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "built" and summary["sample"]["size"] == 12 and summary["sample"]["excluded"] == 4
