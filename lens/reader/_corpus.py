"""The raw-corpus reader: a folder of documents read as it is *now* (no index, nothing written), every file
through one guarded open; what it reads, skips and how: ``docs/pipeline.md`` § The folder as it is now.
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import fnmatch
import json
import operator
import os
import re
import stat
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator, Sequence

from lens._config import ReaderSettings
from lens._errors import LensError
from lens._files import sha256_hex
from lens._terms import base_title, fold, title_key
from lens.reader._extraction import Extractor
from lens.reader.formats import FORMATS, Unit, format_of

__all__ = [
    "CorpusError",
    "Sentence",
    "Document",
    "CorpusScan",
    "scan_corpus",
    "read_document",
    "split_sentences",
    "unit_documents",
]

CONTAINER_SUFFIXES = (".jsonl", ".jsonl.bz2", ".bz2", ".ndjson")
# files no format reads (a document format in the reader's table, lens.reader.formats.FORMATS, is read instead)
BINARY_SUFFIXES = (
    frozenset(
        ".png .jpg .jpeg .gif .bmp .tif .tiff .webp .ico .zip .gz .tgz .xz .7z .rar .zst .tar .exe .dll .so "
        ".dylib .o .a .class .jar .pyc .whl .bin .dat .db .sqlite .parquet .npy .npz .pkl .pt .gguf .mp3 .mp4 "
        ".wav .flac .ogg .avi .mov .mkv .woff .woff2 .ttf .otf .doc .xls .ppt".split()
    )
    - FORMATS.keys()
)
_HTML_SUFFIXES = (".html", ".htm", ".xhtml")
_TEXT_SUFFIXES = frozenset(".txt .md .markdown .rst .text .html .htm .json .xml .org .tex .log".split())


def _file_stem(name: str) -> str:
    """The file name without a known text or document extension ("notes.md" -> "notes"; "A. Smith" stays)."""
    i = name.rfind(".")
    return name[:i] if i > 0 and (name[i:].lower() in _TEXT_SUFFIXES or name[i:].lower() in FORMATS) else name


_SNIFF_BYTES = 8192


class CorpusError(LensError, OSError):
    """The folder itself cannot be read (missing, not a folder, unreadable)."""


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

    @cached_property
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

    @cached_property
    def lowered(self) -> str:
        """The text lowercased and accent-folded exactly as cues are (``lens._terms.fold``), for the prior's scan."""
        return fold(self.text)

    @cached_property
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


@dataclass
class CorpusScan:
    """The result of reading a folder: documents plus counts of what was read and skipped."""

    root: Path
    documents: list[Document]
    files: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    skipped: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    bad_encoding: int = 0  # files read although some bytes were not valid UTF-8 (U+FFFD in their place)
    ignore_unread: str | None = None  # why the .lensignore there was not read (no path was ignored), if so
    # what a question over this scan tells with its answer: the statistics store set aside or kept in memory
    notes: list[str] = field(default_factory=list)
    # from a survey (lens.reader._filestats): each document's statistics, their rows in the store, the store
    doc_stats: tuple | None = field(default=None, repr=False)

    @property
    def mb_per_s(self) -> float:
        return (self.bytes_read / 1e6) / self.seconds if self.seconds > 0 else 0.0

    def stats(self) -> dict:
        return {
            "root": str(self.root),
            "files": self.files,
            "documents": len(self.documents),
            "bytes": self.bytes_read,
            "seconds": round(self.seconds, 4),
            "mb_per_s": round(self.mb_per_s, 2),
            "skipped": dict(sorted(self.skipped.items())),
            "bad_encoding": self.bad_encoding,
            "problems": self.problems[:50],
        }


# --------------------------------------------------------------------------- listing


def _is_container(name: str) -> bool:
    low = name.lower()
    return low.endswith(CONTAINER_SUFFIXES)


def _suffix(name: str) -> str:
    i = name.rfind(".")
    return name[i:].lower() if i > 0 else ""


IGNORE_FILE = ".lensignore"
_IGNORE_MAX_BYTES = 1 << 20  # patterns are matched against every path: a larger file is not a list of patterns
_IGNORE_UNREAD = {
    "not_regular": "not a regular file",
    "symlink_outside": "a link out of the folder",
    "oversized": f"larger than {_IGNORE_MAX_BYTES:,} bytes",
    "binary": "binary",
    "unreadable": "unreadable",
}


