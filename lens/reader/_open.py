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

__all__ = ["CorpusError", "FolderDirs"]


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


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_BY_DIR_FD = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")


class FolderDirs:
    """The folder's directories opened one step at a time from the folder's own, never through a link, for a run
    of reads (a chunk of the listing): a file is then opened by its name relative to its directory's descriptor,
    not following a link either, so it lies inside the folder without asking the kernel for its path (a
    ``readlink`` per file, ≈ 4 µs of the ≈ 50 a small file costs). Only the open directories on the way to the
    last file read are kept (a listing's files come folder by folder). A step that is a link, or a path this
    cannot take, is opened by :func:`_open_regular` with its checks. A directory moved out of the folder while
    its files are read is read as it was when opened, as a file moved out after its open is. :meth:`close` after
    use (a context manager)."""

    def __init__(self, root_real: str) -> None:
        self.root_real = root_real
        self._fds: dict[str, int | None] = {}  # "" the folder, "a", "a/b", …: a descriptor, None where refused

    def __enter__(self) -> FolderDirs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in self._fds.values():
            if fd is not None:
                os.close(fd)
        self._fds.clear()

    def _dir(self, rel: str) -> int | None:
        if rel in self._fds:
            return self._fds[rel]
        for kept in [k for k in self._fds if k and not rel.startswith(k + "/")]:  # off the way to ``rel``
            fd = self._fds.pop(kept)
            if fd is not None:
                os.close(fd)
        parent, _, name = rel.rpartition("/")
        fd = None
        try:
            if not rel:
                fd = os.open(self.root_real, _DIR_FLAGS)
                if _opened_path(fd, self.root_real) != self.root_real:  # the folder itself swapped since
                    os.close(fd)
                    fd = None
            elif name not in (".", "..") and (up := self._dir(parent)) is not None:
                fd = os.open(name, _DIR_FLAGS, dir_fd=up)
        except OSError:  # a link on the way (ELOOP, ENOTDIR), gone, or no descriptor to be had
            fd = None
        self._fds[rel] = fd
        return fd

    def open(self, full: str, rel: str) -> tuple[int, os.stat_result] | str:
        """As :func:`_open_regular` (``full`` the file's path, ``rel`` the same file's path in the folder)."""
        folder, _, name = rel.rpartition("/")
        up = self._dir(folder) if _BY_DIR_FD and name not in ("", ".", "..") else None
        if up is None:
            return _open_regular(full, self.root_real)
        try:
            fd = os.open(name, _OPEN_FLAGS, dir_fd=up)
        except FileNotFoundError:
            return "vanished"
        except OSError:  # a link (its target may lie inside: resolved and checked there), or unreadable
            return _open_regular(full, self.root_real)
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode):
                return fd, st
            reason = "not_regular"
        except OSError:
            reason = "unreadable"
        os.close(fd)
        return reason


def _open_file(
    full: str, root_real: str, dirs: FolderDirs | None = None, rel: str = ""
) -> tuple[int, os.stat_result] | str:
    """``full`` opened for a read as :func:`_open_regular` opens it — through ``dirs``, the folder's directories
    open for a run of reads, where given (``rel``: the file's path in the folder)."""
    return dirs.open(full, rel) if dirs is not None else _open_regular(full, root_real)


def _read_bytes(
    full: str,
    max_bytes: int,
    root_real: str,
    sig: list | None = None,
    *,
    binary: bool = False,
    dirs: FolderDirs | None = None,
    rel: str = "",
) -> bytes | str:
    """The file's bytes (at most ``max_bytes + 1``), or a skip reason. The stat signature of the open file
    (taken before reading) is appended to ``sig`` when given. ``binary``: a document format's bytes, which may
    hold NULs (else a NUL in the first 8 KiB makes the file "binary"). ``dirs`` and ``rel``: as for
    :func:`_open_file`.

    One ``os.read`` per file in the common case (a regular file that did not change since ``fstat``); the
    scan of a folder of many small files is dominated by per-file overhead, not by bytes.
    """
    opened = _open_file(full, root_real, dirs, rel)
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
