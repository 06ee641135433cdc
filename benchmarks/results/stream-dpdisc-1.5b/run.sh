#!/usr/bin/env bash
# Issue 14: LENS as a stateful system over the DPDisc TAT-QA dev stream (semantic bursts, seed 0), embedded 1.5B
# (deep preset, cache off), with the warm-reuse memory (whole stream first: the PIT audit reads it), then without,
# in chunks of 25 positions. Code of 64e1ac9 (memory admitted by calibrated posterior, read or not; filed under
# requirement + question; prior candidates recorded 100 deep), installed frozen by benchmarks/frozen.sh (made
# if missing). Resumable: rerun it; each chunk's rows are committed as they complete.
set -u
cd "$(dirname "$0")/../../.."
source benchmarks/frozen.sh 64e1ac9 || exit 1
W=$PWD/../shared/data/dpdisc_tatqa_dev R=$PWD/benchmarks/results/stream-dpdisc-1.5b
COMMON="--workload $W --folder /tmp/dpdisc-assets --order semantic --seed 0 --set llm.cache=false"
commit() {
  for i in 1 2 3 4 5; do
    git add "$R" && git commit -q -m "$1" -- "$R" && return 0
    sleep 5
  done
}
count() { [ -f "$R/$1/rows.jsonl" ] && wc -l < "$R/$1/rows.jsonl" || echo 0; }
# the memory arm first (the PIT audit needs its whole stream), then the no-memory arm
for arm in memory no-memory; do
  flag=""; [ "$arm" = no-memory ] && flag="--no-memory"
  for k in 25 50 75 100 125 147; do
    [ "$(count $arm)" -ge "$k" ] && continue  # chunk already complete
    echo "== $(date -u +%T) $arm limit $k"
    .venv/bin/lens bench stream $COMMON $flag --limit $k --out $R/$arm
    echo "rc=$?"
    commit "DPDisc stream (1.5B): $arm/ through position $k ($(count memory) rows in memory/, $(count no-memory) in no-memory/)"
  done
done
echo "== $(date -u +%T) finished"
