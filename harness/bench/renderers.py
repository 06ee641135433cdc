"""An article written as a PDF or a Word file, byte for byte the same on every build (format-invariance snapshots).

``lens bench snapshot --as pdf|docx`` writes D_n with one document per article instead of one text file, so the
same questions can be asked over the same articles in another format (issue 58, "Format invariance"):

- **PDF** (reportlab, the bench extra): the title is the document's Title metadata and its first line (a larger
  size), then one paragraph per sentence, wrapped to the page's width and flowing onto further pages; an empty
  sentence is an empty paragraph. The fonts are TrueType fonts embedded as subsets — DejaVu Sans where the
  system has it (wide Unicode coverage), else reportlab's own Bitstream Vera — so accented names extract as
  written. A character that font has no glyph for is drawn in the first fallback font present that has one: the
  Noto Sans script fonts (Debian's fonts-noto-core: Devanagari, Bengali, Tamil, Thai, Myanmar, Arabic, …), Droid
  Sans Fallback (fonts-droid-fallback: CJK and kana), Nanum Gothic (fonts-nanum: Hangul); reportlab draws glyphs
  without shaping, which changes how a complex script looks, not the text that comes back. A character no font
  has (private-use ones) is not drawn and does not come back: ``undrawable`` counts them. An article every
  character of which DejaVu Sans draws is written byte for byte as without the fallbacks.
  Written with reportlab's ``invariant`` mode (fixed creation date and document id).
- **Word** (python-docx, a core dependency): the core properties' title, then the title as a "Title" paragraph and
  one paragraph per sentence (empty ones kept, so paragraph k + 2 is sentence k). The zip is rewritten with fixed
  member times, and the core properties' dates are fixed.

``writer_info(fmt)`` names the library, its version and the fonts: the manifest records it, since a different
writer version or font gives other bytes (and a rebuild over an existing stage is then refused, as for any
stage that differs).
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import importlib.metadata
import io
import re
import zipfile
from pathlib import Path
from typing import Sequence
from xml.sax.saxutils import escape

import docx

__all__ = [
    "FILE_FORMATS",
    "SUFFIX",
    "render",
    "render_pdf",
    "render_docx",
    "writer_info",
    "pdf_font",
    "pdf_fallback_fonts",
    "undrawable",
]

FILE_FORMATS = ("text", "pdf", "docx")
SUFFIX = {"text": "", "pdf": ".pdf", "docx": ".docx"}

_FONT_CANDIDATES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/Library/Fonts/DejaVuSans.ttf",
)
# where a glyph DejaVu Sans lacks is looked for, in this order (each pattern's matches sorted by name)
_FALLBACK_FONTS = (
    "/usr/share/fonts/truetype/noto/NotoSans*-Regular.ttf",
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
    "/usr/share/fonts/truetype/nanum/NanumGothic.ttf",
)
_FONT_NAME = "LensSnapshotSans"
_FIXED_DATE = datetime.datetime(2000, 1, 1, 0, 0, 0)
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
# characters XML 1.0 cannot hold (python-docx refuses them; a PDF paragraph is XML-like markup too)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("", text)


@functools.lru_cache(maxsize=1)
def pdf_font() -> tuple[str, str]:
    """(path, sha256) of the TrueType font PDFs are written in: DejaVu Sans if present, else reportlab's Vera."""
    import reportlab

    for cand in _FONT_CANDIDATES:
        if Path(cand).is_file():
            path = Path(cand)
            break
    else:
        path = Path(reportlab.__file__).parent / "fonts" / "Vera.ttf"
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


@functools.lru_cache(maxsize=1)
def pdf_fallback_fonts() -> tuple[tuple[str, str], ...]:
    """(path, sha256) of each fallback font present, in the order a missing glyph is looked for (module docstring)."""
    paths = [p for pattern in _FALLBACK_FONTS for p in sorted(Path("/").glob(pattern.lstrip("/")))]
    return tuple((str(p), hashlib.sha256(p.read_bytes()).hexdigest()) for p in paths if p.is_file())


@functools.lru_cache(maxsize=1)
def _pdf_styles():
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    pdfmetrics.registerFont(TTFont(_FONT_NAME, pdf_font()[0]))
    title = ParagraphStyle("lens-title", fontName=_FONT_NAME, fontSize=14, leading=18, spaceAfter=8)
    body = ParagraphStyle("lens-body", fontName=_FONT_NAME, fontSize=10, leading=13, spaceAfter=4)
    return title, body


def _glyphs(font_name: str) -> dict:
    from reportlab.pdfbase import pdfmetrics

    return pdfmetrics.getFont(font_name).face.charToGlyph


