"""The format readers on real files the tests write with the format libraries (reportlab, pypdf, python-docx,
python-pptx, openpyxl) or by hand (e-mail, mbox, EPUB, notebook, OpenDocument zips): the text, titles and
locations each returns, and the reason each kind of unreadable file is skipped with."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import time
import tracemalloc
import zipfile
from email.message import EmailMessage

import docx
import openpyxl
import pptx
import pypdf
import pytest
from reportlab.pdfgen import canvas

from lens.reader.formats import FORMATS, Format, Limits, Unit, Unreadable, extract, format_of

from . import hostile_formats

# --------------------------------------------------------------------------- writers


def pdf_bytes(pages: list[list[str]], title: str | None = None) -> bytes:
    """A PDF with one page per entry, each line drawn as text (an empty entry: a page with only a rectangle)."""
    out = io.BytesIO()
    c = canvas.Canvas(out)
    if title:
        c.setTitle(title)
    for lines in pages:
        if not lines:
            c.rect(100, 100, 200, 200, fill=1)  # graphics, no text object: what a scanned page has
        for i, line in enumerate(lines):
            c.drawString(72, 720 - 14 * i, line)
        c.showPage()
    c.save()
    return out.getvalue()


def docx_bytes(build) -> bytes:
    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def zip_bytes(members: dict[str, bytes | str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out.getvalue()


def reason(source, suffix, limits=None) -> Unreadable:
    with pytest.raises(Unreadable) as info:
        extract(source, suffix, limits, name="f" + suffix)
    return info.value


# --------------------------------------------------------------------------- the table and the contract


def test_every_format_in_the_table_names_an_importable_reader():
    for suffix, fmt in FORMATS.items():
        assert suffix == suffix.lower() and suffix.startswith(".")
        assert callable(fmt.reader()), suffix
    assert format_of("PDF") is FORMATS[".pdf"] and format_of(".Docx") is FORMATS[".docx"]
    assert format_of(".txt") is None
    with pytest.raises(ValueError, match="no format reads '.txt'"):
        extract(b"x", ".txt")


def test_a_units_line_locations_match_its_lines():
    unit = Unit("a\nb", "t", {"cell": 1}, ({"cell": 1}, {"cell": 2}))
    assert [unit.line_location(i) for i in range(2)] == [{"cell": 1}, {"cell": 2}]
    assert Unit("a\nb", "t", {"page": 3}).line_location(1) == {"page": 3}
    with pytest.raises(ValueError, match="1 line locations for 2 lines"):
        Unit("a\nb", "t", {"cell": 1}, ({"cell": 1},))
    with pytest.raises(ValueError, match="unknown skip reason"):
        Unreadable("bad", "x")


def test_a_format_whose_library_is_missing_is_skipped_naming_the_extra(monkeypatch):
    monkeypatch.setitem(FORMATS, ".zzz", Format("lens_no_such_reader_module", "Zed", extra="zed"))
    err = reason(b"x", ".zzz")
    assert err.reason == "missing_library" and "pip install 'lens-search[zed]'" in err.message


def test_a_parser_failure_on_the_file_is_corrupt_with_its_cause(monkeypatch):
    monkeypatch.setitem(FORMATS, ".boom", Format(hostile_formats.__name__, "Boom", function="broken"))
    err = reason(b"{", ".boom")
    assert err.reason == "corrupt" and err.message == "not a readable Boom file (KeyError: 'word/document.xml')"


def test_importing_the_formats_and_the_runner_loads_no_format_library():
    code = (
        "import sys, lens.reader.formats, lens.reader._extraction; "
        "print([m for m in ('pypdfium2', 'docx', 'pptx', 'openpyxl', 'lxml', 'lens._config') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_path_is_read_up_to_the_file_limit(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_bytes(b"Name,Age\nAda,36\n")
    assert extract(path, ".csv")[0].text == "Name: Ada · Age: 36"
    assert extract(str(path), ".csv")[0].title == "notes.csv"
    assert reason(path, ".csv", Limits(max_file_bytes=10)).reason == "oversized"
    assert reason(path.read_bytes(), ".csv", Limits(max_file_bytes=10)).reason == "oversized"
    assert reason(tmp_path / "gone.csv", ".csv").reason == "corrupt"


# --------------------------------------------------------------------------- PDF


def test_pdf_one_unit_per_page_with_text_at_its_page_number():
    data = pdf_bytes([["Revenue rose to 12 million.", "Costs fell."], [], ["The outlook is stable."]], "Annual Report")
    units = extract(data, ".pdf", name="reports/annual.pdf")
    assert [u.location for u in units] == [{"page": 1}, {"page": 3}]  # the page without text gives no unit
    assert units[0].text == "Revenue rose to 12 million.\nCosts fell."
    assert units[1].text == "The outlook is stable."
    assert {u.title for u in units} == {"Annual Report"}
    assert units[0].line_locations == () and units[0].line_location(1) == {"page": 1}


def test_pdf_title_falls_back_to_the_file_name():
    untitled = pdf_bytes([["x"]])  # reportlab's default Title is "untitled", as many writers' is
    assert extract(untitled, ".pdf", name="reports/annual.pdf")[0].title == "annual.pdf"
    named_like_a_file = pdf_bytes([["x"]], "Microsoft Word - annual 2023.docx")
    assert extract(named_like_a_file, ".pdf", name="annual.pdf")[0].title == "annual.pdf"


def test_pdf_encrypted_with_a_user_password_is_skipped_as_encrypted():
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(pdf_bytes([["secret figures"]])))
    writer.encrypt("secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    err = reason(out.getvalue(), ".pdf")
    assert err.reason == "encrypted" and "password" in err.message


def test_pdf_with_only_an_owner_password_is_read():
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(pdf_bytes([["printable figures"]])))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    assert extract(out.getvalue(), ".pdf")[0].text == "printable figures"


def test_pdf_without_a_text_layer_is_skipped_saying_ocr_is_needed():
    err = reason(pdf_bytes([[], []]), ".pdf")
    assert err.reason == "no_text_layer" and "OCR" in err.message and "2 pages" in err.message


def test_pdf_truncated_is_corrupt():
    data = pdf_bytes([["one"], ["two"]])
    assert reason(data[: len(data) // 2], ".pdf").reason == "corrupt"


def test_pdf_with_more_pages_than_the_limit_is_skipped():
    err = reason(pdf_bytes([["a"], ["b"], ["c"]]), ".pdf", Limits(max_pages=2))
    assert err.reason == "too_many_pages" and "3 pages" in err.message and "reader.max_pages" in err.message


# --------------------------------------------------------------------------- Word


def _minutes(d) -> None:
    d.core_properties.title = "Council minutes"
    d.add_paragraph("Present: the full council.")  # 1
    d.add_paragraph("")  # 2: empty, still counted
    d.add_heading("Budget", 1)  # 3
    d.add_paragraph("The budget was approved.\nUnanimously.")  # 4: a soft line break
    table = d.add_table(rows=3, cols=3)
    for r, row in enumerate([["Item", "Cost", "Year"], ["Lamp", "12", "2024"], ["Lens", "", "2025"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    merged = table.cell(2, 1).merge(table.cell(2, 2))
    merged.text = "2025"
    d.add_paragraph("After the table.")  # 5
    d.add_heading("Harbour", 1)  # 6
    d.add_paragraph("Dredging starts in May.")  # 7


def test_docx_units_under_headings_with_paragraph_and_table_row_locations():
    units = extract(docx_bytes(_minutes), ".docx", name="minutes.docx")
    assert [u.title for u in units] == ["Council minutes", "Council minutes — Budget", "Council minutes — Harbour"]
    assert units[0].text == "Present: the full council." and units[0].location == {"paragraph": 1}
    budget = units[1]
    assert budget.text.split("\n") == [
        "Budget",
        "The budget was approved.",
        "Unanimously.",
        "Item: Lamp · Cost: 12 · Year: 2024",
        "Item: Lens · Cost: 2025",  # the merged cell read once, under its first column
        "After the table.",
    ]
    assert budget.line_locations == (
        {"paragraph": 3},
        {"paragraph": 4},
        {"paragraph": 4},
        {"table": 1, "row": 2},
        {"table": 1, "row": 3},
        {"paragraph": 5},
    )
    assert budget.location == {"paragraph": 3}
    assert units[2].line_locations == ({"paragraph": 6}, {"paragraph": 7})


def test_docx_long_runs_of_paragraphs_are_split_into_units_of_twenty():
    units = extract(
        docx_bytes(lambda d: [d.add_paragraph(f"Point {i}.") for i in range(1, 46)]), ".docx", name="f.docx"
    )
    assert [len(u.line_locations) for u in units] == [20, 20, 5]
    assert units[1].location == {"paragraph": 21} and units[2].line_location(4) == {"paragraph": 45}
    assert units[0].title == "f.docx"


def test_docx_password_protected_is_encrypted_and_a_legacy_doc_is_corrupt():
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100
    assert reason(ole + "EncryptedPackage".encode("utf-16-le"), ".docx").reason == "encrypted"
    err = reason(ole, ".docx")
    assert err.reason == "corrupt" and "old binary Office file" in err.message


def test_docx_zip_bomb_is_oversized_before_anything_is_inflated():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w") as f:
            for _ in range(64):
                f.write(bytes(1 << 20))  # 64 MB of zeros, about 64 KB compressed
    bomb = out.getvalue()
    assert len(bomb) < 200_000
    tracemalloc.start()
    start = time.perf_counter()
    try:
        err = reason(bomb, ".docx", Limits(max_file_bytes=10_000_000))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.reason == "oversized_record" and "10,000,000" in err.message
    assert time.perf_counter() - start < 1.0 and peak < 5_000_000
    # within the byte limit, the ratio still gives it away
    err = reason(bomb, ".docx", Limits(max_file_bytes=100_000_000))
    assert err.reason == "oversized_record" and "word/document.xml inflates" in err.message


def test_zip_member_that_lies_about_its_size_is_cut_at_the_declared_size():
    members = _epub_members()
    members["OEBPS/text/ch1.xhtml"] = "<p>" + "x" * 5_000_000 + "</p>"
    data = bytearray(zip_bytes(members))
    # declare 1,000 bytes for the 5 MB chapter, in its local header and in its central directory entry
    local = data.index(b"OEBPS/text/ch1.xhtml") - 30  # the file name ends a local header's fixed part
    central = data.rindex(b"OEBPS/text/ch1.xhtml") - 46  # ... and a central directory entry's
    assert data[local : local + 4] == b"PK\x03\x04" and data[central : central + 4] == b"PK\x01\x02"
    struct.pack_into("<I", data, local + 22, 1000)
    struct.pack_into("<I", data, central + 24, 1000)
    tracemalloc.start()
    try:
        err = reason(bytes(data), ".epub")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.reason == "corrupt" and "CRC" in err.message and peak < 3_000_000


def test_zip_from_a_future_zip_version_is_corrupt():
    data = bytearray(zip_bytes(_epub_members()))
    central = data.rindex(b"META-INF/container.xml") - 46
    struct.pack_into("<H", data, central + 6, 255)  # "version needed to extract": 25.5
    err = reason(bytes(data), ".epub")
    assert err.reason == "corrupt" and "NotImplementedError: zip file version 25.5" in err.message


# --------------------------------------------------------------------------- PowerPoint


def test_pptx_one_unit_per_slide_with_its_title_table_and_notes():
    deck = pptx.Presentation()
    deck.core_properties.title = "Quarterly review"
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Lighthouse programme"
    first.placeholders[1].text = "Two lights relit\nOne under survey"
    first.notes_slide.notes_text_frame.text = "Mention the grant."
    deck.slides.add_slide(deck.slide_layouts[6])  # blank: no unit
    third = deck.slides.add_slide(deck.slide_layouts[5])
    third.shapes.title.text = "Costs"
    table = third.shapes.add_table(2, 2, 0, 0, 100, 100).table
    for (r, c), value in {(0, 0): "Light", (0, 1): "Cost", (1, 0): "Skerrow", (1, 1): "12"}.items():
        table.cell(r, c).text = value
    out = io.BytesIO()
    deck.save(out)
    units = extract(out.getvalue(), ".pptx", name="slides/review.pptx")
    assert [u.location for u in units] == [{"slide": 1}, {"slide": 3}]
    assert units[0].title == "Quarterly review — Lighthouse programme"
    assert units[0].text.split("\n") == [
        "Lighthouse programme",
        "Two lights relit",
        "One under survey",
        "Speaker notes:",
        "Mention the grant.",
    ]
    assert units[1].text == "Costs\nLight: Skerrow · Cost: 12" and units[1].title == "Quarterly review — Costs"


# --------------------------------------------------------------------------- spreadsheets


def test_xlsx_a_title_line_above_the_table_is_not_taken_for_its_header():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Lighthouses"
    sheet["A1"] = "Lighthouses of the north coast"
    sheet.append(["Name", "Height (m)"])  # row 2: the first row with two values
    sheet.append(["Skerrow Light", 31])
    book.create_sheet("Notes").append(["Checked 2024"])  # one column: its first row is the header, read alone
    out = io.BytesIO()
    book.save(out)
    units = extract(out.getvalue(), ".xlsx", name="data/lights.xlsx")
    assert units[0].text.split("\n") == ["Lighthouses of the north coast", "Name: Skerrow Light · Height (m): 31"]
    assert units[0].line_locations == ({"sheet": "Lighthouses", "row": 1}, {"sheet": "Lighthouses", "row": 3})
    assert units[0].title == "lights.xlsx — Lighthouses"
    assert units[1].location == {"sheet": "Notes", "row": 1} and units[1].text == "Checked 2024"


def test_xlsx_header_row_and_values_as_the_sheet_shows_them():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Lighthouses"
    sheet.append([])
    sheet.append(["Name", "Height (m)", "First lit", None, "Lit"])  # row 2: the header
    sheet.append(["Skerrow Light", 31, 1874, None, True])
    sheet.append([])
    sheet.append(["Far Point", 0.1 + 0.2, None, "extra", False])
    sheet.append(["Rona", 2.5e-3, None, None, None])
    out = io.BytesIO()
    book.save(out)
    [unit] = extract(out.getvalue(), ".xlsx", name="lights.xlsx")
    assert unit.text.split("\n") == [
        "Name: Skerrow Light · Height (m): 31 · First lit: 1874 · Lit: TRUE",
        "Name: Far Point · Height (m): 0.3 · D: extra · Lit: FALSE",
        "Name: Rona · Height (m): 0.0025",
    ]
    assert unit.line_locations == tuple({"sheet": "Lighthouses", "row": n} for n in (3, 5, 6))


def test_xlsx_large_sheet_is_read_in_blocks_of_fifty_rows():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Id", "Value"])
    for i in range(1, 121):
        sheet.append([i, i * 2])
    out = io.BytesIO()
    book.save(out)
    units = extract(out.getvalue(), ".xlsx")
    assert [len(u.line_locations) for u in units] == [50, 50, 20]
    assert units[1].location == {"sheet": "Sheet", "row": 52} and units[1].text.split("\n")[0] == "Id: 51 · Value: 102"


def test_csv_delimiter_sniffed_rows_numbered_as_a_spreadsheet_shows_them():
    data = b'Name;Note\nSkerrow;"lit in\n1874"\n\nFar;\xffbad byte\n'
    [unit] = extract(data, ".csv", name="data/lights.csv")
    assert unit.text.split("\n") == ["Name: Skerrow · Note: lit in 1874", "Name: Far · Note: \ufffdbad byte"]
    # the header is row 1, the quoted line break does not count, the blank line does
    assert unit.line_locations == ({"sheet": "lights", "row": 2}, {"sheet": "lights", "row": 4})
    assert unit.title == "lights.csv"


def test_tsv_is_split_at_tabs_only():
    [unit] = extract("Name\tHeight, m\nSkerrow\t31\n".encode(), ".tsv", name="l.tsv")
    assert unit.text == "Name: Skerrow · Height, m: 31"


def test_csv_field_past_the_csv_limit_is_an_oversized_record():
    err = reason(b"a\n" + b"x" * 200_000 + b"\n", ".csv")
    assert err.reason == "oversized_record"


# --------------------------------------------------------------------------- e-mail


def _message(subject: str, body: str, html: str | None = None) -> bytes:
    msg = EmailMessage()
    msg["Subject"] = subject
    msg["From"] = "Ada Keeper <ada@example.org>"
    msg["To"] = "board@example.org"
    msg["Date"] = "Mon, 04 Mar 2024 10:00:00 +0000"
    if body:
        msg.set_content(body)
    if html:
        if body:
            msg.add_alternative(html, subtype="html")
        else:
            msg.set_content(html, subtype="html")
    msg.add_attachment(b"%PDF-1.4 attachment", maintype="application", subtype="pdf", filename="a.pdf")
    return msg.as_bytes()


def test_eml_headers_then_the_plain_body_as_message_one():
    [unit] = extract(_message("Relighting Skerrow — budget", "The cost is £12,000.\nApproved."), ".eml")
    assert unit.text.split("\n") == [
        "Subject: Relighting Skerrow — budget",
        "From: Ada Keeper <ada@example.org>",
        "To: board@example.org",
        "Date: Mon, 04 Mar 2024 10:00:00 +0000",
        "The cost is £12,000.",
        "Approved.",
    ]
    assert unit.title == "Relighting Skerrow — budget" and unit.location == {"message": 1}


def test_eml_html_only_body_read_as_text():
    html = "<html><head><style>p{}</style></head><body><p>Lamp&nbsp;fixed</p><p>Next: <b>lens</b></p></body></html>"
    [unit] = extract(_message("Repair", "", html), ".eml")
    assert unit.text.split("\n")[-2:] == ["Lamp fixed", "Next: lens"]


def test_mbox_one_unit_per_message_with_its_subject():
    mbox = b"".join(
        b"From ada@example.org Mon Mar  4 10:00:00 2024\n" + _message(s, b).replace(b"\r\n", b"\n") + b"\n"
        for s, b in [("First", "One.\n>From the harbour we sailed."), ("Second", "Two.")]
    )
    units = extract(mbox, ".mbox", name="mail/list.mbox")
    assert [u.location for u in units] == [{"message": 1}, {"message": 2}]
    assert [u.title for u in units] == ["list.mbox — First", "list.mbox — Second"]
    assert "From the harbour we sailed." in units[0].text.split("\n")


# --------------------------------------------------------------------------- EPUB, notebooks, OpenDocument


def _epub_members(encrypted: bool = False) -> dict[str, str]:
    opf = """<?xml version="1.0"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:title>Lights of the North</dc:title></metadata>
