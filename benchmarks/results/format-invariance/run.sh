#!/usr/bin/env bash
# Format invariance (issue 58): G125 over D125 written as text, as PDF and as .docx, embedded Qwen2.5-Coder-1.5B
# served at $BASE (one llama.cpp server for every arm), deep preset, response cache off, concurrency 1, the code of
# one frozen commit. Stages (each in chunks of 25 questions, the text and document arms of a chunk one after the
# other so a partial stage stays paired; rows committed per chunk; resumable: rerun, finished chunks are skipped):
#   noexp-text, noexp-pdf     the no-exploration ablation on all 125 (it isolates prior, units and extraction)
#   noexp-docx                the ablation on the first 50 over the .docx D125
#   full-text, full-pdf       full LENS on the first 50 (STAGE=full; full-text goes on to all 125: it is issue 59's
#                             full arm, paired with noexp-text at the same commit and configuration)
# then `lens bench compare` for each pair.
#   COMMIT=<sha> BASE=http://127.0.0.1:8090/v1 STAGE=noexp|docx|full benchmarks/results/format-invariance/run.sh
# ONLY=noexp-text (a space-separated list of sub-runs) runs just those arms of the stage, e.g. to finish the text
# arms issue 59 pairs before the PDF ones. OUT=<folder> writes the sub-runs there instead (a rerun at another
# commit: labels/, the passages named without their extension); FULL_TO=50 stops full-text with full-pdf.
set -u
cd "$(dirname "$0")/../../.."
COMMIT=${COMMIT:?set COMMIT to the frozen commit} BASE=${BASE:?set BASE to the endpoint} STAGE=${STAGE:-noexp}
source benchmarks/frozen.sh "$COMMIT" || exit 1
D=$PWD/../shared/data/hotpotqa Q=$D/hotpot_dev_distractor.json R=${OUT:-$PWD/benchmarks/results/format-invariance}
W=${WORK:-/tmp/lens-fi}
for fmt in text pdf docx; do
  as=$([ $fmt = text ] && echo "" || echo "--as $fmt")
  [ -f $W/$fmt/D125.manifest.json ] || .venv/bin/lens bench snapshot --questions $Q --articles $D/wiki_articles.jsonl \
    --sizes 125 $as --out $W/$fmt > /dev/null || exit 1
done
[ -f $W/samples/sample.json ] || .venv/bin/lens bench sample --questions $Q --out $W/samples > /dev/null || exit 1
source benchmarks/chunks.sh
COMMON="--questions $Q --sample $W/samples --stage 125 --systems lens --concurrency 1 --no-progress \
  --base-url $BASE --model qwen2.5-coder-1.5b-instruct --set llm.cache=false --set budget.question_timeout_s=1200 \
  --set llm.call_timeout_s=300"
NOEXP="--set ablation.no_exploration=true"
arm() {  # arm SUB FORMAT LIMIT [flags]
  local sub=$1 fmt=$2 k=$3; shift 3
  [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $sub "* ]] && return 0
  .venv/bin/lens bench run $COMMON --snapshot $W/$fmt/D125 --limit $k --out $R/$sub "$@"; echo "rc=$? $sub $k"
}
case $STAGE in
  noexp) for k in 25 50 75 100 125; do
           arm noexp-text text $k $NOEXP; arm noexp-pdf pdf $k $NOEXP
           commit "format invariance: no-exploration ablation, text and PDF D125, through question $k"
         done ;;
  docx)  for k in 25 50; do arm noexp-docx docx $k $NOEXP; commit "format invariance: ablation over .docx D125 through $k"; done ;;
  full)  # full LENS over the text D125 runs all 125: it is also issue 59's full arm against noexp-text
         for k in 25 50 75 100 125; do
           [ $k -gt ${FULL_TO:-125} ] && break
           arm full-text text $k; [ $k -le 50 ] && arm full-pdf pdf $k
           commit "format invariance / issue 59: full LENS over text D125 through question $k (PDF through 50)"
         done ;;
esac
