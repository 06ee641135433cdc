"""Persistence helpers shared by the retrieval indexes and the audit manifests.

Two promises: a file is either fully written or not there at all (write to a temporary sibling, fsync,
``os.replace``), and a saved folder carries a small JSON record with the sha256 of every file it holds, so a
later load can tell a damaged or swapped folder from the one that was saved.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

from lens import LensError

__all__ = [
    "IndexFolderError",
    "atomic_write",
    "atomic_write_json",
    "canonical_json",
    "sha256_bytes",
    "sha256_file",
    "write_folder_record",
    "read_folder_record",
]

RECORD_NAME = "lens-index.json"
_CHUNK = 1 << 20


class IndexFolderError(LensError):
    """A saved index folder is missing, incomplete, or does not match its recorded hashes."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes (streamed; any size)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def canonical_json(obj: Any) -> bytes:
    """The byte form hashed everywhere: sorted keys, no whitespace, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None] | bytes, *, binary: bool = True) -> Path:
    """Write ``path`` all-or-nothing.

    ``write`` is either the bytes to write or a callable that receives the open temporary file. The file is
    flushed and fsynced before it replaces ``path``; on any error the temporary file is removed and ``path`` is
    left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as fh:
            if callable(write):
                write(fh)
            else:
                fh.write(write)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Pretty JSON (sorted keys), written atomically."""
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return atomic_write(path, text.encode("utf-8"))


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
