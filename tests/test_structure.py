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
    "paperqa",  # the PaperQA2 benchmark arm (extra "paperqa") and its LLM layer
    "litellm",
    "lmi",
    "pypdf",
    "bm25s",  # BM25 baselines (extra "bench")
    "rank_bm25",
    "Stemmer",
    "scipy",  # statistics and plots (extra "bench")
    "sklearn",
    "matplotlib",
    "tqdm",
    "psutil",
    "watchdog",
    "reportlab",  # writes PDFs: format-invariance snapshots (extra "bench")
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


def _private(module: str) -> bool:
    """A private lens module: any part of its dotted name under ``lens`` begins with an underscore."""
    parts = module.split(".")
    return parts[0] == "lens" and any(p.startswith("_") for p in parts[1:])


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
            private += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if _private(n)]
    assert private == []


# The stages of a question, lowest first: a module may import its own room and the rooms before it, never one after
# (the foundations are the top-level modules every stage uses; ``lens`` and ``lens.parts`` resolve names lazily).
ROOMS = [
    ("lens._errors", "lens._files", "lens._terms", "lens._progress", "lens._result"),
    ("lens._config",),
    ("lens.llm",),
    ("lens.reader",),
    ("lens.question",),
    ("lens.prior",),
    ("lens.loop",),
    ("lens.answer",),
    ("lens.memory",),
    ("lens._agent",),
    ("lens.faces",),
]


def _room(module: str) -> int | None:
    for rank, prefixes in enumerate(ROOMS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_lens_module_is_in_a_room():
    modules = [_module_name(p) for p in sorted((ROOT / "lens").rglob("*.py"))]
    assert [m for m in modules if _room(m) is None and m not in ("lens", "lens.parts")] == []


def test_the_stages_import_only_themselves_and_the_stages_before_them():
    backward = []
    for path in sorted((ROOT / "lens").rglob("*.py")):
        here = _room(_module_name(path))
        if here is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module] if node.module != "lens" else [f"lens.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                there = _room(target)
                if there is not None and there > here:
                    backward.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {target}")
    assert backward == []


def test_no_function_in_lens_is_longer_than_80_lines():
    """Issue 57: a stage reads as named steps; a function past 80 lines is split into them."""
    long = []
    for path in sorted((ROOT / "lens").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1})")
    assert long == []
