"""Files the harness writes and the hashes it binds them with — one home for each: sha256 of bytes and files,
the canonical JSON form that is hashed, the JSON text form of manifests, all-or-nothing writes, the opening of
the files a run keeps open (its lock, its append-only logs) that never follows a symbolic link, and the reading
back of JSON-lines files (rows, readings, id lists) with errors that name the file and line.

A file is either fully written or not there at all: the library's atomic writer (a temporary sibling, flushed,
fsynced, then ``os.replace``; on any failure the sibling is removed and the target is left as it was), and the
folder is fsynced so the rename is durable.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterator

from lens import LensError, parts

__all__ = [
    "sha256_bytes",
    "sha256_file",
    "canonical_json",
    "json_text",
    "atomic_write",
    "atomic_write_json",
    "write_text_atomic",
    "write_json_atomic",
    "open_regular",
    "read_jsonl",
    "read_id_list",
    "read_json_manifest",
]

_CHUNK = 1 << 20


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes (streamed; any size)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def canonical_json(obj: Any) -> bytes:
    """The byte form hashed everywhere: sorted keys, no whitespace, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None] | bytes) -> Path:
    """Write ``path`` all-or-nothing through the library's writer (:func:`lens.parts.atomic_write`): ``write`` is
    the bytes or a callable given the open (binary) temporary file; the usual permissions, file and folder
    fsynced."""
    return parts.atomic_write(path, write)


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Pretty JSON (sorted keys), written atomically."""
    return atomic_write(path, json_text(obj, indent=2).encode("utf-8"))


def json_text(obj: Any, *, indent: int = 1) -> str:
    """Deterministic, human-readable JSON (sorted keys, UTF-8 kept, trailing newline) of manifests and records."""
    return json.dumps(obj, sort_keys=True, indent=indent, ensure_ascii=False) + "\n"


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    return atomic_write(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as :func:`json_text` (1-space indent) to ``path`` atomically; returns the path."""
    return write_text_atomic(path, json_text(obj))


def open_regular(
    path: str | os.PathLike[str], flags: int, mode: int = 0o600, error: type[Exception] = LensError
) -> int:
    """``os.open`` (``flags``; with ``os.O_CREAT`` among them a missing file is created with ``mode``) of a file a
    run keeps open — its lock, its append-only logs — that refuses a symbolic link or anything but a regular file
    instead of writing through it (a link planted as ``run.lock`` would otherwise truncate its target); raises
    ``error`` naming the path. Any other OSError (no such file, permissions, a full disk) passes through."""
    # O_NONBLOCK: a FIFO planted there is refused, never waited on (it means nothing for a regular file)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error(f"{path}: is a symbolic link; refusing to write through it (remove it)") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise error(f"{path}: not a regular file; refusing to use it (remove it)") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise error(f"{path}: not a regular file; refusing to use it (remove it)")
    return fd


def read_jsonl(
    path: str | os.PathLike[str], error: type[Exception] = LensError, *, torn_tail: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line of a JSON-lines file as (line number, object); a line that is not a JSON object raises
    ``error`` naming the file and line. With ``torn_tail`` a malformed last line (a crash mid-write) is skipped."""
    path = Path(path)
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    torn: Exception | None = None
    with fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            if torn is not None:
                raise torn
            try:
                obj = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise error(f"{path}: line {n}: not UTF-8 (byte {exc.start})") from None
            except json.JSONDecodeError as exc:
                bad = error(f"{path}: line {n}: malformed JSON at column {exc.colno}: {exc.msg}")
                if not torn_tail:
                    raise bad from None
                torn = bad  # an error only if another line follows
                continue
            if not isinstance(obj, dict):
                raise error(f"{path}: line {n}: expected a JSON object")
            yield n, obj


def read_id_list(path: str | os.PathLike[str]) -> set[str]:
    """Question ids from a file: one id per line (``G500.txt``), a JSON list of ids or of questions (``_id``),
    or JSON lines with an ``id`` or ``_id`` field (e.g. a calibration run's ``readings.jsonl``)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LensError(f"{p}: cannot read the id list: {getattr(exc, 'strerror', None) or exc}") from None
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LensError(f"{p}: not a JSON list: {exc.msg} (line {exc.lineno})") from None
        return {str(q["_id"]) if isinstance(q, dict) else str(q) for q in items}
    if stripped.startswith("{"):
        out = set()
        for n, row in read_jsonl(p):
            qid = row.get("id", row.get("_id"))
            if qid is None:
                raise LensError(f'{p}: line {n}: no "id" or "_id" field')
            out.add(str(qid))
        return out
    return set(text.split())


def read_json_manifest(
    path: str | os.PathLike[str], fmt: str, what: str, error: type[Exception] = LensError, *, key: str = "format"
) -> dict[str, Any]:
    """A JSON manifest whose ``key`` field is ``fmt``; raises ``error`` naming the file when it is missing,
    unreadable or of another kind (``what`` names the kind in the message)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{p}: no such manifest") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{p}: unreadable {what} manifest: {exc}") from None
    if not isinstance(data, dict) or data.get(key) != fmt:
        raise error(f'{p}: not a {what} manifest (field "{key}" is not {fmt!r})')
    return data
