"""Which code produced an arm's predictions: a fingerprint of the source files and prompts it runs.

The configuration hash says *how* an arm was set up, not *which code* ran it. The fingerprint enters every arm's
``system_hash``, so a run folder never silently mixes rows made before and after the arm's code or prompts changed
(a rerun then refuses and names the change). Only the files an arm depends on count, so an unrelated edit does
not block a resume:

- ``lens``: every module of the ``lens`` package and every prompt file (the agent's own);
- the baselines: ``harness/systems``, ``harness/retrieval``, the LLM client and prompt renderer of ``lens``, and
  the arm's prompt file.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources
from pathlib import Path

__all__ = ["code_fingerprint"]

_BASELINE_PROMPTS = {
    "react": ("react",),
    "bm25": ("rag",),
    "bm25-span": ("rag",),
    "hybrid": ("rag",),
    "closed": ("closed_book",),
    "gold-passages": ("rag",),
    "paperqa": (),  # PaperQA2's prompts are its own (its version enters the arm's parameters)
}


def _digest(entries: list[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for name, data in sorted(entries):
        h.update(f"{name}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    return h.hexdigest()


def _py_files(package: str) -> list[tuple[str, bytes]]:
    """Every ``.py`` file of ``package`` and its sub-packages, named by its path under the package."""
    root = Path(str(resources.files(package)))
    return [
        (f"{package}/{p.relative_to(root).as_posix()}", p.read_bytes())
        for p in sorted(root.rglob("*.py"))
        if "__pycache__" not in p.parts
    ]


def _prompts(package: str, names: tuple[str, ...] | None = None) -> list[tuple[str, bytes]]:
    root = resources.files(package)
    files = [p for p in root.iterdir() if p.name.endswith(".md")]
    if names is not None:
        files = [p for p in files if p.name[:-3] in names]
    return [(f"{package}/{p.name}", p.read_bytes()) for p in files]


@functools.lru_cache(maxsize=None)
def code_fingerprint(system: str) -> str:
    """sha256 over the (name, sha256) of the files arm ``system`` runs; 16 hex digits."""
    if system == "lens":
        entries = _py_files("lens") + _prompts("lens.prompts")
    else:
        lens_root = Path(str(resources.files("lens")))
        entries = _py_files("harness.bench.systems") + _py_files("harness.retrieval")
        lens_files = ("llm/_llm.py", "llm/_prompts.py", "llm/_cost.py")
        lens_files += ("answer/_spans.py",) if system == "bm25-span" else ()
        entries += [(f"lens/{n}", (lens_root / n).read_bytes()) for n in lens_files]
        entries += _prompts("harness.prompts", _BASELINE_PROMPTS[system])
    return _digest(entries)[:16]