def _ignore_patterns(root: Path, root_real: str) -> tuple[list[str], str | None]:
    """fnmatch patterns from ``<root>/.lensignore`` (one per line, ``#`` comments), matched on relative paths,
    and None; or no patterns and the line saying why the file was not read (it is read like a document: a FIFO,
    a link out or a file over 1 MiB is not)."""
    data = _read_bytes(os.path.join(root, IGNORE_FILE), _IGNORE_MAX_BYTES, root_real)
    if data == "vanished":  # no ignore file
        return [], None
    if isinstance(data, str):
        return [], f"{IGNORE_FILE}: not read ({_IGNORE_UNREAD.get(data, data)}); no paths are ignored"
    lines = _decode(data)[0].splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")], None


def _ignored(rel_path: str, patterns: list[str]) -> bool:
    name = rel_path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel_path, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


_NAME = operator.attrgetter("name")
_SCANDIR_FD = os.scandir in os.supports_fd
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _list_files(
    root: Path,
    settings: ReaderSettings,
    skipped: Counter,
    problems: list[str],
    root_real: str | None = None,
    patterns: list[str] | None = None,
    dirs: list[str] | None = None,
    sigs: tuple | None = None,
    known: Sequence[str] = (),
) -> list[str]:
    """Relative posix paths of the candidate files, sorted; skip reasons counted in ``skipped``. ``root_real``:
    the folder's real path (default: resolved now); ``patterns``: what to ignore (default: the .lensignore's);
    ``dirs``: where the directories listed are appended (their paths as walked); ``sigs``: two ``array``s
    ('Q', 'q') each listed file's stat signature is appended to, as (device, inode) and (size, mtime_ns,
    ctime_ns) — (0, 0) and (-1, -1, -1) for a file that could not be stat'ed — taken relative to its open
    directory while it is listed (no second walk of every path); ``known``: the last listing's paths, whose
    strings are handed out again where the same path comes at the same place (a million paths are then not held
    twice)."""
    out: list[str] = []
    root_real = root_real or _folder_real(root)
    if patterns is None:
        patterns, unread = _ignore_patterns(root, root_real)
        problems.extend([unread] if unread else [])

    ident, times = sigs if sigs is not None else (None, None)

    def walk(dir_path: str, rel: str, seen: set[str]) -> None:
        try:
            # listed through an open descriptor: a file's stat then resolves one name, not its whole path
            fd = os.open(dir_path, _DIR_FLAGS) if _SCANDIR_FD else None
        except FileNotFoundError:
            skipped["vanished"] += 1
            return
        except OSError as exc:
            skipped["unreadable"] += 1
            problems.append(f"{rel or '.'}: cannot list folder: {exc.strerror or exc}")
            return
        try:
            try:
                with os.scandir(dir_path if fd is None else fd) as it:
                    entries = sorted(it, key=_NAME)
            except FileNotFoundError:
                skipped["vanished"] += 1
                return
            except OSError as exc:
                skipped["unreadable"] += 1
                problems.append(f"{rel or '.'}: cannot list folder: {exc.strerror or exc}")
                return
            if dirs is not None:
                dirs.append(dir_path)
            for entry in entries:
                name = entry.name
                rel_path = f"{rel}/{name}" if rel else name
                if name.startswith("."):
                    skipped["hidden"] += 1
                    continue
                if patterns and _ignored(rel_path, patterns):
                    skipped["ignored"] += 1
                    continue
                try:
                    if entry.is_symlink():
                        target = os.path.realpath(os.path.join(dir_path, name))
                        if not _within(target, root_real):
                            skipped["symlink_outside"] += 1
                            continue
                        if not settings.follow_symlinks and os.path.isdir(target):
                            skipped["symlink_dir"] += 1
                            continue
                    if entry.is_dir(follow_symlinks=True):
                        full = os.path.join(dir_path, name)
                        real = os.path.realpath(full)
                        if real in seen:  # a loop through symlinks
                            continue
                        walk(full, rel_path, seen | {real})
                    elif entry.is_file(follow_symlinks=True):
                        if _suffix(name) in BINARY_SUFFIXES and not _is_container(name):
                            skipped["binary"] += 1
                            continue
                        k = len(out)
                        out.append(known[k] if k < len(known) and known[k] == rel_path else rel_path)
                        if ident is not None:
                            try:
                                st = entry.stat()
                            except OSError:
                                ident.extend((0, 0))
                                times.extend((-1, -1, -1))
                            else:
                                ident.extend((st.st_dev, st.st_ino))
                                times.extend((st.st_size, st.st_mtime_ns, st.st_ctime_ns))
                    else:
                        skipped["not_regular"] += 1
                except FileNotFoundError:
                    skipped["vanished"] += 1
                except OSError:
                    skipped["unreadable"] += 1
        finally:
            if fd is not None:
                os.close(fd)

    walk(str(root), "", {root_real})
    return out


