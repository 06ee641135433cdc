"""How prior formation grows with the folder: 15K → 150K → 1.5M documents, one file per article and as .bz2
shards, next to ripgrep searching the same cue literals over the same files, in one run.

    python benchmarks/scale_curve.py --articles ../shared/data/hotpotqa/wiki_articles.jsonl \\
        --questions ../shared/data/hotpotqa/hotpot_dev_distractor.json --work /tmp/lens-scale \\
        --sizes 15000,150000,1500000 --queries 10 --out benchmarks/results/scale/curve.json

Folders: the pool's articles, then deterministic variants until the size is reached — variant k of an article
has the title "<title> (variant k)" and its sentences in a seeded shuffled order, so no two files are
byte-identical (a reader cannot deduplicate them). Each size is written twice: ``files/`` (one extensionless
file per article: title line, one sentence per line, in sub-folders of 1,000) and ``shards/`` (official
abstracts layout, 500 articles per ``.bz2`` shard). Folders are built once and reused.

Per (size, layout), the folder is first read once by ripgrep, untimed in the ratios (``rg_warming_s``), so every
timed run finds its pages in memory as ripgrep's timed runs do; then, each in a **fresh child process** (so its
peak memory is its own), with a file statistics store of its own under ``--work``:

- ``first``: the first question ever (empty store: the survey reads every file and stores its statistics), then
  ``--queries`` warm questions — what ``lens ask`` does before its first oracle call (survey: list and stat every
  file, statistics of unchanged files from the process's memo; ``CorpusView.of``: the view, reused when no file
  changed; score every document for the question's cues), split into survey and view+scoring — each followed by
  ripgrep with the same cue literals (``rg -F -i -c -e cue …``; ``-z`` for the shards, which makes rg decompress
  each one) over the same folder (warm page cache); the store's size on disk. A first survey over the reading
  workers holds its term counts and writes them after the question is ranked: that write is timed apart
  (``written_after``: what the process spends after its answer, at its next survey or its exit) and done before
  the warm questions and the store's size.
- ``cold``: a new process's first question with the store kept (what each ``lens ask`` pays), then one question
  after rewriting 1 % of the files (an appended line for one file per article; the same bytes rewritten for a
  shard, which still has to be read again), after which the files are restored. The files to edit (every 100th
  of the sorted listing) are listed by the parent, so the child's peak memory is the question's, not the list's.

Reported: medians, the ratios lens / rg, the scan rate (documents/s) each implies, peak RSS, store bytes.
"""

from __future__ import annotations

import argparse
import bz2
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["main"]

CHILD = r"""
import json, os, resource, subprocess, sys, time, statistics
from pathlib import Path
from lens import load_config
from lens.parts import CorpusView, Prior, capitalised_spans, content_terms, survey_corpus

folder, rg, shards, questions, store, mode, edits = (
    sys.argv[1], sys.argv[2], sys.argv[3] == "1", json.loads(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7])
cfg = load_config("deep", env={})
cfg.reader.max_container_bytes = 1 << 40  # shards are read whole here
cfg.reader.stats_store = store

def cues_of(q):
    return list(dict.fromkeys(capitalised_spans(q) + content_terms(q)))

def question(q):
    t0 = time.perf_counter()
    scan = survey_corpus(folder, cfg.reader)
    t1 = time.perf_counter()
    Prior(CorpusView.of(scan), cfg.prior).score(q, cues_of(q))
    return scan, t1 - t0, time.perf_counter() - t1

def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

out = {}
if mode == "first":
    for suffix in ("", "-wal", "-shm"):
        Path(store + suffix).unlink(missing_ok=True)
    scan, a, b = question(questions[0])
    t = time.perf_counter()
    scan.doc_stats[2].flush()  # the term counts a first survey holds, written (else at the next survey or the exit)
    out.update(documents=len(scan.documents), files=scan.files, bytes=scan.bytes_read,
               first={"survey": a, "total": a + b, "written_after": time.perf_counter() - t})
    out["store_bytes"] = sum(os.path.getsize(store + x) for x in ("", "-wal") if os.path.exists(store + x))
    scan_t, score_t, rg_t = [], [], []
    for q in questions:
        _, a, b = question(q)
        scan_t.append(a)
        score_t.append(b)
        cmd = [rg, "-F", "-i", "-c", "--no-messages"] + (["-z"] if shards else []) + [x for c in cues_of(q) for x in ("-e", c)]
        t3 = time.perf_counter()
        subprocess.run(cmd + [folder], stdout=subprocess.DEVNULL, check=False)
        rg_t.append(time.perf_counter() - t3)
    med = statistics.median
    out.update(warm_scan_s=med(scan_t), warm_score_s=med(score_t), warm_total_s=med([a + b for a, b in zip(scan_t, score_t)]),
               rg_s=med(rg_t))
else:
    scan, a, b = question(questions[0])
    out.update(cold={"survey": a, "total": a + b}, rss_cold_mib=rss())
    edited = json.loads(Path(edits).read_text(encoding="utf-8"))  # chosen by the parent: not in this peak RSS
    saved = {p: Path(p).read_bytes() for p in edited}
    try:
        for p, data in saved.items():
            Path(p).write_bytes(data if shards else data + b"\nEdited for the scale curve.\n")
        scan, a, b = question(questions[1])
        out.update(edited_files=len(edited), after_edit={"survey": a, "total": a + b})
    finally:
        for p, data in saved.items():
            Path(p).write_bytes(data)
out["peak_rss_mib"] = rss()
print(json.dumps(out))
"""


