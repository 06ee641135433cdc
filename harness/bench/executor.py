"""How the runner executes question jobs: a small interface, with bounded local threads as the default.

The runner hands an executor two things and consumes outcomes as they finish:

- ``make_worker`` — a zero-argument callable returning ``worker(job) -> result``. It is plain data plus a function
  (``functools.partial`` of a module-level function over a picklable plan), so it can be shipped to another
  process or machine and called there once per worker to build that worker's systems and LLM client;
- ``jobs`` — picklable job descriptions (system name, question id and text; never the gold answer).

Every result is returned to the driver, which alone scores and writes rows (append + flush), so resume and
de-duplication never depend on the executor. The local executor calls ``make_worker`` once and shares the worker
between its threads (systems and the LLM client are thread-safe).

``RayExecutor`` runs the same jobs on a Ray cluster (``lens bench run --executor ray``): each job is a call on
one of ``workers`` Ray actors, each actor builds its own systems once from ``make_worker``, outcomes come back to
the driver in completion order, and the driver alone writes rows, exactly as with local threads (same resume
and binding rules; a dead worker stops the run, and a rerun resumes it with no row lost or written twice).
LLM placement: with an endpoint configured (``--base-url``: a shared vLLM or remote server) every actor calls
it; with the embedded model, each node gets one llama.cpp server (a Ray actor per node, threads sized to the
node's CPUs) that the worker actors on that node share — never one server per job. Index folders and the
snapshot must be on a path every node can read (a shared filesystem, or the same path prepared on each node:
their hashes are checked on load).
"""

from __future__ import annotations

import os
import queue
import secrets
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, Iterator, TypeVar

from harness.bench.datasets import DataError
from lens import open_client

__all__ = ["Outcome", "Executor", "LocalExecutor", "RayExecutor", "WorkerDied"]

J = TypeVar("J")
R = TypeVar("R")


@dataclass
class Outcome(Generic[J, R]):
    """One finished job: its result, or the exception the worker raised for it."""

    job: J
    result: R | None
    error: BaseException | None


def _attempt(worker: Callable[[Any], Any], job: Any) -> Outcome:
    """``worker(job)`` as an outcome: its result, or the exception it raised (handed to the driver, which
    decides)."""
    try:
        return Outcome(job, worker(job), None)
    except BaseException as exc:
        return Outcome(job, None, exc)


class Executor(ABC):
    """Runs ``worker(job)`` for every job and yields each :class:`Outcome` as soon as it finishes.

    ``remote`` executors run workers in other processes: the runner gives them a factory that builds a fresh
    worker there (``make_worker(llm=(base_url, model) | None)``), never its own worker."""

    remote = False

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
        # a job is taken only while fewer than ``concurrency`` outcomes are in flight or not yet handed out: a stop
        # after an outcome lets at most ``concurrency`` more jobs finish, however fast the jobs and slow the caller
        slots = threading.Semaphore(self.concurrency)

        def next_job() -> tuple[bool, Any]:
            slots.acquire()
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
                    results.put(_attempt(worker, job))
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
                slots.release()


class WorkerDied(RuntimeError):
    """A remote worker process died (killed, out of memory, its node lost): the run stops; rerun to resume."""


def _ray():
    try:
        import ray
    except ImportError:
        raise DataError("--executor ray needs Ray: pip install 'lens-search[scale]'") from None
    return ray


class RayExecutor(Executor):
    """Jobs as calls on ``workers`` Ray actors spread over the cluster's alive nodes (round robin).

    ``address``: a running cluster (``"auto"``, ``"HOST:PORT"``) or None for a local one started by
    ``ray.init()`` (token auth, its token only in the environment: nothing written to ``~/.ray``). ``embedded``: start one embedded model server per node (an actor holding
    ``lens.open_client(llm_config)``, ``llm.n_threads`` set to the node's CPU count) and point that node's workers
    at it; otherwise (an endpoint is configured) every worker calls the configured endpoint.
    """

    remote = True

    def __init__(self, workers: int = 2, *, address: str | None = "auto", embedded: bool = False, llm_config=None):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.address = address
        self.embedded = embedded
        self.llm_config = llm_config
        self._stopped = threading.Event()
        self._started_here = False
        self.startup_seconds: float | None = None
        self.nodes: list[dict[str, Any]] = []

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "ray",
            "workers": self.workers,
            "address": self.address,
            "llm": "one embedded server per node" if self.embedded else "configured endpoint",
            "nodes": len(self.nodes) or None,
        }

    def stop(self) -> None:
        self._stopped.set()

    def _connect(self):
        ray = _ray()
        t0 = time.monotonic()
        if not ray.is_initialized():
            if self.address is None:
                # A local cluster turns token auth on; without a token Ray writes one to ~/.ray/auth_token, where
                # every later `ray start` on the machine finds it (and requires it) while a driver joining by
                # address does not send it. A token in this process's environment (the cluster's processes
                # inherit it) is never written; Ray keeps the process in token mode after shutdown either way.
                os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
            self._started_here = True
        self.nodes = [n for n in ray.nodes() if n.get("Alive")]
        self.startup_seconds = time.monotonic() - t0
        return ray

    def run(self, make_worker: Callable[..., Callable[[Any], Any]], jobs: Iterable[Any]) -> Iterator[Outcome]:
        ray = self._connect()
        from ray.exceptions import RayActorError
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        @ray.remote(num_cpus=0, max_restarts=0)
        class _Worker:
            def __init__(self, make, llm):
                self.work = make(llm=llm)  # its own systems and client, built once

            def call(self, job):
                return _attempt(self.work, job)

        @ray.remote(num_cpus=0, max_restarts=0)
        class _NodeModel:
            def __init__(self, config, threads):
                config.llm.n_threads = threads
                self.client = open_client(config)  # the embedded llama.cpp server, loopback on this node

            def endpoint(self):
                return self.client.base_url, self.client.model

        nodes = self.nodes
        placed = [nodes[i % len(nodes)]["NodeID"] for i in range(self.workers)]
        llm_of: dict[str, Any] = {}
        models = []
        if self.embedded:
            for node_id in sorted(set(placed)):
                cpus = int(next(n for n in nodes if n["NodeID"] == node_id)["Resources"].get("CPU", 1)) or 1
                m = _NodeModel.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote(
                    self.llm_config, cpus
                )
                models.append(m)
                llm_of[node_id] = ray.get(m.endpoint.remote())
        actors = [
            _Worker.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote(
                make_worker, llm_of.get(node_id)
            )
            for node_id in placed
        ]
        source = iter(jobs)
        running: dict[Any, Any] = {}  # object ref -> actor

        def submit(actor) -> None:
            job = None if self._stopped.is_set() else next(source, None)
            if job is not None:
                running[actor.call.remote(job)] = actor

        try:
            for a in actors:
                submit(a)
            while running:
                done, _ = ray.wait(list(running), num_returns=1)
                actor = running.pop(done[0])
                try:
                    outcome = ray.get(done[0])
                except RayActorError as exc:
                    raise WorkerDied(
                        f"a Ray worker died mid-run ({type(exc).__name__}); rows written so far are kept — "
                        "rerun the same command to resume"
                    ) from None
                yield outcome
                submit(actor)
        finally:
            for a in actors + models:
                ray.kill(a, no_restart=True)
            if self._started_here:
                ray.shutdown()
