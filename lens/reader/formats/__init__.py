"""The table of document formats: which module reads a file of each suffix into units, and what a unit is.

A format module has one function, ``extract(data: bytes, name: str, limits: Limits) -> list[Unit]``: the file's
bytes in, its units out, in document order; it raises :class:`Unreadable` for a file it cannot read. Adding a
format is one module (its docstring names its library, its units and its location fields) and one line in
:data:`FORMATS`. The rest of lens never asks what format a unit came from.

**Units.** A unit is what the prior ranks: the natural page of its format (a PDF page, a slide, a sheet or a
block of rows, an e-mail message, a run of notebook cells, a run of Word paragraphs under a heading). Its
``text`` is lines joined by ``"\\n"``; a table row is one line, each value with its column's header
(``"Name: Skerrow Light · Height (m): 31 · First lit: 1874"``).

**Locations.** ``location`` says where the unit starts, one of ``{"page": N}`` (PDF, 1-based), ``{"slide": N}``,
``{"sheet": NAME, "row": N}`` (the row number the spreadsheet shows; a CSV's sheet is its file name without the
suffix, as a spreadsheet program names it, and its header row is row 1), ``{"paragraph": N}`` (Word and
OpenDocument text: 1-based over the body's paragraphs, headings and empty paragraphs included, tables not),
``{"table": T, "row": R}`` (a row of the T-th table in a Word or OpenDocument text body, its header row 1),
``{"message": N}`` (e-mail, 1-based in an mbox; an .eml is message 1), ``{"cell": N}`` (notebook, 1-based over
all cells) or ``{"section": N}`` (EPUB: the N-th document of the book's spine, its reading order; spine
documents are chapters in most books, but a cover, a title page or half a chapter in others, so "section").
When a unit's lines lie at different places (rows of a sheet, paragraphs, notebook cells, table rows), its
``line_locations`` holds one location per line of ``text``, so a sentence is cited at its own row or
paragraph; it is empty when every line is at ``location`` (a page, a slide, a message, a section).
:meth:`Unit.line_location` answers for either case.

**Titles.** A unit's ``title`` is its file's title, then `` — `` and the unit's own heading when it has one: the
file's title is the document's title metadata (PDF Title, Office core properties, EPUB dc:title, an .eml's
Subject) when it has one that reads as a title, else the file name; the unit's heading is the slide's title, the
sheet's name, the Word heading the paragraphs sit under, the mbox message's subject, the notebook heading that
opens the cell run, the EPUB section's first heading. A PDF page has no heading of its own: every page carries
the file's title, and its page number is in ``location`` (a "p. 3" in the title would only give the prior's
title signal a number to match).

**Skips.** :class:`Unreadable` carries a reason from :data:`REASONS` and a message that says what is wrong
without the path (the caller puts the path in front).

The format libraries are imported inside each format module's ``extract``, not at the top, so that
``import lens`` stays fast and a folder without PDFs never loads pdfium; :func:`extract` turns a missing library
into ``missing_library``.
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any, Callable

__all__ = [
    "Unit",
    "Unreadable",
    "REASONS",
    "Limits",
    "Format",
    "FORMATS",
    "extract",
    "format_of",
    "open_zip",
    "read_member",
]

REASONS = frozenset(
    {
        "encrypted",  # a password is needed
        "no_text_layer",  # a scan or images only: OCR would be needed
        "corrupt",  # truncated, malformed, or the parser failed or crashed on it
        "oversized",  # the file is larger than reader.max_file_bytes (as for a text file)
        "oversized_record",  # a zip whose members inflate past reader.max_file_bytes, or a field past a bound
        "too_many_pages",  # more pages than reader.max_pages
        "timeout",  # extraction ran past reader.extraction_timeout_s
        "missing_library",  # the format's library is not installed (the message names the pip extra)
    }
)


@dataclass(frozen=True)
class Unit:
    """One unit of a document: its text, its title and where in the file it starts (see the module docstring)."""

    text: str
    title: str
    location: dict
    line_locations: tuple[dict, ...] = ()

    def __post_init__(self) -> None:
        if self.line_locations and len(self.line_locations) != self.text.count("\n") + 1:
            raise ValueError(
                f"unit {self.title!r} at {self.location}: {len(self.line_locations)} line locations for "
                f"{self.text.count(chr(10)) + 1} lines"
            )

    def line_location(self, line: int) -> dict:
        """Where the 0-based ``line`` of ``text`` is."""
        return self.line_locations[line] if self.line_locations else self.location


class Unreadable(Exception):
    """A file lens cannot read: ``reason`` (one of :data:`REASONS`) and a message saying why, without the path."""

    def __init__(self, reason: str, message: str) -> None:
        if reason not in REASONS:
            raise ValueError(f"unknown skip reason {reason!r} (known: {', '.join(sorted(REASONS))})")
        super().__init__(reason, message)
        self.reason = reason
        self.message = message

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


@dataclass(frozen=True)
class Limits:
    """The bounds one file is read under (``Limits.of(reader_settings)`` takes them from ``ReaderSettings``)."""

    max_file_bytes: int = 20_000_000  # the file, and the sum of a zip's inflated members
    max_pages: int = 2_000  # PDF pages

    @classmethod
    def of(cls, settings: Any) -> Limits:
        """The limits of a ``ReaderSettings`` (any object with ``max_file_bytes`` and ``max_pages``)."""
        return cls(max_file_bytes=settings.max_file_bytes, max_pages=settings.max_pages)


@dataclass(frozen=True)
class Format:
    """One row of the table: the module whose ``function`` reads the format, and how it is run.

    ``isolate``: parse in a worker process (a C parser — pdfium, lxml — can crash or hang on a hostile file);
    False for the pure-Python stdlib readers, which may run in-process on small files. ``zipped``: an Office,
    OpenDocument or EPUB zip, checked by :func:`open_zip` before its library sees it. ``extra``: the pip extra
    that installs the library (None: a core dependency or the standard library).
    """

    module: str
    name: str
    function: str = "extract"
    isolate: bool = True
    zipped: bool = False
    extra: str | None = None

    def reader(self) -> Callable[[bytes, str, Limits], list[Unit]]:
        return getattr(import_module(self.module), self.function)

    def read(
        self, source: bytes | str | os.PathLike[str], name: str | None = None, limits: Limits | None = None
    ) -> list[Unit]:
        """The units of ``source`` (its bytes, or a path read here), at most ``limits.max_file_bytes`` of it;
        raises :class:`Unreadable`. Any other failure of the parser on the file is ``corrupt``."""
        limits = limits or Limits()
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
            name = name or f"document ({self.name})"
            if len(data) > limits.max_file_bytes:
                raise Unreadable("oversized", f"larger than {limits.max_file_bytes:,} bytes (reader.max_file_bytes)")
        else:
            data = _read_bounded(source, limits.max_file_bytes)
            name = name or Path(source).name
        if self.zipped:
            open_zip(data, limits).close()
        try:
            reader = self.reader()
        except ImportError as e:
            hint = f"pip install 'lens-search[{self.extra}]'" if self.extra else "pip install lens-search"
            raise Unreadable("missing_library", f"reading {self.name} files needs {e.name or e}: {hint}") from e
        try:
            return reader(data, name, limits)
        except Unreadable:
            raise
        except MemoryError as e:
            raise Unreadable("corrupt", f"the {self.name} parser ran out of memory on it") from e
        except Exception as e:  # a hostile file can raise anything from a parser; it skips that file only
            raise Unreadable("corrupt", f"not a readable {self.name} file ({type(e).__name__}: {e})"[:500]) from e


_STDLIB = "lens.reader.formats."
# suffix (lower case) -> format; adding a format is one module and one line here
FORMATS: dict[str, Format] = {
    ".pdf": Format(_STDLIB + "_pdf", "PDF"),
    ".docx": Format(_STDLIB + "_docx", "Word", zipped=True),
    ".pptx": Format(_STDLIB + "_pptx", "PowerPoint", zipped=True),
    ".xlsx": Format(_STDLIB + "_xlsx", "Excel", zipped=True),
    ".xlsm": Format(_STDLIB + "_xlsx", "Excel", zipped=True),
    ".csv": Format(_STDLIB + "_csv", "CSV", isolate=False),
    ".tsv": Format(_STDLIB + "_csv", "TSV", isolate=False),
    ".eml": Format(_STDLIB + "_email", "e-mail", function="extract_eml", isolate=False),
    ".mbox": Format(_STDLIB + "_email", "mbox", function="extract_mbox", isolate=False),
    ".epub": Format(_STDLIB + "_epub", "EPUB", zipped=True),
    ".ipynb": Format(_STDLIB + "_ipynb", "notebook", isolate=False),
    ".odt": Format(_STDLIB + "_odf", "OpenDocument text", function="extract_odt", zipped=True),
    ".ods": Format(_STDLIB + "_odf", "OpenDocument spreadsheet", function="extract_ods", zipped=True),
    ".odp": Format(_STDLIB + "_odf", "OpenDocument presentation", function="extract_odp", zipped=True),
}


def format_of(suffix: str) -> Format | None:
    """The format that reads files ending in ``suffix`` (".PDF" and "pdf" too), or None."""
    suffix = suffix.lower()
    return FORMATS.get(suffix if suffix.startswith(".") else "." + suffix)


def extract(
    source: bytes | str | os.PathLike[str], suffix: str, limits: Limits | None = None, *, name: str | None = None
) -> list[Unit]:
    """The units of one document, in the calling process (no time limit, no crash isolation: for those, see
    ``lens.reader._extraction``). ``name`` (default: the path's file name) gives the title when the document has
    none. Raises :class:`Unreadable`; ``ValueError`` if no format reads ``suffix``."""
    fmt = format_of(suffix)
    if fmt is None:
        raise ValueError(f"no format reads {suffix!r} files (known: {' '.join(sorted(FORMATS))})")
    return fmt.read(source, name, limits)


def _read_bounded(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise Unreadable("corrupt", f"cannot be opened ({e.strerror or e})") from e
    if len(data) > max_bytes:
        raise Unreadable("oversized", f"larger than {max_bytes:,} bytes (reader.max_file_bytes)")
    return data


# A deflate stream inflates at most ~1,032:1, and the XML of real Office files well under 100:1; a member that
# claims more is a bomb or a lie. Small members are exempt (a 1 KB run of spaces legitimately compresses 1000:1).
_MAX_RATIO = 200
_RATIO_FLOOR = 1 << 20
_MAX_MEMBERS = 20_000
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")


def open_zip(data: bytes, limits: Limits) -> zipfile.ZipFile:
    """The zip of an Office, OpenDocument or EPUB file, checked before anything is inflated: at most
    ``limits.max_file_bytes`` in all once inflated (by the members' declared sizes — the standard library's
    reader stops a member at its declared size, and a member that inflates to a different size fails its CRC,
    so the declared sizes bound what inflating can produce), no member compressed beyond a sane ratio, stored or
    deflated members only. Raises ``oversized_record``, ``encrypted`` or ``corrupt``."""
    if data[:8] == _OLE_MAGIC:
        if _ENCRYPTED_PACKAGE in data:
            raise Unreadable("encrypted", "a password-protected Office file (an encrypted package)")
        raise Unreadable("corrupt", "an old binary Office file (.doc/.xls/.ppt) under a new suffix, not a zip")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except Exception as e:  # BadZipFile, NotImplementedError (a version from the future), struct errors …
        raise Unreadable("corrupt", f"not a readable zip archive ({type(e).__name__}: {e})") from e
    try:
        members = zf.infolist()
        if len(members) > _MAX_MEMBERS:
            raise Unreadable("oversized_record", f"{len(members):,} zip members (at most {_MAX_MEMBERS:,})")
        total = 0
        for m in members:
            if m.flag_bits & 0x1:
                raise Unreadable("encrypted", f"zip member {m.filename} is encrypted")
            if m.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise Unreadable("corrupt", f"zip member {m.filename} uses compression method {m.compress_type}")
            total += m.file_size
            if total > limits.max_file_bytes:
                raise Unreadable(
                    "oversized_record",
                    f"its zip members inflate to more than {limits.max_file_bytes:,} bytes (reader.max_file_bytes)",
                )
            if m.file_size > _RATIO_FLOOR and m.file_size > _MAX_RATIO * max(m.compress_size, 1):
                raise Unreadable(
                    "oversized_record",
                    f"zip member {m.filename} inflates {m.file_size // max(m.compress_size, 1):,}:1 "
                    f"(at most {_MAX_RATIO}:1)",
                )
    except BaseException:
        zf.close()
        raise
    return zf


def read_member(zf: zipfile.ZipFile, member: str, max_bytes: int) -> bytes:
    """One member of a checked zip, inflated in chunks and never past ``max_bytes``; KeyError if absent."""
    out, n = [], 0
    with zf.open(member) as f:
        while chunk := f.read(1 << 16):
            n += len(chunk)
            if n > max_bytes:
                raise Unreadable("oversized_record", f"zip member {member} inflates past {max_bytes:,} bytes")
            out.append(chunk)
    return b"".join(out)
