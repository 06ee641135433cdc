"""Calibration of the observation model on labelled HotpotQA questions: ``lens calibrate run`` and ``fit``.

**run** answers nothing: for each question it runs the loop exactly as ``lens ask`` does (the agent's
decomposition, the prior over the article pool, the production observation prompt, ``max_tokens`` and
verification, the configured observation model) for at most ``--rounds`` rounds — without the futility stop,
since a sensor calibrated as too weak to certify must still be read to be re-measured — and records every *reading*
(one requirement × one window judged, with its features — ``lens._grading``) together with a label. Labels
are used only here, to count; they never reach a call. One row per question is appended to
``OUT/readings.jsonl`` as it completes, so a crashed run resumes where it stopped (questions already in the
file are skipped).

**Labels, at the requirement level, from HotpotQA's sentence-level supporting facts (title, sent_id).** Each
requirement is assigned the gold articles of its hop:

1. the gold articles whose title the requirement's wording (as asked, bridge value filled in) names;
2. else, in a bridge question, a requirement that depends on another gets the *second-hop* article and one
   that others depend on gets the *first-hop* article, where the second-hop article is the gold article whose
   title the other gold article's supporting sentences name (the bridge entity); when that is ambiguous
   (both or neither name the other), every gold article;
3. else every gold article (a single requirement asks the whole question).

A reading with a verified finding is **positive** when one of the sentences its quote was verified in
overlaps a gold supporting sentence of one of those articles (normalised text, one contained in the other)
and — for the final requirement of a bridge question whose answer is not yes/no — when its value equals the
gold answer under the official normalisation (lowercase, no punctuation or articles). A verified quote of a
non-supporting sentence is a negative, and so is a finding for a hop it was not asked about. A reading
with nothing found is positive (a miss) when the window holds such a gold sentence. Unasked hops are never
positives: only the requirements the loop asked about have readings.

**fit** fits, on the rows of one or more runs, the graded model (logistic regression by Newton steps, with and
without the log-probability feature: the rank-only baseline as an offset plus an L2-penalised term for what a
reading adds, the penalty chosen by cross-validated log loss with the one-standard-error rule, so a reading that
carries no evidence beyond the rank gets a likelihood ratio near 1), the rank-only baseline and the single (tpr, fpr) pair, and
reports, cross-validated by question (folds of whole questions), the AUC, Brier score and a reliability table
of both models' posteriors (the baseline's rank odds times each model's likelihood ratio), the AUC of each
model's log likelihood ratio alone (what a reading adds beyond the prior rank), plus the
certification outcome of the rows a run recorded (share certified, precision of certified values). It prints
the preset block (``[loop.reliability."<model>"]`` and its ``graded`` table). Calibrate on questions outside
every evaluation sample (``--exclude``, ``--require-gold-in-pool``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import string
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from lens._errors import LensError

__all__ = [
    "calibrate",
    "calibrate_command",
    "fit_command",
    "fit_readings",
    "hop_articles",
    "SupportingFacts",
    "label_readings",
    "logistic_fit",
    "auc",
]

READINGS = "readings.jsonl"
ROW_FORMAT = "lens-calibration/2"


# ---------------------------------------------------------------------------------------------------- labels
def _norm_answer(s: str) -> str:
    """HotpotQA's official answer normalisation."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def _names(text: str, title: str) -> bool:
    """Whether ``text`` names the article ``title`` (its words, without a trailing "(film)"-like part)."""
    from lens._observation import normalise
    from lens._terms import STOPWORDS, base_title, tokens

    title = base_title(title)
    words = [w for w in tokens(title) if w not in STOPWORDS] or tokens(title)
    have = set(tokens(text))
    return bool(words) and (all(w in have for w in words) or f" {normalise(title)} " in f" {normalise(text)} ")


