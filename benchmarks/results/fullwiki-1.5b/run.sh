#!/usr/bin/env bash
# Fullwiki G150 over the whole pool as .bz2 shards (Table 3), embedded 1.5B, deep preset, cache off,
# code of 226df95 (frozen by benchmarks/frozen.sh). Closed-Book first (cheap), then LENS and ReAct in
# chunks of 10 questions so a partial run stays paired across the systems. Resumable: rerun it.
set -u
cd "$(dirname "$0")/../../.."
source benchmarks/frozen.sh 226df95 || exit 1
Q=$PWD/../shared/data/hotpotqa/hotpot_dev_fullwiki.json R=$PWD/benchmarks/results/fullwiki-1.5b
FW=${FW:-/tmp/fullwiki}
[ -d "$FW/pool" ] || .venv/bin/lens bench fullwiki --questions $Q --articles $PWD/../shared/data/hotpotqa/wiki_articles.jsonl \
  --exclude $PWD/benchmarks/results/calibration/distractor-calibration-ids.txt --out $FW || exit 1
COMMON="--snapshot $FW/pool --sample $FW/sample --stage 150 --questions $Q --concurrency 1 --no-progress \
  --set llm.cache=false --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300"
commit() {
  for i in 1 2 3 4 5; do
    git add "$R" && git commit -q -m "$1" -- "$R" && return 0
    sleep 5
  done
}
count() { [ -f "$R/table3/rows.jsonl" ] && grep -c "\"system\":\"$1\",\"system_hash\"" "$R/table3/rows.jsonl" || true; }
echo "== $(date -u +%T) closed 150"
.venv/bin/lens bench run $COMMON --systems closed --out $R/table3; echo "rc=$?"
commit "fullwiki G150 run: closed-book ($(count closed) rows)"
for k in $(seq 10 10 150); do
  for s in lens react; do
    echo "== $(date -u +%T) $s limit $k"
    .venv/bin/lens bench run $COMMON --systems $s --limit $k --out $R/table3; echo "rc=$?"
    commit "fullwiki G150 run: $s through question $k (lens $(count lens), react $(count react), closed $(count closed) rows)"
  done
done
echo "== $(date -u +%T) finished"
