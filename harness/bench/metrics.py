"""Benchmark metrics: official HotpotQA answer / supporting-fact / joint scores, Ev.Rec, Ground, the failure
taxonomy, paired exact McNemar and bootstrap intervals.

Answer EM/F1, supporting-fact and joint metrics follow the official ``hotpot_evaluate_v1.py`` exactly:

- normalisation: lowercase, drop ASCII punctuation (``string.punctuation``), replace the words a/an/the by a
  space, collapse whitespace — in that order;
- EM: normalised strings equal (no special case for yes/no);
- F1: 0 when either normalised side is ``yes``, ``no`` or ``noanswer`` and the two differ; otherwise the F1 of
  the multiset (``Counter``) overlap of tokens, 0 when nothing overlaps;
- supporting facts: sets of (title, sent_id) with *exact* titles, as the official script compares them;
- joint: precision = answer precision × sp precision, recall likewise, F1 from those; EM = EM × sp EM;
- a question missing from the predictions scores 0 (it stays in the denominator) and is reported.

Titles everywhere else (Ev.Rec, Ground, taxonomy) compare with ``article_key`` (case-insensitive).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from harness.bench.datasets import DataError, Question, article_key

__all__ = [
    "FAILURE_CLASSES",
    "AnswerScore",
    "SupportScore",
    "JointScore",
    "QuestionScore",
    "OfficialScore",
    "McNemar",
    "Interval",
    "normalize_answer",
    "exact_match",
    "answer_f1",
    "answer_scores",
    "support_scores",
    "joint_scores",
    "score_question",
    "score_official",
    "evidence_recall",
    "is_unanswered",
    "is_grounded",
    "failure_class",
    "mcnemar_exact",
    "bootstrap_ci",
]

FAILURE_CLASSES = ("correct", "retrieved_but_unanswered", "answered_but_wrong", "not_retrieved")
_SPECIAL = ("yes", "no", "noanswer")
_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


# --------------------------------------------------------------------------- official answer metrics


def normalize_answer(text: str) -> str:
    """Official HotpotQA/SQuAD normalisation: lower → drop punctuation → drop a/an/the → collapse spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> bool:
    """Official EM: the normalised strings are equal."""
    return normalize_answer(prediction) == normalize_answer(gold)


class AnswerScore(NamedTuple):
    em: float
    f1: float
    precision: float
    recall: float


def answer_f1(prediction: str, gold: str) -> tuple[float, float, float]:
    """Official (f1, precision, recall) of the multiset token overlap, with the yes/no/noanswer rule."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0, 0.0, 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    same = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if same == 0:
        return 0.0, 0.0, 0.0
    precision = same / len(pred_tokens)
    recall = same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall), precision, recall


def answer_scores(prediction: str, gold: str) -> AnswerScore:
    f1, p, r = answer_f1(prediction, gold)
    return AnswerScore(float(exact_match(prediction, gold)), f1, p, r)


class SupportScore(NamedTuple):
    em: float
    f1: float
    precision: float
    recall: float


def support_scores(
    predicted: Iterable[tuple[str, int] | Sequence], gold: Iterable[tuple[str, int] | Sequence]
) -> SupportScore:
    """Official supporting-fact scores over sets of (title, sent_id) (exact titles, duplicates ignored)."""
    pred = {tuple(x) for x in predicted}
    ref = {tuple(x) for x in gold}
    tp = len(pred & ref)
    fp = len(pred - ref)
    fn = len(ref - pred)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return SupportScore(1.0 if fp + fn == 0 else 0.0, f1, precision, recall)


class JointScore(NamedTuple):
    em: float
    f1: float
    precision: float
    recall: float


def joint_scores(answer: AnswerScore, support: SupportScore) -> JointScore:
    """Official joint metrics: products of answer and supporting-fact precision, recall and EM."""
    precision = answer.precision * support.precision
    recall = answer.recall * support.recall
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return JointScore(answer.em * support.em, f1, precision, recall)


@dataclass(frozen=True)
class QuestionScore:
    """One question's official scores; ``None`` where the prediction lacks that part."""

    id: str
    answer: AnswerScore | None
    support: SupportScore | None
    joint: JointScore | None


def score_question(
    question: Question, answer: str | None, support: Iterable[tuple[str, int]] | None = None
) -> QuestionScore:
    a = None if answer is None else answer_scores(answer, question.answer)
    s = None if support is None else support_scores(support, question.supporting_facts)
    j = joint_scores(a, s) if a is not None and s is not None else None
    return QuestionScore(question.id, a, s, j)


