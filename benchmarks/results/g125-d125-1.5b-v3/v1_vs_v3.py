"""Paired comparison of this run's full LENS (code 18e1e13) with the first run's (../g125-d125-1.5b/, code
ce3a1cb) of the two ablation folders, and of this run's LENS with the first run's reference arms (Hybrid-RAG pooled
from full/ and hybrid-117-125/, as in its pooled_125.py), on the same 125 questions: EM / Ev.Rec / tokens, McNemar on EM
(exact binomial) and a paired percentile bootstrap of ΔEv.Rec (10,000 resamples, seed 42).

    python benchmarks/results/g125-d125-1.5b-v3/v1_vs_v3.py
"""

import json
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

HERE = Path(__file__).parent
V1 = HERE.parent / "g125-d125-1.5b"


def load(*folders: Path, system: str = "lens") -> dict:
    rows = {}
    for folder in folders:
        for line in (folder / "rows.jsonl").open():
            r = json.loads(line)
            if r.get("system") == system and r.get("arm", "fresh") == "fresh":
                rows[r["question_id"]] = r
    return rows


def em(r):
    return float(r["scores"]["em"])


def ev(r):
    return float(r["scores"]["ev_rec"])


def tokens(r):
    p = r["prediction"]
    return p["tokens"]


def compare(name, a, b):
    ids = sorted(set(a) & set(b))
    ea, eb = np.array([em(a[i]) for i in ids]), np.array([em(b[i]) for i in ids])
    va, vb = np.array([ev(a[i]) for i in ids]), np.array([ev(b[i]) for i in ids])
    ta, tb = np.array([tokens(a[i]) for i in ids]), np.array([tokens(b[i]) for i in ids])
    only_a, only_b = int(((ea == 1) & (eb == 0)).sum()), int(((ea == 0) & (eb == 1)).sum())
    p = binomtest(only_a, only_a + only_b).pvalue if only_a + only_b else 1.0
    rng = np.random.default_rng(42)
    d = va - vb
    boots = np.array([d[rng.integers(0, len(d), len(d))].mean() for _ in range(10_000)])
    lo, hi = np.percentile(boots, [2.5, 97.5]) * 100
    same_ev = sum(a[i]["prediction"]["evidence"] == b[i]["prediction"]["evidence"] for i in ids)
    same_ans = sum(a[i]["prediction"]["answer"] == b[i]["prediction"]["answer"] for i in ids)
    print(f"{name} (n={len(ids)})")
    print(f"  EM {ea.mean() * 100:.1f} vs {eb.mean() * 100:.1f}; McNemar {only_a}:{only_b}, p={p:.3f}")
    print(
        f"  Ev.Rec {va.mean() * 100:.1f} vs {vb.mean() * 100:.1f}; delta {d.mean() * 100:+.1f} pp [{lo:+.1f}, {hi:+.1f}]"
    )
    print(f"  tokens/q {ta.mean():,.0f} vs {tb.mean():,.0f} ({ta.mean() / tb.mean():.2f}x)")
    print(f"  same cited documents {same_ev}/{len(ids)}, same answer {same_ans}/{len(ids)}")


if __name__ == "__main__":
    compare("full v3 vs full v1", load(HERE / "full"), load(V1 / "full"))
    compare("ablation v3 vs ablation v1", load(HERE / "no-exploration"), load(V1 / "no-exploration"))
    compare("full v3 vs ablation v3", load(HERE / "full"), load(HERE / "no-exploration"))
    compare("full v3 vs Hybrid-RAG", load(HERE / "full"), load(V1 / "full", V1 / "hybrid-117-125", system="hybrid"))
    compare("full v3 vs BM25-RAG", load(HERE / "full"), load(V1 / "full", system="bm25"))
