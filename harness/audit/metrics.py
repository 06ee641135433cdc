"""Row metrics, temporal violation rate, and the paired query-cluster bootstrap.

Row metrics (one reranked list per anchor and condition; ``K`` is the headline cutoff, 100 by default):

- ``recall@k`` — Asset Recall: share of the request's gold product in the top ``k`` (k = 10, 20, 50, 100).
- ``recall@K:<type>`` — the same restricted to gold assets of one type (only when assets have several types;
  NaN for a request with no gold asset of that type).
- ``hit@K`` — at least one gold asset in the top ``K``.
- ``complete@K`` — complete-product success: every gold asset in the top ``K``.
- ``rank80`` — product coverage: the number of ranked assets to inspect until 80 % of the product is covered;
  ``list depth + 1`` when the list never reaches 80 % (censored).
- ``tvr`` — Temporal Violation Rate: share of the selected memory entries with position ``j > i``
  (0 when nothing is selected).

Contrasts are paired within an anchor (same query, stream, seed, base list), averaged per query id, and
bootstrapped over query clusters (5,000 resamples by default, percentile 95 % interval). HG = F − P,
ΔPIT = P − S and MHF = HG / |ΔPIT| share one set of resample draws, so MHF's interval is coherent with both.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from harness.workloads import GoldLabels

__all__ = [
    "CUTOFFS",
    "Estimate",
    "row_metrics",
    "temporal_violation",
    "cluster_means",
    "Bootstrap",
    "verdict",
    "contrast_set",
]

CUTOFFS = (10, 20, 50, 100)


def row_metrics(
    final: np.ndarray,
    anchor_query: np.ndarray,
    gold: GoldLabels,
    type_codes: np.ndarray,
    type_names: Sequence[str],
    *,
    cutoffs: Sequence[int] = CUTOFFS,
    headline_k: int = 100,
) -> dict[str, np.ndarray]:
    """Metrics of each ranked list ``final (A, L)`` (asset indices, ``-1`` pads) for the request
    ``anchor_query (A,)`` (workload index). Returns float64 arrays of shape ``(A,)`` keyed by metric name."""
    A, L = final.shape
    n_assets = gold.n_assets
    gold_keys = gold.keys()
    safe = np.where(final >= 0, final, 0)
    keys = anchor_query[:, None].astype(np.int64) * n_assets + safe
    if gold_keys.size:
        pos = np.minimum(np.searchsorted(gold_keys, keys), gold_keys.size - 1)
        hits = (final >= 0) & (gold_keys[pos] == keys)
    else:
        hits = np.zeros(final.shape, dtype=bool)
    g = gold.sizes()[anchor_query].astype(np.float64)
    cum = np.cumsum(hits, axis=1)
    out: dict[str, np.ndarray] = {}
    for k in cutoffs:
        kk = min(k, L)
        out[f"recall@{k}"] = cum[:, kk - 1] / g
    K = min(headline_k, L)
    found_K = cum[:, K - 1]
    out[f"hit@{headline_k}"] = (found_K > 0).astype(np.float64)
    out[f"complete@{headline_k}"] = (found_K == g).astype(np.float64)
    need = np.ceil(0.8 * g - 1e-9)
    reached = cum >= need[:, None]
    out["rank80"] = np.where(reached.any(axis=1), reached.argmax(axis=1) + 1, L + 1).astype(np.float64)
    if len(type_names) > 1:
        t_of_final = np.where(final >= 0, type_codes[safe], -1)
        gold_types = type_codes[gold.indices]
        rows = np.repeat(np.arange(gold.n_queries), gold.sizes())
        for t, name in enumerate(type_names):
            g_t = np.bincount(rows[gold_types == t], minlength=gold.n_queries)[anchor_query].astype(np.float64)
            found_t = (hits[:, :K] & (t_of_final[:, :K] == t)).sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[f"recall@{headline_k}:{name}"] = np.where(g_t > 0, found_t / np.where(g_t > 0, g_t, 1), np.nan)
    return out


def temporal_violation(positions: np.ndarray, anchor_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: (TVR, number of selected entries, number of selected entries after the anchor)."""
    valid = positions >= 0
    n_sel = valid.sum(axis=1)
    n_future = (valid & (positions > anchor_pos[:, None])).sum(axis=1)
    tvr = np.divide(n_future, n_sel, out=np.zeros(n_sel.shape, dtype=np.float64), where=n_sel > 0)
    return tvr, n_sel, n_future


# ------------------------------------------------------------------------------------------ statistics


@dataclass(frozen=True)
class Estimate:
    """A paired contrast: query-cluster mean, percentile interval, number of clusters (and of pairs)."""

    mean: float
    lo: float
    hi: float
    n_clusters: int
    n_pairs: int

    def excludes_zero(self) -> bool:
        return (self.lo > 0) or (self.hi < 0)

    def fmt(self, scale: float = 100.0, digits: int = 2) -> str:
        if not math.isfinite(self.mean):
            return "n/a"
        return f"{self.mean * scale:+.{digits}f} [{self.lo * scale:.{digits}f}, {self.hi * scale:.{digits}f}]"


