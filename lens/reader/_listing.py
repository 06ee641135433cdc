"""Listing a folder: the candidate files in path order, with what was left out and why (hidden, ignored by
``.lensignore``, binary, links out of the folder, …) and, for a survey, each file's stat signature.
"""

from __future__ import annotations

import fnmatch
import operator
import os
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence

from lens._config import ReaderSettings
from lens.reader._documents import _is_container, _suffix
from lens.reader._open import _decode, _folder_real, _read_bytes, _within
from lens.reader.formats import FORMATS

__all__ = ["BINARY_SUFFIXES", "IGNORE_FILE"]


# files no format reads (a document format in the reader's table, lens.reader.formats.FORMATS, is read instead)
BINARY_SUFFIXES = (
    frozenset(
        ".png .jpg .jpeg .gif .bmp .tif .tiff .webp .ico .zip .gz .tgz .xz .7z .rar .zst .tar .exe .dll .so "
        ".dylib .o .a .class .jar .pyc .whl .bin .dat .db .sqlite .parquet .npy .npz .pkl .pt .gguf .mp3 .mp4 "
        ".wav .flac .ogg .avi .mov .mkv .woff .woff2 .ttf .otf .doc .xls .ppt".split()
    )
    - FORMATS.keys()
)


IGNORE_FILE = ".lensignore"


_IGNORE_MAX_BYTES = 1 << 20  # patterns are matched against every path: a larger file is not a list of patterns


_IGNORE_UNREAD = {
    "not_regular": "not a regular file",
    "symlink_outside": "a link out of the folder",
    "oversized": f"larger than {_IGNORE_MAX_BYTES:,} bytes",
    "binary": "binary",
    "unreadable": "unreadable",
}


def _ignore_patterns(root: Path, root_real: str) -> tuple[list[str], str | None]:
    """fnmatch patterns from ``<root>/.lensignore`` (one per line, ``#`` comments), matched on relative paths,
    and None; or no patterns and the line saying why the file was not read (it is read like a document: a FIFO,
    a link out or a file over 1 MiB is not)."""
    data = _read_bytes(os.path.join(root, IGNORE_FILE), _IGNORE_MAX_BYTES, root_real)
    if data == "vanished":  # no ignore file
        return [], None
    if isinstance(data, str):
        return [], f"{IGNORE_FILE}: not read ({_IGNORE_UNREAD.get(data, data)}); no paths are ignored"
    lines = _decode(data)[0].splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")], None


def _ignored(rel_path: str, patterns: list[str]) -> bool:
    name = rel_path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel_path, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


_NAME = operator.attrgetter("name")


_SCANDIR_FD = os.scandir in os.supports_fd


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _list_files(
    root: Path,
    settings: ReaderSettings,
    skipped: Counter,
    problems: list[str],
    root_real: str | None = None,
    patterns: list[str] | None = None,
    dirs: list[str] | None = None,
    sigs: tuple | None = None,
    known: Sequence[str] = (),
    at: tuple[int, Callable[[], object]] | None = None,
    containers_only: bool = False,
) -> list[str]:
    """Relative posix paths of the candidate files, sorted; skip reasons counted in ``skipped``. ``root_real``:
    the folder's real path (default: resolved now); ``patterns``: what to ignore (default: the .lensignore's);
    ``dirs``: where the directories listed are appended (their paths as walked); ``sigs``: two ``array``s
    ('Q', 'q') each listed file's stat signature is appended to, as (device, inode) and (size, mtime_ns,
    ctime_ns) — (0, 0) and (-1, -1, -1) for a file that could not be stat'ed — taken relative to its open
    directory while it is listed (no second walk of every path), and, given a third ``array`` ('B'), whether the
    file has more than one name (a hard link, perhaps outside the folder); ``known``: the last listing's paths, whose
    strings are handed out again where the same path comes at the same place (a million paths are then not held
    twice); ``at``: (n, f): ``f()`` is called once n files are listed (while the listing goes on);
    ``containers_only``: only containers are stat'ed (their sizes weigh their reading), every other file gets the
    signature of one that could not be (its reader's ``fstat`` gives it: for a folder the store knows nothing of,
    where a ``stat`` of each file — ≈ 3 µs of ≈ 5 a file listed — told nothing the reading does not)."""
    root_real = root_real or _folder_real(root)
    if patterns is None:
        patterns, unread = _ignore_patterns(root, root_real)
        problems.extend([unread] if unread else [])
    walk = _Walk(root_real, settings, skipped, problems, patterns, dirs, sigs, known, at, containers_only)
    walk.folder(str(root), "", {root_real})
    return walk.out


