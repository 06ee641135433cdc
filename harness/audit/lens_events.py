"""LENS warm-reuse memory events: label-free records of a ``lens bench run``, and the append-only event log.

**Source.** The rows of the ``lens`` system in a ``lens bench run`` folder (``RUN_DIR/rows.jsonl``). From each row
:func:`record_from_row` reads only what the agent *did* — the question id and text, its bench position, and in
``prediction.details`` the requirements it confirmed and the evidence windows it cited — and never the row's
labels (``gold_answer``, ``gold_titles``, ``scores``, ``type``, ``level``): those keys are not looked at.

What one question confirmed becomes that question's warm-reuse memory entries, exactly the fields
``lens.memory._memory.new_entry`` takes (requirement text, path, doc id, sentence and line range, observed value, the
sha256 of the file content read). Two row layouts are read, best first:

1. ``prediction.details["memory_entries"]`` — the entries the agent itself would append (``Agent._remember``):
   a list of objects with ``requirement, path, doc_id, first, last, line_start, line_end, value, sha256`` and,
   since entries are admitted by calibrated posterior rather than certification, ``posterior`` and
   ``certified`` (absent in older rows: read as certified, posterior 1), which the log keeps;
2. ``prediction.details["requirements"]`` (``RequirementStatus.to_dict()``: ``id, text, status, value,
   evidence``) with ``prediction.details["evidence"]`` (``Evidence.to_dict()``: ``id, path, doc_id,
   first_sentence, last_sentence, line_start, line_end, sha256, requirements, status``): every *certified*
   requirement gives one entry per *confirmed* evidence region that lists it. Consolidation builds each such
   region from the requirement's favoured window and verified span (widened by one sentence), so the document,
   content hash, requirement text and value are those ``Agent._remember`` writes; only the sentence range may be
   one sentence wider.

A row that answered (no ``error``) but carries neither layout is refused, naming the fields to add. The
question's own decomposition (``prediction.details["decomposition"]``, ``AskResult.decomposition``) gives the
requirements an anchor looks the memory up with; without it, the agent's no-LLM fallback decomposition of the
question text is used and the record says so (``decomposition_source = "heuristic"``).

**Event log.** :meth:`LensEventLog.build` walks a stream in order and appends, at position ``j``, the entries of
the question that arrives at ``j`` (its position stamped on every entry; ``observed_at`` is the stream clock
``j``, not the bench run's wall time). It is then frozen: conditions read it and never write it. The log is saved
in the memory's own format (``memory.jsonl``), so a :class:`lens.MemoryStore` can read a saved log as it is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from harness.audit.events import AppendOnlyLog
from harness.files import atomic_write, canonical_json, sha256_bytes, sha256_file
from harness.streams import Stream
from lens import LensError, MemoryEntry
from lens.parts import heuristic_decomposition, new_entry

__all__ = [
    "LABEL_FIELDS",
    "LensRunError",
    "ConfirmedEntry",
    "LensRecord",
    "LensRun",
    "record_from_row",
    "load_lens_run",
    "LensEventLog",
    "rows_digest",
]

# Row keys that hold labels or scores computed from them: the event source never reads them.
LABEL_FIELDS = frozenset({"gold_answer", "gold_titles", "gold_assets", "scores", "type", "level"})
_ENTRY_FIELDS = ("requirement", "path", "doc_id", "first", "last", "line_start", "line_end", "value", "sha256")
NEEDED = (
    'prediction.details["requirements"][*].{text, status, value, evidence} (RequirementStatus.to_dict()) and '
    'prediction.details["evidence"][*] (Evidence.to_dict(): id, path, doc_id, first_sentence, last_sentence, '
    'line_start, line_end, sha256, requirements, status) — or prediction.details["memory_entries"]'
)


class LensRunError(LensError):
    """The bench run folder or one of its rows cannot serve as a LENS memory event source."""


@dataclass(frozen=True)
class ConfirmedEntry:
    """One piece of evidence a question confirmed, before it has a stream position."""

    requirement: str
    path: str
    doc_id: str
    first: int
    last: int
    line_start: int
    line_end: int
    value: str
    sha256: str
    posterior: float = 1.0  # the calibrated posterior the agent recorded (rows before it: certified, 1.0)
    certified: bool = True


@dataclass(frozen=True)
class LensRecord:
    """What LENS did for one question (label-free)."""

    question_id: str
    question: str
    bench_position: int
    confirmed: tuple[ConfirmedEntry, ...]
    requirements: tuple[Mapping[str, Any], ...]  # the question's own decomposition (id, text, cues, depends_on, entity)
    decomposition_source: str  # "run" | "heuristic"
    event_source: str  # "memory_entries" | "evidence" | "error"
    error: str | None = None


def _int(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v:
        raise LensRunError(f"{where}: expected an integer, got {v!r}")
    return int(v)


def _float(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
        raise LensRunError(f"{where}: field 'posterior': expected a probability, got {v!r}")
    return float(v)


def _str(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise LensRunError(f"{where}: expected a string, got {type(v).__name__}")
    return v


def _from_memory_entries(items: Any, where: str) -> tuple[ConfirmedEntry, ...]:
    if not isinstance(items, list):
        raise LensRunError(f"{where}: details.memory_entries is not a list")
    out = []
    for k, e in enumerate(items):
        w = f"{where}: details.memory_entries[{k}]"
        if not isinstance(e, dict):
            raise LensRunError(f"{w}: not an object")
        missing = [f for f in _ENTRY_FIELDS if f not in e]
        if missing:
            raise LensRunError(f"{w}: field {missing[0]!r} missing")
        out.append(
            ConfirmedEntry(
                _str(e["requirement"], w),
                _str(e["path"], w),
                _str(e["doc_id"], w),
                _int(e["first"], w),
                _int(e["last"], w),
                _int(e["line_start"], w),
                _int(e["line_end"], w),
                _str(e["value"] or "", w),
                _str(e["sha256"], w),
                _float(e.get("posterior", 1.0), w),
                bool(e.get("certified", True)),
            )
        )
    return tuple(out)


def _from_evidence(reqs: Any, evidence: Any, where: str) -> tuple[ConfirmedEntry, ...]:
    if not isinstance(reqs, list) or not isinstance(evidence, list):
        raise LensRunError(f"{where}: details.requirements / details.evidence are not lists")
    by_id: dict[str, dict] = {}
    for k, e in enumerate(evidence):
        w = f"{where}: details.evidence[{k}]"
        if not isinstance(e, dict):
            raise LensRunError(f"{w}: not an object")
        for f in (
            "id",
            "path",
            "doc_id",
            "first_sentence",
            "last_sentence",
            "line_start",
            "line_end",
            "sha256",
            "requirements",
            "status",
        ):
            if f not in e:
                raise LensRunError(f"{w}: field {f!r} missing (needed: {NEEDED})")
        by_id[_str(e["id"], w)] = e
    out: list[ConfirmedEntry] = []
    for k, r in enumerate(reqs):
        w = f"{where}: details.requirements[{k}]"
        if not isinstance(r, dict):
            raise LensRunError(f"{w}: not an object")
        if r.get("status") != "certified":
            continue
        for f in ("id", "text", "value"):
            if f not in r:
                raise LensRunError(f"{w}: field {f!r} missing (needed: {NEEDED})")
        rid = _str(r["id"], w)
        ev_ids = r.get("evidence")
        if ev_ids is None:
            ev_ids = [eid for eid, e in by_id.items() if rid in (e.get("requirements") or [])]
        seen: set[str] = set()
        for eid in ev_ids:
            e = by_id.get(eid)
            if e is None:
                raise LensRunError(f"{w}: evidence id {eid!r} is not in details.evidence")
            if e["status"] != "confirmed" or rid not in (e["requirements"] or []):
                continue
            we = f"{where}: details.evidence[{eid}]"
            doc = _str(e["doc_id"], we)
            if doc in seen:
                continue
            seen.add(doc)
            out.append(
                ConfirmedEntry(
                    _str(r["text"], w),
                    _str(e["path"], we),
                    doc,
                    _int(e["first_sentence"], we),
                    _int(e["last_sentence"], we),
                    _int(e["line_start"], we),
                    _int(e["line_end"], we),
                    _str(r["value"] or "", w),
                    _str(e["sha256"], we),
                )
            )
    return tuple(out)


def _decomposition(details: Mapping[str, Any], question: str, where: str) -> tuple[tuple[Mapping[str, Any], ...], str]:
    dec = details.get("decomposition")
    if isinstance(dec, dict) and isinstance(dec.get("requirements"), list) and dec["requirements"]:
        reqs = []
        for k, r in enumerate(dec["requirements"]):
            w = f"{where}: details.decomposition.requirements[{k}]"
            if not isinstance(r, dict) or "id" not in r or "text" not in r:
                raise LensRunError(f"{w}: needs 'id' and 'text'")
            reqs.append(
                {
                    "id": _str(r["id"], w),
                    "text": _str(r["text"], w),
                    "cues": [str(c) for c in (r.get("cues") or [])],
                    "depends_on": r.get("depends_on"),
                    "entity": r.get("entity"),
                }
            )
        return tuple(reqs), "run"

    d = heuristic_decomposition(question)
    return tuple(
        {"id": r.id, "text": r.text, "cues": list(r.cues), "depends_on": r.depends_on, "entity": r.entity}
        for r in d.requirements
    ), "heuristic"


def record_from_row(row: Mapping[str, Any], where: str = "row") -> LensRecord:
    """The label-free record of one ``lens`` bench row. Reads ``question_id``, ``question``, ``position`` and
    ``prediction`` only — never a key of :data:`LABEL_FIELDS`."""
    for f in ("question_id", "question", "position", "prediction"):
        if f not in row:
            raise LensRunError(f"{where}: field {f!r} missing")
    qid = _str(row["question_id"], where)
    where = f"{where} (question {qid})"
    question = _str(row["question"], where)
    pred = row["prediction"]
    if not isinstance(pred, dict):
        raise LensRunError(f"{where}: prediction is not an object")
    details = pred.get("details") or {}
    if not isinstance(details, dict):
        raise LensRunError(f"{where}: prediction.details is not an object")
    error = pred.get("error")
    requirements, dsource = _decomposition(details, question, where)
    if "memory_entries" in details:
        confirmed, source = _from_memory_entries(details["memory_entries"], where), "memory_entries"
    elif isinstance(details.get("evidence"), list) and all(
        isinstance(r, dict) and "text" in r for r in details.get("requirements") or []
    ):
        confirmed, source = _from_evidence(details.get("requirements") or [], details["evidence"], where), "evidence"
    elif error:
        confirmed, source = (), "error"
    else:
        raise LensRunError(
            f"{where}: the lens row does not record what the agent confirmed; the LENS arm must add {NEEDED}"
        )
    return LensRecord(qid, question, _int(row["position"], where), confirmed, requirements, dsource, source, error)


@dataclass(frozen=True)
class LensRun:
    """The ``lens`` rows of one bench run folder, as label-free records in bench order, with the run's bindings."""

    folder: Path
    system: str
    system_hash: str
    records: tuple[LensRecord, ...]
    config: Mapping[str, Any]  # the run's canonical LENS configuration
    config_hash: str
    binding: Mapping[str, Any]
    binding_hash: str
    corpus_checksum: str | None
    rows_sha256: str
    manifest_sha256: str
    snapshot_path: str | None = None  # the folder the run read (its manifest's snapshot.path)
    kind: str = "bench"  # "bench" (`lens bench run`) or "stream" (`lens bench stream`: positions are its stream)

    @property
    def event_sources(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records:
            out[r.event_source] = out.get(r.event_source, 0) + 1
        return dict(sorted(out.items()))

    @property
    def decomposition_sources(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records:
            out[r.decomposition_source] = out.get(r.decomposition_source, 0) + 1
        return dict(sorted(out.items()))


def load_lens_run(run_dir: str | Path, system: str = "lens", system_hash: str | None = None) -> LensRun:
    """Read the ``system`` rows of a ``lens bench run`` (or ``lens bench stream``) folder (label-free). Raises
    :class:`LensRunError` naming the file, line and field when the folder or a row cannot serve; refuses a folder
    holding rows of several ``system_hash`` values for ``system`` unless ``system_hash`` picks one."""
    folder = Path(run_dir)
    mpath, rpath = folder / "manifest.json", folder / "rows.jsonl"
    if not mpath.is_file() or not rpath.is_file():
        raise LensRunError(f"{folder}: not a lens bench run folder (needs manifest.json and rows.jsonl)")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LensRunError(f"{mpath}: unreadable run manifest ({exc})") from None
    rows: list[tuple[int, dict]] = []
    with open(rpath, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            if not raw.endswith(b"\n"):
                break  # a row a kill interrupted: the bench run reruns it; it is not an event
            try:
                row = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise LensRunError(f"{rpath}:{n}: malformed JSON ({exc.msg})") from None
            if isinstance(row, dict) and row.get("system") == system:
                rows.append((n, row))
    if not rows:
        raise LensRunError(f"{rpath}: no rows of system {system!r}")
    hashes = sorted({str(r.get("system_hash")) for _, r in rows})
    if system_hash is not None:
        rows = [(n, r) for n, r in rows if r.get("system_hash") == system_hash]
        if not rows:
            raise LensRunError(
                f"{rpath}: no {system!r} rows with system_hash {system_hash} (found: {', '.join(hashes)})"
            )
    elif len(hashes) > 1:
        raise LensRunError(
            f"{rpath}: {system!r} rows of {len(hashes)} system hashes ({', '.join(h[:12] for h in hashes)}); pick one"
        )
    records: dict[str, LensRecord] = {}
    for n, row in rows:
        rec = record_from_row(row, f"{rpath}:{n}")
        if rec.question_id in records:
            raise LensRunError(f"{rpath}:{n}: question {rec.question_id} has two {system!r} rows")
        records[rec.question_id] = rec
    ordered = tuple(sorted(records.values(), key=lambda r: (r.bench_position, r.question_id)))
    binding = manifest.get("binding") or {}
    corpus = (binding.get("corpus") or {}).get("corpus_checksum")
    stream_run = manifest.get("format") == "lens-stream-run/1"  # `lens bench stream`: the folder, the stream
    return LensRun(
        folder=folder,
        system=system,
        system_hash=str(rows[0][1].get("system_hash")),
        records=ordered,
        config=manifest.get("config") or {},
        config_hash=str(binding.get("config_hash") if stream_run else manifest.get("config_hash")),
        binding=binding,
        binding_hash=str(manifest.get("binding_hash")),
        corpus_checksum=binding.get("folder_checksum") if stream_run else corpus,
        rows_sha256=sha256_file(rpath),
        manifest_sha256=sha256_file(mpath),
        snapshot_path=manifest.get("folder") if stream_run else (manifest.get("snapshot") or {}).get("path"),
        kind="stream" if stream_run else "bench",
    )


class LensEventLog(AppendOnlyLog):
    """Append-only log of LENS memory entries over one stream: position ``j`` holds the entries of the question
    that arrived at ``j`` (possibly none). Frozen after :meth:`build`; read-only afterwards."""

    kind = "LENS event log"

    def __init__(self, version: str) -> None:
        super().__init__(version)
        self._entries: list[MemoryEntry] = []
        self._query_ids: list[str] = []

    def append(self, query_id: str, question: str, confirmed: Sequence[ConfirmedEntry]) -> int:
        """Append the next position's entries; returns the position. Refuses once frozen."""
        self._writable()
        j = len(self._query_ids)
        for c in confirmed:
            e = new_entry(
                position=j,
                question=question,
                requirement=c.requirement,
                path=c.path,
                doc_id=c.doc_id,
                first=c.first,
                last=c.last,
                line_start=c.line_start,
                line_end=c.line_end,
                value=c.value,
                sha256=c.sha256,
                posterior=c.posterior,
                certified=c.certified,
            )
            self._entries.append(dataclasses.replace(e, observed_at=float(j)))
        self._query_ids.append(str(query_id))
        return j

    def _seal(self) -> None:
        self.entries: tuple[MemoryEntry, ...] = tuple(self._entries)
        self.query_ids: tuple[str, ...] = tuple(self._query_ids)
        self.entry_pos = np.asarray([e.position for e in self.entries], dtype=np.int64)
        self.entry_pos.flags.writeable = False
        self.position_of = {q: j for j, q in enumerate(self.query_ids)}
        del self._entries

    @classmethod
    def build(cls, stream: Stream, records: Mapping[str, LensRecord], *, version: str) -> "LensEventLog":
        """Walk ``stream`` in order, appending each arriving question's confirmed entries. Frozen on return."""
        log = cls(version)
        for j, qid in enumerate(stream.query_ids):
            rec = records[qid]
            pos = log.append(qid, rec.question, rec.confirmed)
            assert pos == j
        return log.freeze()

    def __len__(self) -> int:
        return len(self._query_ids) if not self._frozen else len(self.query_ids)

    def owner(self, entry: MemoryEntry) -> str:
        """The query id whose answer wrote ``entry`` (the position-to-query map)."""
        return self.query_ids[entry.position]

    def lines(self) -> bytes:
        """The log in ``memory.jsonl`` format (one ``MemoryEntry.to_json()`` per line)."""
        self._require_frozen()
        return "".join(e.to_json() + "\n" for e in self.entries).encode("utf-8")

    @property
    def hash(self) -> str:
        self._require_frozen()
        head = canonical_json({"version": self.version, "query_ids": list(self.query_ids)})
        return sha256_bytes(head + self.lines())

    def save(self, path: str | Path) -> Path:
        """Write the entries as a ``memory.jsonl`` file (readable by ``lens.MemoryStore``) and, beside it,
        ``<name>.positions.json`` (position → query id, version, hash)."""
        self._require_frozen()
        path = Path(path)
        atomic_write(path, self.lines())
        side = path.with_name(path.stem + ".positions.json")
        atomic_write(
            side, canonical_json({"version": self.version, "query_ids": list(self.query_ids), "hash": self.hash})
        )
        return path

    def _require_frozen(self) -> None:
        if not self._frozen:
            raise RuntimeError("the LENS event log is still being built")


def rows_digest(records: Iterable[LensRecord]) -> str:
    """sha256 over the label-free records (what the event source and the anchors' requirements came from)."""
    h = hashlib.sha256()
    for r in records:
        h.update(canonical_json(dataclasses.asdict(r)))
    return h.hexdigest()
