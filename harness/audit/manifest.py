"""Run manifests: the sha256 of every input and output, the bindings rows must agree with, written atomically.

``manifest.json`` in a run folder records the config (and its hash), every input file read (absolute path,
bytes, sha256), the bindings of each workload (corpus, queries, labels and type hashes; per retriever the
index hash; per stream its hash, seed, ``uses_gold`` and the event-log hash under each retriever), every output
file written (path relative to the run folder, bytes, sha256), the environment and stage timings. A report
folder gets its own manifest binding the run files it read to the tables and plots it wrote.
"""

from __future__ import annotations

import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.files import atomic_write_json, read_json_manifest, sha256_file
from lens import LensError

__all__ = ["MANIFEST_NAME", "file_record", "environment", "write_manifest", "load_manifest", "verify_outputs"]

MANIFEST_NAME = "manifest.json"
SCHEMA = "lens-pit-manifest/1"


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


def verify_outputs(folder: Path, manifest: Mapping[str, Any]) -> list[str]:
    """Messages for each recorded output that is missing or whose sha256 changed."""
    problems = []
    for rec in manifest.get("outputs", []):
        p = Path(folder) / rec["path"]
        if not p.is_file():
            problems.append(f"{rec['path']} is missing")
        elif sha256_file(p) != rec["sha256"]:
            problems.append(f"{rec['path']} has changed since the run (sha256 differs from the manifest)")
    return problems
