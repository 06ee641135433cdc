"""Graded evidence (SPEC §2, "a noisy oracle must not make things worse"): reading features, the claim's token
log-probability, the likelihood ratio against the rank-only baseline, and — end to end through respx — a strong
graded signal that certifies and stops early, a weak one that never certifies, memory admitted by posterior,
and the oracle-call bound under the graded model."""

from __future__ import annotations

import json
import math
import random

import pytest
import respx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lens._agent import Agent
from lens._config import GradedEvidence, OracleReliability, load_config
from lens._grading import FEATURES, LOGPROB_FEATURES, ObservationModel, reading_features, reply_confidence
from lens._memory import MemoryStore

from .conftest import BASE_URL, CHAT_URL, MODEL, completion, error
from .test_agent import BRIDGE_Q, bridge_oracle


def graded(**coef) -> dict:
    """A graded model: ``coef`` by feature name (others 0), intercept -3, rank-only baseline -1.5 − 0.5·log_rank."""
    nolp = [f for f in FEATURES if f not in LOGPROB_FEATURES]
    return {
        "features": list(FEATURES),
        "coef": [coef.get(f, 0.0) for f in FEATURES],
        "intercept": coef.get("intercept", -3.0),
        "coef_no_logprob": [coef.get(f, 0.0) for f in nolp],
        "intercept_no_logprob": coef.get("intercept", -3.0),
        "base_coef": -0.5,
        "base_intercept": -1.5,
        "n": 100,
    }


STRONG = graded(found=3.0, exact=2.0, value=0.5, value_in_quote=1.0, subject_window=0.5, logprob=1.0, log_rank=-0.5)
# a reading worth next to nothing: every log-odds equals the baseline's (the loop stops as futile)
WEAK = graded(found=0.05, intercept=-1.5, log_rank=-0.5)
# a reading that could certify in principle, but the bridge oracle's readings are not telling enough
FAINT = graded(found=0.6, intercept=-1.5, log_rank=-0.5)


