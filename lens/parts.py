"""The research parts of lens: the pieces the evaluation harness (``lens bench``, ``lens audit``, ``lens calibrate``)
builds on, documented and importable without reaching into private modules. A user asking questions needs only
the names at the top of ``lens``; everything here may change with the paper's method.

Names are imported lazily on first use, as in ``lens`` itself.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    # the loop and its state, run piece by piece (calibration reads windows through the loop's own reading)
    "Loop": "lens._loop",
    "LoopState": "lens._loop",
    "Budget": "lens._budget",
    "ELSEWHERE": "lens._beliefs",
    "decompose": "lens._requirements",
    # one reading of one window (the reading-protocol comparison calls it directly)
    "read_window": "lens._reading",
    "TOP_LOGPROBS": "lens._reading",
    "answer_type": "lens._values",
    # what a reading is worth
    "ReadingModel": "lens._config",
    "READING_FEATURES": "lens._config",
    "LOGPROB_FEATURES": "lens._config",
    "user_config_path": "lens._config",
    # text as the agent compares it
    "normalise": "lens._terms",
    "tokens": "lens._terms",
    "capitalised_spans": "lens._terms",
    "title_key": "lens._terms",
    "base_title": "lens._terms",
    "STOPWORDS": "lens._terms",
    # files written whole or appended whole
    "atomic_write": "lens._files",
    "append_lines": "lens._files",
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
