"""Atomic file writes for manifests and sample files: a reader sees the old file or the new one, never half.

The text goes to a hidden temporary file in the same folder, is flushed and fsynced, then ``os.replace``d over
the target (atomic on POSIX and Windows). On any failure (disk full included) the temporary file is removed
and the target is left as it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["write_text_atomic", "write_json_atomic", "canonical_json"]


def canonical_json(obj: Any) -> str:
    """Deterministic, human-readable JSON (sorted keys, 1-space indent, UTF-8 kept, trailing newline)."""
    return json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(target.parent)
    return target


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as canonical JSON to ``path`` atomically; returns the path."""
    return write_text_atomic(path, canonical_json(obj))


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
