"""How fast lens reads a folder of PDFs, next to poppler's ``pdftotext`` over the same files, in one run.

    python benchmarks/documents_speed.py ../shared/data/financebench/pdfs --out benchmarks/results/documents/speed-28.json
    python benchmarks/documents_speed.py ../shared/data/financebench/pdfs --copies 1000 --work /tmp/lens-docs-speed \\
        --out benchmarks/results/documents/speed-1000.json

The folder: the PDFs of ``PDF_DIR`` as they are, or with ``--copies N`` a folder of N PDFs under ``--work`` made
by copying the filings round robin under new names (``c0017-<name>.pdf``; real copies, not links, built once and
reused), so every file is extracted on its own (lens keys extraction by path and stat signature). The filings
are read in place and never enter the repository.

Measured, in this order, over the same folder (warm page cache: every file is read once, untimed, first):

- ``pdftotext``: ``pdftotext -enc UTF-8 FILE -`` for every PDF, one process per file, one after another (one
  core: the command as a user runs it) and ``--jobs`` at a time (every core); pages/s = pages / wall seconds.
- lens extraction: ``lens.parts.scan_corpus`` over the folder in a fresh child process (the extraction workers,
  one per core; no statistics store), pages/s.
- the first question over the folder in a fresh child process with an empty statistics store: what ``lens ask``
  does before its first oracle call (``survey_corpus`` — list, extract every PDF over the workers, store the
  statistics and the units' text —, then the prior scores every unit for the question's cues), as
  ``benchmarks/scale_curve.py`` times it; then the same child asks ``--queries`` more questions (a repeated
  question — the same one three times, then the others: nothing changed, nothing is read again); then a new child asks with the store kept (what each new
  ``lens ask`` process pays).
- peak RSS of each child (``ru_maxrss``) and of its extraction workers (``RUSAGE_CHILDREN``), MiB.

Questions come from ``--questions`` (JSONL with a ``question`` field; default ``PDF_DIR/../questions.jsonl``, the
FinanceBench questions), cues as the scale curve takes them (capitalised spans and content terms). The JSON
written to ``--out`` holds every figure; one line per measurement is printed as it finishes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = ["main"]

CHILD = r"""
import json, resource, sys, time, statistics
from pathlib import Path
from lens import load_config
from lens.parts import CorpusView, Prior, capitalised_spans, content_terms, scan_corpus, survey_corpus

folder, store, mode, questions = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
cfg = load_config("deep", env={})
cfg.reader.stats_store = store

def cues_of(q):
    return list(dict.fromkeys(capitalised_spans(q) + content_terms(q)))

def question(q):
    t0 = time.perf_counter()
    scan = survey_corpus(folder, cfg.reader)
    t1 = time.perf_counter()
    Prior(CorpusView.of(scan), cfg.prior).score(q, cues_of(q))
    return scan, t1 - t0, time.perf_counter() - t1

def rss(who):
    return resource.getrusage(who).ru_maxrss / 1024

out = {}
if mode == "extract":
    t0 = time.perf_counter()
    scan = scan_corpus(folder, cfg.reader)
    out.update(seconds=time.perf_counter() - t0, units=len(scan.documents), files=scan.files,
               skipped=dict(scan.skipped), extract_worker_seconds=scan.extract_seconds)
elif mode == "first":
    for suffix in ("", "-wal", "-shm"):
        Path(store + suffix).unlink(missing_ok=True)
    scan, a, b = question(questions[0])
    out.update(units=len(scan.documents), files=scan.files, skipped=dict(scan.skipped),
               first={"survey_s": a, "prior_s": b, "total_s": a + b})
    out["store_bytes"] = sum(Path(store + x).stat().st_size for x in ("", "-wal") if Path(store + x).exists())
    same = [question(questions[0])[1:] for _ in range(3)]
    others = [question(q)[1:] for q in questions[1:]] or same
    for key, rows in (("repeated", same), ("other_questions", others)):
        out[key] = {"n": len(rows), "survey_s": statistics.median(a for a, _ in rows),
                    "prior_s": statistics.median(b for _, b in rows),
                    "total_s": statistics.median(a + b for a, b in rows),
                    "max_total_s": max(a + b for a, b in rows)}
