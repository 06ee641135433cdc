"""`lens calibrate run` / `fit` / `endpoint`: window-level labels from supporting sentences, the production reading
over each requirement's best windows, resumable rows, and a reading model whose fit and config table are checked
against known data."""

from __future__ import annotations

import argparse
import json
import math
import random
import stat
from pathlib import Path

import pytest
import respx

from harness.calibrate.commands import endpoint, fit, read_rows, write_reading_model
from harness.calibrate.fit import auc, fit_readings, logistic_fit
from harness.calibrate.labels import SupportingFacts, hop_articles
from harness.calibrate.run import calibrate_readings
from lens import LensError
from lens._config import load_config
from lens.faces._cli import main
from lens.parts import READING_FEATURES, ReadingModel, reading_model_for
from tests.lens.conftest import BASE_URL, CHAT_URL, MODEL, with_full_disk
from tests.lens.scripted_oracle import Rule, ScriptedOracle

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ARTICLES = {
    "Osk Yard": ["Osk Yard is a boatbuilder in Harrowmouth.", "It was founded in 1887 by Ilse Osk."],
    "Marren Gull": ["The Marren Gull is a ferry.", "She was built by Osk Yard in 1931."],
    "Tally Boatworks": ["Tally Boatworks is a boatbuilder in Dunmere.", "It was founded in 1902."],
    "Dunmere": ["Dunmere is a town with a boatbuilder and a ferry.", "The Marren Gull calls at Dunmere."],
}
QUESTION = {
    "_id": "q1",
    "type": "bridge",
    "answer": "1887",
    "question": "In what year was the boatbuilder that built the ferry Marren Gull founded?",
    "supporting_facts": [["Marren Gull", 1], ["Osk Yard", 1]],
}
REQS = [
    {"id": "R1", "text": "Which boatbuilder built the ferry Marren Gull?", "depends_on": None},
    {"id": "R2", "text": "In what year was #R1 founded?", "depends_on": "R1"},
]


# --------------------------------------------------------------------------- labels


def test_hops_are_told_apart_by_which_gold_article_names_the_other():
    hops = hop_articles(QUESTION, ARTICLES)
    assert hops["first"] == ["Marren Gull"] and hops["second"] == ["Osk Yard"]


def test_a_second_hop_article_is_not_a_positive_for_the_first_hop_requirement():
    facts = SupportingFacts(QUESTION, ARTICLES, REQS)
    r1 = REQS[0]["text"]
    assert facts.holds("R1", r1, "Marren Gull", ARTICLES["Marren Gull"])
    assert not facts.holds("R1", r1, "Osk Yard", ARTICLES["Osk Yard"])  # a true sentence of the other hop
    assert facts.holds("R2", "In what year was Osk Yard founded?", "Osk Yard", ARTICLES["Osk Yard"])


def test_the_label_is_the_windows_whatever_sentence_the_reading_named():
    """A finding on a non-supporting sentence of an evidence window is positive for the window; the sentence's own
    label (citation precision) is recorded apart."""
    facts = SupportingFacts(QUESTION, ARTICLES, REQS)
    r1 = REQS[0]["text"]
    window = ARTICLES["Marren Gull"]
    assert facts.holds("R1", r1, "Marren Gull", window)  # the window label: positive
    assert not facts.holds("R1", r1, "Marren Gull", ["The Marren Gull is a ferry."])  # the sentence named: not support


def test_the_final_requirement_of_a_bridge_needs_the_gold_answer_as_its_value():
    facts = SupportingFacts(QUESTION, ARTICLES, REQS)
    assert facts.value_ok("R2", "1887") is True and facts.value_ok("R2", "1877") is False
    assert facts.value_ok("R1", "Osk Yard") is None  # no gold value for a first hop
    comparison = SupportingFacts(dict(QUESTION, type="comparison", answer="Osk Yard"), ARTICLES, REQS)
    assert comparison.value_ok("R2", "1887") is None


# --------------------------------------------------------------------------- the run


def pool_file(tmp_path) -> Path:
    pool = tmp_path / "articles.jsonl"
    pool.write_text("".join(json.dumps({"title": t, "sentences": s}) + "\n" for t, s in ARTICLES.items()))
    return pool


