"""Oracle-strength simulation (``lens bench simulate``): the real LENS loop driven by a simulated oracle whose
judgements come from HotpotQA's supporting facts with a chosen (tpr, fpr). **It uses labels**: every row and
summary carries ``uses_gold: true``, and it never enters a headline table or significance test.

What runs is the product's own code through its public API — ``lens.Agent(config).explore(question, folder,
decomposition=..., observer=...)``: the scan of the snapshot folder, the prior, the propose–observe–update
loop with a reading model that knows only whether a sentence was named, at the simulated (tpr, fpr), the GLR stop, bridge resolution and
consolidation to at most ``loop.evidence_docs`` cited documents. No LLM is called and no answer is
synthesised. It shows what a user with a strong endpoint would get from the loop, and tests the loop's
mechanics at a scale the local model cannot reach.

The simulated oracle, for each (requirement, window) read: the truth is the calibration's label
(``harness.calibrate.labels.SupportingFacts``: the window holds a supporting sentence of the requirement's hop). With probability
tpr a true window is reported (quote = that supporting sentence, value = the bridge entity — the second-hop
title, or when the hops are ambiguous the gold title the question does not name — for a requirement others
depend on, the gold answer for the final requirement of a bridge question), with probability fpr
a false one is (quote = the window's first content sentence, value = the window's title). Draws are seeded by
(seed, question, requirement, window), so a point is reproducible and points differ only in their rates.

Requirements: the LLM's decomposition is not available without an LLM, so they are made from the question's
HotpotQA type (also a label): a bridge question gets R1 (the question's first hop: its wording, the named
spans of the question as cues) and R2 (depends on R1: the fact asked about #R1); a comparison question one
requirement per compared entity (the code decomposition's split).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from harness.bench.datasets import DataError, Question
from harness.bench.metrics import evidence_recall
from harness.bench.systems.corpus import read_snapshot_doc
from harness.calibrate.labels import SupportingFacts
from harness.files import write_json_atomic
from lens import Agent, LensConfig
from lens.parts import (
    Decomposition,
    Judgement,
    ReadingModel,
    Requirement,
    base_title,
    heuristic_decomposition,
    merge_overrides,
    whole_entity,
)

__all__ = ["DEFAULT_POINTS", "parse_points", "simulated_decomposition", "SimulatedOracle", "simulate", "summarise"]

# from the measured 1.5B single-rate point to a strong endpoint
DEFAULT_POINTS = ((0.37, 0.22), (0.6, 0.15), (0.8, 0.08), (0.9, 0.04), (0.95, 0.02))


def parse_points(text: str) -> list[tuple[float, float]]:
    """``"0.37:0.22,0.95:0.02"`` → [(0.37, 0.22), (0.95, 0.02)]; each rate in (0, 1)."""
    out = []
    for item in text.split(","):
        try:
            tpr, fpr = (float(x) for x in item.split(":"))
        except ValueError:
            raise ValueError(f"--points: {item!r} is not tpr:fpr") from None
        if not (0 < tpr < 1 and 0 < fpr < 1):
            raise ValueError(f"--points: {item!r}: rates must lie strictly between 0 and 1")
        out.append((tpr, fpr))
    return out


def simulated_decomposition(q: Question) -> Decomposition:
    """Requirements from the question's type (see the module docstring)."""
    code = heuristic_decomposition(q.question)
    if q.type == "comparison":
        return code
    cues = list(code.requirements[0].cues) if code.requirements else []
    return Decomposition(
        "bridge",
        [
            Requirement("R1", q.question, cues, None, None),
            Requirement("R2", f"What does the question ask about #R1? ({q.question})", [], "R1", None),
        ],
        "simulated",
    )


def _articles(q: Question) -> dict[str, list[str]]:
    return {title: list(sents) for title, sents in q.context}


