"""(Kept with its results: it calls lens's private counting step, which a benchmark outside results/ may not import.)
The floor under the first question's survey (issue 62): what reading and counting a folder costs with nothing
else — every file listed, read, hashed (sha256), decoded and folded, its terms counted by the prior's rule
(``count_terms``) — no statistics store, no per-document objects, no packing, no snapshot; in one process and over
worker processes handing back their counts as arrays. Beside it in the same run, interleaved: ripgrep over the
same folder (``rg -F -i -c`` with the cue literals given) and lens's own first survey with an empty store (a new
process each, as a first ``lens ask`` is; and a new process that only starts and imports, the part of it the
floor does not pay). Reports median wall seconds and each one's ratio to rg.

    python benchmarks/results/scale/first_survey_floor.py FOLDER [--workers 2] [--rounds 3] [-e cue ...]

FOLDER holds plain text files (the scale curve's one file per article): the floor reads no containers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from lens._terms import fold
from lens.reader._postings import count_terms

_IMPORTS = "import sys; from lens import load_config; from lens.parts import survey_corpus"
_SURVEY = (
    f"{_IMPORTS}; c = load_config('deep', env={{}}); c.reader.stats_store = sys.argv[2]; "
    "survey_corpus(sys.argv[1], c.reader)"
)


def _count(paths: list[str]) -> int:
    """Read, hash, decode, fold and count ``paths``; the number of postings (the arrays go back to the caller)."""
    texts = []
    for p in paths:
        with open(p, "rb") as fh:
            data = fh.read()
        hashlib.sha256(data).hexdigest()
        texts.append(fold(data.decode("utf-8", "replace")))
    return len(count_terms(texts))


def floor(folder: str, workers: int) -> float:
    """Wall seconds of the floor in this process (``workers`` 1) or over ``workers`` processes (started here)."""
    t = time.perf_counter()
    paths = [os.path.join(d, f) for d, _, files in os.walk(folder) for f in files]
    if workers == 1:
        _count(paths)
    else:
        parts = [paths[i :: 4 * workers] for i in range(4 * workers)]
        with ProcessPoolExecutor(workers) as pool:
            list(pool.map(_count, parts))
    return time.perf_counter() - t


def _timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-e", dest="cues", action="append", help="a cue literal for rg (default: two)")
    args = ap.parse_args(argv)
    rg = shutil.which("rg") or str(Path(sys.executable).with_name("rg"))
    cues = args.cues or ["lighthouse", "river"]
    times: dict[str, list[float]] = {
        "rg": [],
        "floor, 1 process": [],
        f"floor, {args.workers} workers": [],
        "lens": [],
        "lens: start and imports only": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            times["rg"].append(
                _timed([rg, "-F", "-i", "-c", "--no-messages", *[x for c in cues for x in ("-e", c)], args.folder])
            )
            times["floor, 1 process"].append(floor(args.folder, 1))
            times[f"floor, {args.workers} workers"].append(floor(args.folder, args.workers))
            store = os.path.join(tmp, f"stats-{r}.sqlite")  # empty: the first question's survey
            times["lens"].append(_timed([sys.executable, "-c", _SURVEY, args.folder, store]))
            times["lens: start and imports only"].append(_timed([sys.executable, "-c", _IMPORTS]))
    rg_s = statistics.median(times["rg"])
    out = {
        k: {"s": round(statistics.median(v), 3), "x_rg": round(statistics.median(v) / rg_s, 1)}
        for k, v in times.items()
    }
    print(json.dumps({"folder": args.folder, "rounds": args.rounds, "load": os.getloadavg()[0], **out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