def oracle() -> ScriptedOracle:
    return ScriptedOracle(
        decompositions={
            QUESTION["question"]: {
                "questions": ["Which boatbuilder built the ferry Marren Gull?", "In what year was #1 founded?"]
            }
        },
        rules=[
            Rule("boatbuilder built", "built by Osk Yard", "She was built by Osk Yard in 1931.", "Osk Yard"),
            Rule("boatbuilder built", "calls at Dunmere", "The Marren Gull calls at Dunmere.", "Dunmere"),
            Rule("year was Osk Yard founded", "founded in 1887", "It was founded in 1887 by Ilse Osk.", "1887"),
        ],
        confidence=0.95,
    )


def cfg(**loop):
    over = {"llm": {"base_url": BASE_URL, "model": MODEL, "cache": False, "max_retries": 0}, "prior": {"candidates": 4}}
    return load_config("deep", overrides=over | ({"loop": loop} if loop else {}))


def test_run_reads_each_requirements_best_windows_labels_them_and_resumes(tmp_path):
    o = oracle()
    out = tmp_path / "cal"
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=o.reply)
        assert calibrate_readings(cfg(), [QUESTION], str(pool_file(tmp_path)), str(out), windows=2) == 1
        calls = len(o.calls)
        assert calibrate_readings(cfg(), [QUESTION], str(pool_file(tmp_path)), str(out), windows=2) == 0  # done
    assert len(o.calls) == calls
    (row,) = read_rows([str(out)])
    rds = row["readings"]
    assert o.calls.count("reading") == len(rds) <= 4  # two windows per requirement
    by = {(r["requirement_id"], r["title"], r["found"]): r for r in rds}
    assert by[("R1", "Marren Gull", True)]["label"] == 1 and by[("R1", "Marren Gull", True)]["sentence_label"] == 1
    r2 = by[("R2", "Osk Yard", True)]  # bridged with R1's confirmed value
    assert r2["requirement"] == "In what year was Osk Yard founded?" and r2["label"] == 1 and r2["value_ok"] is True
    assert all(r["logprobs"] and set(r["features"]) == set(READING_FEATURES) for r in rds)


def test_a_reader_the_current_model_calls_too_weak_is_still_read(tmp_path):
    weak = ReadingModel.from_rates(0.5, 0.49).model_dump()  # the agent would stop "futile" at once
    o = oracle()
    out = tmp_path / "cal"
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=o.reply)
        calibrate_readings(cfg(reading_model={MODEL: weak}), [QUESTION], str(pool_file(tmp_path)), str(out), windows=2)
    assert read_rows([str(out)])[0]["readings"]


def test_a_torn_last_row_is_skipped_and_the_question_rerun(tmp_path):
    from lens._files import append_lines

    out = tmp_path / "cal"
    out.mkdir()
    good = {"id": "a", "readings": [], "model": MODEL}
    (out / "readings.jsonl").write_text(json.dumps(good) + "\n" + '{"id": "b", "read')
    assert [r["id"] for r in read_rows([str(out)])] == ["a"]
    append_lines(out / "readings.jsonl", [json.dumps(dict(good, id="b"))])
    assert [r["id"] for r in read_rows([str(out)])] == ["a", "b"]


# --------------------------------------------------------------------------- the fit


def test_logistic_fit_recovers_known_coefficients():
    rng = random.Random(0)
    X, y = [], []
    for _ in range(4000):
        a, b = rng.random(), float(rng.random() < 0.5)
        z = -1.0 + 2.0 * a + 1.5 * b
        X.append([a, b])
        y.append(int(rng.random() < 1 / (1 + math.exp(-z))))
    coef, intercept = logistic_fit(X, y, l2=0.0)
    assert coef == pytest.approx([2.0, 1.5], abs=0.3) and intercept == pytest.approx(-1.0, abs=0.2)


def test_auc_counts_ties_as_half():
    assert auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    assert auc([0.5, 0.5], [0, 1]) == 0.5
    assert auc([0.5], [1]) is None


def synthetic_rows(n_questions=60, seed=1, signal=True):
    """Readings of six ranked windows per question; with ``signal`` the score tells the label apart beyond the rank,
    without it the score is noise."""
    rng = random.Random(seed)
    rows = []
    for q in range(n_questions):
        readings = []
        for rank in range(6):
            label = int(rng.random() < (0.5 if rank == 0 else 0.15))
            p = rng.betavariate(4, 1.5) if (label and signal) else rng.betavariate(1.5, 2.5)
            found = p > 0.5
            feats = dict.fromkeys(READING_FEATURES, 0.0)
            feats.update(score=math.log(p / (1 - p)), found=float(found), log_rank=math.log1p(rank))
            readings.append({"label": label, "found": found, "features": feats, "logprobs": True})
        rows.append({"id": f"q{q}", "model": MODEL, "readings": readings})
    return rows


