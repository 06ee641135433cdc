"""``lens serve``: a local web page over the agent — ask about a served folder, watch the search, read the answer,
open every cited sentence highlighted in its document.

One Starlette app, three static files (``static/``: the page, its script, its style; no build step, no CDN, so
it works offline), JSON endpoints and server-sent events. The page is a view of the agent's progress callback
(:class:`~lens._progress.Progress` with its ``detail``) and of ``AskResult.brief()``; nothing here re-implements
a stage.

- ``POST /api/questions`` starts ``Agent.ask`` on a worker thread (the served folders as ``within``, a cancel
  event). Each progress snapshot becomes an event of the question's log, which
  ``GET /api/questions/{id}/events`` streams (``Last-Event-ID`` resumes); the log ends with ``answer``,
  ``cancelled`` or ``failed``. ``POST /api/questions/{id}/cancel`` sets the event: the agent stops before its
  next LLM call.
- Every question shares one LLM client. The embedded model answers one request at a time and a memory
  (``--memory``) is read and appended in order, so with either, questions run one at a time, and one that waits
  says how many are ahead; with an endpoint, up to :data:`PARALLEL` run at once.
- ``GET /api/document`` is the document view: the file read as lens reads it (``read_document``: a text file's
  lines, a container's record, a unit of a document format — a PDF page, a slide, sheet rows with their
  header), each line split into parts, the cited sentence's part marked; a file whose sha256 is not the
  answer's is said to have changed, and its sentence is then found by its own sha256 or said to be gone.
- History: each question that ended, kept in an SQLite file in the user's data folder (``--history``; never
  inside a served folder), with what changed since the same question was last answered over the same folder.

Safe by default (a local server is reachable from every page the browser opens): it binds to loopback; any
other ``--host`` needs a token (generated, printed in the address, kept in a same-site cookie, checked on every
request); a ``Host`` header that is not this server's (DNS rebinding) and a cross-origin POST are refused; a
document is served only from inside a served folder and only if lens would read it (the MCP server's
:class:`~lens.faces._mcp.Roots` confinement, then the reader's own guarded open: no link out, ``..``, hidden or
ignored file); bodies are at most :data:`MAX_BODY_BYTES`; the page builds its DOM from text nodes only, under a
Content-Security-Policy that runs no inline script.
"""

from __future__ import annotations

import asyncio
import hmac
import html
import ipaddress
import json
import logging
import os
import secrets
import socket
import sqlite3
import sys
import threading
import time
from collections import OrderedDict
from contextlib import closing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, AsyncIterator, Callable
from urllib.parse import parse_qs

from platformdirs import user_data_dir

from lens import __version__
from lens._agent import MAX_QUESTION_CHARS, Agent, Cancelled
from lens._config import LensConfig, config_from_args
from lens._errors import LensError
from lens._files import is_inside, sha256_hex
from lens._progress import Progress
from lens._result import STATUS_WORDS, AskResult, _finite, place
from lens.faces._commands import REQUIREMENT_WORDS, best_effort_reason, cost_line
from lens.faces._mcp import MAX_PATH_BYTES, Roots
from lens.llm._llm import open_client
from lens.memory._memory import MemoryStore
from lens.reader._documents import Document, Sentence, _is_container, _suffix
from lens.reader._listing import BINARY_SUFFIXES, _ignore_patterns, _ignored
from lens.reader._open import _folder_real
from lens.reader._read import read_document

try:  # the serve extra (also installed with mcp); without it, `lens serve` says what to install
    import uvicorn
    from sse_starlette.sse import EventSourceResponse
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    _MISSING: str | None = None
except ImportError as exc:  # pragma: no cover - the extra is missing
    _MISSING = str(exc)

__all__ = ["History", "Service", "build_app", "serve", "DEFAULT_PORT"]

log = logging.getLogger("lens.serve")

DEFAULT_PORT = 8765
MAX_BODY_BYTES = 64 * 1024  # a question is at most 4,000 characters: nothing the page sends comes near
MAX_LIVE = 16  # questions running or waiting at once; one more is refused (429)
PARALLEL = 4  # questions at once against an endpoint (the embedded model and a memory: one)
KEEP_FINISHED = 64  # finished questions whose event logs stay in memory (older ones: from the history)
MAX_DOC_LINES = 4000  # lines of a document shown at once, around the cited sentence
HISTORY_LIST = 200  # history entries the page lists
STATIC = ("index.html", "app.js", "app.css")
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css"}
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")

# what every response carries: no inline script runs, nothing loads from elsewhere, no framing, no referrer (an
# address may carry the token)
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}


