"""On-disk LLM response cache keyed by the canonical request.

The key is the sha256 of the sorted JSON of (model, messages, generation parameters). Credentials and URLs are
never part of the key or the stored entry, so a cache folder can be shared or published. Each entry is one
file written atomically (temporary file + rename), which makes the cache safe for concurrent threads and
processes: a reader sees either nothing or a complete entry.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from lens._files import atomic_write, canonical_hash

__all__ = ["ResponseCache", "request_key"]

log = logging.getLogger(__name__)


def request_key(request: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a request (model, messages, parameters; never key or URL)."""
    return canonical_hash(request)


class ResponseCache:
    """A folder of ``<key[:2]>/<key>.json`` entries, each ``{"request": ..., "response": ...}``. An entry that
    cannot be read or written (a folder that is a file or read-only, a full disk, an entry that is a folder) is
    a miss: the reply was paid for and is used; the first such failure is logged as a warning, later ones at
    debug level."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory)
        self._warned = False

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            with open(path, encoding="utf-8") as fh:
                entry = json.load(fh)
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        except OSError as exc:
            self._failed(f"cannot read {path} ({exc.strerror or exc}); treated as a miss")
            return None
        response = entry.get("response") if isinstance(entry, dict) else None
        return response if isinstance(response, dict) else None

    def put(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        data = json.dumps({"request": request, "response": response}, ensure_ascii=False).encode("utf-8")
        path = self._path(key)
        try:
            atomic_write(path, lambda fh: fh.write(data), durable=False)  # a lost entry is only a miss
        except OSError as exc:
            self._failed(
                f"cannot write {path} ({exc.strerror or exc}); the reply is used, not cached (a miss next time)"
            )

    def _failed(self, what: str) -> None:
        log.log(logging.DEBUG if self._warned else logging.WARNING, "llm cache %s: %s", self.directory, what)
        self._warned = True
