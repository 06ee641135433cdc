"""Jupyter notebooks (.ipynb, nbformat 4, and 3's worksheets), through the standard library's ``json``.

A cell's lines: its source (markdown, code or raw), then a code cell's text outputs — streams, the text/plain of
results and displays, an error's "Name: value" — at most 200 lines per output (a long printout would bury the
notebook's prose). Units: runs of consecutive cells; a markdown cell that starts with a heading ("# …") starts a
new unit, and a unit holds at most 10 cells. Location: each line's ``{"cell": N}``, N 1-based over all the
notebook's cells (empty ones included); the unit's is its first cell's. Title: the notebook metadata's title
when it has one, else the file name; then the heading that opens the unit.
"""

from __future__ import annotations

import json

from lens.reader.formats import Limits, Unit, Unreadable
from lens.reader.formats._common import Blocks, document_title

MAX_CELLS = 10
MAX_OUTPUT_LINES = 200


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _output_lines(output: dict) -> list[str]:
    kind = output.get("output_type")
    if kind == "stream":
        text = _text(output.get("text"))
    elif kind in ("execute_result", "display_data", "pyout"):
        data = output.get("data") or {}
        text = _text(data.get("text/plain", output.get("text")))
    elif kind in ("error", "pyerr"):
        text = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    else:
        return []
    return text.split("\n")[:MAX_OUTPUT_LINES]


def _heading(source: str) -> str | None:
    first = source.lstrip().split("\n", 1)[0]
    if not first.startswith("#"):
        return None
    return first.lstrip("#").strip() or None


def extract(data: bytes, name: str, limits: Limits) -> list[Unit]:
    try:
        notebook = json.loads(data.decode("utf-8-sig", errors="replace"))
    except ValueError as e:
        raise Unreadable("corrupt", f"not JSON ({e})") from e
    if not isinstance(notebook, dict):
        raise Unreadable("corrupt", "not a notebook (the JSON is not an object)")
    cells = notebook.get("cells")
    if cells is None:  # nbformat 3
        cells = [c for sheet in notebook.get("worksheets") or [] for c in sheet.get("cells") or []]
    if not isinstance(cells, list):
        raise Unreadable("corrupt", "not a notebook ('cells' is not a list)")
    metadata = notebook.get("metadata") if isinstance(notebook.get("metadata"), dict) else {}
    blocks = Blocks(document_title(metadata.get("title"), name), MAX_CELLS)
    for n, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            continue
        source = _text(cell.get("source", cell.get("input")))
        if cell.get("cell_type") in ("markdown", "heading"):
            heading = _heading(source)
            if heading:
                blocks.start(heading)
        lines = source.split("\n")
        for output in cell.get("outputs") or []:
            if isinstance(output, dict):
                lines += _output_lines(output)
        blocks.add(lines, {"cell": n})
    return blocks.done()