class Refused(LensError):
    """A request refused, with the HTTP status the page gets and the message it shows."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------- questions


@dataclass
class Question:
    """One asked question: its event log (what the page streams) and its cancel event."""

    id: str
    question: str
    folder: str  # the served folder as resolved
    asked_at: float
    cancel: threading.Event = field(default_factory=threading.Event)
    events: list[dict] = field(default_factory=list)
    done: bool = False
    last: Progress | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _waiters: set = field(default_factory=set)  # (event loop, asyncio.Event) of each open stream

    def emit(self, kind: str, data: dict, *, final: bool = False) -> None:
        """Append an event (``final``: the last one) and wake the streams; called from any thread."""
        with self._lock:
            if self.done:
                return
            self.events.append({"event": kind, "data": _finite(data)})
            self.done = final
            waiters = list(self._waiters)
        for loop, woken in waiters:
            try:
                loop.call_soon_threadsafe(woken.set)
            except RuntimeError:  # that stream's loop is closed
                pass

    async def stream(self, start: int) -> AsyncIterator[dict]:
        """The events from index ``start`` on, as server-sent events, until the final one."""
        loop, woken = asyncio.get_running_loop(), asyncio.Event()
        with self._lock:
            self._waiters.add((loop, woken))
        try:
            i = start
            while True:
                woken.clear()
                with self._lock:
                    new, done = self.events[i:], self.done
                for e in new:
                    yield {"id": str(i), "event": e["event"], "data": json.dumps(e["data"], allow_nan=False)}
                    i += 1
                if done:
                    return
                await woken.wait()
        finally:
            with self._lock:
                self._waiters.discard((loop, woken))


class Gate:
    """Questions in the order they were asked; the first ``slots`` run, the others wait (and say so)."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._line: list[str] = []
        self._cond = threading.Condition()

    def enter(self, qid: str, cancel: threading.Event, waiting: Callable[[int], None]) -> bool:
        """Wait for a slot; ``waiting(ahead)`` whenever the number of questions ahead changes. False when
        ``cancel`` was set while waiting."""
        with self._cond:
            self._line.append(qid)
            told = None
            while (at := self._line.index(qid)) >= self.slots:
                if cancel.is_set():
                    self._line.remove(qid)
                    self._cond.notify_all()
                    return False
                if at - self.slots + 1 != told:
                    told = at - self.slots + 1
                    waiting(told)
                self._cond.wait(0.2)
            return True

    def leave(self, qid: str) -> None:
        with self._cond:
            if qid in self._line:
                self._line.remove(qid)
            self._cond.notify_all()


# --------------------------------------------------------------------------- history


_SCHEMA = """
CREATE TABLE IF NOT EXISTS questions (
    id TEXT PRIMARY KEY,
    asked_at REAL NOT NULL,
    folder TEXT NOT NULL,
    question TEXT NOT NULL,
    status TEXT NOT NULL,   -- answered | cancelled | failed
    answer TEXT,
    message TEXT,           -- why it was cancelled or failed
    result TEXT,            -- the answer as the page shows it (JSON): AskResult.brief() and its words
    detail TEXT,            -- the search as it ended (JSON): the last Progress.detail
    changes TEXT            -- what changed since the same question over the same folder was last answered (JSON)
);
CREATE INDEX IF NOT EXISTS questions_by_text ON questions (folder, question, asked_at);
"""