@functools.lru_cache(maxsize=1)
def _fallbacks() -> tuple[tuple[str, dict], ...]:
    """The fallback fonts registered with reportlab: (font name, its character map), in order (loaded on first need)."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    fonts = []
    for k, (path, _sha) in enumerate(pdf_fallback_fonts()):
        name = f"{_FONT_NAME}Fallback{k}"
        pdfmetrics.registerFont(TTFont(name, path))
        fonts.append((name, _glyphs(name)))
    return tuple(fonts)


@functools.lru_cache(maxsize=4096)
def _font_of(ch: str) -> str | None:
    """The font that draws ``ch``: the main font (``_FONT_NAME``) if it can, else the first fallback that can, else None."""
    _pdf_styles()
    if ch.isspace() or ord(ch) in _glyphs(_FONT_NAME):
        return _FONT_NAME
    return next((name for name, glyphs in _fallbacks() if ord(ch) in glyphs), None)


def _markup(text: str) -> str:
    """``text`` as reportlab paragraph markup: escaped, each run of characters the main font cannot draw set in the
    fallback font that can (a character no font draws stays in the main font, and is not drawn)."""
    runs: list[tuple[str, list[str]]] = []
    for ch in _clean(text):
        font = _font_of(ch) or _FONT_NAME
        if ch.isspace() and runs and ord(ch) in _glyphs(runs[-1][0]):
            font = runs[-1][0]  # a space stays in the run it is in (a font change at it loses it in extraction)
        if runs and runs[-1][0] == font:
            runs[-1][1].append(ch)
        else:
            runs.append((font, [ch]))
    return "".join(
        escape("".join(chars)) if font == _FONT_NAME else f'<font name="{font}">{escape("".join(chars))}</font>'
        for font, chars in runs
    )


def undrawable(text: str) -> set[str]:
    """The characters of ``text`` no PDF font has a glyph for (they are not drawn, so they do not come back)."""
    return {ch for ch in set(text) if _font_of(ch) is None}


def render_pdf(title: str, sentences: Sequence[str]) -> bytes:
    """The article as a PDF (see the module docstring)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    title_style, body_style = _pdf_styles()
    buf = io.BytesIO()
    doc = SimpleDocTemplate(
        buf, pagesize=A4, title=_clean(title), author="", subject="", creator="lens bench snapshot", invariant=1
    )
    # Paragraph text is markup: escape it; an empty paragraph still takes its line
    story = [Paragraph(_markup(title), title_style)]
    story += [Paragraph(_markup(s) or "&nbsp;", body_style) for s in sentences]
    doc.build(story)
    return buf.getvalue()


def _fixed_zip(data: bytes) -> bytes:
    """The zip rewritten with fixed member times and modes, members in their order: the same bytes every build."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            member = zipfile.ZipInfo(info.filename, date_time=_ZIP_DATE)
            member.compress_type = zipfile.ZIP_DEFLATED
            member.external_attr = 0o644 << 16
            z.writestr(member, src.read(info.filename))
    return out.getvalue()


def render_docx(title: str, sentences: Sequence[str]) -> bytes:
    """The article as a Word file (see the module docstring)."""
    document = docx.Document()
    props = document.core_properties
    props.title = _clean(title)
    props.author = props.last_modified_by = ""
    props.revision = 1
    props.created = props.modified = _FIXED_DATE
    document.add_heading(_clean(title), level=0)  # the "Title" style: lens reads it as the unit's heading
    for s in sentences:
        document.add_paragraph(_clean(s))
    buf = io.BytesIO()
    document.save(buf)
    return _fixed_zip(buf.getvalue())


def render(fmt: str, title: str, sentences: Sequence[str]) -> bytes:
    """The article's file in ``fmt`` ("pdf" | "docx"); text files are ``snapshots.render_article``."""
    if fmt == "pdf":
        return render_pdf(title, sentences)
    if fmt == "docx":
        return render_docx(title, sentences)
    raise ValueError(f"no renderer for {fmt!r} (known: pdf, docx)")


def writer_info(fmt: str) -> dict:
    """What wrote the files of ``fmt``: the library and version (and the PDF fonts with their sha256)."""
    if fmt == "pdf":
        path, sha = pdf_font()
        fallbacks = pdf_fallback_fonts()
        return {
            "library": "reportlab",
            "version": importlib.metadata.version("reportlab"),
            "font": Path(path).name,
            "font_sha256": sha,
            "fallback_fonts": len(fallbacks),  # their names and contents, in order, in one hash
            "fallback_fonts_sha256": hashlib.sha256(
                "".join(f"{Path(p).name}\t{h}\n" for p, h in fallbacks).encode()
            ).hexdigest(),
        }
    if fmt == "docx":
        return {"library": "python-docx", "version": importlib.metadata.version("python-docx")}
    return {}