<manifest><item id="c2" href="text/ch%202.xhtml" media-type="application/xhtml+xml"/>
<item id="cover" href="cover.xhtml" media-type="application/xhtml+xml"/>
<item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/></manifest>
<spine><itemref idref="cover"/><itemref idref="c1"/><itemref idref="c2"/></spine></package>"""
    members = {
        "mimetype": "application/epub+zip",
        "META-INF/container.xml": '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
        "OEBPS/content.opf": opf,
        "OEBPS/cover.xhtml": "<html><body><img src='c.png'/></body></html>",
        "OEBPS/text/ch1.xhtml": "<html><head><title>x</title></head><body><h1>Skerrow</h1><p>Lit in 1874&nbsp;by"
        " the board.</p></body></html>",
        "OEBPS/text/ch 2.xhtml": "<html><body><h2>Far Point</h2><p>Never lit.</p></body></html>",
    }
    if encrypted:
        members["META-INF/encryption.xml"] = (
            '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
            'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:EncryptionMethod '
            'Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/><enc:CipherData><enc:CipherReference '
            'URI="OEBPS/text/ch1.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>'
        )
    return members


def _epub(encrypted: bool = False) -> bytes:
    return zip_bytes(_epub_members(encrypted))


def test_epub_sections_in_spine_order_with_their_headings():
    units = extract(_epub(), ".epub", name="book.epub")
    assert [u.location for u in units] == [{"section": 2}, {"section": 3}]  # the cover has no text
    assert units[0].text == "Skerrow\nLit in 1874 by the board."
    assert [u.title for u in units] == ["Lights of the North — Skerrow", "Lights of the North — Far Point"]


def test_epub_with_drm_is_encrypted():
    assert reason(_epub(encrypted=True), ".epub").reason == "encrypted"


def test_ipynb_cells_grouped_under_headings_each_line_at_its_cell():
    notebook = {
        "nbformat": 4,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "source": ["# Heights\n", "Measured in 2024."]},
            {
                "cell_type": "code",
                "source": "for h in heights:\n    print(h)",
                "outputs": [
                    {"output_type": "stream", "text": ["31\n", "12\n"]},
                    {"output_type": "execute_result", "data": {"text/plain": "43", "image/png": "…"}},
                ],
            },
            {"cell_type": "code", "source": "", "outputs": []},
            {"cell_type": "markdown", "source": "## Errors"},
            {
                "cell_type": "code",
                "source": "1/0",
                "outputs": [{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero"}],
            },
        ],
    }
    units = extract(json.dumps(notebook).encode(), ".ipynb", name="heights.ipynb")
    assert [u.title for u in units] == ["heights.ipynb — Heights", "heights.ipynb — Errors"]
    assert units[0].text.split("\n") == [
        "# Heights",
        "Measured in 2024.",
        "for h in heights:",
        "    print(h)",
        "31",
        "12",
        "43",
    ]
    assert [loc["cell"] for loc in units[0].line_locations] == [1, 1, 2, 2, 2, 2, 2]
    assert units[1].line_locations == ({"cell": 4}, {"cell": 5}, {"cell": 5})
    assert units[1].text.endswith("ZeroDivisionError: division by zero")
    assert reason(b"{not json", ".ipynb").reason == "corrupt"


_ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"'
)


def _odf(body: str, title: str = "") -> bytes:
    meta = (
        '<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        f'xmlns:dc="http://purl.org/dc/elements/1.1/"><office:meta><dc:title>{title}</dc:title></office:meta>'
        "</office:document-meta>"
    )
    content = f"<office:document-content {_ODF_NS}><office:body>{body}</office:body></office:document-content>"
    return zip_bytes({"mimetype": "application/vnd.oasis.opendocument", "content.xml": content, "meta.xml": meta})


def test_odt_paragraphs_and_tables_like_a_word_file():
    body = (
        "<office:text><text:p>Intro<text:s text:c='2'/>text.</text:p><text:h>Budget</text:h>"
        "<text:list><text:list-item><text:p>Approved<text:note><text:note-body><text:p>fn</text:p></text:note-body>"
        "</text:note>.</text:p></text:list-item></text:list>"
        "<table:table><table:table-row><table:table-cell><text:p>Item</text:p></table:table-cell><table:table-cell>"
        "<text:p>Cost</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell><text:p>Lamp"
        "</text:p></table:table-cell><table:table-cell office:value-type='float' office:value='12'><text:p>12.00"
        "</text:p></table:table-cell></table:table-row></table:table></office:text>"
    )
    units = extract(_odf(body, "Minutes"), ".odt")
    assert [u.title for u in units] == ["Minutes", "Minutes — Budget"]
    assert units[0].text == "Intro  text."
    assert units[1].text.split("\n") == ["Budget", "Approved.", "Item: Lamp · Cost: 12"]
    assert units[1].line_locations == ({"paragraph": 2}, {"paragraph": 3}, {"table": 1, "row": 2})


def test_ods_rows_with_repeats_at_the_rows_the_sheet_shows():
    row = "<table:table-row{}>{}</table:table-row>"
    cell = "<table:table-cell{}><text:p>{}</text:p></table:table-cell>"
    body = (
        "<office:spreadsheet><table:table table:name='Lights'>"
        + row.format("", cell.format("", "Name") + cell.format("", "Height"))
        + row.format(" table:number-rows-repeated='3'", "<table:table-cell table:number-columns-repeated='1024'/>")
        + row.format("", cell.format("", "Skerrow") + cell.format(" office:value-type='float' office:value='31'", "31"))
        + row.format(" table:number-rows-repeated='1048000'", "<table:table-cell/>")
        + "</table:table></office:spreadsheet>"
    )
    [unit] = extract(_odf(body), ".ods", name="lights.ods")
    assert unit.text == "Name: Skerrow · Height: 31" and unit.location == {"sheet": "Lights", "row": 5}
    assert unit.title == "lights.ods — Lights"


def test_odp_one_unit_per_slide_title_first_then_notes():
    body = (
        "<office:presentation><draw:page><draw:frame><draw:text-box><text:p>Two lights relit</text:p>"
        "</draw:text-box></draw:frame><draw:frame presentation:class='title'><draw:text-box><text:p>Programme"
        "</text:p></draw:text-box></draw:frame><presentation:notes><draw:frame><draw:text-box><text:p>Grant"
        "</text:p></draw:text-box></draw:frame></presentation:notes></draw:page><draw:page/></office:presentation>"
    )
    [unit] = extract(_odf(body, "Review"), ".odp")
    assert unit.text.split("\n") == ["Programme", "Two lights relit", "Speaker notes:", "Grant"]
    assert unit.location == {"slide": 1} and unit.title == "Review — Programme"
