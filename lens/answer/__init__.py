"""Consolidation and the answer — stage 5 of a question.

Entry: :func:`lens.answer._answer.answer` (the loop's beliefs and readings in; E* — at most
``loop.evidence_docs`` documents with their cited sentences — and the synthesised, span-checked answer out).
Comparisons of dates and numbers are computed in code (``lens.question._values``). Depends on ``lens.loop``,
``lens.question``, ``lens.llm`` and the foundations.
"""
