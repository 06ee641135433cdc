"""Warm-reuse memory: an append-only log of what past queries believed, read through an eligibility predicate
(``docs/pipeline.md`` § The warm-reuse memory).
"""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from lens._errors import LensError
from lens._files import append_lines, is_complete_line
from lens._terms import content_terms

__all__ = [
    "MemoryEntry",
    "MemoryStore",
    "Eligibility",
    "all_past",
    "new_entry",
    "similarity",
    "MemoryLogError",
    "memory_signal",
    "memory_key",
    "memory_signals",
]

LOG_NAME = "memory.jsonl"


class MemoryLogError(LensError):
    """The memory folder or its log is unusable (the message names the file and line)."""


@dataclass(frozen=True)
class MemoryEntry:
    position: int
    observed_at: float
    question: str
    requirement: str
    terms: tuple[str, ...]
    path: str
    doc_id: str
    first: int
    last: int
    line_start: int
    line_end: int
    value: str
    sha256: str
    embedding: tuple[float, ...] | None = None
    posterior: float = 1.0  # the window's calibrated posterior for the requirement when it was written
    certified: bool = True  # whether the requirement was certified (GLR over the stopping threshold)
    verified: bool = True  # whether a reading verified a finding in the window (False: the calibrated belief alone)

    def to_json(self) -> str:
        d = asdict(self)
        d["terms"] = list(self.terms)
        d["embedding"] = list(self.embedding) if self.embedding is not None else None
        return json.dumps(d, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict, where: str) -> "MemoryEntry":
        if not isinstance(d, dict):
            raise MemoryLogError(f"{where}: not a JSON object")
        try:
            emb = d.get("embedding")
            return cls(
                position=int(d["position"]),
                observed_at=float(d["observed_at"]),
                question=str(d["question"]),
                requirement=str(d["requirement"]),
                terms=tuple(str(t) for t in d["terms"]),
                path=str(d["path"]),
                doc_id=str(d["doc_id"]),
                first=int(d["first"]),
                last=int(d["last"]),
                line_start=int(d["line_start"]),
                line_end=int(d["line_end"]),
                value=str(d["value"]),
                sha256=str(d["sha256"]),
                embedding=tuple(float(x) for x in emb) if emb is not None else None,
                posterior=float(d.get("posterior", 1.0)),
                certified=bool(d.get("certified", True)),
                verified=bool(d.get("verified", True)),
            )
        except KeyError as exc:
            raise MemoryLogError(f"{where}: field {exc.args[0]!r} missing") from None
        except (TypeError, ValueError) as exc:
            raise MemoryLogError(f"{where}: bad field value ({exc})") from None


Eligibility = Callable[[MemoryEntry], bool]


def all_past(position: int) -> Eligibility:
    """The default view: every entry observed at an earlier stream position."""
    return lambda e: e.position < position


def memory_key(question: str, requirement: str) -> str:
    """What an entry is filed under and a lookup searches with: the requirement, then the question it came from.
    The question carries the context a requirement alone lacks — a small model decomposes a data-product request
    into generic sub-questions ("What should be included in the dataset?") that would match every other request's
    entries, while similar requests share their wording — and for a specific requirement its own terms still
    dominate the cosine."""
    return f"{requirement}\n{question}"


def similarity(a_terms: Sequence[str], b_terms: Sequence[str], a_emb=None, b_emb=None) -> float:
    """Cosine of embeddings when both have one, else cosine of the binary term vectors."""
    if a_emb is not None and b_emb is not None and len(a_emb) == len(b_emb):
        dot = sum(x * y for x, y in zip(a_emb, b_emb))
        na = math.sqrt(sum(x * x for x in a_emb))
        nb = math.sqrt(sum(y * y for y in b_emb))
        return dot / (na * nb) if na and nb else 0.0
    sa, sb = set(a_terms), set(b_terms)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / math.sqrt(len(sa) * len(sb))


