"""`lens bench run | lifecycle | report` are registered without importing anything heavy."""

from __future__ import annotations

import json
import subprocess
import sys


def test_parsing_bench_commands_imports_no_runner_systems_or_models():
    code = (
        "import sys, json; from lens.faces._cli import build_parser; p = build_parser();"
        "p.parse_args(['bench', 'run', '--snapshot', 'D', '--questions', 'q', '--out', 'o']);"
        "p.parse_args(['bench', 'report', 'r']); p.parse_args(['bench', 'lifecycle', '--snapshots', 's', '--index-dir', 'i']);"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('harness', 'bm25s', 'torch', 'sentence_transformers', 'openai', 'matplotlib', 'numpy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out)
    assert set(loaded) <= {
        "harness",
        "harness.bench",
        "harness.bench.cli",
        "harness.audit",
        "harness.audit.cli",
        "harness.extra",
        "harness.calibrate",
        "harness.calibrate.cli",
        "harness.options",
    }, loaded


def test_unknown_systems_are_a_one_line_error(tmp_path, capsys):
    from lens.faces._cli import main

    rc = main(
        [
            "bench",
            "run",
            "--snapshot",
            str(tmp_path),
            "--questions",
            "q.json",
            "--out",
            str(tmp_path / "o"),
            "--systems",
            "lens,bert",
        ]
    )
    assert rc == 2 and "unknown bert" in capsys.readouterr().err


def test_the_paperqa_arm_without_its_extra_is_a_one_line_error_naming_it(bench_data, tmp_path):
    """PaperQA2 is an optional extra: asking for its arm where it is not installed says how to install it."""
    code = "import sys; sys.modules['paperqa'] = None; from lens.faces._cli import main; sys.exit(main(sys.argv[1:]))"
    args = ["bench", "run", "--snapshot", str(bench_data["D6"]), "--questions", str(bench_data["questions"])]
    args += ["--out", str(tmp_path / "run"), "--systems", "paperqa", "--base-url", "http://127.0.0.1:9/v1"]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "pip install 'lens-search[paperqa]'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "run" / "rows.jsonl").exists() or not (tmp_path / "run" / "rows.jsonl").read_text()
