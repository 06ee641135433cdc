"""The library's public surface is explicit and pinned (that the harness uses only it, never ``lens._*``: see
tests/test_structure.py)."""

from __future__ import annotations

import re
from pathlib import Path

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
    assert {"stage", "round", "max_rounds", "oracle_calls", "tokens", "elapsed_s"} == {
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
    "heuristic_decomposition",
    "is_endpoint_failure",
    "memory_key",
    "memory_signal",
    "merge_overrides",
    "merge_round_robin",
    "new_entry",
    "normalise",
    "read_window",
    "render",
    "scan_corpus",
    "survey_corpus",
    "StatsStore",
    "Unreadable",
    "extract",
    "format_of",
    "sha256_hex",
    "unit_documents",
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


def test_every_name_the_harness_takes_from_lens_is_public_or_a_part():
    """``from lens import X`` in harness/ and benchmarks/: X is in ``lens.__all__`` or ``lens.parts.__all__`` (a
    part still resolves from the top while the harness moves its imports to ``lens.parts``)."""
    import ast

    import lens.parts

    taken = {
        alias.name
        for folder in ("harness", "benchmarks")
        for p in sorted((ROOT / folder).rglob("*.py"))
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == "lens" and node.level == 0
        for alias in node.names
    }
    assert {"Agent", "Judgement", "Prior"} <= taken
    assert taken <= set(lens.__all__) | set(lens.parts.__all__) | {"parts"}, sorted(taken - set(lens.__all__))
    for name in taken - set(lens.__all__) - {"parts"}:
        assert getattr(lens, name) is getattr(lens.parts, name)
