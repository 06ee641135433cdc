"""``lens serve`` (issue 60): the page in a real headless Chromium (Debian's ``chromium``, driven by Playwright)
against ``lens serve`` in a child process and a scripted LLM endpoint on a loopback port — the page loads with
nothing from elsewhere, a question streams its search and ends in a cited answer, a citation opens its document
with the sentence marked, a hostile document runs nothing, cancel stops the LLM calls, the history survives a
restart and re-asking shows what changed — and its refusals over plain HTTP: paths out of the folder, a foreign
Host, a cross-origin POST, another host without the token, oversized and non-JSON bodies."""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from lens._config import ReaderSettings
from lens._files import sha256_hex
from lens._progress import Progress
from lens.faces._serve import Gate, History, Question, what_changed
from lens.reader._read import read_document

from ..harness.systems.scripted_llm import Responder, StubServer, last_user, passages
from .reader.test_formats import pdf_bytes

pytest.importorskip("starlette")
pytest.importorskip("sse_starlette")
pytest.importorskip("uvicorn")

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
KEEPER_Q = "Who was the keeper of the harbour light?"
GATE_Q = "What is the gate code?"
HOSTILE_NAME = "<img src=x onerror=window.__pwned=3>.md"

# the scripted model: a reading names the sentence holding a trigger and copies its value; a synthesis answers
# with the value the prompt's passages hold
TRIGGERS = (("keeper was", "Ann Lee"), ("gate code is", "4412"))


def _reading(messages):
    for _, _, sentences in passages(last_user(messages))[:1]:
        for n, s in sentences:
            for trigger, value in TRIGGERS:
                if trigger in s:
                    return f"{n} | {value}"
    return "0"


def _synthesis(messages):
    prompt = last_user(messages)
    answer = next((v for _, v in TRIGGERS if v in prompt), "unknown")
    return json.dumps({"answer": answer, "passages": ["P1"], "missing": []})


def _write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def _harbour(root: Path) -> None:
    # the cited sentence far down a long file: the view must scroll to it
    filler = "".join(f"The tide table lists high water number {i} at noon.\n" for i in range(1, 120))
    _write(
        root, "harbour.md", f"# Harbour\n\n{filler}\nThe harbour light was built in 1869.\nIts keeper was Ann Lee.\n"
    )


class Served:
    """``lens serve`` in a child process; its address read from the line it prints first."""

    def __init__(self, tmp: Path, folders: list[Path], base_url: str, history: Path, *extra: str) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "lens.faces._cli", "serve", *map(str, folders), "--port", "0"]
        argv += ["--base-url", base_url, "--model", "test-model", "--history", str(history)]
        argv += ["--set", "llm.cache=false", "--set", "llm.max_retries=0"]
        argv += ["--set", f"reader.stats_store={tmp / 'stats.sqlite'}", *extra]
        self.log = open(tmp / "serve.log", "w")
        env = {**os.environ, "OPENAI_API_KEY": "test-key", "XDG_DATA_HOME": str(tmp / "data")}
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        line = self._line(timeout=60)
        m = re.match(r"lens serve: (http://[^/]+/)(\?token=(\S+))?", line)
        assert m, (line, (tmp / "serve.log").read_text())
        self.printed, self.token = m.group(1), m.group(3)
        self.port = int(m.group(1).rsplit(":", 1)[1].rstrip("/"))
        self.url = f"http://127.0.0.1:{self.port}/"

    def _line(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                return self.proc.stdout.readline()
            if self.proc.poll() is not None:
                break
        return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("serve")
    docs, outside, gone = tmp / "docs", tmp / "outside", tmp / "gone"
    _harbour(docs)
    _write(
        docs,
        HOSTILE_NAME,
        "# Gate notes <img src=x onerror=window.__pwned=4>\n\nThe harbour gate opens at dawn.\n"
        '<script>window.__pwned=1</script> The gate code is 4412 <img src=x onerror="window.__pwned=2">.\n',
    )
    _write(docs, "private.md", "# Private\n\nNot for the page.\n")
    _write(docs, ".lensignore", "private.md\n")
    _write(docs, ".hidden.md", "# Hidden\n\nNot for the page.\n")
    (docs / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    _write(outside, "secret.md", "# Secret\n\nNot for the page.\n")
    (docs / "escape.md").symlink_to(outside / "secret.md")
    (docs / "escape-dir").symlink_to(outside, target_is_directory=True)
    _write(gone, "note.md", "# Note\n\nA note in a folder that will be removed.\n")
    return {"tmp": tmp, "docs": docs, "outside": outside, "gone": gone}


@pytest.fixture(scope="module")
def responder():
    return Responder(reading=_reading, synthesis=_synthesis, rag=_synthesis)  # "rag": how it tells a synthesis


@pytest.fixture(scope="module")
def endpoint(responder):
    with StubServer(responder) as server:
        yield server


@pytest.fixture(scope="module")
def served(site, endpoint):
    """The page over ``docs`` and ``gone``; with a memory, so questions run one at a time (as with the embedded
    model)."""
    tmp = site["tmp"] / "main"
    server = Served(
        tmp, [site["docs"], site["gone"]], endpoint.base_url, tmp / "history.sqlite", "--memory", str(tmp / "memory")
    )
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).is_file():
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium package)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    context.close()


