#!/usr/bin/env bash
# JudgeAcc for the fullwiki folders (after run.sh / run-ablations.sh): the embedded 1.5B as judge (deep preset,
# its own [judge] prompt), one verdict per row with the raw reply in RUN_DIR/judge.jsonl. Current code (the judge
# is harness, not a system; its calls are in no system's budget). Resumable: rerun it; cached verdicts cost nothing.
# Usage: run-judge.sh [FOLDER ...]   (default: table3 no-exploration lexical-only)
set -u
cd "$(dirname "$0")/../../.."
export HF_HUB_OFFLINE=1
R=$PWD/benchmarks/results/fullwiki-1.5b
[ $# -gt 0 ] || set -- table3 no-exploration lexical-only
for d in "$@"; do
  [ -f "$R/$d/rows.jsonl" ] || continue
  echo "== $(date -u +%T) judge $d"
  .venv/bin/lens bench judge "$R/$d"; echo "rc=$?"
  for i in 1 2 3 4 5; do
    git add "$R/$d" && git commit -q -m "fullwiki G150 JudgeAcc verdicts: $d ($(wc -l < "$R/$d/judge.jsonl") verdicts)" -- "$R/$d" && break
    sleep 5
  done
done
echo "== $(date -u +%T) finished"
