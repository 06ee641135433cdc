"""OpenDocument text, spreadsheets and presentations (.odt, .ods, .odp: LibreOffice's formats), through the
standard library: ``zipfile`` (checked against zip bombs first) and ``xml.etree`` on content.xml and meta.xml.

- .odt as a Word file (``_docx``): paragraphs and table rows, a heading starts a unit of at most 20; locations
  ``{"paragraph": N}`` (1-based over the body's paragraphs and headings, list items included, tables' not) and
  ``{"table": T, "row": R}``.
- .ods as a workbook (``_xlsx``): each table's rows read with its header, units of at most 50 rows; location
  ``{"sheet": NAME, "row": N}``. A run of identical rows stored once with a repeat count is read at most 100
  times (the row numbers after it stay right); values as the cells' stored numbers, dates and text.
- .odp as a deck (``_pptx``): one unit per slide, its text then its notes; location ``{"slide": N}``.

Title: meta.xml's dc:title when it reads as one, else the file name; then the unit's heading, sheet or slide
title. Footnotes and comments are not read.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from lens.reader.formats import Limits, Unit, Unreadable, open_zip, read_member
from lens.reader.formats._common import (
    Blocks,
    cell_text,
    document_title,
    one_line,
    sheet_units,
    table_lines,
    unit_title,
)

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
}


def _q(name: str) -> str:
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


_P, _H, _S, _TAB, _BR = _q("text:p"), _q("text:h"), _q("text:s"), _q("text:tab"), _q("text:line-break")
_SKIP = frozenset({_q("text:note"), _q("office:annotation"), _q("text:tracked-changes")})
_TABLE, _ROW, _CELL, _COVERED = (
    _q("table:table"),
    _q("table:table-row"),
    _q("table:table-cell"),
    _q("table:covered-table-cell"),
)
_MAX_ROW_REPEAT = 100
_MAX_COLUMNS = 1024


def _text(el: ET.Element) -> str:
    """The text of a paragraph element: spaces, tabs and line breaks as they show; notes and comments left out."""
    parts = [el.text or ""]
    for child in el:
        if child.tag == _S:
            parts.append(" " * int(child.get(_q("text:c"), "1") or 1))
        elif child.tag == _TAB:
            parts.append("\t")
        elif child.tag == _BR:
            parts.append("\n")
        elif child.tag not in _SKIP:
            parts.append(_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _paragraphs(el: ET.Element) -> list[str]:
    return [_text(p) for p in el.iter() if p.tag in (_P, _H)]


def _open(data: bytes, name: str, limits: Limits, body: str) -> tuple[str, ET.Element]:
    with open_zip(data, limits) as zf:
        try:
            content = ET.fromstring(read_member(zf, "content.xml", limits.max_file_bytes))
        except KeyError as e:
            raise Unreadable("corrupt", "no content.xml in the OpenDocument zip") from e
        try:
            meta = ET.fromstring(read_member(zf, "meta.xml", limits.max_file_bytes))
            title = document_title(meta.findtext(".//dc:title", namespaces=_NS), name)
        except KeyError:
            title = document_title(None, name)
    root = content.find(f"office:body/{body}", _NS)
    if root is None:
        raise Unreadable("corrupt", f"content.xml has no {body} body")
    return title, root


def _row_cells(row: ET.Element) -> list[str]:
    cells: list[str] = []
    empty = 0  # empty cells not yet written: a trailing run of thousands of them never is
    for cell in row:
        if cell.tag not in (_CELL, _COVERED):
            continue
        repeat = int(cell.get(_q("table:number-columns-repeated"), "1") or 1)
        kind = cell.get(_q("office:value-type"))
        if kind in ("float", "percentage", "currency"):
            value = cell_text(float(cell.get(_q("office:value"), "nan")))
        elif kind == "date":
            value = cell.get(_q("office:date-value"), "")[:10]
        elif kind == "boolean":
            value = cell_text(cell.get(_q("office:boolean-value")) == "true")
        else:
            value = one_line(" ".join(_paragraphs(cell)))
        if not value:
            empty += repeat
            continue
        cells += [""] * empty + [value] * min(repeat, _MAX_COLUMNS)
        empty = 0
        if len(cells) >= _MAX_COLUMNS:
            return cells[:_MAX_COLUMNS]
    return cells


def _table_rows(table: ET.Element) -> list[tuple[int, list[str]]]:
    rows = []
    n = 0
    for row in table.iter(_ROW):
        repeat = int(row.get(_q("table:number-rows-repeated"), "1") or 1)
        cells = _row_cells(row)
        if any(cells):
            rows += [(n + k + 1, cells) for k in range(min(repeat, _MAX_ROW_REPEAT))]
        n += repeat
    return rows


def extract_odt(data: bytes, name: str, limits: Limits) -> list[Unit]:
    title, body = _open(data, name, limits, "office:text")
    blocks = Blocks(title, 20)
    counts = {"paragraph": 0, "table": 0}

    def walk(el: ET.Element) -> None:
        for child in el:
            if child.tag in (_P, _H):
                counts["paragraph"] += 1
                text = _text(child)
                if child.tag == _H and text.strip():
                    blocks.start(text)
                blocks.add(text.split("\n"), {"paragraph": counts["paragraph"]})
            elif child.tag == _TABLE:
                counts["table"] += 1
                for r, line in table_lines(_table_rows(child)):
                    blocks.add([line], {"table": counts["table"], "row": r})
            elif child.tag not in _SKIP:
                walk(child)  # lists, list items, sections

    walk(body)
    return blocks.done()


def extract_ods(data: bytes, name: str, limits: Limits) -> list[Unit]:
    title, body = _open(data, name, limits, "office:spreadsheet")
    units = []
    for table in body.iter(_TABLE):
        sheet = table.get(_q("table:name"), "")
        units += sheet_units(_table_rows(table), sheet, unit_title(title, sheet))
    return units


def extract_odp(data: bytes, name: str, limits: Limits) -> list[Unit]:
    title, body = _open(data, name, limits, "office:presentation")
    notes_tag = _q("presentation:notes")
    units = []
    for n, page in enumerate(body.findall("draw:page", _NS), 1):
        heading = ""
        lines: list[str] = []
        for frame in page:
            if frame.tag == notes_tag:
                continue
            text = [x for p in _paragraphs(frame) for x in p.split("\n") if x.strip()]
            if frame.get(_q("presentation:class")) == "title" and not heading:
                heading = " ".join(text)
                lines = text + lines
            else:
                lines += text
        notes = page.find("presentation:notes", _NS)
        note_lines = [x for p in _paragraphs(notes) for x in p.split("\n") if x.strip()] if notes is not None else []
        if note_lines:
            lines += ["Speaker notes:"] + note_lines
        lines = [one_line(x) for x in lines]
        if lines:
            units.append(Unit("\n".join(lines), unit_title(title, heading), {"slide": n}))
    return units
