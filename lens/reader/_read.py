"""Reading one file into documents: a text file (HTML as text), a container of records (.jsonl, .bz2), or a
document format through the table of formats, extracted in isolated workers (``lens.reader._extraction``).
"""

from __future__ import annotations

import bz2
import contextlib
import json
import os
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from lens._files import sha256_hex
from lens.reader._documents import Document, _is_container, _suffix, unit_documents
from lens.reader._extraction import Extractor
from lens.reader._open import FolderDirs, _decode, _folder_real, _open_file, _read_bytes, _signature
from lens.reader.formats import format_of

if TYPE_CHECKING:  # a type only: a reading worker does without the settings' model (pydantic)
    from lens._config import ReaderSettings

__all__ = ["read_document", "read_files", "extractor_for", "tally"]

_HTML_SUFFIXES = (".html", ".htm", ".xhtml")


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
    extract_s: float = 0.0  # seconds its extraction took in a worker (a document format)

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
    path: str,
    full: str,
    settings: ReaderSettings,
    root_real: str,
    sig: list | None = None,
    dirs: FolderDirs | None = None,
) -> _FileResult:
    opened = _open_file(full, root_real, dirs, path)
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


def read_document(root: Path, path: str, settings: ReaderSettings) -> _FileResult:
    """Read one file (relative ``path`` under ``root``) into documents, or a skip reason."""
    return _read_file(os.path.join(root, path), path, settings, _folder_real(root))


def _read_file(
    full: str,
    path: str,
    settings: ReaderSettings,
    root_real: str,
    sig: list | None = None,
    dirs: FolderDirs | None = None,
) -> _FileResult:
    """Read the file ``full`` (``path`` in the folder whose real path is ``root_real``; ``dirs``: that folder's
    directories open for a run of reads) into documents, or a skip reason; its stat signature appended to ``sig``."""
    if format_of(_suffix(path)) is not None:
        got: list = []
        res = read_files([(full, path)], settings, root_real, got)[0]
        if sig is not None and got[0] is not None:
            sig.append(got[0])
        return res
    if _is_container(path):
        return _read_container(path, full, settings, root_real, sig, dirs)
    data = _read_bytes(full, settings.max_file_bytes, root_real, sig, dirs=dirs, rel=path)
    if isinstance(data, str):
        return _FileResult(path, [], skip=data)
    text, bad = _decode(data)
    if path.lower().endswith(_HTML_SUFFIXES):
        text = _html_to_text(text)
    if not text or text.isspace():  # (as ``not text.strip()``, without a copy of the text)
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
            problem = [f"{path}: {got.message}"]
            results[i] = _FileResult(
                path, [], nbytes=len(data), skip=got.reason, problems=problem, extract_s=got.seconds
            )
            continue
        docs = unit_documents(path, got.units)
        skip = None if docs else "empty"
        results[i] = _FileResult(path, docs, nbytes=len(data), skip=skip, units=len(docs), extract_s=got.seconds)


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
