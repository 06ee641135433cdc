"""The research parts of lens: the pieces the evaluation harness (``lens bench``, ``lens audit``, ``lens calibrate``)
and plug-in commands build on, documented and importable without reaching into private modules. A user asking
questions needs only the names at the top of ``lens``; everything here may change with the paper's method.

Names are imported lazily on first use, as in ``lens`` itself.
"""

from __future__ import annotations

from lens import _lazy_exports

_EXPORTS = {
    # the folder as the agent reads it
    "scan_corpus": "lens.reader._corpus",
    "Document": "lens.reader._documents",
    "CorpusScan": "lens.reader._corpus",
    "split_sentences": "lens.reader._documents",
    "CorpusView": "lens.reader._view",
    "survey_corpus": "lens.reader._filestats",
    "StatsStore": "lens.reader._store",
    # one document-format file (PDF, Word, …) read into its units, and those as the reader's documents
    "extract": "lens.reader.formats",
    "format_of": "lens.reader.formats",  # a suffix's row of the format table: .read(bytes or path) -> its units
    "Unreadable": "lens.reader.formats",
    "unit_documents": "lens.reader._documents",
    "Extractor": "lens.reader._extraction",  # the pool of extraction workers (time limit, crash isolation)
    # requirements
    "Requirement": "lens.question._requirements",
    "Decomposition": "lens.question._requirements",
    "MAX_REQUIREMENTS": "lens.question._requirements",
    "decompose": "lens.question._requirements",
    "heuristic_decomposition": "lens.question._requirements",
    # the prior and the warm-reuse memory's signal
    "Prior": "lens.prior._prior",
    "PriorScore": "lens.prior._prior",
    "merge_round_robin": "lens.prior._prior",
    "new_entry": "lens.memory._memory",
    "memory_signal": "lens.memory._memory",
    "memory_key": "lens.memory._memory",
    # the loop and its state, run piece by piece (calibration reads windows through the loop's own reading)
    "Loop": "lens.loop._loop",
    "LoopState": "lens.loop._loop",
    "assemble_loop": "lens.loop._loop",
    "Budget": "lens.loop._budget",
    "ELSEWHERE": "lens.loop._beliefs",
    "Stop": "lens.loop._stop",
    "StopReason": "lens.loop._stop",
    # the oracle interface: a simulated oracle (Agent.explore(observer=...)) returns one reading's judgement
    "Judgement": "lens.loop._reading",
    "Observer": "lens.loop._loop",
    # one budgeted oracle call and what it costs
    "budgeted_call": "lens.loop._oracle",
    "OracleCall": "lens.loop._oracle",
    "CostMeter": "lens.llm._cost",
    "Cost": "lens._result",
    "QuestionCost": "lens._result",
    "is_endpoint_failure": "lens.llm._llm",
    # one reading of one window (the reading-protocol comparison calls it directly)
    "read_window": "lens.loop._reading",
    "TOP_LOGPROBS": "lens.loop._reading",
    "answer_type": "lens.question._values",
    "whole_entity": "lens.question._values",
    # what a reading is worth
    "ReadingModel": "lens.loop._grading",
    "reading_model_for": "lens.loop._grading",
    "READING_FEATURES": "lens._config",
    "LOGPROB_FEATURES": "lens._config",
    # prompts and answers
    "render": "lens.llm._prompts",
    "fence_passage": "lens.llm._prompts",
    "answer_text": "lens.answer._synthesis",
    "PLACEHOLDER_ANSWERS": "lens.answer._synthesis",
    "answer_span": "lens.answer._spans",
    "AnswerSpan": "lens.answer._spans",
    # text as the agent compares it
    "normalise": "lens._terms",
    "tokens": "lens._terms",
    "content_terms": "lens._terms",
    "capitalised_spans": "lens._terms",
    "title_key": "lens._terms",
    "base_title": "lens._terms",
    "STOPWORDS": "lens._terms",
    # files written whole or appended whole; canonical JSON and its hash
    "atomic_write": "lens._files",
    "append_lines": "lens._files",
    "canonical_json": "lens._files",
    "canonical_hash": "lens._files",
    "sha256_hex": "lens._files",
    # configuration sources, and the shared LLM/config flags for packages that add `lens` commands
    # (entry point group "lens.commands")
    "user_config_path": "lens._config",
    "merge_overrides": "lens._config",
    "add_config_args": "lens.faces._cli",
    "config_from_args": "lens._config",
}

__all__ = sorted(_EXPORTS)


__getattr__ = _lazy_exports(globals(), _EXPORTS)


def __dir__() -> list[str]:
    return __all__
