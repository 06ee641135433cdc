"""``lens bench financebench``: questions over a folder of documents with page-level gold (FinanceBench).

Data (``--data DIR``, e.g. ``../shared/data/financebench``; CC BY-NC: read in place, never copied): ``pdfs/`` (one
filing per ``<doc_name>.pdf``), ``questions.jsonl`` (FinanceBench's fields: ``financebench_id``, ``doc_name``,
``question``, ``answer``, ``question_type``, ``evidence`` — a list of ``{doc_name, evidence_page_num}`` with
**0-based** page numbers). The questions run in the file's order; ``--limit N`` takes the first N.

Systems, all over the whole folder at once (one shared store, the setting FinanceBench calls "shared vector
store"), with one configuration, LLM client, per-call timeout and per-question cap:

- ``lens`` — the agent, cold, reading the PDFs through its reader: its units are pages, and every evidence item
  carries ``location.page`` (1-based: the 0-based gold page + 1).
- ``bm25`` / ``hybrid`` — BM25-RAG and Hybrid-RAG over the same page units (``harness.bench.systems.corpus``
  reads each PDF through lens's reader, so the same text is searched), the top ``k`` pages into one answer call.
  ``k`` defaults to ``loop.evidence_docs`` of the run's configuration — the documents (here: pages) LENS keeps in
  its evidence set E* and reads into its answer (4 in the deep preset) — and each page is cut at
  ``passage_chars``, by default 3 characters per token of ``loop.window_token_cap`` (the most LENS reads of one
  window; 4,500 characters in the deep preset), so both read about as much into the answer.
- ``closed`` — the LLM alone.

Scores per row (``scores``): **page recall** — the share of the question's gold (filing, page) pairs among the
pages a system cited (LENS: its evidence; RAG: the pages in its prompt), and **page hit** (at least one);
**filing recall** — 1 when a cited page is in the gold filing; **correct** — by rule where one applies
(``harness.bench.numeric``: numbers within 1 % after unit and scale normalisation, yes/no by polarity), else
``None`` and ``correct_rule = "judge"``: ``lens bench judge RUN_DIR`` asks the LLM judge, and the report takes its
verdict there. Tokens and seconds are the prediction's. Closed-Book reads nothing: its page and filing scores are
``None``.

Rows, resume and bindings are the bench runner's (``harness.bench.runner``): one row per (system, question)
appended as it finishes, a rerun resumes without duplicates, and the folder is bound to the questions file, the
question order, the folder's checksum and the configuration. ``financebench_report`` writes the table (markdown
and CSV) with paired tests (exact McNemar on correctness, paired bootstrap of the page-recall difference);
``write_handcheck`` / ``handcheck_agreement`` give a human a sample of verdicts to grade and measure the
agreement.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from harness.bench.datasets import DataError
from harness.bench.judge import cohen_kappa, load_verdicts
from harness.bench.metrics import mcnemar_exact
from harness.bench.numeric import decide
from harness.bench.report import SYSTEM_LABELS, Table, _paired_difference
from harness.bench.run_store import read_rows, read_run_manifest
from harness.bench.runner import RunPlan, rows_by_system
from harness.bench.samples import ids_sha256
from harness.bench.systems.corpus import UNIT_MARK, SnapshotCorpus
from harness.bench.systems.prediction import Prediction
from harness.bench.systems.registry import ArmSettings, reads_corpus
from harness.files import sha256_file, write_text_atomic

__all__ = [
    "SYSTEMS",
    "FBQuestion",
    "FinanceBenchWorkload",
    "load_financebench",
    "plan_financebench",
    "filing_of",
    "cited_pages",
    "page_scores",
    "default_k",
    "default_passage_chars",
    "financebench_report",
    "write_handcheck",
    "handcheck_agreement",
]

SYSTEMS = ("lens", "bm25", "hybrid", "closed", "paperqa")
CHARS_PER_TOKEN = 3  # filings are dense in numbers, which tokenise short: a safe bound for the prompt's size
HANDCHECK_FIELDS = ["system", "question_id", "question", "gold", "prediction", "verdict", "rule", "human"]


@dataclass(frozen=True)
class FBQuestion:
    """One FinanceBench question; the systems see only ``id`` and ``question``."""

    id: str
    question: str
    answer: str
    doc_name: str
    gold_pages: tuple[tuple[str, int], ...]  # (filing, 1-based page), distinct, in the file's order
    question_type: str = ""
    question_reasoning: str = ""


def _field(rec: dict, name: str, where: str, kind: type = str) -> Any:
    value = rec.get(name)
    if not isinstance(value, kind) or (kind is str and not value.strip()):
        raise DataError(
            f"{where}: field {name!r} is missing or not a {'non-empty string' if kind is str else kind.__name__}"
        )
    return value


def load_financebench(data: str | os.PathLike[str]) -> tuple[list[FBQuestion], Path, Path]:
    """(questions in file order, questions file, pdf folder). Raises DataError naming the file, line and field."""
    data = Path(data)
    qfile, pdfs = data / "questions.jsonl", data / "pdfs"
    if not qfile.is_file():
        raise DataError(f"{data}: no questions.jsonl (a FinanceBench folder holds questions.jsonl and pdfs/)")
    if not pdfs.is_dir():
        raise DataError(f"{data}: no pdfs/ folder of filings")
    out: list[FBQuestion] = []
    seen: set[str] = set()
    with open(qfile, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{qfile}:{n}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: not a JSON object ({exc})") from None
            if not isinstance(rec, dict):
                raise DataError(f"{where}: not a JSON object")
            qid = _field(rec, "financebench_id", where)
            if qid in seen:
                raise DataError(f"{where}: field 'financebench_id' repeats {qid!r}")
            seen.add(qid)
            doc = _field(rec, "doc_name", where)
            gold: list[tuple[str, int]] = []
            for k, ev in enumerate(_field(rec, "evidence", where, list)):
                if not isinstance(ev, dict):
                    raise DataError(f"{where}: field 'evidence'[{k}] is not an object")
                page = ev.get("evidence_page_num")
                if not isinstance(page, int) or isinstance(page, bool) or page < 0:
                    raise DataError(f"{where}: field 'evidence'[{k}].evidence_page_num is not a 0-based page number")
                pair = (str(ev.get("doc_name") or doc), page + 1)
                if pair not in gold:
                    gold.append(pair)
            if not gold:
                raise DataError(f"{where}: field 'evidence' lists no page")
            for filing, _ in gold:
                if not (pdfs / f"{filing}.pdf").is_file():
                    raise DataError(f"{where}: evidence filing {filing!r} is not in {pdfs} ({filing}.pdf)")
            out.append(
                FBQuestion(
                    id=qid,
                    question=_field(rec, "question", where),
                    answer=str(rec.get("answer") or ""),
                    doc_name=doc,
                    gold_pages=tuple(gold),
                    question_type=str(rec.get("question_type") or ""),
                    question_reasoning=str(rec.get("question_reasoning") or ""),
                )
            )
    if not out:
        raise DataError(f"{qfile}: no questions")
    return out, qfile, pdfs


def filing_of(doc_id: str) -> str:
    """The filing of a page's document id (``AMAZON_2017_10K.pdf#u38`` → ``AMAZON_2017_10K``)."""
    file = doc_id.split(UNIT_MARK, 1)[0].rsplit("/", 1)[-1]
    return file[:-4] if file.lower().endswith(".pdf") else file


