"""Readings (SPEC §2, "a noisy oracle must not make things worse"): the sentence-choice reading and its graded score,
code checks of the reply, the reading model's likelihood ratio against the rank-only baseline, and — end to end
through respx with scripted token log-probabilities — a strong graded signal that certifies and stops early, a weak
one that stops futile, a confident "none" that lowers its window, the conservative default for an uncalibrated
model, memory admitted by posterior, and the oracle-call bound for every model."""

from __future__ import annotations

import json
import math
import random
from types import SimpleNamespace

import pytest
import respx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lens._agent import Agent
from lens._config import READING_FEATURES, load_config
from lens._result import AskResult, QuestionCost, RequirementStatus, RoundTrace
from lens.faces._cli import main
from lens.loop._grading import FEATURE_RANGE, UNCALIBRATED, ReadingModel, reading_features, reading_model_for
from lens.loop._reading import Judgement, read_window, reading_messages
from lens.memory._memory import MemoryStore
from lens.reader._documents import Document
from lens.reader._windows import windows_for

from .conftest import BASE_URL, CHAT_URL, MODEL, completion, error
from .test_agent import BRIDGE_Q, bridge_oracle


def model(**coef) -> ReadingModel:
    """A reading model: ``coef`` by feature name (others 0), constant ``shift`` over the rank-only baseline
    −1.5 − 0.5·log_rank."""
    shift = coef.pop("shift", 0.0)
    names = list(READING_FEATURES)
    full = [coef.get(f, -0.5 if f == "log_rank" else 0.0) for f in names]
    return ReadingModel(
        features=names,
        coef=full,
        intercept=-1.5 + shift,
        coef_no_logprob=[c for f, c in zip(names, full) if f != "score"],
        intercept_no_logprob=-1.5 + shift,
        base_coef=-0.5,
        base_intercept=-1.5,
        n=100,
        outcome_scores=[4.6, -4.6],  # a typical reading is sure either way (P 0.99 of a sentence, or of none)
    )


STRONG = model(score=0.8)  # P = 0.99 → log LR 3 (the cap); P = 0.01 → −3
WEAK = model(score=0.001)  # worth next to nothing: the favoured windows read, then futile
FAINT = model(score=0.05)  # could certify in principle, not with the bridge oracle's readings


def config(m: ReadingModel | None, **over):
    base = {
        "llm": {"base_url": BASE_URL, "model": MODEL, "cache": False, "retry_backoff_s": 0, "max_retries": 0},
        "loop": {"reading_model": {} if m is None else {MODEL: m.model_dump()}},
        "prior": {"candidates": 3},
        "memory": {"enabled": True},
    }
    for key, value in over.items():
        section, name = key.split("__")
        base.setdefault(section, {})[name] = value
    return load_config("deep", overrides=base)


def ask(make_client, cfg, harbour, oracle, memory=None):
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=oracle.reply)
        return Agent(cfg, client=make_client(max_retries=0), memory=memory).ask(BRIDGE_Q, harbour)


def confident(p: float):
    """The bridge oracle whose readings put probability ``p`` on the number they write."""
    oracle = bridge_oracle()
    oracle.confidence = p
    return oracle


# --------------------------------------------------------------------------- one reading

DOC = Document(
    doc_id="yards/osk-yard.txt",
    path="yards/osk-yard.txt",
    title="Osk Yard",
    text="Osk Yard\n\nOsk Yard is a boatbuilder in Harrowmouth.\nIt was founded in 1887 by Ilse Osk.\n",
    sha256="0" * 64,
)
WINDOW = windows_for(DOC, 0, ["osk", "founded"], 6)[0]


def reply(text: str, alternatives: dict[str, float] | None = None):
    """An LLM response as the client returns it: the number token's top alternatives (token -> probability)."""
    if alternatives is None:
        return SimpleNamespace(text=text, logprobs=None, top_logprobs=None)
    top = tuple((t, math.log(p)) for t, p in alternatives.items())
    first = text.split(" ", 1)[0]
    return SimpleNamespace(text=text, logprobs=((first, top[0][1]), (" | x", -0.1)), top_logprobs=(top, ()))


