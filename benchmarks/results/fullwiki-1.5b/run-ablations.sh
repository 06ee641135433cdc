#!/usr/bin/env bash
# Table 6 on the fullwiki G150 (after run.sh): LENS's ablations with the same frozen code (226df95, installed
# by benchmarks/frozen.sh), bindings and settings — no sequential exploration, lexical-only prior — interleaved in chunks
# of 10 so a partial run stays paired. ("No memory" is the full row itself: the bench's LENS arm is cold, it never
# reads a memory; what the memory does is issue 14's stream measurement.) Resumable: rerun it.
set -u
cd "$(dirname "$0")/../../.."
source benchmarks/frozen.sh 226df95 || exit 1
Q=$PWD/../shared/data/hotpotqa/hotpot_dev_fullwiki.json R=$PWD/benchmarks/results/fullwiki-1.5b
FW=${FW:-/tmp/fullwiki}
[ -d "$FW/pool" ] || .venv/bin/lens bench fullwiki --questions $Q --articles $PWD/../shared/data/hotpotqa/wiki_articles.jsonl \
  --exclude $PWD/benchmarks/results/calibration/distractor-calibration-ids.txt --out $FW || exit 1
COMMON="--snapshot $FW/pool --sample $FW/sample --stage 150 --questions $Q --concurrency 1 --no-progress \
  --set llm.cache=false --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300 --systems lens"
commit() {
  for i in 1 2 3 4 5; do
    git add "$R" && git commit -q -m "$1" -- "$R" && return 0
    sleep 5
  done
}
count() { [ -f "$R/$1/rows.jsonl" ] && wc -l < "$R/$1/rows.jsonl" || echo 0; }
for k in $(seq 10 10 150); do
  echo "== $(date -u +%T) no-exploration limit $k"
  .venv/bin/lens bench run $COMMON --set ablation.no_exploration=true --limit $k --out $R/no-exploration; echo "rc=$?"
  echo "== $(date -u +%T) lexical-only limit $k"
  .venv/bin/lens bench run $COMMON --set ablation.lexical_only_prior=true --limit $k --out $R/lexical-only; echo "rc=$?"
  commit "fullwiki G150 ablations through question $k (no-exploration $(count no-exploration), lexical-only $(count lexical-only) rows)"
done
echo "== $(date -u +%T) finished"
