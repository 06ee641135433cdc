"""Persisted per-snapshot indexes for the index-dependent arms, and what building them cost (lifecycle).

Layout under an index root (never inside a snapshot folder)::

    ROOT/<corpus checksum, 16 hex>/bm25/              BM25Index.save() + build.json
    ROOT/<corpus checksum, 16 hex>/dense-<model tag>/ DenseIndex.save() (vectors .npy) + build.json

Indexes come from the shared retrieval layer (``harness.retrieval``): bm25s Lucene BM25 (k1 0.9, b 0.4,
English stemming and stopwords) and sentence-transformers vectors. Document ids are snapshot file names, indexed
in file-name order, so index order, id order and the id tie-break agree. A folder is written under a temporary
name and renamed into place, so a killed build leaves no half index; ``build.json`` records the corpus checksum it
covers and the build's cost: seconds, bytes on disk, peak resident memory. Loading checks every file's sha256
(the retrieval layer's folder record) and the corpus checksum asked for.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from harness.bench.systems.corpus import SnapshotCorpus
from harness.files import atomic_write_json
from harness.retrieval import BM25Index, BM25Params, DenseEncoder, DenseIndex, IndexFolderError

__all__ = ["IndexBuild", "IndexStore", "PeakRSS", "folder_bytes", "model_tag"]

BUILD_RECORD = "build.json"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def folder_bytes(folder: str | os.PathLike[str]) -> int:
    """Bytes of every file under ``folder`` (what the index costs on disk)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def model_tag(model_id: str) -> str:
    """A file-name-safe tag for a dense model id (``model@<weights hash>`` or a hub name)."""
    return _SAFE.sub("_", model_id).strip("_")[:80] or "model"


class PeakRSS:
    """Samples this process's resident memory every ``interval`` seconds while the block runs.

    ``before`` is the RSS on entry, ``peak`` the largest sample (entry and exit included), in bytes.
    """

    def __init__(self, interval: float = 0.005) -> None:
        import psutil

        self._proc = psutil.Process()
        self.interval = interval
        self.before = 0
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def __enter__(self) -> "PeakRSS":
        self.before = self.peak = self._proc.memory_info().rss
        self._thread = threading.Thread(target=self._sample, name="peak-rss", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)


