#!/usr/bin/env bash
# PaperQA2 beside LENS (issue 61): the paperqa arm added to the runs LENS already has, at their frozen commit and
# configuration, on the same model server — so every pair is one binding, one commit, one model:
#   FinanceBench: the arm joins benchmarks/results/financebench-1.5b/run (LENS, BM25, Hybrid, Closed-Book there)
#   G125 / D125:  its own folder g125-d125 over the text D125 of the format-invariance runs (LENS full arm:
#                 ../format-invariance/full-text), the first $LIMIT questions (default 50)
# The paperqa extra moves openai from 3.x to 2.x, so the arm runs from an environment of its own: a copy of .venv
# at $PQ_VENV (default /tmp/lens-paperqa-venv, made once) with the commit's extra installed there; .venv and the
# runs using it are untouched. The model server answers one request at a time: a run beside another splits its
# throughput (and its seconds per question). Rerunning resumes; chunks of 10.
#   COMMIT=<sha> BASE=http://127.0.0.1:8090/v1 [LIMIT=50] benchmarks/results/paperqa/run.sh [g125|financebench|both]
set -u
cd "$(dirname "$0")/../../.."
COMMIT=${COMMIT:?set COMMIT to the frozen commit of the runs it joins} BASE=${BASE:?set BASE to the endpoint}
WHAT=${1:-both} LIMIT=${LIMIT:-50}
source benchmarks/frozen.sh "$COMMIT" || exit 1
PQ_VENV=${PQ_VENV:-/tmp/lens-paperqa-venv}
if [ ! -x "$PQ_VENV/bin/lens" ]; then  # a copy of .venv (lens installed editable from this checkout); scripts re-pointed
  rm -rf "$PQ_VENV" && cp -a .venv "$PQ_VENV" || exit 1
  for f in "$PQ_VENV"/bin/*; do  # the console scripts (not the python links) start the copy's python
    [ -L "$f" ] || [ ! -f "$f" ] || [ "$(head -c2 "$f")" != "#!" ] || sed -i "1s|^#!.*/python[0-9.]*$|#!$PQ_VENV/bin/python|" "$f"
  done
fi
git show "$COMMIT:pyproject.toml" | .venv/bin/python -c '
import sys, tomllib
print("\n".join(tomllib.loads(sys.stdin.read())["project"]["optional-dependencies"]["paperqa"]))
' > "$FROZEN_SITE.paperqa.txt" && "$PQ_VENV/bin/python" -m pip install -q -r "$FROZEN_SITE.paperqa.txt" || exit 1
R=$PWD/benchmarks/results/paperqa Q=$PWD/../shared/data/hotpotqa/hotpot_dev_distractor.json
W=${WORK:-/tmp/lens-fi}  # the format-invariance work folder: its text D125 and its samples
source benchmarks/chunks.sh
if [ "$WHAT" != financebench ]; then
  for k in $(seq 10 10 $((LIMIT - 1))) "$LIMIT"; do
    $PQ_VENV/bin/lens bench run --snapshot $W/text/D125 --sample $W/samples --stage 125 --questions $Q --systems paperqa \
      --limit $k --concurrency 1 --no-progress --base-url $BASE --model qwen2.5-coder-1.5b-instruct \
      --set llm.cache=false --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300 --out $R/g125-d125
    echo "rc=$? G125 through $k"
    commit "PaperQA2 on G125/D125 through question $k"
  done
fi
if [ "$WHAT" != g125 ]; then
  LENS=$PQ_VENV/bin/lens SYSTEMS=paperqa COMMIT=$COMMIT BASE=$BASE benchmarks/results/financebench-1.5b/run.sh
fi
