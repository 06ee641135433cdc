"""Progress of one question while it runs: what the agent tells a watcher, and the terminal line ``lens ask`` draws.

``Agent(config, progress=callback)`` calls ``callback(Progress)`` when a stage starts (the scan, the
decomposition, each loop round, consolidation, synthesis, …) and once more at the end (stage ``"done"``). A
snapshot carries what was spent so far, so a watcher interrupted mid-question still knows the partial cost. The
callback runs on the asking thread and must not raise; its return value is ignored.

From the first loop round on, a snapshot also carries ``detail``: what the search knows so far, as JSON-ready
data (``Loop.progress_detail``): the requirements, every round's readings (the window read, the sentence it
named, confirmed or not) and each requirement's belief now (its heaviest candidate windows, GLR and the stopping
threshold). It is cumulative — each snapshot's detail replaces the last — so a watcher that joins late, or
misses one, loses nothing. The terminal line and the MCP notifications ignore it; ``lens serve`` draws it.

:class:`TerminalProgress` is the CLI's watcher: one line on a terminal's stderr, redrawn at each event and once a
second (the elapsed time), erased when the question ends. The CLI uses it only when stderr is a TTY and the
output is not ``--json``.

:func:`for_terminal` is how the CLI prints text it did not write (documents, answers, an endpoint's messages):
with control characters escaped, so no document or model can set the window title or clear the screen.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

__all__ = ["Progress", "ProgressCallback", "TerminalProgress", "for_terminal"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1 (0x9b is a one-byte CSI on some terminals)


def for_terminal(text: str) -> str:
    """``text`` with every control character (newlines and ESC included) written as a ``\\xNN`` escape."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


@dataclass(frozen=True)
class Progress:
    """One question's state at a stage boundary: the stage starting, the loop rounds started of the most the
    budget allows, and the cost so far (oracle calls, tokens, wall seconds since the question began); ``detail``:
    the search so far once the loop has begun (module docstring), else None."""

    stage: str
    round: int
    max_rounds: int
    oracle_calls: int
    tokens: int
    elapsed_s: float
    detail: dict[str, Any] | None = field(default=None, compare=False)

    def line(self, now_elapsed: float | None = None) -> str:
        elapsed = self.elapsed_s if now_elapsed is None else now_elapsed
        where = f"round {self.round}/{self.max_rounds}" if self.stage == "round" else self.stage
        return f"lens: {where} · {self.oracle_calls} oracle calls · {self.tokens:,} tokens · {elapsed:.0f} s"


ProgressCallback = Callable[[Progress], None]


class TerminalProgress:
    """Draws the latest :class:`Progress` on one terminal line (carriage return, erase to end of line); a
    background thread refreshes the elapsed seconds between events. Use as a context manager."""

    def __init__(self, stream: TextIO, *, interval_s: float = 1.0) -> None:
        self.stream = stream
        self.interval_s = interval_s
        self.last: Progress | None = None
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, progress: Progress) -> None:
        with self._lock:
            self.last = progress
            self._t0 = time.monotonic() - progress.elapsed_s
            if progress.stage != "done":
                self._draw()

    def _draw(self) -> None:
        if self.last is None:
            return
        self.stream.write("\r\x1b[K" + self.last.line(time.monotonic() - self._t0))
        self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(self.interval_s):
            with self._lock:
                self._draw()

    def __enter__(self) -> "TerminalProgress":
        self._thread = threading.Thread(target=self._tick, name="lens-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.interval_s)
        with self._lock:
            if self.last is not None:
                self.stream.write("\r\x1b[K")  # leave the terminal as it was: the answer prints next
                self.stream.flush()