def cited_pages(pred: Prediction) -> list[tuple[str, int]]:
    """The (filing, 1-based page) pairs a prediction cites, in order, each once (its retrieved documents' pages)."""
    out: list[tuple[str, int]] = []
    for d in pred.retrieved:
        page = (d.location or {}).get("page")
        if isinstance(page, int):
            pair = (filing_of(d.path), page)
            if pair not in out:
                out.append(pair)
    return out


def page_scores(gold: Sequence[tuple[str, int]], cited: Sequence[tuple[str, int]], filing: str) -> dict[str, float]:
    """Page recall (share of the gold pages cited), page hit (any) and filing recall (a page of the gold filing)."""
    g, c = set(gold), set(cited)
    return {
        "page_recall": len(g & c) / len(g),
        "page_hit": float(bool(g & c)),
        "filing_recall": float(any(f == filing for f, _ in c)),
    }


class FinanceBenchWorkload:
    """The runner's hook (``harness.bench.runner.Workload``): FinanceBench's row fields, scores and summary."""

    def row_fields(self, q: FBQuestion, pred: Prediction) -> dict[str, Any]:
        return {
            "gold_answer": q.answer,
            "doc_name": q.doc_name,
            "gold_pages": [list(p) for p in q.gold_pages],
            "question_type": q.question_type,
            "question_reasoning": q.question_reasoning,
            "scores": self.score(q, pred),
        }

    @staticmethod
    def score(q: FBQuestion, pred: Prediction) -> dict[str, Any]:
        d = decide(q.answer, pred.answer)
        cited = cited_pages(pred)
        out: dict[str, Any] = {
            "correct": d.correct,
            "correct_rule": d.rule,
            "pages_cited": [list(p) for p in cited],
            "page_recall": None,
            "page_hit": None,
            "filing_recall": None,
        }
        if reads_corpus(pred.system):
            out.update(page_scores(q.gold_pages, cited, q.doc_name))
        return out

    @staticmethod
    def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
        out = {}
        for name, rs in rows_by_system(rows).items():
            n = len(rs)
            pr = [r["scores"]["page_recall"] for r in rs if r["scores"]["page_recall"] is not None]
            fr = [r["scores"]["filing_recall"] for r in rs if r["scores"]["filing_recall"] is not None]
            out[name] = {
                "rows": n,
                "correct_by_rule": sum(r["scores"]["correct"] is True for r in rs) / n,
                "for_the_judge": sum(r["scores"]["correct"] is None for r in rs),
                "page_recall": sum(pr) / len(pr) if pr else None,
                "filing_recall": sum(fr) / len(fr) if fr else None,
                "tokens": sum(r["prediction"]["tokens"] for r in rs) / n,
                "seconds": sum(r["prediction"]["seconds"] for r in rs) / n,
                "errors": sum(1 for r in rs if r["prediction"]["error"]),
            }
        return out


