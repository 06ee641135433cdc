#!/usr/bin/env bash
# Issue 14: LENS as a stateful system over the DPDisc TAT-QA dev stream (semantic bursts, seed 0), embedded 0.5B
# (fast preset: its calibrated readings still reach certification range, so it reads and its memory can fill),
# with and without the warm-reuse memory. Code of 1db7ece, frozen by benchmarks/frozen.sh. Interleaved chunks of 25.
set -u
cd "$(dirname "$0")/../../.."
source benchmarks/frozen.sh 1db7ece || exit 1
W=$PWD/../shared/data/dpdisc_tatqa_dev R=$PWD/benchmarks/results/stream-dpdisc-0.5b-probe
COMMON="--workload $W --folder /tmp/dpdisc-assets --order semantic --seed 0 --preset fast --set llm.cache=false"
commit() {
  for i in 1 2 3 4 5; do
    git add "$R" && git commit -q -m "$1" -- "$R" && return 0
    sleep 5
  done
}
count() { [ -f "$R/$1/rows.jsonl" ] && wc -l < "$R/$1/rows.jsonl" || echo 0; }
for k in 25 50 75 100 125 147; do
  echo "== $(date -u +%T) memory limit $k"
  .venv/bin/lens bench stream $COMMON --limit $k --out $R/memory
  echo "rc=$?"
  commit "DPDisc stream (0.5B): memory/ through position $k ($(count memory) rows in memory/, $(count no-memory) in no-memory/)"
  echo "== $(date -u +%T) no-memory limit $k"
  .venv/bin/lens bench stream $COMMON --no-memory --limit $k --out $R/no-memory
  echo "rc=$?"
  commit "DPDisc stream (0.5B): no-memory/ through position $k ($(count memory) rows in memory/, $(count no-memory) in no-memory/)"
done
echo "== $(date -u +%T) finished"
