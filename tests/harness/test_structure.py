"""The harness's structure, read from its source: imports at module level only (but for optional heavy extras),
only public names of the library, and layers that import downwards (shared modules ← calibrate ← bench ← audit)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS = sorted((ROOT / "harness").rglob("*.py"))
BENCHMARKS = sorted((ROOT / "benchmarks").rglob("*.py"))

# Imported inside a function only so that the extra stays optional (or a heavy import stays off the CLI's path).
OPTIONAL_EXTRAS = {
    "bm25s",
    "litellm",
    "lmi",
    "matplotlib",
    "mcp",
    "paperqa",
    "psutil",
    "pypdf",
    "ray",
    "reportlab",
    "scipy",
    "sentence_transformers",
    "sklearn",
    "Stemmer",
    "torch",
    "tqdm",
    "xllamacpp",
}

# harness.<module> → the harness packages it may not import (each layer imports only the ones below it)
LAYERS = {
    "files": {"bench", "audit", "calibrate"},
    "options": {"bench", "audit", "calibrate"},
    "extra": {"bench", "audit", "calibrate"},
    "workloads": {"bench", "audit", "calibrate"},
    "streams": {"bench", "audit", "calibrate"},
    "retrieval": {"bench", "audit", "calibrate"},
    "calibrate": {"bench", "audit"},
    "bench": {"audit"},
}


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return [node.module or ""] if node.level == 0 else []


def _function_imports(path: Path) -> list[str]:
    found = []
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    for name in _imported(node):
                        if name.split(".")[0] not in OPTIONAL_EXTRAS:
                            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {fn.name}() imports {name}")
    return found


def _all_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (n.lineno, name) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for name in _imported(n)
    ]


def test_harness_imports_at_module_level_except_optional_extras():
    found = [f for p in HARNESS for f in _function_imports(p)]
    assert not found, "imports inside functions (a hidden cycle, or a missing extra in the allow-list):\n" + "\n".join(
        found
    )


def _lens_modules(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) of every lens module ``path`` imports, ``from lens.reader import _corpus`` included
    (as ``lens.reader._corpus``: a private module taken as a name of its package)."""
    found = []
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").split(".")[0] == "lens":
            found += [(n.lineno, n.module)] + [(n.lineno, f"{n.module}.{a.name}") for a in n.names]
        elif isinstance(n, ast.Import):
            found += [(n.lineno, a.name) for a in n.names if a.name.split(".")[0] == "lens"]
    return found


# Measurement scripts whose subject is lens's private steps (they time them one by one), kept with their results.
# Adding one is a deliberate choice: every other script uses `lens` and `lens.parts` as a user would.
PROFILERS = {
    "benchmarks/results/scale/first_survey_breakdown.py",
    "benchmarks/results/scale/first_survey_floor.py",
    "benchmarks/results/scale/first_survey_timeline.py",
}


@pytest.mark.parametrize("tree", ["harness", "benchmarks", "corpora"])
def test_no_private_library_module_is_imported(tree):
    found = [
        f"{p.relative_to(ROOT)}:{line} imports {name}"
        for p in sorted((ROOT / tree).rglob("*.py"))
        if str(p.relative_to(ROOT)) not in PROFILERS
        for line, name in _lens_modules(p)
        if any(x.startswith("_") and not x.startswith("__") for x in name.split(".")[1:])
    ]
    assert not found, "use `lens` or `lens.parts` (add the name there):\n" + "\n".join(found)


def test_each_layer_imports_only_the_layers_below_it():
    found = []
    for p in HARNESS:
        parts = p.relative_to(ROOT / "harness").with_suffix("").parts
        banned = LAYERS.get(parts[0], set())
        for line, name in _all_imports(p):
            pieces = name.split(".")
            if pieces[0] == "harness" and len(pieces) > 1 and pieces[1] in banned:
                found.append(f"{p.relative_to(ROOT)}:{line} imports {name}")
    assert not found, "an import upwards (a cycle between layers):\n" + "\n".join(found)
