"""Listing a folder: the candidate files in path order, with what was left out and why (hidden, ignored by
``.lensignore``, binary, links out of the folder, …) and, for a survey, each file's stat signature.
"""

from __future__ import annotations

import fnmatch
import operator
import os
from collections import Counter
from pathlib import Path
from typing import Sequence

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
) -> list[str]:
    """Relative posix paths of the candidate files, sorted; skip reasons counted in ``skipped``. ``root_real``:
    the folder's real path (default: resolved now); ``patterns``: what to ignore (default: the .lensignore's);
    ``dirs``: where the directories listed are appended (their paths as walked); ``sigs``: two ``array``s
    ('Q', 'q') each listed file's stat signature is appended to, as (device, inode) and (size, mtime_ns,
    ctime_ns) — (0, 0) and (-1, -1, -1) for a file that could not be stat'ed — taken relative to its open
    directory while it is listed (no second walk of every path); ``known``: the last listing's paths, whose
    strings are handed out again where the same path comes at the same place (a million paths are then not held
    twice)."""
    out: list[str] = []
    root_real = root_real or _folder_real(root)
    if patterns is None:
        patterns, unread = _ignore_patterns(root, root_real)
        problems.extend([unread] if unread else [])

    ident, times = sigs if sigs is not None else (None, None)

    def walk(dir_path: str, rel: str, seen: set[str]) -> None:
        try:
            # listed through an open descriptor: a file's stat then resolves one name, not its whole path
            fd = os.open(dir_path, _DIR_FLAGS) if _SCANDIR_FD else None
        except FileNotFoundError:
            skipped["vanished"] += 1
            return
        except OSError as exc:
            skipped["unreadable"] += 1
            problems.append(f"{rel or '.'}: cannot list folder: {exc.strerror or exc}")
            return
        try:
            try:
                with os.scandir(dir_path if fd is None else fd) as it:
                    entries = sorted(it, key=_NAME)
            except FileNotFoundError:
                skipped["vanished"] += 1
                return
            except OSError as exc:
                skipped["unreadable"] += 1
                problems.append(f"{rel or '.'}: cannot list folder: {exc.strerror or exc}")
                return
            if dirs is not None:
                dirs.append(dir_path)
            for entry in entries:
                name = entry.name
                rel_path = f"{rel}/{name}" if rel else name
                if name.startswith("."):
                    skipped["hidden"] += 1
                    continue
                if patterns and _ignored(rel_path, patterns):
                    skipped["ignored"] += 1
                    continue
                try:
                    if entry.is_symlink():
                        target = os.path.realpath(os.path.join(dir_path, name))
                        if not _within(target, root_real):
                            skipped["symlink_outside"] += 1
                            continue
                        if not settings.follow_symlinks and os.path.isdir(target):
                            skipped["symlink_dir"] += 1
                            continue
                    if entry.is_dir(follow_symlinks=True):
                        full = os.path.join(dir_path, name)
                        real = os.path.realpath(full)
                        if real in seen:  # a loop through symlinks
                            continue
                        walk(full, rel_path, seen | {real})
                    elif entry.is_file(follow_symlinks=True):
                        if _suffix(name) in BINARY_SUFFIXES and not _is_container(name):
                            skipped["binary"] += 1
                            continue
                        k = len(out)
                        out.append(known[k] if k < len(known) and known[k] == rel_path else rel_path)
                        if ident is not None:
                            try:
                                st = entry.stat()
                            except OSError:
                                ident.extend((0, 0))
                                times.extend((-1, -1, -1))
                            else:
                                ident.extend((st.st_dev, st.st_ino))
                                times.extend((st.st_size, st.st_mtime_ns, st.st_ctime_ns))
                    else:
                        skipped["not_regular"] += 1
                except FileNotFoundError:
                    skipped["vanished"] += 1
                except OSError:
                    skipped["unreadable"] += 1
        finally:
            if fd is not None:
                os.close(fd)

    walk(str(root), "", {root_real})
    return out