def config(model: dict | None, **over):
    rel = {"tpr": 0.37, "fpr": 0.22}
    if model is not None:
        rel["graded"] = model
    base = {
        "llm": {"base_url": BASE_URL, "model": MODEL, "cache": False, "retry_backoff_s": 0, "max_retries": 0},
        "loop": {"reliability": {MODEL: rel}},
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


# --------------------------------------------------------------------------- features and ratios


def test_features_of_a_found_and_of_a_nothing_here_reading():
    f = reading_features(
        found=True,
        exact=True,
        value="1887",
        quote="It was founded in 1887 by Ilse Osk.",
        kind="date",
        requirement="In what year was Osk Yard founded?",
        subject="Osk Yard",
        window_text="Osk Yard is a boatbuilder. It was founded in 1887 by Ilse Osk.",
        rank=2,
        agree=True,
        logprob=-0.2,
    )
    assert f["found"] == f["exact"] == f["value"] == f["value_in_quote"] == f["type_match"] == f["agree"] == 1.0
    assert f["subject_window"] == 1.0 and f["log_rank"] == pytest.approx(math.log(3)) and f["logprob"] == -0.2
    assert 0 < f["cue_overlap"] <= 1
    n = reading_features(
        found=False, requirement="In what year was Osk Yard founded?", subject="Osk Yard", window_text="Tally", rank=0
    )
    assert n["found"] == n["exact"] == n["subject_window"] == n["logprob"] == 0.0
    far = reading_features(found=True, requirement="x", subject=None, window_text="", rank=0, logprob=-40.0)
    assert far["logprob"] == -5.0  # clipped


def test_the_models_confidence_is_read_from_the_tokens_that_decided_the_fact():
    pieces = ['{"', "R1", '":', " {", '"passage', '":', ' "', "P", "2", '",', ' "value', '":', ' "', "Osk", '"},']
    pieces += [' "', "R2", '":', " null", "}"]
    lps = {" {": -0.2, "P": -0.5, "2": -0.3, " null": -0.05}
    tokens = [(t, lps.get(t, -0.01)) for t in pieces]
    decided, label, null = reply_confidence(tokens, "R1")
    assert (decided, null) == (-0.2, False) and label == pytest.approx(-0.5 - 0.3)  # the tokens of "P2"
    assert reply_confidence(tokens, "R2") == (-0.05, 0.0, True)
    assert reply_confidence(tokens, "R3") is None and reply_confidence(None, "R1") is None
    f = reading_features(found=False, requirement="r", subject=None, window_text="", rank=0, null_logprob=-0.05)
    assert f["null_confidence"] == pytest.approx(math.exp(-0.05)) and f["elsewhere"] == 0.0
    g = reading_features(found=False, requirement="r", subject=None, window_text="", rank=0, elsewhere=True)
    assert g["elsewhere"] == 1.0 and g["null_confidence"] == 0.0


def test_the_ratio_is_the_evidence_beyond_the_rank_and_is_capped():
    rel = OracleReliability(tpr=0.6, fpr=0.2)
    m = ObservationModel(rel, GradedEvidence.model_validate(STRONG))
    nothing = dict.fromkeys(FEATURES, 0.0)
    # nothing found at rank 0: full logit −3 vs baseline −1.5
    assert m.log_lr(nothing, logprobs=True) == pytest.approx(-1.5)
    strong = dict(nothing, found=1.0, exact=1.0, value=1.0, value_in_quote=1.0, subject_window=1.0)
    assert m.log_lr(strong, logprobs=True) == pytest.approx(4.6)  # 5.5 capped at max_log_lr
    single = ObservationModel(rel)
    assert single.name == "single-rate" and m.name == "graded"
    assert single.log_lr(strong, logprobs=True) == pytest.approx(math.log(3.0))
    assert single.log_lr(nothing, logprobs=False) == pytest.approx(math.log(0.4 / 0.8))


def test_a_graded_model_with_mismatched_lengths_is_a_config_error():
    from lens._config import ConfigError

    bad = dict(STRONG, coef=[1.0])
    with pytest.raises(ConfigError, match="coef has 1 values"):
        config(bad)


def test_the_single_rate_switch_ignores_the_graded_fit():
    from lens._grading import observation_model

    assert observation_model(config(STRONG)).name == "graded"
    assert observation_model(config(STRONG, loop__observation_model="single-rate")).name == "single-rate"
    assert observation_model(config(None)).name == "single-rate"  # uncalibrated: falls back
    assert config(STRONG).canonical_hash() != config(WEAK).canonical_hash()  # the fit is part of the hash


# --------------------------------------------------------------------------- end to end through respx


def test_a_strong_graded_signal_certifies_and_stops_early(make_client, harbour):
    oracle = bridge_oracle()
    oracle.logprob = -0.05
    result = ask(make_client, config(STRONG), harbour, oracle)
    assert result.stop_reason.startswith("certified")
    assert {r.status for r in result.requirements} == {"certified"}
    assert result.answer == "1887" and not result.best_effort
    assert result.cost["rounds"] < 6
    readings = [r for t in result.trace for r in t.observation.get("readings", [])]
    assert any(r["found"] and r["log_lr"] > 3 for r in readings)
    assert any(s.get("model") == "graded" for s in result.stages if s["stage"] == "evidence-model")
    # the observation calls asked for token log-probabilities
    assert all(b.get("logprobs") for b, k in zip(oracle.requests, oracle.calls) if k == "observation")


def test_a_weak_graded_signal_never_certifies_and_falls_back_to_best_effort(make_client, harbour):
    strong = ask(make_client, config(STRONG), harbour, bridge_oracle())
    result = ask(make_client, config(FAINT), harbour, bridge_oracle())
    assert not any(r.status == "certified" for r in result.requirements)
    assert not result.stop_reason.startswith("certified")
    assert result.best_effort or any(r.status == "covered" for r in result.requirements)
    assert result.cost["rounds"] > strong.cost["rounds"]
    assert result.cost["tokens"] > strong.cost["tokens"]  # a certified requirement stops being explored


def test_a_signal_too_weak_to_ever_certify_is_not_explored(make_client, harbour):
    """Futility: with |log LR| ≤ 0.05 per reading no sequence of readings in the budget can lift a GLR from
    log(0.8/0.2) to the threshold, so the loop reads nothing; the answer is made from the prior's evidence
    (decomposition and synthesis only: no observation, coverage or self-correction call)."""
    result = ask(make_client, config(WEAK), harbour, bridge_oracle())
    assert result.stop_reason == "futile"
    assert result.cost["rounds"] == 0 and result.trace == []
    assert result.cost["oracle_calls"] == 2
    assert result.best_effort and result.evidence
    faint = ask(make_client, config(FAINT), harbour, bridge_oracle())
    assert result.cost["tokens"] < faint.cost["tokens"]


def test_memory_admits_verified_findings_by_posterior(make_client, harbour, tmp_path):
    weak_mem = MemoryStore(tmp_path / "weak")
    ask(make_client, config(FAINT, memory__min_posterior=0.0), harbour, bridge_oracle(), memory=weak_mem)
    entries = weak_mem.entries()
    assert entries and not any(e.certified for e in entries)  # uncertified, yet written: posterior recorded
    assert all(0 < e.posterior < 1 for e in entries)
    strict = MemoryStore(tmp_path / "strict")
    ask(make_client, config(FAINT, memory__min_posterior=0.99), harbour, bridge_oracle(), memory=strict)
    assert strict.entries() == []
    strong_mem = MemoryStore(tmp_path / "strong")
    ask(make_client, config(STRONG), harbour, bridge_oracle(), memory=strong_mem)
    assert strong_mem.entries() and all(e.certified for e in strong_mem.entries())
    line = json.loads(strong_mem.log_path.read_text().splitlines()[0])
    assert line["certified"] is True and 0 < line["posterior"] <= 1
    assert all(e.verified for e in strong_mem.entries())  # certified through a reading


def test_memory_admits_the_calibrated_belief_when_the_oracle_is_too_weak_to_read(make_client, harbour, tmp_path):
    """Futility: nothing is read, yet each requirement's favoured window enters at its calibrated posterior,
    flagged unverified; a threshold above that posterior admits nothing."""
    silent = MemoryStore(tmp_path / "silent")
    result = ask(make_client, config(WEAK), harbour, bridge_oracle(), memory=silent)
    assert result.stop_reason == "futile" and result.trace == []
    entries = silent.entries()
    assert len(entries) == len(result.requirements)
    assert not any(e.verified or e.certified for e in entries)
    assert all(0.1 <= e.posterior < 1 for e in entries)
    assert [e.posterior for e in entries] == [m["posterior"] for m in result.memory_entries]
    line = json.loads(silent.log_path.read_text().splitlines()[0])
    assert line["verified"] is False
    top = max(e.posterior for e in entries)
    strict = MemoryStore(tmp_path / "strict")
    ask(make_client, config(WEAK, memory__min_posterior=min(1.0, top + 0.01)), harbour, bridge_oracle(), memory=strict)
    assert strict.entries() == []


def test_a_memory_log_without_posteriors_reads_as_certified(tmp_path):
    store = MemoryStore(tmp_path / "m")
    old = {
        "position": 0,
        "observed_at": 1.0,
        "question": "q",
        "requirement": "r",
        "terms": ["r"],
        "path": "a.txt",
        "doc_id": "a.txt",
        "first": 0,
        "last": 0,
        "line_start": 1,
        "line_end": 1,
        "value": "v",
        "sha256": "0" * 64,
        "embedding": None,
    }
    store.log_path.write_text(json.dumps(old) + "\n")
    (e,) = store.entries()
    assert e.certified and e.posterior == 1.0


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rounds=st.integers(0, 5), per_round=st.integers(1, 3), model=st.sampled_from(["strong", "weak", "single"]))
def test_oracle_calls_stay_within_c0_plus_c1_times_rounds_for_every_model(
    make_client, harbour, rounds, per_round, model
):
    m = {"strong": STRONG, "weak": WEAK, "single": None}[model]
    cfg = config(m, budget__max_rounds=rounds, loop__windows_per_round=per_round)
    oracle = bridge_oracle()
    result = ask(make_client, cfg, harbour, oracle)
    assert result.cost["rounds"] <= rounds
    assert result.cost["oracle_calls"] == len(oracle.calls)
    assert result.cost["oracle_calls"] <= cfg.budget.c0 + cfg.budget.c1 * result.cost["rounds"]


