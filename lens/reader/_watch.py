"""A folder watch: Linux inotify on every directory of a folder, read synchronously, so a long-lived process can
tell that nothing changed since its last survey without listing and stat'ing every file.

The kernel queues an inotify event while the system call that changed the file runs, so reading the queue when a
question starts sees every change made before it: the watch is exact, not eventually consistent like a
notification thread would be. What it cannot see, it does not claim to: a full event queue (overflow), a watch the
kernel dropped, an unsupported platform or a watch limit reached all make :meth:`FolderWatch.changed` answer True
(survey the folder), as does any event at all. Changes it never reports — a file written through ``mmap``, or
changed on another machine of a network file system — are why ``reader.watch`` can be turned off. Nor does a
directory's watch see a file written through a hard link outside the folder (the event goes to the directory of
the name written through): so a quiet watch spares a survey the listing only, never the stat of each file whose
statistics it reuses (``lens.reader._filestats``).

The watch is used only once it is *armed*: a survey arms it when every directory it listed was already watched
before the survey began, so no change can fall between a directory's listing and its watch.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import sys

__all__ = ["FolderWatch"]

_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF, _IN_ONLYDIR = 0x400, 0x800, 0x01000000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
)

_libc = None
if sys.platform.startswith("linux"):
    try:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        _libc.inotify_init1.argtypes = [ctypes.c_int]
        _libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        _libc = None


class FolderWatch:
    """inotify watches on a folder's directories; ``changed()`` drains the queue and says whether anything moved."""

    def __init__(self) -> None:
        self.fd = -1
        self.broken = _libc is None
        self.armed = False
        self._watched: set[str] = set()
        if not self.broken:
            fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            if fd < 0:
                self.broken = True
            else:
                self.fd = fd

    def watch(self, directories: list[str]) -> bool:
        """Watch these directories (full paths); True if every one was watched before this call."""
        if self.broken:
            return False
        had_all = True
        for d in directories:
            if d in self._watched:
                continue
            had_all = False
            if _libc.inotify_add_watch(self.fd, os.fsencode(d), _MASK) < 0:
                if ctypes.get_errno() != errno.ENOENT:  # a watch limit, a permission: no watch to trust
                    self.close()
                    return False
                continue  # gone since listed: its parent's event says so
            self._watched.add(d)
        return had_all

    def changed(self) -> bool:
        """Whether anything may have changed since the last call: any event (the queue is drained), or a watch
        that cannot tell (broken, not armed)."""
        seen = self.broken or not self.armed
        while self.fd >= 0:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                self.close()
                return True
            if not chunk:
                break
            seen = True
        return seen

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1
        self.broken = True
        self.armed = False

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
