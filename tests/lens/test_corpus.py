"""SPEC §2/§6 and issue 2: the raw-corpus reader reads a folder as it is now, skips bad files with counted
reasons, never follows symlinks out of the folder, and gives each document a stable id, its sentences with line
ranges, and the sha256 of the bytes it read.
"""

from __future__ import annotations

import bz2
import hashlib
import json
import os
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

import lens.reader._corpus as corpus
from lens._config import ReaderSettings
from lens._errors import LensError
from lens.reader._corpus import scan_corpus
from lens.reader._documents import split_sentences
from lens.reader._open import CorpusError, FolderDirs, _folder_real
from lens.reader._read import _read_file, read_document


def write(root: Path, rel: str, data: str | bytes) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    p.write_bytes(data)
    return p


def by_id(scan) -> dict:
    return {d.doc_id: d for d in scan.documents}


def records(*objs) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


ARTICLE = {"id": "1", "title": "Marrow Bay", "text": ["Marrow Bay is a cove.", "It faces north."]}


def without_blocking(fn, fifo: Path, seconds: float = 10.0):
    """``fn()``'s result; fails (instead of hanging the suite) if it is still blocked on ``fifo`` after ``seconds``."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # release the blocked reader before failing
        t.join(seconds)
        pytest.fail(f"blocked on the FIFO {fifo.name} for {seconds} s")
    return out[0]


# --------------------------------------------------------------------------- the folder itself


def test_missing_folder_raises_corpus_error_naming_it(tmp_path):
    with pytest.raises(CorpusError, match="no such folder") as e:
        scan_corpus(tmp_path / "absent")
    assert "absent" in str(e.value)
    assert isinstance(e.value, LensError)


def test_a_file_instead_of_a_folder_raises_corpus_error(tmp_path):
    f = write(tmp_path, "notes.txt", "hello")
    with pytest.raises(CorpusError, match="not a folder"):
        scan_corpus(f)


def test_empty_folder_reads_as_zero_documents(tmp_path):
    scan = scan_corpus(tmp_path)
    assert scan.documents == []
    assert (scan.files, scan.bytes_read) == (0, 0)
    assert scan.stats()["documents"] == 0


def test_folder_of_only_skipped_files_reads_as_zero_documents_with_reasons(tmp_path):
    write(tmp_path, "photo.png", b"\x89PNG\r\n")
    write(tmp_path, "empty.txt", b"")
    scan = scan_corpus(tmp_path)
    assert scan.documents == []
    assert scan.skipped == {"binary": 1, "empty": 1}


# --------------------------------------------------------------------------- file kinds


def test_text_kinds_and_extensionless_files_are_read(tmp_path):
    write(tmp_path, "a.md", "# Alpha\n\nFirst.\n")
    write(tmp_path, "b.txt", "Beta\nSecond.\n")
    write(tmp_path, "Gamma Station", "Gamma Station\nThird.\n")
    write(tmp_path, "d.csv", "name,year\nDelta,1901\n")
    scan = scan_corpus(tmp_path)
    assert sorted(by_id(scan)) == ["Gamma Station", "a.md", "b.txt", "d.csv#u1"]  # a CSV is a table: units
    assert by_id(scan)["Gamma Station"].title == "Gamma Station"
    assert by_id(scan)["a.md"].title == "Alpha"
    table = by_id(scan)["d.csv#u1"]
    assert table.kind == "unit" and [s.text for s in table.sentences] == ["name: Delta · year: 1901"]
    assert table.sentences[0].location == {"sheet": "d", "row": 2}
    assert scan.files == 4 and not scan.skipped


def test_html_is_read_as_text_without_markup_or_scripts(tmp_path):
    write(
        tmp_path,
        "page.html",
        "<html><head><title>Harbor Log</title><script>var x = 'hidden';</script></head>"
        "<body><h1>Harbor Log</h1><p>Boats &amp; nets.</p></body></html>",
    )
    (doc,) = scan_corpus(tmp_path).documents
    assert doc.title == "Harbor Log"
    assert "Boats & nets." in doc.text
    assert "<p>" not in doc.text and "hidden" not in doc.text


def test_hidden_files_and_folders_are_skipped(tmp_path):
    write(tmp_path, ".secret.txt", "x")
    write(tmp_path, ".git/config", "x")
    write(tmp_path, "visible.txt", "Visible.")
    scan = scan_corpus(tmp_path)
    assert list(by_id(scan)) == ["visible.txt"]
    assert scan.skipped["hidden"] == 2


def test_nested_folders_give_posix_relative_ids(tmp_path):
    write(tmp_path, "2024/june/report.md", "Report.\n")
    (doc,) = scan_corpus(tmp_path).documents
    assert doc.doc_id == doc.path == "2024/june/report.md"
    assert doc.name == "report.md"


# --------------------------------------------------------------------------- bad files


def test_binary_file_by_content_is_skipped_and_counted(tmp_path):
    write(tmp_path, "blob", b"header\x00\x01\x02" * 50)
    write(tmp_path, "ok.txt", "Fine.")
    scan = scan_corpus(tmp_path)
    assert list(by_id(scan)) == ["ok.txt"]
    assert scan.skipped["binary"] == 1


def test_binary_file_by_kind_is_skipped_without_reading(tmp_path):
    write(tmp_path, "model.gguf", "GGUF")
    write(tmp_path, "old.doc", "legacy Word")
    scan = scan_corpus(tmp_path)
    assert scan.documents == [] and scan.skipped["binary"] == 2


def test_a_pdf_that_is_not_one_is_skipped_as_corrupt_with_its_name(tmp_path):
    write(tmp_path, "scan.pdf", "%PDF-1.4 pretend text")
    write(tmp_path, "note.txt", "Harbor\nBoats moor here.\n")
    scan = scan_corpus(tmp_path)
    assert [d.path for d in scan.documents] == ["note.txt"]
    assert scan.skipped["corrupt"] == 1 and any(p.startswith("scan.pdf: ") for p in scan.problems)


def test_invalid_utf8_is_decoded_with_replacement(tmp_path):
    raw = b"Caf\xe9 Lumen opened in 1923.\nIts owner was \xff\xfe Ada.\n"
    write(tmp_path, "cafe.txt", raw)
    (doc,) = scan_corpus(tmp_path).documents
    assert "Caf\ufffd Lumen opened in 1923." in doc.text
    assert "\ufffd\ufffd Ada" in doc.text
    assert doc.sha256 == hashlib.sha256(raw).hexdigest()  # the hash is of the bytes, not the decoded text


def test_file_over_the_size_limit_is_skipped_and_counted(tmp_path):
    write(tmp_path, "huge.txt", "word " * 400)  # 2,000 bytes
    write(tmp_path, "small.txt", "Small.")
    scan = scan_corpus(tmp_path, ReaderSettings(max_file_bytes=1000))
    assert list(by_id(scan)) == ["small.txt"]
    assert scan.skipped["oversized"] == 1


def test_file_at_exactly_the_size_limit_is_read(tmp_path):
    write(tmp_path, "edge.txt", "x" * 1000)
    assert len(scan_corpus(tmp_path, ReaderSettings(max_file_bytes=1000)).documents) == 1


def test_empty_and_whitespace_files_are_skipped_as_empty(tmp_path):
    write(tmp_path, "a.txt", b"")
    write(tmp_path, "b.txt", "  \n\n\t\n")
    scan = scan_corpus(tmp_path)
    assert scan.documents == [] and scan.skipped["empty"] == 2


def test_special_files_are_skipped_not_opened(tmp_path):
    os.mkfifo(tmp_path / "pipe")  # opening a FIFO would block the scan forever
    write(tmp_path, "ok.txt", "Fine.")
    scan = scan_corpus(tmp_path)
    assert list(by_id(scan)) == ["ok.txt"]
    assert scan.skipped["not_regular"] == 1


# --------------------------------------------------------------------------- symlinks


def test_symlink_to_a_file_outside_the_folder_is_skipped_and_counted(tmp_path):
    root = tmp_path / "docs"
    outside = write(tmp_path, "private/diary.txt", "My secret diary.")
    write(root, "ok.txt", "Fine.")
    (root / "diary.txt").symlink_to(outside)
    scan = scan_corpus(root)
    assert list(by_id(scan)) == ["ok.txt"]
    assert scan.skipped["symlink_outside"] == 1
    assert all("secret" not in d.text for d in scan.documents)


def test_symlink_to_a_folder_outside_is_skipped_even_when_following_symlinks(tmp_path):
    root = tmp_path / "docs"
    write(tmp_path, "private/diary.txt", "My secret diary.")
    write(root, "ok.txt", "Fine.")
    (root / "private").symlink_to(tmp_path / "private", target_is_directory=True)
    scan = scan_corpus(root, ReaderSettings(follow_symlinks=True))
    assert list(by_id(scan)) == ["ok.txt"]
    assert scan.skipped["symlink_outside"] == 1


def test_symlinked_folder_inside_is_not_followed_by_default(tmp_path):
    write(tmp_path, "real/a.txt", "Alpha.")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    scan = scan_corpus(tmp_path)
    assert list(by_id(scan)) == ["real/a.txt"]
    assert scan.skipped["symlink_dir"] == 1
    followed = scan_corpus(tmp_path, ReaderSettings(follow_symlinks=True))
    assert sorted(by_id(followed)) == ["alias/a.txt", "real/a.txt"]


def test_a_link_to_a_file_inside_the_folder_is_read_under_its_own_name(tmp_path):
    write(tmp_path, "real/a.txt", "Alpha.")
    (tmp_path / "alias.txt").symlink_to(tmp_path / "real" / "a.txt")
    assert sorted(by_id(scan_corpus(tmp_path))) == ["alias.txt", "real/a.txt"]


# between listing and reading a file may be replaced: the read checks again what it opened (issue 33 item 7).
# Each case both ways a file is read: alone (its full path, the opened file's path checked) and in a run of reads
# through the folder's directories opened without following a link (a survey's chunk, ``FolderDirs``).


def read_alone(root: Path, listed: str):
    return read_document(root, listed, ReaderSettings())


def read_in_a_run(root: Path, listed: str):
    root_real = _folder_real(root)
    with FolderDirs(root_real) as dirs:
        return _read_file(os.path.join(root, listed), listed, ReaderSettings(), root_real, None, dirs)


READS = pytest.mark.parametrize("read", [read_alone, read_in_a_run], ids=["alone", "in_a_run"])


@READS
def test_a_file_swapped_for_a_link_out_after_listing_is_not_read(tmp_path, read):
    root = tmp_path / "docs"
    outside = write(tmp_path, "outside/secret.md", "CANARY outside the folder.")
    write(root, "a.md", "Alpha.")
    (listed,) = corpus._list_files(root, ReaderSettings(), corpus.Counter(), [])
    (root / "a.md").unlink()
    (root / "a.md").symlink_to(outside)
    res = read(root, listed)
    assert res.skip == "symlink_outside" and res.documents == []


@READS
def test_a_file_swapped_for_a_fifo_after_listing_is_skipped_without_blocking(tmp_path, read):
    write(tmp_path, "a.md", "Alpha.")
    (listed,) = corpus._list_files(tmp_path, ReaderSettings(), corpus.Counter(), [])
    (tmp_path / "a.md").unlink()
    os.mkfifo(tmp_path / "a.md")
    res = without_blocking(lambda: read(tmp_path, listed), tmp_path / "a.md")
    assert res.skip == "not_regular" and res.documents == []


@READS
def test_a_container_swapped_for_a_fifo_after_listing_is_skipped_without_blocking(tmp_path, read):
    write(tmp_path, "pool.jsonl", records(ARTICLE))
    (listed,) = corpus._list_files(tmp_path, ReaderSettings(), corpus.Counter(), [])
    (tmp_path / "pool.jsonl").unlink()
    os.mkfifo(tmp_path / "pool.jsonl")
    res = without_blocking(lambda: read(tmp_path, listed), tmp_path / "pool.jsonl")
    assert res.skip == "not_regular" and res.documents == []


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="the opened file's path is read from /proc")
@READS
def test_a_subfolder_swapped_for_a_link_out_after_listing_is_not_read(tmp_path, read):
    root = tmp_path / "docs"
    write(tmp_path, "outside/a.md", "CANARY outside the folder.")
    write(root, "sub/a.md", "Alpha.")
    (listed,) = corpus._list_files(root, ReaderSettings(), corpus.Counter(), [])
    (root / "sub").rename(tmp_path / "moved")
    (root / "sub").symlink_to(tmp_path / "outside", target_is_directory=True)
    res = read(root, listed)
    assert res.skip == "symlink_outside" and res.documents == []


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="the opened file's path is read from /proc")
@READS
def test_a_path_climbing_out_of_the_folder_is_not_read(tmp_path, read):
    root = tmp_path / "docs"
    write(tmp_path, "outside/a.md", "CANARY outside the folder.")
    write(root, "sub/a.md", "Alpha.")
    res = read(root, "sub/../../outside/a.md")
    assert res.skip == "symlink_outside" and res.documents == []


@READS
def test_links_inside_the_folder_are_read_in_a_run_as_alone(tmp_path, read):
    write(tmp_path, "real/a.txt", "Alpha.")
    (tmp_path / "alias.txt").symlink_to(tmp_path / "real" / "a.txt")
    (tmp_path / "folder").symlink_to(tmp_path / "real", target_is_directory=True)
    for listed in ("alias.txt", "folder/a.txt", "real/a.txt"):
        assert read(tmp_path, listed).documents[0].text == "Alpha."


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="open descriptors are counted in /proc")
def test_a_run_of_reads_keeps_open_only_the_folders_on_the_way_and_closes_them(tmp_path):
    for d in range(30):
        write(tmp_path, f"d{d:02d}/e/a.txt", f"Alpha {d}.")
    root_real = _folder_real(tmp_path)
    before = len(os.listdir("/proc/self/fd"))
    with FolderDirs(root_real) as dirs:
        for d in range(30):
            listed = f"d{d:02d}/e/a.txt"
            res = _read_file(os.path.join(tmp_path, listed), listed, ReaderSettings(), root_real, None, dirs)
            assert res.documents[0].text == f"Alpha {d}."
            assert len(os.listdir("/proc/self/fd")) - before <= 3  # the folder, d.., d../e
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_folder_that_resolves_outside_the_allowed_ones_is_refused(tmp_path):
    write(tmp_path, "outside/a.md", "CANARY outside the folder.")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "docs").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(CorpusError, match="outside .*; refused"):
        scan_corpus(tmp_path / "root" / "docs", within=[(tmp_path / "root").resolve()])
    assert len(scan_corpus(tmp_path / "outside", within=[tmp_path.resolve()]).documents) == 1


def test_symlink_loop_does_not_recurse_forever(tmp_path):
    write(tmp_path, "sub/a.txt", "Alpha.")
    (tmp_path / "sub" / "up").symlink_to(tmp_path, target_is_directory=True)
    scan = scan_corpus(tmp_path, ReaderSettings(follow_symlinks=True))
    assert "sub/a.txt" in by_id(scan)
    assert len(scan.documents) <= 2


# --------------------------------------------------------------------------- containers


def test_jsonl_container_gives_one_document_per_article(tmp_path):
    second = {"id": "2", "title": "Quill Point", "text": ["Quill Point is a cape.", "It has a light."]}
    write(tmp_path, "wiki.jsonl", records(ARTICLE, second))
    scan = scan_corpus(tmp_path)
    docs = by_id(scan)
    assert sorted(docs) == ["wiki.jsonl#L1", "wiki.jsonl#L2"]
    doc = docs["wiki.jsonl#L2"]
    assert (doc.title, doc.path, doc.line, doc.kind) == ("Quill Point", "wiki.jsonl", 2, "record")
    assert [s.text for s in doc.sentences] == ["Quill Point is a cape.", "It has a light."]
    assert scan.files == 1


def test_bz2_jsonl_shard_is_read(tmp_path):
    p = tmp_path / "wiki_00.bz2"
    with bz2.open(p, "wt", encoding="utf-8") as fh:
        fh.write(records(ARTICLE, {"id": "9", "title": "Orrin Fell", "text": [["Orrin Fell is a hill."]]}))
    scan = scan_corpus(tmp_path)
    docs = by_id(scan)
    assert sorted(docs) == ["wiki_00.bz2#L1", "wiki_00.bz2#L2"]
    assert docs["wiki_00.bz2#L1"].title == "Marrow Bay"
    assert [s.text for s in docs["wiki_00.bz2#L2"].sentences] == ["Orrin Fell is a hill."]  # nested paragraphs
    assert scan.bytes_read == len(
        records(ARTICLE, {"id": "9", "title": "Orrin Fell", "text": [["Orrin Fell is a hill."]]}).encode()
    )


def test_record_text_may_be_one_string(tmp_path):
    write(tmp_path, "w.jsonl", records({"title": "Tarn", "text": "Tarn is a lake. It is cold."}))
    (doc,) = scan_corpus(tmp_path).documents
    assert [s.text for s in doc.sentences] == ["Tarn is a lake.", "It is cold."]


def test_malformed_jsonl_line_is_skipped_and_named_by_file_and_line(tmp_path):
    write(tmp_path, "sub/wiki.jsonl", records(ARTICLE) + '{"title": "Broken", "text": [\n' + records(ARTICLE))
    scan = scan_corpus(tmp_path)
    assert sorted(by_id(scan)) == ["sub/wiki.jsonl#L1", "sub/wiki.jsonl#L3"]
    assert scan.skipped["malformed_record"] == 1
    assert len(scan.problems) == 1
    assert scan.problems[0].startswith("sub/wiki.jsonl:2: malformed JSON")


def test_record_without_a_title_is_named_by_field(tmp_path):
    write(tmp_path, "w.jsonl", records(ARTICLE, {"id": "2", "text": ["No title here."]}))
    scan = scan_corpus(tmp_path)
    assert len(scan.documents) == 1
    assert scan.problems == ['w.jsonl:2: field "title" missing or not a non-empty string']


def test_container_with_no_valid_record_is_skipped_with_a_reason(tmp_path):
    write(tmp_path, "log.jsonl", '{"level": "info"}\nnot json\n')
    scan = scan_corpus(tmp_path)
    assert scan.documents == [] and scan.files == 0
    assert scan.skipped == {"no_valid_records": 1, "malformed_record": 2}


def test_corrupt_bz2_shard_is_skipped_as_unreadable(tmp_path):
    write(tmp_path, "bad.bz2", b"BZh91AY&SY" + b"\x00garbage" * 10)
    scan = scan_corpus(tmp_path)
    assert scan.documents == [] and scan.skipped["unreadable"] == 1
    assert scan.problems and scan.problems[0].startswith("bad.bz2:")


def test_blank_lines_in_containers_keep_line_numbers(tmp_path):
    write(tmp_path, "w.jsonl", "\n" + records(ARTICLE) + "\n\n" + records(ARTICLE))
    assert sorted(by_id(scan_corpus(tmp_path))) == ["w.jsonl#L2", "w.jsonl#L5"]


# --------------------------------------------------------------------------- files changing under the reader


def test_file_deleted_between_listing_and_reading_is_skipped_as_vanished(tmp_path, monkeypatch):
    write(tmp_path, "a.txt", "Alpha.")
    write(tmp_path, "b.txt", "Beta.")
    write(tmp_path, "c.jsonl", records(ARTICLE))
    real_listing = corpus._list_files

    def listing_then_delete(*args):
        paths = real_listing(*args)  # the real listing sees all three files ...
        (tmp_path / "b.txt").unlink()  # ... then two vanish before they are read
        (tmp_path / "c.jsonl").unlink()
        return paths

    monkeypatch.setattr(corpus, "_list_files", listing_then_delete)
    scan = scan_corpus(tmp_path)
    assert list(by_id(scan)) == ["a.txt"]
    assert scan.skipped["vanished"] == 2
    assert scan.files == 1


def test_reading_a_listed_path_that_is_gone_reports_vanished(tmp_path):
    write(tmp_path, "a.txt", "Alpha.")
    (listed,) = corpus._list_files(tmp_path, ReaderSettings(), corpus.Counter(), [])
    (tmp_path / listed).unlink()
    res = read_document(tmp_path, listed, ReaderSettings())
    assert res.skip == "vanished" and res.documents == []


def test_document_hash_matches_the_content_it_read_even_if_the_file_changes_later(tmp_path):
    p = write(tmp_path, "a.txt", "Version one.")
    (doc,) = scan_corpus(tmp_path).documents
    p.write_text("Version two, longer.", encoding="utf-8")
    assert doc.text == "Version one."
    assert doc.sha256 == hashlib.sha256(b"Version one.").hexdigest()
    (doc2,) = scan_corpus(tmp_path).documents  # the folder as it is *now*
    assert doc2.text == "Version two, longer." and doc2.sha256 != doc.sha256


def _fstat_reporting(monkeypatch, size: int) -> None:
    """Make ``os.fstat`` report ``size``: the file changed between taking its size and reading it."""
    real = os.fstat

    class Stat:
        def __init__(self, st):
            self._st, self.st_size = st, size

        def __getattr__(self, name):
            return getattr(self._st, name)

    monkeypatch.setattr(os, "fstat", lambda fd: Stat(real(fd)))


def test_file_that_grew_after_its_size_was_taken_is_read_to_the_end(tmp_path, monkeypatch):
    write(tmp_path, "log.txt", "Line one.\nLine two, appended later.\n")
    _fstat_reporting(monkeypatch, 10)
    (doc,) = scan_corpus(tmp_path).documents
    assert doc.text == "Line one.\nLine two, appended later.\n"
    assert doc.sha256 == hashlib.sha256(doc.text.encode()).hexdigest()


def test_file_that_shrank_after_its_size_was_taken_is_read_as_it_is(tmp_path, monkeypatch):
    write(tmp_path, "log.txt", "Short now.")
    _fstat_reporting(monkeypatch, 500)
    (doc,) = scan_corpus(tmp_path).documents
    assert doc.text == "Short now."


def test_file_that_grew_past_the_limit_while_read_is_oversized(tmp_path, monkeypatch):
    write(tmp_path, "log.txt", "x" * 300)
    _fstat_reporting(monkeypatch, 10)
    scan = scan_corpus(tmp_path, ReaderSettings(max_file_bytes=100))
    assert scan.documents == [] and scan.skipped == {"oversized": 1}


def test_oversized_binary_file_is_counted_as_binary(tmp_path):
    write(tmp_path, "image", b"\x00\x01" * 1000)
    assert scan_corpus(tmp_path, ReaderSettings(max_file_bytes=100)).skipped == {"binary": 1}


def test_nul_byte_after_the_sniff_window_is_text(tmp_path):
    write(tmp_path, "data.txt", b"a" * 9000 + b"\x00")
    assert len(scan_corpus(tmp_path).documents) == 1


def test_title_is_the_first_non_blank_line_even_far_into_a_large_file(tmp_path):
    write(tmp_path, "a.txt", "\n" * 5000 + "  # Late Title  \nBody.\n" + "filler line\n" * 1000)
    write(tmp_path, "b.txt", "T" * 1500 + "\nBody.\n")  # a first line over 200 characters is not a title
    docs = by_id(scan_corpus(tmp_path))
    assert docs["a.txt"].title == "Late Title"
    assert docs["b.txt"].title == "b"


# --------------------------------------------------------------------------- ids and hashes


def test_sha256_is_of_the_file_bytes(tmp_path):
    raw = "Title\r\nA line with CRLF.\r\n".encode()
    write(tmp_path, "a.txt", raw)
    (doc,) = scan_corpus(tmp_path).documents
    assert doc.sha256 == hashlib.sha256(raw).hexdigest()


def test_sha256_of_a_record_is_of_its_line(tmp_path):
    write(tmp_path, "w.jsonl", records(ARTICLE, ARTICLE | {"id": "2"}))
    docs = scan_corpus(tmp_path).documents
    lines = (tmp_path / "w.jsonl").read_bytes().splitlines()
    assert [d.sha256 for d in docs] == [hashlib.sha256(line).hexdigest() for line in lines]


def test_ids_are_stable_across_scans_and_unaffected_by_new_files(tmp_path):
    write(tmp_path, "b.txt", "Beta.")
    write(tmp_path, "a/x.md", "X.")
    write(tmp_path, "w.jsonl", records(ARTICLE, ARTICLE))
    first = [(d.doc_id, d.sha256) for d in scan_corpus(tmp_path).documents]
    assert first == [(d.doc_id, d.sha256) for d in scan_corpus(tmp_path).documents]
    write(tmp_path, "a/aa.txt", "New.")
    after = [(d.doc_id, d.sha256) for d in scan_corpus(tmp_path).documents]
    assert [x for x in after if x[0] != "a/aa.txt"] == first
    assert [d for d, _ in first] == ["a/x.md", "b.txt", "w.jsonl#L1", "w.jsonl#L2"]  # sorted walk order


def test_parallel_and_serial_reads_give_the_same_result(tmp_path):
    for i in range(150):
        write(tmp_path, f"d{i // 50}/doc{i:03d}.txt", f"Doc {i}\nSentence {i}.\n")
    write(tmp_path, "w.jsonl", records(ARTICLE))
    serial = scan_corpus(tmp_path, ReaderSettings(workers=1))
    parallel = scan_corpus(tmp_path, ReaderSettings(workers=4))
    assert [(d.doc_id, d.sha256) for d in serial.documents] == [(d.doc_id, d.sha256) for d in parallel.documents]
    assert (serial.files, serial.bytes_read) == (parallel.files, parallel.bytes_read) == (151, serial.bytes_read)


def test_the_reader_never_writes_into_the_folder(tmp_path):
    write(tmp_path, "a.txt", "Alpha.")
    write(tmp_path, "w.jsonl", records(ARTICLE))
    before = sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    scan = scan_corpus(tmp_path)
    _ = [d.sentences for d in scan.documents]
    assert sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*")) == before


def test_stats_report_counts_bytes_and_throughput(tmp_path):
    write(tmp_path, "a.txt", "Alpha.")
    write(tmp_path, "b.png", b"\x89PNG")
    stats = scan_corpus(tmp_path).stats()
    assert stats["files"] == 1 and stats["documents"] == 1 and stats["bytes"] == 6
    assert stats["skipped"] == {"binary": 1}
    assert stats["mb_per_s"] >= 0 and stats["seconds"] >= 0
    json.dumps(stats)


# --------------------------------------------------------------------------- sentences


def test_sentences_carry_their_line_ranges(tmp_path):
    write(
        tmp_path,
        "harbor.md",
        "Harbor Notes\n\nThe lighthouse was built in 1871. Dr. Ames kept it\nuntil 1902. It still stands.\n",
    )
    (doc,) = scan_corpus(tmp_path).documents
    got = [(s.text, s.line_start, s.line_end, s.heading) for s in doc.sentences]
    assert got == [
        ("Harbor Notes", 1, 1, True),
        ("The lighthouse was built in 1871.", 3, 3, False),
        ("Dr. Ames kept it until 1902.", 3, 4, False),  # not split after "Dr."; spans two lines
        ("It still stands.", 4, 4, False),
    ]
    assert doc.citation(2, 3) == "harbor.md:3-4"
    assert doc.citation(1, 1) == "harbor.md:3"


def test_headings_and_list_items_are_units_of_their_own():
    sents = split_sentences("# Ships\n- The Wren, 1890\n- The Kite, 1894\n\nAfter the list.")
    assert [(s.text, s.heading) for s in sents] == [
        ("Ships", True),
        ("- The Wren, 1890", False),
        ("- The Kite, 1894", False),
        ("After the list.", False),
    ]


def test_initials_do_not_end_a_sentence():
    sents = split_sentences("J. R. Tolland wrote it. It sold well.")
    assert [s.text for s in sents] == ["J. R. Tolland wrote it.", "It sold well."]


def test_record_sentences_cite_the_container_line(tmp_path):
    write(tmp_path, "w.jsonl", "\n" + records(ARTICLE))
    (doc,) = scan_corpus(tmp_path).documents
    assert [(s.line_start, s.line_end) for s in doc.sentences] == [(2, 2), (2, 2)]
    assert doc.citation(0, 1) == "w.jsonl:2"


def test_lensignore_excludes_matching_paths_and_counts_them(tmp_path):
    (tmp_path / "keep.md").write_text("Kept\nA kept note.\n")
    (tmp_path / "answers.md").write_text("Answers\nThe answer is 42.\n")
    (tmp_path / "drafts").mkdir()
    (tmp_path / "drafts" / "a.txt").write_text("Draft\nnot ready\n")
    (tmp_path / ".lensignore").write_text("# comment\nanswers.md\ndrafts/*\n")
    scan = scan_corpus(tmp_path)
    assert [d.path for d in scan.documents] == ["keep.md"]
    assert scan.skipped["ignored"] == 2


def test_a_lensignore_that_is_a_fifo_is_skipped_with_a_problem_line(tmp_path):
    write(tmp_path, "a.txt", "hi")
    os.mkfifo(tmp_path / ".lensignore")
    scan = without_blocking(lambda: scan_corpus(tmp_path), tmp_path / ".lensignore")
    assert [d.path for d in scan.documents] == ["a.txt"]
    assert ".lensignore: not read (not a regular file); no paths are ignored" in scan.problems


def test_a_lensignore_linked_outside_the_folder_is_not_read(tmp_path):
    root = tmp_path / "docs"
    write(root, "a.txt", "Alpha.")
    (root / ".lensignore").symlink_to(write(tmp_path, "elsewhere", "a.txt\n"))
    scan = scan_corpus(root)
    assert [d.path for d in scan.documents] == ["a.txt"]
    assert ".lensignore: not read (a link out of the folder); no paths are ignored" in scan.problems


def test_a_lensignore_over_its_size_cap_is_not_read(tmp_path):
    write(tmp_path, "a.txt", "Alpha.")
    write(tmp_path, ".lensignore", "a.txt\n" + "#" * (2 << 20))
    scan = scan_corpus(tmp_path)
    assert [d.path for d in scan.documents] == ["a.txt"]
    assert any(p.startswith(".lensignore: not read (larger than") for p in scan.problems)


def test_unchanged_files_are_not_read_again_but_any_change_is_seen(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "_RACY_NS", 0)  # remember even files written a moment ago
    p = write(tmp_path, "a.txt", "Version one.")
    write(tmp_path, "b.txt", "Stays the same.")
    first = by_id(scan_corpus(tmp_path))
    second = by_id(scan_corpus(tmp_path))
    assert second["b.txt"] is first["b.txt"]  # the unchanged file's document is reused, not re-read
    time.sleep(0.02)
    p.write_text("Version two.", encoding="utf-8")  # same size, new content: ctime moves
    third = by_id(scan_corpus(tmp_path))
    assert third["a.txt"].text == "Version two."
    assert third["a.txt"].sha256 == hashlib.sha256(b"Version two.").hexdigest()
    p.unlink()
    assert "a.txt" not in by_id(scan_corpus(tmp_path))


def test_reuse_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "_RACY_NS", 0)
    write(tmp_path, "b.txt", "Stays the same.")
    settings = ReaderSettings(reuse_unchanged=False)
    assert by_id(scan_corpus(tmp_path, settings))["b.txt"] is not by_id(scan_corpus(tmp_path, settings))["b.txt"]


def test_unchanged_containers_are_reused_and_changed_ones_reread(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "_RACY_NS", 0)
    shard = tmp_path / "w.jsonl.bz2"
    with bz2.open(shard, "wt", encoding="utf-8") as fh:
        fh.write(records(ARTICLE))
    first = by_id(scan_corpus(tmp_path))
    assert by_id(scan_corpus(tmp_path))["w.jsonl.bz2#L1"] is first["w.jsonl.bz2#L1"]
    time.sleep(0.02)
    with bz2.open(shard, "wt", encoding="utf-8") as fh:
        fh.write(records({"title": "Quill Point", "text": ["Quill Point is a cape."]}))
    assert by_id(scan_corpus(tmp_path))["w.jsonl.bz2#L1"].title == "Quill Point"


def test_files_with_invalid_utf8_are_counted_as_bad_encoding(tmp_path):
    write(tmp_path, "bad.txt", b"caf\xe9 au lait.\n")
    write(tmp_path, "good.txt", "café au lait.\n")
    write(tmp_path, "shard.jsonl", b'{"title": "Caf\xe9", "text": ["One."]}\n{"title": "B", "text": ["Two."]}\n')
    scan = scan_corpus(tmp_path)
    assert len(scan.documents) == 4  # read, whichever way: U+FFFD in place of the bad bytes
    assert scan.bad_encoding == 2 and scan.stats()["bad_encoding"] == 2
    assert any(p.startswith("bad.txt: invalid UTF-8") for p in scan.problems)
    assert any(p.startswith("shard.jsonl:1: invalid UTF-8") for p in scan.problems)


def test_a_container_is_read_up_to_its_byte_limit_and_the_cut_is_named(tmp_path):
    lines = [json.dumps({"title": f"Article {i}", "text": [f"Sentence {i}."]}) + "\n" for i in range(10)]
    write(tmp_path, "pool.jsonl", "".join(lines))
    limit = sum(len(x) for x in lines[:4]) + 5
    scan = scan_corpus(tmp_path, ReaderSettings(max_container_bytes=limit))
    assert [d.title for d in scan.documents] == [f"Article {i}" for i in range(4)]
    assert any("pool.jsonl: over the container limit" in p and "read up to line 4" in p for p in scan.problems)


def test_one_container_line_is_read_no_further_than_the_container_limit(tmp_path):
    write(tmp_path, "bomb.jsonl.bz2", bz2.compress(b"a" * (24 << 20)))  # 24 MiB decompressed, no newline
    tracemalloc.start()
    try:
        scan = scan_corpus(tmp_path, ReaderSettings(max_container_bytes=2 << 20, max_file_bytes=4 << 20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert scan.skipped == {"oversized": 1}
    assert any(p.startswith("bomb.jsonl.bz2: over the container limit") for p in scan.problems)
    assert peak < 8 << 20  # the line was never held whole


def test_a_record_larger_than_max_file_bytes_is_skipped_and_the_next_one_read(tmp_path):
    big = {"title": "Big", "text": ["word " * 100]}
    write(tmp_path, "pool.jsonl", records(big, ARTICLE))
    scan = scan_corpus(tmp_path, ReaderSettings(max_file_bytes=200))
    assert [d.doc_id for d in scan.documents] == ["pool.jsonl#L2"]
    assert scan.skipped == {"oversized_record": 1}
    assert any(p.startswith("pool.jsonl:1: record larger than reader.max_file_bytes") for p in scan.problems)


def test_record_sentences_keep_their_list_positions_and_text_is_held_once(tmp_path):
    write(tmp_path, "pool.jsonl", json.dumps({"title": "T", "text": ["A one.", "", " B two. ", "C\nthree."]}) + "\n")
    doc = scan_corpus(tmp_path).documents[0]
    assert [(s.index, s.text) for s in doc.sentences] == [(0, "A one."), (2, "B two."), (3, "C three.")]
    assert doc.text == "T\nA one.\n\nB two.\nC three."
    assert doc._record_form == "lines"  # no sentence list is stored beside the text: it is derived from it


def test_a_full_read_memo_keeps_what_it_holds_and_forgets_files_that_are_gone(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "_RACY_NS", 0)
    monkeypatch.setattr(corpus, "_UNCHANGED", {})
    monkeypatch.setattr(corpus, "_UNCHANGED_MAX", 2)
    for name in ("a.txt", "b.txt", "c.txt"):
        write(tmp_path, name, f"Text of {name}.")
    first = by_id(scan_corpus(tmp_path))
    second = by_id(scan_corpus(tmp_path))
    # two files stay remembered scan after scan (the memo is not cleared and refilled); the third is re-read
    assert sum(second[n] is first[n] for n in first) == 2
    assert by_id(scan_corpus(tmp_path))["c.txt"].text == "Text of c.txt."
    kept = next(n for n in first if second[n] is first[n])
    (tmp_path / kept).unlink()
    third = by_id(scan_corpus(tmp_path))  # the gone file's slot is freed for a file that is still there
    fourth = by_id(scan_corpus(tmp_path))
    assert all(fourth[n] is third[n] for n in third)
