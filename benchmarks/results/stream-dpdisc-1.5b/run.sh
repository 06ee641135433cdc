#!/usr/bin/env bash
# Issue 14: LENS as a stateful system over the DPDisc TAT-QA dev stream (semantic bursts, seed 0), embedded 1.5B
# (deep preset, cache off), with and without the warm-reuse memory, interleaved in chunks of 25 positions so a
# partial run stays paired. Code of 64e1ac9 (memory admitted by calibrated posterior, read or not; filed under
# requirement + question; prior candidates recorded 100 deep), installed frozen in /tmp/frozen7-site (made here
# if missing). Resumable: rerun it; each chunk's rows are committed as they complete.
set -u
cd /work/main
FROZEN=64e1ac9 SITE=/tmp/frozen7-site
if [ ! -d "$SITE/lens" ]; then
  git worktree add -f /tmp/frozen7 "$FROZEN" && \
  .venv/bin/pip install -q --no-deps --no-build-isolation --target "$SITE" /tmp/frozen7 || exit 1
fi
export PYTHONPATH=$SITE HF_HUB_OFFLINE=1
W=$PWD/../shared/data/dpdisc_tatqa_dev R=$PWD/benchmarks/results/stream-dpdisc-1.5b
COMMON="--workload $W --folder /tmp/dpdisc-assets --order semantic --seed 0 --set llm.cache=false"
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
  commit "DPDisc stream (1.5B): memory/ through position $k ($(count memory) rows in memory/, $(count no-memory) in no-memory/)"
  echo "== $(date -u +%T) no-memory limit $k"
  .venv/bin/lens bench stream $COMMON --no-memory --limit $k --out $R/no-memory
  echo "rc=$?"
  commit "DPDisc stream (1.5B): no-memory/ through position $k ($(count memory) rows in memory/, $(count no-memory) in no-memory/)"
done
echo "== $(date -u +%T) finished"