class History:
    """Past questions in an SQLite file: each with its answer, evidence and the search as it ended."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.note: str | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._create()
        except sqlite3.DatabaseError as exc:  # not a database, or a damaged one: set aside, start a new one
            aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
            os.replace(self.path, aside)
            self.note = f"history {self.path}: {exc}; set aside as {aside.name}, a new history started"
            self._create()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=10)
        db.row_factory = sqlite3.Row
        return db

    def _create(self) -> None:
        with closing(self._connect()) as db, db:
            db.executescript(_SCHEMA)

    def add(self, entry: dict) -> dict | None:
        """Keep ``entry`` (the columns of :data:`_SCHEMA`, ``result`` and ``detail`` as data); for an answer, what
        changed since the same question over the same folder was last answered (None: never before)."""
        with closing(self._connect()) as db, db:
            changes = None
            if entry["status"] == "answered":
                before = db.execute(
                    "SELECT id, asked_at, result FROM questions WHERE folder = ? AND question = ? "
                    "AND status = 'answered' ORDER BY asked_at DESC LIMIT 1",
                    (entry["folder"], entry["question"]),
                ).fetchone()
                if before is not None:
                    changes = what_changed(json.loads(before["result"]), entry["result"])
                    changes.update(previous=before["id"], previous_asked_at=before["asked_at"])
            db.execute(
                "INSERT INTO questions (id, asked_at, folder, question, status, answer, message, result, detail, "
                "changes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    entry["id"],
                    entry["asked_at"],
                    entry["folder"],
                    entry["question"],
                    entry["status"],
                    entry.get("answer"),
                    entry.get("message"),
                    _json(entry.get("result")),
                    _json(entry.get("detail")),
                    _json(changes),
                ),
            )
        return changes

    def recent(self, limit: int = HISTORY_LIST) -> list[dict]:
        """The latest entries first: id, when, folder, question, status, answer, whether it changed."""
        with closing(self._connect()) as db:
            rows = db.execute(
                "SELECT id, asked_at, folder, question, status, answer, message, changes FROM questions "
                "ORDER BY asked_at DESC LIMIT ?",
                (limit,),
            ).fetchall()
        out = []
        for r in rows:
            entry = {k: r[k] for k in ("id", "asked_at", "folder", "question", "status", "answer", "message")}
            changes = json.loads(r["changes"]) if r["changes"] else None
            entry["changed"] = None if changes is None else not changes["same"]
            out.append(entry)
        return out

    def get(self, qid: str) -> dict | None:
        with closing(self._connect()) as db:
            r = db.execute("SELECT * FROM questions WHERE id = ?", (qid,)).fetchone()
        if r is None:
            return None
        entry = dict(r)
        for key in ("result", "detail", "changes"):
            entry[key] = json.loads(entry[key]) if entry[key] else None
        return entry


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(_finite(value), ensure_ascii=False, allow_nan=False)


def what_changed(before: dict, after: dict) -> dict:
    """What an answer changed since an earlier one of the same question: the answer, and the evidence by citation
    (added, removed, or cited again with other text or from a changed file). ``same``: nothing did."""

    def said(e: dict) -> str:
        return e.get("sentence_text") or e.get("text") or ""

    old = {e["citation"]: e for e in before.get("evidence", [])}
    new = {e["citation"]: e for e in after.get("evidence", [])}
    out: dict[str, Any] = {
        "answer": None
        if before.get("answer") == after.get("answer")
        else {"before": before.get("answer"), "after": after.get("answer")},
        "added": [{"citation": c, "text": said(e)} for c, e in new.items() if c not in old],
        "removed": [{"citation": c, "text": said(e)} for c, e in old.items() if c not in new],
        "changed": [
            {
                "citation": c,
                "before": said(old[c]),
                "after": said(e),
                "file_changed": old[c].get("sha256") != e.get("sha256"),
            }
            for c, e in new.items()
            if c in old and (said(old[c]) != said(e) or old[c].get("sha256") != e.get("sha256"))
        ],
    }
    out["same"] = not (out["answer"] or out["added"] or out["removed"] or out["changed"])
    return out


def default_history_path() -> Path:
    return Path(user_data_dir("lens")) / "serve-history.sqlite"


# --------------------------------------------------------------------------- the service


def answer_words(result: AskResult) -> dict:
    """The words ``lens ask`` prints beside the data: the cost line, why an answer is best effort, each fact's and
    each evidence item's status."""
    return {
        "cost": cost_line(result),
        "best_effort": best_effort_reason(result) if result.best_effort else None,
        "requirements": {r.id: REQUIREMENT_WORDS.get(r.status, r.status) for r in result.requirements},
        "evidence": {e.id: STATUS_WORDS.get(e.status, e.status) for e in result.evidence},
    }


def _cancelled(p: Progress | None, seconds: float) -> str:
    """What a cancelled question says: the stage it stopped in and what it had spent."""
    if p is None:
        return f"cancelled after {seconds:.1f} s, before its first LLM call"
    stage = f"round {p.round}/{p.max_rounds}" if p.stage == "round" else p.stage
    return f"cancelled during {stage}; {p.oracle_calls} oracle calls and {p.tokens:,} tokens spent, {seconds:.1f} s"


def _progress_event(p: Progress) -> dict:
    return {
        "stage": p.stage,
        "round": p.round,
        "max_rounds": p.max_rounds,
        "oracle_calls": p.oracle_calls,
        "tokens": p.tokens,
        "elapsed_s": p.elapsed_s,
        "line": p.line().removeprefix("lens: "),
        "detail": p.detail,
    }


