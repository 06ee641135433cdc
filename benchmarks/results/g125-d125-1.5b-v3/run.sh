#!/usr/bin/env bash
# G125/D125, embedded 1.5B, code of 18e1e13 (frozen by benchmarks/frozen.sh): full LENS and its no-exploration ablation.
set -u
cd "$(dirname "$0")/../../.."
source benchmarks/frozen.sh 18e1e13 || exit 1
Q=$PWD/../shared/data/hotpotqa/hotpot_dev_distractor.json R=$PWD/benchmarks/results/g125-d125-1.5b-v3
COMMON="--snapshot /tmp/snap/D125 --questions $Q --concurrency 1 --index-dir /tmp/lens-bench/indexes --no-progress \
  --set llm.cache=false --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300"
commit() {
  for i in 1 2 3 4 5; do
    git add "$R" && git commit -q -m "$1" -- "$R" && return 0
    sleep 5
  done
}
count() { [ -f "$R/$1/rows.jsonl" ] && wc -l < "$R/$1/rows.jsonl" || echo 0; }
for k in $(seq 10 10 120) 125; do
  echo "== $(date -u +%T) full limit $k"
  .venv/bin/lens bench run $COMMON --systems lens --limit $k --out $R/full
  echo "rc=$?"
  commit "G125/D125 v3 run: full/ through question $k ($(count full) rows in full/, $(count no-exploration) in no-exploration/)"
  echo "== $(date -u +%T) ablation limit $k"
  .venv/bin/lens bench run $COMMON --systems lens --set ablation.no_exploration=true --limit $k --out $R/no-exploration
  echo "rc=$?"
  commit "G125/D125 v3 run: no-exploration/ through question $k ($(count full) rows in full/, $(count no-exploration) in no-exploration/)"
done
echo "== $(date -u +%T) finished"