@dataclass
class MemoryStore:
    """The memory folder: ``memory.jsonl``, appended whole entries at a time under a file lock (safe across threads
    and processes; :func:`lens._files.append_lines`)."""

    directory: Path
    capacity: int = 32
    min_similarity: float = 0.35  # ``memory.min_similarity``: the least similarity of an entry served
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cache: tuple[int, int, list[MemoryEntry]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.directory = Path(self.directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryLogError(f"{self.directory}: cannot create memory folder: {exc.strerror or exc}") from None

    @property
    def log_path(self) -> Path:
        return self.directory / LOG_NAME

    def entries(self) -> list[MemoryEntry]:
        """Every entry in log order (cached until the log changes). A last line without its newline is an entry
        when it is a complete JSON object (a hand edit; the next append writes its newline), else the torn tail
        of a crash: not an entry (the next append cuts it). Raises MemoryLogError when the log cannot be read."""
        path = self.log_path
        try:
            st = path.stat()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise MemoryLogError(f"{path}: cannot read the memory log ({exc.strerror or exc})") from None
        key = (st.st_size, st.st_mtime_ns)
        if self._cache and self._cache[:2] == key:
            return self._cache[2]
        out: list[MemoryEntry] = []
        try:
            with open(path, "rb") as fh:
                for n, raw in enumerate(fh, 1):
                    if not raw.strip() or not (raw.endswith(b"\n") or is_complete_line(raw)):
                        continue  # a torn last line from a crash is ignored (and cut by the next append)
                    try:
                        d = json.loads(raw.decode("utf-8"))
                    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                        why = (
                            f"malformed JSON ({exc.msg})" if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
                        )
                        raise MemoryLogError(f"{path}:{n}: {why}") from None
                    out.append(MemoryEntry.from_dict(d, f"{path}:{n}"))
        except OSError as exc:
            raise MemoryLogError(f"{path}: cannot read the memory log ({exc.strerror or exc})") from None
        self._cache = (key[0], key[1], out)
        return out

    def next_position(self) -> int:
        return max((e.position for e in self.entries()), default=-1) + 1

    def append(self, entries: Iterable[MemoryEntry]) -> int:
        """Append entries (never rewrites), all or none; returns how many were written. Raises MemoryLogError
        when they cannot be written (the log is left as it was)."""
        lines = [e.to_json() for e in entries]
        if not lines:
            return 0
        with self._lock:
            try:
                append_lines(self.log_path, lines)
            except OSError as exc:
                what = "1 entry" if len(lines) == 1 else f"{len(lines)} entries"
                raise MemoryLogError(
                    f"{self.log_path}: {what} not written ({exc.strerror or exc}); the log is as it was"
                ) from None
        return len(lines)

    def lookup(
        self,
        requirement: str,
        eligible: Eligibility,
        *,
        capacity: int | None = None,
        embedding: Sequence[float] | None = None,
    ) -> list[tuple[MemoryEntry, float]]:
        """At most ``capacity`` eligible entries most similar to ``requirement`` — a :func:`memory_key` —
        (ineligible ones are never scored), each with its similarity, best first; ties go to the most recent
        entry."""
        cap = self.capacity if capacity is None else capacity
        if cap <= 0:
            return []
        terms = content_terms(requirement)
        scored = []
        for e in self.entries():
            if not eligible(e):
                continue
            s = similarity(terms, e.terms, embedding, e.embedding)
            if s >= self.min_similarity:
                scored.append((s, e.position, e))
        scored.sort(key=lambda x: (x[0], x[1]), reverse=True)
        return [(e, s) for s, _, e in scored[:cap]]


def memory_signal(served: Iterable[tuple[int | None, bool, float, float]]) -> tuple[dict[int, float], int]:
    """The prior's memory signal for one requirement from the entries its lookup served, each given as
    (the index of its document in the folder now, or None if gone; whether the document's content is unchanged
    since the entry was confirmed; the lookup similarity; the entry's posterior): ``{document index: max of
    similarity × posterior}`` over the fresh entries — an entry speaks as loudly as the evidence that admitted it
    (certified ≈ 1; a finding admitted at a low posterior only nudges the prior) —, and how many served entries
    were stale (ignored). The agent and the PIT audit both use it."""
    signal: dict[int, float] = {}
    stale = 0
    for doc, fresh, sim, posterior in served:
        if doc is None or doc < 0 or not fresh:
            stale += 1
            continue
        signal[doc] = max(signal.get(doc, 0.0), float(sim) * float(posterior))
    return signal, stale


def memory_signals(
    store: MemoryStore,
    keys: Mapping[str, str],
    view: Any,
    eligible: Eligibility,
    capacity: int,
) -> tuple[dict[str, dict[int, float]], int]:
    """Per requirement (``keys``: its :func:`memory_key`), the prior's memory signal from the eligible, similar
    entries whose document in ``view`` (a ``CorpusView``) is unchanged; and how many served entries were stale."""
    by_id = dict(zip(view.stats.doc_id, range(len(view.stats))))
    signals: dict[str, dict[int, float]] = {}
    stale = 0
    for rid, key in keys.items():
        served = store.lookup(key, eligible, capacity=capacity)
        signal, n_stale = memory_signal(
            (idx, idx is not None and view.stats.sha256(idx) == e.sha256, sim, e.posterior)
            for e, sim in served
            for idx in [by_id.get(e.doc_id)]
        )
        stale += n_stale
        if signal:
            signals[rid] = signal
    return signals, stale


def new_entry(
    *,
    position: int,
    question: str,
    requirement: str,
    path: str,
    doc_id: str,
    first: int,
    last: int,
    line_start: int,
    line_end: int,
    value: str,
    sha256: str,
    embedding: Sequence[float] | None = None,
    posterior: float = 1.0,
    certified: bool = True,
    verified: bool = True,
) -> MemoryEntry:
    return MemoryEntry(
        position=position,
        observed_at=time.time(),
        question=question,
        requirement=requirement,
        terms=tuple(content_terms(memory_key(question, requirement))),
        path=path,
        doc_id=doc_id,
        first=first,
        last=last,
        line_start=line_start,
        line_end=line_end,
        value=value,
        sha256=sha256,
        embedding=tuple(embedding) if embedding is not None else None,
        posterior=float(posterior),
        certified=bool(certified),
        verified=bool(verified),
    )
