"""The research parts of lens: the pieces the evaluation harness (``lens bench``, ``lens audit``, ``lens calibrate``)
and plug-in commands build on, documented and importable without reaching into private modules. A user asking
questions needs only the names at the top of ``lens``; everything here may change with the paper's method.

Names are imported lazily on first use, as in ``lens`` itself.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    # the folder as the agent reads it
    "scan_corpus": "lens._corpus",
    "Document": "lens._corpus",
    "CorpusScan": "lens._corpus",
    "split_sentences": "lens._corpus",
    "CorpusView": "lens._view",
    "survey_corpus": "lens._filestats",
    "StatsStore": "lens._filestats",
    # requirements
    "Requirement": "lens._requirements",
    "Decomposition": "lens._requirements",
    "MAX_REQUIREMENTS": "lens._requirements",
    "decompose": "lens._requirements",
    "heuristic_decomposition": "lens._requirements",
    # the prior and the warm-reuse memory's signal
    "Prior": "lens._prior",
    "PriorScore": "lens._prior",
    "merge_round_robin": "lens._prior",
    "new_entry": "lens._memory",
    "memory_signal": "lens._memory",
    "memory_key": "lens._memory",
    # the loop and its state, run piece by piece (calibration reads windows through the loop's own reading)
    "Loop": "lens._loop",
    "LoopState": "lens._loop",
    "Budget": "lens._budget",
    "ELSEWHERE": "lens._beliefs",
    "Stop": "lens._stop",
    "StopReason": "lens._stop",
    # the oracle interface: a simulated oracle (Agent.explore(observer=...)) returns one reading's judgement
    "Judgement": "lens._reading",
    "Observer": "lens._loop",
    # one budgeted oracle call and what it costs
    "budgeted_call": "lens._oracle",
    "OracleCall": "lens._oracle",
    "CostMeter": "lens._cost",
    "Cost": "lens._cost",
    "is_endpoint_failure": "lens._llm",
    # one reading of one window (the reading-protocol comparison calls it directly)
    "read_window": "lens._reading",
    "TOP_LOGPROBS": "lens._reading",
    "answer_type": "lens._values",
    # what a reading is worth
    "ReadingModel": "lens._config",
    "READING_FEATURES": "lens._config",
    "LOGPROB_FEATURES": "lens._config",
    # prompts and answers
    "render": "lens._prompts",
    "fence_passage": "lens._prompts",
    "answer_text": "lens._synthesis",
    "PLACEHOLDER_ANSWERS": "lens._synthesis",
    "answer_span": "lens._spans",
    "AnswerSpan": "lens._spans",
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
    "add_config_args": "lens._cli",
    "config_from_args": "lens._config",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lens.parts' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
