"""Which library reads each document format: PDF text extraction speed and fidelity on real filings, and the
install size, import time and licence of the format libraries lens depends on.

Usage: python benchmarks/format_libraries.py DATA [--files N] [--libs pypdfium2,pypdf,pdfminer,pdftotext]
                                                [--show FILE:PAGE] [--packages] [--pool]
  e.g. python benchmarks/format_libraries.py ../shared/data/financebench --packages --pool

DATA is a folder with ``pdfs/*.pdf`` (the FinanceBench filings: CC BY-NC, read in place, nothing copied). Each
library extracts the text of every page of the same PDFs (the first N by name, default all) on one core (the
process is pinned to one CPU; pdftotext runs as a child process and inherits the pin). pages/s = pages / wall
seconds of the whole pass, the library's import and each document's open included; pdftotext is timed as the
command (``pdftotext -enc UTF-8 FILE -``, one process per file). Fidelity is measured against pdftotext: the
share of its number tokens ("1,577", "93.86") and of its word tokens that each library also returns for the
same page (a multiset overlap), and the pages on which a library returns no text while pdftotext does. Table
rows: the share of a library's number tokens that sit on a line with a word of 3+ letters — a statement's row
read as "Total assets $ 12,707,114 $ 11,726,472" counts, a column of bare numbers printed after the column of
labels does not. The comparison libraries are not lens dependencies: ``pip install pypdf pdfminer.six`` and
poppler's pdftotext (Debian: ``apt-get install poppler-utils``).

``--show FILE:PAGE`` prints the text every library gives for one page (1-based) to stdout, to eyeball a
financial statement; nothing is written. ``--packages`` prints each chosen format library's installed size
(with the dependencies lens does not already have), import time (median of 5 fresh interpreters, minus an
empty one) and licence. ``--pool`` times the extraction runner: starting a worker, one small file through a
worker against in-process, one filing through a worker with the worker's peak address space, and every PDF
through the pool with 1 and with 2 workers (pages/s, wall clock; not pinned).
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

NUMBER = re.compile(r"\d[\d,.]*\d|\d")
WORD = re.compile(r"[A-Za-z]{2,}")
LABEL = re.compile(r"[A-Za-z]{3,}")


def pypdfium2_pages(path: Path) -> list[str]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        out = []
        for i in range(len(pdf)):
            page = pdf[i]
            tp = page.get_textpage()
            out.append(tp.get_text_range())
            tp.close()
            page.close()
        return out
    finally:
        pdf.close()


def pypdf_pages(path: Path) -> list[str]:
    import pypdf

    return [p.extract_text() or "" for p in pypdf.PdfReader(str(path)).pages]


def pdfminer_pages(path: Path) -> list[str]:
    from pdfminer.high_level import extract_text

    return extract_text(str(path)).split("\f")


def pdftotext_pages(path: Path) -> list[str]:
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True, check=True).stdout
    return out.decode("utf-8", errors="replace").split("\f")


LIBRARIES = {
    "pypdfium2": pypdfium2_pages,
    "pypdf": pypdf_pages,
    "pdfminer": pdfminer_pages,
    "pdftotext": pdftotext_pages,
}


def page_count(path: Path) -> int:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return len(pdf)
    finally:
        pdf.close()


def overlap(ref: str, got: str, pattern: re.Pattern) -> tuple[int, int]:
    a, b = Counter(pattern.findall(ref)), Counter(pattern.findall(got))
    return sum(min(n, b[t]) for t, n in a.items()), sum(a.values())


def pin_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity)"


def bench_pdfs(pdfs: list[Path], libs: list[str]) -> None:
    pages = sum(page_count(p) for p in pdfs)
    print(f"{len(pdfs)} PDFs, {pages} pages, {sum(p.stat().st_size for p in pdfs) / 1e6:.1f} MB; {pin_one_core()}")
    texts: dict[str, list[list[str]]] = {}
    print(
        "\n| library | seconds | pages/s | × pdftotext | numbers found (vs pdftotext) | words found | empty pages "
        "| numbers on a line with a label |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    timing: dict[str, float] = {}
    for lib in libs:
        t = time.perf_counter()
        texts[lib] = [LIBRARIES[lib](p) for p in pdfs]
        timing[lib] = time.perf_counter() - t
    ref = texts.get("pdftotext")
    for lib in libs:
        row = f"| {lib} | {timing[lib]:.1f} | {pages / timing[lib]:.0f} |"
        row += f" {timing['pdftotext'] / timing[lib]:.2f} |" if "pdftotext" in timing else " – |"
        labelled = [0, 0]
        for doc in texts[lib]:
            for page in doc:
                for line in page.splitlines():
                    n = len(NUMBER.findall(line))
                    labelled[0] += n if LABEL.search(line) else 0
                    labelled[1] += n
        beside = f" {labelled[0] / max(labelled[1], 1):.1%} |"
        if ref is None:
            print(row + " – | – | – |" + beside)
            continue
        num = [0, 0]
        word = [0, 0]
        empty = 0
        for ref_doc, doc in zip(ref, texts[lib]):
            for i, ref_page in enumerate(ref_doc):
                got = doc[i] if i < len(doc) else ""
                for acc, pattern in ((num, NUMBER), (word, WORD)):
                    hit, total = overlap(ref_page, got, pattern)
                    acc[0] += hit
                    acc[1] += total
                empty += bool(ref_page.strip()) and not got.strip()
        print(row + f" {num[0] / max(num[1], 1):.1%} | {word[0] / max(word[1], 1):.1%} | {empty} |" + beside)


def show(pdfs: Path, spec: str, libs: list[str]) -> None:
    name, page = spec.rsplit(":", 1)
    path = pdfs / name
    for lib in libs:
        text = LIBRARIES[lib](path)[int(page) - 1]
        print(f"\n===== {lib}: {name} page {page} =====\n{text.replace(chr(13), '')}")


# the format libraries lens depends on, and the distributions each brings that lens does not already install
CHOSEN = {
    "pypdfium2": ("pypdfium2", ["pypdfium2"]),
    "python-docx": ("docx", ["python-docx", "lxml"]),
    "python-pptx": ("pptx", ["python-pptx", "lxml", "XlsxWriter", "pillow"]),
    "openpyxl": ("openpyxl", ["openpyxl", "et_xmlfile"]),
}


def installed_bytes(dist: str) -> int:
    files = md.distribution(dist).files or []
    total = 0
    for f in files:
        p = Path(f.locate())
        if p.is_file():
            total += p.stat().st_size
    return total


def licence(dist: str) -> str:
    meta = md.metadata(dist)
    text = meta.get("License-Expression") or ""
    if not text:
        classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License")]
        text = ", ".join(classifiers) or (meta.get("License") or "").splitlines()[0][:60]
    return text


def import_seconds(module: str) -> float:
    def run(code: str) -> float:
        times = []
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    return run(f"import {module}") - run("pass")


def packages() -> None:
    print("\n| library | version | licence | installed MB (with new deps) | import s |")
    print("| --- | --- | --- | ---: | ---: |")
    for dist, (module, deps) in CHOSEN.items():
        size = sum(installed_bytes(d) for d in deps)
        print(
            f"| {dist} | {md.version(dist)} | {licence(dist)} | {size / 1e6:.1f} ({', '.join(deps)}) |"
            f" {import_seconds(module):.3f} |"
        )
    print(
        "\ndependencies: "
        + "; ".join(f"{d} {md.version(d)} ({licence(d)})" for d in ("lxml", "XlsxWriter", "pillow", "et_xmlfile"))
    )


def _median_s(fn, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def pool(pdfs: list[Path]) -> None:
    from lens.parts import Extractor, format_of

    small = b"Name,Height (m),First lit\n" + b"".join(b"Light %d,%d,18%02d\n" % (i, 20 + i, i) for i in range(40))
    big = small[: small.index(b"\n") + 1] + b"".join(
        b"Light %d,%d,%d\n" % (i, i % 90, 1800 + i % 200) for i in range(12_000)
    )
    with Extractor(workers=1, inline_bytes=0) as runner:
        t = time.perf_counter()
        runner.extract_all([(small, ".csv")])
        start = time.perf_counter() - t
        print("\n| input | in-process | through a warm worker |")
        print("| --- | ---: | ---: |")
        for label, data in ((f"CSV, {len(small)} bytes (40 rows)", small), (f"CSV, {len(big) // 1024} KB", big)):
            here = _median_s(lambda: format_of(".csv").read(data))
            there = _median_s(lambda: runner.extract_all([(data, ".csv")]))
            print(f"| {label} | {here * 1e3:.2f} ms | {there * 1e3:.2f} ms |")
        print(f"\nfirst call through a new worker (its start included): {start * 1e3:.0f} ms")
        biggest = max(pdfs, key=lambda p: p.stat().st_size)
        t = time.perf_counter()
        [res] = runner.extract_all([(biggest, ".pdf")])
        one = time.perf_counter() - t
        print(
            f"{biggest.name} ({biggest.stat().st_size / 1e6:.1f} MB, {len(res.units)} pages with text) through the "
            f"worker: {one:.2f} s; the worker's peak address space {runner.worker_peak_kb() / 1024:.0f} MB "
            f"(VmPeak), resident {runner.worker_peak_kb('VmHWM') / 1024:.0f} MB"
        )
    pages = sum(page_count(p) for p in pdfs)
    for workers in (1, 2):
        with Extractor(workers=workers) as runner:
            t = time.perf_counter()
            done = runner.extract_all([(p, ".pdf") for p in pdfs])
            wall = time.perf_counter() - t
            peak = runner.worker_peak_kb()
        units = sum(len(r.units) for r in done)
        print(
            f"{len(pdfs)} PDFs ({pages} pages, {units} units) through {workers} worker(s): {wall:.1f} s, "
            f"{pages / wall:.0f} pages/s; peak address space of a worker {peak / 1024:.0f} MB"
        )
    t = time.perf_counter()
    for p in pdfs:
        pdftotext_pages(p)
    wall = time.perf_counter() - t
    print(f"pdftotext over the same PDFs, one after another: {wall:.1f} s, {pages / wall:.0f} pages/s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--files", type=int, default=0, help="the first N PDFs by name (0: all)")
    ap.add_argument("--libs", default=",".join(LIBRARIES))
    ap.add_argument("--show", default="", help="FILE:PAGE (1-based): print that page from every library")
    ap.add_argument("--packages", action="store_true")
    ap.add_argument("--pool", action="store_true")
    ap.add_argument("--no-pdf", action="store_true", help="skip the PDF pass")
    args = ap.parse_args(argv)
    pdfs = sorted((args.data / "pdfs").glob("*.pdf"))
    if args.files:
        pdfs = pdfs[: args.files]
    libs = [x for x in args.libs.split(",") if x]
    if args.show:
        show(args.data / "pdfs", args.show, libs)
        return 0
    if not args.no_pdf:
        bench_pdfs(pdfs, libs)
    if args.packages:
        packages()
    if args.pool:
        if not args.no_pdf:
            print("\n(--pool runs unpinned: use it with --no-pdf)")
        else:
            pool(pdfs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