def test_a_reading_that_carries_evidence_keeps_its_likelihood_ratio():
    report = fit_readings(synthetic_rows(), folds=5)
    cv = report["cross_validated"]
    assert cv["log_loss"]["model"] < cv["log_loss"]["base"]
    assert cv["model_auc"] > cv["base_auc"] and cv["lr_auc"] > 0.65
    lr_up = cv["operating_points"]["log LR >= 0.5"]["LR"]
    lr_down = cv["operating_points"]["log LR <= -0.5"]["LR"]
    assert lr_up > 2 and lr_down < 0.5
    assert sum(b["n"] for b in cv["reliability"]) == report["readings"]
    m = ReadingModel.model_validate(report["reading_model"])  # the table is a valid config
    assert m.coef[m.features.index("score")] > 0.3


def test_readings_without_evidence_beyond_the_rank_get_a_likelihood_ratio_near_one():
    report = fit_readings(synthetic_rows(40, seed=3, signal=False), folds=5)
    assert report["l2"] >= 10.0
    m = ReadingModel.model_validate(report["reading_model"])
    for score in (-3.0, 0.0, 3.0):
        feats = dict.fromkeys(READING_FEATURES, 0.0) | {"score": score, "found": float(score > 0)}
        assert abs(m.log_lr(feats, logprobs=True)) < 0.2


def test_the_printed_table_loads_as_configuration(tmp_path, capsys):
    runs = tmp_path / "r" / "readings.jsonl"
    runs.parent.mkdir()
    runs.write_text("".join(json.dumps(r) + "\n" for r in synthetic_rows()))
    fit(argparse.Namespace(runs=[str(runs.parent)], folds=5, out=None, json=False))
    block = capsys.readouterr().out.split("the config table:\n", 1)[1]
    user = tmp_path / "user.toml"
    user.write_text(block)
    c = load_config("deep", file=user, overrides={"llm": {"model": MODEL, "base_url": BASE_URL}})
    assert reading_model_for(c).n == 360


def test_writing_the_table_replaces_the_models_old_one_and_keeps_the_rest(tmp_path):
    user = tmp_path / "config.toml"
    user.write_text('[llm]\ntemperature = 0.0\n\n[loop.reading_model."m"]\nn = 1\n\n[budget]\nmax_rounds = 5\n')
    write_reading_model(user, "m", {"n": 2})
    text = user.read_text()
    assert text.count('[loop.reading_model."m"]') == 1 and "n = 2" in text and "n = 1" not in text
    assert "max_rounds = 5" in text and "temperature = 0.0" in text


@pytest.mark.parametrize(
    "old",
    [
        "",
        "[loop]\nmax_rounds = 3\n",
        "[loop]\nreading_model = { m = { n = 1, stale = true } }\n",
        "loop.reading_model.m.n = 1\nloop.reading_model.m.stale = true\n",
        "[loop.reading_model.'m']\nn = 1\nstale = true\n[loop]\nmax_rounds = 3\n",
    ],
    ids=["new-file", "other-loop-keys", "inline-table", "dotted-keys", "literal-key-out-of-order"],
)
def test_the_table_is_written_as_toml_however_the_file_spells_it(tmp_path, old):
    user = tmp_path / "config.toml"
    user.write_text(old)
    write_reading_model(user, "m", {"n": 2, "coef": [0.5, -1.25], "features": ["score"], "auc": None})
    data = tomllib.loads(user.read_text())
    assert data["loop"]["reading_model"] == {"m": {"n": 2, "coef": [0.5, -1.25], "features": ["score"]}}
    assert data["loop"].get("max_rounds", 3) == 3