def _open(page, served: Served) -> None:
    page.goto(served.url)
    page.wait_for_selector("body[data-ready='1']")


def _ask(page, question: str) -> None:
    page.fill("#question", question)
    page.click("#submit")


def _answered(page) -> str:
    page.wait_for_selector("#answer:not([hidden]) .answer-text")
    return page.text_content(".answer-text")


@pytest.fixture(scope="module")
def keeper_page(browser, served, responder):
    """A page that asked the keeper question, watched while each LLM call took 0.2 s."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    _open(pg, served)
    responder.delay = 0.2
    try:
        _ask(pg, KEEPER_Q)
        pg.wait_for_selector("#stages li:has-text('round 1/')")
        streamed = pg.is_hidden("#answer")  # the search is on the page before the answer exists
        answer = _answered(pg)
    finally:
        responder.delay = 0.0
    yield pg, streamed, answer
    context.close()


# --------------------------------------------------------------------------- the page in Chromium


def test_the_page_loads_with_nothing_from_elsewhere(page, served, site):
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    _open(page, served)
    assert page.locator("#folder option").all_text_contents() == ["docs", "gone"]
    assert page.title() == "lens"
    assert asked and all(u.startswith(served.url) or u.startswith("data:") for u in asked)


def test_a_question_streams_its_search_and_ends_in_a_cited_answer(keeper_page):
    pg, streamed, answer = keeper_page
    assert streamed and answer == "Ann Lee"
    stages = pg.locator("#stages li").all_text_contents()
    assert stages[0].startswith("scan") and stages[-1].startswith("done")
    assert any(s.startswith("round 1/") for s in stages)
    card = pg.locator(".requirement[data-id='R1']")
    assert card.locator("svg.glr polyline.threshold").count() == 1  # the chart: GLR against the threshold
    assert card.locator("svg.bars rect.bar").count() >= 2  # the candidate windows' beliefs and "elsewhere"
    assert card.locator(".reading.confirmed q").first.text_content() == "Its keeper was Ann Lee."
    facts = pg.locator("#answer .facts li").first.text_content()
    assert "R1" in facts and "Ann Lee" in facts and "[E1]" in facts
    assert pg.locator("#answer .cost").text_content().startswith("Cost: ")
    assert pg.locator("#answer .evidence a.cite").count() == pg.locator("#answer .evidence li").count() >= 1


def test_a_citation_opens_the_document_with_the_sentence_marked_in_view(keeper_page):
    pg, _, _ = keeper_page
    pg.locator("#answer .evidence a.cite").first.click()
    marks = pg.locator("#document mark")
    marks.first.wait_for()
    assert marks.all_text_contents() == ["Its keeper was Ann Lee."]
    line = pg.locator("#document .line", has=pg.locator("mark"))
    assert line.locator(".ln").text_content() == "124"
    visible = marks.first.evaluate(
        "m => { const p = document.getElementById('document').getBoundingClientRect(),"
        " r = m.getBoundingClientRect(); return r.top >= p.top && r.bottom <= p.bottom }"
    )
    assert visible  # scrolled into view: 124 lines down a pane smaller than the file


def test_a_document_with_script_and_onerror_is_shown_as_text_and_runs_nothing(page, served):
    _open(page, served)
    _ask(page, GATE_Q)
    assert _answered(page) == "4412"
    cite = page.locator("#answer .evidence a.cite").first
    assert HOSTILE_NAME in cite.text_content()  # a file name is text too
    cite.click()
    page.locator("#document mark").first.wait_for()
    marked = "".join(page.locator("#document mark").all_text_contents())
    assert marked == '<script>window.__pwned=1</script> The gate code is 4412 <img src=x onerror="window.__pwned=2">.'
    assert "<img src=x onerror=window.__pwned=4>" in page.text_content("#document h2")
    assert page.locator("#main img, #main script, #document img, #document script, #history img").count() == 0
    page.wait_for_timeout(200)  # an image error handler would have fired by now
    assert page.evaluate("typeof window.__pwned") == "undefined"


def test_cancel_stops_the_llm_calls(page, served, responder):
    _open(page, served)

    def slow_reading(messages):  # a reading in flight while the user cancels
        time.sleep(1.0)
        return _reading(messages)

    responder.script["reading"] = slow_reading
    try:
        before = len(responder.calls)
        _ask(page, "Who kept the harbour light in 1869?")
        deadline = time.monotonic() + 30
        while "reading" not in responder.kinds()[before:] and time.monotonic() < deadline:
            time.sleep(0.05)
        page.click("#cancel")
        page.wait_for_selector("#status:has-text('cancelled during')")
        made = len(responder.calls)
        time.sleep(1.2)  # more than another reading's time
        assert len(responder.calls) == made
    finally:
        responder.script["reading"] = _reading
    assert responder.kinds()[before:].count("reading") == 1  # the call in flight was the last one
    assert "round 1/" in page.text_content("#status")


def test_the_endpoint_down_is_one_clear_error_on_the_page(page, served, responder):
    _open(page, served)
    responder.fault = 500
    try:
        _ask(page, "When was the harbour light built?")
        page.wait_for_selector("#error:not([hidden])")
    finally:
        responder.fault = None
    assert "the endpoint failed every call: 500" in page.text_content("#error")
    assert page.is_enabled("#submit")


def test_the_history_survives_a_restart_and_reasking_shows_what_changed(page, site, endpoint):
    tmp = site["tmp"] / "restart"
    folder = tmp / "lights"
    _harbour(folder)
    history = tmp / "history.sqlite"
    first = Served(tmp / "a", [folder], endpoint.base_url, history)
    try:
        _open(page, first)
        _ask(page, KEEPER_Q)
        assert _answered(page) == "Ann Lee"
    finally:
        first.stop()
    again = Served(tmp / "b", [folder], endpoint.base_url, history)
    try:
        _open(page, again)
        page.locator("#past a.past", has_text=KEEPER_Q).first.click()
        assert _answered(page) == "Ann Lee"  # reopened from the history, after the restart
        assert page.locator("#answer .evidence a.cite").count() >= 1
        text = (folder / "harbour.md").read_text().replace("Ann Lee.", "Ann Lee, then Tom Hale.")
        (folder / "harbour.md").write_text(text)
        page.click("#submit")  # ask again
        page.wait_for_selector("#answer .changes")
        edited = page.locator("#answer .changes .edited").first.text_content()
        assert "the file changed" in edited and "Ann Lee, then Tom Hale." in edited
        assert page.locator("#past a.past", has_text=KEEPER_Q).count() == 2
    finally:
        again.stop()


# --------------------------------------------------------------------------- refusals over HTTP


@pytest.mark.parametrize(
    "path, status, says",
    [
        ("../outside/secret.md", 403, "'..' leaves the folder"),
        ("sub/../../outside/secret.md", 403, "'..' leaves the folder"),
        ("/etc/passwd", 403, "not a path inside the folder"),
        ("/proc/self/root/etc/passwd", 403, "not a path inside the folder"),
        ("escape.md", 403, "outside the server's roots"),
        ("escape-dir/secret.md", 403, "outside the server's roots"),
        (".hidden.md", 403, "hidden file"),
        (".lensignore", 403, "hidden file"),
        ("private.md", 403, "ignored by the folder's .lensignore"),
        ("picture.png", 403, "a kind of file lens does not read"),
        ("harbour.md\x00.txt", 400, "NUL byte"),
        ("nothing-here.md", 404, "no such file"),
    ],
)
def test_a_document_lens_would_not_read_is_refused(served, site, path, status, says):
    r = httpx.get(served.url + "api/document", params={"folder": str(site["docs"]), "path": path})
    assert r.status_code == status and says in r.json()["error"], r.text


def test_a_folder_that_is_not_served_is_refused(served, site):
    for folder in (str(site["outside"]), "/proc/self/root" + str(site["outside"]), str(site["docs"] / "escape-dir")):
        r = httpx.get(served.url + "api/document", params={"folder": folder, "path": "secret.md"})
        assert r.status_code == 403 and "outside the server's roots" in r.json()["error"], (folder, r.text)
    r = httpx.post(served.url + "api/questions", json={"question": KEEPER_Q, "folder": str(site["outside"])})
    assert r.status_code == 403 and "refused" in r.json()["error"]


def test_a_served_folder_that_is_gone_is_one_clear_error(served, site):
    shutil.rmtree(site["gone"])
    r = httpx.post(served.url + "api/questions", json={"question": KEEPER_Q, "folder": str(site["gone"])})
    assert r.status_code == 404 and r.json()["error"] == f"{site['gone']}: no such folder"
    folders = httpx.get(served.url + "api/folders").json()["folders"]
    assert [f["exists"] for f in folders] == [True, False]


def test_a_foreign_host_header_is_refused(served):
    for host in (
        "evil.example",
        f"evil.example:{served.port}",
        f"127.0.0.1:{served.port + 1}",
        f"localhost.evil:{served.port}",
    ):
        r = httpx.get(served.url, headers={"Host": host})
        assert r.status_code == 403 and "DNS rebinding" in r.text, host
        assert "<script" not in r.text and "text/html" in r.headers["content-type"]  # one plain error page
    assert httpx.get(served.url, headers={"Host": f"localhost:{served.port}"}).status_code == 200
    assert httpx.get(served.url + "api/folders", headers={"Host": f"evil.example:{served.port}"}).status_code == 403


def test_a_cross_origin_post_is_refused(served, site):
    body = {"question": KEEPER_Q, "folder": str(site["docs"])}
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
        r = httpx.post(served.url + "api/questions", json=body, headers=headers)
        assert r.status_code == 403 and "another site" in r.json()["error"], headers
    form = httpx.post(served.url + "api/questions", data=body)  # what a plain form could send
    assert form.status_code == 415


def test_an_oversized_body_is_refused(served):
    r = httpx.post(
        served.url + "api/questions", content=b"{" + b" " * 100_000 + b"}", headers={"content-type": "application/json"}
    )
    assert r.status_code == 413 and "over 65,536 bytes" in r.json()["error"]


def test_another_host_needs_the_token(site, endpoint):
    tmp = site["tmp"] / "token"
    server = Served(tmp, [site["docs"]], endpoint.base_url, tmp / "history.sqlite", "--host", "0.0.0.0")
    try:
        assert server.token and len(server.token) >= 24
        for path in ("", "api/folders", "static/app.js", f"?token={server.token[:-1]}x"):
            r = httpx.get(server.url + path)
            assert r.status_code == 403 and "needs its token" in r.text, path
        assert httpx.get(server.url + "api/folders", headers={"X-Lens-Token": server.token}).status_code == 200
        r = httpx.get(server.url + f"?token={server.token}")  # the address printed: the token becomes a cookie
        assert r.status_code == 303 and r.headers["location"] == "/"
        assert "HttpOnly" in r.headers["set-cookie"] and "SameSite=Strict" in r.headers["set-cookie"]
        with httpx.Client(base_url=server.url, cookies=r.cookies) as client:
            assert client.get("/").status_code == 200
            assert client.get("/api/folders").json()["folders"][0]["path"] == str(site["docs"])
    finally:
        server.stop()


def test_a_second_question_waits_and_says_so(served, site, responder):
    responder.delay = 0.15
    try:
        body = {"question": KEEPER_Q, "folder": str(site["docs"])}
        first = httpx.post(served.url + "api/questions", json=body).json()["id"]
        second = httpx.post(served.url + "api/questions", json=body).json()["id"]
        events = _events(served, second)
    finally:
        responder.delay = 0.0
    streams = [_events(served, first), events]
    assert [e[0][0] for e in streams] == ["accepted", "accepted"]
    waited = [dict(e)["queued"] for e in streams if "queued" in dict(e)]  # the one that found the other running
    assert waited == [
        {"ahead": 1, "message": "waiting: 1 question(s) ahead of this one (questions with a memory run one at a time)"}
    ]
    assert [e[-1][0] for e in streams] == ["answer", "answer"]


def _events(served: Served, qid: str) -> list[tuple[str, dict]]:
    """The question's event stream read to its end."""
    out: list[tuple[str, dict]] = []
    with httpx.stream("GET", served.url + f"api/questions/{qid}/events", timeout=60) as r:
        kind = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                kind = line[len("event: ") :]
            elif line.startswith("data: ") and kind:
                out.append((kind, json.loads(line[len("data: ") :])))
    return out


