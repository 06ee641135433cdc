"""``lens bench …``: argparse registration only (handlers live in their own modules, imported when run).

Each subcommand has one ``_add_<name>`` function below, called from ``add_bench_parser``; a new subcommand is
one more function and one more line there.
"""

from __future__ import annotations

import argparse
from typing import Callable

from harness.extra import add_group_parser
from harness.options import add_options
from lens.parts import add_config_args

__all__ = ["add_bench_parser"]

Handler = Callable[[argparse.ArgumentParser, str], None]


_HELP = "the dynamic raw-corpus benchmark (HotpotQA G_n / D_n)"


def add_bench_parser(sub: argparse._SubParsersAction, handler: Handler) -> None:
    b_sub = add_group_parser(sub, handler, "bench", _HELP)
    if b_sub is None:
        return
    _add_sample(b_sub, handler)
    _add_snapshot(b_sub, handler)
    _add_fullwiki(b_sub, handler)
    _add_stream(b_sub, handler)
    _add_judge(b_sub, handler)
    _add_score(b_sub, handler)
    _add_run(b_sub, handler)
    _add_financebench(b_sub, handler)
    _add_lifecycle(b_sub, handler)
    _add_report(b_sub, handler)
    _add_compare(b_sub, handler)
    _add_simulate(b_sub, handler)


def _add_sample(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "sample",
        help="draw the frozen stratified nested samples G_n (writes sample.json and G<n>.txt)",
        description="Stratify by type x supporting-fact count, draw one frozen stratum-balanced order "
        "(seeded), cut G_n as its prefixes; print the sample and order hashes and each prefix's maximum "
        "deviation from the population's stratum shares.",
    )
    q.add_argument("--questions", required=True, metavar="FILE", help="official HotpotQA JSON (the population)")
    q.add_argument("--out", required=True, metavar="DIR", help="folder for sample.json and G<n>.txt")
    q.add_argument("--seed", type=int, default=42, help="sampling seed (default 42)")
    add_options(q, "--sizes", "--sf-cap", "--json")
    handler(q, "harness.bench.commands:sample")


def _add_snapshot(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "snapshot",
        help="build (or verify) the nested raw snapshots D_n: one file per article, manifests, checksums",
        description="Build D_n (gold + context distractors of G_n + background at 3:1) as one extensionless "
        "file per article (or one PDF or .docx per article with --as) under DIR/D<n>/ with DIR/D<n>.manifest.json. "
        "Existing stages are verified and kept; growth is append-only. With only --out and --verify, verify an "
        "existing build.",
    )
    q.add_argument("--questions", metavar="FILE", help="official HotpotQA JSON (the population)")
    add_options(q, "--articles")
    q.add_argument("--out", required=True, metavar="DIR", help="output folder (D<n>/ and manifests)")
    q.add_argument("--seed", type=int, default=42, help="sampling and background seed (default 42)")
    q.add_argument("--background-ratio", type=float, default=3.0, help="background : linked (default 3)")
    q.add_argument("--shards", action="store_true", help="also write the articles as .bz2 JSONL shards")
    q.add_argument(
        "--as",
        dest="file_format",
        choices=("text", "pdf", "docx"),
        default="text",
        help="each article as an extensionless text file (default), a PDF (needs the bench extra) or a .docx",
    )
    q.add_argument("--verify", action="store_true", help="re-hash every file against the manifests")
    add_options(q, "--sizes", "--sf-cap", "--shard-size", "--json")
    handler(q, "harness.bench.commands:snapshot")


def _add_fullwiki(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "fullwiki",
        help="prepare the open-domain setting: a frozen fullwiki sample and the pool as .bz2 shards",
        description="Draw a frozen seeded sample of fullwiki questions (stratified like G_n) from the questions "
        "not excluded, write the whole article pool as .bz2 JSONL shards in the official abstracts layout, and a "
        "manifest with hashes and, per sampled question, whether its gold articles are in the pool. A rerun "
        "over the same inputs verifies and keeps the folder.",
    )
    q.add_argument("--questions", required=True, metavar="FILE", help="official HotpotQA fullwiki JSON")
    add_options(q, "--articles", required=("--articles",))
    q.add_argument("--out", required=True, metavar="DIR", help="output folder (sample/, pool/, manifest)")
    q.add_argument("--size", type=int, default=150, help="questions in the sample (default 150)")
    q.add_argument("--seed", type=int, default=42, help="sampling seed (default 42)")
    add_options(q, "--sf-cap", "--exclude", "--shard-size", "--json")
    handler(q, "harness.bench.commands:fullwiki")


