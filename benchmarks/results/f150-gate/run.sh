#!/usr/bin/env bash
# Issue 59 on F150: full LENS against its no-exploration ablation over the fullwiki sample (G150 over the whole
# pool as .bz2 shards), embedded Qwen2.5-Coder-1.5B served at $BASE, deep preset, cache off, concurrency 1, one
# frozen commit; chunks of 10 questions, both arms per chunk (a partial run stays paired), rows committed per
# chunk. Resumable: rerun. Then: python benchmarks/loop_changes.py $R/full $R/no-exploration --out $R/changes.md
#   COMMIT=<sha> BASE=http://127.0.0.1:8090/v1 benchmarks/results/f150-gate/run.sh
set -u
cd "$(dirname "$0")/../../.."
COMMIT=${COMMIT:?set COMMIT to the frozen commit} BASE=${BASE:?set BASE to the endpoint}
source benchmarks/frozen.sh "$COMMIT" || exit 1
Q=$PWD/../shared/data/hotpotqa/hotpot_dev_fullwiki.json R=$PWD/benchmarks/results/f150-gate
FW=${FW:-/tmp/fullwiki}
[ -d "$FW/pool" ] || .venv/bin/lens bench fullwiki --questions $Q --articles $PWD/../shared/data/hotpotqa/wiki_articles.jsonl \
  --exclude $PWD/benchmarks/results/calibration/distractor-calibration-ids.txt --out $FW > /dev/null || exit 1
source benchmarks/chunks.sh
COMMON="--snapshot $FW/pool --sample $FW/sample --stage 150 --questions $Q --systems lens --concurrency 1 \
  --no-progress --base-url $BASE --model qwen2.5-coder-1.5b-instruct --set llm.cache=false \
  --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300"
for k in $(seq 10 10 150); do
  .venv/bin/lens bench run $COMMON --limit $k --out $R/full; echo "rc=$? full $k"
  .venv/bin/lens bench run $COMMON --limit $k --set ablation.no_exploration=true --out $R/no-exploration
  echo "rc=$? no-exploration $k"
  commit "F150 (issue 59): full LENS and its ablation through question $k"
done
