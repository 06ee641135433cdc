"""A run folder on disk: ``manifest.json`` (atomic) and ``rows.jsonl`` (one row per (system, question), appended).

Promises
- A row is appended as one ``write`` of one JSON line, then fsynced, when its question finishes. If the process
  dies mid-write the file ends in a partial line; :meth:`RowLog.recover` cuts it off (that row never counted and
  its job runs again). A failed write (disk full) is cut back at once, so no half row is ever left behind.
- Every row carries the run's ``binding_hash`` and ``config_hash`` and its arm's ``system_hash``; reading checks
  them against the manifest, and a row key ``(system_hash, question_id)`` can occur only once. A file that breaks
  either rule is refused, never averaged.
- The manifest is replaced atomically (temporary file, fsync, rename), so readers see the old or the new one.
- One run writes a folder at a time: :class:`RunLock` (``flock`` on ``run.lock``, which names its holder). The
  kernel drops the lock when the process ends, however it ends, so a run that died never blocks the next. The
  lock and the row files are opened without following a symbolic link: one planted there is refused, its target
  untouched.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Iterable

from harness.files import open_regular, read_json_manifest, write_json_atomic
from lens import LensError

__all__ = [
    "RUN_FORMAT",
    "ROW_FORMAT",
    "MANIFEST_NAME",
    "ROWS_NAME",
    "ATTEMPT_FORMAT",
    "ATTEMPTS_NAME",
    "RunStoreError",
    "RunLock",
    "RowLog",
    "read_run_manifest",
    "write_run_manifest",
    "read_rows",
    "read_row_file",
    "row_key",
]

RUN_FORMAT = "lens-run/1"
ROW_FORMAT = "lens-run-row/1"
MANIFEST_NAME = "manifest.json"
ROWS_NAME = "rows.jsonl"
ATTEMPT_FORMAT = "lens-run-attempt/1"
ATTEMPTS_NAME = "attempts.jsonl"  # attempts that failed at the endpoint: a record, never rows
LOCK_NAME = "run.lock"


class RunStoreError(LensError):
    """A run folder is unusable as asked: missing, corrupted, or made under other bindings."""


def row_key(row: dict[str, Any]) -> tuple[str, str]:
    return row["system_hash"], row["question_id"]


def read_run_manifest(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(run_dir) / MANIFEST_NAME
    if not p.exists():
        raise RunStoreError(f"{run_dir}: not a run folder (no {MANIFEST_NAME})")
    return read_json_manifest(p, RUN_FORMAT, "run", RunStoreError)


def write_run_manifest(run_dir: str | os.PathLike[str], manifest: dict[str, Any]) -> Path:
    return write_json_atomic(Path(run_dir) / MANIFEST_NAME, manifest)


def _parse_lines(path: Path, data: bytes, row_format: str = ROW_FORMAT) -> tuple[list[dict[str, Any]], int]:
    """(rows of the complete lines, byte length of those lines). A line that is complete but not a row object
    is corruption and raises; a trailing line without its newline is an interrupted write and is not returned."""
    rows: list[dict[str, Any]] = []
    end = data.rfind(b"\n") + 1  # bytes up to and including the last newline
    for n, line in enumerate(data[:end].split(b"\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RunStoreError(f"{path}: line {n} is not a JSON row ({exc}); the file is damaged") from None
        if not isinstance(row, dict) or row.get("format") != row_format:
            raise RunStoreError(f'{path}: line {n} is not a run row (field "format" is not {row_format!r})')
        row["_line"] = n
        rows.append(row)
    return rows, end


def check_rows(path: Path, rows: Iterable[dict[str, Any]], manifest: dict[str, Any]) -> None:
    """Refuse rows of other bindings or configurations, and any key written twice."""
    seen: dict[tuple[str, str], int] = {}
    for row in rows:
        n = row.get("_line", "?")
        for field in ("binding_hash", "config_hash"):
            if row.get(field) != manifest.get(field):
                raise RunStoreError(
                    f"{path}: line {n} has {field} {str(row.get(field))[:12]}…, the run's is "
                    f"{str(manifest.get(field))[:12]}…; rows of different runs are never mixed"
                )
        key = row_key(row)
        if key in seen:
            raise RunStoreError(
                f"{path}: line {n} repeats the row of line {seen[key]} ({row['system']}, {row['question_id']})"
            )
        seen[key] = n


def read_row_file(path: str | os.PathLike[str], row_format: str = ROW_FORMAT) -> list[dict[str, Any]]:
    """Every complete row of an append-only row file (read-only: an interrupted last line is ignored, not cut);
    no file, no rows."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return _parse_lines(path, data, row_format)[0]


