"""What comes back from a document snapshot: each article's sentences, read back through lens's reader (issue 58).

``lens bench snapshot --as pdf|docx`` writes every article of D_n as a PDF or a Word file; the format-invariance
runs ask the same questions over them and over the text snapshot, so what the reader cannot get back from a file
is a difference no answer should be blamed on. This reads the snapshot folder as lens does (``scan_corpus``) and
checks, for every file of its manifest, that every sentence of its article is in the file's extracted text
(whitespace normalised), and says why not where it is not: a right-to-left script (Hebrew, Arabic: drawn in
logical order, extracted reversed) or another reason (a few examples named).

  .venv/bin/python benchmarks/snapshot_fidelity.py SNAPSHOT/D125 --articles ../shared/data/hotpotqa/wiki_articles.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path

from harness.bench.datasets import DataError, load_articles
from lens.parts import scan_corpus

__all__ = ["fidelity", "main"]


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _right_to_left(text: str) -> bool:
    return any(unicodedata.bidirectional(ch) in ("R", "AL") for ch in text)


def fidelity(folder: str | Path, articles: str | Path, *, examples: int = 10) -> dict:
    """Counts of the snapshot's files whose article comes back verbatim, and of those that do not, by reason."""
    folder = Path(folder)
    path = Path(f"{folder}.manifest.json")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        titles = {f["name"]: f["title"] for f in manifest["files"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a snapshot manifest ({exc!r})") from None
    by_title = {a.title: a for a in load_articles(Path(articles))}
    unknown = sorted(t for t in titles.values() if t not in by_title)
    if unknown:
        raise DataError(f"{articles}: {len(unknown)} of the snapshot's articles are not in it, e.g. {unknown[0]!r}")
    text: dict[str, list[str]] = defaultdict(list)
    for doc in scan_corpus(folder).documents:
        text[doc.path].append(doc.text)
    rtl, other = [], []
    for name, title in sorted(titles.items()):
        got = _flat("\n".join(text.get(name, [])))
        missing = [s for s in by_title[title].sentences if _flat(s) and _flat(s) not in got]
        if missing:
            (rtl if any(_right_to_left(s) for s in missing) else other).append(name)
    return {
        "folder": str(folder),
        "format": manifest.get("layout", {}).get("format", "text"),
        "files": len(titles),
        "verbatim": len(titles) - len(rtl) - len(other),
        "not_verbatim_right_to_left": len(rtl),
        "not_verbatim_other": len(other),
        "other_examples": other[:examples],
        "undrawable": {k: v for k, v in manifest.get("diagnostics", {}).items() if "undrawable" in k},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="a snapshot stage folder (its manifest beside it: FOLDER.manifest.json)")
    ap.add_argument("--articles", required=True, help="the articles file the snapshot was built from")
    args = ap.parse_args(argv)
    try:
        out = fidelity(args.folder, args.articles)
    except DataError as exc:
        print(f"snapshot_fidelity: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
