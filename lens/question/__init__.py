"""The question: its intent and atomic requirements, and the values it asks for — stage 2 of a question.

Entry: :func:`lens.question._requirements.decompose` (the question and one budgeted LLM call in; a
:class:`~lens.question._requirements.Decomposition` out: intent, requirements f_1..f_K with their cues and bridge
dependencies). ``_values`` holds what a requirement's answer may be (answer types; dates and numbers parsed,
compared and computed in code). Depends on the foundations and ``lens.llm`` (prompt templates).
"""