def test_endpoint_writes_a_config_every_command_can_read_keeping_its_comments_mode_and_link(tmp_path):
    """A model name with a quote and a backslash, its old table spelt as a literal key, the config a 0600
    symlinked dotfile with comments: the table is replaced in place, the file stays a private link that parses."""
    model = 'we"ird\\name'
    dotfile = tmp_path / "dotfiles" / "lens.toml"
    dotfile.parent.mkdir()
    dotfile.write_text(
        "# my lens settings\n[llm]\ntemperature = 0.0  # cold, always\n\n"
        f"[loop.reading_model.'{model}']\n# fitted by hand last week\nn = 1\n"
        "# budget below: keep it small\n\n[budget]\nmax_rounds = 5\n"
    )
    dotfile.chmod(0o600)
    user = tmp_path / "config.toml"
    user.symlink_to(dotfile)
    o = ScriptedOracle(rules=[Rule(".", " ", " ", "")], confidence=0.8)
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=o.reply)
        assert endpoint(endpoint_args(tmp_path, write_config=str(user), model=model)) == 0
    assert user.is_symlink() and stat.S_IMODE(dotfile.stat().st_mode) == 0o600
    text = dotfile.read_text()
    for comment in ("# my lens settings", "# cold, always", "# fitted by hand last week", "# budget below"):
        assert comment in text
    assert list(tomllib.loads(text)["loop"]["reading_model"]) == [model]
    c = load_config("deep", file=user, overrides={"llm": {"model": model, "base_url": BASE_URL}})
    assert reading_model_for(c).n > 1 and c.budget.max_rounds == 5


def test_a_config_that_cannot_be_written_is_one_error_naming_it_and_left_as_it_was(tmp_path):
    user = tmp_path / "config.toml"
    user.write_text("# mine\n[llm]\ntemperature = 0.0\n" + "# padding\n" * 200)
    before = user.read_bytes()

    def write_on_a_full_disk():
        try:
            write_reading_model(user, "m", {"n": 2, "features": ["x" * 50] * 100})
        except LensError as exc:
            return str(exc)
        return None

    message = with_full_disk(len(before) + 100, write_on_a_full_disk)
    assert message is not None and message.startswith(f"{user}: cannot write the config") and "unchanged" in message
    assert user.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["config.toml"]


def test_a_config_that_is_not_toml_is_refused_before_any_work(tmp_path):
    user = tmp_path / "config.toml"
    user.write_text('[loop.reading_model."a"b"]\nn = 1\n')  # what the old writer left behind
    with respx.mock(assert_all_called=False) as router:
        route = router.post(CHAT_URL)
        with pytest.raises(LensError, match=r"config\.toml: not valid TOML"):
            endpoint(endpoint_args(tmp_path, write_config=str(user)))
    assert not route.called and user.read_text() == '[loop.reading_model."a"b"]\nn = 1\n'


def endpoint_args(tmp_path, *, write_config=None, model=None, limit=4) -> argparse.Namespace:
    return argparse.Namespace(
        out=str(tmp_path / "cal"),
        write_config=write_config,
        windows=3,
        limit=limit,
        preset=None,
        config=None,
        set=[f"llm.base_url={BASE_URL}", f"llm.model={MODEL}", "llm.cache=false", "llm.max_retries=0"],
        base_url=None,
        model=model,
        local_model=None,
        no_cache=False,
    )


def test_endpoint_calibrates_on_the_shipped_set_and_writes_the_user_config(tmp_path, monkeypatch):
    """One command: the shipped questions are read (here two of them, through a scripted endpoint that names the
    sentence holding a gold title's words), the model fitted, its table written where the user config lives."""
    user = tmp_path / "config.toml"
    monkeypatch.setenv("LENS_USER_CONFIG", str(user))
    o = ScriptedOracle(rules=[Rule(".", " ", " ", "")], confidence=0.8)
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=o.reply)
        assert endpoint(endpoint_args(tmp_path)) == 0
    c = load_config("deep", overrides={"llm": {"model": MODEL, "base_url": BASE_URL}})
    assert reading_model_for(c).n > 0 and (tmp_path / "cal" / "fit.json").exists()


# --------------------------------------------------------------------------- malformed inputs


def _reading(rows, **change):
    rows[0]["readings"][0].update(change)


def _feature(name, value):
    return lambda rows: rows[0]["readings"][0]["features"].__setitem__(name, value)


