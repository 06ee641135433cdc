"""The local executor: bounded concurrency, every outcome yielded once, worker built once, errors as data,
stop() takes no new jobs."""

from __future__ import annotations

import threading
import time

import pytest

from harness.bench.executor import LocalExecutor


class Probe:
    def __init__(self):
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0
        self.built = 0

    def make(self):
        self.built += 1

        def work(job):
            with self.lock:
                self.running += 1
                self.peak = max(self.peak, self.running)
            time.sleep(0.01)
            with self.lock:
                self.running -= 1
            if job == "boom":
                raise ValueError("boom")
            return job * 2

        return work


@pytest.mark.parametrize("concurrency", [1, 3])
def test_at_most_concurrency_jobs_run_at_once_and_every_job_finishes_once(concurrency):
    probe = Probe()
    outcomes = list(LocalExecutor(concurrency).run(probe.make, range(20)))

    assert sorted(o.job for o in outcomes) == list(range(20))
    assert all(o.result == o.job * 2 and o.error is None for o in outcomes)
    assert probe.peak == concurrency and probe.built == 1


def test_a_failing_job_is_an_outcome_with_its_error():
    outcomes = list(LocalExecutor(2).run(Probe().make, [1, "boom", 2]))
    errors = [o for o in outcomes if o.error is not None]
    assert len(outcomes) == 3 and len(errors) == 1 and isinstance(errors[0].error, ValueError)


def test_stop_takes_no_new_jobs():
    ex = LocalExecutor(1)
    seen = []
    for o in ex.run(Probe().make, range(100)):
        seen.append(o.job)
        if len(seen) == 3:
            ex.stop()
    assert len(seen) <= 4


def test_concurrency_must_be_positive():
    with pytest.raises(ValueError):
        LocalExecutor(0)
