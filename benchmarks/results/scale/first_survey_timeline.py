"""(Kept with its results: it wraps lens's private survey steps, which a benchmark outside results/ may not import.)
Where the first question's survey spends its *wall* time when it reads over worker processes (issue 62): a
timeline of one survey with an empty store — the listing, each chunk read in this process or handed back by a
worker, each batch stored, the gathering of the folder's columns — and, after it, what the survey held for the
write after the question (``StatsStore.flush``, where the code has one). For the code on ``PYTHONPATH``.

    PYTHONPATH=. python benchmarks/results/scale/first_survey_timeline.py FOLDER --store /tmp/x.sqlite [--events]

Prints one JSON line: the survey's seconds, per step its count and summed seconds in this process, how many
chunks the workers read, when the first of them came back, and the held write's seconds (``--events``: each
event, in order, too).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time

from first_survey_breakdown import empty_store_config  # beside this file

from lens.parts import survey_corpus
from lens.reader import _chunks, _filestats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--store", required=True, help="the statistics store to build (emptied first)")
    ap.add_argument("--events", action="store_true", help="print every event too")
    args = ap.parse_args(argv)
    cfg = empty_store_config(args.store)
    events: list[tuple[str, float, float]] = []
    t0 = time.perf_counter()

    def timed(owner, name, label):
        f = getattr(owner, name)

        @functools.wraps(f)
        def g(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                events.append((label, t - t0, time.perf_counter() - t))

        setattr(owner, name, g)

    timed(_filestats, "_list", "listing")
    timed(_filestats, "_flush", "storing a batch")
    timed(_filestats, "_gathered", "gathering + snapshot")
    timed(_chunks, "read_chunk", "reading a chunk here")  # the workers' own reads are in their processes
    if hasattr(_chunks, "_Shared"):  # a worker's chunk back (this process reads too: after issue 62's 3rd step)
        real = _chunks._Shared.read

        def back(self, i, chunk):
            events.append(("a worker's chunk back", time.perf_counter() - t0, 0.0))
            return real(self, i, chunk)

        _chunks._Shared.read = back
    else:  # before: every chunk comes back through ReadPool.map
        real_map = _chunks.ReadPool.map

        def mapped(self, *a, **k):
            for got in real_map(self, *a, **k):
                events.append(("a worker's chunk back", time.perf_counter() - t0, 0.0))
                yield got

        _chunks.ReadPool.map = mapped
    t0 = time.perf_counter()
    scan = survey_corpus(args.folder, cfg.reader)
    survey = time.perf_counter() - t0
    store = scan.doc_stats[2] if scan.doc_stats is not None else None
    held = None
    if hasattr(store, "flush"):
        t = time.perf_counter()
        store.flush()
        held = time.perf_counter() - t
    steps: dict[str, dict] = {}
    for label, _, took in events:
        s = steps.setdefault(label, {"n": 0, "s": 0.0})
        s["n"] += 1
        s["s"] = round(s["s"] + took, 3)
    backs = [at for label, at, _ in events if label == "a worker's chunk back"]
    out = {
        "folder": args.folder,
        "survey_s": round(survey, 3),
        "steps_here": steps,
        "first_worker_chunk_at_s": round(min(backs), 3) if backs else None,
        "written_after_s": round(held, 3) if held is not None else None,
        "load": os.getloadavg()[0],
    }
    if args.events:
        out["events"] = [
            (label, round(at, 3), round(took, 3)) for label, at, took in sorted(events, key=lambda e: e[1])
        ]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