def _add_stream(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "stream",
        help="LENS over a stream of related requests on one folder, with or without its warm-reuse memory",
        description="Write a BEIR-layout workload's assets as one raw file each (--folder, verified if it "
        "exists), order its requests (random, semantic bursts or natural), and ask them in order with the "
        "memory in RUN_DIR/memory (or --no-memory), one resumable row per position in RUN_DIR/rows.jsonl.",
    )
    q.add_argument("--workload", required=True, metavar="DIR", help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/")
    q.add_argument("--split", help="qrels split (default: the only one)")
    q.add_argument("--folder", required=True, metavar="DIR", help="the raw folder the agent reads (written once)")
    q.add_argument("--out", required=True, metavar="RUN_DIR", help="run folder (created; resumed if it exists)")
    q.add_argument("--order", default="random", choices=("random", "semantic", "natural"), help="stream order")
    q.add_argument("--seed", type=int, default=0, help="stream seed (random, semantic; default 0)")
    q.add_argument("--no-memory", action="store_true", help="ask every request without the warm-reuse memory")
    q.add_argument("--limit", type=int, metavar="N", help="only the first N positions of the stream")
    add_options(q, "--json")
    add_config_args(q)
    handler(q, "harness.bench.commands:stream")
    q = b_sub.add_parser(
        "stream-compare",
        help="what the memory buys on one stream: a run with memory vs the same run without (paired)",
        description="Per request of the same stream: oracle calls, tokens, seconds, cited-asset recall and prior "
        "recall with and without the memory, with a paired bootstrap interval of the difference (PIT only).",
    )
    q.add_argument("with_memory", metavar="RUN_WITH_MEMORY")
    q.add_argument("without", metavar="RUN_WITHOUT")
    q.add_argument("--out", metavar="FILE", help="write the comparison (JSON)")
    add_options(q, "--json")
    handler(q, "harness.bench.commands:stream_compare")


def _add_judge(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "judge",
        help="JudgeAcc: an LLM judge's verdict on every answer of run folders (auxiliary; resumable, cached)",
        description="Ask a judge, per row of each run folder, whether the prediction means the same as the gold "
        "answer; verdicts (with the raw reply) go to RUN_DIR/judge.jsonl, resumable. The judge's LLM is set "
        "with this command's own configuration flags (default: the embedded model); its calls are never in a "
        "system's budget. lens bench report shows JudgeAcc beside EM with Cohen's kappa.",
    )
    q.add_argument("runs", nargs="+", metavar="RUN_DIR")
    q.add_argument("--limit", type=int, metavar="N", help="only the first N rows of each run (by position)")
    q.add_argument("--json", action="store_true")
    add_config_args(q)
    handler(q, "harness.bench.commands:judge")


def _add_score(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "score",
        help="official HotpotQA EM/F1, supporting-fact and joint scores of a prediction file",
        description='Score a prediction file in the official layout {"answer": {id: text}, "sp": {id: '
        "[[title, sent_id], ...]}} against gold questions. Missing predictions score 0 and are listed.",
    )
    q.add_argument("--gold", required=True, metavar="FILE", help="official HotpotQA JSON with answers")
    q.add_argument("--pred", required=True, metavar="FILE", help="prediction JSON (official layout)")
    q.add_argument("--json", action="store_true", help="print the scores as JSON (fractions in [0, 1])")
    handler(q, "harness.bench.commands:score")


def _add_run(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "run",
        help="answer the questions of a snapshot with the five systems; one JSON row per (system, question)",
        description="Run the systems on the snapshot's questions (its manifest's G_n in frozen order, or --sample/"
        "--stage), appending one scored row per (system, question) to RUN_DIR/rows.jsonl as it finishes. "
        "Rerunning the same command resumes (no row twice); a RUN_DIR made under other bindings or another "
        "configuration is refused. --stale-from runs the stale-index arm: the questions new in --snapshot, "
        "BM25/Hybrid answering from indexes built on the --stale-from snapshot.",
    )
    add_options(q, "--snapshot", "--questions", "--systems", required=("--snapshot", "--questions"))
    q.add_argument("--out", required=True, metavar="RUN_DIR", help="run folder (created; resumed if it exists)")
    add_options(q, "--sample", "--stage")
    q.add_argument("--limit", type=int, metavar="N", help="only the first N questions of the frozen order")
    q.add_argument(
        "--concurrency", type=int, default=5, help="questions in flight at once (default 5); with ray: worker actors"
    )
    q.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local threads (default) or a Ray cluster (the scale extra); the driver alone writes rows either way",
    )
    q.add_argument(
        "--ray-address",
        metavar="auto|HOST:PORT",
        help="with --executor ray: the cluster to join (default: start a local one)",
    )
    q.add_argument("--stale-from", metavar="DIR", help="stale arm: indexes built on this earlier snapshot")
    q.add_argument("--index-dir", metavar="DIR", help="where persisted indexes live (default RUN_DIR/indexes)")
    q.add_argument("--k", type=int, default=5, help="RAG: documents in the answer prompt (default 5)")
    q.add_argument("--react-steps", type=int, default=7, help="ReAct step cap before the forced finish (default 7)")
    add_options(q, "--dense-model", "--paperqa-embedding")
    q.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_options(q, "--json")
    add_config_args(q)
    handler(q, "harness.bench.commands:run")


