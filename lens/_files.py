"""All-or-nothing writes of what the library writes. A whole file (a response cache entry, the assembled model, a
calibration record) goes to a temporary sibling, which then replaces the target (``os.replace``, atomic on POSIX
and Windows); on any failure the sibling is removed and the target is left as it was. Appended JSONL rows (the
memory log, calibration readings) are written whole or not at all.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable, Sequence

__all__ = ["atomic_write", "append_lines"]

_TAIL_CHUNK = 1 << 16


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


def append_lines(path: str | os.PathLike[str], lines: Sequence[str]) -> None:
    """Append whole lines (JSONL rows) all-or-nothing under an exclusive ``flock`` (safe across threads and
    processes), then fsync. A torn last line left by a crash (no final newline) is cut off first; a write that
    fails part-way (disk full) is cut back before the ``OSError`` is raised, so the file only ever holds whole
    lines."""
    data = "".join(line.rstrip("\n") + "\n" for line in lines).encode("utf-8")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the descriptor is closed
        size = _cut_torn_tail(fd)
        try:
            view = memoryview(data)
            while view:  # os.write may write less than asked (a nearly full disk): go on from there
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except BaseException:
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass
            raise
    finally:
        os.close(fd)


def _cut_torn_tail(fd: int) -> int:
    """Truncate the file after its last newline (a line without one is the torn tail of a crash); returns the
    new size."""
    size = end = os.fstat(fd).st_size
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return size
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        nl = os.pread(fd, end - start, start).rfind(b"\n")
        if nl >= 0:
            end = start + nl + 1
            break
        end = start
    os.ftruncate(fd, end)
    return end
