"""Write the demo corpus's document-format files: a short PDF report and a spreadsheet.

Usage: python corpora/build_demo_documents.py

Writes ``corpora/demo/reports/harbour-board-annual-report-2023.pdf`` (three pages, with reportlab) and
``corpora/demo/data/lighthouse-register.xlsx`` (one sheet, with openpyxl) from the text below: what a folder of
raw documents holds besides notes. The PDF is written with reportlab's invariant mode (no creation time, no random
document id), so it is byte-for-byte reproducible; an .xlsx is a zip whose members carry the time they were
written, so the test checks what lens reads from it, not its bytes. Needs the ``bench`` or ``dev`` extra
(reportlab).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPORT = HERE / "demo" / "reports" / "harbour-board-annual-report-2023.pdf"
REGISTER = HERE / "demo" / "data" / "lighthouse-register.xlsx"

REPORT_TITLE = "Harrowmouth Harbour Board: Annual Report 2023"
REPORT_PAGES = [
    [
        REPORT_TITLE,
        "",
        "The Harrowmouth Harbour Board keeps the harbour, its channels and its berths for the ferries,",
        "the fishing fleet and visiting boats. This report covers the calendar year 2023.",
        "",
        "The harbour handled 1,240 ferry crossings in 2023, most of them by the Brisk Tern on the",
        "route to Skerrow Island. A second summer berth was tried on weekends from June.",
    ],
    [
        "Dredging and works",
        "",
        "Dredging of the north channel was completed in March 2023. It removed 18,400 cubic metres",
        "of silt, and the channel now keeps a depth of four metres at low water.",
        "",
        "The old slipway at the north end of the harbour was repaired in July, before the festival.",
        "The Marren Gull's bell was cleaned and rehung in the ticket hall.",
    ],
    [
        "Finances",
        "",
        "Harbour dues brought in 1.32 million pounds in 2023, six per cent more than in 2022.",
        "The dredging cost 412,000 pounds and was paid from the board's reserve.",
    ],
]

REGISTER_SHEET = "Lights"
REGISTER_ROWS = [
    ("Name", "Tower height (m)", "First lit", "Keeper's cottages", "Status"),
    ("Skerrow Light", 31, 1874, 2, "automated 1986"),
    ("Calder Point Light", 27, 1869, 1, "automated 1979"),
    ("Harrowmouth Pier Light", 9, 1902, 0, "in service"),
    ("Dunmere Head Light", 22, 1891, 2, "decommissioned 1961"),
]


def write_report(path: Path = REPORT) -> None:
    from reportlab.pdfgen import canvas

    path.parent.mkdir(parents=True, exist_ok=True)
    pdf = canvas.Canvas(str(path), invariant=1)
    pdf.setTitle(REPORT_TITLE)
    pdf.setAuthor("Harrowmouth Harbour Board")
    for lines in REPORT_PAGES:
        y = 760
        for i, line in enumerate(lines):
            pdf.setFont("Helvetica-Bold" if i == 0 else "Helvetica", 14 if i == 0 else 11)
            pdf.drawString(60, y, line)
            y -= 18
        pdf.showPage()
    pdf.save()


def write_register(path: Path = REGISTER) -> None:
    import openpyxl

    path.parent.mkdir(parents=True, exist_ok=True)
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = REGISTER_SHEET
    for row in REGISTER_ROWS:
        sheet.append(list(row))
    book.properties.title = "Vell Coast lighthouse register"
    book.properties.creator = "lens demo corpus"
    book.properties.created = book.properties.modified = dt.datetime(2024, 1, 15, 9, 0, 0)
    book.save(path)


if __name__ == "__main__":
    write_report()
    write_register()
    print(f"wrote {REPORT.relative_to(HERE.parent)} and {REGISTER.relative_to(HERE.parent)}")
