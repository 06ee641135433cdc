"""A snapshot folder read as documents: one extensionless file per article, title line, one sentence per line.

A folder of ``.bz2`` / ``.jsonl`` article shards (the fullwiki pool, ``lens bench fullwiki``: official abstracts
layout, one JSON object per line with ``title`` and ``text`` as the sentence list) is read as its records: the
document id of a record is ``<shard path>#L<line>``, the id LENS's reader gives it, so every arm names a record
the same way; the checksum covers the shard files (the fullwiki manifest's pool checksum).

The baselines read the snapshot layout of ``harness.bench.snapshots`` directly: document id = file name, title = line 1
(authoritative; the name is only an encoding of it), sentence k = line k + 2 (HotpotQA's sent_id k). Reading also
computes the folder's corpus checksum by the manifests' rule, so an index can say exactly which corpus it covers.

A file of a document format lens reads (``.pdf``, ``.docx``, … — a snapshot written with ``--as pdf|docx``, or a
folder of filings) is read through lens's own reader (``lens.parts.extract``, then ``unit_documents``), so every
arm searches the text LENS reads: one document per unit (a PDF page, a run of Word paragraphs), named
``<file>#u<k>`` as LENS names it, its sentences the unit's text lines (a table row stays one line), its
``location`` the unit's (``{"page": 3}``) and its title the file's title (:func:`file_title`). A file's units
are kept per process, keyed by its path and stat signature, so a retrieved page is not parsed again.

Hidden entries and sub-folders are skipped (a snapshot is flat); files that are not UTF-8 are skipped and counted,
and so are document files the reader cannot read (by the reader's reason: ``encrypted``, ``corrupt``, …).
Nothing is ever written into the folder.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from harness.bench.datasets import DataError, article_key, iter_records, shard_files
from harness.bench.snapshots import SENTENCE_LINE_OFFSET, corpus_checksum, title_from_file_name
from lens.parts import Unreadable, extract, format_of, unit_documents

__all__ = [
    "SnapshotDoc",
    "SnapshotCorpus",
    "read_snapshot_doc",
    "folder_signature",
    "file_title",
    "is_document_file",
    "unit_docs",
]

UNIT_MARK = "#u"  # "<file>#u<k>": unit k of a document-format file, as lens's reader names it


@dataclass(frozen=True)
class SnapshotDoc:
    """One document: ``name`` (the document id: a file name, ``<shard>#L<line>`` for a shard's record,
    ``<file>#u<k>`` for a unit of a document-format file), ``title`` (line 1; a unit's: its file's title),
    ``sentences`` (lines 2..; a unit's text lines). ``path`` and ``location`` are set for units only."""

    name: str
    title: str
    sentences: tuple[str, ...]
    path: str = ""  # the file a unit is in
    location: dict | None = None  # where the unit is in its file ({"page": 3})

    @property
    def file(self) -> str:
        """The file this document is (or is in, for a unit or record)."""
        return self.path or self.name.split("#L", 1)[0]

    @property
    def text(self) -> str:
        """Title and sentences as one string (what the lexical and dense indexes see)."""
        return " ".join([self.title, *(s for s in self.sentences if s)])

    def line_of(self, sent_id: int) -> int:
        return sent_id + SENTENCE_LINE_OFFSET


def _parse(name: str, data: bytes) -> SnapshotDoc:
    text = data.decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    title = lines[0].strip() if lines else ""
    return SnapshotDoc(name=name, title=title or name, sentences=tuple(s.strip() for s in lines[1:]))


def is_document_file(name: str) -> bool:
    """Whether lens reads ``name`` as a document format (units), not as text."""
    dot = name.rfind(".")
    return dot > 0 and "/" not in name[dot:] and format_of(name[dot:]) is not None


def file_title(unit_title: str, name: str) -> str:
    """The title of the document-format file ``name`` from one of its units' titles: the file's title metadata as
    lens read it (PDF Title, Word core properties). Where the reader fell back to the file name (a title it would
    not take as one: no letter, over 200 characters, "Untitled …"), the unit's title is the file name (a Word
    unit: the file name, " — " and its heading) and the title is decoded from the name instead
    (``title_from_file_name``, as a snapshot wrote it)."""
    base = name.rsplit("/", 1)[-1]
    if unit_title == base or unit_title.startswith(base + " — "):
        return title_from_file_name(base[: base.rfind(".")] if "." in base else base)
    return unit_title


_UNITS: dict[tuple, tuple[SnapshotDoc, ...]] = {}
_UNITS_LOCK = threading.Lock()
_UNITS_MAX = 200_000  # files remembered per process; past it the memo starts over


def unit_docs(folder: str | os.PathLike[str], name: str, data: bytes | None = None) -> tuple[SnapshotDoc, ...]:
    """The units of the document-format file ``name`` of ``folder`` as documents, read through lens's reader and
    remembered by the file's stat signature. Raises OSError, or ``lens.parts.Unreadable`` with the reader's
    reason."""
    path = Path(folder) / name
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    with _UNITS_LOCK:
        hit = _UNITS.get(key)
    if hit is not None:
        return hit
    docs = unit_documents(name, extract(path if data is None else data, name[name.rfind(".") :], name=name))
    hit = tuple(
        SnapshotDoc(
            d.doc_id,
            file_title(d.title, name),
            tuple(x.strip() for x in d.text.split("\n")[1:] if x.strip()),
            path=name,
            location=dict(d.location or {}),
        )
        for d in docs
    )
    with _UNITS_LOCK:
        if len(_UNITS) >= _UNITS_MAX:
            _UNITS.clear()
        _UNITS[key] = hit
    return hit


def read_snapshot_doc(folder: str | os.PathLike[str], name: str) -> SnapshotDoc | None:
    """One document read from the folder as it is now; ``None`` if the file is gone, not UTF-8, unreadable by the
    reader, or (a unit) no longer has that unit."""
    try:
        if UNIT_MARK in name:
            file = name.rsplit(UNIT_MARK, 1)[0]
            return next((d for d in unit_docs(folder, file) if d.name == name), None)
        return _parse(name, (Path(folder) / name).read_bytes())
    except (OSError, UnicodeDecodeError, Unreadable):
        return None


def _listing(folder: Path) -> list[os.DirEntry]:
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        raise DataError(f"{folder}: no such snapshot folder") from None
    except NotADirectoryError:
        raise DataError(f"{folder}: not a folder") from None
    except OSError as exc:
        raise DataError(f"{folder}: cannot list: {exc.strerror or exc}") from None
    return sorted(
        (e for e in entries if not e.name.startswith(".") and e.is_file(follow_symlinks=False)),
        key=lambda e: e.name.encode("utf-8", "surrogatepass"),
    )


def folder_signature(folder: str | os.PathLike[str]) -> str:
    """A cheap fingerprint of the folder's listing (names, sizes, modification times): changes when a file is
    added, removed or rewritten. Used to notice growth without hashing every file."""
    h = hashlib.sha256()
    entries = _listing(Path(folder))
    for e in entries:
        st = e.stat(follow_symlinks=False)
        h.update(f"{e.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogatepass"))
    if not entries:  # a folder of shards: their listing
        for p in shard_files(folder):
            st = p.stat()
            h.update(f"{p.relative_to(folder).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


@dataclass
class SnapshotCorpus:
    """Every document of a snapshot folder as it was when read, sorted by file name (UTF-8 bytes); a document
    file's units follow one another in their order (page 1, 2, …)."""

    folder: Path
    docs: list[SnapshotDoc]
    checksum: str  # corpus checksum of the files read (the manifests' rule)
    skipped: dict[str, int] = field(default_factory=dict)
    _by_name: dict[str, int] = field(default_factory=dict, repr=False)
    _by_title: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_name = {d.name: i for i, d in enumerate(self.docs)}
        for i, d in enumerate(self.docs):
            self._by_title.setdefault(article_key(d.title), i)

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> "SnapshotCorpus":
        """Read the folder now. Raises DataError when it is missing, unlistable or holds no readable document."""
        folder = Path(folder)
        docs: list[SnapshotDoc] = []
        hashes: list[tuple[str, str]] = []
        skipped: dict[str, int] = {}
        for e in _listing(folder):
            try:
                with open(e.path, "rb") as fh:
                    data = fh.read()
            except OSError:
                skipped["unreadable"] = skipped.get("unreadable", 0) + 1
                continue
            hashes.append((e.name, hashlib.sha256(data).hexdigest()))
            if is_document_file(e.name):
                try:
                    docs.extend(unit_docs(folder, e.name, data))
                except (OSError, Unreadable) as exc:
                    reason = getattr(exc, "reason", "unreadable")
                    skipped[reason] = skipped.get(reason, 0) + 1
                continue
            try:
                docs.append(_parse(e.name, data))
            except UnicodeDecodeError:
                skipped["not_utf8"] = skipped.get("not_utf8", 0) + 1
        if not docs:
            shards = shard_files(folder)
            if shards:
                return cls._load_shards(folder, shards)
            raise DataError(f"{folder}: no readable documents")
        return cls(folder=folder, docs=docs, checksum=corpus_checksum(hashes), skipped=skipped)

    @classmethod
    def _load_shards(cls, folder: Path, shards: list[Path]) -> "SnapshotCorpus":
        docs: list[SnapshotDoc] = []
        hashes: list[tuple[str, str]] = []
        for p in shards:
            rel = p.relative_to(folder).as_posix()
            data = p.read_bytes()
            hashes.append((rel, hashlib.sha256(data).hexdigest()))
            docs.extend(
                SnapshotDoc(f"{rel}#L{line}", a.title.strip(), tuple(s.strip() for s in a.sentences))
                for line, a in iter_records(p, data)
            )
        if not docs:
            raise DataError(f"{folder}: its shards hold no articles")
        return cls(folder=folder, docs=docs, checksum=corpus_checksum(hashes))

    def __len__(self) -> int:
        return len(self.docs)

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.docs]

    def by_name(self, name: str) -> SnapshotDoc | None:
        i = self._by_name.get(name)
        return None if i is None else self.docs[i]

    def by_title(self, title: str) -> SnapshotDoc | None:
        """The document whose title line equals ``title`` (compared with ``article_key``)."""
        i = self._by_title.get(article_key(title))
        return None if i is None else self.docs[i]
