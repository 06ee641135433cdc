"""``lens calibrate run``: labelled readings of the served model on questions set aside from every evaluation.

For each question, the agent's own pieces run as ``lens ask`` runs them — the decomposition call, the prior over
the article pool, the production reading (``lens.loop._reading``) through the loop's ``read`` — over each requirement's
``windows`` best candidate windows by prior belief (the windows the loop reads first), first-hop requirements
before the bridge requirements whose cues their confirmed values fill in (the loop's own ``settle``). Every
reading is labelled at the window (``harness.calibrate.labels``) and one row per question is appended to
``OUT/readings.jsonl`` as it completes, so a stopped run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable

from harness.calibrate.labels import SupportingFacts
from lens import LensError, LLMError, LLMUnavailableError, open_client
from lens.parts import (
    ELSEWHERE,
    CorpusScan,
    CorpusView,
    CostMeter,
    Document,
    LoopState,
    Prior,
    append_lines,
    assemble_loop,
    decompose,
)

__all__ = ["READINGS", "ROW_FORMAT", "article_pool", "done_ids", "calibrate_readings"]

READINGS = "readings.jsonl"
ROW_FORMAT = "lens-readings/3"


def article_pool(path: str | Path) -> tuple[CorpusView, dict[str, list[str]]]:
    """A CorpusView over an article JSONL (one document per article: title line, one sentence per line) and the
    articles' sentences by title; a missing or empty file, or a line that is not an article record (a non-empty
    ``title`` string; ``sentences`` or ``text``: a string or a list of strings), is an error naming it."""
    docs, sentences = [], {}
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        raise LensError(f"{path}: cannot read the articles ({exc.strerror or exc})") from None
    with fh:
        try:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                title, sents = _article(line, f"{path}: line {n}")
                sentences[title] = sents
                text = title + "\n" + "\n".join(s.strip() for s in sents)
                sha = hashlib.sha256(text.encode()).hexdigest()
                docs.append(Document(doc_id=title, path=title, title=title, text=text, sha256=sha))
        except UnicodeDecodeError as exc:
            raise LensError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not docs:  # rows read against no article would mark their questions done with no reading
        raise LensError(f"{path}: no articles (an article pool needs at least one title and its sentences)")
    return CorpusView(CorpusScan(root=Path(path), documents=docs, files=len(docs))), sentences


def _article(line: str, where: str) -> tuple[str, list[str]]:
    try:
        a = json.loads(line)
    except json.JSONDecodeError as exc:
        raise LensError(f"{where}: not an article record (malformed JSON: {exc.msg})") from None
    if not isinstance(a, dict):
        raise LensError(f"{where}: not an article record (expected a JSON object)")
    title = a.get("title")
    if not isinstance(title, str) or not title.strip():
        raise LensError(f"{where}: field 'title' must be a non-empty string, not {title!r:.60}")
    sents = a.get("sentences") or a.get("text")
    if isinstance(sents, str):
        sents = [sents]
    if not isinstance(sents, list) or not sents or not all(isinstance(s, str) for s in sents):
        raise LensError(
            f"{where}: field 'sentences' (or 'text') must be a string or a list of strings, not {sents!r:.60}"
        )
    return title, sents


def done_ids(out_dir: str | Path) -> set[str]:
    """Question ids already in ``OUT/readings.jsonl`` (a torn last line is ignored)."""
    path = Path(out_dir) / READINGS
    ids: set[str] = set()
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                ids.add(json.loads(line)["id"])
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
    return ids


def calibrate_readings(
    config,
    questions: list[dict],
    articles_path: str,
    out_dir: str,
    *,
    windows: int = 4,
    progress: Callable[[int, int, dict], None] | None = None,
    pool: tuple[CorpusView, dict[str, list[str]]] | None = None,
) -> int:
    """Read and label each question not yet in ``out_dir``; returns the number of rows written now. ``pool``:
    the articles already read by :func:`article_pool` (else they are read from ``articles_path``)."""
    if windows < 1:
        raise LensError(
            f"--windows must be 1 or more (got {windows}): a row without readings would mark its question done"
        )
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise LensError(f"{out}: not a folder (--out names the folder for {READINGS})")
    # every window chosen is read: a question's budget is no limit here (the call timeout still is)
    config = config.model_copy(
        update={
            "budget": config.budget.model_copy(
                update={"max_rounds": 1000, "question_timeout_s": 86_400.0, "max_tokens_per_query": 10**8}
            )
        }
    )
    view, articles = pool or article_pool(articles_path)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LensError(f"{out}: cannot create the folder for {READINGS} ({exc.strerror or exc})") from None
    prior = Prior(view, config.prior)
    client = open_client(config)
    skip = done_ids(out)
    todo = [q for q in questions if q["_id"] not in skip]
    for i, q in enumerate(todo, 1):
        row = _question_row(config, client, q, view, prior, articles, windows)
        append_lines(out / READINGS, [json.dumps(row, ensure_ascii=False)])
        if progress:
            progress(i, len(todo), row)
    return len(todo)


def _question_row(config, client, q: dict, view, prior, articles, windows: int) -> dict:
    t0 = time.monotonic()
    meter = CostMeter()

    def call(messages, schema, max_tokens):
        try:
            return client.chat_json(messages, schema, max_tokens=max_tokens, meter=meter).parsed
        except LLMUnavailableError:
            raise
        except LLMError:
            return None

    dec = decompose(q["question"], call)
    loop = assemble_loop(q["question"], dec, prior, config, client=client, meter=meter)
    state = loop.state
    loop.seed()
    reqs = dec.requirements
    facts = SupportingFacts(q, articles, [r.to_dict() for r in reqs])
    readings = []
    for hop in ([r for r in reqs if not r.depends_on], [r for r in reqs if r.depends_on]):
        for req in hop:
            if req.waiting(state.values):  # its source confirmed no value: search with the question's own cues
                state.values.setdefault(req.depends_on or "", "")
                loop.refresh(req, fresh=True)
        chosen = {req.id: _best_windows(state, req.id, windows) for req in hop}
        for req in hop:
            for key in chosen[req.id]:
                w = state.windows[key]
                loop.budget.start_round()  # one reading, one call
                reading, _ = loop.read(req, w, loop.budget.rounds)
                if reading is None:
                    continue
                doc = view.docs[w.doc_index]
                named = [doc.sentences[reading.sentence].text] if reading.sentence is not None else []
                readings.append(
                    reading.to_dict()
                    | {
                        "title": doc.title,
                        "label": int(
                            facts.holds(req.id, reading.requirement, doc.title, [t for _, t in w.sentences(doc)])
                        ),
                        "sentence_label": int(
                            bool(named) and facts.holds(req.id, reading.requirement, doc.title, named)
                        ),
                        "value_ok": facts.value_ok(req.id, reading.value) if reading.value else None,
                    }
                )
        loop.settle(hop)
    return {
        "format": ROW_FORMAT,
        "id": q["_id"],
        "type": q.get("type"),
        "question": q["question"],
        "model": client.model,
        "config_hash": config.canonical_hash(),
        "requirements": [r.to_dict() for r in reqs],
        "readings": readings,
        "cost": meter.cost.to_dict(),
        "seconds": round(time.monotonic() - t0, 1),
    }


def _best_windows(state: LoopState, rid: str, k: int) -> list[str]:
    """The ``k`` windows with the most belief mass for ``rid`` (ties by key)."""
    post = state.beliefs[rid].posterior()
    return sorted((key for key in post if key != ELSEWHERE), key=lambda key: (-post[key], key))[:k]
