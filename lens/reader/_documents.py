"""Documents as lens reads them, and their sentences: a text file, a container record or a unit of a document
format (a PDF page, a slide, a block of sheet rows, …), each segmented into the sentences readings name and
evidence cites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from lens._files import sha256_hex
from lens._terms import base_title, fold, title_key
from lens.reader.formats import FORMATS, Unit

__all__ = ["Sentence", "Document", "split_sentences", "unit_documents", "source_label"]


CONTAINER_SUFFIXES = (".jsonl", ".jsonl.bz2", ".bz2", ".ndjson")


_TEXT_SUFFIXES = frozenset(".txt .md .markdown .rst .text .html .htm .json .xml .org .tex .log".split())


def _file_stem(name: str) -> str:
    """The file name without a known text or document extension ("notes.md" -> "notes"; "A. Smith" stays)."""
    i = name.rfind(".")
    return name[:i] if i > 0 and (name[i:].lower() in _TEXT_SUFFIXES or name[i:].lower() in FORMATS) else name


def source_label(path: str, title: str) -> str:
    """How a passage's document is named to the model: its path without a known text or document extension, then
    its title ("reports/annual — Annual Report 2023"). The same text read from ``notes.txt``, ``notes.pdf`` or
    ``notes.docx`` is shown alike, so a reading or an answer depends on what the document says, not on the
    format it is kept in (the format-invariance runs of issue 58: the 1.5B answered 11 of 125 questions
    differently when only ".pdf" in this label differed). The citation keeps the file's full name and place."""
    head, sep, name = path.rpartition("/")
    return f"{head}{sep}{_file_stem(name)} — {title}"


class _once:
    """A document's derived value computed on first use and kept in its ``__dict__`` — ``functools.cached_property``
    without the lock Python 3.11 takes on each use until the value is kept (≈ 2 µs, twice a document on a first
    survey's path). The values are pure: two threads at once at worst compute one twice."""

    def __init__(self, func):
        self.func = func
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner: type | None = None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.func(obj)
        return value


@dataclass(frozen=True)
class Sentence:
    """One segmentation unit of a document: text plus its 1-based line range in the source file (in a unit of a
    document format: in the unit's text) and, in a unit, where it stands in the file (``{"page": 3}``,
    ``{"sheet": "Lights", "row": 4}``, …; ``lens.reader.formats``)."""

    index: int
    text: str
    line_start: int
    line_end: int
    heading: bool = False
    location: dict | None = None

    @property
    def where(self) -> dict:
        """Where it stands in its file, as evidence cites it: its unit's place (a page, a row, …), else its first
        line (``{"line": N}``; a container record's line)."""
        return dict(self.location) if self.location else {"line": self.line_start}


@dataclass(frozen=True)
class Document:
    """One document as read from the folder. ``sha256`` is of the bytes read for it (file or container line)."""

    doc_id: str
    path: str
    title: str
    text: str
    sha256: str
    line: int | None = None  # 1-based line inside a container file, 1-based unit of a document format, None else
    kind: str = "text"  # "text" | "record" | "unit" (a page, slide, sheet block, message, … of a document format)
    # a container record's body: "lines" — one given sentence per line after the title; "prose" — a plain string
    # segmented on first use. Either way the record's text is held once (no second copy as a sentence list).
    _record_form: str | None = field(default=None, repr=False, compare=False)
    location: dict | None = None  # a unit's place in its file (lens.reader.formats.Unit.location)
    # a unit's per-line places, one per line after the title (empty: every line is at ``location``)
    line_locations: tuple[dict, ...] = field(default=(), repr=False, compare=False)

    @_once
    def sentences(self) -> tuple[Sentence, ...]:
        if self.kind == "unit":
            return _unit_sentences(self.text.split("\n", 1)[1] if "\n" in self.text else "", self)
        if self._record_form is not None:
            ln = self.line or 1
            body = self.text.split("\n", 1)[1] if "\n" in self.text else ""
            if self._record_form == "lines":  # sentence ids are the record's list positions (HotpotQA sent_ids)
                return tuple(Sentence(i, x, ln, ln) for i, x in enumerate(body.split("\n")) if x)
            return tuple(Sentence(i, x.text, ln, ln) for i, x in enumerate(split_sentences(body)))
        return tuple(split_sentences(self.text, title_first=True))

    @_once
    def lowered(self) -> str:
        """The text lowercased and accent-folded exactly as cues are (``lens._terms.fold``), for the prior's scan."""
        return fold(self.text)

    @_once
    def title_names(self) -> tuple[str, ...]:
        """Keys of the names this document goes by: its title, the title without a trailing
        "(disambiguation)", and for whole files the file name without a text extension."""
        names = [title_key(self.title)]
        base = base_title(self.title)
        if base != self.title:
            names.append(title_key(base))
        if self.kind == "unit":  # a unit's title is its file's, then " — " and its own heading
            names.append(title_key(self.title.split(" — ", 1)[0]))
        if self.line is None or self.kind == "unit":
            stem = _file_stem(self.name)
            if stem != self.title:
                names.append(title_key(stem))
        return tuple(dict.fromkeys(n for n in names if n))

    @property
    def name(self) -> str:
        """The file name without a container line suffix."""
        return self.path.rsplit("/", 1)[-1]

    def citation(self, first: int, last: int) -> str:
        """``path:lines`` for sentences ``first..last`` (inclusive indices)."""
        sents = self.sentences
        a, b = sents[first].line_start, sents[last].line_end
        return f"{self.path}:{a}" if a == b else f"{self.path}:{a}-{b}"


