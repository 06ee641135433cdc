"""Table 2, the reading ceiling and paired tests on all 125 questions, hybrid pooled from ``full/`` (questions
1-116) and ``hybrid-117-125/`` (this host's dense index; identical top-5 rankings on the 116 earlier questions).

Usage: python pooled_125.py [RUN_FOLDER]   (default: the folder this script lies in)
"""

import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

R = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
rows: dict[str, dict[str, dict]] = {}
for folder in ("full", "hybrid-117-125"):
    for line in (R / folder / "rows.jsonl").open(encoding="utf-8"):
        r = json.loads(line)
        rows.setdefault(r["system"], {})[r["question_id"]] = r
ids = sorted(set.intersection(*(set(v) for v in rows.values())))
print("n =", len(ids), {k: len(v) for k, v in rows.items()})


def col(system: str, metric: str) -> np.ndarray:
    return np.array([float(rows[system][q]["scores"][metric] or 0) for q in ids])


def boot(d: np.ndarray, rng: np.random.Generator) -> str:
    means = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(10000)]
    lo, hi = np.percentile(means, [2.5, 97.5])
    return f"{100 * d.mean():+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"


gold = col("gold-passages", "em").mean()
print("| System | EM | F1 | Ev.Rec | Ground | EM / gold-passage EM | tokens | s/q |")
for s in ("lens", "hybrid", "bm25", "bm25-span", "gold-passages"):
    em = col(s, "em")
    tok = np.mean([rows[s][q]["prediction"]["tokens"] for q in ids])
    sec = np.mean([rows[s][q]["prediction"]["seconds"] for q in ids])
    cells = [100 * em.mean(), 100 * col(s, "f1").mean(), 100 * col(s, "ev_rec").mean(), 100 * col(s, "grounded").mean()]
    print(f"| {s} | " + " | ".join(f"{c:.1f}" for c in cells) + f" | {em.mean() / gold:.2f} | {tok:,.0f} | {sec:.1f} |")
rng = np.random.default_rng(42)
for a, b in (("lens", "hybrid"), ("lens", "bm25-span"), ("lens", "bm25")):
    x, y = col(a, "em"), col(b, "em")
    n_b, n_c = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
    p = binomtest(n_b, n_b + n_c, 0.5).pvalue if n_b + n_c else 1.0
    print(f"{a} vs {b}: McNemar {n_b}:{n_c} p={p:.3f} dEM {boot(x - y, rng)}")
for a, b in (("lens", "hybrid"), ("lens", "bm25")):
    print(f"Ev.Rec {a} - {b}: {boot(col(a, 'ev_rec') - col(b, 'ev_rec'), rng)}")