# --------------------------------------------------------------------------- reading


@dataclass
class _FileResult:
    path: str
    documents: list[Document]
    nbytes: int = 0
    skip: str | None = None
    problems: list[str] = field(default_factory=list)
    malformed: int = 0  # container records skipped as malformed
    oversized: int = 0  # container records skipped as larger than max_file_bytes
    bad_encoding: bool = False  # some bytes were not valid UTF-8 (read with U+FFFD in their place)
    units: int = 0  # units of a document format read (pages, slides, sheet blocks, messages, …)

    def outcome(self) -> dict:
        """What reading the file gave, besides its documents (what the statistics store keeps per file)."""
        return {
            "skip": self.skip,
            "nbytes": self.nbytes,
            "bad": bool(self.bad_encoding),
            "malformed": self.malformed,
            "oversized": self.oversized,
            "problems": self.problems,
        }


def tally(outcome: dict, skipped: Counter, problems: list[str]) -> bool:
    """Count one file's ``outcome`` into a scan's ``skipped`` reasons and ``problems``; whether it was read."""
    problems.extend(outcome["problems"])
    if outcome["malformed"]:
        skipped["malformed_record"] += outcome["malformed"]
    if outcome["oversized"]:
        skipped["oversized_record"] += outcome["oversized"]
    if outcome["skip"]:
        skipped[outcome["skip"]] += 1
        return False
    return True