def _variants(pool: list[dict], size: int):
    """The pool, then variant k = 1, 2, … of every article (title suffixed, sentences shuffled by a seed)."""
    n = 0
    k = 0
    while True:
        for a in pool:
            if n == size:
                return
            if k == 0:
                yield a["title"], list(a["sentences"])
            else:
                sents = list(a["sentences"])
                random.Random(f"{k}:{a['title']}").shuffle(sents)
                yield f"{a['title']} (variant {k})", sents
            n += 1
        k += 1


def build(pool: list[dict], size: int, root: Path) -> None:
    from harness.bench.snapshots import render_article, safe_file_name

    files, shards = root / "files", root / "shards"
    if (root / "done").exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    buf: list[str] = []
    for n, (title, sents) in enumerate(_variants(pool, size)):
        sub = files / f"{n // 1000:04d}"
        if n % 1000 == 0:
            sub.mkdir(parents=True, exist_ok=True)
        (sub / safe_file_name(f"{n:07d} {title}")).write_text(render_article(title, sents), encoding="utf-8")
        buf.append(json.dumps({"id": str(n), "title": title, "text": sents}, ensure_ascii=False))
        if len(buf) == 500:
            _shard(shards, n // 500, buf)
            buf = []
    if buf:
        _shard(shards, size // 500, buf)
    (root / "done").write_text(str(size))


def _shard(shards: Path, index: int, lines: list[str]) -> None:
    folder, item = divmod(index, 100)
    p = shards / f"{folder:04d}" / f"wiki_{item:02d}.bz2"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(bz2.compress(("\n".join(lines) + "\n").encode("utf-8"), 9))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--articles", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--work", required=True, help="where the folders are built (reused)")
    ap.add_argument("--sizes", default="15000,150000,1500000")
    ap.add_argument("--layouts", default="files,shards")
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--out", metavar="FILE")
    args = ap.parse_args(argv)
    rg = shutil.which("rg") or str(Path(sys.executable).with_name("rg"))
    pool = [json.loads(line) for line in open(args.articles, encoding="utf-8") if line.strip()]
    questions = [q["question"] for q in json.load(open(args.questions, encoding="utf-8"))[: args.queries]]
    results = []
    for size in [int(x) for x in args.sizes.split(",")]:
        root = Path(args.work) / f"n{size}"
        t0 = time.perf_counter()
        build(pool, size, root)
        built_s = time.perf_counter() - t0
        for layout in args.layouts.split(","):
            r = {}
            edits = Path(args.work) / f"edits-n{size}-{layout}.json"  # every 100th file, listed here, not by the child
            edits.write_text(json.dumps(sorted(str(p) for p in (root / layout).rglob("*") if p.is_file())[::100]))
            # the folder's pages read once before anything is timed: the ripgrep runs it is compared with are on a
            # warm page cache, and this host's kernel pages out what is not touched for a while (DAMON), so the
            # first question could otherwise be the only run that reads from disk
            t0 = time.perf_counter()
            subprocess.run(
                [
                    rg,
                    "-c",
                    "-F",
                    "--no-messages",
                    *(["-z"] if layout == "shards" else []),
                    "-e",
                    "the",
                    str(root / layout),
                ],
                stdout=subprocess.DEVNULL,
                check=False,
            )
            r["rg_warming_s"] = time.perf_counter() - t0
            for mode in ("first", "cold"):
                store = str(Path(args.work) / f"stats-n{size}-{layout}.sqlite")
                p = subprocess.run(
                    [sys.executable, "-c", CHILD, str(root / layout), rg, "1" if layout == "shards" else "0"]
                    + [json.dumps(questions), store, mode, str(edits)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                child = json.loads(p.stdout.strip().splitlines()[-1])
                child[f"peak_rss_mib_{mode}"] = child.pop("peak_rss_mib")
                r.update(child)
            r.update(size=size, layout=layout, build_s=round(built_s, 1))
            r["peak_rss_mib"] = max(r["peak_rss_mib_first"], r["peak_rss_mib_cold"])
            r["ratio_warm"] = r["warm_total_s"] / r["rg_s"] if r["rg_s"] else None
            r["ratio_cold"] = r["cold"]["total"] / r["rg_s"] if r["rg_s"] else None
            r["ratio_first"] = r["first"]["total"] / r["rg_s"] if r["rg_s"] else None
            r["warm_docs_per_s"] = r["documents"] / r["warm_total_s"] if r["warm_total_s"] else None
            results.append(r)
            print(
                f"{size:>9,} {layout:<6} lens warm {r['warm_total_s']:.3f} s (survey {r['warm_scan_s']:.3f} + score "
                f"{r['warm_score_s']:.3f}), cold {r['cold']['total']:.2f} s, first {r['first']['total']:.1f} s, "
                f"1% edited {r['after_edit']['total']:.2f} s, rg {r['rg_s']:.3f} s, ratio {r['ratio_warm']:.2f}x warm / "
                f"{r['ratio_cold']:.2f}x cold, peak {r['peak_rss_mib']:.0f} MiB, store {r['store_bytes'] / 2**20:.0f} MiB",
                flush=True,
            )
    summary = {"queries": args.queries, "sizes": args.sizes, "results": results}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
