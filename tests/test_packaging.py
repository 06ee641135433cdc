"""`pip install .` (not only editable) ships the prompts and presets as package data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(300)
def test_the_wheel_carries_prompts_configs_and_both_packages(tmp_path):
    build = tmp_path / "build"  # keep the checkout clean: setuptools' build folder goes to tmp
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
         str(ROOT)],
        capture_output=True, text=True, env={**__import__("os").environ, "PIP_NO_INPUT": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("lens_search-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for prompt in ROOT.joinpath("prompts").glob("*.md"):
        assert f"lens/prompts/{prompt.name}" in names
    for config in ROOT.joinpath("configs").glob("*.toml"):
        assert f"lens/configs/{config.name}" in names
    assert {"lens/_cli.py", "harness/runner.py", "harness/audit/cli.py", "harness/retrieval/bm25.py"} <= names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "lens = lens._cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
