"""The statistics store under faults: damaged pages, garbled fields and blobs, a full disk, a store that cannot be
used, folders deleted or forgotten. Each costs time and one note, never the question or a wrong statistic."""

from __future__ import annotations

import json
import logging
import os
import random
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from lens._config import ReaderSettings
from lens.faces._cli import main
from lens.parts import CorpusView, scan_corpus
from lens.reader import _filestats, _read, _store
from lens.reader._filestats import survey_corpus
from lens.reader._store import StatsStore

from .conftest import BASE_URL, completion, with_full_disk

TERMS = ["w1x", "w7x", "w42x", "title", "quill"]
_WORDS = [f"w{i}x" for i in range(400)]
PAGE = 4096


def _forget_process_memo() -> None:
    """What a new process knows: nothing but the store file (closed: its log checkpointed into it), with the term
    counts this one held written, as its exit writes them (``atexit``)."""
    with _filestats._STORES_LOCK:
        for store in _filestats._STORES.values():
            store._flush_at_exit()
            store.close()
        _filestats._STORES.clear()
    _filestats._FOLDERS.clear()


def _make_folder(root: Path, n: int, seed: int = 1) -> Path:
    rng = random.Random(seed)
    root.mkdir(parents=True)
    for i in range(n):
        (root / f"f{i:04d}.txt").write_text(f"Title {i}\n" + " ".join(rng.choice(_WORDS) for _ in range(40)) + "\n")
    return root


def _state(view: CorpusView) -> tuple:
    return (
        [s.doc_id for s in view.stats],
        [s.sha256 for s in view.stats],
        view.term_counts(TERMS).tolist(),
        view.lengths.tolist(),
    )


def _fresh(folder: Path) -> tuple:
    return _state(CorpusView(scan_corpus(folder)))


@pytest.fixture
def docs(tmp_path) -> Path:
    return _make_folder(tmp_path / "docs", 120)


@pytest.fixture
def store(tmp_path) -> Path:
    return tmp_path / "cache" / "stats.sqlite"


def _set_aside(store: Path) -> list[str]:
    return sorted(p.name for p in store.parent.glob(f"{store.name}.corrupt-*") if not p.name.endswith(("-wal", "-shm")))