def read_rows(run_dir: str | os.PathLike[str], manifest: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every complete row of a run (read-only: an interrupted last line is ignored, not cut), checked against
    the manifest."""
    run_dir = Path(run_dir)
    manifest = manifest or read_run_manifest(run_dir)
    path = run_dir / ROWS_NAME
    rows = read_row_file(path)
    check_rows(path, rows, manifest)
    return rows


class RunLock:
    """The writer's lock on a run folder (a context manager): an exclusive ``flock`` on ``run.lock``, whose text
    records the holder (pid, host, since). Raises RunStoreError naming the holder when another run has it."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.path = Path(run_dir) / LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> "RunLock":
        fd = open_regular(self.path, os.O_RDWR | os.O_CREAT, 0o600, RunStoreError)  # never through a planted symlink
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _lock_holder(fd)
            os.close(fd)
            raise RunStoreError(
                f"{self.path.parent}: another run is writing this folder ({holder}); wait for it to end or use "
                f"another --out"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        os.ftruncate(fd, 0)  # a dead holder's record is replaced
        os.pwrite(fd, json.dumps(me).encode("utf-8") + b"\n", 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None


def _lock_holder(fd: int) -> str:
    try:
        h = json.loads(os.pread(fd, 4096, 0))
        return f"pid {h['pid']} on {h['host']}, since {h['since']}"
    except (OSError, ValueError, TypeError, KeyError):
        return "its holder is not recorded yet"


class RowLog:
    """The append-only row file of one run (single writer: the runner's driver thread). ``row_format`` names
    the rows it holds (the bench's run rows by default; ``lens bench stream`` keeps its own)."""

    def __init__(self, path: str | os.PathLike[str], row_format: str = ROW_FORMAT) -> None:
        self.path = Path(path)
        self.row_format = row_format
        self._fd: int | None = None

    def recover(self, manifest: dict[str, Any] | None) -> tuple[list[dict[str, Any]], int]:
        """Read the rows written so far and cut off a partial last line; returns (rows, bytes cut). Run rows
        are checked against the run's ``manifest`` (bindings, one row per key); ``None`` for files whose rows
        carry their own keys (the judge's verdicts)."""
        try:
            fd = open_regular(self.path, os.O_RDWR, error=RunStoreError)  # the cut never truncates a link's target
        except FileNotFoundError:
            return [], 0
        try:
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read()
            rows, end = _parse_lines(self.path, data, self.row_format)
            if manifest is not None:
                check_rows(self.path, rows, manifest)
            cut = len(data) - end
            if cut:
                os.ftruncate(fd, end)
                os.fsync(fd)
        finally:
            os.close(fd)
        return rows, cut

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def open(self) -> "RowLog":
        self._fd = open_regular(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644, RunStoreError)
        return self

    def append(self, row: dict[str, Any]) -> None:
        """Write one row as one line and make it durable; on failure leave the file as it was and raise."""
        assert self._fd is not None, "RowLog.open() first"
        data = (json.dumps(row, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
        size = os.fstat(self._fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, size)
            except OSError:
                pass
            raise RunStoreError(
                f"{self.path}: cannot append a row ({exc.strerror or exc}); the run stopped here, rerun it to resume"
            ) from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RowLog":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
