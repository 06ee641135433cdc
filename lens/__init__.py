"""lens: source-grounded answers over folders of raw, changing documents (LENS).

The names here are what a user calls; the parts the evaluation harness builds on live in :mod:`lens.parts`;
implementation modules are private (``lens._*``). Names are imported lazily on first use, so ``import lens`` (and
``lens --help``) stays instant.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable

__version__ = "0.1.0"

_EXPORTS = {
    # asking
    "Agent": "lens._agent",
    "ask": "lens._agent",
    "Cancelled": "lens._agent",
    "AskResult": "lens._result",
    "Evidence": "lens._result",
    "RequirementStatus": "lens._result",
    "Progress": "lens._progress",  # progress of a running question (Agent(progress=callback))
    # configuration
    "LensConfig": "lens._config",
    "load_config": "lens._config",
    "available_presets": "lens._config",
    # the warm-reuse memory
    "MemoryStore": "lens.memory._memory",
    "MemoryEntry": "lens.memory._memory",
    "Eligibility": "lens.memory._memory",
    # the LLM endpoint
    "LLMClient": "lens.llm._llm",
    "LLMResponse": "lens.llm._llm",
    "open_client": "lens.llm._llm",
    # errors
    "LensError": "lens._errors",
    "ConfigError": "lens._config",
    "LLMError": "lens.llm._llm",
    "LLMUnavailableError": "lens.llm._llm",
    "EndpointRefusedError": "lens.llm._llm",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def _lazy_exports(namespace: dict[str, Any], exports: dict[str, str], hint: str = "") -> Callable[[str], Any]:
    """A module's ``__getattr__`` (PEP 562) for ``exports`` (name -> the module defining it): each name imported
    from its module on first use and kept in ``namespace``; any other name is an AttributeError, with ``hint``."""

    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}{hint}")
        value = namespace[name] = getattr(import_module(module), name)
        return value

    return getattr_


__getattr__ = _lazy_exports(globals(), _EXPORTS, " (a research part? see lens.parts)")


def __dir__() -> list[str]:
    return __all__