# --------------------------------------------------------------------------- the client


def test_the_client_returns_token_logprobs_and_caches_them(make_client, endpoint):
    body = json.loads(completion('{"a": 1}').content)
    body["choices"][0]["logprobs"] = {"content": [{"token": '{"a', "logprob": -0.5, "bytes": None, "top_logprobs": []}]}
    endpoint.chat.mock(return_value=respx.MockResponse(200, json=body))
    client = make_client(cache=True)
    r = client.chat([{"role": "user", "content": "x"}], logprobs=True)
    assert r.logprobs == (('{"a', -0.5),)
    assert json.loads(endpoint.chat.calls[0].request.content)["logprobs"] is True
    again = client.chat([{"role": "user", "content": "x"}], logprobs=True)
    assert again.cache_hit and again.logprobs == r.logprobs
    plain = client.chat([{"role": "user", "content": "y"}])
    assert "logprobs" not in json.loads(endpoint.chat.calls[-1].request.content) and plain.logprobs is None


def test_an_endpoint_that_rejects_logprobs_is_asked_without_them(make_client, endpoint):
    def reply(request):
        if json.loads(request.content).get("logprobs"):
            return error(400, "logprobs is not supported")
        return completion('{"a": 1}')

    endpoint.chat.mock(side_effect=reply)
    client = make_client()
    r = client.chat([{"role": "user", "content": "x"}], logprobs=True)
    assert r.text == '{"a": 1}' and r.logprobs is None
    client.chat([{"role": "user", "content": "z"}], logprobs=True)
    sent = [json.loads(c.request.content).get("logprobs") for c in endpoint.chat.calls]
    assert sent == [True, None, None]  # asked once, then never again


