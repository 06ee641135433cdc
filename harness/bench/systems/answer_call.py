"""The one answer call of BM25-RAG, Hybrid-RAG and Closed-Book: a prompt file in, ``{"answer": ...}`` out.

The reply is requested as a JSON object (``response_format=json_object``; small models follow it reliably) and
parsed into :class:`AnswerReply`; the client sends one repair request on a malformed reply, then raises
``LLMFormatError``, which the caller records as the question's error.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, field_validator

from harness.bench.systems.base import QuestionBudget
from lens import LLMClient
from lens.parts import PLACEHOLDER_ANSWERS, answer_text

PROMPTS = "harness.prompts"  # the baselines' templates (package data of the harness)

__all__ = ["AnswerReply", "ANSWER_TOKENS", "call_for_answer", "clean_answer"]

ANSWER_TOKENS = 96  # an answer is a short span; JSON overhead included


class AnswerReply(BaseModel):
    answer: str

    @field_validator("answer", mode="before")
    @classmethod
    def _answer(cls, v: Any) -> Any:
        return "" if v is None else answer_text(v)  # no answer is an empty one


def clean_answer(text: str) -> str:
    """Whitespace collapsed, wrapping quotes or brackets removed, a copied placeholder made empty (no answer);
    the official normalisation does the rest at scoring."""
    text = " ".join(text.split())
    while len(text) >= 2 and (text[0], text[-1]) in (('"', '"'), ("'", "'"), ("[", "]")):
        text = text[1:-1].strip()
    return "" if text.casefold() in PLACEHOLDER_ANSWERS else text


def call_for_answer(
    client: LLMClient, messages: list[dict[str, str]], budget: QuestionBudget, *, max_tokens: int = ANSWER_TOKENS
) -> str:
    """One JSON answer call under the question's deadline and meter. Raises the client's ``LLMError``s."""
    resp = client.chat_json(messages, AnswerReply, max_tokens=max_tokens, deadline=budget.deadline, meter=budget.meter)
    return clean_answer(resp.parsed.answer)