def default_k(config: Any) -> int:
    """Pages into a RAG arm's prompt: the documents LENS keeps in E* and reads into its answer."""
    return int(config.loop.evidence_docs)


def default_passage_chars(config: Any) -> int:
    """Most characters of one page in a RAG prompt: about as much as LENS reads of one window."""
    return int(config.loop.window_token_cap) * CHARS_PER_TOKEN


def plan_financebench(
    *,
    data: str | os.PathLike[str],
    systems: tuple[str, ...],
    out: str | os.PathLike[str],
    config: Any,
    limit: int | None = None,
    index_dir: str | os.PathLike[str] | None = None,
    k: int | None = None,
    passage_chars: int | None = None,
    dense_model: str | None = None,
) -> RunPlan:
    """Questions, the folder of filings read as page units, and the run's bindings. Raises DataError."""
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise DataError(f"--systems: {', '.join(unknown)} not in this workload (choose from {','.join(SYSTEMS)})")
    if limit is not None and limit < 1:
        raise DataError(f"--limit {limit}: must be >= 1")
    questions, qfile, pdfs = load_financebench(data)
    corpus = SnapshotCorpus.load(pdfs)
    if corpus.skipped:
        raise DataError(f"{pdfs}: some filings cannot be read ({corpus.skipped}); every filing must read")
    settings = ArmSettings(
        k=k if k is not None else default_k(config),
        passage_chars=passage_chars if passage_chars is not None else default_passage_chars(config),
        dense_model=dense_model,
    )
    if settings.k < 1 or settings.passage_chars < 1:
        raise DataError(f"--k {settings.k} / --passage-chars {settings.passage_chars}: must be >= 1")
    ids = [q.id for q in questions]
    binding = {
        "workload": "financebench",
        "setting": "financebench",
        "questions_file_sha256": sha256_file(qfile),
        "stage": {
            "name": "financebench",
            "size": len(ids),
            "sample_sha256": ids_sha256(sorted(ids)),
            "order_sha256": ids_sha256(ids),
        },
        "question_set": "all, in the file's order",
        "question_order_sha256": ids_sha256(ids),
        "corpus": {"name": pdfs.name, "corpus_checksum": corpus.checksum},
        "arm": {"kind": "fresh"},
    }
    files = sorted({d.file for d in corpus.docs})
    out = Path(out)
    return RunPlan(
        out=out,
        config=config,
        systems=tuple(s for s in SYSTEMS if s in systems),
        settings=settings,
        questions=questions[:limit] if limit else questions,
        planned_ids=tuple(ids),
        binding=binding,
        corpus=corpus,
        index_corpus=corpus,
        index_root=Path(index_dir) if index_dir else out / "indexes",
        snapshot_info={
            "path": str(pdfs.resolve()),
            "questions_from": str(qfile),
            "workload": "financebench",
            "filings": len(files),
            "documents": len(corpus),  # page units with text
            "k": settings.k,
            "passage_chars": settings.passage_chars,
        },
        limit=limit,
        workload=FinanceBenchWorkload(),
    )