class SimulatedOracle:
    """The ``lens.Observer`` of one question at one (tpr, fpr)."""

    def __init__(self, q: Question, decomposition: Decomposition, tpr: float, fpr: float, seed: int):
        self.q, self.tpr, self.fpr, self.seed = q, tpr, fpr, seed
        reqs = [r.to_dict() for r in decomposition.requirements]
        self.facts = SupportingFacts(
            {"supporting_facts": [list(sf) for sf in q.supporting_facts], "type": q.type, "answer": q.answer},
            _articles(q),
            reqs,
        )
        self.dependents = {r.depends_on for r in decomposition.requirements if r.depends_on}
        self.final = decomposition.requirements[-1].id
        self.calls = 0
        # the bridge entity: the second-hop title, or (hops ambiguous) the gold title the question does not name
        second = self.facts.hops["second"]
        unnamed = [t for t in sorted(self.facts.hops["gold"]) if t.lower() not in q.question.lower()]
        self.bridge = (second or unnamed or sorted(self.facts.hops["gold"]) or [""])[0]

    def _draw(self, rid: str, key: str) -> float:
        h = hashlib.sha256(f"{self.seed}:{self.q.id}:{rid}:{key}".encode()).digest()
        return random.Random(h).random()

    def _value(self, rid: str, sentence: str) -> str:
        """The value a perfect reader copies from the sentence it names: the bridge entity (a bridge's source) or
        the answer (its final fact), as the sentence writes it — the title without its "(disambiguation)" where
        only that stands there —; none when the sentence holds neither form whole (as the loop's own check of a
        real reading's value demands)."""
        if rid in self.dependents:
            gold = self.bridge
        elif rid == self.final and self.facts.value_rule:
            gold = self.q.answer
        else:
            return ""
        return next((v for v in (gold, base_title(gold)) if v and whole_entity(v, sentence)), "")

    def __call__(self, question, rid, text, w, doc) -> Judgement:
        """One reading of window ``w`` for requirement ``rid`` (``text``: its wording as read)."""
        self.calls += 1
        sents = w.sentences(doc)
        gold = [(i, s) for i, s in sents if self.facts.holds(rid, text, doc.title, [s])]
        u = self._draw(rid, w.key)
        if gold and u < self.tpr:
            i, s = gold[0]
            return Judgement(True, None, i, self._value(rid, s), s)
        if not gold and u < self.fpr and len(sents) > 1:
            i, s = sents[1]  # the first sentence after the title line
            return Judgement(True, None, i, doc.title, s)
        return Judgement(False, None, None)


def _config(base: LensConfig, tpr: float, fpr: float) -> LensConfig:
    data = base.model_dump()
    model = base.llm.served_model
    rates = ReadingModel.from_rates(tpr, fpr).model_dump()
    data = merge_overrides(data, {"loop": {"reading_model": {model: rates}}, "memory": {"enabled": False}})
    return LensConfig.model_validate(data)