def _add_financebench(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "financebench",
        help="questions over a folder of PDF filings with page-level gold (FinanceBench): LENS, RAG over pages, closed",
        description="Answer FinanceBench's questions over all its filings at once (LENS; BM25-RAG and Hybrid-RAG over "
        "page units, the top k pages into one answer call; Closed-Book), appending one scored row per (system, "
        "question) to RUN_DIR/rows.jsonl as it finishes: evidence page recall, filing recall, correctness by rule "
        "(numbers within 1 %, yes/no) or left to `lens bench judge`, tokens, seconds. Rerunning resumes; a RUN_DIR "
        "made under other bindings or another configuration is refused.",
    )
    q.add_argument("--data", required=True, metavar="DIR", help="FinanceBench folder: questions.jsonl and pdfs/")
    q.add_argument("--out", required=True, metavar="RUN_DIR", help="run folder (created; resumed if it exists)")
    q.add_argument("--systems", default="lens,bm25,hybrid,closed", help="comma-separated (default: all four)")
    q.add_argument("--limit", type=int, metavar="N", help="only the first N questions of the file")
    q.add_argument(
        "--k",
        type=int,
        help="RAG: pages in the answer prompt (default: loop.evidence_docs, the pages LENS keeps in E*)",
    )
    q.add_argument(
        "--passage-chars",
        type=int,
        metavar="N",
        help="RAG: most characters of one page in the prompt (default: 3 x loop.window_token_cap)",
    )
    q.add_argument("--concurrency", type=int, default=1, help="questions in flight at once (default 1)")
    q.add_argument("--index-dir", metavar="DIR", help="where persisted indexes live (default RUN_DIR/indexes)")
    add_options(q, "--dense-model")
    q.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_options(q, "--json")
    add_config_args(q)
    handler(q, "harness.bench.commands:financebench")
    q = b_sub.add_parser(
        "financebench-report",
        help="the FinanceBench table (markdown + CSV) with paired tests, from a run folder",
        description="Correctness (rule, else the judge's verdict from lens bench judge), evidence page recall and hit, "
        "filing recall, pages cited, tokens and seconds per system; correctness by question type; exact McNemar on "
        "correctness and paired bootstrap intervals of the correctness and page-recall differences.",
    )
    q.add_argument("run_dir", metavar="RUN_DIR")
    q.add_argument("--out", metavar="DIR", help="report folder (default RUN_DIR/report)")
    q.add_argument("--resamples", type=int, default=10000, help="bootstrap resamples (default 10000)")
    q.add_argument("--seed", type=int, default=42, help="bootstrap seed (default 42)")
    handler(q, "harness.bench.commands:financebench_report_cmd")
    q = b_sub.add_parser(
        "financebench-handcheck",
        help="a CSV of graded answers for a person to check, or the agreement of a checked one",
        description="With RUN_DIR and --out: write N rows (question, gold, prediction, the automatic verdict and its "
        "rule) drawn in a seeded order, with an empty human column. With --graded: the share of filled rows where the "
        "human grade agrees with the automatic verdict, and Cohen's kappa.",
    )
    q.add_argument("run_dir", nargs="?", metavar="RUN_DIR")
    q.add_argument("--out", metavar="FILE", help="the hand-check CSV to write")
    q.add_argument("--n", type=int, default=30, help="rows to draw (default 30)")
    q.add_argument("--seed", type=int, default=42, help="draw seed (default 42)")
    q.add_argument("--graded", metavar="FILE", help="a filled hand-check CSV: print the agreement")
    add_options(q, "--json")
    handler(q, "harness.bench.commands:financebench_handcheck")