@dataclass(frozen=True)
class IndexBuild:
    """One index build as it happened: which corpus, how long, how big, how much memory."""

    kind: str  # "bm25" | "dense"
    corpus: str  # the snapshot folder's name, e.g. "D125"
    corpus_checksum: str
    n_docs: int
    index_hash: str
    seconds: float  # tokenise/encode + save (the corpus read is excluded: every arm pays it)
    bytes: int  # every file of the index folder
    peak_rss_bytes: int  # peak resident memory of the building process during the build
    rss_before_bytes: int
    params: dict[str, Any] = field(default_factory=dict)
    built_at: str = ""
    measured_in: str = "this process"

    @property
    def peak_delta_bytes(self) -> int:
        return max(0, self.peak_rss_bytes - self.rss_before_bytes)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["peak_delta_bytes"] = self.peak_delta_bytes
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "IndexBuild":
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in names})


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class IndexStore:
    """Builds, persists and reloads the BM25 and dense indexes of snapshot folders under ``root``."""

    def __init__(self, root: str | os.PathLike[str], *, measured_in: str = "this process") -> None:
        self.root = Path(root)
        self.measured_in = measured_in  # recorded with each build's measurements

    def folder(self, kind: str, corpus_checksum: str, tag: str = "") -> Path:
        return self.root / corpus_checksum[:16] / (f"{kind}-{tag}" if tag else kind)

    # -- records -------------------------------------------------------------------------------------------
    def record(self, folder: Path) -> IndexBuild | None:
        p = folder / BUILD_RECORD
        if not p.is_file():
            return None
        try:
            return IndexBuild.from_json(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as exc:
            raise IndexFolderError(f"{p}: unreadable build record ({exc})") from exc

    def _publish(self, tmp: Path, final: Path, build: IndexBuild) -> IndexBuild:
        atomic_write_json(tmp / BUILD_RECORD, build.to_json())
        final.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(tmp, final)
        except OSError:
            if final.is_dir():  # another process published the same index first: keep theirs
                shutil.rmtree(tmp, ignore_errors=True)
                return self.record(final) or build
            raise
        # bytes on disk include the record itself
        build = IndexBuild(**{**asdict(build), "bytes": folder_bytes(final)})
        atomic_write_json(final / BUILD_RECORD, build.to_json())
        return build

    def _tmp(self, final: Path) -> Path:
        final.parent.mkdir(parents=True, exist_ok=True)
        for stale in final.parent.glob(f".{final.name}.partial-*"):
            if stale.is_dir() and not _pid_alive(stale.name.split(".partial-", 1)[1]):
                shutil.rmtree(stale, ignore_errors=True)  # left by a killed build
        tmp = final.parent / f".{final.name}.partial-{os.getpid()}-{threading.get_ident()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        return tmp

    # -- BM25 ----------------------------------------------------------------------------------------------
    def bm25_folder(self, corpus_checksum: str) -> Path:
        return self.folder("bm25", corpus_checksum)

    def build_bm25(self, corpus: SnapshotCorpus, params: BM25Params = BM25Params()) -> tuple[BM25Index, IndexBuild]:
        """Index ``corpus`` and persist it (replacing nothing: an existing folder is kept and loaded)."""

        def make(tmp: Path) -> tuple[BM25Index, dict[str, Any]]:
            index = BM25Index.build([d.text for d in corpus.docs], corpus.names, params)
            index.save(tmp)
            return index, asdict(params)

        return self._build("bm25", corpus, self.bm25_folder(corpus.checksum), make)

    def _build(
        self, kind: str, corpus: SnapshotCorpus, final: Path, make: Callable[[Path], tuple[Any, dict]]
    ) -> tuple[Any, IndexBuild]:
        """Build an index into a temporary sibling of ``final`` (``make`` writes it and returns the index and its
        parameters), measuring seconds, bytes and peak memory, then publish it; nothing is left on failure."""
        tmp = self._tmp(final)
        try:
            with PeakRSS() as mem:
                t0 = time.perf_counter()
                index, params = make(tmp)
                seconds = time.perf_counter() - t0
            build = IndexBuild(
                kind=kind,
                corpus=corpus.folder.name,
                corpus_checksum=corpus.checksum,
                n_docs=index.n_docs,
                index_hash=index.index_hash,
                seconds=round(seconds, 4),
                bytes=folder_bytes(tmp),
                peak_rss_bytes=mem.peak,
                rss_before_bytes=mem.before,
                params=params,
                built_at=_now(),
                measured_in=self.measured_in,
            )
            return index, self._publish(tmp, final, build)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def build_kind(
        self, kind: str, corpus: SnapshotCorpus, final: Path, make: Callable[[Path], tuple[Any, dict]]
    ) -> tuple[Any, IndexBuild]:
        """Build an index of an arm of its own (PaperQA2's collection) the way the BM25 and dense ones are built:
        ``make`` writes it into a temporary folder and returns it (with ``n_docs`` and ``index_hash``) and its
        parameters; the build is measured and published at ``final``."""
        return self._build(kind, corpus, final, make)

    def record_of(self, final: Path, corpus_checksum: str) -> IndexBuild | None:
        """The build record of ``final`` (None: never built); IndexFolderError when built for another corpus."""
        return self._record_of(final, corpus_checksum)

    def _record_of(self, final: Path, corpus_checksum: str) -> IndexBuild | None:
        """The build record of ``final`` (None: never built); raises IndexFolderError when it was built for
        another corpus."""
        build = self.record(final)
        if build is not None and build.corpus_checksum != corpus_checksum:
            raise IndexFolderError(
                f"{final}: built for corpus {build.corpus_checksum[:12]}…, not {corpus_checksum[:12]}…"
            )
        return build

    def load_bm25(self, corpus_checksum: str) -> tuple[BM25Index, IndexBuild] | None:
        """The persisted BM25 index of that corpus, or ``None`` if none was built. Raises IndexFolderError
        when the folder was altered."""
        final = self.bm25_folder(corpus_checksum)
        build = self._record_of(final, corpus_checksum)
        if build is None:
            return None
        return BM25Index.load(final, expected_hash=build.index_hash), build

    def ensure_bm25(self, corpus: SnapshotCorpus) -> tuple[BM25Index, IndexBuild, bool]:
        """(index, its build record, built now?)"""
        got = self.load_bm25(corpus.checksum)
        if got is not None:
            return got[0], got[1], False
        index, build = self.build_bm25(corpus)
        return index, build, True

    # -- dense ---------------------------------------------------------------------------------------------
    def dense_folder(self, corpus_checksum: str, encoder: DenseEncoder) -> Path:
        return self.folder("dense", corpus_checksum, model_tag(encoder.model_id))

    def build_dense(
        self, corpus: SnapshotCorpus, encoder: DenseEncoder, *, progress: bool = False
    ) -> tuple[DenseIndex, IndexBuild]:
        """Encode every document with ``encoder`` (model load included in the time) and persist the vectors."""

        def make(tmp: Path) -> tuple[DenseIndex, dict[str, Any]]:
            vectors = encoder.encode([d.text for d in corpus.docs], show_progress=progress)
            index = DenseIndex(vectors, corpus.names, encoder.model_id, normalized=True)
            index.save(tmp)
            return index, {"model_id": encoder.model_id, "model": str(encoder.model), "dim": int(vectors.shape[1])}

        return self._build("dense", corpus, self.dense_folder(corpus.checksum, encoder), make)

    def load_dense(self, corpus_checksum: str, encoder: DenseEncoder) -> tuple[DenseIndex, IndexBuild] | None:
        final = self.dense_folder(corpus_checksum, encoder)
        build = self._record_of(final, corpus_checksum)
        if build is None:
            return None
        index = DenseIndex.load(final, expected_hash=build.index_hash)
        if index.model_id != encoder.model_id:
            raise IndexFolderError(f"{final}: vectors of model {index.model_id}, expected {encoder.model_id}")
        return index, build

    def ensure_dense(
        self, corpus: SnapshotCorpus, encoder: DenseEncoder, *, progress: bool = False
    ) -> tuple[DenseIndex, IndexBuild, bool]:
        got = self.load_dense(corpus.checksum, encoder)
        if got is not None:
            return got[0], got[1], False
        index, build = self.build_dense(corpus, encoder, progress=progress)
        return index, build, True


def _pid_alive(suffix: str) -> bool:
    """Whether the process named by a ``<pid>-<thread>`` partial-folder suffix still runs."""
    try:
        pid = int(suffix.split("-")[0])
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
