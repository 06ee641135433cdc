"""The library's public surface is explicit and pinned (that the harness uses only it, never ``lens._*``: see
tests/test_structure.py)."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

import lens

ROOT = Path(__file__).resolve().parents[1]

# Changing this list is changing the public API: do it deliberately, with the README's Python API section.
PUBLIC = [
    "Agent",
    "AskResult",
    "Cancelled",
    "ConfigError",
    "Eligibility",
    "EndpointRefusedError",
    "Evidence",
    "LLMClient",
    "LLMError",
    "LLMResponse",
    "LLMUnavailableError",
    "LensConfig",
    "LensError",
    "MemoryEntry",
    "MemoryStore",
    "Progress",
    "RequirementStatus",
    "__version__",
    "ask",
    "available_presets",
    "load_config",
    "open_client",
]


def test_lens_all_is_pinned_and_every_name_resolves():
    assert sorted(lens.__all__) == sorted(PUBLIC)
    for name in lens.__all__:
        assert getattr(lens, name) is not None


def test_the_readme_python_api_section_names_only_public_api():
    import dataclasses

    from lens import AskResult, Progress

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### Python API", 1)[1].split("\n### ", 1)[0]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    imported = re.findall(r"from lens import (.+)", code)[0].split(", ")
    assert imported and set(imported) <= set(lens.__all__)
    compile(code, "README.md", "exec")  # the example is valid Python
    fields = {f.name for f in dataclasses.fields(AskResult)}
    named = set(re.findall(r"`(\w+)`", section)) & ({f.name for f in dataclasses.fields(AskResult)} | {"to_json"})
    assert {"answer_verified", "requirements", "stop_reason", "notes", "trace", "config_hash"} <= named
    assert named <= fields | {"to_json"}
    assert {"stage", "round", "max_rounds", "oracle_calls", "tokens", "elapsed_s", "detail"} == {
        f.name for f in dataclasses.fields(Progress)
    }


# The documented research parts the harness builds on (lens.parts); changing this list changes that contract.
PARTS = [
    "AnswerSpan",
    "Budget",
    "assemble_loop",
    "CorpusScan",
    "CorpusView",
    "Cost",
    "QuestionCost",
    "CostMeter",
    "Decomposition",
    "Document",
    "ELSEWHERE",
    "Extractor",
    "Judgement",
    "LOGPROB_FEATURES",
    "Loop",
    "LoopState",
    "MAX_REQUIREMENTS",
    "Observer",
    "OracleCall",
    "PLACEHOLDER_ANSWERS",
    "Prior",
    "PriorScore",
    "READING_FEATURES",
    "ReadingModel",
    "Requirement",
    "STOPWORDS",
    "Stop",
    "StopReason",
    "TOP_LOGPROBS",
    "add_config_args",
    "answer_span",
    "answer_text",
    "answer_type",
    "append_lines",
    "atomic_write",
    "base_title",
    "budgeted_call",
    "canonical_hash",
    "canonical_json",
    "capitalised_spans",
    "config_from_args",
    "content_terms",
    "decompose",
    "fence_passage",
    "format_of",
    "heuristic_decomposition",
    "is_endpoint_failure",
    "memory_key",
    "memory_signal",
    "merge_overrides",
    "merge_round_robin",
    "new_entry",
    "normalise",
    "read_window",
    "reading_model_for",
    "render",
    "scan_corpus",
    "survey_corpus",
    "StatsStore",
    "Unreadable",
    "extract",
    "sha256_hex",
    "unit_documents",
    "whole_entity",
    "split_sentences",
    "title_key",
    "tokens",
    "user_config_path",
]


def test_lens_parts_is_pinned_and_every_name_resolves():
    import lens.parts

    assert sorted(lens.parts.__all__) == sorted(PARTS)
    for name in lens.parts.__all__:
        assert getattr(lens.parts, name) is not None


# Files outside lens/ that use the library as its clients do; benchmarks/results/ holds scripts frozen with the runs
# they produced (they ran against the commit their results name), so they are not held to today's surface.
CLIENTS = [
    p
    for folder in ("harness", "benchmarks", "corpora", "tests")
    for p in sorted((ROOT / folder).rglob("*.py"))
    if "results" not in p.relative_to(ROOT).parts and p != Path(__file__).resolve()  # this file tries wrong ones
]


def _code_in(path: Path) -> list[ast.Module]:
    """The module's tree, and the tree of every string in it that is Python code naming lens (a child process's
    script run with ``python -c``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    trees = [tree]
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "lens" in node.value:
            try:
                trees.append(ast.parse(textwrap.dedent(node.value)))
            except SyntaxError:
                pass  # prose, not code
    return trees


def _lens_names_taken(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of every name ``path`` takes from ``lens`` or ``lens.parts``: ``from lens import X``,
    ``from lens.parts import X``, and ``lens.X`` / ``lens.parts.X`` after ``import lens`` or ``import lens.parts``
    (a line of a child's script counts from the script's first line)."""
    taken = []
    for tree in _code_in(path):
        imported_lens = False
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in ("lens", "lens.parts"):
                taken += [(node.lineno, node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                imported_lens |= any(a.name.split(".")[0] == "lens" and not a.asname for a in node.names)
        for node in ast.walk(tree) if imported_lens else ():
            if not isinstance(node, ast.Attribute):
                continue
            base = node.value
            if isinstance(base, ast.Name) and base.id == "lens":
                taken.append((node.lineno, "lens", node.attr))
            elif (
                isinstance(base, ast.Attribute)
                and base.attr == "parts"
                and isinstance(base.value, ast.Name)
                and base.value.id == "lens"
            ):
                taken.append((node.lineno, "lens.parts", node.attr))
    return taken


def test_no_file_outside_lens_takes_a_name_that_is_not_public_or_a_part():
    """What ``lens`` serves is ``lens.__all__`` and what ``lens.parts`` serves is ``lens.parts.__all__``: a research
    part imported from the top (``from lens import Prior``) is an error, not a fallback."""
    import lens.parts

    allowed = {
        "lens": set(lens.__all__) | {"parts", "__all__", "__file__"},
        "lens.parts": set(lens.parts.__all__) | {"__all__"},
    }
    taken = [(p, line, module, name) for p in CLIENTS for line, module, name in _lens_names_taken(p)]
    assert {"Agent", "Prior", "ReadingModel"} <= {name for *_, name in taken}  # the walk sees the imports
    wrong = [
        f"{p.relative_to(ROOT)}:{line} {module}.{name}"
        for p, line, module, name in taken
        if name not in allowed[module]
    ]
    assert wrong == [], "not in lens.__all__ (user names) or lens.parts.__all__ (research parts):\n" + "\n".join(wrong)


def test_a_research_part_is_not_served_from_the_top():
    import lens.parts

    assert lens.parts.Prior is not None
    with pytest.raises(AttributeError, match="lens.parts"):
        lens.Prior  # noqa: B018
    with pytest.raises(ImportError):
        from lens import Prior  # noqa: F401