def _overwrite_pages(path: Path, pages: list[int], seed: int) -> None:
    """Pages (1-based) of the file overwritten with random bytes, as a bad sector or a stray write would."""
    rng = random.Random(seed)
    with open(path, "r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * PAGE)
            fh.write(rng.randbytes(PAGE))


def _root_page(path: Path, table: str) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT rootpage FROM sqlite_schema WHERE name=?", (table,)).fetchone()[0]
    finally:
        db.close()


# --------------------------------------------------------------------------- a damaged store (defect 1)


def test_a_store_with_random_pages_overwritten_is_set_aside_and_every_question_answered(docs, store):
    settings = ReaderSettings(stats_store=str(store))
    fresh = _fresh(docs)
    met = 0
    for seed in range(6):
        survey_corpus(docs, settings)
        _forget_process_memo()
        pages = store.stat().st_size // PAGE
        _overwrite_pages(store, random.Random(seed).sample(range(2, pages + 1), 3), seed)
        scan = survey_corpus(docs, settings)  # a new process
        assert _state(CorpusView.of(scan)) == fresh, seed
        notes = list(scan.notes)
        assert len(notes) <= 1, notes
        if notes:
            met += 1
            assert "damaged" in notes[0] and ".corrupt-" in notes[0], notes
        _forget_process_memo()
    assert met >= 3  # most seeds hit a page in use; each one that did was set aside
    assert len(_set_aside(store)) == met  # renamed, never deleted


def test_a_page_damaged_under_the_term_counts_is_met_mid_question_and_the_answer_comes_all_the_same(
    docs, store, endpoint, capsys, caplog
):
    settings = ReaderSettings(stats_store=str(store))
    survey_corpus(docs, settings)
    _forget_process_memo()
    _overwrite_pages(store, [_root_page(store, "terms")], seed=7)  # the survey never reads it: the prior does
    endpoint.chat.mock(return_value=completion(json.dumps({"answer": "w1x", "missing": []})))
    argv = ["ask", "Which title names w1x?", str(docs), "--base-url", BASE_URL, "--set", f"reader.stats_store={store}"]

    with caplog.at_level(logging.INFO, logger="lens.stats"):
        assert main([*argv, "--set", "llm.cache=false"]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if line.startswith("Note: file statistics store")]
    assert len(notes) == 1 and "damaged" in notes[0] and "set aside as stats.sqlite.corrupt-" in notes[0], out
    assert any("set aside" in r.getMessage() for r in caplog.records)
    (aside,) = _set_aside(store)
    # the new store is whole: the next question (a new process) is told nothing and counts as a fresh reading does
    _forget_process_memo()
    scan = survey_corpus(docs, settings)
    assert scan.notes == [] and _state(CorpusView.of(scan)) == _fresh(docs)


@pytest.mark.parametrize(
    "garble",
    [
        "UPDATE files SET sig = 'garbled' WHERE path = 'f0003.txt'",
        "UPDATE files SET summary = '{\"nbytes\": ' WHERE path = 'f0004.txt'",
        "UPDATE files SET summary = '{\"nbytes\": 5}' WHERE path = 'f0005.txt'",
        "UPDATE docs SET sha256 = 'zz' || substr(sha256, 3) WHERE id = 6",
        "UPDATE docs SET sha256 = substr(sha256, 2) WHERE id = 7",
        "UPDATE docs SET length = 'long' WHERE id = 8",
    ],
    ids=["sig", "summary-json", "summary-keys", "sha256-hex", "sha256-length", "length"],
)
def test_a_garbled_field_is_set_aside_and_the_folder_read_again(docs, store, garble):
    settings = ReaderSettings(stats_store=str(store))
    survey_corpus(docs, settings)
    _forget_process_memo()
    db = sqlite3.connect(store)
    with db:
        db.execute(garble)
        db.execute("UPDATE scopes SET gen = gen + 1")  # as after another process's write: the rows are read
    db.close()
    scan = survey_corpus(docs, settings)
    assert _state(CorpusView.of(scan)) == _fresh(docs)
    (note,) = scan.notes
    assert "damaged" in note and ("files row" in note or "docs row" in note), note
    assert len(_set_aside(store)) == 1


def test_a_process_meeting_a_fault_in_a_store_another_process_set_aside_uses_the_new_one(docs, store):
    settings = ReaderSettings(stats_store=str(store))
    survey_corpus(docs, settings).doc_stats[2].flush()  # what it held, written (the agent's write thread does this)
    held = next(iter(_filestats._STORES.values()))  # this process keeps the old file open
    for suffix in ("-wal", "-shm", ""):  # another process set it aside and built a new one at the path
        os.rename(f"{store}{suffix}", f"{store}.corrupt-other{suffix}")
    StatsStore(store).close()
    with held.db:  # the old file is damaged, as the other process found
        held.db.execute("UPDATE files SET sig = 'garbled'")
        held.db.execute("UPDATE scopes SET gen = gen + 1")
    _filestats._FOLDERS.clear()
    scan = survey_corpus(docs, settings)
    assert _state(CorpusView.of(scan)) == _fresh(docs)
    (note,) = scan.notes
    assert "replaced at its path meanwhile" in note
    assert _set_aside(store) == ["stats.sqlite.corrupt-other"]  # the new store is not set aside in its turn


# --------------------------------------------------------------------------- a full disk (defect 2)


def _tiny_tmpfs(path: Path) -> bool:
    """A 128 KiB tmpfs mounted at ``path``, if this process may mount one (root, in most containers)."""
    path.mkdir(parents=True)
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


def test_a_disk_that_fills_during_a_survey_keeps_the_statistics_in_memory_and_says_so_once(
    docs, tmp_path, endpoint, capsys
):
    disk = tmp_path / "small-disk"
    if not _tiny_tmpfs(disk):
        pytest.skip("cannot mount a tmpfs here: the RLIMIT_FSIZE test stands in")
    try:
        endpoint.chat.mock(return_value=completion(json.dumps({"answer": "w1x", "missing": []})))
        store = disk / "stats.sqlite"
        argv = ["ask", "Which title names w1x?", str(docs), "--base-url", BASE_URL, "--set", "llm.cache=false"]
        assert main([*argv, "--set", f"reader.stats_store={store}"]) == 0
        out = capsys.readouterr().out
        notes = [line for line in out.splitlines() if line.startswith("Note: file statistics store")]
        assert len(notes) == 1 and "database or disk is full" in notes[0] and "kept in memory" in notes[0], out
        scan = survey_corpus(docs, ReaderSettings(stats_store=str(store)))  # the same process: still in memory
        assert _state(CorpusView.of(scan)) == _fresh(docs) and "kept in memory" in scan.notes[0]
    finally:
        _forget_process_memo()
        subprocess.run(["umount", str(disk)], check=True)


def test_a_file_size_limit_met_during_a_survey_keeps_the_statistics_in_memory(docs, store):
    def ask() -> dict:
        scan = survey_corpus(docs, ReaderSettings(stats_store=str(store)))
        return {"state": _state(CorpusView.of(scan)), "notes": scan.notes}

    got = with_full_disk(128 * 1024, ask)  # room to open the store, not to write the survey
    assert got["state"] == json.loads(json.dumps(_fresh(docs)))
    (note,) = got["notes"]
    assert "kept in memory" in note and ("full" in note or "I/O" in note), note


# --------------------------------------------------------------------------- a store in memory says so (defect 13)


def test_a_store_kept_in_memory_is_a_note_with_every_answer_and_a_log_line(docs, tmp_path, endpoint, capsys, caplog):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    endpoint.chat.mock(return_value=completion(json.dumps({"answer": "w1x", "missing": []})))
    argv = ["ask", "Which title names w1x?", str(docs), "--base-url", BASE_URL, "--set", "llm.cache=false"]
    argv += ["--set", f"reader.stats_store={blocker / 'stats.sqlite'}"]
    for _ in range(2):  # every answer over the store in memory says so, not only the first
        with caplog.at_level(logging.INFO):
            assert main(["-v", *argv]) == 0
        out = capsys.readouterr().out
        notes = [line for line in out.splitlines() if line.startswith("Note: file statistics store")]
        assert len(notes) == 1 and "kept in memory" in notes[0] and "not-a-folder" in notes[0], out
    # one log line (shown with -v), when it happened; the notes say it with every answer
    assert [r.levelname for r in caplog.records if r.name == "lens.stats"] == ["INFO"]


# --------------------------------------------------------------------------- a bounded store (defect 12)


def _scopes(store: Path) -> list[str]:
    db = sqlite3.connect(store)
    try:
        return sorted(s.split("\x00")[0] for (s,) in db.execute("SELECT scope FROM scopes"))
    finally:
        db.close()


def test_folders_deleted_or_long_unused_are_dropped_and_the_file_shrinks(docs, tmp_path, store, monkeypatch):
    settings = ReaderSettings(stats_store=str(store))
    survey_corpus(docs, settings)
    _forget_process_memo()
    alone = store.stat().st_size
    copies = []
    for i in range(5):  # temporary copies of the folder, each asked about once, then deleted
        copy = _make_folder(tmp_path / f"copy{i}", 120, seed=10 + i)
        survey_corpus(copy, settings)
        copies.append(copy)
    idle = _make_folder(tmp_path / "idle", 10, seed=99)  # still there, but no question uses it any more
    survey_corpus(idle, settings)
    _forget_process_memo()
    grown = store.stat().st_size
    assert grown > 3 * alone  # five copies of a folder (the file's own pages weigh as much as one more)
    for copy in copies:
        for f in copy.iterdir():
            f.unlink()
        copy.rmdir()

    now = time.time()
    monkeypatch.setattr(_store, "_now", lambda: now + 2 * 86400, raising=False)  # two days on: the copies go
    scan = survey_corpus(docs, settings)
    assert _scopes(store) == sorted([str(docs.resolve()), str(idle.resolve())])
    assert _state(CorpusView.of(scan)) == _fresh(docs)
    _forget_process_memo()
    assert store.stat().st_size < 1.5 * alone < grown

    monkeypatch.setattr(_store, "_now", lambda: now + 31 * 86400, raising=False)  # a month on: the idle one too
    survey_corpus(docs, settings)
    assert _scopes(store) == [str(docs.resolve())]


def test_lens_corpus_forget_drops_a_folders_statistics_and_a_process_holding_them_reads_it_again(
    docs, tmp_path, store, capsys, monkeypatch
):
    settings = ReaderSettings(stats_store=str(store))
    other = _make_folder(tmp_path / "other", 5, seed=3)
    survey_corpus(docs, settings)  # this process keeps what it knows of docs
    survey_corpus(other, settings)

    assert main(["corpus", "forget", str(docs), "--set", f"reader.stats_store={store}"]) == 0
    assert capsys.readouterr().out.strip() == f"forgot 1 folder (120 files) in {store}"
    assert _scopes(store) == [str(other.resolve())]
    assert main(["corpus", "forget", str(docs), "--set", f"reader.stats_store={store}"]) == 0
    assert capsys.readouterr().out.strip() == f"no statistics of {docs} in {store}"

    reads = []
    real = _read._read_file
    monkeypatch.setattr(_read, "_read_file", lambda *a, **k: reads.append(a[1]) or real(*a, **k))
    scan = survey_corpus(docs, settings)  # another process forgot them: what this one knew is void
    assert len(reads) == 120 and _state(CorpusView.of(scan)) == _fresh(docs)
    assert _scopes(store) == sorted([str(docs.resolve()), str(other.resolve())])


def test_a_folders_use_is_recorded_without_waiting_on_another_processs_write(docs, store, monkeypatch):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)  # files written a moment ago, settled all the same: nothing to write
    settings = ReaderSettings(stats_store=str(store))
    survey_corpus(docs, settings)
    other = sqlite3.connect(store)
    other.execute("BEGIN IMMEDIATE")  # another process's long write holds the store
    try:
        now = time.time()
        monkeypatch.setattr(_store, "_now", lambda: now + 2 * 3600)  # the folder's last use is to be written
        t0 = time.monotonic()
        scan = survey_corpus(docs, settings)
        assert time.monotonic() - t0 < 5 and scan.notes == []  # not waited on, not given up for memory
        assert _state(CorpusView.of(scan)) == _fresh(docs)
        assert scan.doc_stats[2].deferred()  # the first survey's term counts: still held, the store being busy
    finally:
        other.rollback()
        other.close()
    scan.doc_stats[2].flush()  # written once the other write is done
    assert not scan.doc_stats[2].deferred()
    _forget_process_memo()
    assert _state(CorpusView.of(survey_corpus(docs, settings))) == _fresh(docs)


