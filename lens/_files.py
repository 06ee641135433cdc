"""All-or-nothing file writes for what the library writes (response cache entries, the assembled model,
calibration records), and durable appends of one JSONL row: the bytes go to a temporary sibling, which then replaces the target (``os.replace``,
atomic on POSIX and Windows); on any failure the sibling is removed and the target is left as it was.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable

__all__ = ["atomic_write", "append_line"]


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], None], *, durable: bool = True) -> Path:
    """Write ``path`` all-or-nothing through ``write(file)``; an exception from ``write`` (a failed check
    included) leaves nothing behind. ``durable``: fsync the file before the rename (a cache may skip it: a lost
    entry is only a miss)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def append_line(path: str | os.PathLike[str], line: str) -> None:
    """Append one line (a JSONL row) and fsync it. A torn last line left by a crash (no final newline) is cut
    off first, so the file only ever holds whole rows followed by the new one."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "ab+") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                fh.seek(0)
                data = fh.read()
                fh.truncate(data.rfind(b"\n") + 1)
        fh.write(line.rstrip("\n").encode("utf-8") + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
