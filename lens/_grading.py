"""Graded evidence: a likelihood ratio for each reading of a window, from what the loop can observe.

A *reading* is one oracle judgement about one window for one requirement: either a verified finding (quote,
sentences, value) or "nothing here" (no claim, or only claims that failed verification). A single pair of
rates (tpr, fpr) gives every positive reading the same likelihood ratio tpr/fpr; with a small model that
ratio is close to 1 and nothing ever certifies, although some readings are far more telling than others
(an exact quote holding a value of the right type, of the entity the requirement names, that a second
document agrees on, generated with high token probability). The graded model scores each reading by its
features (``FEATURES``):

- ``found`` a verified finding; ``exact`` its quote matched the text exactly (not only fuzzily, and not only
  through the value in the cited sentences); ``value`` it kept a verified value; ``value_in_quote`` the value
  lies inside the quote; ``type_match`` the value has the requirement's answer type (a year for "when", a
  number for "how many"); ``cue_overlap`` the share of the requirement's content terms that the quote
  contains; ``agree`` another document gave the same value for the requirement; ``logprob`` the model's own
  log-probability of having pointed at this window for this fact — the token that opened the finding
  (``{`` rather than ``null``) plus the tokens of its passage label —, clipped to [-5, 0];
- for a reading with nothing found: ``elsewhere`` the model reported the fact in another window of the same
  call; ``null_confidence`` the probability of the ``null`` the model wrote for the fact (0 when it wrote
  none);
- for every reading: ``subject_window`` the requirement's subject is named in the window; ``log_rank``
  log(1 + rank of the window's document in the requirement's prior ranking).

``logprob`` and ``null_confidence`` exist only where the endpoint returns token log-probabilities.

Calibration (``lens calibrate``) fits, on labelled readings, a logistic regression over ``log_rank`` alone (the
prior's own information) and, with that baseline as an offset, an L2-penalised term for what the other features
add (penalty chosen by cross-validation), so P(window holds the requirement's fact | features) = σ(baseline +
added evidence). Because the belief already holds the prior, a reading's log likelihood ratio is the difference
of the two log-odds — the evidence the reading adds beyond the window's rank, 0 where the readings show none:

    log LR(x) = logit P(fact | x) − logit P(fact | log_rank(x))

clipped to ±``max_log_lr`` (no single reading is trusted beyond what the calibration data can show). Where
the endpoint gave no log-probabilities the model fitted without them (``LOGPROB_FEATURES``) is used. The single-rate model
(``loop.observation_model = "single-rate"``) is kept for comparison: log(tpr/fpr) for a positive reading and
log((1 − tpr)/(1 − fpr)) for a negative one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from lens._config import LOGPROB_FEATURES, GradedEvidence, LensConfig, OracleReliability

__all__ = [
    "FEATURES",
    "Reading",
    "ObservationModel",
    "reading_features",
    "reply_confidence",
    "LOGPROB_FEATURES",
    "observation_model",
]

FEATURES = (
    "found",
    "exact",
    "value",
    "value_in_quote",
    "type_match",
    "cue_overlap",
    "agree",
    "logprob",
    "elsewhere",
    "null_confidence",
    "subject_window",
    "log_rank",
)
LOGPROB_FLOOR = -5.0
# the range each feature can take (log_rank: up to rank 150, beyond any candidate list the loop builds)
FEATURE_RANGE = dict.fromkeys(FEATURES, (0.0, 1.0)) | {"logprob": (LOGPROB_FLOOR, 0.0), "log_rank": (0.0, 5.0)}


@dataclass(frozen=True)
class Reading:
    """One judgement of window ``window_key`` for requirement ``requirement_id`` in round ``round``, with its
    features and the log likelihood ratio the loop applied."""

    round: int
    requirement_id: str
    requirement: str
    window_key: str
    found: bool
    features: Mapping[str, float]
    log_lr: float
    logprobs: bool  # whether the reply carried token log-probabilities
    value: str = ""
    sentences: tuple[int, ...] = ()
    quote: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "requirement_id": self.requirement_id,
            "requirement": self.requirement,
            "window": self.window_key,
            "found": self.found,
            "features": {k: round(float(v), 4) for k, v in self.features.items()},
            "log_lr": round(self.log_lr, 4),
            "logprobs": self.logprobs,
            "value": self.value,
            "sentences": list(self.sentences),
            "quote": self.quote,
        }


def reading_features(
    *,
    found: bool,
    exact: bool = False,
    value: str = "",
    quote: str = "",
    kind: str = "any",
    requirement: str,
    subject: str | None,
    window_text: str,
    rank: int,
    agree: bool = False,
    logprob: float | None = None,
    elsewhere: bool = False,
    null_logprob: float | None = None,
) -> dict[str, float]:
    """The feature vector of one reading (see the module docstring); ``logprob`` / ``null_logprob`` None: not
    available (or, for ``null_logprob``, the model wrote no ``null`` for the fact)."""
    from lens._observation import normalise
    from lens._terms import content_terms, tokens
    from lens._values import fits_type

    nwin = f" {normalise(window_text)} "
    subject_window = 0.0
    if subject:
        words = [w for w in content_terms(subject)] or tokens(subject)
        wins = set(tokens(window_text))
        subject_window = float(f" {normalise(subject)} " in nwin or (bool(words) and all(w in wins for w in words)))
    out = dict.fromkeys(FEATURES, 0.0)
    out["subject_window"] = subject_window
    out["log_rank"] = math.log1p(max(rank, 0))
    if not found:
        out["elsewhere"] = float(elsewhere)
        if null_logprob is not None:
            out["null_confidence"] = math.exp(max(LOGPROB_FLOOR, min(0.0, null_logprob)))
        return out
    nq, nv = normalise(quote), normalise(value)
    terms = content_terms(requirement)
    qwords = set(tokens(quote))
    out.update(
        found=1.0,
        exact=float(exact),
        value=float(bool(nv)),
        value_in_quote=float(bool(nv) and f" {nv} " in f" {nq} "),
        type_match=float(bool(nv) and kind != "any" and fits_type(value, kind)),  # type: ignore[arg-type]
        cue_overlap=(sum(t in qwords for t in terms) / len(terms)) if terms else 0.0,
        agree=float(agree),
    )
    if logprob is not None:
        out["logprob"] = max(LOGPROB_FLOOR, min(0.0, logprob))
    return out


def reply_confidence(logprobs: Sequence[tuple[str, float]] | None, fact_id: str) -> tuple[float, float, bool] | None:
    """For fact ``fact_id`` of a keyed observation reply (``{"R1": {"passage": "P2", ...} | null, ...}``):
    (log-probability of the token that decided the fact — ``{`` or ``null`` —, log-probability of the tokens of
    its passage label (0 for a ``null``), whether it was a ``null``); None without log-probabilities or when
    the fact is not in the reply."""
    if not logprobs:
        return None
    text = "".join(t for t, _ in logprobs)
    owner: list[int] = []  # the token index of every character
    for k, (tok, _) in enumerate(logprobs):
        owner.extend([k] * len(tok))
    m = re.search(r'"#?' + re.escape(fact_id) + r'"\s*:\s*(\S)', text)
    if m is None:
        return None
    decided = logprobs[owner[m.start(1)]][1]
    if m.group(1) != "{":
        return decided, 0.0, m.group(1) == "n"
    label = re.compile(r'"passage"\s*:\s*"?([^",}]*)').search(text, m.start(1))
    if label is None or not label.group(1):
        return decided, 0.0, False
    tokens = sorted({owner[i] for i in range(label.start(1), label.end(1))})
    return decided, sum(logprobs[k][1] for k in tokens if k != owner[m.start(1)]), False


@dataclass
class ObservationModel:
    """What one reading is worth: the graded model when calibrated for the model and selected, else the
    single rate. ``name`` says which one ran (it goes into the result's trace)."""

    reliability: OracleReliability
    graded: GradedEvidence | None = None
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = "graded" if self.graded is not None else "single-rate"

    def log_lr(self, features: Mapping[str, float], *, logprobs: bool) -> float:
        g = self.graded
        if g is None:
            return self.reliability.log_lr(bool(features.get("found")))
        return max(-g.max_log_lr, min(g.max_log_lr, g.logit(features, logprobs=logprobs) - g.base_logit(features)))

    def max_abs_log_lr(self) -> float:
        """The most one reading can move a window's log weight, either way: for the graded model the largest
        |log LR| over the feature ranges (``FEATURE_RANGE``; an upper bound, the features are not independent),
        capped at ``max_log_lr``; for the single rate the larger of |log LR| of a positive and a negative
        reading."""
        g = self.graded
        if g is None:
            return max(abs(self.reliability.log_lr(True)), abs(self.reliability.log_lr(False)))
        most = 0.0
        for with_lp in (True, False):
            names = list(g.features) if with_lp else [f for f in g.features if f not in LOGPROB_FEATURES]
            coef = g.coef if with_lp else g.coef_no_logprob
            shift = (g.intercept if with_lp else g.intercept_no_logprob) - g.base_intercept
            hi, lo = shift, shift
            for f, c in zip(names, coef):
                c = c - g.base_coef if f == "log_rank" else c
                a, b = FEATURE_RANGE.get(f, (0.0, 1.0))
                hi += max(c * a, c * b)
                lo += min(c * a, c * b)
            most = max(most, abs(hi), abs(lo))
        return min(most, g.max_log_lr)


def observation_model(config: LensConfig) -> ObservationModel:
    """The observation model for the served model: graded if ``loop.observation_model`` asks for it and the
    preset holds a graded calibration for this model, else the single rate."""
    rel = config.reliability()
    graded = rel.graded if config.loop.observation_model == "graded" else None
    return ObservationModel(rel, graded)
