"""PowerPoint (.pptx), through python-pptx (MIT).

Units: one per slide that has text, in slide order (hidden slides included): the title first, then the text of
every other shape in the slide's order (groups opened; a table's rows read with their header), then the speaker
notes after a line "Speaker notes:" — notes often hold what the slide only hints at. Location: ``{"slide": N}``
(1-based, as the deck numbers its slides) for every line. Title: the deck's core-properties title when it reads
as one, else the file name; then the slide's title. Charts, pictures and SmartArt text are not read.
"""

from __future__ import annotations

import io

from lens.reader.formats import Limits, Unit
from lens.reader.formats._common import document_title, one_line, table_lines, unit_title


def _shape_lines(shapes, skip_id: int | None) -> list[str]:
    lines: list[str] = []
    for shape in shapes:
        if shape.shape_id == skip_id:  # the title, already read first
            continue
        if hasattr(shape, "shapes"):  # a group
            lines += _shape_lines(shape.shapes, skip_id)
        elif shape.has_text_frame:
            lines += _frame_lines(shape.text_frame)
        elif shape.has_table:
            rows = [(r, [one_line(c.text) for c in row.cells]) for r, row in enumerate(shape.table.rows, 1)]
            lines += [line for _, line in table_lines(rows)]
    return lines


def _frame_lines(frame) -> list[str]:
    # a paragraph's line breaks come as vertical tabs
    return [x for p in frame.paragraphs for x in p.text.replace("\v", "\n").split("\n") if x.strip()]


def extract(data: bytes, name: str, limits: Limits) -> list[Unit]:
    import pptx  # heavy (lxml, Pillow): loaded only when a .pptx is read

    deck = pptx.Presentation(io.BytesIO(data))
    title = document_title(deck.core_properties.title, name)
    units = []
    for n, slide in enumerate(deck.slides, 1):
        title_shape = slide.shapes.title
        heading = _frame_lines(title_shape.text_frame) if title_shape is not None else []
        lines = heading + _shape_lines(slide.shapes, title_shape.shape_id if title_shape is not None else None)
        frame = slide.notes_slide.notes_text_frame if slide.has_notes_slide else None
        notes = _frame_lines(frame) if frame is not None else []
        if notes:
            lines += ["Speaker notes:"] + notes
        lines = [one_line(x) for x in lines if x.strip()]
        if lines:
            units.append(Unit("\n".join(lines), unit_title(title, " ".join(heading)), {"slide": n}))
    return units
