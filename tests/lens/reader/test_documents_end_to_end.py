"""Real documents end to end (issue 58): a folder of PDF, Word, PowerPoint, Excel and e-mail files written by the
format libraries, asked through the real agent with a scripted LLM behind respx. The answer is cited by page and
by row; bad files are skipped by their reason while the others are answered; an unchanged file is never parsed
again and an edited one is read again on the next question."""

from __future__ import annotations

import io
import json
import zipfile
from email.message import EmailMessage
from pathlib import Path

import docx
import openpyxl
import pptx
import pypdf
import pytest
import respx

from lens import Agent, load_config
from lens.faces._cli import main
from lens.reader import _extraction, _filestats
from lens.reader.formats import FORMATS, Format

from ..conftest import BASE_URL, CHAT_URL, MODEL
from ..scripted_oracle import Rule, ScriptedOracle
from . import hostile_formats
from .test_formats import pdf_bytes

HEIGHT_Q = "How tall is the Skerrow Light tower?"
LIT_Q = "When was Calder Point Light first lit?"


def _xlsx() -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Lighthouses"
    sheet.append(["Name", "Height (m)", "First lit"])
    sheet.append(["Skerrow Light", 31, 1874])
    sheet.append(["Calder Point Light", 27, 1869])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _docx() -> bytes:
    d = docx.Document()
    d.add_heading("Harbour board minutes", level=1)
    d.add_paragraph("The board met on 4 April 2023 in Harrowmouth.")
    d.add_paragraph("It agreed to repaint the harbour crane.")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def _pptx() -> bytes:
    deck = pptx.Presentation()
    for title, body in (("Review", "The year in short."), ("Ferries", "The ferry Brisk Tern is 38.5 metres long.")):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _eml() -> bytes:
    msg = EmailMessage()
    msg["Subject"] = "Crane repairs"
    msg["From"] = "harbourmaster@example.org"
    msg.set_content("The crane repairs start on Monday.")
    return bytes(msg)


