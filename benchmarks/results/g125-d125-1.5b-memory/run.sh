#!/usr/bin/env bash
# Issue 14's low-overlap control: LENS on G125 over D125 (embedded 1.5B, deep preset, cache off) with the code of
# 64e1ac9, whose rows record the memory entries the new admission rule writes (each requirement's favoured window
# at calibrated posterior >= 0.1, read or not; filed under requirement + question) — v3's rows (18e1e13) recorded
# none. The bench arm is cold (it never reads memory); the PIT audit replays the entries under its views.
# Frozen install by benchmarks/frozen.sh (made if missing). Resumable: rerun it.
set -u
cd "$(dirname "$0")/../../.."
source benchmarks/frozen.sh 64e1ac9 || exit 1
Q=$PWD/../shared/data/hotpotqa/hotpot_dev_distractor.json R=$PWD/benchmarks/results/g125-d125-1.5b-memory
COMMON="--snapshot /tmp/snap/D125 --questions $Q --concurrency 1 --index-dir /tmp/lens-bench/indexes --no-progress \
  --set llm.cache=false --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300"
commit() {
  for i in 1 2 3 4 5; do
    git add "$R" && git commit -q -m "$1" -- "$R" && return 0
    sleep 5
  done
}
for k in 25 50 75 100 125; do
  echo "== $(date -u +%T) lens limit $k"
  .venv/bin/lens bench run $COMMON --systems lens --limit $k --out $R/full
  echo "rc=$?"
  commit "G125/D125 memory control (64e1ac9): lens through question $k"
done
echo "== $(date -u +%T) audit"
unset PYTHONPATH
[ -d "$R/audit-memory" ] || .venv/bin/lens audit run --config audit-lens --lens-run $R/full --snapshot /tmp/snap/D125 \
  --questions $Q --out $R/audit-memory -q
commit "G125/D125 memory control: PIT audit of the LENS memory (cheap mode)"
echo "== $(date -u +%T) finished"
