"""Loaders: official question layouts, article JSONL / .bz2 shards, predictions; one clear error per bad record."""

from __future__ import annotations

import bz2
import json

import pytest

from harness.bench.datasets import (
    Article,
    DataError,
    article_key,
    load_articles,
    load_predictions,
    load_questions,
)


def test_loads_distractor_layout_with_tuples_and_gold_titles(tmp_path, make):
    rec = make.question_record("q1", n_facts=3)
    rec["supporting_facts"].append(["topic q1 a", 2])  # same article, other case: not a new gold title
    path = make.write_json(tmp_path / "q.json", [rec])
    (q,) = load_questions(path)
    assert q.id == "q1" and q.answer == "answer q1" and q.type == "bridge" and q.level == "hard"
    assert q.supporting_facts[:2] == (("Topic q1 A", 0), ("Topic q1 B", 0))
    assert q.context[0][1] == ("Topic q1 A sentence 0.", "Topic q1 A sentence 1.", "Topic q1 A sentence 2.")
    assert q.gold_titles == ("Topic q1 A", "Topic q1 B")


def test_title_key_is_case_and_space_insensitive_and_unicode_normalised():
    assert article_key("Ed  Wood ") == article_key("ed wood")
    assert article_key("Café") == article_key("CAFE\u0301")
    assert article_key("Ed Wood") != article_key("Ed Woods")


def test_loads_the_shared_distractor_fullwiki_and_article_files(shared_dir):
    dist = load_questions(shared_dir / "hotpot_dev_distractor.json")
    full = load_questions(shared_dir / "hotpot_dev_fullwiki.json")
    arts = load_articles(shared_dir / "wiki_articles.jsonl")
    assert (len(dist), len(full), len(arts)) == (588, 279, 15227)
    assert all(len(q.gold_titles) >= 2 for q in dist)
    assert arts[0].title == "Ed Wood (film)" and arts[0].sentences[0].startswith("Ed Wood is a 1994")


def test_articles_from_jsonl_bz2_shard_and_folder_agree(tmp_path):
    rows = [
        {"id": "12", "url": "https://en.wikipedia.org/wiki?curid=12", "title": "Anarchism", "text": ["A.", " B."]},
        {"id": 13, "url": "u", "title": "Nested", "text": [["P1 s1.", " P1 s2."], ["P2 s1."]]},
        {"id": "14", "title": "Plain", "text": "First sentence. Second sentence."},
    ]
    blob = "".join(json.dumps(r) + "\n" for r in rows).encode()
    (tmp_path / "shards" / "AA").mkdir(parents=True)
    (tmp_path / "shards" / "AA" / "wiki_00.bz2").write_bytes(bz2.compress(blob))
    (tmp_path / "shards" / "AA" / ".hidden.bz2").write_bytes(b"not read")
    (tmp_path / "one.jsonl").write_bytes(blob)
    expected = [
        Article("12", "Anarchism", ("A.", " B.")),
        Article("13", "Nested", ("P1 s1.", " P1 s2.", "P2 s1.")),
        Article("14", "Plain", ("First sentence.", "Second sentence.")),
    ]
    assert load_articles(tmp_path / "one.jsonl") == expected
    assert load_articles(tmp_path / "shards" / "AA" / "wiki_00.bz2") == expected
    assert load_articles(tmp_path / "shards") == expected


def test_sentences_field_wins_over_text(tmp_path, make):
    path = make.write_jsonl(tmp_path / "a.jsonl", [{"id": "p0", "title": "T", "text": "x y", "sentences": ["x", " y"]}])
    assert load_articles(path) == [Article("p0", "T", ("x", " y"))]


# ---------------------------------------------------------------- malformed inputs: one error naming the record