def _is_container(name: str) -> bool:
    low = name.lower()
    return low.endswith(CONTAINER_SUFFIXES)


def _suffix(name: str) -> str:
    i = name.rfind(".")
    return name[i:].lower() if i > 0 else ""


_ABBREV = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "st",
    "jr",
    "sr",
    "prof",
    "inc",
    "ltd",
    "co",
    "corp",
    "no",
    "vs",
    "etc",
    "e.g",
    "i.e",
    "u.s",
    "u.k",
    "mt",
    "ft",
    "gen",
    "col",
    "lt",
    "sgt",
    "rev",
    "fig",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "approx",
    "dept",
    "est",
    "op",
    "vol",
}


_BOUNDARY = re.compile(r"[.!?][\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


_HEADING = re.compile(r"^\s{0,3}(#{1,6}\s+\S|[A-Z][^.!?]{0,80}:\s*$)")


_BULLET = re.compile(r"^\s*([-*+•]|\d{1,3}[.)])\s+")


_UNDERLINE = re.compile(r"^\s*(=+|-+)\s*$")


def _split_line_block(block: list[tuple[int, str]]) -> list[tuple[str, int, int]]:
    """Split a paragraph (consecutive lines) into sentences with their line ranges."""
    joined = ""
    line_at: list[tuple[int, int]] = []  # (offset where the line starts in ``joined``, line number)
    for ln, text in block:
        if joined:
            joined += " "
        line_at.append((len(joined), ln))
        joined += text.strip()

    def line_of(offset: int) -> int:
        cur = line_at[0][1]
        for start, ln in line_at:
            if start <= offset:
                cur = ln
            else:
                break
        return cur

    out: list[tuple[str, int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(joined):
        end = m.start() + 1
        word = joined[max(0, joined.rfind(" ", 0, m.start()) + 1) : m.start()].lower().strip("\"'([")
        if word in _ABBREV or (len(word) == 1 and word.isalpha()):
            continue  # "Dr. Smith", "J. R. R. Tolkien"
        # a line break after sentence-final punctuation always ends a sentence; so does this boundary
        piece = joined[start : m.end()].strip()
        if piece:
            out.append((piece, line_of(start), line_of(end - 1)))
        start = m.end()
    tail = joined[start:].strip()
    if tail:
        out.append((tail, line_of(start), line_of(len(joined) - 1)))
    return out


def split_sentences(text: str, *, title_first: bool = False) -> list[Sentence]:
    """Segment text into sentences with 1-based line ranges.

    Blank lines end paragraphs; headings (Markdown ``#``, underlined titles, the first line when
    ``title_first``) and list items are units of their own; a line ending in sentence-final punctuation ends
    a sentence; inside a paragraph, sentences split at ``. `` boundaries, not after common abbreviations
    or initials.
    """
    units: list[tuple[str, int, int, bool]] = []
    block: list[tuple[int, str]] = []

    def flush() -> None:
        if block:
            units.extend((s, a, b, False) for s, a, b in _split_line_block(block))
            block.clear()

    lines = text.splitlines()
    seen_content = False
    for i, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line.strip():
            flush()
            continue
        nxt = lines[i] if i < len(lines) else ""
        is_title = title_first and not seen_content and len(line.strip()) <= 200
        seen_content = True
        if is_title or _HEADING.match(line) or (nxt and _UNDERLINE.match(nxt) and len(line) < 120):
            flush()
            units.append((line.strip().lstrip("#").strip(), i, i, True))
            continue
        if _UNDERLINE.match(line):
            continue
        if _BULLET.match(line):
            flush()
        block.append((i, line))
        if line.endswith((".", "!", "?", '."', ".'", ".)")):
            flush()
    flush()
    return [Sentence(k, s, a, b, h) for k, (s, a, b, h) in enumerate(units)]


def _unit_sentences(body: str, doc: Document) -> tuple[Sentence, ...]:
    """A unit's sentences, each with its place in the file. Lines of one place (a PDF page, a slide) are segmented
    as prose; a unit whose lines have places of their own (rows, paragraphs, cells) is segmented line by line, and
    a table row — its values with their headers — is one sentence whatever its punctuation."""
    if not doc.line_locations:
        return tuple(
            Sentence(x.index, x.text, x.line_start, x.line_end, x.heading, doc.location) for x in split_sentences(body)
        )
    out: list[Sentence] = []
    for i, (line, where) in enumerate(zip(body.split("\n"), doc.line_locations), 1):
        if not line.strip():
            continue
        if "row" in where:
            out.append(Sentence(len(out), line.strip(), i, i, False, where))
            continue
        for x in split_sentences(line):
            out.append(Sentence(len(out), x.text, i, i, x.heading, where))
    return tuple(out)


def unit_documents(path: str, units: Sequence[Unit]) -> list[Document]:
    """The documents of a document-format file: one per unit (``path#u<k>``, k from 1), its text the unit's title
    line then its text, its sha256 that of this text (what a reading of it read)."""
    docs = []
    for k, unit in enumerate(units, 1):
        if not unit.text.strip():
            continue
        text = f"{unit.title}\n{unit.text}"
        docs.append(
            Document(
                doc_id=f"{path}#u{k}",
                path=path,
                title=unit.title,
                text=text,
                sha256=sha256_hex(text),
                line=k,
                kind="unit",
                location=dict(unit.location),
                line_locations=tuple(dict(x) for x in unit.line_locations),
            )
        )
    return docs
