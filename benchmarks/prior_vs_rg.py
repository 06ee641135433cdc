"""Prior formation time per query vs ripgrep searching the same cue literals over the same folder, same run.

    python benchmarks/prior_vs_rg.py FOLDER QUESTIONS.json [--build ARTICLES.jsonl --files 20000] [--queries 20]

``--build`` writes FOLDER first: one extensionless raw file per article of ARTICLES (title line, then one
sentence per line); if the pool has fewer articles than ``--files``, the rest are second copies of articles
under ``copies/`` (same text, so the scan reads as many bytes as a real folder of that size).

For each question, "prior formation" is what ``lens ask`` does before its first oracle call: scan the folder as
it is now (list and stat every file; read and hash every file this process has not read unchanged before),
build the per-query view, and score every document with the multi-signal prior for the question's cues. The
first query of a process reads every file; it is reported separately. ripgrep gets the same cue literals
(``rg -F -i -c -e cue …``) over the same folder. Both are timed alternately, warm page cache, and the ratio
of medians is reported with the per-query numbers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def build(articles: str, folder: Path, files: int) -> int:
    from harness.bench.snapshots import assign_file_names, render_article

    pool = [json.loads(line) for line in open(articles, encoding="utf-8") if line.strip()]
    names = assign_file_names(a["title"] for a in pool)
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for a in pool:
        (folder / names[a["title"]]).write_text(render_article(a["title"], a["sentences"]), encoding="utf-8")
        n += 1
    copies = folder / "copies"
    copies.mkdir(exist_ok=True)
    for a in pool[: max(0, files - len(pool))]:
        (copies / names[a["title"]]).write_text(render_article(a["title"], a["sentences"]), encoding="utf-8")
        n += 1
    return n


def rg_binary() -> str:
    found = shutil.which("rg") or str(Path(sys.executable).with_name("rg"))
    if not Path(found).exists():
        raise SystemExit("rg not found: pip install ripgrep==14.1.0")
    return found


def main() -> int:
    from lens import load_config
    from lens.parts import CorpusView, Prior, capitalised_spans, content_terms, scan_corpus

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("questions")
    ap.add_argument("--build", metavar="ARTICLES")
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--queries", type=int, default=20)
    args = ap.parse_args()
    folder = Path(args.folder)
    if args.build:
        print(f"built {build(args.build, folder, args.files)} files in {folder}")
    cfg = load_config("deep")
    rg = rg_binary()
    questions = json.load(open(args.questions, encoding="utf-8"))[: args.queries]
    scan_corpus(folder, cfg.reader)  # warm the page cache for both
    t0 = time.perf_counter()
    # the first query of a process reads every file: a scan that does not reuse the warm-up's unchanged files
    cold_scan = scan_corpus(folder, cfg.reader.model_copy(update={"reuse_unchanged": False}))
    first = questions[0]["question"]
    Prior(CorpusView(cold_scan), cfg.prior).score(first, capitalised_spans(first) + content_terms(first))
    cold = time.perf_counter() - t0
    lens_t, rg_t, score_t, scan_t = [], [], [], []
    for q in questions:
        text = q["question"]
        cues = list(dict.fromkeys(capitalised_spans(text) + content_terms(text)))
        t0 = time.perf_counter()
        scan = scan_corpus(folder, cfg.reader)
        t1 = time.perf_counter()
        view = CorpusView(scan)
        Prior(view, cfg.prior).score(text, cues)
        t2 = time.perf_counter()
        lens_t.append(t2 - t0)
        scan_t.append(t1 - t0)
        score_t.append(t2 - t1)
        cmd = [rg, "-F", "-i", "-c", "--no-messages"] + [x for c in cues for x in ("-e", c)] + [str(folder)]
        t3 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
        rg_t.append(time.perf_counter() - t3)
    med = statistics.median
    print(f"folder {folder}: {scan.files} files, {scan.bytes_read / 1e6:.1f} MB; {len(questions)} queries")
    print(
        f"lens prior formation  median {med(lens_t):.3f} s  (scan {med(scan_t):.3f} s + view and scoring {med(score_t):.3f} s)"
    )
    print(f"rg same cue literals  median {med(rg_t):.3f} s")
    print(f"ratio lens / rg       {med(lens_t) / med(rg_t):.2f}x")
    print(f"first query of a process (every file read, nothing remembered): {cold:.3f} s = {cold / med(rg_t):.2f}x rg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