class Service:
    """What the page talks to: the served folders, one LLM client, the questions running, the history."""

    def __init__(
        self,
        config: LensConfig,
        roots: Roots,
        history: History,
        *,
        memory: MemoryStore | None = None,
        client: Any = None,
    ) -> None:
        self.config = config
        self.roots = roots
        self.history = history
        self.memory = memory
        self.one_at_a_time = not config.llm.base_url or memory is not None
        self.gate = Gate(1 if self.one_at_a_time else PARALLEL)
        self.questions: OrderedDict[str, Question] = OrderedDict()
        self._lock = threading.Lock()
        self._client = client
        self._client_lock = threading.Lock()

    def llm(self) -> Any:
        with self._client_lock:  # one client (and one embedded server) for every question
            if self._client is None:
                self._client = open_client(self.config)
            return self._client

    def close(self) -> None:
        with self._lock:
            for q in self.questions.values():
                q.cancel.set()
        client = self._client
        if client is not None and hasattr(client, "close"):
            client.close()

    # ------------------------------------------------------------------ asking
    def folder(self, path: str) -> Path:
        """A served folder (or one inside it), resolved; Refused naming why not."""
        try:
            return self.roots.check(path)
        except LensError as exc:
            raise _refused(exc) from None

    def ask(self, question: str, folder: str) -> Question:
        """Start answering ``question`` over ``folder`` on a worker thread; the question, its log open."""
        if not isinstance(question, str) or not question.strip():
            raise Refused(400, "the question is empty")
        if len(question) > MAX_QUESTION_CHARS:
            raise Refused(
                400, f"the question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}"
            )
        if not isinstance(folder, str):
            raise Refused(400, '"folder" must be a string naming a served folder')
        where = self.folder(folder)
        with self._lock:
            live = sum(1 for q in self.questions.values() if not q.done)
            if live >= MAX_LIVE:
                raise Refused(429, f"{live} questions are running or waiting; ask again when one has ended")
            q = Question(secrets.token_hex(8), question, str(where), time.time())
            self.questions[q.id] = q
            finished = [k for k, v in self.questions.items() if v.done]
            for k in finished[: max(len(finished) - KEEP_FINISHED, 0)]:
                del self.questions[k]
        q.emit("accepted", {"id": q.id, "question": question, "folder": q.folder})
        threading.Thread(target=self._run, args=(q, where), name=f"lens-serve-{q.id}", daemon=True).start()
        return q

    def question(self, qid: str) -> Question:
        with self._lock:
            q = self.questions.get(qid)
        if q is None:
            raise Refused(404, f"no question {qid[:40]!r} is running (a past one is in the history)")
        return q

    def _run(self, q: Question, where: Path) -> None:
        def waiting(ahead: int) -> None:
            why = (
                "the embedded model answers one question at a time"
                if not self.config.llm.base_url
                else ("questions with a memory run one at a time" if self.memory is not None else "all slots are busy")
            )
            q.emit("queued", {"ahead": ahead, "message": f"waiting: {ahead} question(s) ahead of this one ({why})"})

        if not self.gate.enter(q.id, q.cancel, waiting):
            self._end(q, "cancelled", "cancelled while it waited; nothing was spent")
            return
        try:
            self._answer(q, where)
        except Exception as exc:  # a defect past the answer (the history, an event): the page still hears an end
            log.exception("question %s failed", q.id)
            q.emit("failed", {"id": q.id, "message": f"internal error ({type(exc).__name__}: {exc})"}, final=True)
        finally:
            self.gate.leave(q.id)

    def _answer(self, q: Question, where: Path) -> None:
        def progress(p: Progress) -> None:
            q.last = p
            q.emit("progress", _progress_event(p))

        if self._client is None and not self.config.llm.base_url:  # the first question starts the model
            q.emit("starting", {"message": "starting the embedded model (once, for the first question)…"})
        try:
            agent = Agent(
                self.config, client=self.llm(), memory=self.memory, progress=progress, within=self.roots.paths
            )
            result = agent.ask(q.question, where, cancel=q.cancel)
        except Cancelled:
            self._end(q, "cancelled", _cancelled(q.last, time.time() - q.asked_at))
            return
        except LensError as exc:  # an endpoint down, a folder gone, a bad question: the page says which
            self._end(q, "failed", str(exc))
            return
        except Exception as exc:  # a defect: logged in full, one line for the page
            log.exception("question %s failed", q.id)
            self._end(q, "failed", f"internal error ({type(exc).__name__}: {exc}); the server's log has the details")
            return
        shown = {**result.brief(), "question": q.question, "words": answer_words(result)}
        entry = {
            "id": q.id,
            "asked_at": q.asked_at,
            "folder": q.folder,
            "question": q.question,
            "status": "answered",
            "answer": result.answer,
            "result": shown,
            "detail": q.last.detail if q.last else None,
        }
        changes, kept = None, None
        try:
            changes = self.history.add(entry)
        except (sqlite3.Error, OSError) as exc:  # the answer is paid for: shown all the same
            kept = f"not kept in the history: {exc}"
            log.warning("history %s: %s", self.history.path, exc)
        q.emit(
            "answer",
            {"id": q.id, "folder": q.folder, "question": q.question, "result": shown, "changes": changes, "note": kept},
            final=True,
        )

    def _end(self, q: Question, status: str, message: str) -> None:
        entry = {
            "id": q.id,
            "asked_at": q.asked_at,
            "folder": q.folder,
            "question": q.question,
            "status": status,
            "message": message,
            "detail": q.last.detail if q.last else None,
        }
        try:
            self.history.add(entry)
        except (sqlite3.Error, OSError) as exc:
            log.warning("history %s: %s", self.history.path, exc)
        q.emit(status, {"id": q.id, "message": message}, final=True)

    # ------------------------------------------------------------------ the document view
    def document(self, params: dict[str, str]) -> dict:
        """The document view (module docstring) for the query ``params``: folder, path, doc_id, and what to mark —
        sentence (an index), else first..last — with the sha256 the answer read (sha256) and the sentence's own
        (sentence_sha256)."""
        where = self.folder(_param(params, "folder"))
        rel = _relative(_param(params, "path"))
        self._readable(where, rel)
        read = read_document(where, rel, self.config.reader)
        if read.skip:
            raise Refused(
                403 if read.skip in ("symlink_outside", "not_regular") else 404,
                f"{rel}: not read ({_SKIP.get(read.skip, read.skip)})",
            )
        doc_id = params.get("doc_id") or rel
        doc = next((d for d in read.documents if d.doc_id == doc_id), None)
        if doc is None:
            raise Refused(404, f"{doc_id}: no longer in {rel} (the file changed since the answer)")
        cited_sha = params.get("sha256") or None
        marked, notes = _to_mark(doc, params, cited_sha)
        lines, labels, offset = _display(doc)
        spans: dict[int, list[tuple[int, int]]] = {}
        for s in marked:
            for n, a, b in _spans(doc, lines, s, offset):
                spans.setdefault(n, []).append((a, b))
        first_mark = min(spans, default=0)
        lo = max(0, min(first_mark - MAX_DOC_LINES // 2, len(lines) - MAX_DOC_LINES))
        hi = min(len(lines), lo + MAX_DOC_LINES)
        if lo > 0 or hi < len(lines):
            notes.append(f"lines {lo + 1:,}–{hi:,} of {len(lines):,} shown")
        return {
            "folder": str(where),
            "path": rel,
            "doc_id": doc.doc_id,
            "title": doc.title,
            "kind": doc.kind,
            "place": place(marked[0].where) if marked else (place(doc.location) if doc.location else None),
            "sha256": doc.sha256,
            "cited_sha256": cited_sha,
            "changed": cited_sha is not None and cited_sha != doc.sha256,
            "marked": bool(marked),
            "notes": notes,
            "lines": [{"label": labels[i], "parts": _parts(lines[i], spans.get(i, []))} for i in range(lo, hi)],
        }

    def _readable(self, where: Path, rel: str) -> None:
        """Refused unless lens would read ``rel`` in ``where``: inside the served folders once resolved (links
        followed), not hidden, not ignored by the folder's .lensignore, not a kind lens skips."""
        try:
            real = self.roots.check(str(where / rel), file=True)
        except LensError as exc:
            raise _refused(exc) from None
        if not real.is_relative_to(where):
            raise Refused(403, f"{rel}: resolves outside {where}; refused")
        name = rel.rsplit("/", 1)[-1]
        if _suffix(name) in BINARY_SUFFIXES and not _is_container(name):
            raise Refused(403, f"{rel}: a kind of file lens does not read; refused")
        patterns, _ = _ignore_patterns(where, _folder_real(where))
        if _ignored(rel, patterns):
            raise Refused(403, f"{rel}: ignored by the folder's .lensignore; refused")


_SKIP = {
    "symlink_outside": "a link out of the folder",
    "not_regular": "not a regular file",
    "vanished": "it is gone",
    "unreadable": "unreadable",
    "oversized": "larger than reader.max_file_bytes",
    "binary": "binary",
    "empty": "empty",
}


def _refused(exc: LensError) -> Refused:
    """A confinement error as the page gets it: 404 for what is not there, 403 for what is refused, else 400."""
    msg = str(exc)
    if "no such" in msg:
        return Refused(404, msg)
    return Refused(403 if msg.endswith("refused") else 400, msg)


def _param(params: dict[str, str], name: str) -> str:
    value = params.get(name)
    if not value:
        raise Refused(400, f'"{name}" is missing')
    return value


def _int(params: dict[str, str], name: str) -> int | None:
    value = params.get(name)
    if value in (None, ""):
        return None
    if not value.isdigit() or len(value) > 9:
        raise Refused(400, f'"{name}" must be a whole number, not {value[:20]!r}')
    return int(value)


def _relative(path: str) -> str:
    """``path`` as a path relative to a served folder, or Refused: absolute, ``..``, hidden, NUL, too long."""
    if "\x00" in path:
        raise Refused(400, "path contains a NUL byte; refused")
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise Refused(400, f"path too long (over {MAX_PATH_BYTES:,} bytes); refused")
    if path.startswith("/"):
        raise Refused(403, f"{path}: not a path inside the folder; refused")
    parts = path.split("/")
    if ".." in parts:
        raise Refused(403, f"{path}: '..' leaves the folder; refused")
    if any(p.startswith(".") for p in parts if p):
        raise Refused(403, f"{path}: a hidden file, which lens does not read; refused")
    return "/".join(p for p in parts if p)


def _to_mark(doc: Document, params: dict[str, str], cited_sha: str | None) -> tuple[list[Sentence], list[str]]:
    """The sentences to mark and what to say: as cited (sentence, else first..last) when the document is the one
    the answer read; else the cited sentence found again by its sha256, or word that it is gone."""
    sents = doc.sentences
    if cited_sha is None or cited_sha == doc.sha256:
        n = _int(params, "sentence")
        if n is not None and 0 <= n < len(sents):
            return [sents[n]], []
        first, last = _int(params, "first"), _int(params, "last")
        if first is not None and last is not None and 0 <= first <= last < len(sents):
            return list(sents[first : last + 1]), []
        return [], []
    notes = [f"this file changed since the answer read it (sha256 {cited_sha[:12]}…, now {doc.sha256[:12]}…)"]
    want = params.get("sentence_sha256")
    found = next((s for s in sents if want and sha256_hex(s.text) == want), None)
    if found is not None:
        return [found], notes + [f"the cited sentence is still in it, at {place(found.where)}"]
    return [], notes + (["the cited sentence is no longer in it"] if want else [])


def _display(doc: Document) -> tuple[list[str], list[str], int]:
    """The lines the view shows, their labels, and how many lines precede the lines sentence numbers count in: a
    text file's lines (numbered), a record's sentences (its title first), a unit's lines (each labelled with its
    place when its lines have their own: a row, a paragraph)."""
    if doc.kind == "record":
        sents = doc.sentences
        return [doc.title] + [s.text for s in sents], [f"line {doc.line}"] + [str(s.index + 1) for s in sents], 1
    if doc.kind == "unit":
        body = doc.text.split("\n", 1)[1] if "\n" in doc.text else ""
        lines = body.split("\n")
        locs = doc.line_locations
        labels = [place(locs[i]) if i < len(locs) else str(i + 1) for i in range(len(lines))]
        return lines, labels, 0
    lines = doc.text.splitlines()
    return lines, [str(i + 1) for i in range(len(lines))], 0


def _spans(doc: Document, lines: list[str], s: Sentence, offset: int) -> list[tuple[int, int, int]]:
    """(shown line index, start, end) of the sentence's text on each line it spans: found in its lines joined as
    the reader joined them (stripped, one space between), else those lines whole (a heading read without its
    ``#``)."""
    if doc.kind == "record":
        n = offset + next(i for i, x in enumerate(doc.sentences) if x.index == s.index)
        return [(n, 0, len(lines[n]))]
    pieces, joined = [], ""
    for ln in range(s.line_start, s.line_end + 1):
        if not 1 <= ln <= len(lines):
            continue
        raw = lines[ln - 1]
        text = raw.strip()
        lead = len(raw) - len(raw.lstrip())
        if joined:
            joined += " "
        pieces.append((ln - 1, len(joined), lead, text))
        joined += text
    at = joined.find(s.text)
    if at < 0:
        return [(n, lead, lead + len(text)) for n, _, lead, text in pieces if text]
    end, out = at + len(s.text), []
    for n, off, lead, text in pieces:
        a, b = max(at, off), min(end, off + len(text))
        if a < b:
            out.append((n, lead + a - off, lead + b - off))
    return out


def _parts(line: str, spans: list[tuple[int, int]]) -> list[list]:
    """A shown line as ``[text, marked]`` parts, characters ``a..b`` of each span marked."""
    marks = [False] * len(line)
    for a, b in spans:
        b = min(b, len(line))
        marks[a:b] = [True] * max(b - a, 0)
    out: list[list] = []
    for ch, m in zip(line, marks):
        if out and out[-1][1] == m:
            out[-1][0] += ch
        else:
            out.append([ch, m])
    return out


# --------------------------------------------------------------------------- HTTP


def _error(request_path: str, status: int, message: str) -> Response:
    """One error as the page gets it: JSON for the API, else a small page saying what happened."""
    if request_path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status)
    page = (
        "<!doctype html><html lang=en><meta charset=utf-8><title>lens: error</title>"
        '<link rel=stylesheet href="/static/app.css"><body class=error-page><main>'
        f'<h1>lens serve: {status}</h1><p>{html.escape(message)}</p><p><a href="/">back to the page</a></p>'
        "</main></body></html>"
    )
    return Response(page, status_code=status, media_type="text/html; charset=utf-8")


class Guard:
    """ASGI middleware that every request passes: its Host must be this server's, a non-GET from a browser must
    come from this page's origin, its body must be small, and — when the server has a token — it must carry the
    token (query ``token``, the cookie the page got, or an ``X-Lens-Token`` header). Adds the security headers to
    every response."""

    def __init__(self, app: Any, *, hosts: set[str], port: int, token: str | None) -> None:
        self.app = app
        self.hosts = hosts
        self.port = port
        self.token = token
        self.cookie = f"lens_token_{port}"

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: dict) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items() if k.encode() not in names]
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        refusal = self._refusal(scope)
        if isinstance(refusal, Response):
            await refusal(scope, receive, secured)
            return
        await self.app(scope, receive, secured)

    def _refusal(self, scope: dict) -> Response | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path = scope["path"]
        host = headers.get("host", "")
        if not self._host_ok(host):
            return _error(
                path,
                403,
                f"Host {host[:100]!r} is not this server's address; refused (a page elsewhere reaching this "
                "server through its own name: DNS rebinding)",
            )
        if self.token is not None:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0] or headers.get("x-lens-token", "") or _cookie(headers, self.cookie)
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return _error(
                    path,
                    403,
                    "this server needs its token: open the address `lens serve` printed (…/?token=…)",
                )
            if query.get("token") and scope["method"] == "GET" and not path.startswith("/api/"):
                # the token moves from the address to a cookie of this origin, and out of the browser's history
                return Response(
                    status_code=303,
                    headers={
                        "location": "/" + path.lstrip("/"),  # never "//host": this server's own page
                        "set-cookie": f"{self.cookie}={self.token}; HttpOnly; SameSite=Strict; Path=/",
                    },
                )
        if scope["method"] not in ("GET", "HEAD"):
            origin = headers.get("origin")
            site = headers.get("sec-fetch-site")
            if (origin is not None and origin != f"http://{host}") or site in ("cross-site", "same-site"):
                return _error(path, 403, f"a request from another site ({(origin or site or '')[:100]}); refused")
            size = headers.get("content-length")
            if size is not None and (not size.isdigit() or int(size) > MAX_BODY_BYTES):
                return _error(path, 413, f"request body over {MAX_BODY_BYTES:,} bytes; refused")
        return None

    def _host_ok(self, host: str) -> bool:
        if host.startswith("["):  # an IPv6 address: [::1]:8765
            name, _, rest = host[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ("" if not rest else "?")
        else:
            name, _, port = host.partition(":")
        return name.rstrip(".").lower() in self.hosts and (port or "80") == str(self.port)


def _cookie(headers: dict[str, str], name: str) -> str:
    for part in headers.get("cookie", "").split(";"):
        k, _, v = part.strip().partition("=")
        if k == name:
            return v
    return ""


async def _body(request: Request) -> dict:
    """The request's JSON object, read to at most MAX_BODY_BYTES (a body without a length is cut off there)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise Refused(415, "send JSON (Content-Type: application/json)")
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY_BYTES:
            raise Refused(413, f"request body over {MAX_BODY_BYTES:,} bytes; refused")
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Refused(400, f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise Refused(400, "the request body must be a JSON object")
    return body


class _Api:
    """The page's JSON and event-stream endpoints over one :class:`Service`."""

    def __init__(self, service: Service) -> None:
        self.service = service

    async def folders(self, request: Request) -> Response:
        return JSONResponse(
            {
                "folders": [
                    {"path": str(p), "name": p.name or str(p), "exists": p.is_dir()} for p in self.service.roots.paths
                ],
                "one_at_a_time": self.service.one_at_a_time,
                "model": self.service.config.llm.served_model,
                "version": __version__,
                "history": str(self.service.history.path),
            }
        )

    async def ask(self, request: Request) -> Response:
        body = await _body(request)
        q = await asyncio.to_thread(self.service.ask, body.get("question"), body.get("folder"))
        return JSONResponse({"id": q.id, "events": f"/api/questions/{q.id}/events"}, status_code=202)

    async def events(self, request: Request) -> Response:
        q = self.service.question(request.path_params["qid"])
        last = request.headers.get("last-event-id", "")
        start = int(last) + 1 if last.isdigit() else 0
        return EventSourceResponse(q.stream(start), ping=10)

    async def cancel(self, request: Request) -> Response:
        q = self.service.question(request.path_params["qid"])
        if q.done:
            raise Refused(409, "this question has already ended")
        q.cancel.set()
        return JSONResponse({"id": q.id, "cancelling": True}, status_code=202)

    async def history(self, request: Request) -> Response:
        try:
            entries = await asyncio.to_thread(self.service.history.recent)
        except (sqlite3.Error, OSError) as exc:
            raise Refused(500, f"history {self.service.history.path}: {exc}") from None
        return JSONResponse({"questions": entries, "note": self.service.history.note})

    async def past(self, request: Request) -> Response:
        qid = request.path_params["qid"]
        try:
            entry = await asyncio.to_thread(self.service.history.get, qid)
        except (sqlite3.Error, OSError) as exc:
            raise Refused(500, f"history {self.service.history.path}: {exc}") from None
        if entry is None:
            raise Refused(404, f"no question {qid[:40]!r} in the history")
        return JSONResponse(entry)

    async def document(self, request: Request) -> Response:
        params = {k: v for k, v in request.query_params.items()}
        return JSONResponse(await asyncio.to_thread(self.service.document, params))


def build_app(service: Service, *, hosts: set[str], port: int, token: str | None) -> Any:
    """The page's ASGI app over ``service``, behind the :class:`Guard` for ``hosts``/``port``/``token``."""
    if _MISSING is not None:  # pragma: no cover - the extra is missing
        raise LensError(
            f"lens serve needs Starlette, sse-starlette and uvicorn ({_MISSING}): pip install 'lens-search[serve]'"
        )
    static = {name: resources.files("lens.faces").joinpath("static", name).read_bytes() for name in STATIC}

    def page(name: str) -> Callable:
        async def endpoint(request: Request) -> Response:
            return Response(static[name], media_type=_TYPES[Path(name).suffix])

        return endpoint

    def api(handler: Callable) -> Callable:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except Refused as exc:
                return _error(request.url.path, exc.status, str(exc))

        return endpoint

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        message = {404: "no such page", 405: "method not allowed here"}.get(status, "internal error")
        if status == 500:
            log.error("request %s failed: %s", request.url.path, exc)
        return _error(request.url.path, status, f"{request.url.path[:200]}: {message}")

    endpoints = _Api(service)
    routes = [
        Route("/", page("index.html")),
        Route("/static/app.js", page("app.js")),
        Route("/static/app.css", page("app.css")),
        Route("/api/folders", api(endpoints.folders)),
        Route("/api/questions", api(endpoints.ask), methods=["POST"]),
        Route("/api/questions/{qid}/events", api(endpoints.events)),
        Route("/api/questions/{qid}/cancel", api(endpoints.cancel), methods=["POST"]),
        Route("/api/history", api(endpoints.history)),
        Route("/api/history/{qid}", api(endpoints.past)),
        Route("/api/document", api(endpoints.document)),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found, 500: not_found})
    return Guard(app, hosts=hosts, port=port, token=token)