_METRIC_KEYS = (
    "em",
    "f1",
    "prec",
    "recall",
    "sp_em",
    "sp_f1",
    "sp_prec",
    "sp_recall",
    "joint_em",
    "joint_f1",
    "joint_prec",
    "joint_recall",
)


@dataclass
class OfficialScore:
    """Aggregate official metrics (fractions in [0, 1], keys as the official script names them)."""

    n: int
    metrics: dict[str, float | None]
    missing_answer: list[str] = field(default_factory=list)
    missing_sp: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)  # predicted ids that are not gold questions (ignored)
    sp_evaluated: bool = True  # False when the prediction file has no "sp" section at all
    per_question: list[QuestionScore] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "n": self.n,
            "metrics": dict(self.metrics),
            "sp_evaluated": self.sp_evaluated,
            "missing_answer": list(self.missing_answer),
            "missing_sp": list(self.missing_sp),
            "extra_predictions": list(self.extra),
        }


def score_official(gold: Sequence[Question], prediction: Mapping[str, Mapping]) -> OfficialScore:
    """Score ``{"answer": {id: str}, "sp": {id: [[title, sent_id]]}}`` against ``gold`` as the official
    script does; a missing answer or sp scores 0 for that part (and for joint) and is listed. When the
    prediction has no ``"sp"`` section at all, sp and joint metrics are ``None`` (not evaluated)."""
    if not gold:
        raise DataError("no gold questions to score")
    answers = prediction.get("answer", {}) or {}
    has_sp = "sp" in prediction and prediction["sp"] is not None
    sps = prediction.get("sp", {}) or {}
    totals = dict.fromkeys(_METRIC_KEYS, 0.0)
    out = OfficialScore(n=len(gold), metrics={}, sp_evaluated=has_sp)
    gold_ids = set()
    for q in gold:
        gold_ids.add(q.id)
        answer = answers.get(q.id)
        support = sps.get(q.id) if has_sp else None
        if answer is None:
            out.missing_answer.append(q.id)
        if has_sp and support is None:
            out.missing_sp.append(q.id)
        qs = score_question(q, answer, support)
        out.per_question.append(qs)
        if qs.answer is not None:
            totals["em"] += qs.answer.em
            totals["f1"] += qs.answer.f1
            totals["prec"] += qs.answer.precision
            totals["recall"] += qs.answer.recall
        if qs.support is not None:
            totals["sp_em"] += qs.support.em
            totals["sp_f1"] += qs.support.f1
            totals["sp_prec"] += qs.support.precision
            totals["sp_recall"] += qs.support.recall
        if qs.joint is not None:
            totals["joint_em"] += qs.joint.em
            totals["joint_f1"] += qs.joint.f1
            totals["joint_prec"] += qs.joint.precision
            totals["joint_recall"] += qs.joint.recall
    out.metrics = {
        k: (None if (not has_sp and (k.startswith("sp_") or k.startswith("joint_"))) else v / len(gold))
        for k, v in totals.items()
    }
    out.extra = sorted((set(answers) | set(sps)) - gold_ids)
    return out


# --------------------------------------------------------------------------- evidence and grounding


def evidence_recall(gold_titles: Iterable[str], retrieved_titles: Iterable[str]) -> float:
    """Ev.Rec of one question: the fraction of its distinct gold supporting titles that are among the
    retrieved documents' titles, compared by ``article_key``. Raises ValueError when there are no gold titles."""
    gold = {article_key(t) for t in gold_titles}
    if not gold:
        raise ValueError("evidence recall needs at least one gold title")
    got = {article_key(t) for t in retrieved_titles}
    return len(gold & got) / len(gold)


def is_unanswered(answer: str | None) -> bool:
    """No answer was produced: None, or an answer that normalises to "" or to ``noanswer``."""
    return answer is None or normalize_answer(answer) in ("", "noanswer")