def read(text: str, alternatives=None, **kw) -> Judgement | None:
    return read_window(
        "When was Osk Yard founded?",
        "year Osk Yard was founded",
        WINDOW,
        DOC,
        lambda m, n: reply(text, alternatives),
        **kw,
    )


def test_a_reading_names_the_sentence_and_scores_it_from_the_number_tokens():
    sents = WINDOW.sentences(DOC)
    n = next(k for k, (_, t) in enumerate(sents, 1) if "1887" in t)
    j = read(f"{n} | 1887", {str(n): 0.7, "0": 0.2, "1": 0.05, "The": 0.05})
    assert j.found and j.value == "1887" and "founded in 1887" in j.quote
    assert j.sentence == sents[n - 1][0]  # the document's sentence index, not the window's number
    assert j.score == pytest.approx(0.75 / 0.95)  # mass on some sentence over the number tokens; "The" is ignored
    assert j.sentence_mass[j.sentence] == pytest.approx(0.7 / 0.95)


def test_zero_finds_nothing_and_keeps_its_score():
    j = read("0", {"0": 0.9, "2": 0.1})
    assert not j.found and j.sentence is None and j.score == pytest.approx(0.1)


def test_a_zero_missing_from_the_alternatives_is_less_likely_than_the_least_listed():
    j = read("2 | 1887", {"2": 0.9, "1": 0.08})
    assert j.score == pytest.approx(0.98 / (0.98 + 0.04))


def test_without_log_probabilities_the_sampled_number_is_the_reading():
    j = read("2 | 1887")
    assert j.found and j.score is None and j.score_logit is None


@pytest.mark.parametrize(
    "lps",
    [
        {"2": 800.0, "0": -1.0},  # exp() overflows
        {"2": 0.5, "0": -1.0},  # a probability above 1
        {"2": -math.inf, "0": -math.inf},
        {"2": math.nan, "0": -0.1},
        {"2": -0.1, "0": math.inf},
    ],
)
def test_an_out_of_range_log_probability_is_a_reading_without_log_probabilities(lps):
    j = read_window(
        "When was Osk Yard founded?",
        "year Osk Yard was founded",
        WINDOW,
        DOC,
        lambda m, n: SimpleNamespace(text="2 | 1887", logprobs=(("2", -0.1),), top_logprobs=(tuple(lps.items()),)),
    )
    assert j.found and j.value == "1887"  # the sampled number is the reading
    assert j.score is None and j.top == () and j.sentence_mass == {}


def test_digit_log_probabilities_below_the_smallest_float_are_read_in_log_space():
    j = read("2 | 1887", None)  # a reply without alternatives, for the sentence index
    deep = read_window(
        "When was Osk Yard founded?",
        "year Osk Yard was founded",
        WINDOW,
        DOC,
        lambda m, n: SimpleNamespace(
            text="2 | 1887", logprobs=(("2", -1e4),), top_logprobs=((("2", -1e4), ("0", -1e4 - math.log(3))),)
        ),
    )
    assert deep.score == pytest.approx(0.75)  # exp(-1e4) is 0.0; their ratio is not
    assert deep.sentence_mass == {j.sentence: pytest.approx(0.75)}


def test_a_value_not_in_the_window_is_dropped_and_the_sentence_kept():
    j = read("2 | 1912", {"2": 0.9, "0": 0.1})
    assert j.found and j.value == "" and j.sentence is not None


def test_a_value_of_the_wrong_type_is_dropped():
    j = read("2 | Ilse Osk", {"2": 0.9, "0": 0.1}, kind="date")
    assert j.found and j.value == ""


