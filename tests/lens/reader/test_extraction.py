"""The extraction runner: a file whose reader crashes, hangs or runs out of memory is skipped with its reason while
the other files of the batch are extracted, in the batch's order. The misbehaving readers are registered in the
format table (tests/lens/reader/hostile_formats.py); the workers import them by module name, as they do lens's."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from lens._config import ReaderSettings
from lens.reader._extraction import Extractor, extract_files
from lens.reader.formats import FORMATS, Format, Limits

from . import hostile_formats
from .test_formats import pdf_bytes

try:
    import resource
except ImportError:
    resource = None


@pytest.fixture
def hostile(monkeypatch):
    for function in ("echo", "exit_abruptly", "segfault", "hang", "hog"):
        monkeypatch.setitem(FORMATS, f".{function}", Format(hostile_formats.__name__, function, function=function))


def test_a_crash_and_a_hang_skip_their_files_and_the_batch_goes_on(hostile):
    pdf = pdf_bytes([["Revenue rose to 12 million."]], "Annual")
    items = [
        (b"exit", ".exit_abruptly", "a.x"),
        (pdf, ".pdf", "annual.pdf"),
        (b"segv", ".segfault", "b.x"),
        (b"sleep", ".hang", "c.x"),
        (b"after the hang", ".echo", "d.x"),
        (b"Name,Age\nAda,36\n", ".csv", "people.csv"),
    ]
    start = time.monotonic()
    with Extractor(workers=1, timeout_s=1.5) as extractor:  # one worker: each failure must be replaced
        results = extractor.extract_all(items)
    assert time.monotonic() - start < 10
    assert [r.reason for r in results] == ["corrupt", None, "corrupt", "timeout", None, None]
    assert results[0].message == "the exit_abruptly parser crashed on it (exit status 3); its worker was replaced"
    assert "SIGSEGV" in results[2].message
    assert "longer than 1.5 s (reader.extraction_timeout_s)" in results[3].message
    assert results[1].units[0].text == "Revenue rose to 12 million." and results[1].units[0].location == {"page": 1}
    assert results[4].units[0].text == "after the hang"
    assert results[5].units[0].text == "Name: Ada · Age: 36"


def test_results_come_back_in_input_order_from_several_workers(hostile):
    items = [(f"file {i}".encode(), ".echo", f"{i}.x") for i in range(12)]
    with Extractor(workers=3) as extractor:
        results = extractor.extract_all(items)
        assert 1 <= len(extractor._all) <= 3
        again = extractor.extract_all(items[:2])  # the workers are kept for the next batch
    assert [r.units[0].text for r in results] == [f"file {i}" for i in range(12)]
    assert [r.units[0].text for r in again] == ["file 0", "file 1"]
    assert extractor._all == []


@pytest.mark.skipif(resource is None or sys.platform == "darwin", reason="RLIMIT_AS caps memory on Linux")
def test_a_worker_past_its_memory_cap_skips_that_file_and_goes_on(hostile):
    with Extractor(workers=1, memory_mb=512) as extractor:
        results = extractor.extract_all([(str(8 << 30).encode(), ".hog"), (b"1000", ".hog")])
        assert len(extractor._all) == 1  # a MemoryError raised in Python does not cost the worker
    assert results[0].reason == "corrupt"
    assert "out of memory" in results[0].message and "512 MB: reader.extraction_memory_mb" in results[0].message
    assert results[1].units[0].text == "1000"


def test_small_stdlib_format_files_are_read_in_process_and_large_ones_in_a_worker(tmp_path):
    small = b"Name,Age\nAda,36\n"
    large = tmp_path / "large.csv"
    large.write_bytes(b"Id,Value\n" + b"".join(b"%d,%d\n" % (i, i) for i in range(30_000)))
    with Extractor(workers=1) as extractor:
        [here] = extractor.extract_all([(small, ".csv")])
        assert extractor._all == []  # no worker started for it
        [there] = extractor.extract_all([(large, ".csv", "large.csv")])
        assert len(extractor._all) == 1
    assert here.units[0].text == "Name: Ada · Age: 36"
    assert len(there.units) == 600 and there.units[-1].line_location(49) == {"sheet": "large", "row": 30_001}


def test_paths_are_read_by_the_worker_and_a_missing_one_is_corrupt(tmp_path):
    (tmp_path / "annual.pdf").write_bytes(pdf_bytes([["Page one."], ["Page two."]]))
    results = extract_files([(tmp_path / "annual.pdf", ".pdf"), (tmp_path / "gone.pdf", ".pdf")])
    assert [u.location for u in results[0].units] == [{"page": 1}, {"page": 2}]
    assert results[0].units[0].title == "annual.pdf" and results[0].ok
    assert results[1].reason == "corrupt" and "cannot be opened" in results[1].message


def test_unreadable_files_in_a_batch_get_their_reasons():
    results = extract_files(
        [(pdf_bytes([[]]), ".pdf"), (b"%PDF-1.7 truncated", ".pdf"), (pdf_bytes([["a"], ["b"]]), ".pdf")],
        ReaderSettings(max_pages=1),
    )
    assert [r.reason for r in results] == ["no_text_layer", "corrupt", "too_many_pages"]
    with pytest.raises(ValueError, match="no format reads '.txt'"):
        extract_files([(b"x", ".txt")])


def test_settings_configure_the_pool():
    settings = ReaderSettings(
        max_file_bytes=1000, max_pages=7, extraction_workers=3, extraction_timeout_s=9, extraction_memory_mb=256
    )
    extractor = Extractor.from_settings(settings)
    assert extractor.limits == Limits(max_file_bytes=1000, max_pages=7)
    assert (extractor.workers, extractor.timeout_s, extractor.memory_mb) == (3, 9, 256)
    assert Extractor.from_settings(ReaderSettings()).workers >= 1  # 0: one per CPU
    for name in ("max_pages", "extraction_timeout_s", "extraction_memory_mb", "extraction_workers"):
        assert ReaderSettings.model_fields[name].description


def test_a_script_without_a_main_guard_runs_once(tmp_path):
    # multiprocessing's spawn and forkserver re-import the caller's __main__ in every worker; these workers don't
    (tmp_path / "annual.pdf").write_bytes(pdf_bytes([["Page one."]]))
    script = tmp_path / "ask.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path
            from lens.reader._extraction import extract_files
            with open({str(tmp_path / "runs.log")!r}, "a") as f:
                f.write("run\\n")
            [r] = extract_files([(Path({str(tmp_path / "annual.pdf")!r}), ".pdf")])
            print(r.units[0].text)
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Page one."
    assert (tmp_path / "runs.log").read_text() == "run\n"
