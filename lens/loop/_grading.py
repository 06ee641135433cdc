"""Graded readings: the features of one reading and the likelihood ratio it moves a window's belief by.

A reading (``lens.loop._reading``) judges one window for one requirement. Its features (``READING_FEATURES``):
``score`` the clipped logit of P(some sentence states the fact) from the token log-probabilities (only where the
endpoint returns them); ``found`` the oracle named a sentence; ``value`` it gave a value verified in the text;
``subject_window`` the requirement's subject is named in the window; ``log_rank`` log(1 + the rank of the window's
document in the requirement's prior ranking). The served model's :class:`ReadingModel` (calibrated by ``lens
calibrate``, or the conservative ``UNCALIBRATED`` default; :func:`reading_model_for` picks it) turns them into
log LR = logit P(fact | features) − logit P(fact | rank): the evidence the reading adds beyond what the prior
already holds, positive or negative. Its numbers are a config table (``lens._config.ReadingModelParams``, checked
where the config is read); what they do is here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from lens._config import LOGPROB_FEATURES, READING_FEATURES, LensConfig, ReadingModelParams
from lens._terms import content_terms, normalise, tokens
from lens.loop._reading import Judgement

__all__ = [
    "READING_FEATURES",
    "LOGPROB_FEATURES",
    "FEATURE_RANGE",
    "ReadingModel",
    "UNCALIBRATED",
    "reading_model_for",
    "Reading",
    "reading_features",
    "subject_named",
]

# the range each feature can take (score: the clipped logit; log_rank: up to rank 150, beyond any candidate list)
FEATURE_RANGE = dict.fromkeys(READING_FEATURES, (0.0, 1.0)) | {"score": (-6.0, 6.0), "log_rank": (0.0, 5.0)}


class ReadingModel(ReadingModelParams):
    """What a reading is worth (``lens calibrate fit``; ``docs/readings.md``): a logistic model of "the window holds
    the requirement's fact" over a reading's ``features`` (fitted with and without the log-probability score) and
    the rank-only baseline; a reading's log likelihood ratio is the difference of the two log-odds. The numbers are
    its config table's (the parent class), checked the same way."""

    def _terms(self, logprobs: bool) -> tuple[list[str], list[float], float]:
        if logprobs and self.coef:
            return list(self.features), self.coef, self.intercept
        names = [f for f in self.features if f not in LOGPROB_FEATURES]
        return names, self.coef_no_logprob, self.intercept_no_logprob

    def logit(self, features: Mapping[str, float], *, logprobs: bool) -> float:
        """log-odds that the window holds the fact given a reading's features (the model fitted without the
        log-probability score when the reply had none)."""
        names, coef, b = self._terms(logprobs)
        return b + sum(c * features.get(f, 0.0) for f, c in zip(names, coef))

    def base_logit(self, features: Mapping[str, float]) -> float:
        """log-odds from the window's prior rank alone (what the belief already holds)."""
        return self.base_intercept + self.base_coef * features.get("log_rank", 0.0)

    def log_lr(self, features: Mapping[str, float], *, logprobs: bool) -> float:
        """The evidence a reading adds beyond the window's rank, clipped to ±``max_log_lr``."""
        lr = self.logit(features, logprobs=logprobs) - self.base_logit(features)
        return max(-self.max_log_lr, min(self.max_log_lr, lr))

    def max_abs_log_lr(self) -> float:
        """The most one reading can move a window's log weight, either way: the largest |log LR| over the
        feature ranges (an upper bound: the features are not independent), capped at ``max_log_lr``."""
        most = 0.0
        for with_lp in (True, False):
            names, coef, b = self._terms(with_lp)
            hi = lo = b - self.base_intercept
            for f, c in zip(names, coef):
                c = c - self.base_coef if f == "log_rank" else c
                a, z = FEATURE_RANGE.get(f, (0.0, 1.0))
                hi, lo = hi + max(c * a, c * z), lo + min(c * a, c * z)
            most = max(most, abs(hi), abs(lo))
        return min(most, self.max_log_lr)

    def outcomes(
        self, *, subject_window: bool, rank: int, logprobs: bool
    ) -> tuple[tuple[float, float], tuple[float, float]]:
        """The two outcomes a reading of a window can have, as (probability given the window holds the fact,
        log LR): it names a sentence and copies a value, or it names none. With ``logprobs`` and measured
        ``outcome_scores``, each outcome carries its typical score; else it is judged without log-probabilities.
        The probabilities are the ones the two likelihood ratios imply (TPR/FPR = LR+, (1 − TPR)/(1 − FPR) =
        LR−); a reading that would not move the window both ways has probability 0 of the first outcome."""
        common = {"subject_window": float(subject_window), "log_rank": math.log1p(max(rank, 0))}
        with_scores = logprobs and self.outcome_scores is not None
        found, none = self.outcome_scores if with_scores else (0.0, 0.0)
        pos = self.log_lr(common | {"found": 1.0, "value": 1.0, "score": found}, logprobs=with_scores)
        neg = self.log_lr(common | {"found": 0.0, "value": 0.0, "score": none}, logprobs=with_scores)
        if not pos > 0 > neg:  # no evidence both ways
            return (0.0, pos), (1.0, neg)
        fpr = -math.expm1(neg) / (math.exp(pos) - math.exp(neg))
        tpr = min(1.0, math.exp(pos) * fpr)
        return (tpr, pos), (fpr, neg)

    @classmethod
    def from_rates(cls, tpr: float, fpr: float, n: int = 0) -> ReadingModel:
        """A model that knows only whether a sentence was named: log LR = log(tpr/fpr) for a found reading and
        log((1 − tpr)/(1 − fpr)) otherwise (the oracle-strength simulation's oracle)."""
        if not (0 < fpr < 1 and 0 < tpr < 1):
            raise ValueError("tpr and fpr must lie strictly between 0 and 1")
        neg = math.log((1 - tpr) / (1 - fpr))
        coef = [0.0, math.log(tpr / fpr) - neg, 0.0, 0.0, 0.0]
        return cls(
            features=list(READING_FEATURES),
            coef=coef,
            intercept=neg,
            coef_no_logprob=[c for f, c in zip(READING_FEATURES, coef) if f not in LOGPROB_FEATURES],
            intercept_no_logprob=neg,
            base_coef=0.0,
            base_intercept=0.0,
            max_log_lr=100.0,
            n=n,
        )


