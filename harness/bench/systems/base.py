"""The one interface every benchmark arm implements: ``System.answer(question) -> Prediction``.

All five arms (LENS, ReAct, BM25-RAG, Hybrid-RAG, Closed-Book) share one ``LensConfig`` and one ``LLMClient``,
hence the same model, per-call timeout (``llm.call_timeout_s``) and per-question wall-clock cap
(``budget.question_timeout_s``: every LLM call of a question gets the same ``deadline``).

``answer`` never raises for a question-level failure (timeout, malformed reply, rate limit after retries, a
bug in one question's path): the prediction comes back with ``error`` set and whatever the system had. When a
call failed because of the endpoint (``lens.llm._llm.is_endpoint_failure``: auth, unknown model, 429/5xx or timeouts
after retries), or the endpoint rejected every call of the question with one and the same request error (HTTP
400/413/422: a setting it does not accept), the prediction is marked ``endpoint_failure``: the runner logs it as a
failed attempt and retries the question on resume, since it says nothing about the system. Only
:class:`RunLevelError` — the endpoint cannot be reached at all — propagates, because every later question would
fail the same way; the runner stops and a rerun resumes. A local I/O error (disk full, a file that cannot be read or
written) is not the system's result either: it becomes :class:`LocalIOError`, which stops the run the same way,
so the question is asked again on resume. Nor is a module that fails to import (an installation that lacks a
dependency of the code it runs, e.g. a frozen commit's copy run from a newer environment): it becomes
:class:`SetupError` and stops the run before a single error row is written for it.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.bench.systems.prediction import Prediction
from lens import LensError, LLMUnavailableError
from lens.parts import CostMeter, is_endpoint_failure

__all__ = ["System", "QuestionBudget", "RunLevelError", "LocalIOError", "SetupError", "RUN_STOPPERS", "error_text"]

log = logging.getLogger(__name__)

RunLevelError = LLMUnavailableError  # the endpoint cannot be reached: stops a run instead of becoming a row


class LocalIOError(LensError):
    """A file operation of this machine failed during a question: not a result; the run stops, a rerun retries."""


class SetupError(LensError):
    """This machine's installation cannot run the arm (a module fails to import): not a result; the run stops."""


RUN_STOPPERS = (RunLevelError, LocalIOError, SetupError)  # the failures that stop a run instead of becoming a row


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@dataclass
class QuestionBudget:
    """What one question may spend: the shared wall-clock deadline and the meter every call adds to."""

    meter: CostMeter
    started: float  # time.monotonic()
    deadline: float  # time.monotonic() instant; passed to every LLM call
    max_tokens: int  # token budget per question (config.budget.max_tokens_per_query)

    @classmethod
    def start(cls, question_timeout_s: float, max_tokens: int) -> "QuestionBudget":
        now = time.monotonic()
        return cls(CostMeter(), now, now + question_timeout_s, max_tokens)

    @property
    def tokens(self) -> int:
        return self.meter.cost.tokens

    def time_left(self) -> float:
        return self.deadline - time.monotonic()


class System(ABC):
    """A benchmark arm. Subclasses set the class facts below and implement :meth:`_answer`.

    ``index_free``: reads the corpus as it is at query time (no persisted index to rebuild after growth).
    ``reads_corpus``: retrieves documents at all (Closed-Book does not; its Ev.Rec is reported as "—").
    """

    name: ClassVar[str]
    index_free: ClassVar[bool]
    reads_corpus: ClassVar[bool] = True

    def __init__(self, *, question_timeout_s: float, max_tokens: int) -> None:
        self.question_timeout_s = float(question_timeout_s)
        self.max_tokens = int(max_tokens)

    def params(self) -> dict[str, Any]:
        """Every setting of this arm that can change its predictions (besides the shared LLM configuration)."""
        return {}

    def answer(self, question: str) -> Prediction:
        """Answer ``question`` (text only: systems never see gold). Raises only :data:`RUN_STOPPERS`."""
        budget = QuestionBudget.start(self.question_timeout_s, self.max_tokens)
        try:
            pred = self._answer(question, budget)
        except RunLevelError:
            raise
        except ImportError as exc:
            raise SetupError(f"{self.name}: cannot run on this installation ({error_text(exc)})") from exc
        except Exception as exc:  # a question-level failure: recorded, never a crash
            if isinstance(exc, OSError) and not isinstance(exc, (ConnectionError, TimeoutError)):
                raise LocalIOError(f"{self.name}: local I/O error ({error_text(exc)})") from exc
            log.warning(
                "%s failed on a question: %s", self.name, error_text(exc), exc_info=log.isEnabledFor(logging.DEBUG)
            )
            pred = Prediction(system=self.name, answer="", error=error_text(exc))
            pred.endpoint_failure = is_endpoint_failure(exc)
            self._charge(pred, budget)
        # a call of this question gave up on the endpoint, or the endpoint rejected every call with one request
        # error (a setting it does not accept): neither says anything about the system
        if budget.meter.cost.endpoint_errors or budget.meter.rejection():
            pred.endpoint_failure = True
            pred.error = pred.error or f"endpoint: {budget.meter.last_error}"
        pred.seconds = time.monotonic() - budget.started
        return pred

    @abstractmethod
    def _answer(self, question: str, budget: QuestionBudget) -> Prediction:
        """The arm's work. Expected failures should be caught there, keeping partial results."""

    @staticmethod
    def _charge(pred: Prediction, budget: QuestionBudget) -> Prediction:
        """Copy the question's metered cost (authoritative usage from the responses) into ``pred``."""
        c = budget.meter.cost
        pred.prompt_tokens, pred.completion_tokens = c.prompt_tokens, c.completion_tokens
        pred.oracle_calls, pred.cache_hits = c.oracle_calls, c.cache_hits
        return pred
