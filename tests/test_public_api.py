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
    "Observation",
    "Finding",
    "Observer",
    "SupportingFacts",
    "answer_span",
    "AnswerSpan",
    "ask",
    "available_presets",
    "config_from_args",
    "content_terms",
    "fence_passage",
    "heuristic_decomposition",
    "is_endpoint_failure",
    "load_config",
    "memory_signal",
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
