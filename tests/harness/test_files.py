"""harness.files: the JSON-lines and manifest readers every harness loader shares name the file and the line; the
files a run keeps open (its lock, its row logs) are never written through a symbolic link."""

from __future__ import annotations

import json
import os
import stat

import pytest

from harness.bench.run_store import RowLog, RunLock, RunStoreError
from harness.bench.stream import _drop_orphan_entries
from harness.files import read_json_manifest, read_jsonl
from lens import LensError


class _Bad(LensError):
    pass


def test_read_jsonl_yields_objects_with_their_line_numbers_and_skips_blank_lines(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert list(read_jsonl(p)) == [(1, {"a": 1}), (3, {"a": 2})]


@pytest.mark.parametrize(
    "text, where",
    [
        ('{"a": 1}\n{"a": \n{"a": 3}\n', "line 2: malformed JSON"),
        ('{"a": 1}\n[1, 2]\n', "line 2: expected a JSON object"),
    ],
)
def test_read_jsonl_names_the_file_and_line_of_a_bad_row_in_the_callers_error(tmp_path, text, where):
    p = tmp_path / "rows.jsonl"
    p.write_text(text)
    with pytest.raises(_Bad, match=f"rows.jsonl: {where}"):
        list(read_jsonl(p, _Bad))


def test_a_torn_last_line_is_skipped_only_when_asked_and_only_at_the_end(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_text('{"a": 1}\n{"a": 2')
    assert list(read_jsonl(p, torn_tail=True)) == [(1, {"a": 1})]
    with pytest.raises(LensError, match="line 2: malformed JSON"):
        list(read_jsonl(p))
    p.write_text('{"a": 1}\n{"a": 2\n{"a": 3}\n')
    with pytest.raises(LensError, match="line 2: malformed JSON"):
        list(read_jsonl(p, torn_tail=True))


def test_read_jsonl_names_a_missing_file(tmp_path):
    with pytest.raises(LensError, match="nope.jsonl: no such file"):
        list(read_jsonl(tmp_path / "nope.jsonl"))


def test_read_json_manifest_checks_its_kind_and_names_the_file(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"format": "x/1", "n": 3}))
    assert read_json_manifest(p, "x/1", "x")["n"] == 3
    with pytest.raises(_Bad, match=r'm.json: not a y manifest \(field "format" is not \'y/1\'\)'):
        read_json_manifest(p, "y/1", "y", _Bad)
    p.write_text("{")
    with pytest.raises(LensError, match="m.json: unreadable x manifest"):
        read_json_manifest(p, "x/1", "x")
    with pytest.raises(LensError, match="none.json: no such manifest"):
        read_json_manifest(tmp_path / "none.json", "x/1", "x")


@pytest.mark.timeout(60)  # reading a planted FIFO once blocked for ever
@pytest.mark.parametrize("planted", ["symlink", "fifo", "folder"])
def test_a_run_lock_or_row_log_planted_as_a_non_regular_file_is_refused_and_its_target_untouched(tmp_path, planted):
    """`ln -s ~/.bashrc RUN/run.lock` once made the lock truncate and overwrite the link's target."""
    run = tmp_path / "run"
    run.mkdir()
    target = tmp_path / "bashrc"
    target.write_text("export PATH=/usr/bin")  # no final newline: a row log's recovery would cut it as torn
    for name in ("run.lock", "rows.jsonl"):
        path = run / name
        if planted == "symlink":
            path.symlink_to(target)
        elif planted == "fifo":
            os.mkfifo(path)
        else:
            path.mkdir()
    with pytest.raises(RunStoreError, match=r"run\.lock: (is a symbolic link|not a regular file)"):
        RunLock(run).__enter__()
    for use in (lambda log: log.recover(None), lambda log: log.open()):
        with pytest.raises(RunStoreError, match=r"rows\.jsonl: (is a symbolic link|not a regular file)"):
            use(RowLog(run / "rows.jsonl"))
    assert target.read_text() == "export PATH=/usr/bin"


def test_a_new_run_lock_is_private_and_names_its_holder(tmp_path):
    with RunLock(tmp_path) as lock:
        assert stat.S_IMODE(lock.path.stat().st_mode) == 0o600
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()


def test_a_stream_resume_rewrites_its_memory_log_without_following_a_planted_temporary_name(tmp_path):
    """The resume's rewrite of memory.jsonl once went through a fixed `memory.jsonl.tmp`, a symlink planted there
    had its target overwritten."""
    target = tmp_path / "bashrc"
    target.write_text("export PATH=/usr/bin\n")
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "memory.jsonl").write_text("".join(json.dumps({"position": p}) + "\n" for p in range(3)))
    (memory / "memory.jsonl.tmp").symlink_to(target)
    assert _drop_orphan_entries(memory, 2) == 1
    assert target.read_text() == "export PATH=/usr/bin\n" and not (memory / "memory.jsonl").is_symlink()
    assert [json.loads(line)["position"] for line in (memory / "memory.jsonl").read_text().splitlines()] == [0, 1]
