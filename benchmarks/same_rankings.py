"""The prior's top-10 for each question over a folder, as JSON lines, to compare two commits' rankings exactly.

    python benchmarks/same_rankings.py FOLDER QUESTIONS.json --out top10.jsonl [--limit N]

Each line: the question's id, and the top 10 (document id, score rounded to 9 places) of the prior for the
question text with its capitalised spans and content terms as cues — what ``lens ask`` forms before its first
oracle call for a one-requirement question. The folder is read the way the running code reads it for a question
(a survey where the code has one, else a scan). Two runs' files are equal iff the rankings are.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("questions")
    ap.add_argument("--out", required=True)
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args(argv)
    from pathlib import Path

    import lens
    from lens import load_config
    from lens.parts import CorpusView, Prior, capitalised_spans, content_terms

    if any(Path(lens.__file__).parent.rglob("_filestats.py")):
        from lens.parts import survey_corpus as read_folder
    else:  # a commit before the statistics store
        from lens.parts import scan_corpus as read_folder

    cfg = load_config("deep", env={})
    questions = json.load(open(args.questions, encoding="utf-8"))
    if args.limit:
        questions = questions[: args.limit]
    view = CorpusView.of(read_folder(args.folder, cfg.reader))
    prior = Prior(view, cfg.prior)
    with open(args.out, "w", encoding="utf-8") as out:
        for q in questions:
            text = q["question"]
            cues = list(dict.fromkeys(capitalised_spans(text) + content_terms(text)))
            top = [[view.docs[c.index].doc_id, round(c.score, 9)] for c in prior.score(text, cues, limit=10)]
            out.write(json.dumps({"id": q["_id"], "top": top}, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
