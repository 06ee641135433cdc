"""The one guarded open every read goes through: a regular file inside the folder, never a link out, a FIFO or a
device, its stat signature taken as it is opened.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Sequence

from lens._errors import LensError

__all__ = ["CorpusError"]


_SNIFF_BYTES = 8192


class CorpusError(LensError, OSError):
    """The folder itself cannot be read (missing, not a folder, unreadable)."""


def _signature(st: os.stat_result) -> tuple:
    """What identifies a file's content without reading it: any write moves ctime."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# never follow a link blindly, never block on a FIFO; both flags are POSIX (absent on Windows)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


_FD_PATHS = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else None


def _within(path: str, root_real: str) -> bool:
    """``path`` is ``root_real`` or lies under it (both real paths); called once per file read, so no joins."""
    n = len(root_real)
    return path.startswith(root_real) and (len(path) == n or path[n] == os.sep or root_real.endswith(os.sep))


def _opened_path(fd: int, full: str) -> str:
    """The real path of the file open as ``fd``: as the kernel holds it (Linux), else ``full`` resolved now."""
    if _FD_PATHS:
        try:
            return os.readlink(f"{_FD_PATHS}/{fd}")
        except OSError:
            pass
    return os.path.realpath(full)


def _folder_real(root: str | os.PathLike[str]) -> str:
    """The real path of the folder ``root``, taken from the folder opened (the path every read is checked against)."""
    try:
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return os.path.realpath(root)
    try:
        return _opened_path(fd, os.fspath(root))
    finally:
        os.close(fd)


def _open_regular(full: str, root_real: str) -> tuple[int, os.stat_result] | str:
    """``full`` opened for reading with its stat, if it is a regular file inside ``root_real``; else a skip reason.

    The file may have changed since it was listed: a link is resolved and opened only if its target lies inside
    the folder, a FIFO or device is refused after a non-blocking open, and the opened file's own path is checked.
    """
    try:
        try:
            fd = os.open(full, _OPEN_FLAGS)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.EMLINK):  # EMLINK: a link under O_NOFOLLOW on BSD
                raise
            target = os.path.realpath(full)  # a link (listed as one, or swapped in since)
            if not _within(target, root_real):
                return "symlink_outside"
            fd = os.open(target, _OPEN_FLAGS)
    except FileNotFoundError:
        return "vanished"
    except OSError:
        return "unreadable"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            reason = "not_regular"
        elif not _within(_opened_path(fd, full), root_real):  # a folder on the way became a link out
            reason = "symlink_outside"
        else:
            return fd, st
    except OSError:
        reason = "unreadable"
    os.close(fd)
    return reason


def _read_bytes(
    full: str, max_bytes: int, root_real: str, sig: list | None = None, *, binary: bool = False
) -> bytes | str:
    """The file's bytes (at most ``max_bytes + 1``), or a skip reason. The stat signature of the open file
    (taken before reading) is appended to ``sig`` when given. ``binary``: a document format's bytes, which may
    hold NULs (else a NUL in the first 8 KiB makes the file "binary").

    One ``os.read`` per file in the common case (a regular file that did not change since ``fstat``); the
    scan of a folder of many small files is dominated by per-file overhead, not by bytes.
    """
    opened = _open_regular(full, root_real)
    if isinstance(opened, str):
        return opened
    fd, st = opened
    try:
        if sig is not None:
            sig.append(_signature(st))
        size = st.st_size
        if size > max_bytes:
            return "binary" if not binary and b"\x00" in os.read(fd, _SNIFF_BYTES) else "oversized"
        limit = max_bytes + 1
        data = os.read(fd, size + 1)
        if len(data) != size:  # grew, shrank or a short read since fstat: read on to EOF or the limit
            parts, n = [data], len(data)
            while n < limit:
                chunk = os.read(fd, limit - n)
                if not chunk:
                    break
                parts.append(chunk)
                n += len(chunk)
            data = b"".join(parts)
    except FileNotFoundError:
        return "vanished"
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)
    if not binary and data.find(b"\x00", 0, _SNIFF_BYTES) >= 0:
        return "binary"
    if len(data) > max_bytes:  # grew while we read it
        return "oversized"
    return data


def _decode(data: bytes) -> tuple[str, bool]:
    """UTF-8 text, and whether any bytes were invalid (those become U+FFFD)."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def _open_folder(root_path: Path, within: Sequence[str | os.PathLike[str]] | None) -> str:
    """The folder's real path, resolved once from the folder opened: what ``within`` is checked against and every
    file read must lie in, so a folder swapped for a link after a caller checked its path is still caught."""
    if not root_path.exists():
        raise CorpusError(f"{root_path}: no such folder")
    if not root_path.is_dir():
        raise CorpusError(f"{root_path}: not a folder")
    if not os.access(root_path, os.R_OK | os.X_OK):
        raise CorpusError(f"{root_path}: folder is not readable")
    root_real = _folder_real(root_path)
    if within is not None and not any(_within(root_real, os.fspath(w)) for w in within):
        raise CorpusError(f"{root_path}: resolves to {root_real}, outside {', '.join(map(os.fspath, within))}; refused")
    return root_real