@pytest.mark.parametrize("text", ["banana", "", "| 1887"])
def test_an_unusable_reply_is_no_reading(text):
    assert read(text, {"0": 0.5, "1": 0.5}) is None


def test_a_sentence_number_outside_the_window_finds_nothing():
    j = read("9 | 1887", {"9": 0.9, "0": 0.1})
    assert not j.found and j.sentence is None


def test_a_document_that_never_names_the_subject_finds_nothing():
    j = read("2 | 1887", {"2": 0.9, "0": 0.1}, subject="Tally Boatworks")
    assert not j.found and j.score == pytest.approx(0.9)  # the model's score is kept for the likelihood
    assert read("2 | 1887", {"2": 0.9, "0": 0.1}, subject="Osk Yard").found


def test_the_windows_read_for_one_fact_share_the_prompt_up_to_the_passage():
    other = Document("a.txt", "a.txt", "Alpha", "Alpha\n\nAlpha is a ferry.\n", "1" * 64)
    a = reading_messages("q?", "fact", WINDOW, DOC)
    b = reading_messages("q?", "fact", windows_for(other, 1, [], 6)[0], other)
    assert a[0] == b[0]
    prefix = a[1]["content"].split("<passage")[0]
    assert prefix and b[1]["content"].startswith(prefix) and "Fact to find: fact" in prefix
    assert "[1] " in a[1]["content"] and a[1]["content"].rstrip().endswith("</passage>")


# --------------------------------------------------------------------------- features and the reading model


def test_features_of_a_reading():
    j = Judgement(True, 0.9, 3, "1887", "It was founded in 1887.")
    f = reading_features(j, subject_window=True, rank=2)
    assert f == {
        "score": pytest.approx(math.log(9)),
        "found": 1.0,
        "value": 1.0,
        "subject_window": 1.0,
        "log_rank": pytest.approx(math.log(3)),
    }
    none = reading_features(Judgement(False, None, None), subject_window=False, rank=0)
    assert none == dict.fromkeys(READING_FEATURES, 0.0)


def test_the_ratio_is_the_evidence_beyond_the_rank_and_is_capped():
    m = model(score=0.5, found=0.3)
    feats = {"score": 2.0, "found": 1.0, "log_rank": 1.0}
    assert m.log_lr(feats, logprobs=True) == pytest.approx(1.3)  # the rank term cancels against the baseline
    assert m.log_lr(feats, logprobs=False) == pytest.approx(0.3)  # the model fitted without the score
    assert m.log_lr({"score": 6.0, "found": 1.0}, logprobs=True) == m.max_log_lr  # capped


def test_the_largest_log_lr_bounds_every_reading():
    rng = random.Random(5)
    for m in (
        STRONG,
        FAINT,
        WEAK,
        UNCALIBRATED,
        model(score=0.4, found=-1.2, value=0.7, subject_window=2.0, log_rank=-0.1),
    ):
        bound = m.max_abs_log_lr()
        for _ in range(300):
            feats = {f: rng.uniform(*FEATURE_RANGE[f]) for f in READING_FEATURES}
            for lp in (True, False):
                assert abs(m.log_lr(feats, logprobs=lp)) <= bound + 1e-9
    assert WEAK.max_abs_log_lr() == pytest.approx(0.006)


def test_a_model_of_rates_gives_the_single_rate_ratios():
    m = ReadingModel.from_rates(0.8, 0.1)
    assert m.log_lr({"found": 1.0}, logprobs=False) == pytest.approx(math.log(8))
    assert m.log_lr({"found": 0.0}, logprobs=True) == pytest.approx(math.log(0.2 / 0.9))


def test_a_reading_model_with_mismatched_lengths_is_a_config_error():
    bad = STRONG.model_dump() | {"coef": [1.0]}
    with pytest.raises(Exception, match="coef has 1 values for 5 features"):
        config(None, loop__reading_model={MODEL: bad})


