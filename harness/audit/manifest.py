"""Run manifests: the sha256 of every input and output, the bindings rows must agree with, written atomically.

``manifest.json`` in a run folder records the config (and its hash), every input file read (absolute path,
bytes, sha256), the bindings of each workload (corpus, queries, labels and type hashes; per retriever the
index hash; per stream its hash, seed, ``uses_gold`` and the event-log hash under each retriever), every output
file written (path relative to the run folder, bytes, sha256), the environment and stage timings. A report
folder gets its own manifest binding the run files it read to the tables and plots it wrote.

Checking a run (:func:`typed_manifest`, :func:`verify_outputs`, :func:`verify_manifest`) trusts none of it: every
field the check reads is typed, every file it names is hashed again, every file of the run folder must have an
entry, and the config hash, input hashes, row count, kind and stream bindings are recomputed from the files and
the config they name. Each disagreement is a message naming the file and field, never an exception.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import zipfile
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Iterable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError, field_validator

from harness.audit.config import AuditConfig, LensAuditConfig
from harness.files import atomic_write_json, read_json_manifest, sha256_file
from harness.streams import Stream
from lens import LensError

__all__ = [
    "MANIFEST_NAME",
    "UNLISTED",
    "file_record",
    "environment",
    "write_manifest",
    "load_manifest",
    "typed_manifest",
    "verify_outputs",
    "verify_manifest",
    "recorded_config",
]

MANIFEST_NAME = "manifest.json"
SCHEMA = "lens-pit-manifest/1"
# what a run folder may hold besides its listed outputs: the manifest itself, caches (base lists, embeddings, LLM
# responses), full mode's scratch memories, and the report (bound by its own manifest)
UNLISTED = (MANIFEST_NAME, "cache", "llm-cache", "full", "report")
# what reading a damaged run file raises (a zip that is not one, JSON that is not, fields missing or mistyped)
DAMAGE = (OSError, ValueError, KeyError, TypeError, IndexError, EOFError, zipfile.BadZipFile, LensError)

Hex64 = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
Count = Annotated[StrictInt, Field(ge=0)]


class _Typed(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class _FileEntry(_Typed):
    path: Annotated[StrictStr, Field(min_length=1)]
    bytes: Count
    sha256: Hex64


class _Output(_FileEntry):
    @field_validator("path")
    @classmethod
    def _inside(cls, v: str) -> str:
        p = PurePosixPath(v)
        if p.is_absolute() or ".." in p.parts or str(p) != v:
            raise ValueError("must be a plain path inside the run folder")
        return v


class _Input(_FileEntry):
    workload: StrictStr | None = None


class _StreamBinding(_Typed):
    hash: Hex64
    kind: StrictStr
    seed: StrictInt | None
    uses_gold: StrictBool
    events: dict[StrictStr, StrictStr]


class _Retriever(_Typed):
    index_hash: StrictStr


class _VectorsBinding(_Typed):
    hash: StrictStr


class _WorkloadBinding(_Typed):
    corpus_hash: StrictStr
    queries_hash: StrictStr
    labels_hash: StrictStr
    retrievers: dict[StrictStr, _Retriever]
    streams: dict[StrictStr, _StreamBinding]
    query_vectors: _VectorsBinding | None = None


class RunManifest(_Typed):
    """The fields of an audit run's manifest that its check reads, typed (others are kept as they are)."""

    kind: Literal["audit-run"]
    config_hash: Hex64
    data_root: StrictStr
    inputs: list[_Input]
    outputs: list[_Output]
    bindings: dict[StrictStr, _WorkloadBinding]
    rows: Count
    memory_kind: Literal["lens-memory"] | None = None


def file_record(path: Path, root: Path | None = None) -> dict[str, Any]:
    """``{"path", "bytes", "sha256"}`` for one file (path relative to ``root`` when given)."""
    path = Path(path)
    return {
        "path": str(path.relative_to(root)) if root is not None else str(path.resolve()),
        "bytes": path.stat().st_size,
        "sha256": sha256_file(path),
    }


def environment() -> dict[str, str]:
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    for mod in ("numpy", "scipy", "sklearn", "bm25s", "sentence_transformers", "torch"):
        m = sys.modules.get(mod)
        if m is not None:
            versions[mod] = getattr(m, "__version__", "?")
    return versions


def write_manifest(folder: Path, body: Mapping[str, Any], outputs: Iterable[Path]) -> Path:
    """Write ``folder/manifest.json``: ``body`` plus schema, time and the sha256 of each output file."""
    folder = Path(folder)
    record = {
        "schema": SCHEMA,
        "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **dict(body),
        "outputs": [file_record(p, folder) for p in sorted(set(Path(p) for p in outputs))],
    }
    return atomic_write_json(folder / MANIFEST_NAME, record)


def load_manifest(folder: Path) -> dict[str, Any]:
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        raise LensError(f"{folder}: no {MANIFEST_NAME} (not an audit run folder)")
    return read_json_manifest(path, SCHEMA, SCHEMA, key="schema")


