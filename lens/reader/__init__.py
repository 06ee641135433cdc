"""The folder as lens reads it — stage 1 of a question.

Entry: :func:`lens.reader._filestats.survey_corpus` (a folder path and the reader settings in; a
:class:`~lens.reader._corpus.CorpusScan` out: its documents, read on access, their per-file statistics from the
store outside the folder, and what was skipped and why). :class:`~lens.reader._view.CorpusView` gives the prior its
lookups over one survey; :func:`~lens.reader._windows.windows_for` cuts a document into the windows the loop reads.
Nothing here calls an LLM or writes inside the folder. Depends only on the foundations (``lens._config``,
``lens._files``, ``lens._terms``, ``lens._errors``).
"""