def _html_to_text(text: str) -> str:
    text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", text)
    # block-level ends become line breaks, so a minified page still yields its title as a line of its own
    text = re.sub(
        r"(?i)<br\s*/?>|</(?:p|h[1-6]|li|tr|div|title|head|header|footer|section|article|blockquote|pre|ul|ol"
        r"|table|dt|dd|caption|figcaption)\s*>",
        "\n",
        text,
    )
    text = re.sub(r"<[^>]+>", " ", text)
    for ent, ch in (("&nbsp;", " "), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&#39;", "'")):
        text = text.replace(ent, ch)
    return text


def _title_of(text: str, fallback: str) -> str:
    """The first non-blank line (Markdown ``#`` removed) if it is at most 200 characters, else ``fallback``."""
    # Look at complete lines of a short head first: splitting a whole large file only to take its first line
    # costs a copy of the file. A line cut at the head's end is not complete, so it is never judged there.
    head = text[:1024]
    lines = head.splitlines(True)
    if len(head) < len(text) and lines:
        lines.pop()
    for line in lines:
        s = line.strip().lstrip("#").strip()
        if s:
            return s if len(s) <= 200 else fallback
    if len(head) == len(text):
        return fallback
    for line in text.splitlines():
        s = line.strip().lstrip("#").strip()
        if s:
            return s if len(s) <= 200 else fallback
    return fallback


def _record_body(obj: dict, where: str) -> tuple[str, str, str]:
    """(title, body, form) from one container record; raises ValueError naming the field.

    ``form`` "lines": ``body`` holds the record's given sentences one per line (a newline inside one becomes a
    space; an empty one stays an empty line, so line positions are sentence ids). "prose": ``body`` is the
    record's text string, segmented into sentences only when a window of it is read.
    """
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: record is {type(obj).__name__}, expected a JSON object")
    title = obj.get("title")
    if not isinstance(title, str) or not title.strip():
        raise ValueError(f'{where}: field "title" missing or not a non-empty string')
    raw = obj.get("text", obj.get("sentences"))
    if raw is None:
        raise ValueError(f'{where}: field "text" missing')
    if isinstance(raw, str):
        return title.strip(), raw.strip(), "prose"
    if isinstance(raw, list):
        flat: list[str] = []
        for item in raw:  # official shards may nest paragraphs as lists of sentences
            if isinstance(item, str):
                flat.append(item)
            elif isinstance(item, list) and all(isinstance(x, str) for x in item):
                flat.extend(item)
            else:
                raise ValueError(f'{where}: field "text" holds a {type(item).__name__}, expected strings')
        return title.strip(), "\n".join(" ".join(x.split("\n")).strip() for x in flat), "lines"
    raise ValueError(f'{where}: field "text" is {type(raw).__name__}, expected a list of sentences')


def _read_container(
    path: str, full: str, settings: ReaderSettings, root_real: str, sig: list | None = None
) -> _FileResult:
    opened = _open_regular(full, root_real)
    if isinstance(opened, str):
        return _FileResult(path, [], skip=opened)
    fd, st = opened
    if sig is not None:
        sig.append(_signature(st))  # before reading: a later write moves ctime
    res = _FileResult(path, [])
    limit = settings.max_container_bytes
    record_cap = min(settings.max_file_bytes, limit)
    over = False
    try:
        with (
            os.fdopen(fd, "rb") as raw_fh,
            bz2.BZ2File(raw_fh) if path.lower().endswith(".bz2") else contextlib.nullcontext(raw_fh) as fh,
        ):
            lineno = 0
            while not over:
                # never more than the container has left (+1 to see it is over), nor more than a document may be
                raw = fh.readline(min(record_cap, limit - res.nbytes) + 1)
                if not raw:
                    break
                lineno += 1
                res.nbytes += len(raw)
                over = res.nbytes > limit
                if over:
                    break
                if len(raw) > record_cap:  # a record larger than a document may be: read past it in pieces
                    while not raw.endswith(b"\n"):
                        raw = fh.readline(min(1 << 20, limit - res.nbytes) + 1)
                        res.nbytes += len(raw)
                        over = res.nbytes > limit
                        if over or not raw:
                            break
                    res.problems.append(
                        f"{path}:{lineno}: record larger than reader.max_file_bytes ({settings.max_file_bytes:,} "
                        "bytes), skipped"
                    )
                    res.oversized += 1
                    continue
                if raw.strip():
                    _add_record(res, path, lineno, raw)
            if over:
                res.problems.append(
                    f"{path}: over the container limit (reader.max_container_bytes, {limit:,} bytes decompressed) "
                    f"at line {lineno}; read up to line {lineno - 1}"
                )
    except (OSError, EOFError) as exc:  # unreadable, or a corrupt .bz2 stream
        if res.documents:
            res.problems.append(f"{path}: read stopped early: {exc}")
            return res
        return _FileResult(path, [], skip="unreadable", problems=[f"{path}: {exc}"])
    if not res.documents:
        if over or res.oversized:
            res.skip = "oversized"
        else:
            res.skip = "empty" if not res.malformed else "no_valid_records"
    return res


def _add_record(res: _FileResult, path: str, lineno: int, raw: bytes) -> None:
    """One container line as a document of ``res``, or a problem and a malformed count."""
    where = f"{path}:{lineno}"
    try:
        text, bad = _decode(raw)
        if bad and not res.bad_encoding:
            res.bad_encoding = True
            res.problems.append(f"{where}: invalid UTF-8, read with U+FFFD replacement characters")
        title, body, form = _record_body(json.loads(text), where)
    except json.JSONDecodeError as exc:
        res.problems.append(f"{where}: malformed JSON ({exc.msg})")
        res.malformed += 1
        return
    except ValueError as exc:
        res.problems.append(str(exc))
        res.malformed += 1
        return
    res.documents.append(
        Document(
            doc_id=f"{path}#L{lineno}",
            path=path,
            title=title,
            text=title + "\n" + body,
            sha256=sha256_hex(raw.rstrip(b"\r\n")),
            line=lineno,
            kind="record",
            _record_form=form,
        )
    )


def read_document(root: Path, path: str, settings: ReaderSettings | None = None) -> _FileResult:
    """Read one file (relative ``path`` under ``root``) into documents, or a skip reason."""
    return _read_file(os.path.join(root, path), path, settings or ReaderSettings(), _folder_real(root))


def _signature(st: os.stat_result) -> tuple:
    """What identifies a file's content without reading it: any write moves ctime."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# never follow a link blindly, never block on a FIFO; both flags are POSIX (absent on Windows)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_FD_PATHS = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else None


def _within(path: str, root_real: str) -> bool:
    """``path`` is ``root_real`` or lies under it (both real paths); called once per file read, so no joins."""
    n = len(root_real)
    return path.startswith(root_real) and (len(path) == n or path[n] == os.sep or root_real.endswith(os.sep))


def _opened_path(fd: int, full: str) -> str:
    """The real path of the file open as ``fd``: as the kernel holds it (Linux), else ``full`` resolved now."""
    if _FD_PATHS:
        try:
            return os.readlink(f"{_FD_PATHS}/{fd}")
        except OSError:
            pass
    return os.path.realpath(full)


def _folder_real(root: str | os.PathLike[str]) -> str:
    """The real path of the folder ``root``, taken from the folder opened (the path every read is checked against)."""
    try:
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return os.path.realpath(root)
    try:
        return _opened_path(fd, os.fspath(root))
    finally:
        os.close(fd)


def _open_regular(full: str, root_real: str) -> tuple[int, os.stat_result] | str:
    """``full`` opened for reading with its stat, if it is a regular file inside ``root_real``; else a skip reason.

    The file may have changed since it was listed: a link is resolved and opened only if its target lies inside
    the folder, a FIFO or device is refused after a non-blocking open, and the opened file's own path is checked.
    """
    try:
        try:
            fd = os.open(full, _OPEN_FLAGS)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.EMLINK):  # EMLINK: a link under O_NOFOLLOW on BSD
                raise
            target = os.path.realpath(full)  # a link (listed as one, or swapped in since)
            if not _within(target, root_real):
                return "symlink_outside"
            fd = os.open(target, _OPEN_FLAGS)
    except FileNotFoundError:
        return "vanished"
    except OSError:
        return "unreadable"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            reason = "not_regular"
        elif not _within(_opened_path(fd, full), root_real):  # a folder on the way became a link out
            reason = "symlink_outside"
        else:
            return fd, st
    except OSError:
        reason = "unreadable"
    os.close(fd)
    return reason


def _read_bytes(
    full: str, max_bytes: int, root_real: str, sig: list | None = None, *, binary: bool = False
) -> bytes | str:
    """The file's bytes (at most ``max_bytes + 1``), or a skip reason. The stat signature of the open file
    (taken before reading) is appended to ``sig`` when given. ``binary``: a document format's bytes, which may
    hold NULs (else a NUL in the first 8 KiB makes the file "binary").

    One ``os.read`` per file in the common case (a regular file that did not change since ``fstat``); the
    scan of a folder of many small files is dominated by per-file overhead, not by bytes.
    """
    opened = _open_regular(full, root_real)
    if isinstance(opened, str):
        return opened
    fd, st = opened
    try:
        if sig is not None:
            sig.append(_signature(st))
        size = st.st_size
        if size > max_bytes:
            return "binary" if not binary and b"\x00" in os.read(fd, _SNIFF_BYTES) else "oversized"
        limit = max_bytes + 1
        data = os.read(fd, size + 1)
        if len(data) != size:  # grew, shrank or a short read since fstat: read on to EOF or the limit
            parts, n = [data], len(data)
            while n < limit:
                chunk = os.read(fd, limit - n)
                if not chunk:
                    break
                parts.append(chunk)
                n += len(chunk)
            data = b"".join(parts)
    except FileNotFoundError:
        return "vanished"
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)
    if not binary and data.find(b"\x00", 0, _SNIFF_BYTES) >= 0:
        return "binary"
    if len(data) > max_bytes:  # grew while we read it
        return "oversized"
    return data


def _decode(data: bytes) -> tuple[str, bool]:
    """UTF-8 text, and whether any bytes were invalid (those become U+FFFD)."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def _read_file(full: str, path: str, settings: ReaderSettings, root_real: str, sig: list | None = None) -> _FileResult:
    if format_of(_suffix(path)) is not None:
        got: list = []
        res = read_files([(full, path)], settings, root_real, got)[0]
        if sig is not None and got[0] is not None:
            sig.append(got[0])
        return res
    if _is_container(path):
        return _read_container(path, full, settings, root_real, sig)
    data = _read_bytes(full, settings.max_file_bytes, root_real, sig)
    if isinstance(data, str):
        return _FileResult(path, [], skip=data)
    text, bad = _decode(data)
    if path.lower().endswith(_HTML_SUFFIXES):
        text = _html_to_text(text)
    if not text.strip():
        return _FileResult(path, [], nbytes=len(data), skip="empty")
    name = path.rsplit("/", 1)[-1]
    stem = name[: name.rfind(".")] if "." in name[1:] else name
    doc = Document(
        doc_id=path,
        path=path,
        title=_title_of(text, stem),
        text=text,
        sha256=sha256_hex(data),
    )
    res = _FileResult(path, [doc], nbytes=len(data), bad_encoding=bad)
    if bad:
        res.problems.append(f"{path}: invalid UTF-8, read with U+FFFD replacement characters")
    return res


_BATCH_BYTES = 64 << 20  # document-format bytes handed to the extraction workers at once, at most


def read_files(
    jobs: Sequence[tuple[str, str]], settings: ReaderSettings, root_real: str, sigs: list | None = None
) -> list[_FileResult]:
    """Read each ``(full path, relative path)``: text and containers here, one after another; document formats
    (``lens.reader.formats``) through the extraction workers, in batches that use every worker. Each file's stat
    signature (None when it could not be opened) is appended to ``sigs`` in order."""
    results: list[_FileResult | None] = [None] * len(jobs)
    pending: list[tuple[int, bytes]] = []
    size = 0
    for i, (full, path) in enumerate(jobs):
        sig: list = []
        if format_of(_suffix(path)) is None:
            results[i] = _read_file(full, path, settings, root_real, sig)
        else:
            data = _read_bytes(full, settings.max_file_bytes, root_real, sig, binary=True)
            if isinstance(data, str):
                results[i] = _FileResult(path, [], skip=data)
            else:
                pending.append((i, data))
                size += len(data)
        if sigs is not None:
            sigs.append(sig[0] if sig else None)
        if pending and (size >= _BATCH_BYTES or i == len(jobs) - 1):
            _extract_batch(jobs, pending, results, settings)
            pending, size = [], 0
    return results  # type: ignore[return-value]


def _extract_batch(
    jobs: Sequence[tuple[str, str]],
    pending: list[tuple[int, bytes]],
    results: list[_FileResult | None],
    settings: ReaderSettings,
) -> None:
    """The units of the files ``pending`` (index into ``jobs``, bytes), as their results."""
    items = [(data, _suffix(jobs[i][1]), jobs[i][1].rsplit("/", 1)[-1]) for i, data in pending]
    for (i, data), got in zip(pending, extractor_for(settings).extract_all(items)):
        path = jobs[i][1]
        if not got.ok:
            results[i] = _FileResult(path, [], nbytes=len(data), skip=got.reason, problems=[f"{path}: {got.message}"])
            continue
        docs = unit_documents(path, got.units)
        results[i] = _FileResult(path, docs, nbytes=len(data), skip=None if docs else "empty", units=len(docs))


_EXTRACTORS: dict[tuple, Extractor] = {}
_EXTRACTORS_LOCK = threading.Lock()


def extractor_for(settings: ReaderSettings) -> Extractor:
    """This process's extraction workers for ``settings``' limits (started on first use, kept for the next file)."""
    key = (
        settings.max_file_bytes,
        settings.max_pages,
        settings.extraction_workers,
        settings.extraction_timeout_s,
        settings.extraction_memory_mb,
    )
    with _EXTRACTORS_LOCK:
        if key not in _EXTRACTORS:
            _EXTRACTORS[key] = Extractor.from_settings(settings)
        return _EXTRACTORS[key]


def _forget_extractors() -> None:
    """In a forked child: the parent's workers are the parent's (their sockets must not be shared)."""
    global _EXTRACTORS_LOCK
    _EXTRACTORS.clear()
    _EXTRACTORS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_extractors)


