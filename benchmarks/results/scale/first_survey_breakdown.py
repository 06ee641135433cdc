"""(Kept with its results: it times lens's private survey steps, which a benchmark outside results/ may not import.)
Where the first question's survey spends its CPU time, step by step, in one process (no reading workers: each
step's own time), for the code on ``PYTHONPATH`` — the statistics store's commit before issue 62 or after it.

    PYTHONPATH=. python benchmarks/results/scale/first_survey_breakdown.py FOLDER --store /tmp/x.sqlite

Each step is the exclusive ``time.process_time`` of the functions that do it (a step called inside another is
not counted twice): listing; reading (open through the guarded open, read, decode, sha256, the documents);
folding (``Document.lowered``); names and statistics; tokenising and counting (before: ``re.findall`` and
``Counter`` per document; after: ``count_terms`` over a chunk, both at once); encoding the runs of postings
(after); writing (rows, postings, SQLite); gathering the folder's columns and its snapshot; and, apart, what the
survey held for the write after the question (``StatsStore.flush``, where the code has it). The store is emptied
first. Prints one JSON line of seconds.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time

from lens import load_config
from lens.parts import survey_corpus
from lens.reader import _documents, _filestats, _read, _store

try:  # after issue 62: reading and counting a chunk of files
    from lens.reader import _chunks
except ImportError:  # before
    _chunks = None


def empty_store_config(store: str):
    """The deep preset's configuration with the statistics store at ``store``, emptied (the first question's
    survey), and containers read whole (the scale curve's shards)."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(store + suffix):
            os.unlink(store + suffix)
    cfg = load_config("deep", env={})
    cfg.reader.stats_store = store
    cfg.reader.max_container_bytes = 1 << 40
    return cfg


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--store", required=True, help="the statistics store to build (emptied first)")
    args = ap.parse_args(argv)
    cfg = empty_store_config(args.store)
    spent: dict[str, float] = {}
    stack: list[float] = []

    def timed(f, label):
        @functools.wraps(f)
        def g(*a, **k):
            stack.append(0.0)
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                d = time.process_time() - t
                inner = stack.pop()
                spent[label] = spent.get(label, 0.0) + d - inner
                if stack:
                    stack[-1] += d

        return g

    def wrap(owner, name, label):
        setattr(owner, name, timed(getattr(owner, name), label))

    class Runs:  # the store's compiled pattern, its findall timed (before)
        def __init__(self, pattern):
            self.findall = timed(pattern.findall, "tokenising (findall)")

    wrap(_filestats, "_list", "listing")
    wrap(_read, "_read_file", "reading")
    wrap(_documents, "fold", "folding")
    wrap(_filestats, "_gathered", "gather + snapshot")
    if _chunks is None:
        wrap(_filestats, "_stat_of", "names + statistics")
        wrap(_store, "_terms_of", "counting (Counter)")
        _store._RUN = Runs(_store._RUN)
        wrap(_store.StatsStore, "put", "writing")
    else:
        _filestats._PARALLEL_AT = sys.maxsize  # one process: each step's own time
        wrap(_chunks, "_stat_of", "names + statistics")
        wrap(_chunks, "count_terms", "tokenising + counting (count_terms)")
        wrap(_chunks, "_runs", "encoding runs")
        wrap(_store.StatsStore, "put_counted", "writing")
        if hasattr(_store.StatsStore, "hold"):  # a first survey held (issue 62)
            wrap(_store.StatsStore, "hold", "holding")
    t = time.process_time()
    scan = survey_corpus(args.folder, cfg.reader)
    total = time.process_time() - t
    spent["other"] = total - sum(spent.values())
    spent["survey"] = total
    store = scan.doc_stats[2] if scan.doc_stats is not None else None
    if hasattr(store, "flush"):  # what the survey held, written after the question (issue 62)
        t = time.process_time()
        store.flush()
        spent["written after the question"] = time.process_time() - t
    print(json.dumps({k: round(v, 2) for k, v in spent.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