def hop_articles(record: dict, articles: dict[str, list[str]]) -> dict[str, Any]:
    """The question's gold articles split into hops: ``{"gold": {title: [sentences]}, "first": [...],
    "second": [...]}`` (first/second empty when the hops cannot be told apart; see the module docstring)."""
    gold: dict[str, list[str]] = {}
    for title, sid in record["supporting_facts"]:
        sents = articles.get(title)
        if sents is None or not isinstance(sid, int) or not 0 <= sid < len(sents):
            continue
        gold.setdefault(title, []).append(sents[sid])
    first: list[str] = []
    second: list[str] = []
    if record.get("type") == "bridge" and len(gold) == 2:
        a, b = list(gold)
        a_names_b = any(_names(s, b) for s in gold[a])
        b_names_a = any(_names(s, a) for s in gold[b])
        if a_names_b != b_names_a:
            first, second = ([a], [b]) if a_names_b else ([b], [a])
    return {"gold": gold, "first": first, "second": second}


def _requirement_titles(req: dict, text: str, hops: dict[str, Any], dependents: set[str]) -> list[str]:
    named = [t for t in hops["gold"] if _names(text, t)]
    if named:
        return named
    if hops["second"] and req.get("depends_on"):
        return hops["second"]
    if hops["first"] and req["id"] in dependents:
        return hops["first"]
    return list(hops["gold"])


def _overlaps(a: str, b: str) -> bool:
    from lens._observation import normalise

    na, nb = normalise(a), normalise(b)
    return bool(na) and bool(nb) and (f" {na} " in f" {nb} " or f" {nb} " in f" {na} ")


class SupportingFacts:
    """One HotpotQA question's sentence-level supporting facts, split into hops, as the calibration labels
    read them (module docstring): which gold sentences a requirement asks for, whether a window holds one,
    whether a quote is one."""

    def __init__(self, record: dict, articles: dict[str, list[str]], requirements: list[dict]):
        self.record = record
        self.hops = hop_articles(record, articles)
        self.requirements = {r["id"]: r for r in requirements}
        self.dependents = {r["depends_on"] for r in requirements if r.get("depends_on")}
        self.final = requirements[-1]["id"] if requirements else None
        self.answer = _norm_answer(str(record.get("answer", "")))
        self.value_rule = record.get("type") == "bridge" and self.answer not in {"yes", "no"}

    def titles(self, rid: str, text: str) -> list[str]:
        """The gold articles of requirement ``rid`` as asked (``text``: its wording, bridge value filled in)."""
        return _requirement_titles(self.requirements.get(rid, {"id": rid}), text, self.hops, self.dependents)

    def gold_sentences(self, rid: str, text: str, title: str) -> list[str]:
        """The supporting sentences of ``rid``'s hop in the article ``title`` (none for another article)."""
        return [s for t in self.titles(rid, text) if _title_eq(t, title) for s in self.hops["gold"][t]]

    def holds(self, rid: str, text: str, title: str, sentences: Iterable[str]) -> bool:
        """Whether any of ``sentences`` (of the article ``title``) is a supporting sentence of ``rid``'s hop."""
        gold = self.gold_sentences(rid, text, title)
        return any(_overlaps(s, g) for s in sentences for g in gold)

    def value_ok(self, rid: str, value: str) -> bool:
        """The final requirement of a bridge question (answer not yes/no) must give the gold answer."""
        return not (self.value_rule and rid == self.final) or _norm_answer(value) == self.answer


def label_readings(record: dict, requirements: list[dict], readings: list[dict], windows: dict[str, dict], articles):
    """Label each reading (dict with ``requirement_id``, ``requirement``, ``window``, ``found``, ``value``,
    ``sentences``) in place: ``label`` 0/1 and ``why``. ``windows`` maps window keys to ``{"title",
    "sentences": {id: text}}``."""
    facts = SupportingFacts(record, articles, requirements)
    for rd in readings:
        rid, text, win = rd["requirement_id"], rd["requirement"], windows[rd["window"]]
        if not rd["found"]:
            holds = facts.holds(rid, text, win["title"], win["sentences"].values())
            rd["label"], rd["why"] = int(holds), "miss: window holds the fact" if holds else "nothing here, none there"
            continue
        quoted = [win["sentences"].get(str(i), "") for i in rd["sentences"]]
        if not facts.holds(rid, text, win["title"], quoted):
            rd["label"], rd["why"] = 0, "quote not in a supporting sentence of this hop"
        elif not facts.value_ok(rid, rd.get("value", "")):
            rd["label"], rd["why"] = 0, "final value is not the gold answer"
        else:
            rd["label"], rd["why"] = 1, "quote in a supporting sentence of this hop"
    return readings


