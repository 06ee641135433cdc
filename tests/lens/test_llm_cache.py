"""SPEC §3 cache: keyed by the canonical request (never key or URL), hits cost zero tokens and say so, safe
under concurrent threads and processes. SPEC §6: API keys never reach logs, caches or outputs.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import threading
from pathlib import Path

import httpx
import pytest
import respx

from lens._config import LLMSettings, load_config
from lens.llm._cache import ResponseCache, request_key
from lens.llm._cost import CostMeter
from lens.llm._llm import LLMClient, LLMFormatError, LLMRequestError, open_client

from .conftest import BASE_URL, CHAT_URL, MODEL, completion, error, with_full_disk

Q = [{"role": "user", "content": "Which river runs through Lyon?"}]


def cache_entries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- hits


def test_cache_hit_costs_zero_tokens_and_reports_hit(endpoint, make_client):
    endpoint.chat.side_effect = [completion("The Rhône", prompt_tokens=40, completion_tokens=4)]
    client = make_client(cache=True)
    meter = CostMeter()

    first = client.chat(Q, meter=meter)
    second = client.chat(Q, meter=meter)

    assert first.cache_hit is False and first.tokens == 44
    assert second.text == "The Rhône"
    assert second.cache_hit is True
    assert (second.prompt_tokens, second.completion_tokens, second.seconds) == (0, 0, 0.0)
    assert endpoint.chat.call_count == 1
    cost = meter.cost
    assert (cost.oracle_calls, cost.cache_hits, cost.prompt_tokens, cost.completion_tokens) == (2, 1, 40, 4)


def test_cache_survives_a_new_client_on_the_same_folder(endpoint, make_client, tmp_path):
    endpoint.chat.side_effect = [completion("The Rhône")]
    make_client(cache=ResponseCache(tmp_path / "c")).chat(Q)

    again = make_client(cache=ResponseCache(tmp_path / "c")).chat(Q)

    assert again.cache_hit and again.text == "The Rhône"
    assert endpoint.chat.call_count == 1


def test_parsed_json_from_the_cache_reports_a_hit_with_zero_tokens(endpoint, make_client):
    from pydantic import BaseModel

    class River(BaseModel):
        river: str

    endpoint.chat.side_effect = [completion('{"river": "Rhône"}')]
    client = make_client(cache=True)
    client.chat_json(Q, River)

    resp = client.chat_json(Q, River)

    assert resp.parsed.river == "Rhône" and resp.cache_hit and resp.tokens == 0
    assert endpoint.chat.call_count == 1


@pytest.mark.parametrize(
    "change",
    [
        {"messages": [{"role": "user", "content": "Which river runs through Paris?"}]},
        {"max_tokens": 99},
        {"temperature": 0.7},
        {"json_mode": True},
    ],
)
def test_a_different_request_is_a_miss(endpoint, make_client, change):
    endpoint.chat.side_effect = [completion("a"), completion("b")]
    client = make_client(cache=True)
    client.chat(Q)

    messages = change.pop("messages", Q)
    resp = client.chat(messages, **change)

    assert resp.cache_hit is False and resp.text == "b"
    assert endpoint.chat.call_count == 2


def test_a_different_model_is_a_miss(endpoint, tmp_path):
    endpoint.chat.side_effect = [completion("a"), completion("b")]
    cache = ResponseCache(tmp_path / "c")
    settings = LLMSettings(retry_backoff_s=0)
    LLMClient(base_url=BASE_URL, model="model-a", settings=settings, cache=cache).chat(Q)

    resp = LLMClient(base_url=BASE_URL, model="model-b", settings=settings, cache=cache).chat(Q)

    assert resp.cache_hit is False


def test_cache_key_ignores_endpoint_url_and_api_key(tmp_path):
    cache = ResponseCache(tmp_path / "c")
    settings = LLMSettings(retry_backoff_s=0)
    with respx.mock() as router:
        router.post(CHAT_URL).mock(return_value=completion("The Rhône"))
        LLMClient(base_url=BASE_URL, model=MODEL, settings=settings, cache=cache, api_key="key-one").chat(Q)
    with respx.mock(assert_all_called=False) as router:
        other = router.post("http://elsewhere.test/v1/chat/completions").mock(return_value=completion("x"))
        client = LLMClient(
            base_url="http://elsewhere.test/v1", model=MODEL, settings=settings, cache=cache, api_key="key-two"
        )
        resp = client.chat(Q)

    assert resp.cache_hit and resp.text == "The Rhône"
    assert other.call_count == 0


def test_request_key_is_canonical():
    a = {"model": "m", "messages": [{"role": "user", "content": "é"}], "params": {"t": 0, "n": 1}}
    b = {"params": {"n": 1, "t": 0}, "messages": [{"content": "é", "role": "user"}], "model": "m"}
    assert request_key(a) == request_key(b)
    assert len(request_key(a)) == 64


def test_failed_calls_are_not_cached(endpoint, make_client, tmp_path):
    endpoint.chat.side_effect = [error(500)] * 2 + [completion("The Rhône")]
    client = make_client(cache=True, max_retries=1)

    with pytest.raises(Exception):
        client.chat(Q)
    assert cache_entries(tmp_path / "cache") == []

    assert client.chat(Q).cache_hit is False


def test_a_corrupt_cache_entry_is_a_miss_not_a_crash(endpoint, make_client, tmp_path):
    endpoint.chat.side_effect = [completion("one"), completion("two")]
    client = make_client(cache=True)
    client.chat(Q)
    (entry,) = cache_entries(tmp_path / "cache")
    entry.write_text('{"request": {"model": ', encoding="utf-8")  # truncated by a crash elsewhere

    resp = client.chat(Q)

    assert resp.cache_hit is False and resp.text == "two"
    assert json.loads(entry.read_text(encoding="utf-8"))["response"]["text"] == "two"


# --------------------------------------------------------------------------- a broken cache is a miss

BROKEN_CACHES = {
    "cache-dir-is-a-file": lambda d, key: d.write_text("not a folder"),
    "entry-is-a-folder": lambda d, key: (d / key[:2] / f"{key}.json").mkdir(parents=True),
}


@pytest.mark.parametrize("break_it", BROKEN_CACHES.values(), ids=BROKEN_CACHES)
def test_a_cache_that_cannot_be_read_or_written_is_one_warning_and_a_miss(endpoint, tmp_path, caplog, break_it):
    endpoint.chat.side_effect = [completion("The Rhône"), completion("The Rhône again")]
    cache_dir = tmp_path / "cache"
    break_it(cache_dir, request_key({"model": MODEL, "messages": Q, "params": _params()}))
    client = LLMClient(
        base_url=BASE_URL, model=MODEL, settings=LLMSettings(retry_backoff_s=0), cache=ResponseCache(cache_dir)
    )

    with caplog.at_level(logging.WARNING, logger="lens"):
        first, second = client.chat(Q), client.chat(Q)

    assert (first.text, first.cache_hit, second.text, second.cache_hit) == (
        "The Rhône",
        False,
        "The Rhône again",
        False,
    )
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and str(cache_dir) in warnings[0] and "miss" in warnings[0]


def test_a_full_disk_under_the_cache_is_a_warning_and_a_miss(endpoint, make_client, tmp_path):
    endpoint.chat.side_effect = [completion("The Rhône " + "x" * 20_000)]
    client = make_client(cache=True)

    def call() -> tuple[str, list[str]]:
        records: list[str] = []
        handler = logging.Handler(logging.WARNING)
        handler.emit = lambda r: records.append(r.getMessage())
        logging.getLogger("lens").addHandler(handler)
        return client.chat(Q).text[:9], records

    text, warnings = with_full_disk(4096, call)

    assert text == "The Rhône"
    assert len(warnings) == 1 and "cannot write" in warnings[0]
    assert cache_entries(tmp_path / "cache") == []  # no half entry, no temporary file left


def _params() -> dict:
    """The generation parameters of ``client.chat(Q)`` with default settings (part of the cache key)."""
    s = LLMSettings()
    return {
        "temperature": s.temperature,
        "max_tokens": s.max_output_tokens,
        "seed": s.seed,
        "json": False,
    }


# --------------------------------------------------------------------------- concurrency

PROMPTS = [f"Question number {i}: what is {i} squared?" for i in range(6)]


def _answer_for(request: httpx.Request) -> httpx.Response:
    """A reply derived from the request, so a mixed-up cache entry is detectable. Large, to widen races."""
    content = json.loads(request.content)["messages"][-1]["content"]
    return completion(f"ANSWER<{content}>" + "." * 20_000)


def _expected(prompt: str) -> str:
    return f"ANSWER<{prompt}>" + "." * 20_000


def _client(cache_dir: Path) -> LLMClient:
    return LLMClient(
        base_url=BASE_URL, model=MODEL, settings=LLMSettings(retry_backoff_s=0), cache=ResponseCache(cache_dir)
    )


def _hammer(cache_dir: Path, rounds: int) -> list[str]:
    """Call a new client on every prompt ``rounds`` times; return the problems (empty = all correct).

    Runs inside a respx mock whose replies come from ``_answer_for``.
    """
    problems = []
    client = _client(cache_dir)
    for r in range(rounds):
        for i in range(len(PROMPTS)):
            prompt = PROMPTS[(i + r) % len(PROMPTS)]
            text = client.chat([{"role": "user", "content": prompt}]).text
            if text != _expected(prompt):
                problems.append(f"{prompt!r} -> {text[:60]!r}")
    client.close()
    return problems


def _assert_cache_is_whole(cache_dir: Path) -> None:
    entries = cache_entries(cache_dir)
    assert [p.name for p in entries if p.name.startswith(".tmp-")] == []  # no half-written leftovers
    assert len(entries) == len(PROMPTS)
    for path in entries:
        entry = json.loads(path.read_text(encoding="utf-8"))
        prompt = entry["request"]["messages"][-1]["content"]
        assert entry["response"]["text"] == _expected(prompt)
        assert path.stem == request_key(entry["request"])


def test_concurrent_threads_share_the_cache_without_corruption(tmp_path):
    cache_dir = tmp_path / "cache"
    problems: list[str] = []
    lock = threading.Lock()

    def worker():
        found = _hammer(cache_dir, rounds=5)
        with lock:
            problems.extend(found)

    with respx.mock() as router:
        router.post(CHAT_URL).mock(side_effect=_answer_for)
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)

    assert problems == []
    _assert_cache_is_whole(cache_dir)


def _process_worker(cache_dir: str, queue) -> None:
    try:
        with respx.mock(assert_all_called=False) as router:  # a late process may be served from cache only
            router.post(CHAT_URL).mock(side_effect=_answer_for)
            queue.put(_hammer(Path(cache_dir), rounds=6))
    except BaseException as exc:  # report, never hang the parent
        queue.put([f"worker crashed: {exc!r}"])


def test_concurrent_processes_share_the_cache_without_corruption(tmp_path):
    cache_dir = tmp_path / "cache"
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_process_worker, args=(str(cache_dir), queue)) for _ in range(3)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)

    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert results == [[], [], []]
    _assert_cache_is_whole(cache_dir)
    # and a fresh client in this process is served entirely from what the others wrote
    with respx.mock(assert_all_called=False) as router:
        route = router.post(CHAT_URL).mock(side_effect=_answer_for)
        client = _client(cache_dir)
        assert all(client.chat([{"role": "user", "content": p}]).cache_hit for p in PROMPTS)
        assert route.call_count == 0


def test_concurrent_writers_of_one_key_never_expose_a_partial_entry(tmp_path):
    """Readers racing writers of the same key see nothing or a whole entry, never a fragment."""
    cache = ResponseCache(tmp_path / "cache")
    key = request_key({"k": 1})
    payloads = [{"text": str(i) * 200_000} for i in range(4)]
    stop = threading.Event()
    bad: list[str] = []

    def writer(payload):
        while not stop.is_set():
            cache.put(key, {"k": 1}, payload)

    def reader():
        while not stop.is_set():
            got = cache.get(key)
            if got is not None and got not in payloads:
                bad.append(repr(got)[:80])

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads]
    threads += [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    threading.Event().wait(1.0)
    stop.set()
    for t in threads:
        t.join(timeout=30)

    assert bad == []
    assert cache.get(key) in payloads


# --------------------------------------------------------------------------- secrets

SECRET = "sk-lens-test-6f1d0c9a-DO-NOT-LEAK-42"


def test_api_key_is_sent_but_never_logged_or_cached(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("LENS_TEST_SECRET_KEY", SECRET)
    cache_dir = tmp_path / "responses"
    config = load_config(
        "fast",
        env={},
        overrides={
            "llm": {
                "base_url": BASE_URL,
                "model": MODEL,
                "api_key_env": "LENS_TEST_SECRET_KEY",
                "cache_dir": str(cache_dir),
                "retry_backoff_s": 0,
                "max_retries": 1,
            }
        },
    )
    for name in ("", "lens", "openai", "httpx", "httpcore"):
        caplog.set_level(logging.DEBUG, logger=name or None)
    messages_seen = []

    with respx.mock() as router:
        route = router.post(CHAT_URL).mock(
            side_effect=[
                error(429),
                completion("Lyon sits on the Rhône."),
                completion("not json"),
                completion("still not json"),
                error(401, "invalid credentials"),
            ]
        )
        client = open_client(config)
        client.chat(Q)
        client.chat(Q)  # a cache hit
        from pydantic import BaseModel

        class River(BaseModel):
            river: str

        with pytest.raises(LLMFormatError) as fmt:
            client.chat_json([{"role": "user", "content": "River?"}], River)
        with pytest.raises(LLMRequestError) as req:
            client.chat([{"role": "user", "content": "a third question"}])
        client.close()
        messages_seen = [c.request.headers.get("authorization") for c in route.calls]

    # the key was really in play: the endpoint received it
    assert messages_seen and all(h == f"Bearer {SECRET}" for h in messages_seen)
    # the SDK and transport loggers really ran at DEBUG, so a leak would have been captured
    assert any(r.name.startswith("openai") for r in caplog.records)
    assert any(r.name.startswith("httpx") for r in caplog.records)
    logged = "\n".join(f"{r.name} {r.getMessage()} {r.args!r} {r.__dict__.get('headers', '')}" for r in caplog.records)
    assert SECRET not in logged
    assert SECRET not in str(fmt.value) and SECRET not in str(req.value)
    files = cache_entries(cache_dir)
    assert files, "the cache should hold the successful replies"
    for path in files:
        assert SECRET.encode() not in path.read_bytes()
        assert b"llm.test" not in path.read_bytes()  # nor the endpoint URL
    assert SECRET not in json.dumps(config.canonical()) and SECRET not in config.model_dump_json()