def _report(height: str = "31") -> bytes:
    return pdf_bytes(
        [
            ["Annual report of the Vell Coast lighthouse board."],
            [f"The Skerrow Light tower is {height} metres tall.", "It stands on Skerrow Island."],
            ["Budget and accounts."],
        ],
        title="Vell Coast lighthouses",
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    for rel, data in {
        "reports/annual.pdf": _report(),
        "data/lights.xlsx": _xlsx(),
        "minutes/board.docx": _docx(),
        "slides/review.pptx": _pptx(),
        "mail/crane.eml": _eml(),
        "notes.txt": "Notes\n\nThe harbour is busy in summer.\n".encode(),
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def config(tmp_path: Path, **reader):
    return load_config(
        "deep",
        overrides={
            "llm": {"base_url": BASE_URL, "model": MODEL, "cache": False, "retry_backoff_s": 0, "max_retries": 0},
            "reader": reader,
        },
    )


def oracle() -> ScriptedOracle:
    return ScriptedOracle(
        decompositions={HEIGHT_Q: {"questions": [HEIGHT_Q]}, LIT_Q: {"questions": [LIT_Q]}},
        rules=[
            Rule(r"tall", "metres tall", "metres tall", "31 metres"),
            Rule(r"first lit", "Calder Point Light · Height", "Name: Calder Point Light", "1869"),
        ],
        synthesis=lambda p: (
            ("1869" if "First lit: 1869" in p else "unknown")
            if "first lit" in p
            else ("31 metres" if "31 metres tall" in p else "unknown")
        ),
    )


def ask(make_client, cfg, question: str, folder: Path, script: ScriptedOracle | None = None):
    script = script or oracle()
    with respx.mock(assert_all_called=False) as router:
        router.post(CHAT_URL).mock(side_effect=script.reply)
        return Agent(cfg, client=make_client(max_retries=0)).ask(question, folder)


def test_an_answer_from_a_pdf_is_cited_by_its_page(make_client, folder, tmp_path):
    result = ask(make_client, config(tmp_path), HEIGHT_Q, folder)
    assert result.answer == "31 metres"
    cited = next(e for e in result.evidence if e.sentence_text and "31 metres" in e.sentence_text)
    assert cited.path == "reports/annual.pdf" and cited.location == {"page": 2}
    assert cited.citation == "reports/annual.pdf p.2"
    assert cited.doc_id == "reports/annual.pdf#u2" and cited.title == "Vell Coast lighthouses"
    as_json = json.loads(result.to_json())
    assert {"page": 2} in [e["location"] for e in as_json["evidence"]]
    assert result.corpus["files"] == 6 and not result.corpus["skipped"]


def test_an_answer_from_a_spreadsheet_is_cited_by_its_row_read_with_its_header(make_client, folder, tmp_path):
    result = ask(make_client, config(tmp_path), LIT_Q, folder)
    assert result.answer == "1869"
    cited = next(e for e in result.evidence if e.sentence_text and "Calder Point" in e.sentence_text)
    assert cited.sentence_text == "Name: Calder Point Light · Height (m): 27 · First lit: 1869"
    assert cited.location == {"sheet": "Lighthouses", "row": 3}
    assert cited.citation == "data/lights.xlsx Lighthouses!3"


def _encrypted() -> bytes:
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(pdf_bytes([["secret figures"]])))
    writer.encrypt("secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _bomb() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w") as f:
            for _ in range(64):
                f.write(bytes(1 << 20))  # 64 MB of zeros in about 64 KB
    return out.getvalue()


def test_bad_files_are_skipped_by_reason_while_the_others_answer(make_client, folder, tmp_path, monkeypatch):
    truncated = pdf_bytes([["one"], ["two"]])
    for rel, data in {
        "bad/locked.pdf": _encrypted(),
        "bad/scan.pdf": pdf_bytes([[], []]),
        "bad/truncated.pdf": truncated[: len(truncated) // 2],
        "bad/bomb.docx": _bomb(),
        "bad/crash.segfault": b"x",
        "bad/slow.hang": b"x",
    }.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    # a parser that crashes its worker, and one that never returns: what a hostile file can do to a C library
    for suffix in ("segfault", "hang"):
        monkeypatch.setitem(FORMATS, f".{suffix}", Format(hostile_formats.__name__, suffix, function=suffix))
    result = ask(make_client, config(tmp_path, extraction_timeout_s=2, max_file_bytes=10_000_000), HEIGHT_Q, folder)
    assert result.answer == "31 metres"
    assert result.corpus["skipped"] == {
        "encrypted": 1,
        "no_text_layer": 1,
        "corrupt": 2,
        "oversized_record": 1,
        "timeout": 1,
    }
    problems = "\n".join(result.corpus.get("problems", [])) or ""
    assert result.corpus["files"] == 6, problems


def test_bad_files_are_named_with_their_reason_in_the_cli(folder, tmp_path, capsys):
    (folder / "bad").mkdir()
    (folder / "bad" / "scan.pdf").write_bytes(pdf_bytes([[]]))
    (folder / "bad" / "locked.pdf").write_bytes(_encrypted())
    assert main(["corpus", "stats", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "no_text_layer" in out and "encrypted" in out


def test_an_unchanged_document_is_never_parsed_again_and_an_edited_one_is(make_client, folder, tmp_path, monkeypatch):
    parsed: list[str] = []
    real = _extraction.Extractor.extract_all

    def counting(self, items):
        parsed.extend(name for _, _, name in items)
        return real(self, items)

    monkeypatch.setattr(_extraction.Extractor, "extract_all", counting)
    monkeypatch.setattr(_filestats, "_RACY_NS", 0)  # files written a moment ago count as settled
    cfg = config(tmp_path)
    assert ask(make_client, cfg, HEIGHT_Q, folder).answer == "31 metres"
    assert sorted(parsed) == ["annual.pdf", "board.docx", "crane.eml", "lights.xlsx", "review.pptx"]
    parsed.clear()
    again = ask(make_client, cfg, HEIGHT_Q, folder)
    assert again.answer == "31 metres" and parsed == []  # the page read comes from the store, not the PDF
    assert any(e.location == {"page": 2} and "31 metres" in (e.sentence_text or "") for e in again.evidence)
    (folder / "reports" / "annual.pdf").write_bytes(_report("34"))
    script = oracle()
    script.rules[0] = Rule(r"tall", "metres tall", "metres tall", "34 metres")
    script.synthesis = lambda p: "34 metres" if "34 metres tall" in p else "unknown"
    edited = ask(make_client, cfg, HEIGHT_Q, folder, script)
    assert parsed == ["annual.pdf"] and edited.answer == "34 metres"
