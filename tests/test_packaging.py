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
    # built from a copy: setuptools reuses a build/ folder in the tree, which would keep removed modules
    src = _source_copy(tmp_path / "src")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(src),
        ],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "PIP_NO_INPUT": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("lens_search-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for prompt in ROOT.joinpath("prompts").glob("*.md"):
        assert f"lens/prompts/{prompt.name}" in names
    for config in ROOT.joinpath("configs").glob("*.toml"):
        assert f"lens/configs/{config.name}" in names
    # the harness's own prompts and configs are its package data, not the library's
    for prompt in ROOT.joinpath("harness", "prompts").glob("*.md"):
        assert f"harness/prompts/{prompt.name}" in names and f"lens/prompts/{prompt.name}" not in names
    for config in ROOT.joinpath("harness", "configs").glob("*.toml"):
        assert f"harness/configs/{config.name}" in names and f"lens/configs/{config.name}" not in names
    assert {"lens/faces/static/index.html", "lens/faces/static/app.js", "lens/faces/static/app.css"} <= names
    assert {
        "lens/faces/_cli.py",
        "harness/bench/runner.py",
        "harness/audit/cli.py",
        "harness/retrieval/bm25.py",
    } <= names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    entries = zipfile.ZipFile(wheel).read(entry).decode()
    assert "lens = lens.faces._cli:main" in entries
    assert "[lens.commands]" in entries and "bench = harness.bench.cli:add_bench_parser" in entries


HEAVY = ("scipy", "matplotlib", "sklearn", "bm25s", "Stemmer", "torch", "sentence_transformers", "tqdm", "ray", "mcp")
DEMO_Q = "Which is taller, Calder Point Light or Skerrow Light?"


def _source_copy(dest: Path) -> Path:
    """The tracked and untracked-but-not-ignored files of the checkout, copied (pip builds in the tree)."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for rel in files:
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_bytes(src.read_bytes())
    return dest


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_library_alone_installs_answers_and_names_the_bench_extra(tmp_path):
    from .harness.systems.scripted_llm import Responder, StubServer

    src = _source_copy(tmp_path / "src")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(src)],
        capture_output=True,
        text=True,
        timeout=800,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    lens = str(venv / "bin" / "lens")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("LENS_")}

    help_ = subprocess.run([lens, "bench", "--help"], capture_output=True, text=True, env=env)
    assert help_.returncode == 0 and "pip install 'lens-search[bench]'" in help_.stdout
    run = subprocess.run([lens, "bench", "run", "--snapshot", "x"], capture_output=True, text=True, env=env)
    assert run.returncode == 2 and run.stderr.strip().startswith("lens: error: `lens bench` needs the bench extra")
    audit = subprocess.run([lens, "audit", "run"], capture_output=True, text=True, env=env)
    assert audit.returncode == 2 and "lens-search[bench]" in audit.stderr
    serve = subprocess.run([lens, "serve", str(tmp_path)], capture_output=True, text=True, env=env, timeout=60)
    assert serve.returncode == 2 and "pip install 'lens-search[serve]'" in serve.stderr  # the page's extra, named

    with StubServer(Responder()) as server:
        ask = subprocess.run(
            [
                lens,
                "ask",
                DEMO_Q,
                str(ROOT / "corpora" / "demo"),
                "--base-url",
                server.base_url,
                "--set",
                "llm.cache=false",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert ask.returncode == 0, ask.stderr[-2000:]
    assert ask.stdout.startswith("Answer: ") and "Evidence:" in ask.stdout

    probe = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            f"import lens, lens._agent, lens.llm._llm, sys; print([m for m in {HEAVY!r} if m in sys.modules])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "[]"


def test_lens_ask_imports_none_of_the_harness_dependencies(tmp_path):
    """In an environment that has every extra installed, answering a question still loads none of them."""
    from .harness.systems.scripted_llm import Responder, StubServer

    code = (
        "import sys; from lens.faces._cli import main; rc = main(sys.argv[1:]); "
        f"print('HEAVY', [m for m in {HEAVY!r} + ('harness',) if m in sys.modules]); sys.exit(rc)"
    )
    with StubServer(Responder()) as server:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                code,
                "ask",
                DEMO_Q,
                str(ROOT / "corpora" / "demo"),
                "--base-url",
                server.base_url,
                "--set",
                "llm.cache=false",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # a library command does not even scan for other packages' command groups: no harness module is loaded
    loaded = eval(proc.stdout.split("HEAVY ", 1)[1])
    assert loaded == [], loaded


def test_the_library_never_imports_the_harness():
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "lens").glob("*.py")
        if any(
            line.lstrip().startswith(("import harness", "from harness"))
            for line in p.read_text(encoding="utf-8").splitlines()
        )
    ]
    assert offenders == []


def test_the_configuration_loads_without_tomllib_as_on_python_3_10():
    """``requires-python >= 3.10``: without the stdlib ``tomllib`` (3.11+), every config reader uses ``tomli``."""
    code = (
        "import sys, tomllib\n"
        "sys.modules['tomli'] = tomllib  # the backport's API; this interpreter only has the stdlib copy\n"
        "sys.modules['tomllib'] = None  # import tomllib now fails, as on Python 3.10\n"
        "from lens._config import load_config\n"
        "from harness.audit.config import load_audit_config\n"
        "import harness.calibrate.user_config  # the reading model's writer reads its TOML back\n"
        "print(load_config('fast', env={}).preset, type(load_audit_config('audit-small')).__name__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["fast", "AuditConfig"]