def simulate(
    questions: Sequence[Question],
    snapshot: str | Path,
    points: Iterable[tuple[float, float]],
    config: LensConfig,
    *,
    seed: int = 0,
    out: str | Path | None = None,
    progress=None,
) -> list[dict[str, Any]]:
    """One row per (point, question); rows are appended to ``out`` (JSONL) as they complete and rows already
    there are kept (a rerun resumes)."""
    folder = Path(snapshot)
    done: dict[tuple[float, float, str], dict] = {}
    if out is not None and Path(out).exists():
        data = Path(out).read_bytes()
        if data and not data.endswith(b"\n"):  # a row a kill interrupted: cut it off, it is rerun
            with open(out, "r+b") as fh:
                fh.truncate(data.rfind(b"\n") + 1)
        for n, line in enumerate(Path(out).read_text(encoding="utf-8").splitlines(), 1):
            try:
                r = json.loads(line)
                done[(r["tpr"], r["fpr"], r["id"])] = r
            except (json.JSONDecodeError, KeyError) as exc:
                raise DataError(f"{out}:{n}: not a simulation row ({exc})") from None
    rows = []
    for tpr, fpr in points:
        cfg = _config(config, tpr, fpr)
        agent = Agent(cfg)
        for q in questions:
            key = (tpr, fpr, q.id)
            if key in done:
                rows.append(done[key])
                continue
            dec = simulated_decomposition(q)
            oracle = SimulatedOracle(q, dec, tpr, fpr, seed)
            t0 = time.monotonic()
            result = agent.explore(q.question, folder, decomposition=dec, observer=oracle)
            titles = []
            for e in result.evidence:
                doc = read_snapshot_doc(folder, e.path)
                t = doc.title if doc is not None else e.title
                if t not in titles:
                    titles.append(t)
            row = {
                "uses_gold": True,
                "tpr": tpr,
                "fpr": fpr,
                "seed": seed,
                "id": q.id,
                "type": q.type,
                "ev_rec": evidence_recall(q.gold_titles, titles),
                "cited_docs": len(titles),
                "rounds": result.cost.rounds,
                "oracle_calls": oracle.calls,
                "stop": result.stop_reason.split(";")[0],
                "requirements": len(result.requirements),
                "certified": sum(r.status == "certified" for r in result.requirements),
                "seconds": round(time.monotonic() - t0, 3),
                "config_hash": cfg.canonical_hash(),
            }
            rows.append(row)
            if out is not None:
                with open(out, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row, sort_keys=True) + "\n")
            if progress:
                progress(row)
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per (tpr, fpr): means over its questions, stop reasons and the certified share."""
    by: dict[tuple[float, float], list[dict]] = {}
    for r in rows:
        by.setdefault((r["tpr"], r["fpr"]), []).append(r)
    out = []
    for (tpr, fpr), rs in sorted(by.items()):
        n = len(rs)
        stops: dict[str, int] = {}
        for r in rs:
            stops[r["stop"]] = stops.get(r["stop"], 0) + 1
        reqs = sum(r["requirements"] for r in rs)
        out.append(
            {
                "uses_gold": True,
                "tpr": tpr,
                "fpr": fpr,
                "lr_positive": round(tpr / fpr, 2),
                "questions": n,
                "ev_rec": round(100 * sum(r["ev_rec"] for r in rs) / n, 1),
                "cited_docs": round(sum(r["cited_docs"] for r in rs) / n, 2),
                "rounds": round(sum(r["rounds"] for r in rs) / n, 2),
                "oracle_calls": round(sum(r["oracle_calls"] for r in rs) / n, 2),
                "certified_share": round(100 * sum(r["certified"] for r in rs) / reqs, 1) if reqs else None,
                "all_certified": round(100 * sum(r["certified"] == r["requirements"] for r in rs) / n, 1),
                "stops": dict(sorted(stops.items())),
            }
        )
    return out


def table(summary: Sequence[dict[str, Any]]) -> str:
    """The summary as a Markdown table (``uses_gold=true``: never a headline table)."""
    lines = [
        "Oracle-strength simulation (uses_gold=true; supporting-fact oracle through the real loop, no LLM)",
        "",
        "| tpr | fpr | LR+ | n | Ev.Rec % | cited docs | rounds | oracle calls | certified % | all certified % | stops |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        stops = ", ".join(f"{k} {v}" for k, v in s["stops"].items())
        lines.append(
            f"| {s['tpr']} | {s['fpr']} | {s['lr_positive']} | {s['questions']} | {s['ev_rec']} | {s['cited_docs']} "
            f"| {s['rounds']} | {s['oracle_calls']} | {s['certified_share']} | {s['all_certified']} | {stops} |"
        )
    return "\n".join(lines) + "\n"


def write_summary(path: str | Path, summary: Sequence[dict[str, Any]]) -> None:
    write_json_atomic(path, {"uses_gold": True, "points": list(summary)})