# For a model nobody calibrated: a conservative reading of the score (half its logit, so P = 0.99 is worth a
# likelihood ratio of 10, P = 0.9 of 3 and P = 0.1 of 1/3) and, without log-probabilities, LR 1.6 for a named
# sentence and 0.5 for none; every reading capped at |log LR| 3. A confident strong endpoint certifies within a
# few readings, a hesitant one moves beliefs a little (docs/readings.md); `lens calibrate endpoint` replaces it
# with the model fitted for the endpoint. Its readings are valued (the gate on reading a window) as if the endpoint
# were sure either way, so an endpoint nobody measured is never kept from reading.
UNCALIBRATED = ReadingModel(
    features=list(READING_FEATURES),
    coef=[0.5, 0.0, 0.0, 0.0, 0.0],
    intercept=0.0,
    coef_no_logprob=[1.2, 0.0, 0.0, 0.0],
    intercept_no_logprob=-0.7,
    base_coef=0.0,
    base_intercept=0.0,
    max_log_lr=3.0,
    outcome_scores=[4.6, -4.6],  # unmeasured: read as if the endpoint were sure (P 0.99) either way
)


def reading_model_for(config: LensConfig) -> ReadingModel:
    """The reading model calibrated for the served model (its table in ``loop.reading_model``), or the
    conservative ``UNCALIBRATED`` default."""
    params = config.loop.reading_model.get(config.llm.served_model)
    return UNCALIBRATED if params is None else ReadingModel.model_validate(params.model_dump())


@dataclass(frozen=True, kw_only=True)
class Reading:
    """One judgement of window ``window_key`` for requirement ``requirement_id`` in round ``round``: its features,
    the log likelihood ratio the loop applied, and whether it confirmed the window (a named sentence that moved
    the window up)."""

    round: int
    requirement_id: str
    requirement: str
    window_key: str
    found: bool
    features: Mapping[str, float]
    log_lr: float
    logprobs: bool  # whether the reply carried token log-probabilities
    value: str = ""
    sentence: int | None = None  # the document sentence the reading named
    quote: str = ""  # that sentence's text
    confirmed: bool = False
    top: tuple[tuple[str, float], ...] = ()  # top alternatives at the number token
    reply: str = ""  # the oracle's reply as written

    @property
    def sentences(self) -> tuple[int, ...]:
        return () if self.sentence is None else (self.sentence,)

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "requirement_id": self.requirement_id,
            "requirement": self.requirement,
            "window": self.window_key,
            "found": self.found,
            "sentence": self.sentence,
            "value": self.value,
            "quote": self.quote,
            "confirmed": self.confirmed,
            "features": {k: round(float(v), 4) for k, v in self.features.items()},
            "log_lr": round(self.log_lr, 4),
            "logprobs": self.logprobs,
            "top": [[t, round(lp, 3)] for t, lp in self.top],
            "reply": self.reply,
        }


def subject_named(subject: str | None, window_text: str) -> bool:
    """Whether the window names ``subject`` (all its content words, or the normalised phrase)."""
    if not subject:
        return False
    words = content_terms(subject) or tokens(subject)
    if words and all(w in set(tokens(window_text)) for w in words):
        return True
    return f" {normalise(subject)} " in f" {normalise(window_text)} "


def reading_features(judgement: Judgement, *, subject_window: bool, rank: int) -> dict[str, float]:
    """The feature vector of one reading (module docstring); ``rank``: 0 for the prior's best document."""
    out = dict.fromkeys(READING_FEATURES, 0.0)
    out["found"] = float(judgement.found)
    out["value"] = float(judgement.found and bool(judgement.value))
    out["subject_window"] = float(subject_window)
    out["log_rank"] = math.log1p(max(rank, 0))
    if judgement.score_logit is not None:
        out["score"] = judgement.score_logit
    return out