# --------------------------------------------------------------------------- report


def _current_rows(run_dir: Path) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, Any]]]]:
    """(manifest, system → question id → row) for each system's current arm (its manifest's system hash)."""
    manifest = read_run_manifest(run_dir)
    if manifest.get("binding", {}).get("workload") != "financebench":
        raise DataError(f"{run_dir}: not a lens bench financebench run (its binding names no financebench workload)")
    current = {name: e["system_hash"] for name, e in manifest.get("systems", {}).items()}
    rows: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in read_rows(run_dir, manifest):
        if current.get(r["system"]) == r["system_hash"]:
            rows[r["system"]][r["question_id"]] = r
    return manifest, rows


def correctness(row: dict[str, Any], verdicts: dict[tuple[str, str], bool | None]) -> bool | None:
    """The row's verdict: its rule's where one decided, else the judge's (None: not judged, or the judge failed)."""
    c = row["scores"]["correct"]
    return c if c is not None else verdicts.get((row["system_hash"], row["question_id"]))


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _unit_page(doc_id: str) -> tuple[str, int] | None:
    """The (filing, 1-based page) of a page unit's id (``AMAZON_2017_10K.pdf#u38`` → ``("AMAZON_2017_10K", 38)``: a
    PDF's unit k is its page k), None for any other id (a reading's window suffix ``#s0-5`` is dropped)."""
    head, mark, rest = doc_id.partition(UNIT_MARK)
    k = rest.split("#", 1)[0]
    return (filing_of(head), int(k)) if mark and k.isdigit() else None


def evidence_funnel(row: dict[str, Any]) -> dict[str, Any] | None:
    """Where a row's system found or lost the gold evidence, stage by stage (None for a system that reads no filing):
    ``ranked`` — the pages it ranked before reading (LENS: the prior's candidates as recorded; a RAG arm: its top k),
    ``filing_first`` / ``filing_top10`` — a gold-filing page first / in the first ten of them, ``page_rank`` — the
    1-based rank of the first gold page among them (None: not ranked), ``page_read`` — a gold page was read (LENS: a
    reading's window on it; a RAG arm: in its prompt) and ``page_cited`` — a gold page cited."""
    details = (row.get("prediction") or {}).get("details") or {}
    if row["scores"].get("page_hit") is None:
        return None
    if "ranked" in details:
        ids, read = list(details["ranked"]), list(details["ranked"])
    else:
        stages = details.get("stages") or []
        ids = next((list(st.get("candidates") or []) for st in stages if st.get("stage") == "prior"), [])
        read = [r.get("window") or "" for r in details.get("readings") or []]
    ranked = [p for p in map(_unit_page, ids) if p]
    gold = {(f, int(n)) for f, n in row.get("gold_pages") or []}
    filings = {f for f, _ in gold}
    rank = next((i for i, p in enumerate(ranked, 1) if p in gold), None)
    return {
        "ranked": len(ranked),
        "filing_first": bool(ranked) and ranked[0][0] in filings,
        "filing_top10": any(f in filings for f, _ in ranked[:10]),
        "page_rank": rank,
        "page_read": any(_unit_page(w) in gold for w in read),
        "page_cited": bool(row["scores"]["page_hit"]),
    }


