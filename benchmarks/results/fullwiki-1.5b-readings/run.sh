#!/usr/bin/env bash
# Table 6's first two rows again after the readings change (issue 32): full LENS and its no-exploration ablation on
# the 150 frozen fullwiki questions over the whole pool (31 .bz2 shards, read as they are), embedded 1.5B, deep
# preset, response cache off, concurrency 1, the code of the G125 readings run's frozen commit (README.md),
# interleaved in chunks of 10 so a partial run stays paired; rows committed per chunk. Resumable: rerun it.
set -u
cd "$(dirname "$0")/../../.."
COMMIT=${COMMIT:?set COMMIT to the frozen commit named in README.md}
source benchmarks/frozen.sh "$COMMIT" || exit 1
Q=$PWD/../shared/data/hotpotqa/hotpot_dev_fullwiki.json R=$PWD/benchmarks/results/fullwiki-1.5b-readings
FW=${FW:-/tmp/fullwiki}
[ -d "$FW/pool" ] || .venv/bin/lens bench fullwiki --questions $Q --articles $PWD/../shared/data/hotpotqa/wiki_articles.jsonl \
  --exclude $PWD/benchmarks/results/calibration/distractor-calibration-ids.txt --out $FW || exit 1
COMMON="--snapshot $FW/pool --sample $FW/sample --stage 150 --questions $Q --concurrency 1 --no-progress \
  --set llm.cache=false --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300 --systems lens"
source benchmarks/chunks.sh
for k in $(seq 10 10 150); do
  echo "== $(date -u +%T) full limit $k"
  .venv/bin/lens bench run $COMMON --limit $k --out $R/full; echo "rc=$?"
  echo "== $(date -u +%T) no-exploration limit $k"
  .venv/bin/lens bench run $COMMON --set ablation.no_exploration=true --limit $k --out $R/no-exploration; echo "rc=$?"
  commit "fullwiki G150 readings run through question $k (full $(count full), no-exploration $(count no-exploration) rows)"
done
echo "== $(date -u +%T) finished"
