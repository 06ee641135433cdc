#!/usr/bin/env bash
# FinanceBench questions 22-49 for the PaperQA2 arm, in a run folder of their own (issue 61). Why not in
# ../financebench-1.5b/run with questions 1-21: the arm binds its rows to its index by the sha256 of PaperQA's
# pickled collection, and those bytes differ from build to build (PaperQA's vector store keeps Python hash()
# values, salted per process). The first build's pickle was lost with /tmp on a new machine; the rebuilt index
# (same 28 filings and corpus checksum, same 2,300 chunks, same 27,323,046 bytes, same settings) has another hash,
# and the runner refuses to mix rows of two indexes ("rows made with other parameters"). So questions 22-49 run
# here, from a data folder holding only those questions (questions.jsonl lines 22-49; the filings and documents
# linked), with the same frozen commit, model, configuration and caps; financebench_paired.py pairs them with
# LENS's rows by question id. Rows kept redacted in ../financebench-1.5b/run-paperqa-22-49 (no FinanceBench text).
#   COMMIT=5f3d1ea BASE=http://127.0.0.1:8090/v1 benchmarks/results/paperqa/run-financebench-22-49.sh
set -u
cd "$(dirname "$0")/../../.."
COMMIT=${COMMIT:?set COMMIT to the frozen commit} BASE=${BASE:?set BASE to the endpoint}
source benchmarks/frozen.sh "$COMMIT" || exit 1
PQ_VENV=${PQ_VENV:-/tmp/lens-paperqa-venv}  # made by run.sh (a copy of .venv with the paperqa extra)
[ -x "$PQ_VENV/bin/lens" ] || { echo "run benchmarks/results/paperqa/run.sh once first (it makes $PQ_VENV)"; exit 1; }
F=$PWD/../shared/data/financebench R=$PWD/benchmarks/results/financebench-1.5b
W=${WORK:-/tmp/lens-financebench}
RUN=$W/run-paperqa-22-49 DATA=$W/data-22-49
source benchmarks/chunks.sh
rows() { .venv/bin/python benchmarks/financebench_rows.py "$@" --data $F; }
mkdir -p $DATA && tail -n +22 $F/questions.jsonl > $DATA/questions.jsonl || exit 1
for f in $F/*; do [ "$(basename $f)" = questions.jsonl ] || ln -sfn $f $DATA/$(basename $f); done
if [ ! -f $RUN/rows.jsonl ] && [ -f $R/run-paperqa-22-49/rows.jsonl ]; then rows restore $R/run-paperqa-22-49 $RUN || exit 1; fi
for k in 10 20 28; do
  $PQ_VENV/bin/lens bench financebench --data $DATA --out $RUN --systems paperqa --limit $k --no-progress \
    --index-dir $W/indexes --base-url $BASE --model qwen2.5-coder-1.5b-instruct \
    --set llm.cache=false --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300
  echo "rc=$? through $k"
  rows redact $RUN $R/run-paperqa-22-49 || exit 1
  commit "FinanceBench: PaperQA2, questions 22-49, through $k ($(count run-paperqa-22-49) rows)"
done
