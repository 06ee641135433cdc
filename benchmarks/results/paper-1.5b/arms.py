"""Helpers of run.sh (run with the frozen code on PYTHONPATH, from the checkout's root).

arms.py todo RUN_DIR K SYSTEMS
    prints, comma-separated, the arms of SYSTEMS that lack a row for one of the first K questions of the
    frozen order (row positions 0..K-1); nothing when every arm has them.
arms.py rebind-hybrid RUN_DIR INDEX_SNAPSHOT INDEX_DIR
    makes the Hybrid-RAG arm of RUN_DIR answer from this host's dense index of INDEX_SNAPSHOT. The dense
    vectors are float32 sentence-transformers embeddings: rebuilt on another CPU they are not bit-identical, so
    their index_hash (model, ids, vector bytes) differs, and `lens bench run` refuses to add hybrid rows to a
    folder whose hybrid rows bind another index. When the folder's hybrid rows were made with a dense index
    other than the one on this host (building it under INDEX_DIR if missing, as the run would), they are moved,
    unchanged, to RUN_DIR/superseded/hybrid-<system hash>.jsonl; run.sh then reruns the arm on every question
    of the stage in one session. Their JudgeAcc verdicts stay in judge.jsonl, keyed by the old system hash.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def _lines(path: Path) -> list[tuple[str, dict]]:
    """(line as written, parsed row) for every row of a row file; none when it does not exist."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    if lines and not text.endswith("\n"):
        lines.pop()  # a row a kill cut short: `lens bench run` drops it too and asks the question again
    return [(line, json.loads(line)) for line in lines if line.strip()]


def todo(run_dir: Path, k: int, systems: list[str]) -> list[str]:
    have: dict[str, set[int]] = {s: set() for s in systems}
    for _, row in _lines(run_dir / "rows.jsonl"):
        if row["system"] in have and row["position"] < k:
            have[row["system"]].add(row["position"])
    return [s for s in systems if len(have[s]) < k]


def rebind_hybrid(run_dir: Path, index_snapshot: Path, index_dir: Path) -> None:
    from harness.bench.systems.corpus import SnapshotCorpus  # the frozen code (PYTHONPATH)
    from harness.bench.systems.registry import ArmSettings, prepare_indexes

    lines = _lines(run_dir / "rows.jsonl")
    hybrid = [(line, r) for line, r in lines if r["system"] == "hybrid"]
    if not hybrid:
        print(f"{run_dir.name}: no hybrid rows yet")
        return
    entry = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["systems"]["hybrid"]
    bound = entry["params"]["index_hash"]
    # run.sh passes no arm settings: the defaults, as `lens bench run` uses them; a loaded index is hash-verified
    builds = prepare_indexes(("hybrid",), SnapshotCorpus.load(index_snapshot), index_dir, ArmSettings())
    here = [builds["bm25"][0].index_hash, builds["dense"][0].index_hash]
    built = builds["dense"][1]
    print(
        f"{run_dir.name}: hybrid rows bind index {[h[:12] for h in bound]}, this host's is {[h[:12] for h in here]}"
        f" ({'built now' if built else 'loaded'})"
    )
    if here == bound:
        return
    old = {r["system_hash"] for _, r in hybrid}
    if old != {entry["system_hash"]}:
        sys.exit(f"{run_dir}: hybrid rows of system hashes {sorted(old)} besides the manifest's; resolve by hand")
    target = run_dir / "superseded" / f"hybrid-{entry['system_hash'][:16]}.jsonl"
    target.parent.mkdir(exist_ok=True)
    already = {r["question_id"] for _, r in _lines(target)}  # a move a kill interrupted is finished, not doubled
    with target.open("a", encoding="utf-8") as out:
        out.writelines(line + "\n" for line, r in hybrid if r["question_id"] not in already)
        out.flush()
        os.fsync(out.fileno())
    tmp = run_dir / "rows.jsonl.tmp"
    tmp.write_text("".join(line + "\n" for line, r in lines if r["system"] != "hybrid"), encoding="utf-8")
    os.replace(tmp, run_dir / "rows.jsonl")
    print(f"{run_dir.name}: moved {len(hybrid)} hybrid rows, unchanged, to {target.relative_to(run_dir)}")


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "todo":
        print(",".join(todo(Path(args[0]), int(args[1]), args[2].split(","))))
    elif cmd == "rebind-hybrid":
        rebind_hybrid(Path(args[0]), Path(args[1]), Path(args[2]))
    else:
        sys.exit(__doc__)
