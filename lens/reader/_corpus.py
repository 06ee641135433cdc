"""The raw-corpus reader: a folder of documents read as it is *now* (no index, nothing written), every file
through one guarded open; what it reads, skips and how: ``docs/pipeline.md`` § The folder as it is now.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from lens._config import ReaderSettings
from lens.reader._documents import Document, _suffix
from lens.reader._listing import _ignore_patterns, _list_files
from lens.reader._open import _open_folder, _signature
from lens.reader._read import _FileResult, _read_file, read_files, tally
from lens.reader.formats import format_of

__all__ = ["CorpusScan", "scan_corpus"]


@dataclass
class CorpusScan:
    """The result of reading a folder: documents plus counts of what was read and skipped."""

    root: Path
    documents: list[Document]
    files: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    skipped: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    bad_encoding: int = 0  # files read although some bytes were not valid UTF-8 (U+FFFD in their place)
    ignore_unread: str | None = None  # why the .lensignore there was not read (no path was ignored), if so
    # what a question over this scan tells with its answer: the statistics store set aside or kept in memory
    notes: list[str] = field(default_factory=list)
    # from a survey (lens.reader._filestats): each document's statistics, their rows in the store, the store
    doc_stats: tuple | None = field(default=None, repr=False)
    extract_seconds: float = 0.0  # spent extracting document formats in the workers (summed over files)

    def formats(self) -> dict[str, dict[str, int]]:
        """Per document format read (by its name in the table: PDF, Word, …): the files and the units they gave
        (a PDF's units are its pages); text files and containers are not listed. Walks every document's path."""
        paths = self.doc_stats[0].path if self.doc_stats else [d.path for d in self.documents]
        out: dict[str, dict[str, int]] = {}
        for path, units in Counter(paths).items():
            fmt = format_of(_suffix(path))
            if fmt is not None:
                entry = out.setdefault(fmt.name, {"files": 0, "units": 0})
                entry["files"] += 1
                entry["units"] += units
        return dict(sorted(out.items()))

    @property
    def mb_per_s(self) -> float:
        return (self.bytes_read / 1e6) / self.seconds if self.seconds > 0 else 0.0

    def stats(self) -> dict:
        return {
            "root": str(self.root),
            "files": self.files,
            "documents": len(self.documents),
            "bytes": self.bytes_read,
            "seconds": round(self.seconds, 4),
            "mb_per_s": round(self.mb_per_s, 2),
            "skipped": dict(sorted(self.skipped.items())),
            "bad_encoding": self.bad_encoding,
            "problems": self.problems[:50],
        }


# Files whose stat signature (device, inode, size, mtime, ctime) is unchanged since this process last read
# them are not read again: any write changes ctime, so the content is exactly what was read then, and its
# hash with it. A file changed within _RACY_NS of a scan is not remembered (timestamps are coarse), so it is
# read again next time. This is a per-process memo of reads, not an index: every scan still lists and stats
# the whole folder as it is now, and nothing is written anywhere. When the memo holds _UNCHANGED_MAX files it
# stops taking new ones (those are read on every scan) rather than starting over: clearing it made a folder
# larger than the cap re-read every file on every question (1.5M files: 52 s per scan instead of ≈ 11 s).
# The cap is sized for the scale curve's largest folder; a container file counts once, whatever it holds.
_UNCHANGED: dict[tuple, tuple[tuple, "_FileResult"]] = {}


_UNCHANGED_MAX = 2_000_000


_RACY_NS = 2_000_000_000


def scan_corpus(
    root: str | os.PathLike[str],
    settings: ReaderSettings | None = None,
    *,
    within: Sequence[str | os.PathLike[str]] | None = None,
) -> CorpusScan:
    """Read every document under ``root`` as it is now. Raises CorpusError if the folder is unusable, or when
    ``within`` (real paths of folders) is given and the folder, resolved as the scan opens it, lies outside them."""
    settings = settings or ReaderSettings()
    root_path = Path(root)
    t0 = time.perf_counter()
    root_real = _open_folder(root_path, within)
    skipped: Counter = Counter()
    patterns, ignore_unread = _ignore_patterns(root_path, root_real)
    problems: list[str] = [ignore_unread] if ignore_unread else []
    paths = _list_files(root_path, settings, skipped, problems, root_real, patterns)
    documents: list[Document] = []
    nbytes = 0
    files = 0
    bad_encoding = 0

    prefix = os.path.join(root_path, "")  # joined by concatenation: cheaper than os.path.join per file
    root_key = root_real
    settled = time.time_ns() - _RACY_NS
    if settings.reuse_unchanged and len(_UNCHANGED) >= _UNCHANGED_MAX:  # full: forget this folder's gone files
        listed = set(paths)
        for gone in [k for k in _UNCHANGED if k[0] == root_key and k[1] not in listed]:
            del _UNCHANGED[gone]

    def work(p: str) -> _FileResult:
        if not settings.reuse_unchanged:
            return _read_file(prefix + p, p, settings, root_real)
        key = (root_key, p, settings.max_file_bytes)
        hit = _UNCHANGED.get(key)
        if hit is not None:  # only remembered files are stat'ed: a first scan pays nothing for the memo
            try:
                if _signature(os.stat(prefix + p)) == hit[0]:
                    return hit[1]
            except OSError:
                pass
        sig: list = []  # the signature of what the read actually opened
        res = _read_file(prefix + p, p, settings, root_real, sig)
        if sig and sig[0][4] < settled:
            if key in _UNCHANGED or len(_UNCHANGED) < _UNCHANGED_MAX:
                _UNCHANGED[key] = (sig[0], res)
        return res

    # document formats first, all at once over the extraction workers (each is then a memo hit for work)
    extracted = _extract_formats(prefix, [p for p in paths if format_of(_suffix(p)) is not None], settings, root_real)
    if settings.workers > 1 and len(paths) > 64:
        with ThreadPoolExecutor(settings.workers) as pool:
            results: Iterator[_FileResult] = pool.map(work, paths, chunksize=64)
            results = list(results)  # type: ignore[assignment]
    else:
        results = (extracted.get(p) or work(p) for p in paths)
    extract_s = 0.0
    for res in results:
        extract_s += res.extract_s
        if not tally(res.outcome(), skipped, problems):
            continue
        files += 1
        bad_encoding += res.bad_encoding
        nbytes += res.nbytes
        documents.extend(res.documents)
    return CorpusScan(
        root=root_path,
        documents=documents,
        files=files,
        bytes_read=nbytes,
        seconds=time.perf_counter() - t0,
        skipped=skipped,
        problems=problems,
        bad_encoding=bad_encoding,
        ignore_unread=ignore_unread,
        extract_seconds=extract_s,
    )


def _extract_formats(prefix: str, paths: list[str], settings: ReaderSettings, root_real: str) -> dict:
    """The document-format files among ``paths`` not remembered unchanged, read in batches over the extraction
    workers: path -> its reading (what ``work`` would give, without one worker round trip per file)."""
    todo = []
    for p in paths:
        hit = _UNCHANGED.get((root_real, p, settings.max_file_bytes)) if settings.reuse_unchanged else None
        try:
            if hit is not None and _signature(os.stat(prefix + p)) == hit[0]:
                continue
        except OSError:
            pass
        todo.append(p)
    settled = time.time_ns() - _RACY_NS
    sigs: list = []
    out = dict(zip(todo, read_files([(prefix + p, p) for p in todo], settings, root_real, sigs)))
    for p, sig in zip(todo, sigs):
        key = (root_real, p, settings.max_file_bytes)
        if (
            settings.reuse_unchanged
            and sig
            and sig[4] < settled
            and (key in _UNCHANGED or len(_UNCHANGED) < _UNCHANGED_MAX)
        ):
            _UNCHANGED[key] = (sig, out[p])
    return out