class _Walk:
    """One listing of a folder, depth first in name order: what :func:`_list_files` returns and counts."""

    def __init__(
        self, root_real, settings, skipped, problems, patterns, dirs, sigs, known, at=None, containers_only=False
    ):
        self.root_real, self.settings, self.skipped, self.problems = root_real, settings, skipped, problems
        self.patterns, self.dirs, self.known = patterns, dirs, known
        self.ident, self.times, *linked = sigs if sigs is not None else (None, None)
        self.linked = linked[0] if linked else None  # whether each file has more names than one (st_nlink)
        self.out: list[str] = []
        self.at, self.then = at if at is not None else (-1, None)  # then() once this many files are listed
        self.containers_only = containers_only  # only containers stat'ed

    def folder(self, dir_path: str, rel: str, seen: set[str]) -> None:
        """List ``dir_path`` (``rel`` under the root) and the folders under it; ``seen``: real paths on the way."""
        fd, entries = self._entries(dir_path, rel)
        if entries is None:
            return
        try:
            if self.dirs is not None:
                self.dirs.append(dir_path)
            for entry in entries:
                name = entry.name
                rel_path = f"{rel}/{name}" if rel else name
                if name.startswith("."):
                    self.skipped["hidden"] += 1
                elif self.patterns and _ignored(rel_path, self.patterns):
                    self.skipped["ignored"] += 1
                else:
                    try:
                        self._entry(entry, dir_path, name, rel_path, seen)
                    except FileNotFoundError:
                        self.skipped["vanished"] += 1
                    except OSError:
                        self.skipped["unreadable"] += 1
        finally:
            if fd is not None:
                os.close(fd)

    def _entries(self, dir_path: str, rel: str) -> tuple[int | None, list | None]:
        """The folder's open descriptor and its entries in name order; (None, None) when it cannot be listed."""
        fd = None
        try:
            # listed through an open descriptor: a file's stat then resolves one name, not its whole path
            fd = os.open(dir_path, _DIR_FLAGS) if _SCANDIR_FD else None
            with os.scandir(dir_path if fd is None else fd) as it:
                return fd, sorted(it, key=_NAME)
        except FileNotFoundError:
            self.skipped["vanished"] += 1
        except OSError as exc:
            self.skipped["unreadable"] += 1
            self.problems.append(f"{rel or '.'}: cannot list folder: {exc.strerror or exc}")
        if fd is not None:
            os.close(fd)
        return None, None

    def _entry(self, entry: os.DirEntry, dir_path: str, name: str, rel_path: str, seen: set[str]) -> None:
        """One directory entry: a link checked against the folder, a folder walked, a file listed."""
        if entry.is_symlink():
            target = os.path.realpath(os.path.join(dir_path, name))
            if not _within(target, self.root_real):
                self.skipped["symlink_outside"] += 1
                return
            if not self.settings.follow_symlinks and os.path.isdir(target):
                self.skipped["symlink_dir"] += 1
                return
        if entry.is_dir(follow_symlinks=True):
            full = os.path.join(dir_path, name)
            real = os.path.realpath(full)
            if real not in seen:  # else a loop through symlinks
                self.folder(full, rel_path, seen | {real})
        elif not entry.is_file(follow_symlinks=True):
            self.skipped["not_regular"] += 1
        elif _suffix(name) in BINARY_SUFFIXES and not _is_container(name):
            self.skipped["binary"] += 1
        else:
            self._file(entry, rel_path)

    def _file(self, entry: os.DirEntry, rel_path: str) -> None:
        """A candidate file: its path (the known string where it is the same) and, when asked, its signature."""
        k = len(self.out)
        known = self.known
        self.out.append(known[k] if k < len(known) and known[k] == rel_path else rel_path)
        if k + 1 == self.at:
            self.then()
        if self.ident is None:
            return
        st = None
        if not self.containers_only or _is_container(rel_path):  # else not stat'ed: as a file that could not be
            try:
                st = entry.stat()
            except OSError:
                pass
        if st is None:
            self.ident.extend((0, 0))
            self.times.extend((-1, -1, -1))
            if self.linked is not None:
                self.linked.append(0)
        else:
            self.ident.extend((st.st_dev, st.st_ino))
            self.times.extend((st.st_size, st.st_mtime_ns, st.st_ctime_ns))
            if self.linked is not None:
                self.linked.append(st.st_nlink > 1)
