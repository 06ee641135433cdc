"""Every endpoint failure is loud: ``lens ask`` against an endpoint that refuses or fails every call exits
non-zero with one line naming the cause; when some calls succeed the answer is flagged best effort and the cost
line shows the failed and retried requests; a malformed ``--base-url`` is one line, exit 2; transport settings
(retries, backoff) do not change the configuration hash; ``llm.cache_dir`` inside the folder is refused.

The endpoint is respx on the production client path (real ``openai`` SDK, real retries)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from lens._config import load_config
from lens.faces._cli import main

from .conftest import BASE_URL, completion, error

DEMO = Path(__file__).resolve().parents[2] / "corpora" / "demo"
QUESTION = "Which is taller, Calder Point Light or Skerrow Light?"


def ask(*extra: str) -> list[str]:
    return [
        "ask",
        QUESTION,
        str(DEMO),
        "--base-url",
        BASE_URL,
        "--model",
        "test-model",
        "--set",
        "llm.cache=false",
        "--set",
        "llm.max_retries=1",
        "--set",
        "llm.retry_backoff_s=0",
        "--set",
        "llm.call_timeout_s=5",
        *extra,
    ]


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("LENS_API_KEY", raising=False)
    for name in list(__import__("os").environ):
        if name.startswith("LENS_"):
            monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    "status, expected",
    [
        (401, "lens: error: the endpoint refused every call: 401 Unauthorized — check LENS_API_KEY (it is not set)"),
        (403, "lens: error: the endpoint refused every call: 403 Forbidden — check LENS_API_KEY (it is not set)"),
        (
            404,
            "lens: error: the endpoint refused every call: 404 Not Found — check the model name (test-model) and --base-url",
        ),
        (429, "lens: error: the endpoint refused every call: 429 Too Many Requests (on all 2 attempts of each)"),
        (500, "lens: error: the endpoint failed every call: 500 Internal Server Error (on all 2 attempts of each)"),
    ],
)
def test_an_endpoint_that_refuses_every_call_exits_2_with_one_line(endpoint, capsys, status, expected):
    endpoint.chat.mock(return_value=error(status))

    rc = main(ask())

    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.strip() == expected and err.count("\n") == 1
    # it gave up on the first call: nothing has answered, nothing more is worth sending
    assert endpoint.chat.call_count == (2 if status >= 429 else 1)


def test_an_endpoint_whose_every_call_times_out_exits_2_naming_the_timeout(endpoint, capsys):
    endpoint.chat.mock(side_effect=httpx.ReadTimeout("slow"))

    rc = main(ask())

    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert err.startswith("lens: error: every call to the endpoint timed out (5 s per call, 2 attempts)")


def test_the_key_variable_is_named_and_its_value_never_printed(endpoint, capsys, monkeypatch):
    monkeypatch.setenv("LENS_API_KEY", "sk-secret-value")
    endpoint.chat.mock(return_value=error(401))

    rc = main(ask())

    err = capsys.readouterr().err
    assert rc == 2 and "check LENS_API_KEY" in err and "not set" not in err and "sk-secret" not in err


@pytest.mark.parametrize(
    "status, words",
    [(400, "400 Bad Request"), (413, "413 Request Entity Too Large"), (422, "422 Unprocessable Entity")],
)
def test_an_endpoint_that_rejects_every_call_with_one_request_error_exits_2_with_its_message(
    endpoint, capsys, status, words
):
    endpoint.chat.mock(return_value=error(status, "temperature must be between 0 and 2"))

    rc = main(ask())

    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err == f"lens: error: the endpoint rejected every call: {words}: temperature must be between 0 and 2\n"
    # the second identical rejection ends the question (one more request when it was an observation asking for
    # logprobs: that rejection is first taken for the parameter's and the call is made again without it)
    assert endpoint.chat.call_count <= 3


def test_an_api_key_the_endpoint_echoes_is_redacted_from_the_error_line(endpoint, capsys, monkeypatch):
    monkeypatch.setenv("LENS_API_KEY", "sk-live-0123456789abcdef")
    endpoint.chat.mock(return_value=error(402, "denied for credentials Bearer sk-live-0123456789abcdef"))

    rc = main(ask())

    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "sk-live-0123456789abcdef" not in err and "Bearer [API key redacted]" in err


@pytest.mark.parametrize(
    "key, what", [("sk-caf\u00e9", "a non-ASCII character at position 7"), ("sk-a\nb", "a newline at position 5")]
)
def test_an_api_key_no_http_header_can_carry_is_one_line_naming_the_variable(endpoint, capsys, monkeypatch, key, what):
    monkeypatch.setenv("LENS_API_KEY", key)

    rc = main(ask())

    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and endpoint.chat.call_count == 0
    assert err.startswith(f"lens: error: LENS_API_KEY: the API key holds {what}") and key not in err


def _decomposition_then(status: int):
    """The first call (decomposition) answers; every later call fails with ``status``."""
    calls = {"n": 0}

    def effect(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            return completion(
                json.dumps(
                    {
                        "facts": [
                            {
                                "id": "R1",
                                "entity": "Calder Point Light",
                                "text": "height of Calder Point Light",
                                "search": ["Calder Point Light"],
                            },
                            {
                                "id": "R2",
                                "entity": "Skerrow Light",
                                "text": "height of Skerrow Light",
                                "search": ["Skerrow Light"],
                            },
                        ]
                    }
                )
            )
        return error(status)

    return effect


def test_when_some_calls_succeed_the_answer_is_best_effort_and_the_cost_line_shows_failures(endpoint, capsys):
    endpoint.chat.mock(side_effect=_decomposition_then(500))

    rc = main(ask())

    out, err = capsys.readouterr()
    assert rc == 0
    assert "(best effort" in out.splitlines()[0]
    cost = next(line for line in out.splitlines() if line.startswith("Cost: "))
    assert "1 oracle calls" in cost and "failed requests" in cost and "retried" in cost
    failed = int(cost.split("; ")[1].split(" failed requests")[0])
    retried = int(cost.split("failed requests, ")[1].split(" retried")[0])
    assert failed == endpoint.chat.call_count - 1 and retried == failed // 2  # each failed call: 2 attempts
    assert any(line.startswith("Note: ") and "failed at the endpoint" in line for line in out.splitlines())


def test_json_output_carries_failed_calls_and_retries(endpoint, capsys):
    endpoint.chat.mock(side_effect=_decomposition_then(503))

    assert main(ask("--json")) == 0

    result = json.loads(capsys.readouterr().out)
    assert result["best_effort"] is True
    c = result["cost"]
    assert c["oracle_calls"] == 1 and c["failed_calls"] >= 2 and c["retries"] >= 1 and c["endpoint_errors"] >= 1


def test_skipped_files_are_shown_in_one_line(endpoint, capsys):
    endpoint.chat.mock(side_effect=_decomposition_then(500))

    main(ask())

    out = capsys.readouterr().out
    skipped = [line for line in out.splitlines() if line.startswith("Skipped: ")]
    assert skipped == ["Skipped: 1 hidden, 1 ignored"]  # .lensignore itself; QUESTIONS.md, which it excludes


@pytest.mark.parametrize("url", ["http://127.0.0.1:notaport/v1", "ftp://example.org/v1", "not a url"])
def test_a_malformed_base_url_is_one_line_exit_2(capsys, url):
    rc = main(["ask", QUESTION, str(DEMO), "--base-url", url])

    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "llm.base_url" in err and "Traceback" not in err


def test_a_cache_dir_inside_the_document_folder_is_refused_and_nothing_is_written(tmp_path, endpoint, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("The sky is blue.\n")
    endpoint.chat.mock(return_value=completion("{}"))

    rc = main(
        [
            "ask",
            "What colour is the sky?",
            str(folder),
            "--base-url",
            BASE_URL,
            "--set",
            f"llm.cache_dir={folder / 'cache'}",
        ]
    )

    assert rc == 2 and "inside the document folder" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["a.txt"] and endpoint.chat.call_count == 0


def test_transport_settings_stay_out_of_the_configuration_hash():
    base = load_config("deep", env={}).canonical_hash()
    assert (
        load_config("deep", env={}, overrides=["llm.retry_backoff_s=7", "llm.max_retries=9"]).canonical_hash() == base
    )
    assert load_config("deep", env={}, overrides=["llm.temperature=0.5"]).canonical_hash() != base
