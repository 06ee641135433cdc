"""A snapshot folder read as documents: one extensionless file per article, title line, one sentence per line.

A folder of ``.bz2`` / ``.jsonl`` article shards (the fullwiki pool, ``lens bench fullwiki``: official abstracts
layout, one JSON object per line with ``title`` and ``text`` as the sentence list) is read as its records: the
document id of a record is ``<shard path>#L<line>``, the id LENS's reader gives it, so every arm names a record
the same way; the checksum covers the shard files (the fullwiki manifest's pool checksum).

The baselines read the snapshot layout of ``harness.bench.snapshots`` directly: document id = file name, title = line 1
(authoritative; the name is only an encoding of it), sentence k = line k + 2 (HotpotQA's sent_id k). Reading also
computes the folder's corpus checksum by the manifests' rule, so an index can say exactly which corpus it covers.

Hidden entries and sub-folders are skipped (a snapshot is flat); files that are not UTF-8 are skipped and counted.
Nothing is ever written into the folder.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from harness.bench.datasets import DataError, article_key, iter_records, shard_files
from harness.bench.snapshots import SENTENCE_LINE_OFFSET, corpus_checksum

__all__ = ["SnapshotDoc", "SnapshotCorpus", "read_snapshot_doc", "folder_signature"]


@dataclass(frozen=True)
class SnapshotDoc:
    """One article file: ``name`` (file name, the document id), ``title`` (line 1), ``sentences`` (lines 2..)."""

    name: str
    title: str
    sentences: tuple[str, ...]

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


def read_snapshot_doc(folder: str | os.PathLike[str], name: str) -> SnapshotDoc | None:
    """One document read from the folder as it is now; ``None`` if the file is gone or not UTF-8."""
    try:
        return _parse(name, (Path(folder) / name).read_bytes())
    except (OSError, UnicodeDecodeError):
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
    """Every document of a snapshot folder as it was when read, sorted by file name (UTF-8 bytes)."""

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
