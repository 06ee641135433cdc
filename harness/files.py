"""Files the harness writes and the hashes it binds them with — one home for each: sha256 of bytes and files,
the canonical JSON form that is hashed, the JSON text form of manifests, and all-or-nothing writes.

A file is either fully written or not there at all: the bytes go to a temporary sibling, are flushed and
fsynced, the sibling replaces the target (``os.replace``, atomic on POSIX and Windows) and the folder is fsynced
so the rename is durable; on any failure (disk full included) the sibling is removed and the target is left as
it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

__all__ = [
    "sha256_bytes",
    "sha256_file",
    "canonical_json",
    "json_text",
    "atomic_write",
    "atomic_write_json",
    "write_text_atomic",
    "write_json_atomic",
]

_CHUNK = 1 << 20


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
        _fsync_dir(path.parent)
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
    return atomic_write(path, json_text(obj, indent=2).encode("utf-8"))


def json_text(obj: Any, *, indent: int = 1) -> str:
    """Deterministic, human-readable JSON (sorted keys, UTF-8 kept, trailing newline) of manifests and records."""
    return json.dumps(obj, sort_keys=True, indent=indent, ensure_ascii=False) + "\n"


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    return atomic_write(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as :func:`json_text` (1-space indent) to ``path`` atomically; returns the path."""
    return write_text_atomic(path, json_text(obj))


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable where the platform allows it (not on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
