"""PDF with a text layer, through pypdfium2 (PDFium, the PDF engine of Chromium; BSD-3/Apache-2.0).

Units: one per page that has text, in page order; a page with no text (a figure, a blank page) gives none.
Location: ``{"page": N}``, N = the PDF's page index + 1 (what a viewer's "go to page" takes), for every line.
Title: the PDF's Title metadata when it reads as a title, else the file name; the same on every page.
Text: PDFium's reading order, one line per text line; a table's row comes out as one line, label then values
("Net revenues 6,489 7,500 7,017"), with columns in their left-to-right order (benchmarks/results/formats).
Skips: a password needed to open it → ``encrypted`` (a PDF whose owner password only restricts printing or
copying opens and is read); more pages than ``limits.max_pages`` → ``too_many_pages``; pages but no text on any
of them (a scan) → ``no_text_layer``; anything PDFium cannot open → ``corrupt``.
"""

from __future__ import annotations

import re

from lens.reader.formats import Limits, Unit, Unreadable
from lens.reader.formats._common import document_title

# control characters PDFium leaves in text (\x02 for a soft hyphen at a line end, \x00, form feeds), not tab/LF
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffe\uffff]")


def page_text(raw: str) -> str:
    """PDFium's text of one page with CRLF as LF, control characters removed, trailing spaces and blank lines
    dropped."""
    lines = (_CONTROL.sub("", x).rstrip() for x in raw.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return "\n".join(x for x in lines if x.strip())


def extract(data: bytes, name: str, limits: Limits) -> list[Unit]:
    import pypdfium2 as pdfium  # heavy (PDFium binary): loaded only when a PDF is read

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as e:
        if getattr(e, "err_code", None) in (pdfium.raw.FPDF_ERR_PASSWORD, pdfium.raw.FPDF_ERR_SECURITY):
            raise Unreadable("encrypted", "a password is needed to open this PDF") from e
        raise Unreadable("corrupt", f"PDFium cannot open it ({e})") from e
    try:
        pages = len(pdf)
        if pages > limits.max_pages:
            raise Unreadable("too_many_pages", f"{pages:,} pages (at most {limits.max_pages:,}: reader.max_pages)")
        title = document_title(pdf.get_metadata_dict().get("Title"), name)
        units = []
        for i in range(pages):
            page = pdf[i]
            try:
                textpage = page.get_textpage()
                try:
                    text = page_text(textpage.get_text_range())
                finally:
                    textpage.close()
            finally:
                page.close()
            if text:
                units.append(Unit(text, title, {"page": i + 1}))
    finally:
        pdf.close()
    if pages and not units:
        raise Unreadable(
            "no_text_layer",
            ("its page has" if pages == 1 else f"none of its {pages:,} pages has")
            + " a text layer (a scan or images only): OCR is needed to read it, and lens does not do OCR",
        )
    return units
