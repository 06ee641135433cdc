"""What the format modules share: the title rule, a table row read with its header, runs of paragraphs or cells
grouped into units, and HTML as plain text."""

from __future__ import annotations

import datetime
import re
from html.parser import HTMLParser
from typing import Any, Iterable

from lens.reader.formats import Unit

# at most this many rows of a sheet in one unit (a larger sheet is read as blocks of rows)
SHEET_BLOCK_ROWS = 50

# what writers put in a title field when the author gave none: a file name, "untitled", "Untitled-1"
_PLACEHOLDER_TITLE = re.compile(
    r"(?i)^((microsoft (word|powerpoint|excel) - )?.*\.(pdf|docx?|pptx?|xlsx?|rtf|txt)|untitled\b.*)$"
)


def document_title(metadata_title: Any, name: str) -> str:
    """The file's title: its metadata title when that reads as a title (has a letter, is not just a file name
    such as "Microsoft Word - report.docx", not "untitled", at most 200 characters), else the file name."""
    title = " ".join(str(metadata_title or "").split())
    if title and len(title) <= 200 and any(c.isalpha() for c in title) and not _PLACEHOLDER_TITLE.match(title):
        return title
    return name.rsplit("/", 1)[-1]


def unit_title(file_title: str, heading: str | None) -> str:
    """A unit's title: the file's title, then " — " and the unit's own heading when it has one."""
    heading = " ".join((heading or "").split())[:200]
    return f"{file_title} — {heading}" if heading and heading != file_title else file_title


def one_line(value: Any) -> str:
    """``value`` as text on one line (a cell's line breaks and tabs become spaces)."""
    return " ".join(str(value).split())


def cell_text(value: Any) -> str:
    """A spreadsheet value as the sheet shows it by default: whole numbers without ".0", others to 15
    significant digits (Excel's precision, so 0.1 + 0.2 reads 0.3), dates as ISO dates, booleans as TRUE/FALSE."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".15g")
    if isinstance(value, datetime.datetime):
        return value.date().isoformat() if value.time() == datetime.time() else value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return one_line(value)


def column_letter(index: int) -> str:
    """The spreadsheet name of the 0-based column ``index``: 0 → A, 26 → AA."""
    out = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        out = chr(65 + rem) + out
    return out


def render_row(header: list[str], cells: list[str]) -> str:
    """A table row with its header: "Name: Skerrow Light · Height (m): 31"; empty cells left out, a column with
    no header named by its letter."""
    parts = []
    for i, value in enumerate(cells):
        if value:
            name = header[i] if i < len(header) and header[i] else column_letter(i)
            parts.append(f"{name}: {value}")
    return " · ".join(parts)


def table_lines(rows: Iterable[tuple[int, list[str]]]) -> list[tuple[int, str]]:
    """``(row number, line)`` of each row of a table given as ``(row number, cell texts)``, empty rows left out.
    The header is the first non-empty row — or, when some row has two or more values, the first such row: a
    title line above the table ("Lighthouses of the north coast" alone in A1) is then read as a line of its own,
    not as the header. Every row after the header is read with it; a table with only a header gives the header."""
    filled = [(n, cells) for n, cells in rows if any(cells)]
    if not filled:
        return []
    wide = [i for i, (_, cells) in enumerate(filled) if sum(1 for c in cells if c) >= 2]
    start = wide[0] if wide else 0
    out = [(n, " · ".join(c for c in cells if c)) for n, cells in filled[:start]]
    header_row, header = filled[start]
    out += [(n, render_row(header, cells)) for n, cells in filled[start + 1 :]]
    if len(filled) == start + 1:
        out.append((header_row, " · ".join(c for c in header if c)))
    return out


def sheet_units(rows: Iterable[tuple[int, list[str]]], sheet: str, title: str) -> list[Unit]:
    """A sheet's rows as units of at most :data:`SHEET_BLOCK_ROWS` rows, each row at ``{"sheet", "row"}``."""
    lines = table_lines(rows)
    units = []
    for i in range(0, len(lines), SHEET_BLOCK_ROWS):
        block = lines[i : i + SHEET_BLOCK_ROWS]
        locations = tuple({"sheet": sheet, "row": n} for n, _ in block)
        units.append(Unit("\n".join(line for _, line in block), title, locations[0], locations))
    return units


class Blocks:
    """Consecutive items (paragraphs, table rows, cells), each with its lines and location, grouped into units:
    a heading starts a new unit, and a unit holds at most ``max_items`` items."""

    def __init__(self, file_title: str, max_items: int) -> None:
        self.file_title = file_title
        self.max_items = max_items
        self.heading: str | None = None
        self.units: list[Unit] = []
        self._lines: list[str] = []
        self._locations: list[dict] = []
        self._items = 0

    def start(self, heading: str | None) -> None:
        """Close the unit being built; the next one goes under ``heading``."""
        self._flush()
        self.heading = heading

    def add(self, lines: list[str], location: dict) -> None:
        lines = [x.rstrip() for x in lines if x.strip()]  # indentation kept: a code cell's matters
        if not lines:
            return
        if self._items >= self.max_items:
            self._flush()
        self._lines += lines
        self._locations += [location] * len(lines)
        self._items += 1

    def _flush(self) -> None:
        if self._lines:
            locations = tuple(self._locations)
            self.units.append(
                Unit("\n".join(self._lines), unit_title(self.file_title, self.heading), locations[0], locations)
            )
        self._lines, self._locations, self._items = [], [], 0

    def done(self) -> list[Unit]:
        self._flush()
        return self.units


_SKIPPED_TAGS = frozenset({"script", "style", "head", "template", "noscript"})
_BLOCK_TAGS = frozenset(
    "p div br li tr h1 h2 h3 h4 h5 h6 title section article aside blockquote pre ul ol table dt dd caption "
    "figcaption header footer hr nav main address".split()
)
_HEADING_TAGS = frozenset({"h1", "h2", "h3"})


class _HTMLText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.heading: str | None = None
        self._heading: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in _SKIPPED_TAGS:
            self.skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append(" ")
        if tag in _HEADING_TAGS and self.heading is None and not self.skip:
            self._heading = []

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self.skip = max(0, self.skip - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")
        if tag in _HEADING_TAGS and self._heading is not None:
            self.heading = one_line("".join(self._heading)) or None
            self._heading = None

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)
            if self._heading is not None:
                self._heading.append(data)


def html_text(html: str) -> tuple[str, str | None]:
    """The readable text of an HTML or XHTML document (one line per block, scripts, styles and the head left
    out) and its first h1–h3 heading, if any."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    lines = (one_line(x) for x in "".join(parser.parts).split("\n"))
    return "\n".join(x for x in lines if x), parser.heading
