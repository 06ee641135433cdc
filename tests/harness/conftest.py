"""Shared fixtures for the benchmark-data tests: small synthetic HotpotQA files and the shared real sample."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "hotpotqa"
DISTRACTOR = SHARED / "hotpot_dev_distractor.json"
ARTICLES = SHARED / "wiki_articles.jsonl"


def question_record(qid: str, *, qtype: str = "bridge", n_facts: int = 2, topic: str | None = None) -> dict:
    """One official-layout record with gold articles ``<topic> A``/``<topic> B`` and two distractors."""
    topic = topic or f"Topic {qid}"
    gold = [f"{topic} A", f"{topic} B"]
    facts = [[gold[i % 2], i // 2] for i in range(n_facts)]
    context = [[t, [f"{t} sentence {k}." for k in range(3)]] for t in gold]
    context += [[f"{topic} distractor {k}", [f"Distractor {k} of {topic}."]] for k in range(2)]
    return {
        "_id": qid,
        "question": f"What links {gold[0]} and {gold[1]}?",
        "answer": f"answer {qid}",
        "type": qtype,
        "level": "hard",
        "supporting_facts": facts,
        "context": context,
    }


def population(n: int = 40) -> list[dict]:
    """A synthetic population with unequal strata (bridge/comparison × 2/3/4 facts)."""
    out = []
    for i in range(n):
        qtype = "comparison" if i % 4 == 0 else "bridge"
        n_facts = 2 + (i % 3 if i % 5 else 0)
        out.append(question_record(f"q{i:03d}", qtype=qtype, n_facts=n_facts))
    return out


def pool_for(records: list[dict], n_background: int = 400) -> list[dict]:
    """Article pool: every context paragraph of ``records`` plus ``n_background`` unrelated articles."""
    seen: dict[str, dict] = {}
    for r in records:
        for title, sents in r["context"]:
            seen.setdefault(title, {"id": f"p{len(seen)}", "title": title, "text": " ".join(sents), "sentences": sents})
    for k in range(n_background):
        title = f"Background article {k}"
        sents = [f"Background {k} first sentence.", f"Background {k} second sentence."]
        seen[title] = {"id": f"b{k}", "title": title, "text": " ".join(sents), "sentences": sents}
    return list(seen.values())


def write_json(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def small_data(tmp_path: Path) -> tuple[Path, Path]:
    """(questions.json, articles.jsonl) for a 40-question synthetic population."""
    recs = population(40)
    return write_json(tmp_path / "questions.json", recs), write_jsonl(tmp_path / "articles.jsonl", pool_for(recs))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared real HotpotQA sample (``../shared/data/hotpotqa`` from the repository)."""
    if not DISTRACTOR.is_file() or not ARTICLES.is_file():
        pytest.skip(f"shared HotpotQA sample not found at {SHARED} (expected at ../shared/data/hotpotqa)")
    return SHARED


@pytest.fixture(scope="session")
def real_questions():
    if not DISTRACTOR.is_file():
        pytest.skip(f"shared HotpotQA sample not found at {DISTRACTOR} (expected at ../shared/data/hotpotqa)")
    from harness.bench.datasets import load_questions

    return load_questions(DISTRACTOR)


@pytest.fixture(scope="session")
def make():
    """The synthetic-data helpers above, for tests (conftest modules are not importable by name)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        question_record=question_record,
        population=population,
        pool_for=pool_for,
        write_json=write_json,
        write_jsonl=write_jsonl,
    )


def load_script(name: str):
    """``benchmarks/<name>.py`` loaded by path as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
