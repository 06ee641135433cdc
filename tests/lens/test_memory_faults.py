"""SPEC §6 for the warm-reuse memory: an append is the whole record or nothing (a full disk leaves the log as it
was, and says so), a last line without its newline is the torn tail of a crash (ignored, cut by the next append)
unless it is a complete entry (a hand edit: kept), and a memory that cannot be read or written costs one line after
the answer — never the answer."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import respx

from lens.faces._cli import main
from lens.memory._memory import MemoryLogError, MemoryStore, new_entry

from .conftest import BASE_URL, CHAT_URL, MODEL, with_full_disk
from .scripted_oracle import Rule, ScriptedOracle

QUESTION = "In what year was Osk Yard founded?"
CONFIG = f"""
[llm]
cache = false
retry_backoff_s = 0
max_retries = 0
[memory]
enabled = true
# a strong reader: ReadingModel.from_rates(0.95, 0.02)
[loop.reading_model.{MODEL}]
features = ["score", "found", "value", "subject_window", "log_rank"]
coef = [0.0, 6.836259277277065, 0.0, 0.0, 0.0]
intercept = -2.9755295662364705
coef_no_logprob = [6.836259277277065, 0.0, 0.0, 0.0]
intercept_no_logprob = -2.9755295662364705
base_coef = 0.0
base_intercept = 0.0
max_log_lr = 100.0
n = 0
"""


def _entry(position: int, value: str = "1887"):
    return new_entry(
        position=position,
        question="q",
        requirement="year the shipyard was founded",
        path="a.txt",
        doc_id="a.txt",
        first=1,
        last=1,
        line_start=2,
        line_end=2,
        value=value,
        sha256="0" * 64,
    )


def _oracle() -> ScriptedOracle:
    return ScriptedOracle(
        rules=[Rule("Osk Yard founded", "founded in 1887", "It was founded in 1887 by Ilse Osk.", "1887")],
        synthesis=lambda p: "1887" if "founded in 1887" in p else "unknown",
    )


def _ask(tmp_path: Path, folder: Path, memory: Path) -> list[str]:
    cfg = tmp_path / "lens.toml"
    cfg.write_text(CONFIG, encoding="utf-8")
    return ["ask", QUESTION, str(folder), "--memory", str(memory), "--base-url", BASE_URL, "--config", str(cfg)]


def test_an_append_that_meets_a_full_disk_leaves_the_log_as_it_was_and_says_so(tmp_path):
    store = MemoryStore(tmp_path / "mem")
    store.append([_entry(0)])
    before = store.log_path.read_bytes()

    def append_a_large_entry():
        try:
            store.append([_entry(1, "x" * 20_000)])
        except MemoryLogError as exc:
            return str(exc)
        return None

    message = with_full_disk(len(before) + 4096, append_a_large_entry)

    assert store.log_path.read_bytes() == before
    assert message is not None and str(store.log_path) in message and "not written" in message


@pytest.mark.parametrize("cut", [2, 25], ids=["closing-brace", "mid-record"])
def test_a_torn_last_line_is_ignored_and_cut_by_the_next_append(tmp_path, cut):
    store = MemoryStore(tmp_path / "mem")
    store.append([_entry(0), _entry(1)])
    data = store.log_path.read_bytes()
    store.log_path.write_bytes(data[:-cut])  # the second record torn by a crash

    assert [e.position for e in store.entries()] == [0]
    store.append([_entry(2)])
    assert [e.position for e in store.entries()] == [0, 2]


def test_a_complete_last_entry_without_its_newline_is_kept_and_the_next_append_adds_the_newline(tmp_path):
    """A hand edit that drops the final newline is no crash: its complete last entry was once cut by the append."""
    store = MemoryStore(tmp_path / "mem")
    store.append([_entry(0), _entry(1)])
    store.log_path.write_bytes(store.log_path.read_bytes().rstrip(b"\n"))

    assert [e.position for e in store.entries()] == [0, 1]
    store.append([_entry(2)])
    assert [e.position for e in store.entries()] == [0, 1, 2]
    assert store.log_path.read_bytes().count(b"\n") == 3 and store.log_path.read_bytes().endswith(b"\n")


def test_ask_on_a_full_disk_prints_the_answer_then_one_line_that_the_memory_was_not_written(tmp_path, harbour):
    memory = tmp_path / "mem"
    args = _ask(tmp_path, harbour, memory)

    def ask() -> tuple[int, str]:
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(out):
            code = main(args)
        return code, out.getvalue()

    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=_oracle().reply)
        code, out = with_full_disk(200, ask)
        lines = out.splitlines()
        assert code == 0
        assert lines[0].startswith("Answer: 1887")
        (note,) = [line for line in lines if line.startswith("Note: memory")]  # (the statistics store's: another)
        assert note == lines[-1] and "not written" in note
        assert (memory / "memory.jsonl").read_bytes() == b""  # nothing half-written

        assert main(args) == 0  # space freed: the next ask appends whole entries
    assert [e.position for e in MemoryStore(memory).entries()] and all(
        e.position == 0 for e in MemoryStore(memory).entries()
    )


def test_an_unreadable_memory_log_costs_one_line_after_the_answer_not_the_answer(tmp_path, harbour, capsys):
    memory = tmp_path / "mem"
    (memory / "memory.jsonl").mkdir(parents=True)  # a folder where the log should be: it cannot be read

    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=_oracle().reply)
        code = main(_ask(tmp_path, harbour, memory))

    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0].startswith("Answer: 1887")
    (note,) = [line for line in lines if "memory" in line]
    assert note == lines[-1] and "memory.jsonl" in note and "not read" in note
