"""Workloads, shared by the audit and ``lens bench stream``: typed assets and queries with gold asset ids, and
the BEIR loader (HotpotQA workloads: :func:`harness.audit.inputs.load_hotpotqa`).

A :class:`Workload` keeps relevance labels apart from everything else. Stream construction, the event log and
the trace memory take :meth:`Workload.requests` (id, text, timestamp — no labels) and never the workload;
only metrics and the label-based stress tests (positive-feedback cache, gold-overlap stream) receive
:meth:`Workload.gold`, and they say so in their names.

Loaders:

- :func:`load_beir` — ``corpus.jsonl`` (``_id``, ``text``, optional ``title`` and ``type``), ``queries.jsonl``
  (``_id``, ``text``, optional ``timestamp``: number or ISO 8601), ``qrels/<split>.tsv`` (``query-id``,
  ``corpus-id``, ``score``; score > 0 is relevant).
- :func:`harness.audit.inputs.load_hotpotqa` — assets are the articles of a ``wiki_articles.jsonl`` pool (id =
  title, type ``article``), queries are the questions of an official HotpotQA JSON file, gold = supporting-fact
  titles (matched by :func:`harness.bench.datasets.article_key`).

Every loader hashes the files it read (sha256) into ``Workload.sources``; errors name the file, the line or
record, and the field.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

from harness.files import canonical_json, read_jsonl, sha256_bytes, sha256_file
from lens import LensError

__all__ = [
    "InputError",
    "Asset",
    "Query",
    "Request",
    "GoldLabels",
    "Workload",
    "load_beir",
    "make_workload",
    "workload_summary",
]

log = logging.getLogger(__name__)


class InputError(LensError, ValueError):
    """An audit input file is missing or malformed; the message names file, line and field."""


@dataclass(frozen=True)
class Asset:
    """One retrievable unit (a table, a passage, an article)."""

    id: str
    type: str
    text: str


@dataclass(frozen=True)
class Query:
    """A request with its gold product (the asset ids that satisfy it) and an optional arrival time."""

    id: str
    text: str
    gold: tuple[str, ...]
    timestamp: float | None = None


@dataclass(frozen=True)
class Request:
    """The label-free view of a :class:`Query`: all that streams, event logs and trace memory may see."""

    id: str
    text: str
    timestamp: float | None = None


@dataclass(frozen=True)
class GoldLabels:
    """Gold products as a CSR table over workload query order: the gold asset indices of query ``q`` are
    ``indices[indptr[q]:indptr[q+1]]`` (sorted, unique)."""

    indptr: np.ndarray
    indices: np.ndarray
    n_assets: int

    def __post_init__(self) -> None:
        self.indptr.flags.writeable = False
        self.indices.flags.writeable = False

    @property
    def n_queries(self) -> int:
        return self.indptr.size - 1

    def sizes(self) -> np.ndarray:
        return np.diff(self.indptr)

    def of(self, q: int) -> np.ndarray:
        return self.indices[self.indptr[q] : self.indptr[q + 1]]

    def keys(self) -> np.ndarray:
        """Sorted ``query * n_assets + asset`` for every gold pair (for vectorised membership tests)."""
        rows = np.repeat(np.arange(self.n_queries, dtype=np.int64), self.sizes())
        return np.sort(rows * self.n_assets + self.indices.astype(np.int64))


@dataclass(frozen=True)
class Workload:
    """Assets and queries of one audit workload, with the hashes of the files they came from."""

    name: str
    assets: tuple[Asset, ...]
    queries: tuple[Query, ...]
    sources: Mapping[str, str] = field(default_factory=dict)  # file path -> sha256
    notes: Mapping[str, int] = field(default_factory=dict)  # counts of skipped records, by reason

    def __post_init__(self) -> None:
        if not self.assets:
            raise InputError(f"{self.name}: workload has no assets")
        if not self.queries:
            raise InputError(f"{self.name}: workload has no queries with gold assets")
        ids = [a.id for a in self.assets]
        if len(set(ids)) != len(ids):
            raise InputError(f"{self.name}: asset ids are not unique")
        qids = [q.id for q in self.queries]
        if len(set(qids)) != len(qids):
            raise InputError(f"{self.name}: query ids are not unique")
        known = set(ids)
        for q in self.queries:
            if not q.gold:
                raise InputError(f"{self.name}: query {q.id!r} has no gold assets")
            missing = [g for g in q.gold if g not in known]
            if missing:
                raise InputError(f"{self.name}: query {q.id!r} names unknown gold asset {missing[0]!r}")

    # -- label-free and label views -----------------------------------------------------------------------
    def requests(self) -> tuple[Request, ...]:
        """The queries without their labels, in workload order."""
        return tuple(Request(q.id, q.text, q.timestamp) for q in self.queries)

    def gold(self) -> GoldLabels:
        """Gold products over workload query order (for metrics and label-based stress tests only)."""
        pos = self.asset_index()
        indptr = [0]
        indices: list[int] = []
        for q in self.queries:
            g = sorted({pos[a] for a in q.gold})
            indices.extend(g)
            indptr.append(len(indices))
        return GoldLabels(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64), len(self.assets))

    # -- lookups ------------------------------------------------------------------------------------------
    def asset_index(self) -> dict[str, int]:
        return {a.id: i for i, a in enumerate(self.assets)}

    def type_names(self) -> tuple[str, ...]:
        return tuple(sorted({a.type for a in self.assets}))

    def asset_type_codes(self) -> np.ndarray:
        """Per asset, the index of its type in :meth:`type_names`."""
        names = {t: i for i, t in enumerate(self.type_names())}
        return np.asarray([names[a.type] for a in self.assets], dtype=np.int64)

    def id_order(self) -> np.ndarray:
        """Per asset, its rank when asset ids are sorted: the tie-breaker "by asset id" in every ranking."""
        order = sorted(range(len(self.assets)), key=lambda i: self.assets[i].id)
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        return rank

    # -- hashes -------------------------------------------------------------------------------------------
    @property
    def corpus_hash(self) -> str:
        """sha256 over the ordered (id, type, text) of every asset."""
        return sha256_bytes(canonical_json([[a.id, a.type, a.text] for a in self.assets]))

    @property
    def types_hash(self) -> str:
        return sha256_bytes(canonical_json([a.type for a in self.assets]))

    @property
    def queries_hash(self) -> str:
        """sha256 over the ordered label-free requests (id, text, timestamp)."""
        return sha256_bytes(canonical_json([[q.id, q.text, q.timestamp] for q in self.queries]))

    @property
    def labels_hash(self) -> str:
        return sha256_bytes(canonical_json([[q.id, sorted(q.gold)] for q in self.queries]))


def make_workload(
    name: str,
    assets: Iterable[Asset],
    queries: Iterable[Query],
    sources: Mapping[str, str] | None = None,
    notes: Mapping[str, int] | None = None,
) -> Workload:
    """Build a :class:`Workload` (validates unique ids and that every gold id names an asset)."""
    return Workload(name, tuple(assets), tuple(queries), dict(sources or {}), dict(notes or {}))


# --------------------------------------------------------------------------------------------- BEIR


def _parse_timestamp(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f'{where}: field "timestamp" is a boolean, expected a number or ISO 8601 string')
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise InputError(f'{where}: field "timestamp" {value!r} is not ISO 8601') from None
    raise InputError(f'{where}: field "timestamp" must be a number or ISO 8601 string')


def _iter_jsonl(path: Path) -> Iterable[tuple[str, dict]]:
    for lineno, obj in read_jsonl(path, InputError):
        yield f"{path}: line {lineno}", obj


def _str_field(obj: dict, name: str, where: str, *, required: bool = True) -> str:
    if name not in obj or obj[name] is None:
        if required:
            raise InputError(f'{where}: field "{name}" missing')
        return ""
    value = obj[name]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and name == "_id":
        return str(value)
    if not isinstance(value, str):
        raise InputError(f'{where}: field "{name}" is not a string')
    return value


def _qrels_file(folder: Path, split: str | None) -> Path:
    qdir = folder / "qrels"
    if not qdir.is_dir():
        raise InputError(f"{folder}: no qrels/ folder")
    if split:
        path = qdir / f"{split}.tsv"
        if not path.is_file():
            have = ", ".join(sorted(p.stem for p in qdir.glob("*.tsv"))) or "none"
            raise InputError(f"{path}: no such qrels split (have: {have})")
        return path
    files = sorted(qdir.glob("*.tsv"))
    if len(files) != 1:
        have = ", ".join(p.stem for p in files) or "none"
        raise InputError(f"{qdir}: name the qrels split to use (have: {have})")
    return files[0]


def load_beir(folder: str | os.PathLike, *, split: str | None = None, name: str | None = None) -> Workload:
    """A workload from a BEIR-layout folder.

    Asset text is ``title`` + newline + ``text`` when a title is present; ``type`` defaults to ``text``.
    Queries without any relevant qrel are dropped, and qrels naming an unknown asset or query are skipped;
    both are counted in ``Workload.notes`` and logged. Raises :class:`InputError` on a missing file or a
    malformed record.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    corpus_path, queries_path = folder / "corpus.jsonl", folder / "queries.jsonl"
    qrels_path = _qrels_file(folder, split)

    assets: list[Asset] = []
    for where, obj in _iter_jsonl(corpus_path):
        aid = _str_field(obj, "_id", where)
        if not aid:
            raise InputError(f'{where}: field "_id" is empty')
        title = _str_field(obj, "title", where, required=False).strip()
        text = _str_field(obj, "text", where)
        atype = _str_field(obj, "type", where, required=False) or "text"
        assets.append(Asset(aid, atype, f"{title}\n{text}" if title else text))
    if not assets:
        raise InputError(f"{corpus_path}: no assets")
    known_assets = {a.id for a in assets}
    if len(known_assets) != len(assets):
        raise InputError(f"{corpus_path}: asset ids are not unique")

    raw_queries: list[tuple[str, str, float | None]] = []
    for where, obj in _iter_jsonl(queries_path):
        qid = _str_field(obj, "_id", where)
        text = _str_field(obj, "text", where)
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        ts = _parse_timestamp(obj.get("timestamp", meta.get("timestamp")), where)
        raw_queries.append((qid, text, ts))

    gold: dict[str, list[str]] = {}
    notes = {"qrels_unknown_asset": 0, "qrels_unknown_query": 0, "queries_without_gold": 0}
    known_queries = {q[0] for q in raw_queries}
    with open(qrels_path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\n\r")
            if not line.strip():
                continue
            parts = line.split("\t")
            if lineno == 1 and parts and parts[0].strip().lower() in {"query-id", "query_id", "qid"}:
                continue
            if len(parts) < 3:
                raise InputError(f"{qrels_path}: line {lineno}: expected query-id, corpus-id, score (tab-separated)")
            qid, aid, score_s = parts[0].strip(), parts[1].strip(), parts[2].strip()
            try:
                score = float(score_s)
            except ValueError:
                raise InputError(f"{qrels_path}: line {lineno}: score {score_s!r} is not a number") from None
            if score <= 0:
                continue
            if qid not in known_queries:
                notes["qrels_unknown_query"] += 1
                continue
            if aid not in known_assets:
                notes["qrels_unknown_asset"] += 1
                continue
            lst = gold.setdefault(qid, [])
            if aid not in lst:
                lst.append(aid)

    queries = []
    for qid, text, ts in raw_queries:
        if qid not in gold:
            notes["queries_without_gold"] += 1
            continue
        queries.append(Query(qid, text, tuple(gold[qid]), ts))
    for reason, count in notes.items():
        if count:
            log.warning("%s: skipped %d (%s)", folder, count, reason.replace("_", " "))
    sources = {str(p): sha256_file(p) for p in (corpus_path, queries_path, qrels_path)}
    return make_workload(name or folder.name, assets, queries, sources, notes)


def workload_summary(w: Workload) -> dict[str, object]:
    """Counts recorded in the manifest: assets by type, queries, gold per query, label sharing."""
    gold = w.gold()
    sizes = gold.sizes()
    owners = np.bincount(gold.indices, minlength=len(w.assets))
    shared = sum(1 for q in range(gold.n_queries) if (owners[gold.of(q)] > 1).any())
    by_type: dict[str, int] = {}
    for a in w.assets:
        by_type[a.type] = by_type.get(a.type, 0) + 1
    return {
        "assets": len(w.assets),
        "assets_by_type": by_type,
        "queries": len(w.queries),
        "gold_per_query_mean": float(sizes.mean()),
        "queries_sharing_a_gold_asset": int(shared),
        "skipped": dict(w.notes),
    }