def _contains_tokens(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def is_grounded(
    answer: str | None,
    evidence: Iterable[tuple[str, str]],
    gold_titles: Iterable[str],
) -> bool:
    """Ground: is the answer traceable to the evidence the system returned?

    ``evidence`` is the system's cited evidence as (source title, passage text) pairs — the text it reports
    as supporting its answer (for retrieval baselines, the passages placed in the answer prompt).

    - An unanswered prediction (``is_unanswered``) or one with no evidence is not grounded.
    - A yes/no answer (normalising to ``yes`` or ``no``) is grounded when the evidence covers *every*
      requirement of the question: each gold supporting title (``article_key``) is the source of at least one
      evidence passage. (A yes/no judgement compares or checks facts from every supporting article; a
      passage about only one side cannot support it.)
    - Any other answer is grounded when its normalised tokens (official normalisation) occur as a
      contiguous token run inside the normalised text of at least one evidence passage.

    Grounding says the answer can be traced to cited text, not that it is correct.
    """
    if is_unanswered(answer):
        return False
    passages = [(t, x) for t, x in evidence]
    if not passages:
        return False
    norm = normalize_answer(answer or "")
    if norm in ("yes", "no"):
        need = {article_key(t) for t in gold_titles}
        have = {article_key(t) for t, _ in passages}
        return bool(need) and need <= have
    tokens = norm.split()
    return any(_contains_tokens(normalize_answer(text).split(), tokens) for _, text in passages)


def failure_class(
    *,
    correct: bool,
    answer: str | None,
    gold_titles: Iterable[str],
    retrieved_titles: Iterable[str],
) -> str:
    """The paper's failure taxonomy, first match wins (mutually exclusive and exhaustive):

    1. ``correct`` — official EM succeeded;
    2. ``retrieved_but_unanswered`` — at least one gold supporting document was retrieved, but no answer
       was produced (``is_unanswered``);
    3. ``answered_but_wrong`` — sufficient gold evidence was retrieved (every gold supporting title,
       Ev.Rec = 1) and an answer was produced, but it is not an exact match;
    4. ``not_retrieved`` — everything else (the recall ceiling).
    """
    if correct:
        return FAILURE_CLASSES[0]
    gold = {article_key(t) for t in gold_titles}
    got = {article_key(t) for t in retrieved_titles}
    hit = gold & got
    if hit and is_unanswered(answer):
        return FAILURE_CLASSES[1]
    if gold and hit == gold and not is_unanswered(answer):
        return FAILURE_CLASSES[2]
    return FAILURE_CLASSES[3]


# --------------------------------------------------------------------------- statistics


class McNemar(NamedTuple):
    """Paired exact McNemar test: ``b`` = only A correct, ``c`` = only B correct, two-sided exact p."""

    n: int
    both: int
    b: int
    c: int
    neither: int
    p_value: float


def mcnemar_exact(a: Sequence[bool] | Mapping[str, bool], b: Sequence[bool] | Mapping[str, bool]) -> McNemar:
    """Exact two-sided McNemar test on paired binary outcomes (e.g. per-question EM of two systems).

    Pass two equal-length sequences in the same question order, or two mappings id -> outcome over the same
    ids. p = min(1, 2 · P[X ≤ min(b, c)]) for X ~ Binomial(b + c, 1/2); p = 1 when b + c = 0.
    """
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
            raise ValueError("pass two sequences or two mappings, not one of each")
        if set(a) != set(b):
            raise ValueError(f"paired outcomes need the same ids ({len(set(a) ^ set(b))} differ)")
        keys = sorted(a)
        xs, ys = [bool(a[k]) for k in keys], [bool(b[k]) for k in keys]
    else:
        if len(a) != len(b):
            raise ValueError(f"paired outcomes need equal lengths, got {len(a)} and {len(b)}")
        xs, ys = [bool(x) for x in a], [bool(y) for y in b]
    both = sum(x and y for x, y in zip(xs, ys))
    only_a = sum(x and not y for x, y in zip(xs, ys))
    only_b = sum(y and not x for x, y in zip(xs, ys))
    neither = len(xs) - both - only_a - only_b
    m = only_a + only_b
    if m == 0:
        p = 1.0
    else:
        k = min(only_a, only_b)
        tail = sum(math.comb(m, i) for i in range(k + 1))
        p = min(1.0, 2 * tail / 2**m)  # exact integers until the final division
    return McNemar(len(xs), both, only_a, only_b, neither, p)


class Interval(NamedTuple):
    """A point estimate (the sample mean) with a percentile bootstrap interval."""

    mean: float
    low: float
    high: float


def bootstrap_ci(
    values: Sequence[float],
    *,
    resamples: int = 10_000,
    level: float = 0.95,
    seed: int = 42,
) -> Interval:
    """Percentile bootstrap interval of the mean of ``values`` (resampling questions with replacement).

    For a paired contrast pass the per-question differences. Deterministic for a given ``seed``
    (NumPy PCG64). Raises ValueError for an empty input or a level outside (0, 1).
    """
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        raise ValueError("bootstrap needs at least one value")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    rng = np.random.Generator(np.random.PCG64(seed))
    means = np.empty(resamples)
    chunk = max(1, 2_000_000 // x.size)  # bound memory: at most ~2M indices at a time
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, x.size, size=(stop - start, x.size))
        means[start:stop] = x[idx].mean(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(float(x.mean()), float(low), float(high))