def _error(fn, path) -> str:
    with pytest.raises(DataError) as info:
        fn(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_truncated_question_json_names_the_cut_record(tmp_path, make):
    text = json.dumps(make.population(5))
    path = tmp_path / "questions.json"
    path.write_text(text[: text.index('"q003"') + 40])
    msg = _error(load_questions, path)
    assert msg.startswith(f"{path}: record 3:") and "truncated" in msg


def test_question_file_cut_between_records_is_reported_as_truncated(tmp_path, make):
    text = json.dumps(make.population(3))
    path = tmp_path / "questions.json"
    path.write_text(text[:-1])  # drop the closing bracket
    assert "record 2" in _error(load_questions, path) and "truncated" in _error(load_questions, path)


def test_missing_field_names_file_record_and_field(tmp_path, make):
    recs = make.population(20)
    del recs[17]["answer"]
    path = make.write_json(tmp_path / "questions.json", recs)
    assert _error(load_questions, path) == f'{path}: record 17: field "answer" missing'


def test_wrong_type_names_the_field_and_types(tmp_path, make):
    recs = make.population(3)
    recs[1]["answer"] = 42
    path = make.write_json(tmp_path / "questions.json", recs)
    assert _error(load_questions, path) == f'{path}: record 1: field "answer" is integer, expected string'


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda r: r.__setitem__("supporting_facts", [["T", "0"]]), 'field "supporting_facts" item 0'),
        (lambda r: r.__setitem__("supporting_facts", [["T", True]]), 'field "supporting_facts" item 0'),
        (lambda r: r.__setitem__("supporting_facts", {"T": 0}), 'field "supporting_facts" is object'),
        (lambda r: r.__setitem__("context", [["T", "one sentence"]]), 'field "context" item 0'),
        (lambda r: r.__setitem__("context", [["T", ["ok", 3]]]), 'field "context" item 0'),
        (lambda r: r.pop("_id"), 'field "_id" missing'),
        (lambda r: r.__setitem__("type", None), 'field "type" is null'),
    ],
)
def test_malformed_nested_fields_are_named(tmp_path, make, mutate, expected):
    recs = make.population(4)
    mutate(recs[2])
    path = make.write_json(tmp_path / "questions.json", recs)
    msg = _error(load_questions, path)
    assert msg.startswith(f"{path}: record 2: ") and expected in msg


def test_not_an_array_duplicate_ids_and_missing_files_are_clear(tmp_path, make):
    obj = make.write_json(tmp_path / "obj.json", {"data": []})
    assert "expected a JSON array" in _error(load_questions, obj)
    recs = make.population(3)
    recs[2]["_id"] = recs[0]["_id"]
    dup = make.write_json(tmp_path / "dup.json", recs)
    assert _error(load_questions, dup) == f"{dup}: record 2: field \"_id\" 'q000' repeats record 0"
    assert "no such file" in _error(load_questions, tmp_path / "absent.json")
    empty = tmp_path / "empty.json"
    empty.write_text("  ")
    assert "empty file" in _error(load_questions, empty)


def test_malformed_article_lines_name_record_and_line(tmp_path):
    path = tmp_path / "articles.jsonl"
    path.write_text('{"id": "p0", "title": "A", "sentences": ["x"]}\n\n{"id": "p1", "sentences": ["y"]}\n')
    assert _error(load_articles, path) == f'{path}: record 1 (line 3): field "title" missing'
    path.write_text('{"id": "p0", "title": "A", "sentences": ["x"]}\n{"id": "p1", "title": "B", "sente')
    msg = _error(load_articles, path)
    assert msg.startswith(f"{path}: record 1 (line 2): malformed JSON") and "truncated" in msg
    path.write_text('{"id": "p0", "title": "A", "sentences": "x"}\n')
    assert 'field "sentences" must be an array of strings' in _error(load_articles, path)
    path.write_text('{"id": true, "title": "A", "sentences": ["x"]}\n')
    assert 'field "id" is boolean' in _error(load_articles, path)


def test_truncated_bz2_shard_is_reported(tmp_path):
    rows = (json.dumps({"id": str(i), "title": f"T{i}", "text": ["s."]}).encode() + b"\n" for i in range(200))
    blob = bz2.compress(b"".join(rows))
    path = tmp_path / "wiki_00.bz2"
    path.write_bytes(blob[: len(blob) // 2])
    msg = _error(load_articles, path)
    assert msg.startswith(str(path)) and ("truncated" in msg or "unreadable" in msg)


def test_empty_shard_folder_is_an_error(tmp_path):
    (tmp_path / "shards").mkdir()
    assert "no .bz2 or .jsonl" in _error(load_articles, tmp_path / "shards")


# ---------------------------------------------------------------- predictions


def test_predictions_keep_absent_sections_absent_and_validate_types(tmp_path, make):
    ok = make.write_json(tmp_path / "p.json", {"answer": {"q1": "x"}})
    assert load_predictions(ok) == {"answer": {"q1": "x"}}
    both = make.write_json(tmp_path / "b.json", {"answer": {}, "sp": {"q1": [["T", 0]]}})
    assert load_predictions(both)["sp"] == {"q1": [("T", 0)]}
    bad = make.write_json(tmp_path / "bad.json", {"answer": {"q1": 3}})
    assert _error(load_predictions, bad) == f"{bad}: answer for 'q1' is integer, expected string"
    bad_sp = make.write_json(tmp_path / "bad_sp.json", {"sp": {"q1": [["T", "0"]]}})
    assert "sp for 'q1' item 0" in _error(load_predictions, bad_sp)
    neither = make.write_json(tmp_path / "n.json", {"answers": {}})
    assert 'neither "answer" nor "sp"' in _error(load_predictions, neither)
    cut = tmp_path / "cut.json"
    cut.write_text('{"answer": {"q1": "x"')
    assert "malformed JSON" in _error(load_predictions, cut)
