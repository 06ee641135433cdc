"""Progress of a running question (issue: lens as a tool): the agent reports each stage with the cost so far, and
``lens ask`` draws it on a terminal's stderr only — never in ``--json`` or piped output."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import respx

from lens import Agent
from lens._progress import Progress, TerminalProgress

from ..harness.systems.scripted_llm import Responder, StubServer
from .scripted_oracle import Rule, ScriptedOracle
from .test_agent import CHAT_URL, config, lights  # noqa: F401  (fixture)


def test_the_agent_reports_every_stage_with_the_cost_so_far(make_client, lights):  # noqa: F811
    q = "Which is taller, Calder Point Light or Skerrow Light?"
    oracle = ScriptedOracle(
        decompositions={
            q: {
                "facts": [
                    {"text": "height of Calder Point Light", "entity": "Calder Point Light"},
                    {"text": "height of Skerrow Light", "entity": "Skerrow Light"},
                ]
            }
        },
        rules=[
            Rule("height of Calder", "27 m", "The tower is 27 m tall.", "27 m"),
            Rule("height of Skerrow", "31 m", "The tower is 31 m tall.", "31 m"),
        ],
    )
    seen: list[Progress] = []
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=oracle.reply)
        result = Agent(config(), client=make_client(max_retries=0), progress=seen.append).ask(q, lights)
    stages = [p.stage for p in seen]
    assert stages[:2] == ["scan", "decomposition"] and stages[-1] == "done"
    rounds = [p.round for p in seen if p.stage == "round"]
    assert rounds == list(range(1, result.cost.rounds + 1))  # one report as each round starts
    assert all(p.max_rounds == config().budget.max_rounds for p in seen)
    calls = [p.oracle_calls for p in seen]
    assert calls == sorted(calls) and calls[-1] == result.cost.oracle_calls
    assert seen[-1].tokens == result.cost.tokens and seen[0].oracle_calls == 0


def test_each_snapshot_from_the_first_round_carries_the_search_so_far(make_client, lights):  # noqa: F811
    q = "Which is taller, Calder Point Light or Skerrow Light?"
    oracle = ScriptedOracle(
        decompositions={
            q: {
                "facts": [
                    {"text": "height of Calder Point Light", "entity": "Calder Point Light"},
                    {"text": "height of Skerrow Light", "entity": "Skerrow Light"},
                ]
            }
        },
        rules=[
            Rule("height of Calder", "27 m", "The tower is 27 m tall.", "27 m"),
            Rule("height of Skerrow", "31 m", "The tower is 31 m tall.", "31 m"),
        ],
    )
    seen: list[Progress] = []
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=oracle.reply)
        result = Agent(config(), client=make_client(max_retries=0), progress=seen.append).ask(q, lights)
    assert [p.detail for p in seen[:2]] == [None, None]  # the scan and the decomposition: no search yet
    first = next(p.detail for p in seen if p.stage == "round")
    assert [(r["id"], r["text"]) for r in first["requirements"]] == [
        ("R1", "height of Calder Point Light"),
        ("R2", "height of Skerrow Light"),
    ]
    assert first["rounds"] == [] and first["round"] == 0
    r1 = first["beliefs"]["R1"]  # the prior's beliefs before any reading: candidates, nothing certified
    assert r1["candidates"][0]["path"] == "calder-point-light.md" and r1["glr"] == 0 and not r1["certified"]
    assert r1["threshold"] > 0 and 0 < r1["candidates"][0]["posterior"] < 1
    last = seen[-1].detail  # "done": every round, with what each reading named
    assert len(last["rounds"]) == result.cost.rounds
    readings = [x for rnd in last["rounds"] for x in rnd["readings"]]
    named = {(x["requirement"], x["path"], x.get("sentence_text"), x.get("confirmed")) for x in readings}
    assert ("R1", "calder-point-light.md", "The tower is 27 m tall.", True) in named
    assert ("R2", "skerrow-light", "The tower is 31 m tall.", True) in named
    calder = next(x for x in readings if x["path"] == "calder-point-light.md" and x["confirmed"])
    assert calder["sentence_location"] == {"line": 4} and calder["value"] == "27 m"
    assert {k: v["certified"] for k, v in last["beliefs"].items()} == {
        r.id: r.status == "certified" for r in result.requirements
    }
    json.dumps(last, allow_nan=False)  # JSON-ready: a page can be sent it as it is
    assert Progress("round", 1, 6, 2, 100, 1.0).detail is None  # built as before: no detail


def test_a_failing_watcher_does_not_break_the_question(make_client, lights):  # noqa: F811
    def broken(p: Progress) -> None:
        raise RuntimeError("watcher bug")

    oracle = ScriptedOracle(
        rules=[Rule("first keeper", "Agnes Rook", "Its first keeper was Agnes Rook.", "Agnes Rook")]
    )
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=oracle.reply)
        agent = Agent(config(), client=make_client(max_retries=0), progress=broken)
        result = agent.ask("Who was the first keeper of Calder Point Light?", lights)
    assert result.cost.oracle_calls >= 1


def test_the_terminal_line_is_redrawn_and_erased_at_the_end():
    out = io.StringIO()
    with TerminalProgress(out, interval_s=0.05) as tp:
        tp(Progress("decomposition", 0, 6, 0, 0, 0.0))
        tp(Progress("round", 2, 6, 3, 1234, 4.2))
        time.sleep(0.2)  # the ticker redraws the elapsed time between events
        tp(Progress("done", 2, 6, 5, 2000, 9.0))
    text = out.getvalue()
    assert "lens: decomposition · 0 oracle calls" in text
    assert "lens: round 2/6 · 3 oracle calls · 1,234 tokens" in text
    assert text.count("round 2/6") >= 2 and text.endswith("\r\x1b[K")


# --------------------------------------------------------------------------- the CLI on a pseudo-terminal


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "harbour.md").write_text("# Harbour\n\nThe harbour light was built in 1869.\nIts keeper was Ann Lee.\n")
    return root


def _ask(folder: Path, base_url: str, *extra: str, tty: bool) -> tuple[str, str]:
    """Run ``lens ask`` in a child process; stderr on a pseudo-terminal when ``tty``. Returns (stdout, stderr)."""
    argv = [sys.executable, "-m", "lens.faces._cli", "ask", "Who was the keeper of the harbour light?", str(folder)]
    argv += ["--base-url", base_url, "--model", "test-model", "--set", "llm.cache=false", *extra]
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    if not tty:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
        assert p.returncode == 0, p.stderr
        return p.stdout, p.stderr
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 4096)
            except OSError:  # the child closed its end
                break
            if not data:
                break
            chunks.append(data)
        elif p.poll() is not None:
            break
    os.close(master)
    stdout = p.stdout.read().decode() if p.stdout else ""
    assert p.wait(timeout=30) == 0
    return stdout, b"".join(chunks).decode(errors="replace")


def test_progress_appears_on_a_terminal_only(tmp_path):
    folder = _folder(tmp_path)
    with StubServer(Responder()) as server:
        out, err = _ask(folder, server.base_url, tty=True)
        assert "Answer:" in out and "lens: decomposition · " in err and "\x1b[K" in err
        assert "round 1/" in err
        out, err = _ask(folder, server.base_url, "--json", tty=True)
        assert json.loads(out)["answer"] is not None and "lens: " not in err
        out, err = _ask(folder, server.base_url, tty=False)
        assert "Answer:" in out and "lens: " not in err and "\x1b[K" not in err


def test_ctrl_c_stops_cleanly_and_shows_the_partial_cost(tmp_path):
    import signal

    folder = _folder(tmp_path)
    responder = Responder()
    responder.delay = 1.0
    with StubServer(responder) as server:
        argv = [sys.executable, "-m", "lens.faces._cli", "ask", "Who was the keeper of the harbour light?", str(folder)]
        argv += ["--base-url", server.base_url, "--model", "test-model", "--set", "llm.cache=false"]
        p = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "OPENAI_API_KEY": "k"},
            # a user's terminal delivers Ctrl-C; under a shell's background job (CI started with `&`) the child
            # would inherit SIGINT ignored and never see it
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 60
        # into the loop: the first reading call has reached the endpoint, which holds it for a second
        while not any(k == "reading" for k, _ in responder.calls) and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    text = err.decode()
    assert p.returncode == 130, (responder.calls and [k for k, _ in responder.calls], text[-1500:], out[-500:])
    assert "lens: stopped during " in text and "oracle calls" in text and "lens: interrupted" in text
    assert "Traceback" not in text and b"Answer:" not in out