def test_an_uncalibrated_model_reads_with_the_conservative_default():
    cfg = config(None)
    assert reading_model_for(cfg) is UNCALIBRATED
    assert UNCALIBRATED.max_abs_log_lr() == 3.0
    assert UNCALIBRATED.log_lr({"score": math.log(99)}, logprobs=True) == pytest.approx(0.5 * math.log(99))


def test_more_readings_per_round_than_c1_is_a_config_error():
    with pytest.raises(Exception, match="exceeds budget.c1"):
        config(None, loop__readings_per_round=3)


# --------------------------------------------------------------------------- the loop, end to end


def test_a_strong_graded_signal_certifies_and_stops_early(make_client, harbour):
    result = ask(make_client, config(STRONG), harbour, confident(0.99))
    assert result.stop_reason == "certified" and not result.best_effort
    assert result.cost.rounds < config(STRONG).budget.max_rounds
    assert [r.status for r in result.requirements] == ["certified", "certified"]
    assert result.answer == "1887"
    cited = next(e for e in result.evidence if e.path == "yards/osk-yard.txt")
    assert cited.status == "confirmed" and "founded in 1887" in cited.sentence_text
    assert cited.citation == "yards/osk-yard.txt:4"  # the line of the sentence the reading named


def test_a_weak_graded_signal_reads_the_favoured_windows_then_stops_futile(make_client, harbour):
    """With every reading worth reading (the gate off), a weak reader reads the favoured windows, then the loop
    stops futile well inside the budget."""
    oracle = confident(0.99)
    result = ask(make_client, config(WEAK, loop__min_reading_value=0.0), harbour, oracle)
    assert result.stop_reason == "futile" and result.answer == "1887"  # read, though not certified
    assert 1 <= len(result.trace) < config(WEAK).budget.max_rounds  # stopped well inside the budget
    assert not any(r.status == "certified" for r in result.requirements)
    read = [(r["fact"], r["window"]) for t in result.trace for r in t.observation["readings"]]
    assert len(read) == len(set(read))
    for t in result.trace:  # each round reads a window some requirement still favoured unread
        assert all(p["value"] > 0 for p in t.proposal)


def test_a_weak_reader_reads_only_what_could_change_the_evidence(make_client, harbour):
    """Issue 59: a window is read only when the reading could change which window a requirement favours or
    certify it. A reader worth next to nothing reads none at the threshold; the answer comes from the evidence."""
    gated = ask(make_client, config(WEAK), harbour, confident(0.99))
    ungated = ask(make_client, config(WEAK, loop__min_reading_value=0.0), harbour, confident(0.99))
    ablation = ask(make_client, config(WEAK, ablation__no_exploration=True), harbour, confident(0.99))
    reads = [sum(len(t.observation["readings"]) for t in r.trace) for r in (gated, ungated)]
    assert gated.stop_reason == "uninformative" and reads[0] < reads[1]
    assert gated.answer == ablation.answer and gated.cost.tokens < ungated.cost.tokens
    assert [e.path for e in gated.evidence] == [e.path for e in ablation.evidence]  # nothing read: the prior's


def test_a_strong_reader_is_not_kept_from_reading(make_client, harbour):
    """The same gate lets a strong reader read: its readings can certify, so each is worth its call."""
    result = ask(make_client, config(STRONG), harbour, confident(0.99))
    assert result.stop_reason == "certified" and sum(len(t.observation["readings"]) for t in result.trace) >= 2


def test_a_confident_none_lowers_its_window(make_client, harbour):
    oracle = confident(0.99)
    oracle.rules = [r for r in oracle.rules if "founded" not in r.fact]  # nothing states R2 any more
    result = ask(make_client, config(STRONG, budget__max_rounds=3), harbour, oracle)
    nones = [r for t in result.trace for r in t.observation["readings"] if r["fact"] == "R2" and not r["found"]]
    assert nones and all(r["log_lr"] < 0 for r in nones)
    read = {r["window"] for r in nones}
    top = dict(result.trace[-1].beliefs["R2"]["top"])
    assert all(top.get(w, 0.0) < 0.2 for w in read)  # each window read as "none" lost its mass


