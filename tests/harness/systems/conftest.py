"""Fixtures for the benchmark-systems tests: tiny nested snapshots D6 ⊂ D12 built with ``harness.bench.snapshots``,
a scripted LLM behind respx (the real ``openai`` client path), and configurations bound to it."""

from __future__ import annotations

import json

import pytest
import respx

from harness.bench.datasets import load_articles, load_questions
from harness.bench.snapshots import build_snapshots, plan_snapshots
from lens._config import load_config
from lens.llm._llm import LLMClient

from .scripted_llm import Responder, respx_side_effect

BASE_URL = "http://bench-llm.test/v1"


def records(n: int = 12) -> list[dict]:
    """Bridge questions whose answer is stated in the second gold article ("<B> lies in <answer>.")."""
    out = []
    for i in range(n):
        river, lake, answer = f"Varn{i:02d} River", f"Lake Osk{i:02d}", f"Tallow{i:02d}"
        context = [
            [river, [f"The {river} is a river in the north.", f"The {river} flows into {lake}."]],
            [
                lake,
                [
                    f"{lake} is a glacial lake fed by the {river}.",
                    f"{lake} lies in {answer}.",
                    f"{lake} freezes in winter.",
                ],
            ],
            [f"Mount Kell{i:02d}", [f"Mount Kell{i:02d} is a mountain.", "It is tall."]],
            [f"Harbour Dun{i:02d}", [f"Harbour Dun{i:02d} is a harbour."]],
        ]
        out.append(
            {
                "_id": f"q{i:02d}",
                "question": f"Where is the lake that the {river} flows into?",
                "answer": answer,
                "type": "comparison" if i % 4 == 0 else "bridge",
                "level": "hard",
                "supporting_facts": [[river, 1], [lake, 1]],
                "context": context,
            }
        )
    return out


def pool(recs: list[dict], background: int = 40) -> list[dict]:
    seen: dict[str, dict] = {}
    for r in recs:
        for title, sents in r["context"]:
            seen.setdefault(title, {"id": f"p{len(seen)}", "title": title, "text": " ".join(sents), "sentences": sents})
    for k in range(background):
        sents = [f"Quarry{k:02d} is an old quarry.", f"Quarry{k:02d} closed long ago."]
        seen[f"Quarry{k:02d}"] = {"id": f"b{k}", "title": f"Quarry{k:02d}", "text": " ".join(sents), "sentences": sents}
    return list(seen.values())


@pytest.fixture(scope="session")
def bench_data(tmp_path_factory) -> dict:
    """questions.json, snapshots D6 ⊂ D12 (with manifests) in a session temp folder."""
    root = tmp_path_factory.mktemp("bench")
    recs = records(12)
    qfile = root / "questions.json"
    qfile.write_text(json.dumps(recs), encoding="utf-8")
    afile = root / "articles.jsonl"
    afile.write_text("".join(json.dumps(a) + "\n" for a in pool(recs)), encoding="utf-8")
    snap = plan_snapshots(load_questions(qfile), load_articles(afile), (6, 12), seed=42)
    build_snapshots(snap, root / "snap")
    g6, g12 = (list(p.question_ids) for p in snap.plans)
    return {
        "root": root,
        "questions": qfile,
        "D6": root / "snap" / "D6",
        "D12": root / "snap" / "D12",
        "snap": root / "snap",
        "by_id": {q.id: q for q in load_questions(qfile)},
        "G6": g6,
        "G12": g12,
        "new": [i for i in g12 if i not in g6],
    }


@pytest.fixture
def responder() -> Responder:
    return Responder()


@pytest.fixture
def endpoint(responder):
    """Every chat request to BASE_URL is answered by ``responder`` (through the real openai client)."""
    with respx.mock(assert_all_called=False) as router:
        router.chat = router.post(f"{BASE_URL}/chat/completions").mock(side_effect=respx_side_effect(responder))
        yield router


def make_config(preset: str = "fast", **overrides):
    base = {"llm.base_url": BASE_URL, "llm.cache": False, "llm.max_retries": 0, "llm.retry_backoff_s": 0}
    base.update(overrides)
    return load_config(
        preset, env={}, overrides=[f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in base.items()]
    )


@pytest.fixture
def config():
    return make_config()


@pytest.fixture
def client(config):
    c = LLMClient(base_url=BASE_URL, model="test-model", settings=config.llm)
    yield c
    c.close()
