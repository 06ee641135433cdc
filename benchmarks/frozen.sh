# Source this from a result folder's run script: `source benchmarks/frozen.sh COMMIT`. It installs COMMIT's code
# (lens, harness, prompts, configs) into /tmp/frozen-COMMIT-site once — a git worktree of COMMIT, then
# `pip install --no-deps --target` — and exports PYTHONPATH to it, so a long run measures one commit while main
# moves on. The dependencies COMMIT declares (its pyproject's runtime ones and the local, bench and dense extras)
# are installed into .venv where missing: main may have dropped one the frozen code still imports (without it,
# `lens bench run` stops at the first question with a SetupError and writes no row). Check what ran from outside
# the checkout:
#   cd /tmp && PYTHONPATH=/tmp/frozen-COMMIT-site python -c "from harness.bench.systems.provenance import code_fingerprint as f; print(f('lens'))"
FROZEN_COMMIT=${1:?usage: source benchmarks/frozen.sh COMMIT}
FROZEN_SITE=/tmp/frozen-$FROZEN_COMMIT-site
if [ ! -d "$FROZEN_SITE/lens" ]; then
  { [ "$(git -C "/tmp/frozen-$FROZEN_COMMIT" rev-parse HEAD 2>/dev/null)" = "$FROZEN_COMMIT" ] || \
    git worktree add -f "/tmp/frozen-$FROZEN_COMMIT" "$FROZEN_COMMIT"; } && \
  .venv/bin/pip install -q --no-deps --no-build-isolation --target "$FROZEN_SITE" "/tmp/frozen-$FROZEN_COMMIT" || return 1
fi
git show "$FROZEN_COMMIT:pyproject.toml" | .venv/bin/python -c '
import sys, tomllib
p = tomllib.loads(sys.stdin.read())["project"]
print("\n".join(p.get("dependencies", []) + [r for e in ("local", "bench", "dense") for r in p.get("optional-dependencies", {}).get(e, [])]))
' > "$FROZEN_SITE.requirements.txt" && .venv/bin/pip install -q -r "$FROZEN_SITE.requirements.txt" || return 1
export PYTHONPATH=$FROZEN_SITE HF_HUB_OFFLINE=1
