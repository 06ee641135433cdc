"""Word (.docx), through python-docx (MIT).

Units: runs of the body's paragraphs and table rows in document order; a heading (a paragraph styled "Title" or
"Heading N") starts a new unit, and a unit holds at most 20 paragraphs or rows. Each line's location: a
paragraph's ``{"paragraph": N}`` (1-based over the body's paragraphs — headings and empty paragraphs included,
paragraphs inside tables not: the numbering of python-docx's ``Document.paragraphs``; a paragraph's soft line
breaks give lines at the same N), a table row's ``{"table": T, "row": R}`` (the T-th table of the body, R its
row with the header as row 1; the row read with its header, merged cells once). The unit's location is its
first line's. Title: the core properties' title when it reads as one, else the file name; then the heading
the unit sits under. Headers, footers, footnotes, comments and text boxes are not read.
"""

from __future__ import annotations

import io

from lens.reader.formats import Limits, Unit
from lens.reader.formats._common import Blocks, document_title, one_line, table_lines

MAX_ITEMS = 20


def _is_heading(paragraph) -> bool:
    name = (paragraph.style.name if paragraph.style is not None else "") or ""
    return name == "Title" or name.startswith("Heading")


def _table_rows(table) -> list[tuple[int, list[str]]]:
    rows = []
    for r, row in enumerate(table.rows, 1):
        cells, previous = [], None
        for cell in row.cells:  # one entry per grid column: a merged cell repeats, and is read once
            cells.append("" if cell._tc is previous else one_line(cell.text))
            previous = cell._tc
        rows.append((r, cells))
    return rows


def extract(data: bytes, name: str, limits: Limits) -> list[Unit]:
    import docx  # heavy (lxml): loaded only when a .docx is read

    document = docx.Document(io.BytesIO(data))
    blocks = Blocks(document_title(document.core_properties.title, name), MAX_ITEMS)
    paragraphs = tables = 0
    for item in document.iter_inner_content():
        if hasattr(item, "rows"):  # a Table (the other kind is a Paragraph)
            tables += 1
            for r, line in table_lines(_table_rows(item)):
                blocks.add([line], {"table": tables, "row": r})
        else:
            paragraphs += 1
            if _is_heading(item) and item.text.strip():
                blocks.start(item.text)
            blocks.add(item.text.split("\n"), {"paragraph": paragraphs})
    return blocks.done()