def _funnel_rows(systems: Sequence[str], rows: dict[str, dict[str, dict]], order: Sequence[str]) -> list[list[str]]:
    out = []
    for s in systems:
        fs = [f for f in (evidence_funnel(rows[s][q]) for q in order) if f is not None]
        if not fs:
            continue
        ranks = [f["page_rank"] for f in fs if f["page_rank"] is not None]
        out.append(
            [
                SYSTEM_LABELS.get(s, s),
                str(len(fs)),
                f"{statistics.median(f['ranked'] for f in fs):g}",
                _pct(_mean([float(f["filing_first"]) for f in fs])),
                _pct(_mean([float(f["filing_top10"]) for f in fs])),
                _pct(len(ranks) / len(fs)),
                f"{statistics.median(ranks):g}" if ranks else "—",
                _pct(_mean([float(f["page_read"]) for f in fs])),
                _pct(_mean([float(f["page_cited"]) for f in fs])),
            ]
        )
    return out


def financebench_report(
    run_dir: str | os.PathLike[str], out: str | os.PathLike[str], *, resamples: int = 10_000, seed: int = 42
) -> list[Path]:
    """Write ``report.md`` and a CSV per table into ``out``; returns the files (report.md first)."""
    run_dir, out = Path(run_dir), Path(out)
    manifest, rows = _current_rows(run_dir)
    if not rows:
        raise DataError(f"{run_dir}: no rows yet")
    verdicts = load_verdicts([run_dir])
    systems = [s for s in SYSTEMS if s in rows]
    order = [i for i in manifest["questions"]["ids"] if all(i in rows[s] for s in systems)]
    main_rows, type_rows = [], []
    for s in systems:
        rs = [rows[s][i] for i in order]
        verdict = [correctness(r, verdicts) for r in rs]
        graded = [v for v in verdict if v is not None]
        rule = defaultdict(lambda: [0, 0])
        for r, v in zip(rs, verdict):
            key = r["scores"]["correct_rule"]
            rule[key][1] += 1
            rule[key][0] += bool(v)
        pr = [r["scores"]["page_recall"] for r in rs if r["scores"]["page_recall"] is not None]
        ph = [r["scores"]["page_hit"] for r in rs if r["scores"]["page_hit"] is not None]
        fr = [r["scores"]["filing_recall"] for r in rs if r["scores"]["filing_recall"] is not None]
        main_rows.append(
            [
                SYSTEM_LABELS.get(s, s),
                str(len(rs)),
                _pct(sum(graded) / len(rs) if rs else None),
                " · ".join(f"{k} {c}/{t}" for k, (c, t) in sorted(rule.items())),
                str(len(rs) - len(graded)),
                _pct(_mean(pr)),
                _pct(_mean(ph)),
                _pct(_mean(fr)),
                f"{_mean([len(r['scores']['pages_cited']) for r in rs]) or 0:.1f}",
                f"{_mean([r['prediction']['tokens'] for r in rs]) or 0:,.0f}",
                f"{_mean([r['prediction']['seconds'] for r in rs]) or 0:.1f}",
                str(sum(1 for r in rs if r["prediction"]["error"])),
            ]
        )
        by_type: dict[str, list[bool]] = defaultdict(list)
        for r, v in zip(rs, verdict):
            by_type[r.get("question_type") or "—"].append(bool(v))
        type_rows.append(
            [SYSTEM_LABELS.get(s, s)] + [f"{_pct(_mean(by_type[t]))} ({len(by_type[t])})" for t in sorted(by_type)]
        )
    types = sorted({rows[systems[0]][i].get("question_type") or "—" for i in order}) if systems else []
    settings = manifest.get("snapshot", {})
    main = Table(
        "financebench",
        f"FinanceBench: correctness, evidence pages and cost (n={len(order)})",
        f"Questions of `{settings.get('questions_from')}` over `{settings.get('path')}` ({settings.get('filings')} "
        f"filings, {settings.get('documents')} pages with text); RAG arms: top k = {settings.get('k')} pages, "
        f"each cut at {settings.get('passage_chars')} characters. Correct: numbers within 1 % after unit and scale "
        "normalisation and yes/no by polarity (by rule), else the LLM judge's verdict (`lens bench judge`); "
        "'Not graded' counts rows the rules left to the judge that have no verdict (counted as incorrect). Page "
        "recall: share of the gold (filing, page) pairs among the pages cited (LENS: its evidence; RAG: the pages "
        "in its prompt); page hit: at least one; filing recall: a cited page in the gold filing.",
        [
            "System",
            "n",
            "Correct %",
            "By rule (correct/rows)",
            "Not graded",
            "Page recall %",
            "Page hit %",
            "Filing recall %",
            "Pages cited/q",
            "Tokens/q",
            "Seconds/q",
            "Errors",
        ],
        main_rows,
    )
    by_type_table = Table(
        "financebench_by_type",
        "Correct % by question type (rows)",
        "FinanceBench's question_type field.",
        ["System", *types],
        type_rows,
    )
    funnel = Table(
        "financebench_funnel",
        "Where the gold page is found or lost",
        "Per system, over the same questions: the pages it ranked before reading (LENS: the prior's candidates as "
        "recorded, median count; a RAG arm: its top k), the share of questions whose first ranked page / one of "
        "the first ten is in the gold filing, whose gold page is among the ranked ones (and the median rank of the "
        "first where it is), whose gold page was read (LENS: a reading's window on it; a RAG arm: in its prompt) "
        "and cited. Computed from the rows after the run: no label reaches a system.",
        [
            "System",
            "n",
            "Ranked pages",
            "Filing first %",
            "Filing in top 10 %",
            "Gold page ranked %",
            "Its rank (median)",
            "Gold page read %",
            "Gold page cited %",
        ],
        _funnel_rows(systems, rows, order),
    )
    pairs = []
    for i, a in enumerate(systems):
        for b in systems[i + 1 :]:
            both = [
                q
                for q in order
                if correctness(rows[a][q], verdicts) is not None and correctness(rows[b][q], verdicts) is not None
            ]
            xa = [bool(correctness(rows[a][q], verdicts)) for q in both]
            xb = [bool(correctness(rows[b][q], verdicts)) for q in both]
            t = mcnemar_exact(xa, xb)
            pa = [rows[a][q]["scores"]["page_recall"] for q in order]
            pb = [rows[b][q]["scores"]["page_recall"] for q in order]
            pairs.append(
                [
                    f"{SYSTEM_LABELS.get(a, a)} vs {SYSTEM_LABELS.get(b, b)}",
                    str(len(both)),
                    _pct(_mean([float(x) for x in xa])),
                    _pct(_mean([float(y) for y in xb])),
                    str(t.b),
                    str(t.c),
                    f"{t.p_value:.4f}",
                    _paired_difference(xa, xb, resamples, seed) if both else "—",
                    _paired_difference(pa, pb, resamples, seed),
                ]
            )
    paired = Table(
        "financebench_paired",
        "Paired tests between systems",
        "Exact two-sided McNemar on per-question correctness over the questions both systems have a verdict for "
        "(b = only the first correct, c = only the second), and paired percentile bootstrap intervals "
        f"({resamples:,} resamples, seed {seed}) of the correctness and page-recall differences (pp; page recall "
        "only where both read the filings).",
        ["Pair", "n", "Correct A %", "Correct B %", "b", "c", "p", "ΔCorrect pp [95% CI]", "ΔPage recall pp [95% CI]"],
        pairs,
    )
    out.mkdir(parents=True, exist_ok=True)
    tables = [main, by_type_table, funnel, paired]
    files = [t.write_csv(out) for t in tables]
    md = [
        "# FinanceBench report",
        "",
        f"Run: `{run_dir}` (binding {manifest['binding_hash'][:12]}, config {manifest['config_hash'][:12]}, "
        f"model {manifest.get('model')}); questions answered by every system: {len(order)} of "
        f"{manifest['questions']['planned']}.",
        "",
    ]
    md += [t.markdown() for t in tables]
    report = out / "report.md"
    write_text_atomic(report, "\n".join(md) + "\n")
    return [report, *files]