# --------------------------------------------------------------------------- snapshot checksums (defect 14)


def test_a_garbled_snapshot_blob_is_never_served_the_folder_is_read_again(docs, store, monkeypatch):
    settings = ReaderSettings(stats_store=str(store))
    fresh = _fresh(docs)
    survey_corpus(docs, settings)
    _forget_process_memo()
    db = sqlite3.connect(store)
    with db:  # a few bytes of the documents' lengths changed in place: the blob keeps its size
        (data,) = db.execute("SELECT data FROM snapshots WHERE name='length'").fetchone()
        garbled = bytearray(data)
        garbled[8 * 5] ^= 0x40
        garbled[8 * 9 + 1] ^= 0x01
        db.execute("UPDATE snapshots SET data=? WHERE name='length'", (bytes(garbled),))
    db.close()

    reads = []
    real = _read._read_file
    monkeypatch.setattr(_read, "_read_file", lambda *a, **k: reads.append(a[1]) or real(*a, **k))
    scan = survey_corpus(docs, settings)
    assert _state(CorpusView.of(scan)) == fresh and len(reads) == 120
    (note,) = scan.notes
    assert "does not match its checksum" in note and str(docs.resolve()) in note
    assert _set_aside(store) == []  # only that folder's statistics were dropped

    _forget_process_memo()
    reads.clear()
    scan = survey_corpus(docs, settings)  # saved again, whole: loaded without a file read
    assert _state(CorpusView.of(scan)) == fresh and reads == [] and scan.notes == []


def test_a_store_written_by_another_schema_is_replaced_without_a_note(docs, store):
    settings = ReaderSettings(stats_store=str(store))
    survey_corpus(docs, settings)
    _forget_process_memo()
    old = StatsStore(store)
    with old.db:
        old.db.execute("UPDATE meta SET value='3' WHERE key='schema'")
    old.close()
    scan = survey_corpus(docs, settings)
    assert scan.notes == [] and _set_aside(store) == [] and _state(CorpusView.of(scan)) == _fresh(docs)
