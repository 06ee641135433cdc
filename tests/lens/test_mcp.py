"""``lens mcp`` driven by the MCP SDK's own client over stdio, against a loopback fake LLM (issue: lens as a
tool): the tool listing, a cited answer, paths outside the roots refused (symlinks included), a missing folder
as a tool error, and the server still serving after each refusal."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from lens._errors import LensError  # noqa: E402
from lens.faces._mcp import Roots  # noqa: E402

from ..harness.systems.scripted_llm import Responder, StubServer  # noqa: E402


@pytest.fixture
def roots(tmp_path) -> dict[str, Path]:
    docs = tmp_path / "root" / "docs"
    docs.mkdir(parents=True)
    (docs / "harbour.md").write_text("# Harbour\n\nThe harbour light was built in 1869.\nIts keeper was Ann Lee.\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nNot for the client.\n")
    (tmp_path / "root" / "escape").symlink_to(outside, target_is_directory=True)
    return {"root": tmp_path / "root", "docs": docs, "outside": outside}


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def _payload(result) -> dict:
    if result.structured_content:
        return dict(result.structured_content)
    return json.loads(_text(result))


async def _session(root: Path, base_url: str, script, env: dict[str, str] | None = None):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lens.faces._cli", "mcp", "--root", str(root), "--base-url", base_url, "--model", "test-model"]
        + ["--set", "llm.cache=false"],
        env={
            "OPENAI_API_KEY": "test-key",
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
            **(env or {}),
        },
        cwd=str(root),
    )
    async with Client(params) as client:
        return await script(client)


def test_the_mcp_server_lists_its_tools_and_answers_with_citations(roots):
    responder = Responder()
    notes: list = []

    async def script(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        answered = await client.call_tool(
            "ask",
            {"question": "Who was the keeper of the harbour light?", "path": "docs"},
            progress_callback=lambda progress, total, message: notes.append((progress, total, message)),
        )
        stats = await client.call_tool("corpus_stats", {"path": str(roots["docs"])})
        return tools, answered, stats

    with StubServer(responder) as server:
        tools, answered, stats = asyncio.run(_session(roots["root"], server.base_url, script))
    assert set(tools) == {"ask", "corpus_stats"}
    assert set(tools["ask"].input_schema["properties"]) == {"question", "path"}
    assert tools["ask"].annotations.read_only_hint is True
    assert not answered.is_error, _text(answered)
    got = _payload(answered)
    assert got["answer"] and got["cost"]["oracle_calls"] >= 2 and got["cost"]["tokens"] > 0
    assert isinstance(got["best_effort"], bool)
    (ev,) = [e for e in got["evidence"] if e["path"] == "harbour.md"]
    assert len(ev["sha256"]) == 64 and ev["line_start"] >= 1 and ev["citation"].startswith("harbour.md:")
    assert "Ann Lee" in ev["text"] or "1869" in ev["text"]
    assert "decomposition" in responder.kinds()  # the production agent ran against the endpoint
    # progress notifications while it ran: a stage line each, rounds out of the budget's
    assert any("decomposition" in (m or "") for _, _, m in notes) and any("round 1/" in (m or "") for _, _, m in notes)
    assert all(total and progress <= total for progress, total, _ in notes)
    assert not stats.is_error and _payload(stats)["documents"] == 1


def test_paths_outside_the_roots_and_missing_folders_are_tool_errors(roots):
    async def script(client):
        out = []
        for path in (str(roots["outside"]), "escape", "../elsewhere", "no-such-folder"):
            out.append(await client.call_tool("ask", {"question": "What is secret?", "path": path}))
        out.append(await client.call_tool("corpus_stats", {"path": str(roots["outside"])}))
        out.append(await client.call_tool("corpus_stats", {"path": "docs"}))  # still serving
        return out

    responder = Responder()
    with StubServer(responder) as server:
        outside, link, dotdot, missing, stats_outside, ok = asyncio.run(
            _session(roots["root"], server.base_url, script)
        )
    for r in (outside, link, dotdot, stats_outside):
        assert r.is_error and "outside the server's roots" in _text(r)
    assert missing.is_error and "no such folder" in _text(missing)
    assert not ok.is_error
    assert responder.calls == []  # nothing refused ever reached the LLM


def test_unusable_paths_and_overlong_questions_are_tool_errors_that_name_the_problem(roots):
    long_path = "docs/" + "x" * 300  # one name over NAME_MAX (255), the whole path within the limits

    async def script(client):
        out = [await client.call_tool("corpus_stats", {"path": p}) for p in ("docs\x00/../x", long_path)]
        out.append(await client.call_tool("ask", {"question": "Who? " * 1000, "path": "docs"}))
        out.append(await client.call_tool("corpus_stats", {"path": "docs"}))  # still serving
        return out

    responder = Responder()
    with StubServer(responder) as server:
        nul, too_long, question, ok = asyncio.run(_session(roots["root"], server.base_url, script))
    assert nul.is_error and "NUL byte" in _text(nul)
    assert too_long.is_error and "File name too long" in _text(too_long) and "305 characters" in _text(too_long)
    assert question.is_error and "the limit is 4,000" in _text(question)
    assert not ok.is_error
    assert responder.calls == []


def test_a_path_over_the_limits_is_one_quick_tool_error_and_holds_up_no_other_call(roots):
    huge = "d/" * 5_000_000  # 10 MB, 5 million components: resolving it on the event loop took > 20 minutes
    deep = "./" * 1023 + "docs"  # within both limits (1,024 components): served
    too_deep = "./" * 1024 + "docs"  # one component over, 2,052 bytes

    async def script(client):
        t0 = time.monotonic()

        async def timed(tool: str, args: dict):
            result = await client.call_tool(tool, args)
            return result, time.monotonic() - t0

        calls = [
            timed("ask", {"question": "Who kept the harbour light?", "path": huge}),
            timed("corpus_stats", {"path": "docs"}),  # sent while the ask above is in flight
            timed("corpus_stats", {"path": huge}),
            timed("corpus_stats", {"path": too_deep}),
            timed("corpus_stats", {"path": deep}),
        ]
        return await asyncio.wait_for(asyncio.gather(*calls), 60)

    responder = Responder()
    with StubServer(responder) as server:
        (ask, _), (ok, ok_s), (stats, _), (deeper, _), (within, _) = asyncio.run(
            _session(roots["root"], server.base_url, script)
        )
    for r, size, parts in (
        (ask, "10,000,000", "5,000,001"),
        (stats, "10,000,000", "5,000,001"),
        (deeper, "2,052", "1,025"),
    ):
        assert r.is_error and f"path too long ({size} bytes, {parts} components" in _text(r), _text(r)
        assert "the limit is 4,096 bytes and 1,024 components" in _text(r) and len(_text(r)) < 400
    assert not ok.is_error and _payload(ok)["documents"] == 1 and ok_s < 30
    assert not within.is_error and _payload(within)["documents"] == 1
    assert responder.calls == []


def test_a_document_edited_through_a_hard_link_outside_the_folder_is_served_fresh(roots):
    doc = roots["docs"] / "harbour.md"
    link = roots["outside"] / "harbour-link.md"  # the same file, named outside the watched folder
    os.link(doc, link)
    ask = {"question": "Who was the keeper of the harbour light?", "path": "docs"}

    async def script(client):
        out = [await client.call_tool("ask", ask) for _ in range(3)]  # the second watches the folder, the third arms it
        with open(link, "r+", encoding="utf-8") as fh:  # edited in place: no event on the folder's directories
            text = fh.read().replace("Ann Lee", "Bo Tarn")
            fh.seek(0)
            fh.write(text)
        out.append(await client.call_tool("ask", ask))
        return out

    with StubServer(Responder()) as server:
        *before, after = asyncio.run(_session(roots["root"], server.base_url, script))
    for r in before:
        assert "Ann Lee" in json.dumps(_payload(r)["evidence"])
    assert not after.is_error, _text(after)
    evidence = [e for e in _payload(after)["evidence"] if e["path"] == "harbour.md"]
    assert evidence and all("Bo Tarn" in e["text"] and "Ann Lee" not in e["text"] for e in evidence)
    assert {e["sha256"] for e in evidence} == {hashlib.sha256(doc.read_bytes()).hexdigest()}


def test_roots_refuse_a_nul_byte_an_overlong_name_and_an_unknown_home_with_a_reason(roots):
    r = Roots([roots["root"]])
    with pytest.raises(LensError, match="NUL byte"):
        r.check("docs\x00")
    with pytest.raises(LensError, match="File name too long"):
        r.check("x" * 300)
    with pytest.raises(LensError, match="home directory"):
        r.check("~no-such-user-lens/docs")


def test_an_api_key_the_endpoint_echoes_is_redacted_from_the_tool_error(roots):
    key = "sk-live-0123456789abcdef"
    responder = Responder()
    responder.fault = 402
    responder.fault_message = f"denied for credentials Bearer {key}"

    async def script(client):
        return await client.call_tool("ask", {"question": "Who kept the harbour light?", "path": "docs"})

    with StubServer(responder) as server:
        result = asyncio.run(_session(roots["root"], server.base_url, script, env={"LENS_API_KEY": key}))
    assert result.is_error and "402" in _text(result)
    assert key not in _text(result) and "Bearer [API key redacted]" in _text(result)


@pytest.mark.parametrize("how", ["cancel", "disconnect"])
def test_an_ask_the_client_cancels_or_leaves_makes_no_further_llm_call(roots, how):
    responder = Responder()
    responder.delay = 0.3  # each LLM call takes this long: the question is still asking when the client goes

    async def in_flight(client):
        task = asyncio.create_task(client.call_tool("ask", {"question": "Who kept the harbour light?", "path": "docs"}))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # it ends in an error: that is expected
        while not responder.calls:  # the first call (the decomposition) has reached the endpoint
            await asyncio.sleep(0.02)
        return task

    async def cancel(client):
        task = await in_flight(client)
        task.cancel()  # the client sends notifications/cancelled
        await asyncio.sleep(1.5)  # the server lives on: time for several more calls

    async def disconnect(client):
        await in_flight(client)  # leaving the session closes the server's stdin with the call in flight

    with StubServer(responder) as server:
        with contextlib.suppress(BaseException):
            asyncio.run(_session(roots["root"], server.base_url, cancel if how == "cancel" else disconnect))
        time.sleep(1.5 if how == "disconnect" else 0)
        assert responder.kinds() == ["decomposition"]  # the call in flight finished; no other one began


def test_roots_resolve_symlinks_before_checking(roots):
    r = Roots([roots["root"]])
    assert r.check("docs") == roots["docs"].resolve()
    with pytest.raises(LensError, match="outside the server's roots"):
        r.check("escape")
    with pytest.raises(LensError, match="not a folder"):
        Roots([roots["docs"] / "harbour.md"])


@pytest.mark.live
@pytest.mark.timeout(900)
def test_live_an_ask_through_the_mcp_server_with_the_embedded_model():
    """Live: `lens mcp` with no endpoint configured starts the embedded model (the fast preset's 0.5B) on the
    first ask and answers the demo question with cited evidence."""
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("needs the 'local' extra")
    demo = Path(__file__).resolve().parents[2] / "corpora" / "demo"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lens.faces._cli", "mcp", "--root", str(demo), "--preset", "fast", "--set", "llm.cache=false"],
        env={k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "HF_HUB_OFFLINE", "PYTHONPATH")},
    )

    async def script():
        async with Client(params) as client:
            return await client.call_tool(
                "ask", {"question": "Who was the first keeper of Calder Point Light?", "path": "."}
            )

    result = asyncio.run(script())
    assert not result.is_error, _text(result)
    got = _payload(result)
    assert any(e["path"].endswith("calder-point-light.md") for e in got["evidence"])
    assert got["cost"]["oracle_calls"] >= 2 and got["model"]
