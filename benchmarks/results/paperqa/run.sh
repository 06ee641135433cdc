#!/usr/bin/env bash
# PaperQA2 beside LENS (issue 61): G125 over D125 (the first $LIMIT questions, default 50) and FinanceBench (49),
# embedded 1.5B for every arm, cache off, one frozen commit. Usage: benchmarks/results/paperqa/run.sh COMMIT
# [g125|financebench|both]. Rerunning resumes (finished rows are skipped); chunks of 10 so a stop loses little.
# FinanceBench needs `lens bench financebench` (work-58b) with "paperqa" in its SYSTEMS (see README.md).
set -u
cd "$(dirname "$0")/../../.."
COMMIT=${1:?usage: run.sh COMMIT [g125|financebench|both]} WHAT=${2:-both} LIMIT=${LIMIT:-50}
source benchmarks/frozen.sh "$COMMIT" || exit 1
# frozen.sh installs the local, bench and dense extras; the arm also needs the commit's paperqa extra
git show "$COMMIT:pyproject.toml" | .venv/bin/python -c '
import sys, tomllib
print("\n".join(tomllib.loads(sys.stdin.read())["project"]["optional-dependencies"]["paperqa"]))
' > "$FROZEN_SITE.paperqa.txt" && .venv/bin/pip install -q -r "$FROZEN_SITE.paperqa.txt" || exit 1
R=$PWD/benchmarks/results/paperqa
SNAP=${SNAP:-/tmp/snap/D125} Q=$PWD/../shared/data/hotpotqa/hotpot_dev_distractor.json FB=$PWD/../shared/data/financebench
SETS="--set llm.cache=false --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300"
if [ "$WHAT" != financebench ]; then
  for k in $(seq 10 10 $((LIMIT - 1))) "$LIMIT"; do
    echo "== $(date -u +%T) G125/D125 through question $k"
    .venv/bin/lens bench run --snapshot "$SNAP" --questions "$Q" --systems lens,react,bm25,hybrid,closed,paperqa \
      --limit "$k" --concurrency 1 --index-dir /tmp/lens-bench/indexes --no-progress $SETS --out "$R/g125-d125-1.5b"
    echo "rc=$?"
  done
fi
if [ "$WHAT" != g125 ]; then
  for k in $(seq 10 10 40) 49; do
    echo "== $(date -u +%T) FinanceBench through question $k"
    .venv/bin/lens bench financebench --data "$FB" --systems lens,bm25,hybrid,closed,paperqa --limit "$k" \
      --concurrency 1 --index-dir /tmp/lens-bench/indexes --no-progress $SETS --out "$R/financebench-1.5b"
    echo "rc=$?"
  done
fi
echo "== $(date -u +%T) finished"
