"""Saved index folders: a folder carries a small JSON record with the sha256 of every file it holds, so a later
load can tell a damaged or swapped folder from the one that was saved (files written by ``harness.files``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from harness.files import atomic_write_json, sha256_file
from lens import LensError

__all__ = ["IndexFolderError", "IndexedIds", "write_folder_record", "read_folder_record"]

RECORD_NAME = "lens-index.json"


class IndexFolderError(LensError):
    """A saved index folder is missing, incomplete, or does not match its recorded hashes."""


def write_folder_record(folder: Path, record: Mapping[str, Any], files: list[str]) -> dict[str, Any]:
    """Write ``lens-index.json`` into ``folder``: ``record`` plus the sha256 of each named file."""
    full = dict(record)
    full["files"] = {name: sha256_file(folder / name) for name in sorted(files)}
    atomic_write_json(folder / RECORD_NAME, full)
    return full


def read_folder_record(folder: str | os.PathLike, kind: str) -> dict[str, Any]:
    """Read and verify a folder written by :func:`write_folder_record`.

    Raises :class:`IndexFolderError` naming the folder when the record is missing or malformed, is of another
    ``kind``, or any listed file is missing or has a different sha256.
    """
    folder = Path(folder)
    rec_path = folder / RECORD_NAME
    if not rec_path.is_file():
        raise IndexFolderError(f"{folder}: not a saved index folder (no {RECORD_NAME})")
    try:
        record = json.loads(rec_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexFolderError(f"{rec_path}: unreadable index record ({exc})") from exc
    if not isinstance(record, dict) or record.get("kind") != kind:
        found = record.get("kind") if isinstance(record, dict) else None
        raise IndexFolderError(f"{rec_path}: expected a {kind!r} index, found {found!r}")
    files = record.get("files")
    if not isinstance(files, dict) or not files:
        raise IndexFolderError(f"{rec_path}: record lists no files")
    for name, digest in sorted(files.items()):
        f = folder / name
        if not f.is_file():
            raise IndexFolderError(f"{folder}: file {name} listed in {RECORD_NAME} is missing")
        actual = sha256_file(f)
        if actual != digest:
            raise IndexFolderError(
                f"{folder}: file {name} has sha256 {actual[:12]}…, the record says {digest[:12]}… (changed after save)"
            )
    return record


class IndexedIds:
    """The document ids of an index, in index order (``self._ids``, set by the index)."""

    _ids: list[str]

    @property
    def ids(self) -> list[str]:
        return list(self._ids)

    @property
    def n_docs(self) -> int:
        return len(self._ids)