def test_an_uncalibrated_strong_reader_still_certifies(make_client, harbour):
    result = ask(make_client, config(None), harbour, confident(0.999))
    assert result.stop_reason == "certified" and result.answer == "1887"


def test_memory_admits_read_findings_by_posterior(make_client, harbour, tmp_path):
    weak_mem = MemoryStore(tmp_path / "weak")
    # every proposal read (the gate off): this is about what the memory admits from readings
    faint = {"memory__min_posterior": 0.0, "loop__min_reading_value": 0.0}
    ask(make_client, config(FAINT, **faint), harbour, confident(0.9), memory=weak_mem)
    entries = weak_mem.entries()
    assert entries and not any(e.certified for e in entries)  # uncertified, yet written: posterior recorded
    assert all(0 < e.posterior < 1 for e in entries)
    strict = MemoryStore(tmp_path / "strict")
    ask(
        make_client,
        config(FAINT, memory__min_posterior=0.99, loop__min_reading_value=0.0),
        harbour,
        confident(0.9),
        memory=strict,
    )
    assert strict.entries() == []
    strong_mem = MemoryStore(tmp_path / "strong")
    ask(make_client, config(STRONG), harbour, confident(0.99), memory=strong_mem)
    assert strong_mem.entries() and all(e.certified and e.verified for e in strong_mem.entries())


def test_memory_admits_the_calibrated_belief_when_nothing_was_read(make_client, harbour, tmp_path):
    silent = MemoryStore(tmp_path / "silent")
    result = ask(make_client, config(WEAK, ablation__no_exploration=True), harbour, confident(0.99), memory=silent)
    assert result.trace == []
    entries = silent.entries()
    assert len(entries) == len(result.requirements)
    assert not any(e.verified or e.certified for e in entries)
    assert all(0.1 <= e.posterior < 1 for e in entries)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rounds=st.integers(0, 5),
    per_round=st.integers(1, 2),
    which=st.sampled_from(["strong", "weak", "uncalibrated"]),
    p=st.sampled_from([None, 0.6, 0.99]),
)
def test_oracle_calls_stay_within_c0_plus_c1_times_rounds_for_every_model(
    make_client, harbour, rounds, per_round, which, p
):
    m = {"strong": STRONG, "weak": WEAK, "uncalibrated": None}[which]
    cfg = config(m, budget__max_rounds=rounds, loop__readings_per_round=per_round)
    oracle = confident(p) if p else bridge_oracle()
    result = ask(make_client, cfg, harbour, oracle)
    assert result.cost.rounds <= rounds
    assert result.cost.oracle_calls == len(oracle.calls)
    assert result.cost.oracle_calls <= cfg.budget.c0 + cfg.budget.c1 * result.cost.rounds


def _strict(word: str):
    raise ValueError(f"not strict JSON: {word}")