# --------------------------------------------------------------------------- hand check


def write_handcheck(
    run_dir: str | os.PathLike[str], out: str | os.PathLike[str], *, n: int = 30, seed: int = 42
) -> int:
    """A CSV of ``n`` graded rows (system, question, gold, prediction, the automatic verdict and its rule) with an
    empty ``human`` column for a person to fill with correct/incorrect; rows drawn in a seeded order over the
    rows that have a verdict. Returns the rows written."""
    run_dir = Path(run_dir)
    _, rows = _current_rows(run_dir)
    verdicts = load_verdicts([run_dir])
    graded = [(r, correctness(r, verdicts)) for by_q in rows.values() for r in by_q.values()]
    graded = [(r, v) for r, v in graded if v is not None]
    graded.sort(key=lambda rv: hashlib.sha256(f"{seed}:{rv[0]['system']}:{rv[0]['question_id']}".encode()).hexdigest())
    chosen = graded[:n]
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(HANDCHECK_FIELDS)
        for r, v in chosen:
            rule = r["scores"]["correct_rule"]
            w.writerow(
                [
                    r["system"],
                    r["question_id"],
                    r["question"],
                    r["gold_answer"],
                    r["prediction"]["answer"],
                    "correct" if v else "incorrect",
                    rule,
                    "",
                ]
            )
    return len(chosen)


