"""Files the harness writes and the hashes it binds them with — one home for each: sha256 of bytes and files,
the canonical JSON form that is hashed, the JSON text form of manifests, and all-or-nothing writes.

A file is either fully written or not there at all: the library's atomic writer (a temporary sibling, flushed,
fsynced, then ``os.replace``; on any failure the sibling is removed and the target is left as it was), and the
folder is fsynced so the rename is durable.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

from lens import parts

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


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None] | bytes) -> Path:
    """Write ``path`` all-or-nothing through the library's writer (:func:`lens.parts.atomic_write`): ``write`` is
    the bytes or a callable given the open (binary) temporary file; the usual permissions, file and folder
    fsynced."""
    return parts.atomic_write(path, write)


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