else:
    scan, a, b = question(questions[0])
    out["new_process"] = {"survey_s": a, "prior_s": b, "total_s": a + b}
out["peak_rss_mib"] = rss(resource.RUSAGE_SELF)
out["workers_peak_rss_mib"] = rss(resource.RUSAGE_CHILDREN)
print(json.dumps(out))
"""


def pdf_pages(paths: list[Path]) -> int:
    """Pages of every PDF (pypdfium2 reads only the page tree here, no text)."""
    import pypdfium2 as pdfium

    total = 0
    for p in paths:
        pdf = pdfium.PdfDocument(str(p))
        total += len(pdf)
        pdf.close()
    return total


def make_copies(source: list[Path], n: int, folder: Path) -> list[Path]:
    """``n`` copies of the ``source`` PDFs round robin under new names; an existing complete folder is reused."""
    marker = folder / ".copies.json"
    want = {"n": n, "source": [f"{p.name}:{p.stat().st_size}" for p in source]}
    if marker.exists() and json.loads(marker.read_text()) == want:
        return sorted(folder.glob("*.pdf"))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for k in range(n):
        src = source[k % len(source)]
        shutil.copyfile(src, folder / f"c{k:04d}-{src.name}")
    marker.write_text(json.dumps(want))  # hidden: lens skips it
    return sorted(folder.glob("*.pdf"))


def _pdftotext(path: Path) -> None:
    subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], stdout=subprocess.DEVNULL, check=True)


def time_pdftotext(paths: list[Path], jobs: int) -> float:
    t0 = time.perf_counter()
    if jobs == 1:
        for p in paths:
            _pdftotext(p)
    else:
        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(_pdftotext, paths))
    return time.perf_counter() - t0


def child(folder: Path, store: Path, mode: str, questions: list[str]) -> dict:
    p = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(store), mode, json.dumps(questions)],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        raise SystemExit(f"child ({mode}) failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def load_questions(path: Path | None, n: int) -> list[str]:
    if path is None or not path.is_file():
        return ["What was the total revenue in the fiscal year?"] * max(1, n)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["question"] for r in rows[: n + 1]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pdfs", metavar="PDF_DIR", help="folder of PDFs (e.g. ../shared/data/financebench/pdfs)")
    ap.add_argument("--copies", type=int, metavar="N", help="make a folder of N copies under --work and use it")
    ap.add_argument("--work", default="/tmp/lens-documents-speed", help="copies and statistics stores go here")
    ap.add_argument(
        "--questions", metavar="FILE", help="JSONL with a question field (default PDF_DIR/../questions.jsonl)"
    )
    ap.add_argument("--queries", type=int, default=5, help="repeated questions after the first (default 5)")
    ap.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="pdftotext processes at once (default: cores)"
    )
    ap.add_argument("--out", metavar="FILE", help="write the figures as JSON")
    args = ap.parse_args(argv)
    if shutil.which("pdftotext") is None:
        raise SystemExit("pdftotext not found (Debian: apt-get install poppler-utils)")
    source = sorted(Path(args.pdfs).glob("*.pdf"))
    if not source:
        raise SystemExit(f"{args.pdfs}: no PDFs")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.copies:
        t0 = time.perf_counter()
        paths = make_copies(source, args.copies, work / f"copies-{args.copies}")
        print(f"folder: {len(paths)} copies in {work / f'copies-{args.copies}'} ({time.perf_counter() - t0:.1f} s)")
        folder = work / f"copies-{args.copies}"
    else:
        paths, folder = source, Path(args.pdfs)
    qpath = Path(args.questions) if args.questions else Path(args.pdfs).parent / "questions.jsonl"
    questions = load_questions(qpath, args.queries)
    pages = pdf_pages(paths)
    nbytes = sum(p.stat().st_size for p in paths)
    print(
        f"{len(paths)} PDFs, {pages:,} pages, {nbytes / 1e6:.1f} MB; load average {os.getloadavg()[0]:.2f}", flush=True
    )

    for p in paths:  # warm the page cache (untimed): every timed pass reads from memory
        p.read_bytes()
    seq = time_pdftotext(paths, 1)
    par = time_pdftotext(paths, args.jobs)
    print(
        f"pdftotext: one process at a time {seq:.1f} s ({pages / seq:.0f} pages/s); {args.jobs} at a time "
        f"{par:.1f} s ({pages / par:.0f} pages/s)",
        flush=True,
    )

    store = work / f"stats-{len(paths)}.sqlite"
    ext = child(folder, store, "extract", questions)
    print(
        f"lens extraction (scan_corpus, workers on every core): {ext['seconds']:.1f} s "
        f"({pages / ext['seconds']:.0f} pages/s, {ext['units']:,} units); peak RSS {ext['peak_rss_mib']:.0f} MiB, "
        f"workers {ext['workers_peak_rss_mib']:.0f} MiB",
        flush=True,
    )
    first = child(folder, store, "first", questions)
    f, r, o = first["first"], first["repeated"], first["other_questions"]
    print(
        f"first question, empty store: {f['total_s']:.1f} s (survey {f['survey_s']:.1f} + prior {f['prior_s']:.2f}); "
        f"the same question again (median of {r['n']}): {r['total_s']:.3f} s (max {r['max_total_s']:.3f}); "
        f"other questions (median of {o['n']}): {o['total_s']:.3f} s; "
        f"store {first['store_bytes'] / 2**20:.1f} MiB; peak RSS {first['peak_rss_mib']:.0f} MiB, "
        f"workers {first['workers_peak_rss_mib']:.0f} MiB",
        flush=True,
    )
    cold = child(folder, store, "cold", questions)
    print(
        f"a new process's question, store kept: {cold['new_process']['total_s']:.2f} s; "
        f"peak RSS {cold['peak_rss_mib']:.0f} MiB",
        flush=True,
    )
    result = {
        "pdfs": len(paths),
        "copies": args.copies,
        "pages": pages,
        "bytes": nbytes,
        "cpus": os.cpu_count(),
        "load_average_end": os.getloadavg()[0],
        "pdftotext": {
            "sequential_s": seq,
            "sequential_pages_per_s": pages / seq,
            "jobs": args.jobs,
            "parallel_s": par,
            "parallel_pages_per_s": pages / par,
        },
        "lens_extraction": {**ext, "pages_per_s": pages / ext["seconds"]},
        "first_question": first,
        "new_process_question": cold,
        "ratios": {
            "extraction_vs_pdftotext_sequential": seq / ext["seconds"],
            "extraction_vs_pdftotext_parallel": par / ext["seconds"],
            "first_question_vs_pdftotext_sequential": f["total_s"] / seq,
            "first_question_vs_pdftotext_parallel": f["total_s"] / par,
        },
        # the questions' text stays out of the results (FinanceBench is CC BY-NC): their source and count only
        "questions": {"file": str(qpath) if qpath.is_file() else None, "asked": len(questions)},
    }
    print(
        f"ratios: extraction {result['ratios']['extraction_vs_pdftotext_sequential']:.2f}x pdftotext (one at a time), "
        f"{result['ratios']['extraction_vs_pdftotext_parallel']:.2f}x ({args.jobs} at a time); first question "
        f"{result['ratios']['first_question_vs_pdftotext_sequential']:.2f}x / "
        f"{result['ratios']['first_question_vs_pdftotext_parallel']:.2f}x pdftotext's time"
    )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