# Files whose stat signature (device, inode, size, mtime, ctime) is unchanged since this process last read
# them are not read again: any write changes ctime, so the content is exactly what was read then, and its
# hash with it. A file changed within _RACY_NS of a scan is not remembered (timestamps are coarse), so it is
# read again next time. This is a per-process memo of reads, not an index: every scan still lists and stats
# the whole folder as it is now, and nothing is written anywhere. When the memo holds _UNCHANGED_MAX files it
# stops taking new ones (those are read on every scan) rather than starting over: clearing it made a folder
# larger than the cap re-read every file on every question (1.5M files: 52 s per scan instead of ≈ 11 s).
# The cap is sized for the scale curve's largest folder; a container file counts once, whatever it holds.
_UNCHANGED: dict[tuple, tuple[tuple, "_FileResult"]] = {}
_UNCHANGED_MAX = 2_000_000
_RACY_NS = 2_000_000_000


def _open_folder(root_path: Path, within: Sequence[str | os.PathLike[str]] | None) -> str:
    """The folder's real path, resolved once from the folder opened: what ``within`` is checked against and every
    file read must lie in, so a folder swapped for a link after a caller checked its path is still caught."""
    if not root_path.exists():
        raise CorpusError(f"{root_path}: no such folder")
    if not root_path.is_dir():
        raise CorpusError(f"{root_path}: not a folder")
    if not os.access(root_path, os.R_OK | os.X_OK):
        raise CorpusError(f"{root_path}: folder is not readable")
    root_real = _folder_real(root_path)
    if within is not None and not any(_within(root_real, os.fspath(w)) for w in within):
        raise CorpusError(f"{root_path}: resolves to {root_real}, outside {', '.join(map(os.fspath, within))}; refused")
    return root_real