def cluster_means(values: np.ndarray, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean of ``values`` per cluster label: ``(labels, means)`` with labels sorted. NaNs are ignored
    (a cluster of only NaNs gets NaN)."""
    labels, inv = np.unique(clusters, return_inverse=True)
    v = np.asarray(values, dtype=np.float64)
    ok = ~np.isnan(v)
    sums = np.bincount(inv[ok], weights=v[ok], minlength=labels.size)
    counts = np.bincount(inv[ok], minlength=labels.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return labels, np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


class Bootstrap:
    """Query-cluster bootstrap with one fixed set of resample draws shared by every contrast it computes.

    ``clusters (N,)`` labels the paired observations (query ids); ``resamples`` draws of the clusters with
    replacement come from ``numpy.random.default_rng(seed)``, so results are deterministic for a seed.
    """

    def __init__(self, clusters: np.ndarray, *, resamples: int = 5000, seed: int = 0, alpha: float = 0.05) -> None:
        if resamples < 1:
            raise ValueError("resamples must be >= 1")
        self.clusters = np.asarray(clusters)
        self.labels, self._inv = np.unique(self.clusters, return_inverse=True)
        self.resamples = int(resamples)
        self.alpha = float(alpha)
        g = self.labels.size
        self._draws = (
            np.random.default_rng(seed).integers(0, g, size=(self.resamples, g))
            if g
            else np.zeros((self.resamples, 0), dtype=np.int64)
        )

    def _cluster_means(self, values: np.ndarray) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        ok = ~np.isnan(v)
        sums = np.bincount(self._inv[ok], weights=v[ok], minlength=self.labels.size)
        counts = np.bincount(self._inv[ok], minlength=self.labels.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)

    def replicates(self, values: np.ndarray) -> tuple[float, np.ndarray]:
        """Point estimate (mean of cluster means) and its ``resamples`` bootstrap replicates."""
        cm = self._cluster_means(values)
        ok = ~np.isnan(cm)
        if not ok.any():
            return math.nan, np.full(self.resamples, np.nan)
        point = float(cm[ok].mean())
        drawn = cm[self._draws]
        if ok.all():
            return point, drawn.mean(axis=1)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a replicate of only NaN clusters stays NaN
            return point, np.nanmean(drawn, axis=1)

    def _interval(self, reps: np.ndarray) -> tuple[float, float]:
        reps = reps[np.isfinite(reps)]
        if reps.size == 0:
            return math.nan, math.nan
        lo, hi = np.quantile(reps, [self.alpha / 2, 1 - self.alpha / 2])
        return float(lo), float(hi)

    def estimate(self, values: np.ndarray) -> Estimate:
        """Query-cluster mean of paired differences ``values (N,)`` with its percentile interval."""
        point, reps = self.replicates(values)
        lo, hi = self._interval(reps)
        return Estimate(point, lo, hi, int(self.labels.size), int(np.asarray(values).size))

    def ratio(self, num: np.ndarray, den: np.ndarray) -> Estimate:
        """``mean(num) / |mean(den)|`` per replicate (MHF = HG / |ΔPIT|); NaN where the denominator is 0."""
        pn, rn = self.replicates(num)
        pd, rd = self.replicates(den)
        with np.errstate(invalid="ignore", divide="ignore"):
            point = pn / abs(pd) if pd not in (0.0,) and math.isfinite(pd) else math.nan
            reps = np.where(np.abs(rd) > 0, rn / np.abs(rd), np.nan)
        lo, hi = self._interval(reps)
        return Estimate(float(point), lo, hi, int(self.labels.size), int(np.asarray(num).size))


def verdict(delta_pit: Estimate, contract_ok: bool) -> str:
    """The release-gate reading of ΔPIT (paper Table 7): ``invalid`` if the contract failed, else ``helps``
    (interval above 0), ``harms`` (below 0) or ``inconclusive``."""
    if not contract_ok:
        return "invalid"
    if not (math.isfinite(delta_pit.lo) and math.isfinite(delta_pit.hi)):
        return "inconclusive"
    if delta_pit.lo > 0:
        return "helps"
    if delta_pit.hi < 0:
        return "harms"
    return "inconclusive"


def contrast_set(
    by_condition: Mapping[str, np.ndarray], clusters: np.ndarray, *, resamples: int = 5000, seed: int = 0
) -> dict[str, Estimate]:
    """HG, ΔPIT, MHF and HG_h for each ``future-h<h>`` present, from paired per-anchor metric values keyed by
    condition label (``stateless``, ``pit``, ``future``, ``future-h10`` …), all sharing one bootstrap."""
    bs = Bootstrap(clusters, resamples=resamples, seed=seed)
    S, P, F = by_condition["stateless"], by_condition["pit"], by_condition["future"]
    out = {
        "HG": bs.estimate(F - P),
        "dPIT": bs.estimate(P - S),
        "MHF": bs.ratio(F - P, P - S),
        "F-S": bs.estimate(F - S),
    }
    for label, vals in by_condition.items():
        if label.startswith("future-h"):
            out[f"HG_h{label[len('future-h') :]}"] = bs.estimate(vals - P)
    return out