def _add_lifecycle(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "lifecycle",
        help="measure index build time, bytes on disk, peak memory and query-readiness after growth per system",
        description="For every stage D_n (smallest first): build the BM25 and dense indexes (each in a fresh child "
        "process, so peak memory is the build's own), time ReAct's in-memory warm-up and LENS's folder scan, and "
        "check what each system can reach after the corpus grows from the previous stage.",
    )
    q.add_argument(
        "--snapshots", required=True, metavar="DIR", help="folder of D<n>/ stages and manifests, or one stage"
    )
    q.add_argument("--index-dir", required=True, metavar="DIR", help="where the indexes are written")
    add_options(q, "--systems", "--dense-model", "--paperqa-embedding")
    q.add_argument("--rebuild", action="store_true", help="rebuild indexes that already exist (re-measure)")
    q.add_argument("--in-process", action="store_true", help="build in this process (faster; memory less clean)")
    q.add_argument(
        "--out", metavar="FILE", help="write the measurements as JSON (input of lens bench report --lifecycle)"
    )
    add_options(q, "--json")
    handler(q, "harness.bench.commands:lifecycle")


def _add_report(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "report",
        help="markdown + CSV tables shaped like the paper's Tables 1-6 and PNG plots from run folders",
        description="Group the runs' rows by binding and configuration and write report.md, one CSV per table and "
        "the plots. A table only holds rows of one binding; tables that cannot be bound are listed as refused and "
        "the command exits 1.",
    )
    q.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    q.add_argument(
        "--out", metavar="DIR", help="report folder (default: RUN_DIR/report for one run; required for more)"
    )
    q.add_argument("--lifecycle", action="append", default=[], metavar="FILE", help="lens bench lifecycle --out JSON")
    q.add_argument("--resamples", type=int, default=10000, help="bootstrap resamples (default 10000)")
    q.add_argument("--seed", type=int, default=42, help="bootstrap seed (default 42)")
    q.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    handler(q, "harness.bench.commands:report")


def _add_compare(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "compare",
        help="the same questions over two corpora (e.g. D125 as text and as PDF), paired question by question",
        description="Pair two runs of lens bench run that asked the same questions in the same order with the same "
        "configuration and code over different corpora (format invariance: --as pdf against text): EM and Ev.Rec "
        "of each, their differences with paired bootstrap intervals, exact McNemar on EM, cost, and whether both "
        "differences lie within --margin pp; each question whose answers differ, and whether its evidence was the "
        "same text in both. Runs that differ in anything else are refused, naming the difference.",
    )
    q.add_argument("run_a", metavar="RUN_A", help="the reference run (e.g. the text snapshot)")
    q.add_argument("run_b", metavar="RUN_B", help="the run compared with it (e.g. the PDF snapshot)")
    q.add_argument(
        "--out", metavar="DIR", help="where compare.md, compare.csv and differences.csv go (default RUN_B/compare)"
    )
    q.add_argument("--margin", type=float, default=1.5, help="pp within which a difference counts as none (1.5)")
    q.add_argument("--resamples", type=int, default=10000, help="bootstrap resamples (default 10000)")
    q.add_argument("--seed", type=int, default=42, help="bootstrap seed (default 42)")
    handler(q, "harness.bench.commands:compare")


def _add_simulate(b_sub: argparse._SubParsersAction, handler: Handler) -> None:
    q = b_sub.add_parser(
        "simulate",
        help="oracle-strength simulation: the real loop with a supporting-fact oracle at chosen (tpr, fpr); uses gold",
        description="Run the LENS loop (scan, prior, propose-observe-update, GLR stop, consolidation; no LLM, no "
        "synthesis) over a snapshot with an oracle driven by the supporting facts at each (tpr, fpr) point. Every "
        "row is tagged uses_gold=true; it never enters a headline table.",
    )
    add_options(
        q,
        "--snapshot",
        "--questions",
        "--sample",
        "--stage",
        required=("--snapshot", "--questions", "--sample", "--stage"),
    )
    q.add_argument("--points", default=None, help="tpr:fpr pairs, comma-separated (default: 0.37:0.22 ... 0.95:0.02)")
    q.add_argument("--seed", type=int, default=0, help="seed of the oracle's draws (default 0)")
    q.add_argument(
        "--out", required=True, metavar="DIR", help="folder for rows.jsonl (resumed), summary.json, table.md"
    )
    add_config_args(q)
    handler(q, "harness.bench.commands:simulate")
