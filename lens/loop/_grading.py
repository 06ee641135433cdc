"""Graded readings: the features of one reading and the likelihood ratio it moves a window's belief by.

A reading (``lens.loop._reading``) judges one window for one requirement. Its features (``READING_FEATURES``):
``score`` the clipped logit of P(some sentence states the fact) from the token log-probabilities (only where the
endpoint returns them); ``found`` the oracle named a sentence; ``value`` it gave a value verified in the text;
``subject_window`` the requirement's subject is named in the window; ``log_rank`` log(1 + the rank of the window's
document in the requirement's prior ranking). The served model's ``ReadingModel`` (calibrated by ``lens
calibrate``, or the conservative default) turns them into log LR = logit P(fact | features) − logit P(fact |
rank): the evidence the reading adds beyond what the prior already holds, positive or negative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from lens._config import LOGPROB_FEATURES, READING_FEATURES
from lens._terms import content_terms, normalise, tokens
from lens.loop._reading import Judgement

__all__ = ["READING_FEATURES", "LOGPROB_FEATURES", "Reading", "reading_features", "subject_named"]


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
