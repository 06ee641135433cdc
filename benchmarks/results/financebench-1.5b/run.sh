#!/usr/bin/env bash
# FinanceBench (issue 58): the 49 shared questions over all 28 filings at once, LENS, BM25-RAG and Hybrid-RAG over
# page units, Closed-Book (and PaperQA2 with SYSTEMS=paperqa, issue 61, once its extra is installed), embedded
# Qwen2.5-Coder-1.5B served at $BASE, deep preset, response cache off, concurrency 1, the code of one frozen
# commit; chunks of 10 questions (every arm of a chunk before the next chunk), the judge after each chunk, rows
# committed per chunk. Resumable: rerun. Then `lens bench financebench-report` and the hand-check sheet.
# FinanceBench's questions and answers are never copied into the repo (CC BY-NC): the run is made in
# $WORK/run (default /tmp/lens-financebench/run), and run/ here keeps its rows without them
# (benchmarks/financebench_rows.py redact); on a new machine the work run is restored from run/ and the data.
#   COMMIT=<sha> BASE=http://127.0.0.1:8090/v1 [SYSTEMS=lens,bm25,hybrid,closed] benchmarks/results/financebench-1.5b/run.sh
set -u
cd "$(dirname "$0")/../../.."
COMMIT=${COMMIT:?set COMMIT to the frozen commit} BASE=${BASE:?set BASE to the endpoint}
SYSTEMS=${SYSTEMS:-lens,bm25,hybrid,closed}
LENS=${LENS:-.venv/bin/lens}  # the PaperQA2 arm runs from an environment of its own (../paperqa/run.sh)
source benchmarks/frozen.sh "$COMMIT" || exit 1
F=$PWD/../shared/data/financebench R=$PWD/benchmarks/results/financebench-1.5b
W=${WORK:-/tmp/lens-financebench}
RUN=$W/run
source benchmarks/chunks.sh
rows() { .venv/bin/python benchmarks/financebench_rows.py "$@" --data $F; }  # the frozen harness reads the data
if [ ! -f $RUN/rows.jsonl ] && [ -f $R/run/rows.jsonl ]; then rows restore $R/run $RUN || exit 1; fi
for k in 10 20 30 40 49; do
  $LENS bench financebench --data $F --out $RUN --systems $SYSTEMS --limit $k --no-progress \
    --index-dir $W/indexes --base-url $BASE --model qwen2.5-coder-1.5b-instruct \
    --set llm.cache=false --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300
  echo "rc=$? through $k"
  $LENS bench judge $RUN --base-url $BASE --model qwen2.5-coder-1.5b-instruct --set llm.cache=false \
    > /dev/null; echo "judge rc=$?"
  rows redact $RUN $R/run || exit 1
  commit "FinanceBench: $SYSTEMS through question $k ($(count run) rows)"
done
$LENS bench financebench-report $RUN --out $R/report > /dev/null && commit "FinanceBench: report"
