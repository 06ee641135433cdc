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
# Hybrid-RAG's dense vectors are not bit-identical across CPUs, and every session may get a fresh host (indexes
# under $WORK are lost with it): a stage's hybrid arm therefore runs all of the stage's questions in one call,
# after arms.py has moved hybrid rows bound to another host's index aside (superseded/, see arms.py). The other
# arms' indexes (BM25) rebuild bit-identically and go chunk by chunk; arms that already hold a chunk are skipped.
run_arms() {  # run_arms SUBFOLDER LIMIT SYSTEMS [extra run flags...]
  local sub=$1 k=$2 systems=$3; shift 3
  echo "== $(date -u +%T) $sub limit $k: $systems"
  local rc
  .venv/bin/lens bench run $COMMON --systems $systems --limit $k --out $R/$sub "$@"; rc=$?; echo "rc=$rc"
  .venv/bin/lens bench judge $R/$sub > /dev/null; echo "judge rc=$?"
  commit "paper-scale tables: $sub through question $k, $systems ($(count $sub) rows)"
  # rc 1: endpoint failures left some questions to retry (the next call does); 2 or more: the run could not go
  # on (refused binding, stopped run, interrupt), and every later call would fail the same way
  [ $rc -lt 2 ] || { echo "run.sh: lens bench run failed (rc $rc) on $sub limit $k; rerun to resume" >&2; exit $rc; }
}
stage() {  # stage SUBFOLDER FIRST LAST SYSTEMS INDEX_SNAPSHOT [extra run flags...]
  local sub=$1 first=$2 last=$3 systems=$4 index_snapshot=$5 todo; shift 5
  if [[ ",$systems," == *,hybrid,* ]] && [ -n "$(arms todo $R/$sub $last hybrid)" ]; then
    arms rebind-hybrid $R/$sub $index_snapshot $IDX || exit 1
    run_arms $sub $last hybrid "$@"
  fi
  for k in $(seq $first 25 $last); do
    todo=$(arms todo $R/$sub $k ${systems/hybrid,/})
    [ -z "$todo" ] || run_arms $sub $k $todo "$@"
  done
}
arms() { .venv/bin/python benchmarks/results/paper-1.5b/arms.py "$@"; }
stage d500 25 250 $FIVE,gold-passages $S/D500 --snapshot $S/D500
stage d125 25 125 $FIVE $S/D125 --snapshot $S/D125
stage d250 25 250 $FIVE $S/D250 --snapshot $S/D250
stage stale-d125-d250 25 125 $FIVE $S/D125 --snapshot $S/D250 --stale-from $S/D125
stage d500 275 500 $FIVE,gold-passages $S/D500 --snapshot $S/D500
echo "== $(date -u +%T) finished"
