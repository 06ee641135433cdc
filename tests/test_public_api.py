"""The library's public surface is explicit and pinned, and the harness uses only it (never ``lens._*``)."""

from __future__ import annotations

import re
from pathlib import Path

import lens

ROOT = Path(__file__).resolve().parents[1]

# Changing this list is changing the public API: do it deliberately, with the README's Python API section.
PUBLIC = [
    "Agent",
    "AskResult",
    "ConfigError",
    "CorpusScan",
    "CorpusView",
    "Cost",
    "CostMeter",
    "Decomposition",
    "Document",
    "Eligibility",
    "EndpointRefusedError",
    "Evidence",
    "LLMClient",
    "LLMError",
    "LLMResponse",
    "LLMUnavailableError",
    "LensConfig",
    "LensError",
    "MAX_REQUIREMENTS",
    "MemoryEntry",
    "MemoryStore",
    "Prior",
    "PriorScore",
    "Requirement",
    "RequirementStatus",
    "__version__",
    "add_config_args",
    "answer_text",
    "PLACEHOLDER_ANSWERS",
    "Judgement",
    "Observer",
    "answer_span",
    "AnswerSpan",
    "Progress",
    "ask",
    "available_presets",
    "config_from_args",
    "content_terms",
    "fence_passage",
    "heuristic_decomposition",
    "is_endpoint_failure",
    "load_config",
    "memory_key",
    "memory_signal",
    "merge_round_robin",
    "merge_overrides",
    "new_entry",
    "open_client",
    "render",
    "scan_corpus",
    "split_sentences",
]


def test_lens_all_is_pinned_and_every_name_resolves():
    assert sorted(lens.__all__) == sorted(PUBLIC)
    for name in lens.__all__:
        assert getattr(lens, name) is not None


def test_no_harness_module_imports_a_private_lens_module():
    pattern = re.compile(r"^\s*(from\s+lens\._\w*|import\s+lens\._\w*)", re.MULTILINE)
    offenders = [
        f"{p.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}"
        for p in sorted((ROOT / "harness").rglob("*.py"))
        for text in [p.read_text(encoding="utf-8")]
        for m in pattern.finditer(text)
    ]
    assert offenders == []


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
    "Budget",
    "ELSEWHERE",
    "LOGPROB_FEATURES",
    "Loop",
    "LoopState",
    "READING_FEATURES",
    "ReadingModel",
    "STOPWORDS",
    "TOP_LOGPROBS",
    "answer_type",
    "append_lines",
    "atomic_write",
    "base_title",
    "capitalised_spans",
    "decompose",
    "normalise",
    "read_window",
    "title_key",
    "tokens",
    "user_config_path",
]


def test_lens_parts_is_pinned_and_every_name_resolves():
    import lens.parts

    assert sorted(lens.parts.__all__) == sorted(PARTS)
    for name in lens.parts.__all__:
        assert getattr(lens.parts, name) is not None
