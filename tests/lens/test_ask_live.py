"""Live: `lens ask` with the embedded model on a demo question returns evidence from the right file.

Runs the real CLI in a subprocess (embedded llama.cpp server, the `fast` preset's 0.5B model, response cache
off), so the whole path — scan, prior, loop, consolidation, synthesis — runs as a user runs it.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.live,
    pytest.mark.timeout(600),
    pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="needs the 'local' extra"),
]

DEMO = Path(__file__).resolve().parents[2] / "corpora" / "demo"


def test_lens_ask_on_the_demo_corpus_cites_the_right_file():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lens.faces._cli",
            "ask",
            "Who was the first keeper of Calder Point Light?",
            str(DEMO),
            "--preset",
            "fast",
            "--json",
            "--set",
            "llm.cache=false",
        ],
        capture_output=True,
        text=True,
        timeout=580,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    paths = [e["path"] for e in result["evidence"]]
    assert "lighthouses/calder-point-light.md" in paths
    assert result["cost"]["oracle_calls"] >= 2  # decomposition and at least one more real call
    assert result["cost"]["oracle_calls"] <= result["cost"]["max_oracle_calls"]
    assert "QUESTIONS.md" not in paths
    cited = next(e for e in result["evidence"] if e["path"] == "lighthouses/calder-point-light.md")
    text = (DEMO / cited["path"]).read_text(encoding="utf-8").splitlines()
    assert cited["text"].split()[0] in " ".join(text[cited["line_start"] - 1 : cited["line_end"]])
