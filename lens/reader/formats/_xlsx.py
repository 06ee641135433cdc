"""Excel workbooks (.xlsx, .xlsm), through openpyxl (MIT), read-only and with the values the workbook last
calculated (a formula's cached result; a formula never calculated, as in a file a script wrote, reads empty).

Units: each worksheet's rows, one unit per sheet of at most 50 data rows, else blocks of 50 rows (chart sheets
have no rows). The header is the sheet's first row with two or more values (rows above it, such as a title in
A1, are read as lines of their own; a one-column sheet's header is its first row); every later non-empty row is
one line read with it ("Name: Skerrow Light · Height (m): 31 · First lit: 1874"; a column without a header is
named by its letter, empty cells are left out; numbers as the sheet shows them by default, dates as ISO dates). Location: each line's
``{"sheet": NAME, "row": N}``, N the row number the spreadsheet shows; the unit's is its first row's. Title: the
workbook's title property when it reads as one, else the file name; then the sheet's name.
"""

from __future__ import annotations

import io

from lens.reader.formats import Limits, Unit
from lens.reader.formats._common import cell_text, document_title, sheet_units, unit_title


def extract(data: bytes, name: str, limits: Limits) -> list[Unit]:
    import openpyxl  # heavy: loaded only when a workbook is read

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        title = document_title(book.properties.title, name)
        units = []
        for sheet in book.worksheets:
            sheet.reset_dimensions()  # the stored dimension can be wrong or missing: read every row there is
            rows = (
                (n, [cell_text(v) for v in values]) for n, values in enumerate(sheet.iter_rows(values_only=True), 1)
            )
            units += sheet_units(rows, sheet.title, unit_title(title, sheet.title))
        return units
    finally:
        book.close()
