"""How the runner executes question jobs: a small interface, with bounded local threads as the default.

The runner hands an executor two things and consumes outcomes as they finish:

- ``make_worker`` — a zero-argument callable returning ``worker(job) -> result``. It is plain data plus a function
  (``functools.partial`` of a module-level function over a picklable plan), so it can be shipped to another
  process or machine and called there once per worker to build that worker's systems and LLM client;
- ``jobs`` — picklable job descriptions (system name, question id and text; never the gold answer).

Every result is returned to the driver, which alone scores and writes rows (append + flush), so resume and
de-duplication never depend on the executor. The local executor calls ``make_worker`` once and shares the worker
between its threads (systems and the LLM client are thread-safe).

Adding a Ray executor (multi-machine) touches neither the systems nor the runner — one more class here::

    class RayExecutor(Executor):
        def __init__(self, actors: int):
            self.actors = actors

        def run(self, make_worker, jobs):
            import ray
            from ray.util import ActorPool

            @ray.remote
            class _Worker:
                def __init__(self, make):
                    self.work = make()            # each actor builds its own systems and client
                def call(self, job):
                    try:
                        return Outcome(job, self.work(job), None)
                    except BaseException as exc:  # exceptions travel back as data
                        return Outcome(job, None, exc)

            pool = ActorPool([_Worker.remote(make_worker) for _ in range(self.actors)])
            yield from pool.map_unordered(lambda actor, job: actor.call.remote(job), list(jobs))

        def stop(self):
            pass  # ActorPool drains; ray.shutdown() is the caller's

and ``--executor ray`` in the CLI choosing it. Index folders and the snapshot must be on a path every machine can
read (or be prepared per machine by the same ``prepare_indexes`` call; their hashes are checked on load).
"""

from __future__ import annotations

import queue
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, Iterator, TypeVar

__all__ = ["Outcome", "Executor", "LocalExecutor"]

J = TypeVar("J")
R = TypeVar("R")


@dataclass
class Outcome(Generic[J, R]):
    """One finished job: its result, or the exception the worker raised for it."""

    job: J
    result: R | None
    error: BaseException | None


class Executor(ABC):
    """Runs ``worker(job)`` for every job and yields each :class:`Outcome` as soon as it finishes."""

    @abstractmethod
    def run(self, make_worker: Callable[[], Callable[[Any], Any]], jobs: Iterable[Any]) -> Iterator[Outcome]:
        """Outcomes in completion order. Stops taking new jobs after :meth:`stop`."""

    @abstractmethod
    def stop(self) -> None:
        """Take no new jobs; jobs already running finish (their outcomes are still yielded)."""

    def describe(self) -> dict[str, Any]:
        return {"kind": type(self).__name__}


class LocalExecutor(Executor):
    """Bounded concurrency with daemon threads: at most ``concurrency`` jobs run at once.

    Threads are daemons, so an interrupted run exits at once; a job cut off that way never produced a row and is
    simply run again on resume.
    """

    def __init__(self, concurrency: int = 5) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.concurrency = concurrency
        self._stopped = threading.Event()

    def describe(self) -> dict[str, Any]:
        return {"kind": "local-threads", "concurrency": self.concurrency}

    def stop(self) -> None:
        self._stopped.set()

    def run(self, make_worker: Callable[[], Callable[[Any], Any]], jobs: Iterable[Any]) -> Iterator[Outcome]:
        worker = make_worker()
        source = iter(jobs)
        take = threading.Lock()
        results: queue.Queue[Outcome | None] = queue.Queue()

        def next_job() -> tuple[bool, Any]:
            with take:
                if self._stopped.is_set():
                    return False, None
                try:
                    return True, next(source)
                except StopIteration:
                    return False, None

        def loop() -> None:
            try:
                while True:
                    ok, job = next_job()
                    if not ok:
                        return
                    try:
                        results.put(Outcome(job, worker(job), None))
                    except BaseException as exc:  # handed to the driver, which decides
                        results.put(Outcome(job, None, exc))
            finally:
                results.put(None)

        threads = [
            threading.Thread(target=loop, name=f"bench-worker-{i}", daemon=True) for i in range(self.concurrency)
        ]
        for t in threads:
            t.start()
        running = len(threads)
        while running:
            try:
                item = results.get(timeout=0.5)
            except queue.Empty:
                continue
            if item is None:
                running -= 1
            else:
                yield item