@pytest.mark.parametrize("lps", [(800.0, -1.0), (-1e4, -1e4), (-math.inf, -math.inf), (math.nan, -0.1)])
def test_lens_ask_answers_through_out_of_range_log_probabilities_with_strict_json(harbour, capsys, lps):
    oracle = bridge_oracle()
    oracle.number_logprobs = lps  # every reading's number token and its alternative
    argv = ["ask", BRIDGE_Q, str(harbour), "--base-url", BASE_URL, "--model", MODEL, "--json"]
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=oracle.reply)
        rc = main(argv + ["--set", "llm.cache=false", "--set", "llm.max_retries=0"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    got = json.loads(out, parse_constant=_strict)  # no NaN, Infinity or -Infinity anywhere
    assert got["answer"] == "1887" and "reading" in oracle.calls
    readings = [r for t in got["trace"] for r in t["observation"]["readings"]]
    assert readings
    if lps[0] == -1e4:  # in range: read in log space, the score kept
        assert all(r["score"] is not None for r in readings)
    else:  # out of range: a reading without log-probabilities
        assert all(r["score"] is None for r in readings)


def test_an_ask_result_holding_nan_and_infinity_serialises_as_strict_json():
    trace = RoundTrace(
        1, [], {"readings": [{"score": math.nan, "top": [["2", -math.inf]]}]}, {}, {"R1": math.inf}, 1.0, None
    )
    result = AskResult(
        question="q",
        answer="a",
        best_effort=True,
        intent="lookup",
        requirements=[RequirementStatus("R1", "r", "unresolved", None, math.nan, ())],
        evidence=[],
        trace=[trace],
        cost=QuestionCost(seconds=math.inf, rounds=1),
        corpus={},
        config_hash="c",
        model="m",
        stop_reason="budget",
    )
    got = json.loads(result.to_json(), parse_constant=_strict)
    assert got["cost"]["seconds"] is None and got["cost"]["rounds"] == 1 and got["requirements"][0]["glr"] is None
    assert got["trace"][0]["observation"]["readings"] == [{"score": None, "top": [["2", None]]}]
    assert got["trace"][0]["glr"] == {"R1": None}


# --------------------------------------------------------------------------- the client


def test_the_client_returns_top_logprobs_and_cached_tokens_and_caches_them(make_client, endpoint):
    body = json.loads(completion("2 | x").content)
    alts = [{"token": "2", "logprob": -0.1, "bytes": None}, {"token": "0", "logprob": -2.4, "bytes": None}]
    body["choices"][0]["logprobs"] = {"content": [{"token": "2", "logprob": -0.1, "bytes": None, "top_logprobs": alts}]}
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 7}
    endpoint.chat.mock(return_value=respx.MockResponse(200, json=body))
    client = make_client(cache=True)
    r = client.chat([{"role": "user", "content": "x"}], logprobs=True, top_logprobs=5)
    sent = json.loads(endpoint.chat.calls[0].request.content)
    assert sent["logprobs"] is True and sent["top_logprobs"] == 5
    assert r.logprobs == (("2", -0.1),) and r.top_logprobs == ((("2", -0.1), ("0", -2.4)),) and r.cached_tokens == 7
    again = client.chat([{"role": "user", "content": "x"}], logprobs=True, top_logprobs=5)
    assert again.cache_hit and again.top_logprobs == r.top_logprobs
    plain = client.chat([{"role": "user", "content": "y"}])
    assert "logprobs" not in json.loads(endpoint.chat.calls[-1].request.content) and plain.logprobs is None


def test_an_endpoint_that_rejects_logprobs_is_asked_without_them(make_client, endpoint):
    def answer(request):
        if json.loads(request.content).get("logprobs"):
            return error(400, "logprobs is not supported")
        return completion("2 | x")

    endpoint.chat.mock(side_effect=answer)
    client = make_client()
    r = client.chat([{"role": "user", "content": "x"}], logprobs=True, top_logprobs=5)
    assert r.text == "2 | x" and r.logprobs is None and r.top_logprobs is None
    client.chat([{"role": "user", "content": "z"}], logprobs=True)
    sent = [json.loads(c.request.content).get("logprobs") for c in endpoint.chat.calls]
    assert sent == [True, None, None]  # asked once, then never again


def test_a_memory_entry_speaks_as_loudly_as_the_posterior_that_admitted_it():
    from lens.parts import memory_signal

    signal, stale = memory_signal([(0, True, 0.8, 0.5), (0, True, 0.6, 1.0), (1, False, 0.9, 1.0), (None, True, 1, 1)])
    assert signal == {0: pytest.approx(0.6)} and stale == 2  # 0.8 × 0.5 < 0.6 × 1; changed and gone are stale
