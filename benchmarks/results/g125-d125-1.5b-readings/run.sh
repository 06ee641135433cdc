#!/usr/bin/env bash
# G125/D125, embedded 1.5B, deep preset, response cache off, concurrency 1, code of one frozen commit (issue 32):
# full LENS, its no-exploration ablation, Hybrid-RAG and the gold-passage reference arm (uses_gold), interleaved
# in chunks of 25 questions so a partial run stays paired; rows committed per chunk. Resumable: rerun it.
set -u
cd "$(dirname "$0")/../../.."
COMMIT=${COMMIT:?set COMMIT to the frozen commit named in README.md}
source benchmarks/frozen.sh "$COMMIT" || exit 1
Q=$PWD/../shared/data/hotpotqa/hotpot_dev_distractor.json R=$PWD/benchmarks/results/g125-d125-1.5b-readings
SNAP=${SNAP:-/tmp/snap}
[ -d "$SNAP/D125" ] || .venv/bin/lens bench snapshot --questions $Q --articles $PWD/../shared/data/hotpotqa/wiki_articles.jsonl \
  --out $SNAP || exit 1
COMMON="--snapshot $SNAP/D125 --questions $Q --concurrency 1 --index-dir /tmp/lens-bench/indexes --no-progress \
  --set llm.cache=false --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300"
source benchmarks/chunks.sh
for k in 25 50 75 100 125; do
  echo "== $(date -u +%T) full (lens, gold-passages, hybrid) limit $k"
  .venv/bin/lens bench run $COMMON --systems lens,gold-passages,hybrid --limit $k --out $R/full; echo "rc=$?"
  commit "G125/D125 readings run: full/ through question $k ($(count full) rows in full/, $(count no-exploration) in no-exploration/)"
  echo "== $(date -u +%T) no-exploration limit $k"
  .venv/bin/lens bench run $COMMON --systems lens --set ablation.no_exploration=true --limit $k --out $R/no-exploration
  echo "rc=$?"
  commit "G125/D125 readings run: no-exploration/ through question $k ($(count full) rows in full/, $(count no-exploration) in no-exploration/)"
done
echo "== $(date -u +%T) finished"