# --------------------------------------------------------------------------- the document view's units and changes


def _workbook(path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Lights"
    for row in (["Name", "Height (m)"], ["Calder Point Light", 27], ["Skerrow Light", 31]):
        sheet.append(row)
    book.save(path)


def _pdf(path: Path) -> None:
    path.write_bytes(pdf_bytes([["Lights of the coast."], ["Skerrow Light is 31 metres tall."]]))


@pytest.mark.parametrize(
    "name, write, place, label, marked",
    [
        ("lights.xlsx", _workbook, "Lights!3", "Lights!3", "Name: Skerrow Light · Height (m): 31"),
        ("lights.pdf", _pdf, "p.2", "1", "Skerrow Light is 31 metres tall."),
    ],
)
def test_a_unit_of_a_document_format_is_shown_at_its_place(served, site, name, write, place, label, marked):
    write(site["docs"] / name)
    doc = next(d for d in read_document(site["docs"], name, ReaderSettings()).documents if "Skerrow" in d.text)
    n = next(s.index for s in doc.sentences if "Skerrow" in s.text)
    params = {"folder": str(site["docs"]), "path": name, "doc_id": doc.doc_id, "sentence": n, "sha256": doc.sha256}
    view = httpx.get(served.url + "api/document", params=params).json()
    assert view["kind"] == "unit" and view["place"] == place and not view["changed"]
    assert [(line["label"], t) for line in view["lines"] for t, m in line["parts"] if m] == [(label, marked)]


def test_a_file_changed_since_the_answer_says_so_and_finds_the_sentence(served, site):
    (doc,) = read_document(site["docs"], "harbour.md", ReaderSettings()).documents
    n = next(s.index for s in doc.sentences if "keeper" in s.text)
    params = {"folder": str(site["docs"]), "path": "harbour.md", "sentence": n, "sha256": "0" * 64}
    view = httpx.get(
        served.url + "api/document", params={**params, "sentence_sha256": sha256_hex(doc.sentences[n].text)}
    ).json()
    assert view["changed"] and "changed since the answer" in view["notes"][0] and "line 124" in view["notes"][1]
    assert [t for line in view["lines"] for t, m in line["parts"] if m] == ["Its keeper was Ann Lee."]
    gone = httpx.get(served.url + "api/document", params={**params, "sentence_sha256": "1" * 64}).json()
    assert "no longer in it" in gone["notes"][1] and not gone["marked"]


# --------------------------------------------------------------------------- pieces, without a server


def test_the_page_never_parses_data_as_html():
    code = (ROOT / "lens" / "faces" / "static" / "app.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in code, sink


def test_a_question_waiting_in_line_is_told_how_many_are_ahead_and_can_be_cancelled():
    gate = Gate(1)
    assert gate.enter("a", threading.Event(), lambda n: None)
    told: list[int] = []
    cancel = threading.Event()
    waiter = threading.Thread(target=lambda: told.append(gate.enter("b", cancel, told.append)))
    waiter.start()
    time.sleep(0.3)
    cancel.set()
    waiter.join(timeout=5)
    assert told == [1, False]  # one ahead, then cancelled without running
    gate.leave("a")
    assert gate.enter("c", threading.Event(), lambda n: None)  # the line moved on


def test_what_changed_compares_answers_and_evidence_by_citation():
    before = {"answer": "27", "evidence": [{"citation": "a.md:3", "sentence_text": "27 m.", "sha256": "x"}]}
    after = {"answer": "31", "evidence": [{"citation": "b.md:1", "sentence_text": "31 m.", "sha256": "y"}]}
    c = what_changed(before, after)
    assert c["answer"] == {"before": "27", "after": "31"} and not c["same"]
    assert c["added"] == [{"citation": "b.md:1", "text": "31 m."}] and c["removed"][0]["citation"] == "a.md:3"
    assert what_changed(before, before)["same"]


def test_the_history_keeps_answers_and_sets_a_damaged_file_aside(tmp_path):
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    history = History(path)
    assert history.note and "set aside" in history.note and list(tmp_path.glob("h.sqlite.corrupt-*"))
    entry = {"id": "q1", "asked_at": 1.0, "folder": "/f", "question": "Q?", "status": "answered", "answer": "A"}
    assert history.add({**entry, "result": {"answer": "A", "evidence": []}}) is None
    changes = history.add({**entry, "id": "q2", "asked_at": 2.0, "result": {"answer": "B", "evidence": []}})
    assert changes["answer"] == {"before": "A", "after": "B"} and changes["previous"] == "q1"
    assert [e["id"] for e in History(path).recent()] == ["q2", "q1"] and History(path).get("q2")["changes"]


def test_a_question_log_streams_from_where_a_reader_left_off():
    q = Question("q", "Q?", "/f", 0.0)
    q.emit("progress", {"stage": "scan", "detail": {"glr": float("inf")}})
    q.emit("answer", {"ok": True}, final=True)
    q.emit("progress", {"late": True})  # after the last event: dropped

    def read(start: int) -> list[dict]:  # on a thread of its own: Playwright's loop may be this thread's
        async def events():
            return [e async for e in q.stream(start)]

        out: list = []
        reader = threading.Thread(target=lambda: out.append(asyncio.run(events())))
        reader.start()
        reader.join(timeout=10)
        return out[0]

    assert [(e["id"], e["event"]) for e in read(1)] == [("1", "answer")]
    assert json.loads(read(0)[0]["data"])["detail"] == {"glr": None}  # strict JSON
    assert Progress("round", 1, 6, 2, 100, 1.0).detail is None
