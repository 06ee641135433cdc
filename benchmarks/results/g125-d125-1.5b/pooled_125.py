"""Table 2 / reading ceiling / McNemar on all 125 questions, hybrid pooled from full/ (1-116) and
hybrid-117-125/ (this host's dense index; same top-5 rankings on all 116 earlier questions)."""
import json, sys
import numpy as np
from scipy.stats import binomtest
R = "/work/main/benchmarks/results/g125-d125-1.5b"
rows = {}
for f in ("full", "hybrid-117-125"):
    for l in open(f"{R}/{f}/rows.jsonl"):
        r = json.loads(l)
        rows.setdefault(r["system"], {})[r["question_id"]] = r
ids = sorted(set.intersection(*(set(v) for v in rows.values())))
print("n =", len(ids), {k: len(v) for k, v in rows.items()})
def col(s, m): return np.array([float(rows[s][q]["scores"][m] or 0) for q in ids])
gold = col("gold-passages", "em").mean()
print("| System | EM | F1 | Ev.Rec | Ground | EM / gold-passage EM | tokens | s/q |")
for s in ("lens", "hybrid", "bm25", "bm25-span", "gold-passages"):
    em = col(s, "em"); tok = np.mean([rows[s][q]["prediction"]["tokens"] for q in ids]); sec = np.mean([rows[s][q]["prediction"]["seconds"] for q in ids])
    print(f"| {s} | {100*em.mean():.1f} | {100*col(s,'f1').mean():.1f} | {100*col(s,'ev_rec').mean():.1f} | {100*col(s,'grounded').mean():.1f} | {em.mean()/gold:.2f} | {tok:,.0f} | {sec:.1f} |")
rng = np.random.default_rng(42)
for a, b in (("lens", "hybrid"), ("lens", "bm25-span"), ("lens", "bm25")):
    x, y = col(a, "em"), col(b, "em")
    bb, cc = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
    p = binomtest(bb, bb + cc, 0.5).pvalue if bb + cc else 1.0
    d = x - y; boots = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(10000)]
    print(f"{a} vs {b}: {bb}:{cc} p={p:.3f} dEM {100*d.mean():+.1f} [{100*np.percentile(boots,2.5):+.1f}, {100*np.percentile(boots,97.5):+.1f}]")
for a, b in (("lens", "hybrid"), ("lens", "bm25")):
    d = col(a, "ev_rec") - col(b, "ev_rec"); boots = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(10000)]
    print(f"Ev.Rec {a} - {b}: {100*d.mean():+.1f} [{100*np.percentile(boots,2.5):+.1f}, {100*np.percentile(boots,97.5):+.1f}]")
