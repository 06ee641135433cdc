# Source this from a result folder's run script: `source benchmarks/frozen.sh COMMIT`. It installs COMMIT's code
# (lens, harness, prompts, configs) into /tmp/frozen-COMMIT-site once — a git worktree of COMMIT, then
# `pip install --no-deps --target` — and exports PYTHONPATH to it, so a long run measures one commit while main
# moves on. Check what ran from outside the checkout:
#   cd /tmp && PYTHONPATH=/tmp/frozen-COMMIT-site python -c "from harness.bench.systems.provenance import code_fingerprint as f; print(f('lens'))"
FROZEN_COMMIT=${1:?usage: source benchmarks/frozen.sh COMMIT}
FROZEN_SITE=/tmp/frozen-$FROZEN_COMMIT-site
if [ ! -d "$FROZEN_SITE/lens" ]; then
  git worktree add -f "/tmp/frozen-$FROZEN_COMMIT" "$FROZEN_COMMIT" && \
  .venv/bin/pip install -q --no-deps --no-build-isolation --target "$FROZEN_SITE" "/tmp/frozen-$FROZEN_COMMIT" || return 1
fi
export PYTHONPATH=$FROZEN_SITE HF_HUB_OFFLINE=1
