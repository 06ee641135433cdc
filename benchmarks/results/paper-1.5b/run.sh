#!/usr/bin/env bash
# The paper's tables at its scale (issue 36): embedded Qwen2.5-Coder-1.5B, deep preset, response cache off,
# concurrency 1, the code of one frozen commit (README.md). Stages, in this order, each in chunks of 25 questions
# (every arm of a stage runs a chunk before the next chunk starts, so a partial stage stays paired), JudgeAcc
# after each chunk, rows committed per chunk. Resumable: rerun it; finished chunks are skipped in seconds.
#   lifecycle.json           Table 1: index builds, bytes, readiness after growth (measured first, on a quiet host)
#   d500/    questions   1–250 of G500 over D500 (the G250-on-D500 checkpoint), five systems + gold passages
#   d125/    G125 over D125, five systems
#   d250/    G250 over D250, five systems
#   stale-d125-d250/  the 125 questions new in G250: BM25/Hybrid on D125 indexes, the others reading D250
#   d500/    questions 251–500 (Table 2 at n = 500)
set -u
cd "$(dirname "$0")/../../.."
COMMIT=${COMMIT:?set COMMIT to the frozen commit named in README.md}
source benchmarks/frozen.sh "$COMMIT" || exit 1
Q=$PWD/../shared/data/hotpotqa/hotpot_dev_distractor.json R=$PWD/benchmarks/results/paper-1.5b
WORK=${WORK:-/tmp/lens-paper} S=${WORK:-/tmp/lens-paper}/snapshots IDX=${WORK:-/tmp/lens-paper}/indexes
.venv/bin/lens bench snapshot --questions $Q --articles $PWD/../shared/data/hotpotqa/wiki_articles.jsonl --out $S \
  --verify > /dev/null || exit 1
source benchmarks/chunks.sh
[ -f $R/lifecycle.json ] || { .venv/bin/lens bench lifecycle --snapshots $S --index-dir $IDX --out $R/lifecycle.json \
  && commit "paper-scale tables: lifecycle (Table 1) on D125/D250/D500"; } || exit 1
COMMON="--questions $Q --concurrency 1 --index-dir $IDX --no-progress \
  --set llm.cache=false --set budget.question_timeout_s=1200 --set llm.call_timeout_s=300"
FIVE=lens,react,bm25,hybrid,closed
stage() {  # stage SUBFOLDER FIRST LAST BY SYSTEMS [extra run flags...]
  local sub=$1 first=$2 last=$3 systems=$4; shift 4
  for k in $(seq $first 25 $last); do
    echo "== $(date -u +%T) $sub limit $k"
    .venv/bin/lens bench run $COMMON --systems $systems --limit $k --out $R/$sub "$@"; echo "rc=$?"
    .venv/bin/lens bench judge $R/$sub > /dev/null; echo "judge rc=$?"
    commit "paper-scale tables: $sub through question $k ($(count $sub) rows)"
  done
}
stage d500 25 250 $FIVE,gold-passages --snapshot $S/D500
stage d125 25 125 $FIVE --snapshot $S/D125
stage d250 25 250 $FIVE --snapshot $S/D250
stage stale-d125-d250 25 125 $FIVE --snapshot $S/D250 --stale-from $S/D125
stage d500 275 500 $FIVE,gold-passages --snapshot $S/D500
echo "== $(date -u +%T) finished"
