"""Structure rules read from the source (an AST walk of every module in lens/ and harness/): imports happen at the
top of a module, except the optional heavy extras, which are imported where they are used, behind a guard; the
harness reaches the library only through ``lens`` and ``lens.parts``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Optional extras (or their heavy dependencies) that a module imports only where it needs them, so that the
# package works and starts fast without them. Adding a name here is a deliberate choice.
OPTIONAL_HEAVY = {
    "xllamacpp",  # the embedded model (extra "local")
    "mcp",  # lens mcp (extra "mcp")
    "mcp_types",
    "anyio",
    "torch",  # dense retrieval (extra "bench")
    "sentence_transformers",
    "ray",  # the Ray executor (extra "scale")
    "bm25s",  # BM25 baselines (extra "bench")
    "rank_bm25",
    "Stemmer",
    "scipy",  # statistics and plots (extra "bench")
    "sklearn",
    "matplotlib",
    "tqdm",
    "psutil",
    "watchdog",
    # document format libraries (core dependencies, but heavy to import: pdfium, lxml, Pillow): each format module
    # of lens.reader.formats imports its own when a file of that format is read, so `import lens` stays fast
    "pypdfium2",
    "docx",
    "pptx",
    "openpyxl",
}


def _function_imports(folder: str) -> list[str]:
    """``path:line module`` of every import inside a function body whose top package is not optional-heavy."""
    out = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    modules = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    modules = ["." * node.level + (node.module or "")]
                else:
                    continue
                for module in modules:
                    if module.split(".")[0] not in OPTIONAL_HEAVY:
                        out.append(f"{path.relative_to(ROOT)}:{node.lineno} {module}")
    return sorted(set(out))


def test_no_import_inside_a_function_in_lens_but_optional_extras():
    assert _function_imports("lens") == []


def test_no_import_inside_a_function_in_harness_but_optional_extras():
    assert _function_imports("harness") == []


def test_the_harness_imports_no_private_lens_module():
    private = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            private += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.startswith("lens._")]
    assert private == []