def test_a_memory_entry_speaks_as_loudly_as_the_posterior_that_admitted_it():
    from lens import memory_signal

    signal, stale = memory_signal([(0, True, 0.8, 0.5), (0, True, 0.6, 1.0), (1, False, 0.9, 1.0), (None, True, 1, 1)])
    assert signal == {0: pytest.approx(0.6)} and stale == 2  # 0.8 × 0.5 < 0.6 × 1; changed and gone are stale


def test_the_largest_log_lr_bounds_every_reading():
    from lens._config import GradedEvidence, OracleReliability
    from lens._grading import FEATURE_RANGE

    single = ObservationModel(OracleReliability(tpr=0.8, fpr=0.1))
    assert single.max_abs_log_lr() == pytest.approx(math.log(8))
    rng = random.Random(5)
    for model in (STRONG, FAINT, WEAK):
        m = ObservationModel(OracleReliability(tpr=0.37, fpr=0.22), GradedEvidence.model_validate(model))
        bound = m.max_abs_log_lr()
        for _ in range(300):
            feats = {f: rng.uniform(*FEATURE_RANGE[f]) for f in FEATURES}
            for lp in (True, False):
                assert abs(m.log_lr(feats, logprobs=lp)) <= bound + 1e-9
    weak = ObservationModel(OracleReliability(tpr=0.37, fpr=0.22), GradedEvidence.model_validate(WEAK))
    assert weak.max_abs_log_lr() == pytest.approx(0.05)
