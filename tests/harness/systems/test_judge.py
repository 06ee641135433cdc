"""JudgeAcc (issue: Tables 3 and 6): the judge's calls are outside every system's budget, a judge failure
leaves the row's EM intact and marks JudgeAcc missing, cached verdicts cost zero tokens, and the report shows
JudgeAcc beside EM with Cohen's κ."""

from __future__ import annotations

import json

import pytest
import respx

from harness.bench.executor import LocalExecutor
from harness.bench.judge import cohen_kappa, judge_runs, load_verdicts
from harness.bench.report import build_report
from harness.bench.run_store import read_rows
from harness.bench.runner import plan_run, run_benchmark
from lens import LLMClient

from .conftest import make_config
from .scripted_llm import Responder, kind_of, respx_side_effect

JUDGE_URL = "http://judge-llm.test/v1"


@pytest.fixture
def run(bench_data, endpoint, tmp_path):
    plan = plan_run(
        snapshot=bench_data["D6"],
        questions_file=bench_data["questions"],
        systems=("bm25", "closed"),
        out=tmp_path / "run",
        config=make_config(),
        index_dir=tmp_path / "indexes",
    )
    run_benchmark(plan, executor=LocalExecutor(1), progress=False)
    return tmp_path / "run"


def _judge(verdict_of, failing: set[str] = frozenset()):
    """A judge endpoint: ``verdict_of(prompt)`` → True/False; questions containing a string in ``failing`` get
    an unparsable reply."""
    responder = Responder()
    seen: list[str] = []

    def reply(messages):
        prompt = messages[-1]["content"]
        seen.append(prompt)
        if any(f in m["content"] for f in failing for m in messages):  # the repair request fails too
            return "I think so"
        return json.dumps({"correct": verdict_of(prompt)})

    responder.script["other"] = reply
    return responder, seen


def test_verdicts_are_written_cached_and_never_touch_the_rows(run, tmp_path):
    before = (run / "rows.jsonl").read_bytes()
    responder, seen = _judge(lambda p: "Tallow" in p.split("Predicted answer:")[1])
    with respx.mock(assert_all_called=False) as router:
        router.post(f"{JUDGE_URL}/chat/completions").mock(side_effect=respx_side_effect(responder))
        client = LLMClient(base_url=JUDGE_URL, model="judge-model", settings=make_config().llm)
        first = judge_runs([run], client)
        calls = len(seen)
        again = judge_runs([run], client)
    rows = read_rows(run)
    assert kind_of(responder.calls[0][1]) == "other"  # the judge prompt, not a system's
    assert first.judged == len(rows) and again.judged == 0 and again.cached == len(rows)
    assert len(seen) == calls and again.tokens == 0  # cached verdicts cost nothing
    assert (run / "rows.jsonl").read_bytes() == before  # systems' rows, budgets and costs untouched
    verdicts = load_verdicts([run])
    assert len(verdicts) == len(rows)
    for r in rows:
        if r["prediction"]["answer"].startswith("Tallow"):
            assert verdicts[(r["system_hash"], r["question_id"])] is True


def test_a_judge_failure_marks_judgeacc_missing_and_keeps_em(run, bench_data, tmp_path):
    rows = read_rows(run)
    failing_q = rows[0]["question"]
    responder, _ = _judge(lambda p: True, failing={failing_q})
    with respx.mock(assert_all_called=False) as router:
        router.post(f"{JUDGE_URL}/chat/completions").mock(side_effect=respx_side_effect(responder))
        s = judge_runs(
            [run],
            LLMClient(base_url=JUDGE_URL, model="judge-model", settings=make_config(**{"llm.max_retries": 0}).llm),
        )
    failed = [r for r in rows if r["question"] == failing_q and r["prediction"]["answer"]]
    assert s.failed == len(failed) >= 1
    verdicts = load_verdicts([run])
    assert all(verdicts[(r["system_hash"], r["question_id"])] is None for r in failed)
    result = build_report([run], tmp_path / "rep", resamples=50, plots=False)
    t = next(t for t in result.tables if t.name.startswith("judge__"))
    main = next(t for t in result.tables if t.name.startswith("table2_main"))
    for row in t.rows:
        assert int(row[1]) + int(row[-1]) == 6
    assert {r[0] for r in t.rows} == {r[0] for r in main.rows}


def test_cohen_kappa():
    assert cohen_kappa([True, False, True, False], [True, False, True, False]) == 1.0
    assert cohen_kappa([True, True, False, False], [True, False, True, False]) == 0.0
    assert cohen_kappa([], []) is None and cohen_kappa([True, True], [True, True]) is None