def scan_corpus(
    root: str | os.PathLike[str],
    settings: ReaderSettings | None = None,
    *,
    within: Sequence[str | os.PathLike[str]] | None = None,
) -> CorpusScan:
    """Read every document under ``root`` as it is now. Raises CorpusError if the folder is unusable, or when
    ``within`` (real paths of folders) is given and the folder, resolved as the scan opens it, lies outside them."""
    settings = settings or ReaderSettings()
    root_path = Path(root)
    t0 = time.perf_counter()
    root_real = _open_folder(root_path, within)
    skipped: Counter = Counter()
    patterns, ignore_unread = _ignore_patterns(root_path, root_real)
    problems: list[str] = [ignore_unread] if ignore_unread else []
    paths = _list_files(root_path, settings, skipped, problems, root_real, patterns)
    documents: list[Document] = []
    nbytes = 0
    files = 0
    bad_encoding = 0

    prefix = os.path.join(root_path, "")  # joined by concatenation: cheaper than os.path.join per file
    root_key = root_real
    settled = time.time_ns() - _RACY_NS
    if settings.reuse_unchanged and len(_UNCHANGED) >= _UNCHANGED_MAX:  # full: forget this folder's gone files
        listed = set(paths)
        for gone in [k for k in _UNCHANGED if k[0] == root_key and k[1] not in listed]:
            del _UNCHANGED[gone]

    def work(p: str) -> _FileResult:
        if not settings.reuse_unchanged:
            return _read_file(prefix + p, p, settings, root_real)
        key = (root_key, p, settings.max_file_bytes)
        hit = _UNCHANGED.get(key)
        if hit is not None:  # only remembered files are stat'ed: a first scan pays nothing for the memo
            try:
                if _signature(os.stat(prefix + p)) == hit[0]:
                    return hit[1]
            except OSError:
                pass
        sig: list = []  # the signature of what the read actually opened
        res = _read_file(prefix + p, p, settings, root_real, sig)
        if sig and sig[0][4] < settled:
            if key in _UNCHANGED or len(_UNCHANGED) < _UNCHANGED_MAX:
                _UNCHANGED[key] = (sig[0], res)
        return res

    if settings.workers > 1 and len(paths) > 64:
        with ThreadPoolExecutor(settings.workers) as pool:
            results: Iterator[_FileResult] = pool.map(work, paths, chunksize=64)
            results = list(results)  # type: ignore[assignment]
    else:
        results = map(work, paths)
    for res in results:
        if not tally(res.outcome(), skipped, problems):
            continue
        files += 1
        bad_encoding += res.bad_encoding
        nbytes += res.nbytes
        documents.extend(res.documents)
    return CorpusScan(
        root=root_path,
        documents=documents,
        files=files,
        bytes_read=nbytes,
        seconds=time.perf_counter() - t0,
        skipped=skipped,
        problems=problems,
        bad_encoding=bad_encoding,
        ignore_unread=ignore_unread,
    )


# --------------------------------------------------------------------------- sentences

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
