"""The ``lens`` command line: instant ``--help`` (no heavy imports), ``corpus stats`` output, and known
failures as one line on stderr with exit code 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lens.faces._cli import main

from .conftest import BASE_URL, completion, error

HEAVY = (
    "openai",
    "httpx",
    "numpy",
    "torch",
    "scipy",
    "sklearn",
    "bm25s",
    "sentence_transformers",
    "xllamacpp",
    "pydantic",
    "matplotlib",
    "mcp",
)


def run_lens(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from lens.faces._cli import main; sys.exit(main())", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_help_works_without_importing_heavy_modules():
    probe = (
        "import json, sys\n"
        "from lens.faces._cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit as e:\n"
        "    code = e.code\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "print(json.dumps({'code': code, 'heavy': heavy}), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    result = json.loads(proc.stderr.strip().splitlines()[-1])
    assert result == {"code": 0, "heavy": []}
    assert "corpus" in proc.stdout and "llm" in proc.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["llm", "--help"],
        ["corpus", "stats", "--help"],
        ["llm", "check", "--help"],
        ["mcp", "--help"],
        ["serve", "--help"],
    ],
)
def test_subcommand_help_exits_zero(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    assert "usage: lens" in capsys.readouterr().out


def test_console_script_is_installed():
    exe = Path(sys.executable).with_name("lens")
    if not exe.exists():
        pytest.skip("console script not installed next to this interpreter")
    proc = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "usage: lens" in proc.stdout


def test_corpus_stats_json_reports_the_folder(tmp_path, capsys):
    (tmp_path / "a.md").write_text("# Alpha\n\nOne. Two.\n", encoding="utf-8")
    (tmp_path / "b").write_text("Beta\nThree.\n", encoding="utf-8")
    (tmp_path / "w.jsonl").write_text(
        json.dumps({"title": "Gamma", "text": ["Four."]}) + "\n" + "{oops\n", encoding="utf-8"
    )
    (tmp_path / "c.png").write_bytes(b"\x89PNG")

    assert main(["corpus", "stats", str(tmp_path), "--json"]) == 0

    stats = json.loads(capsys.readouterr().out)
    assert stats["root"] == str(tmp_path)
    assert (stats["files"], stats["documents"]) == (3, 3)
    assert stats["bytes"] == sum(p.stat().st_size for p in tmp_path.iterdir() if p.suffix != ".png")
    assert stats["skipped"] == {"binary": 1, "malformed_record": 1}
    assert stats["problems"] == ["w.jsonl:2: malformed JSON (Expecting property name enclosed in double quotes)"]
    assert stats["mb_per_s"] >= 0


def test_corpus_stats_text_output(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("Alpha.", encoding="utf-8")
    assert main(["corpus", "stats", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "files       1" in out and "skipped     none" in out


def test_missing_folder_is_one_line_on_stderr_and_exit_code_2(tmp_path):
    proc = run_lens("corpus", "stats", str(tmp_path / "absent"), "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("lens: error: ") and "absent" in lines[0] and "no such folder" in lines[0]


def test_a_question_over_the_length_limit_is_one_line_on_stderr_and_exit_code_2(tmp_path):
    (tmp_path / "a.txt").write_text("Alpha\nThe keeper was Ann.\n")
    question = "Who was the keeper? " * 300  # 6,000 characters
    proc = run_lens("ask", question, str(tmp_path), "--base-url", "http://127.0.0.1:9/v1")
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert line == "lens: error: the question is 6,000 characters long; the limit is 4,000"


def test_bad_configuration_is_one_line_on_stderr_and_exit_code_2(capsys):
    code = main(["llm", "check", "--set", "llm.max_retries=-1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "llm.max_retries" in err[0]


def test_unknown_preset_is_a_clean_error(capsys):
    assert main(["llm", "check", "--preset", "turbo"]) == 2
    assert "unknown preset 'turbo'" in capsys.readouterr().err


def test_usage_errors_exit_with_argparse_code(capsys):
    with pytest.raises(SystemExit) as e:
        main(["corpus", "stats"])
    assert e.value.code == 2
    assert "path" in capsys.readouterr().err


def test_lens_ask_escapes_control_characters_from_documents_and_answers(tmp_path, endpoint, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "sky.txt").write_text("The sky is blue.\x1b]0;pwned\x07 It was \x1b[2J clear.\n")
    endpoint.chat.mock(return_value=completion(json.dumps({"answer": "blue\x1b]0;owned\x07", "missing": []})))
    argv = ["ask", "What colour is the sky?", str(folder), "--base-url", BASE_URL, "--set", "llm.cache=false"]

    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert out.startswith("Answer: blue") and "\\x1b]0;" in out and "\\x1b[2J" in out

    assert main([*argv, "--json"]) == 0  # JSON is data: its strings keep every character
    assert "\x1b]0;" in json.loads(capsys.readouterr().out)["answer"]


def test_an_error_line_escapes_control_characters_the_endpoint_sent(endpoint, capsys):
    endpoint.chat.mock(return_value=error(402, "no\x1b[2J"))
    folder = Path(__file__).resolve().parents[2] / "corpora" / "demo"

    rc = main(["ask", "Which light is taller?", str(folder), "--base-url", BASE_URL, "--set", "llm.max_retries=0"])

    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "\x1b" not in err and "no\\x1b[2J" in err
