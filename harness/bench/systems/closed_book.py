"""Closed-Book: the LLM alone, one call (prompt ``harness/prompts/closed_book.md``). It reads no corpus, so it retrieves
nothing and cites nothing: its Ev.Rec is reported as "—" and it is never grounded (the paper's no-retrieval
reference for how much of the score the model's parameters carry)."""

from __future__ import annotations

from harness.bench.systems.answer_call import ANSWER_TOKENS, PROMPTS, call_for_answer
from harness.bench.systems.base import QuestionBudget, RunLevelError, System, error_text
from harness.bench.systems.prediction import Prediction
from lens import LLMClient, LLMError
from lens.parts import render

__all__ = ["ClosedBookSystem"]


class ClosedBookSystem(System):
    name = "closed"
    index_free = True
    reads_corpus = False

    def __init__(self, client: LLMClient, *, question_timeout_s: float, max_tokens: int) -> None:
        super().__init__(question_timeout_s=question_timeout_s, max_tokens=max_tokens)
        self.client = client

    def params(self) -> dict:
        return {"prompt": "closed_book", "answer_tokens": ANSWER_TOKENS}

    def _answer(self, question: str, budget: QuestionBudget) -> Prediction:
        pred = Prediction(system=self.name, answer="")
        try:
            pred.answer = call_for_answer(
                self.client, render("closed_book", package=PROMPTS, question=question.strip()), budget
            )
        except RunLevelError:
            raise
        except LLMError as exc:
            pred.error = error_text(exc)
        return self._charge(pred, budget)
