"""Layer 2, the budgeted propose–observe–update loop — stage 4 of a question.

Entry: :func:`lens.loop._loop.explore` over a :class:`~lens.loop._loop.Loop` (the requirements, the prior and
the budget in; beliefs over windows, the readings that moved them and the stop reason out). A reading
(``_reading``) is one oracle call on one window, graded into a likelihood ratio by the served model's reading
model (``_grading``: ``ReadingModel`` over the numbers of its config table, picked by ``reading_model_for``);
beliefs and the GLR stopping rule are ``_beliefs``; the budget (c0 + c1·L calls, tokens, time) is ``_budget``;
``_run`` is what one question carries from stage to stage. Depends on ``lens.prior``, ``lens.question``,
``lens.reader``, ``lens.llm`` and the foundations.
"""