_TRUE = {"correct", "yes", "y", "1", "true", "right"}
_FALSE = {"incorrect", "no", "n", "0", "false", "wrong"}


def handcheck_agreement(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Agreement of the automatic verdicts with a person's grades in a filled hand-check CSV: rows graded, the
    share agreeing, Cohen's κ, and the agreement per rule. Raises DataError naming the line and field."""
    path = Path(path)
    try:
        fh = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    auto: list[bool] = []
    human: list[bool] = []
    per_rule: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    with fh:
        reader = csv.DictReader(fh)
        missing = [f for f in ("verdict", "human", "rule") if f not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{path}: no column {missing[0]!r} (expected {', '.join(HANDCHECK_FIELDS)})")
        for n, rec in enumerate(reader, 2):
            grade = (rec.get("human") or "").strip().lower()
            if not grade:
                continue
            if grade not in _TRUE | _FALSE:
                raise DataError(f"{path}:{n}: field 'human' is {grade!r}; write correct or incorrect")
            verdict = (rec.get("verdict") or "").strip().lower()
            if verdict not in ("correct", "incorrect"):
                raise DataError(f"{path}:{n}: field 'verdict' is {verdict!r}, not correct or incorrect")
            a, h = verdict == "correct", grade in _TRUE
            auto.append(a)
            human.append(h)
            per_rule[rec.get("rule") or "—"][0] += a == h
            per_rule[rec.get("rule") or "—"][1] += 1
    agree = sum(a == h for a, h in zip(auto, human))
    return {
        "graded": len(auto),
        "agree": agree,
        "agreement": agree / len(auto) if auto else None,
        "kappa": cohen_kappa(auto, human),
        "auto_correct": sum(auto),
        "human_correct": sum(human),
        "per_rule": {k: {"agree": a, "graded": t} for k, (a, t) in sorted(per_rule.items())},
    }