def typed_manifest(manifest: Mapping[str, Any]) -> list[str]:
    """Messages for each field of a run manifest that is missing or of the wrong type (``MANIFEST_NAME: loc:
    what``); empty when the check can read every field it needs."""
    try:
        RunManifest.model_validate(dict(manifest))
    except ValidationError as exc:
        return [
            f"{MANIFEST_NAME}: {'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}" for e in exc.errors()
        ]
    return []


def verify_outputs(folder: Path, manifest: Mapping[str, Any]) -> list[str]:
    """Messages for each recorded output that is missing or whose bytes or sha256 changed, and for each file of
    the run folder that no entry lists (outside :data:`UNLISTED`). ``manifest`` is typed (:func:`typed_manifest`)."""
    folder = Path(folder)
    problems, listed = [], set()
    for rec in manifest["outputs"]:
        listed.add(rec["path"])
        p = folder / rec["path"]
        if not p.is_file():
            problems.append(f"{rec['path']} is missing")
        elif p.stat().st_size != rec["bytes"] or sha256_file(p) != rec["sha256"]:
            problems.append(f"{rec['path']} has changed since the run (bytes or sha256 differ from the manifest)")
    for dirpath, dirnames, filenames in os.walk(folder):
        rel = Path(dirpath).relative_to(folder)
        if rel == Path("."):
            dirnames[:] = [d for d in dirnames if d not in UNLISTED]
        for name in filenames:
            path = (rel / name).as_posix()
            if path not in listed and path not in UNLISTED:
                problems.append(f"{path} is in the run folder but has no entry in the manifest's outputs")
    return sorted(problems)


def verify_manifest(
    folder: Path, manifest: Mapping[str, Any], n_rows: int, data_root: str | Path | None = None
) -> list[str]:
    """Messages for each way the (typed) manifest disagrees with what it names: the config hash recomputed from
    the run's ``config.json`` (and the kind of memory it audits), every input file's bytes and sha256 (a path
    under the data root the run recorded is looked for under ``data_root`` when given), the row count, and each
    stream binding (hash, kind, seed, ``uses_gold``) against the run's saved stream."""
    folder = Path(folder)
    problems = _config_problems(folder, manifest)
    for i, rec in enumerate(manifest["inputs"]):
        p = Path(rec["path"])
        if data_root is not None:  # the data moved: look where the config's relative paths now resolve
            moved = Path(data_root) / os.path.relpath(p, manifest["data_root"])
            p = moved if moved.is_file() else p
        where = f"{MANIFEST_NAME}: inputs.{i} ({rec['path']})"
        if not p.is_file():
            problems.append(f"{where}: the file is missing, so the run's inputs cannot be verified")
        elif p.stat().st_size != rec["bytes"] or sha256_file(p) != rec["sha256"]:
            problems.append(f"{where}: bytes or sha256 differ from the file's")
    if manifest["rows"] != n_rows:
        problems.append(f"{MANIFEST_NAME}: rows: records {manifest['rows']}, rows.jsonl holds {n_rows}")
    for wl, binding in manifest["bindings"].items():
        for name, sb in binding["streams"].items():
            where = f"{MANIFEST_NAME}: bindings.{wl}.streams.{name}"
            path = folder / "streams" / wl / f"{name}.json"
            try:
                stream = Stream.load(path)
            except DAMAGE as exc:
                problems.append(f"{where}: its stream file {path.relative_to(folder)} cannot be read ({exc})")
                continue
            for field in ("hash", "kind", "seed", "uses_gold"):
                if getattr(stream, field) != sb[field]:
                    problems.append(
                        f"{where}.{field}: {sb[field]!r:.20}, the saved stream's is {getattr(stream, field)!r:.20}"
                    )
    return problems


def recorded_config(folder: Path) -> AuditConfig | LensAuditConfig:
    """The config a run recorded in its ``config.json``; raises ``LensError`` naming the file when it cannot be
    read or is not a valid audit config."""
    path = Path(folder) / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        config = data["config"]
        model = LensAuditConfig if isinstance(config, dict) and config.get("kind") == "lens-memory" else AuditConfig
        return model.model_validate(config)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise LensError(f"config.json: config.{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    except DAMAGE as exc:
        raise LensError(f"config.json: not a recorded audit config ({type(exc).__name__}: {exc})") from None


def _config_problems(folder: Path, manifest: Mapping[str, Any]) -> list[str]:
    try:
        config = recorded_config(folder)
        recorded = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("config_hash")
    except LensError as exc:
        return [f"{exc}; the manifest's config hash cannot be recomputed"]
    problems = []
    if manifest["config_hash"] != config.hash:
        problems.append(f"{MANIFEST_NAME}: config_hash differs from the hash of the config in config.json")
    if recorded != config.hash:
        problems.append("config.json: config_hash differs from the hash of the config it holds")
    lens_memory = isinstance(config, LensAuditConfig)
    if (manifest.get("memory_kind") == "lens-memory") != lens_memory:
        problems.append(f"{MANIFEST_NAME}: memory_kind disagrees with the kind of the config in config.json")
    return problems
