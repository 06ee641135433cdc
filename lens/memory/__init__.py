"""The warm-reuse memory and the record stage — stage 6 of a question.

Entries: :class:`lens.memory._memory.MemoryStore` (the append-only log, read through an eligibility predicate:
``memory_signals`` gives the prior its signal before the loop) and :func:`lens.memory._record.record` (the loop's
and the answer's outcome in; the requirements' statuses, the entries appended and the
:class:`~lens._result.AskResult` out). Depends on ``lens.answer``, ``lens.loop``, ``lens.reader`` and the
foundations.
"""