def _title_eq(a: str, b: str) -> bool:
    from lens._terms import title_key

    return title_key(a) == title_key(b)


# ---------------------------------------------------------------------------------------------------- run
def _pool(articles_path: str):
    """A CorpusView over the article pool, one document per article (title line, one sentence per line), and
    the articles' sentence lists by title."""
    from lens._corpus import CorpusScan, Document
    from lens._view import CorpusView

    docs, sentences = [], {}
    with open(articles_path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                a = json.loads(line)
                title = a["title"]
                sents = a.get("sentences") or a.get("text")
            except (json.JSONDecodeError, KeyError) as exc:
                raise LensError(f"{articles_path}: line {n}: not an article record ({exc})") from None
            if isinstance(sents, str):
                sents = [sents]
            sentences[title] = list(sents)
            text = title + "\n" + "\n".join(s.strip() for s in sents)
            docs.append(
                Document(
                    doc_id=title,
                    path=title,
                    title=title,
                    text=text,
                    sha256=hashlib.sha256(text.encode()).hexdigest(),
                )
            )
    return CorpusView(CorpusScan(root=Path(articles_path), documents=docs, files=len(docs))), sentences


def done_ids(out_dir: str | os.PathLike[str]) -> set[str]:
    """Question ids already in ``OUT/readings.jsonl`` (a torn last line is ignored)."""
    path = Path(out_dir) / READINGS
    ids: set[str] = set()
    if not path.exists():
        return ids
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            ids.add(json.loads(line)["id"])
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return ids


def calibrate(config, questions: list[dict], articles_path: str, out_dir: str, *, rounds: int = 3, progress=None):
    """Run the loop on each question not yet in ``out_dir`` and append its labelled readings; returns the
    number of rows written now."""
    from lens._beliefs import stopping_threshold
    from lens._budget import Budget
    from lens._cost import CostMeter
    from lens._files import append_lines
    from lens._grading import observation_model
    from lens._llm import LLMError, LLMUnavailableError, open_client
    from lens._loop import Loop, LoopState
    from lens._prior import Prior
    from lens._requirements import decompose

    cfg = config.model_copy(deep=True)
    cfg.budget.max_rounds = min(rounds, cfg.budget.max_rounds)
    view, articles = _pool(articles_path)
    prior = Prior(view, cfg.prior)
    client = open_client(cfg)
    model = observation_model(cfg)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    skip = done_ids(out)
    written = 0
    for qi, q in enumerate(questions):
        if q["_id"] in skip:
            continue
        t0 = time.monotonic()
        meter = CostMeter()
        budget = Budget(cfg.budget, meter)

        def call(messages, schema, max_tokens):
            try:
                return client.chat_json(messages, schema, max_tokens=max_tokens, meter=meter).parsed
            except LLMUnavailableError:
                raise
            except LLMError:
                return None

        dec = decompose(q["question"], call)
        state = LoopState(question=q["question"], decomposition=dec, view=view, prior=prior)
        loop = Loop(state, client=client, config=cfg, budget=budget, meter=meter, evidence=model)
        loop.seed()
        stop = loop.run(futility=False)  # measure the sensor even where its calibration says it cannot certify
        reqs = [r.to_dict() for r in dec.requirements]
        readings = [
            {
                "requirement_id": r.requirement_id,
                "requirement": r.requirement,
                "window": r.window_key,
                "round": r.round,
                "found": r.found,
                "value": r.value,
                "quote": r.quote,
                "sentences": list(r.sentences),
                "features": dict(r.features),
                "logprobs": r.logprobs,
                "log_lr": r.log_lr,
            }
            for r in state.readings
        ]
        windows = {}
        for rd in readings:
            w = state.windows[rd["window"]]
            doc = view.docs[w.doc_index]
            windows[rd["window"]] = {"title": doc.title, "sentences": {str(i): t for i, t in w.sentences(doc)}}
        label_readings(q, reqs, readings, windows, articles)
        threshold = stopping_threshold(len(state.trace), dec.intent, cfg.loop)
        certified = loop.certified()
        outcome = []
        for r in dec.requirements:
            b = state.beliefs[r.id]
            fav = b.favoured()
            fav_labels = [rd["label"] for rd in readings if rd["requirement_id"] == r.id and rd["window"] == fav]
            fav_found = [
                rd["label"] for rd in readings if rd["requirement_id"] == r.id and rd["window"] == fav and rd["found"]
            ]
            outcome.append(
                {
                    "id": r.id,
                    "certified": r.id in certified,
                    "glr": round(b.glr(), 3),
                    "posterior": round(b.posterior().get(fav, 0.0), 4) if fav else 0.0,
                    "value": state.values.get(r.id, ""),
                    "favoured_label": max(fav_found) if fav_found else (max(fav_labels) if fav_labels else None),
                }
            )
        row = {
            "format": ROW_FORMAT,
            "id": q["_id"],
            "type": q.get("type"),
            "question": q["question"],
            "model": client.model,
            "observation_model": model.name,
            "config_hash": cfg.canonical_hash(),
            "requirements": reqs,
            "outcome": outcome,
            "stop": stop,
            "rounds": len(state.trace),
            "threshold": round(threshold, 3),
            "readings": readings,
            # claims the verification discarded, per round (why a window read as "nothing here")
            "rejected": [{"round": t.round, **r} for t in state.trace for r in t.observation.get("rejected", [])],
            "windows": {k: v["title"] for k, v in windows.items()},
            "cost": meter.cost.to_dict(),
            "seconds": round(time.monotonic() - t0, 1),
        }
        append_lines(out / READINGS, [json.dumps(row, ensure_ascii=False)])
        written += 1
        if progress:
            progress(qi + 1, len(questions), row)
    return written


# ---------------------------------------------------------------------------------------------------- fit
def logistic_fit(X, y, l2: float = 1.0, iters: int = 50, *, offset=None, penalize_intercept: bool = False):
    """L2-penalised logistic regression by Newton steps: logit P(y) = ``offset`` + X·w + b. The intercept is not
    penalised unless ``penalize_intercept`` (a model of the evidence *beyond* an offset shrinks its constant
    shift too). Returns (coefficients, intercept)."""
    import numpy as np

    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n, d = X.shape
    off = np.zeros(n) if offset is None else np.asarray(offset, dtype=float)
    A = np.hstack([X, np.ones((n, 1))])
    w = np.zeros(d + 1)
    pen = np.full(d + 1, l2)
    pen[-1] = l2 if penalize_intercept else 0.0
    for _ in range(iters):
        z = off + A @ w
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
        g = A.T @ (p - y) + pen * w
        H = (A * (p * (1 - p))[:, None]).T @ A + np.diag(pen) + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(H, g)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w[:-1].tolist(), float(w[-1])


def auc(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """Area under the ROC curve (Mann–Whitney, ties counted half); None without both classes."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    if not pos or not neg:
        return None
    order = sorted((s, y) for s, y in zip(scores, labels))
    # rank sum with average ranks for ties
    ranks, i = {}, 0
    while i < len(order):
        j = i
        while j < len(order) and order[j][0] == order[i][0]:
            j += 1
        ranks[order[i][0]] = (i + j + 1) / 2
        i = j
    r_pos = sum(ranks[s] for s in pos)
    return (r_pos - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def _reliability(probs: Sequence[float], labels: Sequence[int], bins: int = 5) -> list[dict]:
    out = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, p in enumerate(probs) if lo <= p < hi or (b == bins - 1 and p == 1.0)]
        if not idx:
            out.append({"bin": f"{lo:.1f}-{hi:.1f}", "n": 0, "predicted": None, "observed": None})
            continue
        out.append(
            {
                "bin": f"{lo:.1f}-{hi:.1f}",
                "n": len(idx),
                "predicted": round(sum(probs[i] for i in idx) / len(idx), 3),
                "observed": round(sum(labels[i] for i in idx) / len(idx), 3),
            }
        )
    return out


# penalties the fit chooses from by cross-validated log loss (``l2=None``)
L2_GRID = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)


class _Fitted:
    """One fit on a set of readings: the graded model with its rank-only baseline (a ``GradedEvidence``,
    unrounded) and the single rates (an ``OracleReliability``) — the loop's own scoring code scores them.

    The baseline is the logistic fit of the label on the window's log prior rank. The graded model is that
    baseline plus what a reading adds: logit = base logit + w·features + w0, fitted with the base logit as an
    offset and an L2 penalty ``l2`` on w *and* w0, so a reading's log likelihood ratio (w·features + w0) shrinks
    to 0 — the belief stays at the prior — unless the readings show that it carries evidence. Stored in the
    preset's form: ``log_rank``'s coefficient and the intercept include the baseline's."""

    def __init__(self, readings: list[dict], l2: float):
        from lens._config import GradedEvidence, OracleReliability
        from lens._grading import FEATURES, LOGPROB_FEATURES

        y = [r["label"] for r in readings]
        (base_coef,), base_intercept = logistic_fit([[r["features"]["log_rank"]] for r in readings], y, 1.0)

        def beyond_rank(rows: list[dict], names: list[str]) -> tuple[list[float], float]:
            extra = [f for f in names if f != "log_rank"]
            offset = [base_intercept + base_coef * r["features"]["log_rank"] for r in rows]
            w, w0 = logistic_fit(
                [[r["features"].get(f, 0.0) for f in extra] for r in rows],
                [r["label"] for r in rows],
                l2,
                offset=offset,
                penalize_intercept=True,
            )
            by_name = dict(zip(extra, w))
            return [base_coef if f == "log_rank" else by_name[f] for f in names], base_intercept + w0

        nolp = [f for f in FEATURES if f not in LOGPROB_FEATURES]
        lp = [r for r in readings if r["logprobs"]]
        coef, intercept = beyond_rank(lp or readings, list(FEATURES))
        coef_nolp, intercept_nolp = beyond_rank(readings, nolp)
        self.l2 = l2
        self.model = GradedEvidence(
            features=list(FEATURES),
            coef=coef,
            intercept=intercept,
            coef_no_logprob=coef_nolp,
            intercept_no_logprob=intercept_nolp,
            base_coef=base_coef,
            base_intercept=base_intercept,
        )
        pos = [r for r in readings if r["label"]]
        neg = [r for r in readings if not r["label"]]
        # Beta(1, 1)-smoothed single rates at the requirement level
        self.rates = OracleReliability(
            tpr=(sum(r["found"] for r in pos) + 1) / (len(pos) + 2),
            fpr=(sum(r["found"] for r in neg) + 1) / (len(neg) + 2),
            n=len(readings),
        )

    @classmethod
    def choose(cls, rows: list[dict], l2: float | None, folds: int) -> "_Fitted":
        """The fit on ``rows``' readings with penalty ``l2``; with ``None``, the penalty of ``L2_GRID`` chosen by
        cross-validation by question within ``rows``: each question's mean log loss of the graded model, and
        the *largest* penalty whose loss exceeds the best penalty's by at most one standard error of the
        paired per-question difference (the one-standard-error rule: with readings this noisy the loss curve
        is flat, and the simpler model — beliefs moved less — wins a tie)."""
        readings = [r for row in rows for r in row["readings"]]
        if l2 is not None:
            return cls(readings, l2)
        fold_of = _folds(rows, folds)
        losses: dict[float, dict[str, float]] = {}
        for lam in L2_GRID:
            per_q: dict[str, float] = {}
            for k in range(folds):
                train = [r for row in rows if fold_of[row["id"]] != k for r in row["readings"]]
                if len({r["label"] for r in train}) < 2:
                    continue
                m = cls(train, lam)
                for row in rows:
                    if fold_of[row["id"]] != k or not row["readings"]:
                        continue
                    loss = 0.0
                    for r in row["readings"]:
                        p = min(max(_sigmoid(m.graded_logit(r)), 1e-9), 1 - 1e-9)
                        loss -= math.log(p if r["label"] else 1 - p)
                    per_q[row["id"]] = loss / len(row["readings"])
            losses[lam] = per_q
        qids = sorted(set.intersection(*(set(v) for v in losses.values()))) if losses else []
        if len(qids) < 2:
            return cls(readings, L2_GRID[0])
        mean = {lam: sum(v[q] for q in qids) / len(qids) for lam, v in losses.items()}
        best = min(L2_GRID, key=lambda lam: (mean[lam], lam))
        chosen = best
        for lam in L2_GRID:
            if lam <= best:
                continue
            d = [losses[lam][q] - losses[best][q] for q in qids]
            mu = sum(d) / len(d)
            se = math.sqrt(sum((x - mu) ** 2 for x in d) / (len(d) - 1) / len(d))
            if mu <= se:
                chosen = lam
        return cls(readings, chosen)

    def base_logit(self, r: dict) -> float:
        return self.model.base_logit(r["features"])

    def graded_logit(self, r: dict) -> float:
        return self.model.logit(r["features"], logprobs=bool(r["logprobs"]))

    def single_logit(self, r: dict) -> float:
        return self.base_logit(r) + self.rates.log_lr(bool(r["found"]))

    def graded(self, n: int, auc_value: float | None) -> dict:
        g = self.model
        return {
            "features": g.features,
            "coef": [round(c, 4) for c in g.coef],
            "intercept": round(g.intercept, 4),
            "coef_no_logprob": [round(c, 4) for c in g.coef_no_logprob],
            "intercept_no_logprob": round(g.intercept_no_logprob, 4),
            "base_coef": round(g.base_coef, 4),
            "base_intercept": round(g.base_intercept, 4),
            "max_log_lr": g.max_log_lr,
            "n": n,
            "auc": None if auc_value is None else round(auc_value, 4),
        }


def _folds(rows: list[dict], folds: int) -> dict[str, int]:
    """Question id → fold (whole questions per fold, assigned in a fixed hash order)."""
    ids = sorted({row["id"] for row in rows}, key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    return {qid: k % folds for k, qid in enumerate(ids)}


def fit_readings(rows: list[dict], *, folds: int = 5, l2: float | None = None) -> dict:
    """Fit and cross-validate the graded and single-rate models on calibration rows (see the module
    docstring); returns the report with the preset's parameters. ``l2=None`` chooses the graded model's penalty
    by cross-validated log loss — inside each outer training fold for the reported metrics (nested), and on
    all rows for the preset."""
    readings = [r for row in rows for r in row["readings"]]
    if len({r["label"] for r in readings}) < 2:
        raise LensError("calibration rows need both positive and negative readings to fit")
    ids = sorted({row["id"] for row in rows}, key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    fold_of = _folds(rows, folds)
    held: dict[str, list[float]] = {"graded": [], "single": [], "base": []}
    # the observation's own evidence (log LR = full − rank-only log-odds): its discrimination beyond the rank
    lr: dict[str, list[float]] = {"graded": [], "single": []}
    labels: list[int] = []
    chosen: list[float] = []
    for k in range(folds):
        train_rows = [row for row in rows if fold_of[row["id"]] != k]
        train = [r for row in train_rows for r in row["readings"]]
        test = [r for row in rows if fold_of[row["id"]] == k for r in row["readings"]]
        if not test or len({r["label"] for r in train}) < 2:
            continue
        m = _Fitted.choose(train_rows, l2, folds)
        chosen.append(m.l2)
        for r in test:
            held["graded"].append(_sigmoid(m.graded_logit(r)))
            held["single"].append(_sigmoid(m.single_logit(r)))
            held["base"].append(_sigmoid(m.base_logit(r)))
            lr["graded"].append(m.graded_logit(r) - m.base_logit(r))
            lr["single"].append(m.single_logit(r) - m.base_logit(r))
            labels.append(r["label"])
    metrics = {}
    for name, probs in held.items():
        metrics[name] = {
            "auc": None if (a := auc(probs, labels)) is None else round(a, 4),
            "brier": round(sum((p - y) ** 2 for p, y in zip(probs, labels)) / len(labels), 4) if labels else None,
            "reliability": _reliability(probs, labels),
        }
        if name in lr:
            metrics[name]["lr_auc"] = None if (a := auc(lr[name], labels)) is None else round(a, 4)
    full = _Fitted.choose(rows, l2, folds)
    outcomes = [(row["observation_model"], o) for row in rows for o in row.get("outcome", [])]
    certification = {}
    for name in sorted({n for n, _ in outcomes}):
        mine = [o for n, o in outcomes if n == name]
        cert = [o for o in mine if o["certified"]]
        right = [o for o in cert if o.get("favoured_label") == 1]
        certification[name] = {
            "requirements": len(mine),
            "certified": len(cert),
            "certified_share": round(len(cert) / len(mine), 4) if mine else None,
            "certified_precision": round(len(right) / len(cert), 4) if cert else None,
        }
    model = rows[0].get("model")
    return {
        "model": model,
        "questions": len(rows),
        "readings": len(readings),
        "positives": sum(r["label"] for r in readings),
        "found": sum(r["found"] for r in readings),
        "with_logprobs": sum(bool(r["logprobs"]) for r in readings),
        "folds": folds,
        "l2": full.l2,
        "l2_chosen_in_folds": chosen,
        "cross_validated": metrics,
        "certification": certification,
        "single_rate": {"tpr": round(full.rates.tpr, 4), "fpr": round(full.rates.fpr, 4), "n": len(readings)},
        "graded": full.graded(len(readings), metrics["graded"]["auc"]),
        "question_ids": ids,
    }


def _read_rows(paths: Iterable[str]) -> list[dict]:
    rows, seen = [], set()
    for p in paths:
        path = Path(p)
        if path.is_dir():
            path = path / READINGS
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise LensError(f"{path}: cannot read calibration rows ({exc.strerror or exc})") from None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                if n == len(lines):
                    continue  # a torn last line from a crash
                raise LensError(f"{path}:{n}: malformed JSON ({exc.msg})") from None
            for key in ("id", "readings", "observation_model"):
                if key not in row:
                    raise LensError(f"{path}:{n}: field {key!r} missing")
            if row["id"] not in seen:
                seen.add(row["id"])
                rows.append(row)
    return rows


def _preset_block(report: dict) -> str:
    s, g = report["single_rate"], report["graded"]
    lines = [
        f'[loop.reliability."{report["model"]}"]',
        f"tpr = {s['tpr']}",
        f"fpr = {s['fpr']}",
        f"n = {s['n']}",
        "",
        f'[loop.reliability."{report["model"]}".graded]',
    ]
    for key, value in g.items():
        lines.append(f"{key} = {json.dumps(value)}" if value is not None else f"# {key}: none")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------- CLI
def _questions(args) -> list[dict]:
    try:
        data = json.loads(Path(args.questions).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise LensError(f"{args.questions}: cannot read questions ({exc})") from None
    if not isinstance(data, list):
        raise LensError(f"{args.questions}: expected a JSON list of questions")
    skip: set[str] = set()
    for path in args.exclude or []:
        try:
            text = Path(path).read_text(encoding="utf-8")
            other = json.loads(text) if path.endswith(".json") else text.split()
        except (OSError, json.JSONDecodeError) as exc:
            raise LensError(f"{path}: cannot read the --exclude file ({exc})") from None
        skip |= {q["_id"] if isinstance(q, dict) else str(q) for q in other}
    for i, q in enumerate(data):
        for key in ("_id", "question", "supporting_facts"):
            if not isinstance(q, dict) or key not in q:
                raise LensError(f"{args.questions}: record {i}: field {key!r} missing")
    chosen = [q for q in data if q["_id"] not in skip]
    if args.require_gold_in_pool:
        from lens._terms import title_key

        with open(args.articles, encoding="utf-8") as fh:
            pool = {title_key(json.loads(line)["title"]) for line in fh if line.strip()}
        chosen = [q for q in chosen if all(title_key(t) in pool for t, _ in q["supporting_facts"])]
    chosen = chosen[args.offset : args.offset + args.limit]
    if not chosen:
        raise LensError("no questions left to calibrate on after --exclude/--offset/--limit")
    return chosen


def calibrate_command(args: argparse.Namespace) -> int:
    from lens._cli import config_from_args

    config = config_from_args(args)
    chosen = _questions(args)

    def progress(i, n, row):
        found = sum(r["found"] for r in row["readings"])
        pos = sum(r["label"] for r in row["readings"])
        cert = sum(o["certified"] for o in row["outcome"])
        print(
            f"  {i}/{n} {row['id']}: {len(row['readings'])} readings, {found} found, {pos} positive, "
            f"{cert}/{len(row['outcome'])} certified, {row['seconds']} s",
            file=sys.stderr,
            flush=True,
        )

    before = len(done_ids(args.out))
    written = calibrate(config, chosen, args.articles, args.out, rounds=args.rounds, progress=progress)
    print(f"{written} questions written now, {before} before; rows in {Path(args.out) / READINGS}")
    return 0


def fit_command(args: argparse.Namespace) -> int:
    rows = _read_rows(args.runs)
    if not rows:
        raise LensError("no calibration rows to fit")
    models = {row.get("model") for row in rows}
    if len(models) > 1:
        raise LensError(f"calibration rows of more than one model: {sorted(map(str, models))}")
    report = fit_readings(rows, folds=args.folds, l2=args.l2)
    report["runs"] = list(args.runs)
    if args.out:
        from lens._files import atomic_write

        data = (json.dumps(report, indent=2) + "\n").encode("utf-8")
        atomic_write(args.out, lambda fh: fh.write(data))
    if args.json:
        json.dump({k: v for k, v in report.items() if k != "question_ids"}, sys.stdout, indent=2)
        print()
        return 0
    cv = report["cross_validated"]
    print(
        f"model {report['model']}: {report['questions']} questions, {report['readings']} readings "
        f"({report['positives']} positive, {report['found']} found, {report['with_logprobs']} with logprobs); "
        f"{report['folds']}-fold cross-validation by question; penalty {report['l2']} "
        f"(chosen in the folds: {report['l2_chosen_in_folds']})"
    )
    for name in ("graded", "single", "base"):
        extra = f"  (AUC of the reading's log LR alone: {cv[name]['lr_auc']})" if "lr_auc" in cv[name] else ""
        print(f"  {name:7s} AUC {cv[name]['auc']}  Brier {cv[name]['brier']}{extra}")
    print("  reliability (bin: n, predicted, observed) — graded | single:")
    for g, s in zip(cv["graded"]["reliability"], cv["single"]["reliability"]):
        print(
            f"    {g['bin']}: {g['n']}, {g['predicted']}, {g['observed']} | {s['n']}, {s['predicted']}, {s['observed']}"
        )
    for name, c in report["certification"].items():
        print(
            f"  rows run with {name}: {c['certified']}/{c['requirements']} requirements certified, "
            f"precision {c['certified_precision']}"
        )
    print("add to the preset:")
    print(_preset_block(report))
    return 0
