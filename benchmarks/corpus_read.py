"""Read throughput of ``lens corpus stats`` next to ripgrep on the same folder, in the same run.

Usage: python benchmarks/corpus_read.py ARTICLES.jsonl DIR [--runs 5] [--literal TEXT] [--limit N] [--json]
  e.g. python benchmarks/corpus_read.py ../shared/data/hotpotqa/wiki_articles.jsonl /tmp/lens-corpus-read-bench/wiki15k

Builds DIR once (skipped when DIR already holds the same build): one extensionless file per article, file
name = title (``/`` replaced, a leading ``.`` guarded so no file is hidden), content = the title line, then
one sentence per line — the raw snapshot layout of SPEC §4. Then times, as whole commands and interleaved,
``lens corpus stats --json DIR`` and ``rg -F -c LITERAL DIR`` (the ``ripgrep`` wheel's rg), after one warm-up
run of each so both read from the page cache. MB/s = bytes of the files in DIR / wall seconds of the command.
``rg -j1`` (one thread, like the lens scan) is timed too. On a shared machine other processes slow the
two-thread rg most; the load average is printed with the results.
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
import time
from pathlib import Path

MARKER = ".corpus_read_build.json"  # hidden: neither lens nor rg reads it


def safe_name(title: str) -> str:
    name = title.replace("/", "_").replace("\x00", "").strip() or "untitled"
    if name.startswith("."):
        name = "_" + name
    return name[:200]


def build(articles: Path, out: Path, limit: int) -> dict:
    source = hashlib.sha256(f"{articles.resolve()}:{articles.stat().st_size}:{limit}".encode()).hexdigest()
    marker = out / MARKER
    if marker.exists():
        info = json.loads(marker.read_text())
        if info.get("source") == source:
            return info
        raise SystemExit(f"{out}: holds a different build; remove it or choose another folder")
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out}: exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    names: set[str] = set()
    files = nbytes = 0
    with open(articles, encoding="utf-8") as fh:
        for line in fh:
            if limit and files >= limit:
                break
            obj = json.loads(line)
            sents = obj.get("sentences") or [obj["text"]]
            name = safe_name(obj["title"])
            base, k = name, 2
            while name.lower() in names:  # case-insensitive file systems too
                name, k = f"{base} ({k})", k + 1
            names.add(name.lower())
            data = (obj["title"] + "\n" + "\n".join(s.strip() for s in sents) + "\n").encode("utf-8")
            (out / name).write_bytes(data)
            files += 1
            nbytes += len(data)
    info = {"source": source, "files": files, "bytes": nbytes}
    marker.write_text(json.dumps(info))
    return info


def find_rg() -> str:
    here = Path(sys.executable).with_name("rg")
    found = shutil.which("rg") or (str(here) if here.exists() else None)
    if not found:
        raise SystemExit("rg not found: pip install ripgrep")
    return found


def find_lens() -> list[str]:
    here = Path(sys.executable).with_name("lens")
    if here.exists():
        return [str(here)]
    return [sys.executable, "-m", "lens.faces._cli"]


def timed(cmd: list[str], ok_codes=(0,)) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode not in ok_codes:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({proc.returncode}): {proc.stderr[-500:]}")
    return dt, proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("articles", type=Path)
    ap.add_argument("dir", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--literal", default="river")
    ap.add_argument("--limit", type=int, default=0, help="articles to write (0 = all)")
    ap.add_argument("--json", action="store_true", help="print the result record as JSON")
    args = ap.parse_args()

    t0 = time.perf_counter()
    build(args.articles, args.dir, args.limit)
    build_s = time.perf_counter() - t0
    total = sum(e.stat().st_size for e in os.scandir(args.dir) if e.is_file() and not e.name.startswith("."))

    lens_cmd = find_lens() + ["corpus", "stats", "--json", str(args.dir)]
    rg_cmd = [find_rg(), "-F", "-c", args.literal, str(args.dir)]
    rg1_cmd = [rg_cmd[0], "-j1"] + rg_cmd[1:]  # one thread, like the lens scan
    rg_version = subprocess.run([rg_cmd[0], "--version"], capture_output=True, text=True).stdout.split("\n")[0]

    # warm-up: page cache, .pyc files
    _, out = timed(lens_cmd)
    stats = json.loads(out)
    _, rg_out = timed(rg_cmd, ok_codes=(0, 1))
    if stats["bytes"] != total:
        print(f"note: lens read {stats['bytes']} bytes, folder holds {total}", file=sys.stderr)

    lens_s, rg_s, rg1_s, lens_internal = [], [], [], []
    for _ in range(args.runs):
        dt, out = timed(lens_cmd)
        lens_s.append(dt)
        lens_internal.append(json.loads(out)["seconds"])
        rg_s.append(timed(rg_cmd, ok_codes=(0, 1))[0])
        rg1_s.append(timed(rg1_cmd, ok_codes=(0, 1))[0])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None

    mb = total / 1e6
    med_lens, med_rg = statistics.median(lens_s), statistics.median(rg_s)
    record = {
        "dir": str(args.dir),
        "files": stats["files"],
        "documents": stats["documents"],
        "bytes": total,
        "build_seconds": round(build_s, 2),
        "runs": args.runs,
        "cpus": os.cpu_count(),
        "rg": rg_version,
        "literal": args.literal,
        "rg_matching_files": len(rg_out.splitlines()),
        "lens_seconds": [round(x, 3) for x in lens_s],
        "rg_seconds": [round(x, 3) for x in rg_s],
        "rg_j1_seconds": [round(x, 3) for x in rg1_s],
        "load_average_1min": load,
        "lens_scan_seconds_in_process": [round(x, 3) for x in lens_internal],
        "lens_mb_per_s": round(mb / med_lens, 1),
        "rg_mb_per_s": round(mb / med_rg, 1),
        "rg_j1_mb_per_s": round(mb / statistics.median(rg1_s), 1),
        "lens_scan_mb_per_s_in_process": round(mb / statistics.median(lens_internal), 1),
        "ratio_lens_over_rg_seconds": round(med_lens / med_rg, 2),
        "ratio_lens_over_rg_best_seconds": round(min(lens_s) / min(rg_s), 2),
    }
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    print(f"folder   {args.dir}: {stats['files']:,} files, {mb:.2f} MB (built in {build_s:.1f} s)")
    print(
        f"runs     {args.runs} each, interleaved, after one warm-up; {os.cpu_count()} CPUs; {rg_version}; load {load}"
    )
    print(f"{'command':<44}{'median s':>10}{'min s':>9}{'MB/s':>9}")
    print(f"{'lens corpus stats --json DIR':<44}{med_lens:>10.3f}{min(lens_s):>9.3f}{mb / med_lens:>9.1f}")
    scan = statistics.median(lens_internal)
    print(f"{'  (its scan alone, in-process)':<44}{scan:>10.3f}{min(lens_internal):>9.3f}{mb / scan:>9.1f}")
    print(f"{f'rg -F -c {args.literal} DIR':<44}{med_rg:>10.3f}{min(rg_s):>9.3f}{mb / med_rg:>9.1f}")
    med_rg1 = statistics.median(rg1_s)
    print(f"{f'rg -j1 -F -c {args.literal} DIR':<44}{med_rg1:>10.3f}{min(rg1_s):>9.3f}{mb / med_rg1:>9.1f}")
    print(f"ratio    lens / rg wall time = {med_lens / med_rg:.2f}x (medians), {min(lens_s) / min(rg_s):.2f}x (best)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
