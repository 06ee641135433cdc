"""``lens calibrate fit``: the reading model of one served model, fitted on labelled readings.

The baseline is a logistic fit of the window label on log(1 + prior rank): what the belief already holds. The
reading model adds the reading's features (``lens.loop._grading``) with the baseline's log-odds as an offset and an
L2 penalty on what they add (their coefficients and the constant shift), fitted twice: with the log-probability
score and without it (an endpoint that returns none). The penalty is the one with the lowest held-out log loss
(cross-validation by question, whole questions per fold), so a reading that carries no evidence beyond the rank
gets a likelihood ratio near 1 and one that does keeps it. Reported, cross-validated by question with the
penalty chosen inside each training fold (nested): log loss and AUC of the baseline and the model, the AUC of the
reading's log LR alone and within rank strata, Brier scores, a reliability table, and LR+ / LR− at the operating
points log LR ≥ +0.5 / ≤ −0.5; the fit on every row gives the preset block ``[loop.reading_model."<model>"]``.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from harness.calibrate.user_config import reading_model_toml
from lens import LensError
from lens.parts import LOGPROB_FEATURES, READING_FEATURES, ReadingModel

__all__ = ["L2_GRID", "logistic_fit", "auc", "fit_readings", "preset_block"]

L2_GRID = (0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1000.0)
OPERATING_POINTS = (0.5, -0.5)  # log LR at or above / at or below which a reading counts as positive / negative


def logistic_fit(X, y, l2: float = 1.0, iters: int = 50, *, offset=None, penalize_intercept: bool = False):
    """L2-penalised logistic regression by Newton steps: logit P(y) = ``offset`` + X·w + b. Returns (w, b)."""
    X = np.asarray(X, dtype=float).reshape(len(y), -1)
    y = np.asarray(y, dtype=float)
    n, d = X.shape
    off = np.zeros(n) if offset is None else np.asarray(offset, dtype=float)
    A = np.hstack([X, np.ones((n, 1))])
    w = np.zeros(d + 1)
    pen = np.full(d + 1, l2)
    pen[-1] = l2 if penalize_intercept else 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(off + A @ w, -30, 30)))
        g = A.T @ (p - y) + pen * w
        H = (A * (p * (1 - p))[:, None]).T @ A + np.diag(pen) + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(H, g)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w[:-1].tolist(), float(w[-1])


def auc(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """Area under the ROC curve (Mann–Whitney, ties counted half); None without both classes."""
    pos = sum(1 for y in labels if y)
    neg = len(labels) - pos
    if not pos or not neg:
        return None
    order = sorted(zip(scores, labels))
    rank_sum, i = 0.0, 0
    while i < len(order):
        j = i
        while j < len(order) and order[j][0] == order[i][0]:
            j += 1
        rank_sum += sum(1 for k in range(i, j) if order[k][1]) * (i + j + 1) / 2
        i = j
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


@dataclass
class _Fit:
    model: ReadingModel
    l2: float


def _fit(readings: list[dict], l2: float) -> _Fit:
    """The baseline and both reading models on ``readings`` with penalty ``l2`` (module docstring)."""
    y = [r["label"] for r in readings]
    (base_coef,), base_b = logistic_fit([[r["features"]["log_rank"]] for r in readings], y, 1.0)

    def beyond_rank(rows: list[dict], names: list[str]) -> tuple[list[float], float]:
        extra = [f for f in names if f != "log_rank"]
        offset = [base_b + base_coef * r["features"]["log_rank"] for r in rows]
        X = [[r["features"].get(f, 0.0) for f in extra] for r in rows]
        w, w0 = logistic_fit(X, [r["label"] for r in rows], l2, offset=offset, penalize_intercept=True)
        by = dict(zip(extra, w))
        return [base_coef if f == "log_rank" else by[f] for f in names], base_b + w0

    names = list(READING_FEATURES)
    with_lp = [r for r in readings if r["logprobs"]]
    coef, b = beyond_rank(with_lp or readings, names)
    nolp = [f for f in names if f not in LOGPROB_FEATURES]
    coef_n, b_n = beyond_rank(readings, nolp)
    model = ReadingModel(
        features=names,
        coef=coef,
        intercept=b,
        coef_no_logprob=coef_n,
        intercept_no_logprob=b_n,
        base_coef=base_coef,
        base_intercept=base_b,
        n=len(readings),
        outcome_scores=outcome_scores(readings),
        value_precision=value_precision(readings),
    )
    return _Fit(model, l2)


def outcome_scores(readings: list[dict]) -> list[float] | None:
    """The median log-probability score of the readings that named a sentence and of those that named none
    (what a reading's two outcomes are worth before it is made); None without scores of both."""
    found = sorted(r["features"]["score"] for r in readings if r["logprobs"] and r["features"].get("found"))
    none = sorted(r["features"]["score"] for r in readings if r["logprobs"] and not r["features"].get("found"))
    if not found or not none:
        return None
    return [round(statistics.median(found), 4), round(statistics.median(none), 4)]


def value_precision(readings: list[dict]) -> float | None:
    """The share of the found readings of a question's final fact (a bridge's answer, not yes/no: the readings
    whose ``value_ok`` is known) that copied the gold answer; None when no such reading exists."""
    known = [r["value_ok"] for r in readings if r.get("value_ok") is not None]
    return round(sum(known) / len(known), 4) if known else None


def _folds(ids: list[str], k: int) -> dict[str, int]:
    order = sorted(set(ids), key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    return {q: n % k for n, q in enumerate(order)}


def _log_loss(model: ReadingModel, readings: list[dict]) -> float:
    s = 0.0
    for r in readings:
        p = min(max(_sigmoid(model.logit(r["features"], logprobs=r["logprobs"])), 1e-9), 1 - 1e-9)
        s -= math.log(p if r["label"] else 1 - p)
    return s / max(1, len(readings))


def _choose(rows: list[dict], folds: int) -> _Fit:
    """The fit on ``rows`` with the penalty of lowest held-out log loss (cross-validation by question)."""
    readings = [r for row in rows for r in row["readings"]]
    fold = _folds([row["id"] for row in rows], folds)
    loss = dict.fromkeys(L2_GRID, 0.0)
    for k in range(folds):
        train = [r for row in rows if fold[row["id"]] != k for r in row["readings"]]
        test = [r for row in rows if fold[row["id"]] == k for r in row["readings"]]
        if not test or len({r["label"] for r in train}) < 2:
            continue
        for lam in L2_GRID:
            loss[lam] += _log_loss(_fit(train, lam).model, test) * len(test)
    best = min(L2_GRID, key=lambda lam: (loss[lam], -lam))  # a tie goes to the larger penalty
    return _fit(readings, best)


def fit_readings(rows: list[dict], *, folds: int = 5) -> dict:
    """Fit and cross-validate the reading model on calibration rows; returns the report (module docstring)."""
    if folds < 2:
        raise LensError(f"cross-validation needs 2 or more folds (got {folds})")
    readings = [r for row in rows for r in row["readings"]]
    if len({r["label"] for r in readings}) < 2:
        raise LensError("calibration rows need both positive and negative readings to fit")
    fold = _folds([row["id"] for row in rows], folds)
    held: list[tuple[float, float, float, int, int]] = []  # (base p, model p, log LR, label, rank)
    chosen = []
    for k in range(folds):
        train_rows = [row for row in rows if fold[row["id"]] != k]
        test = [r for row in rows if fold[row["id"]] == k for r in row["readings"]]
        if not test or len({r["label"] for row in train_rows for r in row["readings"]}) < 2:
            continue
        m = _choose(train_rows, folds)
        chosen.append(m.l2)
        for r in test:
            base = m.model.base_logit(r["features"])
            lr = m.model.log_lr(r["features"], logprobs=r["logprobs"])
            held.append((_sigmoid(base), _sigmoid(base + lr), lr, r["label"], _rank(r)))
    if not held:
        raise LensError(
            f"{len(rows)} question(s) cannot be cross-validated in {folds} folds: no fold has a held-out reading "
            "and both labels in the other folds (fit on more questions)"
        )
    labels = [h[3] for h in held]
    report = {
        "questions": len(rows),
        "readings": len(readings),
        "positives": sum(r["label"] for r in readings),
        "found": sum(bool(r["found"]) for r in readings),
        "with_logprobs": sum(bool(r["logprobs"]) for r in readings),
        "folds": folds,
        "l2_chosen_in_folds": chosen,
        "cross_validated": _metrics(held, labels),
    }
    full = _choose(rows, folds)
    model = full.model
    report.update(
        model=rows[0].get("model"),
        l2=full.l2,
        reading_model=_rounded(model.model_copy(update={"auc": report["cross_validated"]["model_auc"]})),
        max_abs_log_lr=round(model.max_abs_log_lr(), 3),
        citations=_citations(readings),
        question_ids=sorted({row["id"] for row in rows}),
    )
    return report


def _rank(r: dict) -> int:
    return int(round(math.expm1(r["features"]["log_rank"])))


def _metrics(held, labels) -> dict:
    n = len(held)
    ll = {
        name: -sum(math.log(min(max(h[i] if h[3] else 1 - h[i], 1e-9), 1)) for h in held) / n
        for name, i in (("base", 0), ("model", 1))
    }
    strata = {}
    for name, lo, hi in (("rank 0", 0, 0), ("rank 1-2", 1, 2), ("rank 3+", 3, 10**9)):
        sub = [h for h in held if lo <= h[4] <= hi]
        a = auc([h[2] for h in sub], [h[3] for h in sub])
        strata[name] = {"n": len(sub), "lr_auc": None if a is None else round(a, 4)}
    pos = [h for h in held if h[3]]
    neg = [h for h in held if not h[3]]
    up, down = OPERATING_POINTS
    tpr_up, fpr_up = (sum(h[2] >= up for h in g) / max(1, len(g)) for g in (pos, neg))
    tpr_dn, fpr_dn = (sum(h[2] <= down for h in g) / max(1, len(g)) for g in (pos, neg))
    return {
        "n": n,
        "log_loss": {k: round(v, 4) for k, v in ll.items()},
        "brier": {name: round(sum((h[i] - h[3]) ** 2 for h in held) / n, 4) for name, i in (("base", 0), ("model", 1))},
        "base_auc": _r(auc([h[0] for h in held], labels)),
        "model_auc": _r(auc([h[1] for h in held], labels)),
        "lr_auc": _r(auc([h[2] for h in held], labels)),
        "lr_auc_by_rank": strata,
        "operating_points": {
            f"log LR >= {up}": {"tpr": round(tpr_up, 3), "fpr": round(fpr_up, 3), "LR": _ratio(tpr_up, fpr_up)},
            f"log LR <= {down}": {"tpr": round(tpr_dn, 3), "fpr": round(fpr_dn, 3), "LR": _ratio(tpr_dn, fpr_dn)},
        },
        "reliability": _reliability([h[1] for h in held], labels),
    }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _ratio(a: float, b: float) -> float | None:
    return None if b == 0 else round(a / b, 2)


def _reliability(probs: Sequence[float], labels: Sequence[int], bins: int = 5) -> list[dict]:
    out = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, p in enumerate(probs) if lo <= p < hi or (b == bins - 1 and p == 1.0)]
        out.append(
            {
                "bin": f"{lo:.1f}-{hi:.1f}",
                "n": len(idx),
                "predicted": round(sum(probs[i] for i in idx) / len(idx), 3) if idx else None,
                "observed": round(sum(labels[i] for i in idx) / len(idx), 3) if idx else None,
            }
        )
    return out


def _citations(readings: list[dict]) -> dict:
    """How often a reading that named a sentence in an evidence window named a supporting sentence."""
    named = [r for r in readings if r["found"] and r["label"]]
    return {"named_in_evidence_windows": len(named), "supporting": sum(r.get("sentence_label", 0) for r in named)}


def _rounded(model: ReadingModel) -> dict:
    d = model.model_dump()
    for key in ("coef", "coef_no_logprob"):
        d[key] = [round(c, 4) for c in d[key]]
    for key in ("intercept", "intercept_no_logprob", "base_coef", "base_intercept"):
        d[key] = round(d[key], 4)
    return d


def preset_block(report: dict) -> str:
    """The TOML table a preset or user config holds for the model: ``[loop.reading_model."<model>"]``."""
    return reading_model_toml(str(report["model"]), report["reading_model"])