FIT_INPUTS = {  # id: (change to 12 good rows, extra arguments, what the error names)
    "nan-feature": (_feature("score", math.nan), [], "readings.jsonl:1: readings[0]: feature 'score'"),
    "string-feature": (_feature("score", "high"), [], "readings.jsonl:1: readings[0]: feature 'score'"),
    "null-feature": (_feature("found", None), [], "readings.jsonl:1: readings[0]: feature 'found'"),
    "huge-log-rank": (_feature("log_rank", 1e6), [], "readings.jsonl:1: readings[0]: feature 'log_rank'"),
    "missing-log-rank": (
        lambda rows: rows[0]["readings"][0]["features"].pop("log_rank"),
        [],
        "readings.jsonl:1: readings[0]: field 'features'",
    ),
    "null-features": (
        lambda rows: _reading(rows, features=None),
        [],
        "readings.jsonl:1: readings[0]: field 'features'",
    ),
    "string-label": (lambda rows: _reading(rows, label="yes"), [], "readings.jsonl:1: readings[0]: field 'label'"),
    "readings-not-a-list": (lambda rows: rows[0].update(readings={}), [], "readings.jsonl:1: field 'readings'"),
    "id-not-a-string": (lambda rows: rows[0].update(id=["q0"]), [], "readings.jsonl:1: field 'id'"),
    "single-question": (lambda rows: rows.__delitem__(slice(1, None)), [], "1 question(s) cannot be cross-validated"),
    "folds-0": (lambda rows: None, ["--folds", "0"], "--folds must be 2 or more (got 0)"),
    "folds-1": (lambda rows: None, ["--folds", "1"], "--folds must be 2 or more (got 1)"),
    "folds-negative": (lambda rows: None, ["--folds", "-3"], "--folds must be 2 or more (got -3)"),
    "out-is-a-folder": (lambda rows: None, ["--out", "{tmp}"], "a folder; --out names the file"),
}


@pytest.mark.parametrize("change, extra, names", FIT_INPUTS.values(), ids=FIT_INPUTS.keys())
def test_a_malformed_fit_input_is_one_line_naming_it_and_exit_2(tmp_path, capsys, change, extra, names):
    rows = synthetic_rows(12)
    change(rows)
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "readings.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["calibrate", "fit", str(run_dir), *[a.format(tmp=tmp_path) for a in extra]]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("lens: error: ") and names in line


RUN_INPUTS = {  # id: (question fields, articles file text or None for no file, extra arguments, what the error names)
    "supporting-facts-not-pairs": ({"supporting_facts": [["Osk Yard"]]}, ..., [], "record 0: field 'supporting_facts'"),
    "supporting-facts-a-string": ({"supporting_facts": "Osk Yard"}, ..., [], "record 0: field 'supporting_facts'"),
    "null-question": ({"question": None}, ..., [], "questions.json: record 0: field 'question'"),
    "missing-articles": ({}, None, [], "articles.jsonl: cannot read the articles"),
    "title-not-a-string": ({}, '{"title": 5, "sentences": ["x"]}\n', [], "articles.jsonl: line 1: field 'title'"),
    "sentences-not-strings": ({}, '{"title": "A", "sentences": [1]}\n', [], "line 1: field 'sentences'"),
    "article-not-an-object": ({}, '["Osk Yard"]\n', [], "articles.jsonl: line 1: not an article record"),
    "empty-articles": ({}, "\n", [], "articles.jsonl: no articles"),
    "out-is-a-file": ({}, ..., ["--out", "{tmp}/questions.json"], "questions.json: not a folder"),
    "negative-limit": ({}, ..., ["--limit", "-1"], "--limit must be 0 or more"),
}


@pytest.mark.parametrize("fields, articles, extra, names", RUN_INPUTS.values(), ids=RUN_INPUTS.keys())
def test_a_malformed_run_input_is_one_line_naming_it_exit_2_and_marks_nothing_done(
    tmp_path, capsys, fields, articles, extra, names
):
    """Checked before any call: no question is read, and none is marked done (an empty articles file once wrote
    rows with no reading that a rerun with the real articles skipped)."""
    (tmp_path / "questions.json").write_text(json.dumps([dict(QUESTION, **fields)]))
    pool = pool_file(tmp_path)
    if articles is None:
        pool.unlink()
    elif articles is not ...:
        pool.write_text(articles)
    out = tmp_path / "cal"
    argv = ["calibrate", "run", "--questions", str(tmp_path / "questions.json"), "--articles", str(pool)]
    argv += ["--out", str(out), *[a.format(tmp=tmp_path) for a in extra], "--base-url", BASE_URL]
    with respx.mock(assert_all_called=False) as router:
        route = router.post(CHAT_URL).mock(side_effect=oracle().reply)
        assert main([*argv, "--set", "llm.cache=false", "--set", "llm.max_retries=0"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("lens: error: ") and names in line
    assert not route.called and not (out / "readings.jsonl").exists()
