"""The per-file statistics store: every change to the folder is seen by the next question, the store is shared
safely between processes, and a broken or unwritable store costs nothing but time."""

from __future__ import annotations

import bz2
import functools
import inspect
import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lens._config import ReaderSettings
from lens.parts import CorpusView, scan_corpus
from lens.reader import _chunks, _filestats, _folder, _read, _store
from lens.reader._columns import TitleIndex
from lens.reader._filestats import survey_corpus
from lens.reader._spill import SpilledPart
from lens.reader._store import StatsStore

TERMS = ["quill", "lighthouse", "harbor", "cape", "tower", "gutierrez", "x2", "snake"]


def _forget_process_memo(killed: bool = False) -> None:
    """What a new process knows: nothing but the store file — with the term counts this one held written, as its
    exit writes them (``atexit``), unless it was ``killed``."""
    with _filestats._STORES_LOCK:
        for store in _filestats._STORES.values():
            if not killed:
                store._flush_at_exit()
            store.close()
        _filestats._STORES.clear()
    _filestats._FOLDERS.clear()


def _state(view: CorpusView) -> tuple:
    titles = sorted((k, tuple(v)) for k, v in view.titles.items())
    assert all(tuple(view.titles[k]) == v for k, v in titles)  # the hashed lookup finds what the names say
    return (
        [s.doc_id for s in view.stats],
        [s.sha256 for s in view.stats],
        view.term_counts(TERMS).tolist(),
        view.lengths.tolist(),
        titles,
    )


def _fresh(folder: Path) -> tuple:
    """The view built from reading every file now (documents in memory)."""
    return _state(CorpusView(scan_corpus(folder)))


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("Quill Point\nQuill Point's lighthouse stands on a cape.\n", encoding="utf-8")
    (root / "b.md").write_text("# Harbor Town\nHarbor Town lies south of the capes; harbors_x2 snake_case.\n")
    (root / "c.txt").write_text("Gutiérrez Tower\nThe Gutiérrez tower, 2 towers, towered over lighthouses.\n")
    shard = root / "wiki" / "wiki_00.bz2"
    shard.parent.mkdir()
    records = [
        {"id": "1", "title": "Cape Lighthouse", "text": ["Cape Lighthouse is a lighthouse.", " It lit the cape."]},
        {"id": "2", "title": "Quill Harbor", "text": "Quill Harbor is a harbor. Quills were sold there."},
    ]
    shard.write_bytes(bz2.compress("\n".join(json.dumps(r) for r in records).encode() + b"\n"))
    return root


def test_a_survey_gives_what_reading_every_file_gives_and_reads_documents_only_when_asked(folder, monkeypatch):
    reads = []
    real = _read._read_file
    monkeypatch.setattr(_read, "_read_file", lambda *a, **k: reads.append(a[1]) or real(*a, **k))
    scan = survey_corpus(folder)
    view = CorpusView.of(scan)
    assert _state(view) == _fresh(folder)
    assert view.term_counts(["lighthouse"])[:, 0].tolist() == [1.0, 0.0, 1.0, 3.0, 0.0]  # "lighthouses" counts
    full = scan_corpus(folder)
    assert scan.stats() | {"seconds": 0, "mb_per_s": 0} == full.stats() | {"seconds": 0, "mb_per_s": 0}
    reads.clear()
    doc = view.docs[3]
    assert reads == ["wiki/wiki_00.bz2"] and doc == full.documents[3] and doc.sentences == full.documents[3].sentences


def test_the_cyclic_collector_is_paused_while_a_survey_runs_and_left_as_it_was(folder, monkeypatch):
    """A survey makes objects by the hundred thousand: the collector waits until it is done, then is as before."""
    import gc

    seen = []
    real = _filestats._survey

    def watched(*a, **k):
        seen.append(gc.isenabled())
        return real(*a, **k)

    monkeypatch.setattr(_filestats, "_survey", watched)
    was = gc.isenabled()
    try:
        gc.enable()
        survey_corpus(folder, ReaderSettings(stats_store=None))
        assert seen == [False] and gc.isenabled()
        gc.disable()  # a caller that turned it off keeps it off
        (folder / "d.txt").write_text("Snake Cape\nA new file.\n")
        survey_corpus(folder, ReaderSettings(stats_store=None))
        assert seen == [False, False] and not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_a_new_process_takes_unchanged_files_from_the_store_without_reading_them(folder, monkeypatch):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)  # written a moment ago, settled all the same
    before = _state(CorpusView.of(survey_corpus(folder)))
    _forget_process_memo()
    reads = []
    real = _read._read_file
    monkeypatch.setattr(_read, "_read_file", lambda *a, **k: reads.append(a[1]) or real(*a, **k))
    assert _state(CorpusView.of(survey_corpus(folder))) == before and reads == []