# --------------------------------------------------------------------------- the command


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _allowed_hosts(host: str) -> set[str]:
    """The names a request's Host may carry: loopback's, the bound host's, and for a wildcard bind this machine's
    names and addresses."""
    names = {*_LOOPBACK_NAMES, host.strip("[]").lower()}
    if host in ("0.0.0.0", "::"):
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        try:
            names |= {info[4][0].lower() for info in socket.getaddrinfo(socket.gethostname(), None)}
        except OSError:
            pass
    return names


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise LensError(f"--host {host}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise LensError(f"{host}:{port}: cannot listen there ({exc.strerror}); choose another --port") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(args: Any) -> int:
    """The ``lens serve`` handler: serve the page until Ctrl-C."""
    if _MISSING is not None:  # pragma: no cover - the extra is missing
        raise LensError(
            f"lens serve needs Starlette, sse-starlette and uvicorn ({_MISSING}): pip install 'lens-search[serve]'"
        )
    config = config_from_args(args)
    roots = Roots(args.folder or [os.getcwd()], flag="FOLDER")
    history_path = Path(args.history).expanduser() if args.history else default_history_path()
    for root in roots.paths:
        if is_inside(history_path, root):
            raise LensError(f"--history {history_path}: inside the served folder {root}; lens never writes there")
    memory = None
    if args.memory:
        mem_dir = Path(args.memory).expanduser()
        for root in roots.paths:
            if is_inside(mem_dir, root):
                raise LensError(f"--memory {mem_dir}: inside the served folder {root}; lens never writes there")
        memory = MemoryStore(mem_dir, capacity=config.memory.capacity, min_similarity=config.memory.min_similarity)
    history = History(history_path)
    host = args.host
    token = None if _loopback(host) else secrets.token_urlsafe(24)
    sock = _bind(host, args.port)
    port = sock.getsockname()[1]
    service = Service(config, roots, history, memory=memory)
    app = build_app(service, hosts=_allowed_hosts(host), port=port, token=token)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown if host not in ('0.0.0.0', '::') else socket.gethostname()}:{port}/"
    print(f"lens serve: {url}" + (f"?token={token}" if token else ""), flush=True)
    print(f"  folders: {', '.join(map(str, roots.paths))}", flush=True)
    print(f"  history: {history.path}" + (f" ({history.note})" if history.note else ""), flush=True)
    if token:
        print(
            "  anyone who reaches this address with the token can ask about these folders and read their files",
            flush=True,
        )
    print("  Ctrl-C stops", flush=True)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            timeout_keep_alive=5,
            timeout_graceful_shutdown=1,
            h11_max_incomplete_event_size=MAX_BODY_BYTES,
        )
    )
    try:
        server.run(sockets=[sock])
    finally:
        service.close()
        sock.close()
    print("lens serve: stopped", file=sys.stderr)
    return 0
