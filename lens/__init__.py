"""lens: source-grounded answers over folders of raw, changing documents (LENS).

The public surface is small and explicit; implementation modules are private (``lens._*``). Names are
imported lazily on first use, so ``import lens`` (and ``lens --help``) stays instant.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Agent": "lens._agent",
    "ask": "lens._agent",
    "AskResult": "lens._result",
    "Evidence": "lens._result",
    "RequirementStatus": "lens._result",
    "LensConfig": "lens._config",
    "load_config": "lens._config",
    "available_presets": "lens._config",
    "ConfigError": "lens._config",
    "LensError": "lens._errors",
    "MemoryStore": "lens._memory",
    "MemoryEntry": "lens._memory",
    "Eligibility": "lens._memory",
    "LLMClient": "lens._llm",
    "LLMResponse": "lens._llm",
    "LLMError": "lens._llm",
    "open_client": "lens._llm",
    "CostMeter": "lens._cost",
    "Cost": "lens._cost",
    "scan_corpus": "lens._corpus",
    "Document": "lens._corpus",
    "CorpusScan": "lens._corpus",
    "split_sentences": "lens._corpus",
    "CorpusView": "lens._view",
    "Prior": "lens._prior",
    "PriorScore": "lens._prior",
    "merge_round_robin": "lens._prior",
    "content_terms": "lens._terms",
    "Requirement": "lens._requirements",
    "Decomposition": "lens._requirements",
    "MAX_REQUIREMENTS": "lens._requirements",
    "heuristic_decomposition": "lens._requirements",
    "new_entry": "lens._memory",
    "memory_signal": "lens._memory",
    "memory_key": "lens._memory",
    "LLMUnavailableError": "lens._llm",
    "EndpointRefusedError": "lens._llm",
    "is_endpoint_failure": "lens._llm",
    "answer_text": "lens._synthesis",
    "PLACEHOLDER_ANSWERS": "lens._synthesis",
    # the oracle interface: a simulated oracle (Agent.explore(observer=...)) returns one reading's judgement
    "Judgement": "lens._reading",
    "Observer": "lens._loop",
    "answer_span": "lens._spans",
    "AnswerSpan": "lens._spans",
    # progress of a running question (Agent(progress=callback))
    "Progress": "lens._progress",
    "render": "lens._prompts",
    "fence_passage": "lens._prompts",
    "merge_overrides": "lens._config",
    # for packages that add `lens` commands (entry point group "lens.commands"): the shared LLM/config flags
    "add_config_args": "lens._cli",
    "config_from_args": "lens._cli",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lens' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