def _spy_rows(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = StatsStore._rows
    monkeypatch.setattr(StatsStore, "_rows", lambda self, sid: calls.append(sid) or real(self, sid))
    return calls


def test_a_new_process_loads_the_folders_columns_from_the_snapshot_not_from_every_files_rows(folder, monkeypatch):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    before = _state(CorpusView.of(survey_corpus(folder)))
    _forget_process_memo()
    rows = _spy_rows(monkeypatch)
    assert _state(CorpusView.of(survey_corpus(folder))) == before and rows == []


def test_a_snapshot_missing_a_blob_is_read_from_the_rows_and_saved_again(folder, monkeypatch):
    """(A garbled blob fails its checksum and the folder is read again: tests/lens/test_store_faults.py.)"""
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    before = _state(CorpusView.of(survey_corpus(folder)))
    store = next(iter(_filestats._STORES.values()))
    store.flush()  # the counts the survey held, and the snapshot after them (the agent's write thread does this)
    with store.db:
        store.db.execute("DELETE FROM snapshots WHERE name = 'start'")
    _forget_process_memo()
    rows = _spy_rows(monkeypatch)
    assert _state(CorpusView.of(survey_corpus(folder))) == before and len(rows) == 1
    _forget_process_memo()
    assert _state(CorpusView.of(survey_corpus(folder))) == before and len(rows) == 1  # the snapshot again


def test_a_snapshot_older_than_another_processs_write_is_not_used(folder, monkeypatch):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    survey_corpus(folder).doc_stats[2].flush()  # what it held written (the agent's write thread does this)
    store = next(iter(_filestats._STORES.values()))
    scope = next(iter(_filestats._FOLDERS))[1]
    other = StatsStore(store.path)  # another process drops a file's rows: the folder's generation moves on
    other.drop(scope, ["a.txt"])
    other.close()
    _forget_process_memo()
    rows = _spy_rows(monkeypatch)
    reads = []
    real = _read._read_file
    monkeypatch.setattr(_read, "_read_file", lambda *a, **k: reads.append(a[1]) or real(*a, **k))
    assert _state(CorpusView.of(survey_corpus(folder))) == _fresh(folder)
    assert len(rows) == 1 and reads == ["a.txt"]  # the rows, in which a.txt is missing, so it is read again


def test_a_save_after_edits_keeps_the_snapshot_blobs_of_unchanged_strings(folder, monkeypatch):
    """An edit that leaves every path, title and name as it was encodes only the numbers again; a new process then
    reads the folder as reading every file gives it — and so after an edit that changes a title."""
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    survey_corpus(folder).doc_stats[2].flush()
    skipped: list[set[str]] = []
    real = _folder._Files.blobs
    monkeypatch.setattr(
        _folder._Files, "blobs", lambda self, skip=frozenset(): skipped.append(set(skip)) or real(self, skip)
    )
    with open(folder / "a.txt", "a", encoding="utf-8") as fh:
        fh.write("It was painted white.\n")
    survey_corpus(folder).doc_stats[2].flush()  # saved once its held counts are written
    assert skipped == [{"paths.000000", "doc_id.000000", "title.000000", "names.000000"}]
    _forget_process_memo()
    rows = _spy_rows(monkeypatch)
    assert _state(CorpusView.of(survey_corpus(folder))) == _fresh(folder) and rows == []
    (folder / "a.txt").write_text("Quill Harbour\nQuill Harbour has a lighthouse.\n", encoding="utf-8")
    survey_corpus(folder).doc_stats[2].flush()
    assert skipped[-1] == {"paths.000000", "doc_id.000000"}  # its title and names encoded again
    _forget_process_memo()
    view = CorpusView.of(survey_corpus(folder))
    assert _state(view) == _fresh(folder) and rows == [] and "quill harbour" in view.titles


@pytest.mark.parametrize("new_process", [False, True])
def test_an_edit_an_addition_and_a_deletion_are_each_seen_by_the_next_question(folder, monkeypatch, new_process):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    CorpusView.of(survey_corpus(folder))

    def next_question() -> CorpusView:
        if new_process:
            _forget_process_memo()
        return CorpusView.of(survey_corpus(folder))

    (folder / "a.txt").write_text("Quill Point\nQuill Point has no lighthouse but a harbor and a tower.\n")
    view = next_question()
    assert _state(view) == _fresh(folder) and view.term_counts(["tower"])[0, 0] == 1.0
    (folder / "d.txt").write_text("Snake Tower\nSnake Tower is a tower.\n")
    view = next_question()
    assert _state(view) == _fresh(folder) and "snake tower" in view.titles
    (folder / "c.txt").unlink()
    view = next_question()
    assert _state(view) == _fresh(folder) and "c.txt" not in [s.doc_id for s in view.stats]
    (folder / "wiki" / "wiki_00.bz2").unlink()
    view = next_question()
    assert _state(view) == _fresh(folder) and len(view) == 3


def test_a_same_size_same_mtime_rewrite_is_seen(folder, monkeypatch):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    target = folder / "a.txt"
    view = CorpusView.of(survey_corpus(folder))
    assert view.term_counts(["cape"])[0, 0] == 1.0
    st = target.stat()
    text = target.read_text()
    target.write_text(text.replace("cape", "cove"))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime: only ctime (and content) moved
    assert target.stat().st_size == st.st_size and target.stat().st_mtime_ns == st.st_mtime_ns
    _forget_process_memo()
    view = CorpusView.of(survey_corpus(folder))
    assert view.term_counts(["cape"])[0, 0] == 0.0 and _state(view) == _fresh(folder)


def test_a_file_read_moments_after_a_change_is_checked_by_its_content_next_time(folder, monkeypatch):
    survey_corpus(folder)  # every file was written within the last two seconds: none is settled
    folder_memo = next(iter(_filestats._FOLDERS.values()))
    row = folder_memo.files.paths.index("a.txt")
    assert not folder_memo.files.settled[row] and folder_memo.files.file_hash(row)
    reads = []
    real = _read._read_file
    monkeypatch.setattr(_read, "_read_file", lambda *a, **k: reads.append(a[1]) or real(*a, **k))
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    survey_corpus(folder)
    # whole files: the same bytes, so their statistics stand (now settled); the container is read again
    assert reads == ["wiki/wiki_00.bz2"] and folder_memo.files.settled[folder_memo.files.paths.index("a.txt")]


def test_a_corrupt_store_is_rebuilt(folder, tmp_path):
    store = tmp_path / "cache" / "stats.sqlite"
    settings = ReaderSettings(stats_store=str(store))
    survey_corpus(folder, settings)
    _forget_process_memo()
    for suffix in ("-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    store.write_bytes(b"this is not an SQLite database" * 100)
    scan = survey_corpus(folder, settings)
    assert not any("statistics store" in p for p in scan.problems)
    assert _state(CorpusView.of(scan)) == _fresh(folder)
    scan.doc_stats[2].flush()  # what the survey held, written (the agent's write thread does this)
    assert StatsStore(store).db.execute("SELECT count(*) FROM files").fetchone()[0] == 4


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only permissions")
def test_a_store_that_cannot_be_written_is_kept_in_memory_with_a_warning(folder, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        scan = survey_corpus(folder, ReaderSettings(stats_store=str(cache / "stats.sqlite")))
    finally:
        cache.chmod(stat.S_IRWXU)
    assert any("kept in memory" in p for p in scan.problems)
    assert _state(CorpusView.of(scan)) == _fresh(folder)


def test_a_store_file_that_cannot_be_opened_is_kept_in_memory_with_a_warning(folder, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    scan = survey_corpus(folder, ReaderSettings(stats_store=str(blocker / "stats.sqlite")))
    assert any("kept in memory" in p for p in scan.problems)
    assert _state(CorpusView.of(scan)) == _fresh(folder)


def test_nothing_is_ever_written_inside_the_folder(folder):
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    scan = survey_corpus(folder, ReaderSettings(stats_store=str(folder / ".cache" / "stats.sqlite")))
    assert any("inside the folder" in p for p in scan.problems)
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before
    assert _state(CorpusView.of(scan)) == _fresh(folder)


_CHILD = """
import json, sys
from lens.parts import CorpusView
from lens._config import ReaderSettings
from lens.reader._filestats import survey_corpus
view = CorpusView.of(survey_corpus(sys.argv[1], ReaderSettings(stats_store=sys.argv[2])))
print(json.dumps([[s.doc_id for s in view.stats], view.term_counts(sys.argv[3:]).tolist()]))
"""


def test_two_processes_share_the_store_at_once(folder, tmp_path):
    for i in range(60):  # enough files that both processes are writing at the same time
        (folder / f"extra{i:02d}.txt").write_text(f"Extra {i}\nExtra {i} names a lighthouse and a tower {i}.\n")
    store = tmp_path / "shared" / "stats.sqlite"
    cmd = [sys.executable, "-c", _CHILD, str(folder), str(store), *TERMS]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    results = [json.loads(out) for out, _ in outs]
    fresh = _fresh(folder)
    assert results[0] == results[1] == [fresh[0], fresh[2]]
    third = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert json.loads(third.stdout) == results[0]


def test_documents_from_another_folder_in_the_same_store_are_not_counted(folder, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("Lighthouse Keeper\nA lighthouse keeper keeps a lighthouse.\n")
    CorpusView.of(survey_corpus(other))
    view = CorpusView.of(survey_corpus(folder))
    assert _state(view) == _fresh(folder)


def _counting_listings(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = _filestats._list_files
    monkeypatch.setattr(_filestats, "_list_files", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
def test_a_process_asking_again_watches_the_folder_and_still_sees_every_change(folder, monkeypatch):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)  # files written just now settle at once: this is about the watch
    listings = _counting_listings(monkeypatch)
    for _ in range(3):  # first survey; asked again: watched; the third survey's listing arms the watch
        view = CorpusView.of(survey_corpus(folder))
    assert len(listings) == 3
    view.docs[0].text, view.docs[3].text  # reading documents is not a change
    again = survey_corpus(folder)
    assert len(listings) == 3 and CorpusView.of(again) is view  # nothing changed: no listing at all

    def next_question() -> CorpusView:
        return CorpusView.of(survey_corpus(folder))

    (folder / "a.txt").write_text("Quill Point\nQuill Point has a tower.\n")
    assert _state(next_question()) == _fresh(folder) and len(listings) == 4
    (folder / "new").mkdir()
    (folder / "new" / "d.txt").write_text("Snake Tower\nSnake Tower is a tower.\n")
    assert _state(next_question()) == _fresh(folder)
    (folder / "new" / "d.txt").write_text("Snake Tower\nSnake Tower is a lighthouse.\n")  # in the new directory
    assert _state(next_question()) == _fresh(folder)
    target = folder / "b.md"
    st = target.stat()
    target.write_text(target.read_text().replace("Harbor", "Harbot"))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _state(next_question()) == _fresh(folder)
    (folder / "c.txt").unlink()
    assert _state(next_question()) == _fresh(folder)
    n = len(listings)
    next_question()
    next_question()
    assert len(listings) == n  # watched, nothing changed: no listing


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
def test_a_file_edited_through_a_hard_link_outside_the_folder_is_seen_under_the_watch(folder, tmp_path, monkeypatch):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)  # every file settled: only the per-file stat can see the edit
    listings = _counting_listings(monkeypatch)
    link = tmp_path / "b-link.md"  # the same file, named outside the folder: its directory gets no event
    os.link(folder / "b.md", link)
    for _ in range(4):  # the third survey arms the watch; the fourth lists nothing
        view = CorpusView.of(survey_corpus(folder))
    assert len(listings) == 3
    text = link.read_text()
    with open(link, "r+") as fh:  # same size, in place
        fh.write(text.replace("Harbor Town", "Harbot Town"))
    got = CorpusView.of(survey_corpus(folder))
    assert got is not view and _state(got) == _fresh(folder)
    assert [d.text for d in survey_corpus(folder).documents if d.path == "b.md"] == [(folder / "b.md").read_text()]


def _counting_stats(monkeypatch) -> list[int]:
    """How many files each quiet-watch check stat'ed."""
    calls: list[int] = []
    real = _filestats._unchanged
    monkeypatch.setattr(
        _filestats,
        "_unchanged",
        lambda files, prefix, rows=None: (
            calls.append(len(files) if rows is None else len(rows)) or real(files, prefix, rows)
        ),
    )
    return calls


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
def test_a_quiet_watch_stats_only_the_files_with_other_names_and_every_file_once_a_minute(
    folder, tmp_path, monkeypatch
):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    os.link(folder / "b.md", tmp_path / "b-link.md")  # one file with a second name
    for _ in range(3):  # the third survey arms the watch
        survey_corpus(folder)
    stats = _counting_stats(monkeypatch)
    for _ in range(3):
        survey_corpus(folder)
    assert stats == [1, 1, 1]  # a repeated question costs a stat per linked file, not per file
    (state,) = [f for (_, scope), f in _filestats._FOLDERS.items() if scope.startswith(f"{folder.resolve()}\x00")]
    state.checked -= _filestats._RECHECK_S  # a minute on
    survey_corpus(folder)
    survey_corpus(folder)
    assert stats[3:] == [4, 1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
def test_an_edit_through_a_hard_link_made_after_the_listing_is_seen_within_a_minute(folder, tmp_path, monkeypatch):
    """What a quiet watch can miss, for at most _RECHECK_S: a file that got another name outside the folder since
    it was last stat'ed, written through that name."""
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    for _ in range(4):
        view = CorpusView.of(survey_corpus(folder))
    link = tmp_path / "c-link.txt"
    os.link(folder / "c.txt", link)  # no event in the folder's directories
    text = link.read_text()
    with open(link, "r+") as fh:  # same size, in place
        fh.write(text.replace("Tower", "Towel"))
    assert CorpusView.of(survey_corpus(folder)) is view  # within the minute: the documented miss
    (state,) = [f for (_, scope), f in _filestats._FOLDERS.items() if scope.startswith(f"{folder.resolve()}\x00")]
    state.checked -= _filestats._RECHECK_S
    got = CorpusView.of(survey_corpus(folder))
    assert got is not view and _state(got) == _fresh(folder)
    assert CorpusView.of(survey_corpus(folder)) is got  # listed again: c.txt is now stat'ed with every question
    with open(link, "r+") as fh:
        fh.write(text.replace("Tower", "Tiger"))
    assert _state(CorpusView.of(survey_corpus(folder))) == _fresh(folder)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
def test_a_first_survey_under_the_watch_leaves_no_linked_file_unchecked(tmp_path, monkeypatch):
    """A folder's first survey stats no text file while listing (its reading gives the signatures), so it cannot
    tell which files have other names: until the folder is listed again, a quiet watch stats every file."""
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    root = tmp_path / "docs"
    root.mkdir()
    for _ in range(3):  # asked about while empty: the watch is armed, and knows no file
        survey_corpus(root)
    (tmp_path / "a.txt").write_text("Quill Point\nQuill Point's lighthouse stands on a cape.\n")
    os.link(tmp_path / "a.txt", root / "a.txt")  # an event in the folder; then a file with a name outside it
    assert [d.path for d in survey_corpus(root).documents] == ["a.txt"]  # the folder's first survey
    view = CorpusView.of(survey_corpus(root))  # watched, quiet: every file stat'ed
    with open(tmp_path / "a.txt", "r+") as fh:  # same size, in place, through the name outside
        fh.write(fh.read().replace("Quill", "Quilt"))
    got = CorpusView.of(survey_corpus(root))
    assert got is not view and _state(got) == _fresh(root)


def test_with_the_watch_off_every_question_lists_the_folder(folder, monkeypatch):
    listings = _counting_listings(monkeypatch)
    for _ in range(4):
        survey_corpus(folder, ReaderSettings(watch=False))
    assert len(listings) == 4


def test_a_store_of_another_schema_is_rebuilt(folder, tmp_path):
    store = tmp_path / "cache" / "stats.sqlite"
    settings = ReaderSettings(stats_store=str(store))
    survey_corpus(folder, settings)
    _forget_process_memo()
    old = StatsStore(store)
    with old.db:
        old.db.execute("UPDATE meta SET value='999' WHERE key='schema'")
    old.close()
    scan = survey_corpus(folder, settings)
    assert not any("statistics store" in p for p in scan.problems)
    assert _state(CorpusView.of(scan)) == _fresh(folder)
    again = StatsStore(store)
    assert again.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == str(_store._SCHEMA)


def test_a_read_only_store_is_kept_in_memory_with_a_warning(folder, tmp_path, monkeypatch):
    """What a read-only cache folder gives a non-root user (root writes through permissions, so it is simulated)."""
    import sqlite3

    def read_only(self):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(StatsStore, "_open_file", read_only)
    scan = survey_corpus(folder, ReaderSettings(stats_store=str(tmp_path / "ro" / "stats.sqlite")))
    assert any("kept in memory" in p and "readonly" in p for p in scan.problems)
    assert _state(CorpusView.of(scan)) == _fresh(folder)


def test_threads_surveying_one_folder_at_once_agree(folder, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    for i in range(200):
        (folder / f"t{i:03d}.txt").write_text(f"Thread {i}\nThread {i} names a tower.\n")
    with ThreadPoolExecutor(4) as pool:
        views = list(pool.map(lambda _: _state(CorpusView.of(survey_corpus(folder))), range(8)))
    assert all(v == _fresh(folder) for v in views)


def test_after_a_fork_the_child_opens_its_own_store(folder):
    """What ``os.register_at_fork`` runs in a child: the parent's connection and watches are set aside, unused."""
    survey_corpus(folder)
    parent_store = next(iter(_filestats._STORES.values()))
    _filestats._forget_parent()
    assert not _filestats._STORES and not _filestats._FOLDERS
    assert _state(CorpusView.of(survey_corpus(folder))) == _fresh(folder)
    assert next(iter(_filestats._STORES.values())) is not parent_store
    assert parent_store in _filestats._INHERITED


def test_orphaned_postings_are_deleted_once_enough_documents_were_dropped(folder, monkeypatch):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    for i in range(20):
        (folder / f"o{i:02d}.txt").write_text(f"Orphan {i}\nOrphan {i} is a lighthouse.\n")
    survey_corpus(folder)
    store = next(iter(_filestats._STORES.values()))

    def orphans() -> int:
        live = {r[0] for r in store.db.execute("SELECT id FROM docs")}
        runs = [_store._unpack_run(*r) for r in store.db.execute("SELECT term, doc, data FROM terms")]
        return sum(d not in live for _, docs, _ in runs for d in docs.tolist())

    (folder / "o00.txt").unlink()
    view = CorpusView.of(survey_corpus(folder))
    assert orphans() > 0 and _state(view) == _fresh(folder)  # one of 24 dropped: left for later
    for i in range(1, 10):
        (folder / f"o{i:02d}.txt").unlink()
    view = CorpusView.of(survey_corpus(folder))
    assert orphans() == 0 and _state(view) == _fresh(folder)  # 10 of 14 live: deleted now


def test_a_repeated_survey_reports_what_this_listing_skipped(folder, monkeypatch):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    settings = ReaderSettings(watch=False)
    first = survey_corpus(folder, settings)
    (folder / ".hidden.txt").write_text("Hidden\nNot a document.\n")  # the same documents, one more skipped entry
    again = survey_corpus(folder, settings)
    assert again.skipped["hidden"] == first.skipped["hidden"] + 1
    assert again.stats() | {"seconds": 0, "mb_per_s": 0} == scan_corpus(folder).stats() | {"seconds": 0, "mb_per_s": 0}


def test_files_gathered_from_parts_keep_each_files_signature_documents_and_outcome(folder):
    shard = folder / "wiki" / "wiki_01.bz2"
    shard.write_bytes(bz2.compress(b'{"id": "9", "title": "Cape Quill", "text": "Cape Quill."}\nnot json\n'))
    (folder / "e.txt").write_bytes(b"")
    survey_corpus(folder)
    (files,) = [f.files for (_, scope), f in _filestats._FOLDERS.items() if scope.startswith(f"{folder.resolve()}\x00")]
    n = len(files)
    assert n == 6 and (files.detail >= 0).any() and (np.diff(files.start) == 2).any()  # containers, an outcome

    def row(f, i):
        docs = f.docs[int(f.start[i]) : int(f.start[i + 1])]
        outcome = f.details[f.detail[i]] if f.detail[i] >= 0 else None
        return f.paths[i], f.sig(i), bool(f.settled[i]), bool(f.whole[i]), int(f.nbytes[i]), outcome, docs

    parts = [files.take(np.arange(0, 2)), _folder._Files.empty(), files.take(np.arange(2, n))]
    for order in ([5, 0, 3, 1, 4, 2], [3, 3], [], list(range(n))):
        got = _folder._Files.gather(parts, np.asarray(order, dtype=np.int64))
        assert [row(got, k) for k in range(len(got))] == [row(files, i) for i in order]
        assert got.start[0] == 0 and got.start[-1] == len(got.docs)


def test_a_listing_hands_out_the_known_path_strings_where_the_same_path_comes_at_the_same_place(folder):
    from collections import Counter

    from lens.reader._listing import _list_files

    first = _list_files(folder, ReaderSettings(), Counter(), [])
    known = [p.encode().decode() for p in first]  # equal strings, other objects
    again = _list_files(folder, ReaderSettings(), Counter(), [], known=known)
    assert again == first and all(a is k for a, k in zip(again, known))
    (folder / "a0.txt").write_text("A0\nNew.\n")  # listed second: every path after it has moved one place
    moved = _list_files(folder, ReaderSettings(), Counter(), [], known=known)
    assert moved == ["a.txt", "a0.txt", *first[1:]] and moved[0] is known[0]
    assert not any(m is k for m, k in zip(moved[1:], known))


def test_a_first_listing_stats_only_containers_and_the_reading_gives_every_files_signature(folder):
    from array import array
    from collections import Counter

    from lens.reader._listing import _list_files

    sigs = (array("Q"), array("q"), array("B"))
    paths = _list_files(folder, ReaderSettings(), Counter(), [], sigs=sigs, containers_only=True)
    times = np.asarray(sigs[1]).reshape(-1, 3)
    sizes = {p: int(t[0]) for p, t in zip(paths, times)}
    assert sizes == {p: (folder / p).stat().st_size if p.endswith(".bz2") else -1 for p in paths}
    assert not any(sigs[2])
    survey_corpus(folder)
    (files,) = [f.files for (_, scope), f in _filestats._FOLDERS.items() if scope.startswith(f"{folder.resolve()}\x00")]
    for p, ident, t in zip(files.paths, files.ident.tolist(), files.times.tolist()):
        st = (folder / p).stat()
        assert ident == [st.st_dev, st.st_ino] and t == [st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _wide_folder(root: Path) -> Path:
    """Enough files of each kind (text, HTML, empty, binary, containers with a bad record) for several chunks."""
    for i in range(24):
        (root / "many" / f"{i // 8}").mkdir(parents=True, exist_ok=True)
        (root / "many" / f"{i // 8}" / f"n{i:02d}.txt").write_text(f"Note {i}\nQuill note {i}: naïve cape Nº{i}.\n")
    (root / "many" / "page.html").write_text("<html><title>Cape Page</title><p>Harbor towers</p></html>")
    (root / "many" / "empty.txt").write_bytes(b"")
    (root / "many" / "nul.txt").write_bytes(b"Bin\x00ary")
    (root / "many" / "rec.jsonl").write_text('{"title": "Snake", "text": "Snake harbor."}\nnot json\n')
    return root


def _survey_state(folder: Path, store: Path) -> tuple:
    scan = survey_corpus(folder, ReaderSettings(stats_store=str(store)))
    return _state(CorpusView.of(scan)), scan.stats() | {"seconds": 0, "mb_per_s": 0}, scan.problems


@pytest.mark.parametrize("held", ["memory", "spilled"])
@pytest.mark.parametrize("along", [False, True], ids=["workers-only", "this-process-too"])
def test_a_first_survey_over_worker_processes_equals_one_read_here(folder, tmp_path, monkeypatch, along, held):
    """The first survey holds the rows (as its columns) and the term counts: "memory" — in memory; "spilled" — past
    ``_store._HELD_BYTES``, in a temporary file beside the store."""
    _wide_folder(folder)
    here = _survey_state(folder, tmp_path / "here.sqlite")
    _forget_process_memo()
    if held == "spilled":
        monkeypatch.setattr(_store, "_HELD_BYTES", 0)
    monkeypatch.setattr(_filestats, "_PARALLEL_AT", 1)  # any folder is read over the workers, 4 files a chunk
    monkeypatch.setattr(_filestats, "_CHUNK_MAX", 4)
    monkeypatch.setattr(_filestats, "cpu_count", lambda: 3)
    monkeypatch.setattr(_filestats, "ReadPool", functools.partial(_chunks.ReadPool, here=along))
    read_here = []
    real = _chunks.read_chunk
    monkeypatch.setattr(_chunks, "read_chunk", lambda jobs, *a: read_here.append(jobs) or real(jobs, *a))
    workers = _survey_state(folder, tmp_path / "workers.sqlite")
    if not along:
        assert read_here == []  # every chunk was read by a worker
    assert workers == here and here[0] == _fresh(folder)
    store = next(iter(_filestats._STORES.values()))
    assert store.deferred()
    parts = [p for d in store._deferred for p in d.parts]
    assert any(isinstance(p, SpilledPart) for p in parts) == (held == "spilled")
    assert store.db.execute("SELECT count(*) FROM files").fetchone()[0] == 0  # the rows held too
    store.flush()
    assert store._spill is None  # every part written: the temporary file closed
    _forget_process_memo()  # a new process loads what the workers' survey stored
    assert _survey_state(folder, tmp_path / "workers.sqlite") == here


def test_a_read_pool_hands_out_every_chunk_once_between_its_workers_and_this_process(folder, monkeypatch):
    """Chunks are taken by whoever is free: the workers (kept reading by threads) and this process, each chunk
    once; a worker lost on a chunk gives it back."""
    _wide_folder(folder)
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    chunks = [[(str(folder / f), f) for f in files[i : i + 3]] for i in range(0, len(files), 3)]
    settings, real = ReaderSettings(), os.path.realpath(folder)
    with _chunks.ReadPool(2) as pool:
        got = dict(pool.map(chunks, settings, real))
    assert sorted(got) == list(range(len(chunks)))
    once = {i: _chunks.read_chunk(c, settings, real) for i, c in enumerate(chunks)}
    for i, chunk in once.items():
        assert list(got[i].files.docs) == list(chunk.files.docs) and got[i].runs == chunk.runs
        assert got[i].files.paths == chunk.files.paths and np.array_equal(got[i].files.times, chunk.files.times)
        titles = got[i].files.docs._titles  # made where the chunk was read, handed back with it
        assert titles is not None and titles.names is got[i].files.docs.names
        built = TitleIndex.build(chunk.files.docs.names)
        assert np.array_equal(titles.hashes, built.hashes) and np.array_equal(titles.docs, built.docs)
    # every worker dies on its first chunk: each chunk is read here all the same, once
    monkeypatch.setattr(
        _chunks,
        "_WORKER_CODE",
        "import sys, os; from multiprocessing.connection import Connection; "
        "c = Connection(int(sys.argv[2])); c.send('ready'); c.recv(); os._exit(3)",
    )
    with _chunks.ReadPool(2, here=False) as pool:
        order = [i for i, _ in pool.map(chunks, settings, real)]
    assert sorted(order) == list(range(len(chunks)))


def _over_workers(monkeypatch) -> None:
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)  # written a moment ago, settled all the same
    monkeypatch.setattr(_filestats, "_PARALLEL_AT", 1)  # any folder is read over the workers, 4 files a chunk
    monkeypatch.setattr(_filestats, "_CHUNK_MAX", 4)
    monkeypatch.setattr(_filestats, "cpu_count", lambda: 2)


def _wide_folder_read_here(folder: Path, tmp_path: Path, monkeypatch) -> tuple:
    """The wide folder made and surveyed once in this process alone (its state, the reference), this process's
    memo forgotten, and every survey from here on read over the workers."""
    _wide_folder(folder)
    here = _survey_state(folder, tmp_path / "here.sqlite")
    _forget_process_memo()
    _over_workers(monkeypatch)
    return here


def test_workers_for_a_folder_the_store_knows_nothing_of_start_while_it_is_listed(folder, tmp_path, monkeypatch):
    """Their start overlaps the listing of a folder whose every file is to be read; a known folder's changed
    files are known only after it, and so are the workers to read them."""
    _wide_folder(folder)
    _over_workers(monkeypatch)
    monkeypatch.setattr(_filestats, "_PARALLEL_AT", 5)
    started = []  # for each pool started: whether the folder was being listed then
    real = _chunks.ReadPool

    def pool(*a, **k):
        started.append(any(f.function == "_file" for f in inspect.stack()))
        return real(*a, **k)

    monkeypatch.setattr(_filestats, "ReadPool", pool)
    path = tmp_path / "workers.sqlite"
    assert _survey_state(folder, path)[0] == _fresh(folder)
    assert started == [True]
    monkeypatch.setattr(_filestats, "_PARALLEL_AT", 1)
    (folder / "many" / "0" / "n00.txt").write_text("Note 0\nQuill note 0: edited.\n")
    assert _survey_state(folder, path)[0] == _fresh(folder)
    assert started == [True, False]


def _reads(monkeypatch) -> list:
    """The files this process reads from now on (a worker's reads are its own: none are handed out now)."""
    seen: list = []
    real = _read._read_file
    monkeypatch.setattr(_read, "_read_file", lambda full, *a, **k: seen.append(full) or real(full, *a, **k))
    return seen


def test_a_first_survey_over_workers_holds_its_term_counts_and_writes_them_at_the_next_survey(
    folder, tmp_path, monkeypatch
):
    """The first question is ranked from counts held in memory — and the files' and documents' rows, the store
    knowing none of the folder; the next survey writes them, with the snapshot, so a new process reads no file."""
    here = _wide_folder_read_here(folder, tmp_path, monkeypatch)
    path = tmp_path / "workers.sqlite"
    scan = survey_corpus(folder, ReaderSettings(stats_store=str(path)))
    store = scan.doc_stats[2]
    scope = next(d.scope for d in store._deferred)
    assert store.deferred(scope) and store.db.execute("SELECT count(*) FROM terms").fetchone()[0] == 0
    assert store.db.execute("SELECT count(*) FROM files").fetchone()[0] == 0  # rows held too
    assert store.db.execute("SELECT count(*) FROM docs").fetchone()[0] == 0
    held = _state(CorpusView.of(scan))
    assert held == here[0]  # the counts held answer as the stored ones do
    assert _survey_state(folder, path)[0] == here[0]  # the next survey: written first
    assert not store.deferred(scope) and store.db.execute("SELECT count(*) FROM terms").fetchone()[0] > 0
    _forget_process_memo()
    seen = _reads(monkeypatch)
    assert _survey_state(folder, path) == here and seen == []  # a new process: every file known, none read
    with sqlite3.connect(path) as db:  # and from the rows alone (written from the survey's columns)
        db.execute("DELETE FROM snapshots")
    _forget_process_memo()
    assert _survey_state(folder, path) == here and seen == []


def test_a_flush_while_a_first_survey_is_under_way_leaves_its_held_rows_for_after_it(folder, tmp_path, monkeypatch):
    """Another thread's flush (a server asked about another folder) meets a first survey's held counts before the
    survey has its columns: they stay held, served to its question, and are written once it is done."""
    here = _wide_folder_read_here(folder, tmp_path, monkeypatch)
    path = tmp_path / "workers.sqlite"
    real = _filestats._flush
    flushes = []

    def flush_between(store, *a, **k):
        gen = real(store, *a, **k)
        store.flush()  # as another thread's would, between two of this survey's chunks
        flushes.append(store.db.execute("SELECT count(*) FROM files").fetchone()[0])
        return gen

    monkeypatch.setattr(_filestats, "_flush", flush_between)
    scan = survey_corpus(folder, ReaderSettings(stats_store=str(path)))
    assert len(flushes) >= 6 and set(flushes) == {0}  # nothing of it written while under way
    assert _state(CorpusView.of(scan)) == here[0]
    scan.doc_stats[2].flush()
    monkeypatch.setattr(_filestats, "_flush", real)
    _forget_process_memo()
    seen = _reads(monkeypatch)
    assert _survey_state(folder, path) == here and seen == []


def test_a_first_survey_that_fails_drops_the_rows_it_held_and_the_next_reads_every_file(folder, tmp_path, monkeypatch):
    here = _wide_folder_read_here(folder, tmp_path, monkeypatch)
    path = tmp_path / "workers.sqlite"
    real = _filestats._flush
    calls = []

    def fail_second(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("a fault mid-survey")
        return real(*a, **k)

    monkeypatch.setattr(_filestats, "_flush", fail_second)
    with pytest.raises(RuntimeError):
        survey_corpus(folder, ReaderSettings(stats_store=str(path)))
    store = next(iter(_filestats._STORES.values()))
    assert not store.deferred()  # the one chunk it held: dropped
    monkeypatch.setattr(_filestats, "_flush", real)
    assert _survey_state(folder, path) == here
    store.flush()
    _forget_process_memo()
    assert _survey_state(folder, path) == here


@pytest.mark.parametrize("together", [10**6, 8])
def test_a_folders_held_writes_are_written_together_a_row_per_term_each(folder, tmp_path, monkeypatch, together):
    """A survey holds a write per chunk (4 files here); they are written as one — up to ``_HELD_WRITE`` files or
    documents — so a term has a row per write, not per chunk."""
    here = _wide_folder_read_here(folder, tmp_path, monkeypatch)
    monkeypatch.setattr(_store, "_HELD_WRITE", together)
    monkeypatch.setattr(_store, "_PACK_DOCS", together // 2)  # the small case: a write's parts in packs of 4
    path = tmp_path / "workers.sqlite"
    scan = survey_corpus(folder, ReaderSettings(stats_store=str(path)))
    store = scan.doc_stats[2]
    writes = len(store._deferred)
    assert writes >= 6  # a chunk each
    store.flush()
    rows = store.db.execute("SELECT count(*) FROM terms WHERE term='quill'").fetchone()[0]
    files = sum(p.is_file() for p in folder.rglob("*"))
    assert rows == 1 if together > files else 2 <= rows < writes
    _forget_process_memo()
    assert _survey_state(folder, path) == here
    with sqlite3.connect(path) as db:  # the rows, written from the survey's columns (8 files at a time: 8)
        db.execute("DELETE FROM snapshots")
    _forget_process_memo()
    seen = _reads(monkeypatch)
    assert _survey_state(folder, path) == here and seen == []


def test_a_bz2_shard_weighs_what_its_text_does_not_its_size_on_disk(tmp_path, monkeypatch):
    """A .bz2 shard holds ≈ 5x its size in text: weighed at its size on disk, a folder of shards too much to read
    in one process was read in one all the same."""
    root = tmp_path / "shards"
    root.mkdir()
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(5000)]
    for k in range(3):
        lines = [
            json.dumps({"id": f"{k}-{i}", "title": f"T{k}-{i}", "text": [" ".join(rng.choice(words, 40))]})
            for i in range(300)
        ]
        (root / f"wiki_{k:02d}.bz2").write_bytes(bz2.compress("\n".join(lines).encode() + b"\n"))
    on_disk = sum(p.stat().st_size // _filestats._CONTAINER_BYTES + 1 for p in root.iterdir())
    monkeypatch.setattr(_filestats, "_PARALLEL_AT", on_disk + 1)  # over it only when weighed by its text
    monkeypatch.setattr(_filestats, "cpu_count", lambda: 2)
    started = []
    real = _chunks.ReadPool
    monkeypatch.setattr(_filestats, "ReadPool", lambda *a, **k: started.append(a) or real(*a, **k))
    assert _survey_state(root, tmp_path / "stats.sqlite")[0] == _fresh(root)
    assert started  # read over a worker and this process


def _survey_in_another_process(folder: Path, path: Path) -> None:
    """A survey by another process, which writes what it held as it exits."""
    code = (
        "import sys; from lens.reader import _filestats; from lens._config import ReaderSettings; "
        "_filestats._RACY_NS = 0; _filestats.survey_corpus(sys.argv[1], ReaderSettings(stats_store=sys.argv[2]))"
    )
    subprocess.run([sys.executable, "-c", code, str(folder), str(path)], check=True)


def test_held_rows_of_files_another_process_stored_first_are_set_aside_and_its_rows_are_used(
    folder, tmp_path, monkeypatch
):
    """Two processes' first surveys of one folder: the one that writes second writes none of its rows (the other's
    memo points at the rows there); its question still answers from what it held, and its next survey takes the
    folder from the store — reading no file."""
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    path = tmp_path / "stats.sqlite"
    scan = survey_corpus(folder, ReaderSettings(stats_store=str(path)))
    store, view = scan.doc_stats[2], CorpusView.of(scan)
    _survey_in_another_process(folder, path)  # stores the folder first
    store.flush()
    assert not store.deferred() and _state(view) == _fresh(folder)  # still served from memory
    files = sum(p.is_file() for p in folder.rglob("*"))
    assert store.db.execute("SELECT count(*) FROM files").fetchone()[0] == files  # the other's rows alone
    seen = _reads(monkeypatch)
    assert _survey_state(folder, tmp_path / "stats.sqlite")[0] == _fresh(folder) and seen == []
    assert not store.voided(next(iter(_filestats._FOLDERS))[1])  # asked once, by that survey


def test_held_rows_of_a_folder_forgotten_meanwhile_are_not_written(folder, tmp_path, monkeypatch):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    path = tmp_path / "stats.sqlite"
    scan = survey_corpus(folder, ReaderSettings(stats_store=str(path)))
    other = StatsStore(path)
    assert other.forget(os.path.realpath(folder)) == (1, 0)  # its scope, no rows yet
    other.close()
    scan.doc_stats[2].flush()
    assert scan.doc_stats[2].db.execute("SELECT count(*) FROM files").fetchone()[0] == 0
    seen = _reads(monkeypatch)
    assert _survey_state(folder, path)[0] == _fresh(folder)
    assert len(seen) == sum(p.is_file() for p in folder.rglob("*"))  # read again: the store knew nothing of it


def test_held_rows_keep_the_row_ids_they_took_while_another_process_writes_another_folder(
    folder, tmp_path, monkeypatch
):
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    path = tmp_path / "stats.sqlite"
    scan = survey_corpus(folder, ReaderSettings(stats_store=str(path)))
    ids = set(scan.doc_stats[1].tolist())
    second = tmp_path / "second"
    _wide_folder(second)
    _survey_in_another_process(second, path)  # its documents take the row ids after this survey's
    scan.doc_stats[2].flush()
    db = scan.doc_stats[2].db
    assert ids <= {i for (i,) in db.execute("SELECT id FROM docs")}
    assert db.execute("SELECT count(*) = count(DISTINCT id) FROM docs").fetchone()[0] == 1
    _forget_process_memo()
    seen = _reads(monkeypatch)
    assert _survey_state(folder, path)[0] == _fresh(folder) and _survey_state(second, path)[0] == _fresh(second)
    assert seen == []


def test_write_held_writes_a_first_surveys_counts_in_a_thread_while_the_view_answers_the_same(
    folder, tmp_path, monkeypatch
):
    here = _wide_folder_read_here(folder, tmp_path, monkeypatch)
    scan = survey_corpus(folder, ReaderSettings(stats_store=str(tmp_path / "workers.sqlite")))
    store = scan.doc_stats[2]
    assert store.deferred()
    thread = _filestats.write_held(scan)
    view = CorpusView.of(scan)
    assert _state(view) == here[0]  # during the write or after it: the same counts
    thread.join()
    assert not store.deferred() and _state(view) == here[0]
    assert _filestats.write_held(scan) is None  # nothing held any more
    assert store.db.execute("SELECT count(*) FROM snapshots").fetchone()[0] > 0  # saved after the write


def test_counts_held_by_a_process_that_ends_before_writing_them_are_read_again(folder, tmp_path, monkeypatch):
    here = _wide_folder_read_here(folder, tmp_path, monkeypatch)
    path = tmp_path / "workers.sqlite"
    survey_corpus(folder, ReaderSettings(stats_store=str(path)))
    _forget_process_memo(killed=True)  # the process ends without writing them: its files' rows have no signature
    monkeypatch.setattr(_filestats, "_PARALLEL_AT", 10**9)  # read here, where the reads can be counted
    seen = _reads(monkeypatch)
    assert _survey_state(folder, path) == here
    assert len(seen) == sum(p.is_file() for p in folder.rglob("*"))  # every file read again


def test_counts_held_at_a_process_exit_are_written_then(folder, tmp_path, monkeypatch):
    """A process that exits normally writes what it held (``atexit``): the next one reads no file."""
    path = tmp_path / "workers.sqlite"
    code = (
        "import sys; from lens.reader import _filestats; from lens._config import ReaderSettings; "
        "_filestats._RACY_NS = 0; _filestats._PARALLEL_AT = 1; _filestats._CHUNK_MAX = 4; _filestats.cpu_count = lambda: 2; "
        "scan = _filestats.survey_corpus(sys.argv[1], ReaderSettings(stats_store=sys.argv[2])); "
        "assert scan.doc_stats[2]._deferred"
    )
    _wide_folder(folder)
    subprocess.run([sys.executable, "-c", code, str(folder), str(path)], check=True)
    here = _fresh(folder)
    store = StatsStore(path)
    try:
        assert store.db.execute("SELECT count(*) FROM files WHERE sig = ''").fetchone()[0] == 0  # every one written
        assert store.db.execute("SELECT count(*) FROM snapshots").fetchone()[0] > 0
    finally:
        store.close()
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    seen = _reads(monkeypatch)
    assert _survey_state(folder, path)[0] == here and seen == []


def test_a_chunk_whose_worker_dies_is_read_here(folder, tmp_path, monkeypatch):
    _wide_folder(folder)
    here = _survey_state(folder, tmp_path / "here.sqlite")
    _forget_process_memo()
    monkeypatch.setattr(_filestats, "_PARALLEL_AT", 1)
    monkeypatch.setattr(_filestats, "_CHUNK_MAX", 4)
    monkeypatch.setattr(_filestats, "cpu_count", lambda: 2)
    monkeypatch.setattr(_chunks, "_WORKER_CODE", "import os; os._exit(3)")  # every worker dies at once
    read_here = []
    real = _chunks.read_chunk
    monkeypatch.setattr(_chunks, "read_chunk", lambda jobs, *a: read_here.append(jobs) or real(jobs, *a))
    assert _survey_state(folder, tmp_path / "workers.sqlite") == here
    assert sum(map(len, read_here)) == sum(p.is_file() for p in folder.rglob("*"))  # every one of them


def test_a_reading_worker_starts_without_the_settings_model():
    """A worker imports what reading needs, not pydantic (≈ 0.1 s of its start, paid per worker per survey)."""
    code = "import sys; from lens.reader._chunks import _serve; print(sorted({'pydantic', 'lens._config'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
