"""Files and their names: all-or-nothing writes, appended whole lines, canonical JSON and its sha256.

A whole file goes to a temporary sibling that then replaces the target (``os.replace``); appended JSONL rows are
written whole or not at all. Canonical JSON (sorted keys, no spaces) is the one rule every hash in lens and the
harness is taken over.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable, Sequence

__all__ = [
    "atomic_write",
    "append_lines",
    "is_complete_line",
    "canonical_json",
    "canonical_hash",
    "sha256_hex",
    "is_inside",
]

_TAIL_CHUNK = 1 << 16


def canonical_json(value: Any, *, ascii: bool = False) -> str:
    """Sorted keys, no spaces. ``ascii``: non-ASCII escaped (the configuration hash's form, kept so that existing
    ``config_hash`` values stay valid); else UTF-8 kept (cache keys, manifests)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii)


def sha256_hex(data: bytes | str) -> str:
    """sha256 of bytes, or of a text's UTF-8 bytes (a lone surrogate passed through, never an error)."""
    return hashlib.sha256(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data).hexdigest()


def canonical_hash(value: Any, *, ascii: bool = False) -> str:
    """sha256 of :func:`canonical_json`."""
    return sha256_hex(canonical_json(value, ascii=ascii))


def atomic_write(
    path: str | os.PathLike[str],
    write: Callable[[BinaryIO], None] | bytes,
    *,
    durable: bool = True,
    mode: int | None = None,
) -> Path:
    """Write ``path`` all-or-nothing: ``write`` is the bytes or a callable given the open file; an exception from
    it (a failed check included) leaves nothing behind. The file gets the umask's usual permissions, or ``mode``
    (to keep those of the file it replaces). ``durable``: fsync the file and its folder around the rename (a cache
    may skip it: a lost entry is only a miss)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if callable(write):
                write(fh)
            else:
                fh.write(write)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask() if mode is None else mode)  # mkstemp creates 0600
        os.replace(tmp, target)
        if durable:
            _fsync_dir(target.parent)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def append_lines(path: str | os.PathLike[str], lines: Sequence[str]) -> None:
    """Append whole lines (JSONL rows) all-or-nothing under an exclusive ``flock`` (safe across threads and
    processes), then fsync. A last line without its newline is mended first: kept, its newline written, when it
    is a complete JSON object (a hand edit), cut off when it is not (the torn tail of a crash); a write that
    fails part-way (disk full) is cut back before the ``OSError`` is raised, so the file only ever holds whole
    lines."""
    data = "".join(line.rstrip("\n") + "\n" for line in lines).encode("utf-8")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the descriptor is closed
        size, newline = _mend_tail(fd)
        try:
            view = memoryview(newline + data)
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


def _mend_tail(fd: int) -> tuple[int, bytes]:
    """Look at a last line without its newline: a complete JSON object is kept (returns ``b"\\n"``, to be written
    before the new lines); anything else is the torn tail of a crash and is cut off. Returns (the file's size
    now, that prefix)."""
    size = end = os.fstat(fd).st_size
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return size, b""
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        nl = os.pread(fd, end - start, start).rfind(b"\n")
        if nl >= 0:
            end = start + nl + 1
            break
        end = start
    if is_complete_line(os.pread(fd, size - end, end)):
        return size, b"\n"
    os.ftruncate(fd, end)
    return end, b""


def is_complete_line(raw: bytes) -> bool:
    """Whether a JSONL line read without its newline is a whole record (a JSON object), not a crash's torn
    tail: a prefix of a JSON object is never a JSON object itself."""
    try:
        return isinstance(json.loads(raw.decode("utf-8")), dict)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False


def is_inside(child: str | os.PathLike[str], parent: str | os.PathLike[str]) -> bool:
    """Whether ``child`` resolves to ``parent`` or a path below it (where lens must never write)."""
    try:
        Path(child).resolve().relative_to(Path(parent).resolve())
        return True
    except ValueError:
        return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_dir(folder: Path) -> None:
    """Make a rename durable where the platform allows it."""
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
