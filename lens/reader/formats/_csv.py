"""CSV and TSV tables, through the standard library's ``csv``.

The text is UTF-8 (a byte-order mark dropped; bytes that are not UTF-8 read as U+FFFD); the delimiter of a .csv is
sniffed from its first 64 KB among , ; tab and | (a comma when unclear), a .tsv's is a tab. Units and rows as for a
spreadsheet (``_xlsx``): the header is the first record with two or more values, every later non-empty record
one line read with it, one unit of at most 50 rows or blocks of 50. Location: ``{"sheet": NAME, "row": N}`` with NAME the file
name without its suffix (the sheet a spreadsheet program opens it as) and N the record's number as a spreadsheet
shows it: the header row is 1, a blank line counts as a row, a quoted field's line breaks do not. Title: the file
name. A field longer than the csv module's limit (128 KB) → ``oversized_record``; a record it cannot parse (a NUL
byte) → ``corrupt``.
"""

from __future__ import annotations

import csv
import io

from lens.reader.formats import Limits, Unit, Unreadable
from lens.reader.formats._common import one_line, sheet_units

_SNIFF_CHARS = 65_536


def _dialect(text: str, name: str) -> type[csv.Dialect] | csv.Dialect:
    if name.lower().endswith(".tsv"):
        return csv.excel_tab
    try:
        return csv.Sniffer().sniff(text[:_SNIFF_CHARS], delimiters=",;\t|")
    except csv.Error:
        return csv.excel


def extract(data: bytes, name: str, limits: Limits) -> list[Unit]:
    text = data.decode("utf-8-sig", errors="replace")
    reader = csv.reader(io.StringIO(text, newline=""), _dialect(text, name))
    base = name.rsplit("/", 1)[-1]
    sheet = base[: base.rfind(".")] if "." in base[1:] else base
    rows = []
    try:
        for n, record in enumerate(reader, 1):
            rows.append((n, [one_line(x) for x in record]))
    except csv.Error as e:
        reason = "oversized_record" if "field larger than field limit" in str(e) else "corrupt"
        raise Unreadable(reason, f"line {reader.line_num}: {e}") from e
    return sheet_units(rows, sheet, base)
