"""PaperQA2 as a benchmark arm (the optional extra ``paperqa``; skipped without it): its collection indexed from a
snapshot of extensionless files and from a PDF without writing the folder, questions answered through
``Docs.aquery`` against a real loopback endpoint (litellm talks HTTP through aiohttp, which respx cannot see), rows
written by ``lens bench run`` with Ev.Rec, tokens and the index's cost, endpoint failures kept out of the rows, and
no connection anywhere but the loopback endpoint."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading

import pytest

from harness.bench.systems.paperqa_arm import offline_environment

offline_environment()  # before litellm is first imported, as the arm does
pytest.importorskip("paperqa", reason="the paperqa extra is not installed")

from harness.bench.executor import LocalExecutor  # noqa: E402
from harness.bench.lifecycle import measure_lifecycle  # noqa: E402
from harness.bench.metrics import evidence_recall  # noqa: E402
from harness.bench.run_store import read_rows, read_run_manifest  # noqa: E402
from harness.bench.runner import plan_run, run_benchmark  # noqa: E402
from harness.bench.snapshots import corpus_checksum  # noqa: E402
from harness.bench.systems import ArmSettings, IndexStore, RunLevelError, SnapshotCorpus  # noqa: E402
from harness.bench.systems.paperqa_arm import (  # noqa: E402
    PaperQASystem,
    clean_answer,
    ensure_paperqa_index,
)
from harness.bench.systems.registry import index_free, parse_systems  # noqa: E402
from harness.files import sha256_file  # noqa: E402

from .conftest import make_config  # noqa: E402
from .scripted_llm import Responder, StubServer, last_user  # noqa: E402

# --------------------------------------------------------------------------- what connects where

_CONNECTS: list[str] = []
_RECORD = threading.Event()


def _audit(event: str, args: tuple) -> None:
    if _RECORD.is_set() and event in ("socket.connect", "socket.getaddrinfo"):
        host = args[1][0] if event == "socket.connect" and isinstance(args[1], tuple) else args[0]
        _CONNECTS.append(str(host))


sys.addaudithook(_audit)  # audit hooks cannot be removed: it records only while _RECORD is set


# --------------------------------------------------------------------------- a scripted PaperQA model


def paperqa_reply(messages: list[dict[str, str]]) -> str:
    """PaperQA's two prompts: an evidence summary (JSON with a 0-10 score: 8 when the excerpt names the question's
    subject — its lines naming it or saying where something lies —, else 0) and the answer (the "lies in X" of the
    contexts, citing the first key)."""
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    user = last_user(messages)
    if "relevance_score" in system:
        excerpt = user.split("\n\n---\n\n")[1] if "\n\n---\n\n" in user else user
        subject = re.findall(r"\b[A-Z][a-z]+\d\d\b", user.rsplit("Question:", 1)[-1])
        hit = bool(subject) and subject[0] in excerpt
        said = [s.strip() for s in excerpt.splitlines() if hit and (subject[0] in s or "lies in" in s)]
        return json.dumps({"summary": " ".join(said), "relevance_score": 8 if hit else 0})
    keys = re.findall(r"Valid Keys: (.*)", user)
    first = keys[0].split(", ")[0] if keys and keys[0].strip() else ""
    where = re.search(r"lies in (\w+)", user)
    return f"It lies in {where.group(1) if where else 'nowhere'} ({first})." if first else "I cannot answer."


@pytest.fixture
def pqa_responder() -> Responder:
    return Responder(other=paperqa_reply)


@pytest.fixture
def stub(pqa_responder):
    with StubServer(pqa_responder) as server:
        yield server


def pqa_config(base_url: str, **overrides):
    return make_config(**{"llm.base_url": base_url, "llm.model": "scripted", "llm.call_timeout_s": 5, **overrides})


def corpus(folder) -> SnapshotCorpus:
    """The folder as the index builder sees it (its files and checksum; a folder of PDFs too, which the FinanceBench
    workload reads as pages)."""
    files = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    return SnapshotCorpus(folder=folder, docs=[], checksum=corpus_checksum([(p.name, sha256_file(p)) for p in files]))


def arm(tmp_path, folder, config, client=None):
    index, build, _ = ensure_paperqa_index(IndexStore(tmp_path / "idx"), corpus(folder), "sparse", None)
    caps = dict(question_timeout_s=config.budget.question_timeout_s, max_tokens=config.budget.max_tokens_per_query)
    client = client or type("Client", (), {"base_url": config.llm.base_url, "model": config.llm.served_model})()
    return PaperQASystem(index, build, folder, config, client, embedding="sparse", dense_model=None, **caps)


def listing(folder):
    return sorted((p.name, p.stat().st_mtime_ns, sha256_file(p)) for p in folder.iterdir())


# --------------------------------------------------------------------------- tests


def test_clean_answer_takes_out_paperqa_context_keys_only():
    raw = "Tallow00 lies north (pqac-1a2b3c4d). It is cold (pqac-0f0f0f0f, pqac-12345678) (in winter)."
    assert clean_answer(raw) == "Tallow00 lies north. It is cold (in winter)."


def test_paperqa_is_an_index_arm_of_lens_bench_run():
    assert parse_systems("lens,paperqa") == ("lens", "paperqa") and index_free("paperqa") is False


def test_lens_bench_run_answers_with_paperqa_rows_like_every_arm(stub, pqa_responder, bench_data, tmp_path):
    folder = bench_data["D6"]
    before = listing(folder)
    config = pqa_config(stub.base_url)
    plan = plan_run(
        snapshot=folder,
        questions_file=bench_data["questions"],
        systems=("paperqa",),
        out=tmp_path / "run",
        config=config,
        index_dir=tmp_path / "indexes",
        settings=ArmSettings(paperqa_embedding="sparse"),
        limit=3,
    )
    _CONNECTS.clear()
    _RECORD.set()
    try:
        summary = run_benchmark(plan, executor=LocalExecutor(1), progress=False)
    finally:
        _RECORD.clear()

    assert set(_CONNECTS) <= {"127.0.0.1"}, _CONNECTS  # the endpoint only: no price table, no metadata, no hub
    assert listing(folder) == before  # the folder is read, never written
    rows = read_rows(tmp_path / "run")
    assert summary.rows_written == 3 and len(rows) == 3
    for r in rows:
        p, s = r["prediction"], r["scores"]
        assert p["error"] is None and "pqac-" not in p["answer"]
        assert p["answer"] == f"It lies in {r['gold_answer']}." and s["f1"] > 0
        titles = [d["title"] for d in p["retrieved"]]
        assert s["ev_rec"] == evidence_recall(r["gold_titles"], titles) == 1.0  # file titles, as every arm's
        in_prompt = [c for c in p["details"]["contexts"] if c["in_prompt"]]
        assert [c["file"] for c in in_prompt] == [d["path"] for d in p["retrieved"]]
        assert p["evidence"] and all(e["line_start"] == 1 for e in p["evidence"])
        # tokens from every response's usage (the stub's 20 + 5 per call), and PaperQA's own count agrees
        assert p["oracle_calls"] >= 2 and p["tokens"] == 25 * p["oracle_calls"]
        assert sum(sum(v) for v in p["details"]["paperqa_token_counts"].values()) == p["tokens"]
    entry = read_run_manifest(tmp_path / "run")["systems"]["paperqa"]
    [build] = entry["indexes"]
    assert build["kind"] == "paperqa" and build["n_docs"] == len(list(folder.iterdir()))
    assert build["seconds"] > 0 and build["bytes"] > 0 and build["params"]["embedding"] == "sparse-256"
    assert entry["params"]["evidence_k"] == 10 and entry["params"]["answer_max_sources"] == 5  # PaperQA's defaults

    again = run_benchmark(plan, executor=LocalExecutor(1), progress=False)  # a rerun resumes: nothing is asked
    assert again.rows_written == 0 and len(read_rows(tmp_path / "run")) == 3


def test_a_pdf_is_cited_by_the_pages_of_its_chunks(stub, tmp_path):
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    folder = tmp_path / "filings"
    folder.mkdir()
    pdf = canvas.Canvas(str(folder / "LAKES_2023_10K.pdf"), pagesize=letter)
    pdf.setTitle("Lakes annual report")
    for page in range(1, 5):
        for i in range(45):  # about 2,800 characters a page: PaperQA's 5,000-character chunks span pages
            fact = "Lake Osk00 lies in Tallow00." if (page, i) == (3, 20) else f"Page {page} line {i} holds filler."
            pdf.drawString(40, 750 - 15 * i, f"{fact} " + "Lorem ipsum dolor sit amet consectetur " * 1)
        pdf.showPage()
    pdf.save()
    config = pqa_config(stub.base_url)
    system = arm(tmp_path, folder, config)

    pred = system.answer("Where does Lake Osk00 lie?")

    assert pred.error is None and pred.answer == "It lies in Tallow00."
    chunks = {c["chunk"]: c["in_prompt"] for c in pred.details["contexts"]}
    # the chunk holding page 3's fact spans pages 2-4: each of its pages is cited, as LENS names a page
    assert chunks == {"LAKES202310K pages 2-4": True}
    assert [(d.path, d.location, d.title) for d in pred.retrieved] == [
        (f"LAKES_2023_10K.pdf#u{p}", {"page": p}, "Lakes annual report")
        for p in (2, 3, 4)  # title: PDF metadata
    ]
    [passage] = pred.evidence
    assert passage.location == {"page": 2, "last_page": 4} and "Lake Osk00 lies in Tallow00." in passage.text


def test_files_paperqa_cannot_read_are_skipped_by_reason(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "Lake Osk00").write_text("Lake Osk00\nLake Osk00 is a glacial lake.\nLake Osk00 lies in Tallow00.\n")
    (folder / "Tiny").write_text("Tiny\nShort.\n")  # under PaperQA's 20-character text check
    (folder / ".hidden").write_text("never read")
    index, build, built = ensure_paperqa_index(IndexStore(tmp_path / "idx"), corpus(folder), "sparse", None)
    assert built and build.n_docs == 1 and set(index.titles) == {"Lake Osk00"}
    assert build.params["skipped"] == {"ValueError": 1}
    again, _, built_again = ensure_paperqa_index(IndexStore(tmp_path / "idx"), corpus(folder), "sparse", None)
    assert not built_again and set(again.titles) == {"Lake Osk00"}  # loaded, not rebuilt


@pytest.mark.parametrize("fault", [500, 404, 429])
def test_an_endpoint_failure_is_not_a_result(stub, pqa_responder, bench_data, tmp_path, fault):
    config = pqa_config(stub.base_url)
    system = arm(tmp_path, bench_data["D6"], config)
    pqa_responder.fault = fault

    pred = system.answer("Where is the lake that the Varn00 River flows into?")

    assert pred.endpoint_failure and str(fault) in pred.error and pred.answer == ""


def test_a_request_error_on_every_call_is_an_endpoint_failure(stub, pqa_responder, bench_data, tmp_path):
    config = pqa_config(stub.base_url)
    system = arm(tmp_path, bench_data["D6"], config)
    pqa_responder.fault = 400  # PaperQA drops each evidence summary that fails and says it cannot answer

    pred = system.answer("Where is the lake that the Varn00 River flows into?")

    assert pred.endpoint_failure and "400" in pred.error


def test_an_unreachable_endpoint_stops_the_run(stub, bench_data, tmp_path):
    config = pqa_config(stub.base_url)
    system = arm(tmp_path, bench_data["D6"], config)
    stub.server.shutdown()
    stub.server.server_close()

    with pytest.raises(RunLevelError, match="cannot reach"):
        system.answer("Where is the lake that the Varn00 River flows into?")


def test_the_question_time_cap_bounds_the_whole_query(stub, pqa_responder, bench_data, tmp_path):
    config = pqa_config(stub.base_url, **{"budget.question_timeout_s": 1.0})
    system = arm(tmp_path, bench_data["D6"], config)
    pqa_responder.delay = 0.6  # each call answers, but the ten summaries cannot all fit in a second

    pred = system.answer("Where is the lake that the Varn00 River flows into?")

    assert pred.error and "time budget" in pred.error and not pred.endpoint_failure
    assert pred.seconds < 3


def test_importing_the_arm_fetches_nothing(tmp_path):
    """litellm fetches its price table from GitHub when it is imported, unless told not to: the arm tells it."""
    code = (
        "import sys\nseen = []\n"
        "sys.addaudithook(lambda e, a: seen.append(str(a[0])) if e == 'socket.getaddrinfo' else None)\n"
        "from harness.bench.systems.paperqa_arm import _paperqa\n_paperqa()\nprint(seen)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_the_lifecycle_measures_the_paperqa_collection_and_its_rebuild_after_growth(bench_data, tmp_path):
    data = measure_lifecycle(
        [bench_data["D6"], bench_data["D12"]],
        tmp_path / "idx",
        systems=("paperqa",),
        paperqa_embedding="sparse",
        isolate=False,
    )
    first, grown = data["rows"]
    assert (first["system"], first["snapshot"], grown["snapshot"]) == ("paperqa", "D6", "D12")
    assert not grown["index_free"] and grown["query_ready_after_growth"] is False and grown["rebuild_needed"] is True
    assert grown["index_build_s"] > 0 and grown["index_bytes"] > first["index_bytes"] > 0
    assert data["paperqa_embedding"] == "sparse"


def test_a_collection_loaded_in_another_process_returns_each_chunk_once(bench_data, tmp_path):
    """PaperQA's vector store keys chunks by hash(), salted per process: loaded elsewhere, the first query re-added
    every chunk and PaperQA read each of its top 10 twice."""
    folder = corpus(bench_data["D6"])
    ensure_paperqa_index(IndexStore(tmp_path / "idx"), folder, "sparse", None)
    code = (
        "import asyncio\n"
        "from harness.bench.systems import IndexStore\n"
        "from harness.bench.systems.paperqa_arm import load_paperqa_index, paperqa_settings\n"
        f"index, _ = load_paperqa_index(IndexStore({str(tmp_path / 'idx')!r}), {folder.checksum!r}, 'sparse', None)\n"
        f"s = paperqa_settings(None, 'sparse', '/nonexistent', {str(folder.folder)!r})\n"
        "got = asyncio.run(index.docs.retrieve_texts('Where does the Varn00 River flow?', 10, s))\n"
        "print(len(got), len({t.name for t in got}), len(index.docs.texts_index.texts), len(index.docs.texts))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got, distinct, indexed, chunks = map(int, out.stdout.split())
    assert got == distinct == 10 and indexed == chunks
