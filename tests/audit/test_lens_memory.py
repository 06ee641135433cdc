"""The LENS warm-reuse memory audit (SPEC §5 memories (c)): event source, views, Naive, staleness, contract, CLI.

A synthetic ``lens bench run`` stands in for a real one: five question groups over a small snapshot. Every
question of a group needs the group's "Archive" article, which shares no word with the question (the prior alone
cannot find it) and which each answered question of the group confirmed — so an earlier event of the same group
lifts the anchor's recall through the memory, and a later one only under Future.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from harness.audit.config import AuditConfigError, LensAuditConfig, load_audit_config
from harness.audit.contract import check_rows, check_run
from harness.audit.events import FrozenLogError
from harness.audit.lens_events import LABEL_FIELDS, LensEventLog, LensRunError, load_lens_run, record_from_row
from harness.audit.lens_memory import (
    LensContext,
    LensCorpus,
    PriorRanker,
    agent_min_similarity,
    entry_predicate,
    memory_signals,
    merge_round_robin,
    seed_cues,
    served_by_naive,
    served_by_views,
)
from harness.audit.lens_pipeline import run_lens_audit
from harness.audit.rows import RowTable, read_rows
from harness.audit.views import PIT, Future, FutureH, Stateless, standard_views
from harness.streams import random_stream
from harness.workloads import Request
from lens.memory._memory import MemoryStore, memory_key

NAMES = [
    ("brannock", "velmora", "quillon"),
    ("tarsk", "ondrel", "miravex"),
    ("pellow", "grisane", "zuthar"),
    ("harnell", "coravin", "ystra"),
    ("dumore", "falsket", "wenlow"),
]
WORDS = ["amber", "basalt", "cinder", "dapple", "ember", "flint"]
ERROR_Q, UNRESOLVED_Q = "q0-3", "q1-2"


def _article(title: str, sents: list[str]) -> str:
    return "\n".join([title, *sents]) + "\n"


def question_text(g: int, k: int) -> str:
    a, b, _ = NAMES[g]
    return f"Which ledger did the {b.capitalize()} keeper of Port {a.capitalize()} write in the {WORDS[k]}{g} year?"


def requirement_text(g: int, k: int) -> str:
    a, b, _ = NAMES[g]
    return f"{a} {b} keeper ledger {WORDS[k]}{g}"


def build_bench(
    root: Path, *, groups: int = 5, per_group: int = 6, layout: str = "evidence"
) -> tuple[Path, Path, Path]:
    """(run folder, snapshot folder, questions file) of a synthetic ``lens bench run``."""
    from harness.bench.snapshots import corpus_checksum
    from lens._config import load_config

    snap = root / "snapshots" / "D9"
    snap.mkdir(parents=True)
    files: dict[str, str] = {}
    for g in range(groups):
        a, b, x = NAMES[g]
        files[f"Archive {x.capitalize()}"] = _article(
            f"Archive {x.capitalize()}", ["The archive holds old ledgers.", "Its shelves are tall."]
        )
        files[f"Port {a.capitalize()}"] = _article(
            f"Port {a.capitalize()}", [f"Port {a.capitalize()} is a small harbour.", "Boats moor there."]
        )
        for k in range(6):
            files[f"Notes {a} {k}"] = _article(
                f"Notes {a} {k}",
                [
                    f"The keeper of {a.capitalize()} and {b.capitalize()} wrote notes.",
                    f"{b.capitalize()} keeper notes mention {a.capitalize()} again.",
                ],
            )
    for name, text in files.items():
        (snap / name).write_text(text, encoding="utf-8")
    sha = {n: hashlib.sha256(t.encode()).hexdigest() for n, t in files.items()}
    questions, rows, pos = [], [], 0
    for k in range(per_group):
        for g in range(groups):
            a, b, x = NAMES[g]
            qid, w = f"q{g}-{k}", f"{WORDS[k]}{g}"
            gold = [f"Archive {x.capitalize()}", f"Port {a.capitalize()}"]
            questions.append(
                {
                    "_id": qid,
                    "question": question_text(g, k),
                    "answer": f"ledger {w}",
                    "type": "bridge",
                    "level": "easy",
                    "supporting_facts": [[gold[0], 0], [gold[1], 0]],
                    "context": [[t, files[t].splitlines()[1:]] for t in gold],
                }
            )
            req = {
                "id": "R1",
                "text": requirement_text(g, k),
                "cues": [a.capitalize()],
                "depends_on": None,
                "entity": None,
                "bridge_cues": [],
            }
            status = "unresolved" if qid == UNRESOLVED_Q else "certified"
            ev = [
                {
                    "id": "E1",
                    "path": gold[0],
                    "doc_id": gold[0],
                    "title": gold[0],
                    "first_sentence": 1,
                    "last_sentence": 1,
                    "line_start": 2,
                    "line_end": 2,
                    "sha256": sha[gold[0]],
                    "requirements": ["R1"],
                    "status": "confirmed" if status == "certified" else "candidate",
                    "citation": f"{gold[0]}:2",
                },
                {
                    "id": "E2",
                    "path": gold[1],
                    "doc_id": gold[1],
                    "title": gold[1],
                    "first_sentence": 1,
                    "last_sentence": 1,
                    "line_start": 2,
                    "line_end": 2,
                    "sha256": sha[gold[1]],
                    "requirements": [],
                    "status": "candidate",
                    "citation": f"{gold[1]}:2",
                },
            ]
            details: dict = {"decomposition": {"intent": "lookup", "source": "llm", "requirements": [req]}}
            if layout == "evidence":
                details["requirements"] = [
                    {
                        "id": "R1",
                        "text": req["text"],
                        "status": status,
                        "value": f"ledger {w}",
                        "glr": 9.0,
                        "evidence": ["E1", "E2"],
                    }
                ]
                details["evidence"] = ev
            elif layout == "memory_entries":
                details["requirements"] = [{"id": "R1", "status": status}]
                details["memory_entries"] = (
                    []
                    if status != "certified"
                    else [
                        {
                            "requirement": req["text"],
                            "path": gold[0],
                            "doc_id": gold[0],
                            "first": 1,
                            "last": 1,
                            "line_start": 2,
                            "line_end": 2,
                            "value": f"ledger {w}",
                            "sha256": sha[gold[0]],
                        }
                    ]
                )
            else:  # the LENS row as the bench writes it today: no requirement texts, no evidence windows
                details["requirements"] = [{"id": "R1", "status": status}]
                del details["decomposition"]
            err = None
            if qid == ERROR_Q:
                details, err = {"cost_known": False}, "LLMFormatError: scripted failure"
            rows.append(
                {
                    "format": "lens-bench-row/1",
                    "system": "lens",
                    "system_hash": "s" * 64,
                    "question_id": qid,
                    "position": pos,
                    "question": question_text(g, k),
                    "type": "bridge",
                    "level": "easy",
                    "gold_answer": f"ledger {w}",
                    "gold_titles": gold,
                    "scores": {"em": 1.0, "ev_rec": 1.0},
                    "prediction": {
                        "system": "lens",
                        "answer": f"ledger {w}",
                        "retrieved": [],
                        "evidence": [],
                        "error": err,
                        "details": details,
                    },
                }
            )
            pos += 1
    qfile = root / "questions.json"
    qfile.write_text(json.dumps(questions), encoding="utf-8")
    cfg = load_config("deep", env={})
    run = root / "runs" / "d9"
    run.mkdir(parents=True)
    manifest = {
        "format": "lens-bench-run/1",
        "config": cfg.canonical(),
        "config_hash": cfg.canonical_hash(),
        "binding": {
            "questions_file_sha256": hashlib.sha256(qfile.read_bytes()).hexdigest(),
            "corpus": {"name": "D9", "corpus_checksum": corpus_checksum(sha.items())},
        },
        "binding_hash": "b" * 64,
        "snapshot": {"path": str(snap)},
    }
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with open(run / "rows.jsonl", "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
        fh.write(json.dumps({**rows[0], "system": "bm25", "question_id": "other"}) + "\n")  # another arm: not read
    return run, snap, qfile


CONFIG = """
kind = "lens-memory"
name = "lens-test"
[lens]
run = "{run}"
questions = "{questions}"
[streams]
kinds = {kinds}
seeds = [0]
[replay]
mode = "{mode}"
capacity = 4
horizons = [2, 5]
anchors_per_position = {per}
[full]
anchors_per_position = 1
[metrics]
cutoffs = [2, 4, 10]
headline_k = 10
bootstrap_resamples = 200
"""


def write_config(
    tmp: Path, run: Path, qfile: Path, *, mode: str = "cheap", kinds: str = '["random", "semantic"]', per: int = 3
) -> Path:
    p = tmp / f"lens-{mode}.toml"
    p.write_text(
        CONFIG.format(run=run.as_posix(), questions=qfile.as_posix(), kinds=kinds, mode=mode, per=per), encoding="utf-8"
    )
    return p


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return build_bench(tmp_path_factory.mktemp("bench"))


@pytest.fixture(scope="module")
def lens_run(bench, tmp_path_factory):
    """One cheap-mode audit over the synthetic bench run (random, semantic and the gold-overlap stress stream)."""
    run, _, qfile = bench
    tmp = tmp_path_factory.mktemp("lens-audit")
    cfg = load_audit_config(write_config(tmp, run, qfile, kinds='["random", "semantic", "gold-overlap"]'))
    run_lens_audit(cfg, tmp / "run")
    return tmp / "run"


def _context(bench, capacity: int = 4, folder: Path | None = None):
    run_dir, snap, _ = bench
    run = load_lens_run(run_dir)
    corpus = LensCorpus.read(folder or snap)
    from lens._config import load_config

    gold, _ = corpus.gold_labels([[] for _ in run.records])
    cfg = load_config("deep", env={})
    ranker = PriorRanker(corpus, cfg.prior, depth=cfg.prior.candidates)
    return run, LensContext(run.records, corpus, ranker, gold, capacity=capacity, min_similarity=agent_min_similarity())


def _stream_and_log(run, seed: int = 0):
    requests = tuple(Request(r.question_id, r.question) for r in run.records)
    stream = random_stream(requests, seed)
    return stream, LensEventLog.build(stream, {r.question_id: r for r in run.records}, version="test")


# --------------------------------------------------------------------------- the event source


class _LabelTrap(dict):
    """A bench row that fails the test if any label key is read."""

    def __getitem__(self, key):
        if key in LABEL_FIELDS:
            raise AssertionError(f"label field {key!r} was read")
        return super().__getitem__(key)

    def get(self, key, default=None):
        if key in LABEL_FIELDS:
            raise AssertionError(f"label field {key!r} was read")
        return super().get(key, default)


def test_rows_are_read_without_their_labels(bench):
    run_dir, _, _ = bench
    rows = [json.loads(line) for line in (run_dir / "rows.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r["system"] == "lens"]
    plain = [record_from_row(r) for r in rows]
    trapped = [record_from_row(_LabelTrap(r)) for r in rows]
    assert plain == trapped
    poisoned = []
    for r in rows:
        r = copy.deepcopy(r)
        r.update(gold_answer="POISON", gold_titles=["Notes tarsk 0"], scores={"em": 0.0}, type="x", level="y")
        poisoned.append(record_from_row(r))
    requests = tuple(Request(r.question_id, r.question) for r in plain)
    stream = random_stream(requests, 3)
    a = LensEventLog.build(stream, {r.question_id: r for r in plain}, version="v")
    b = LensEventLog.build(stream, {r.question_id: r for r in poisoned}, version="v")
    assert a.hash == b.hash and a.entries == b.entries


def test_events_come_from_what_each_question_confirmed(bench):
    run = load_lens_run(bench[0])
    assert len(run.records) == 30 and run.event_sources == {"error": 1, "evidence": 29}
    by = {r.question_id: r for r in run.records}
    assert by[ERROR_Q].confirmed == () and by[UNRESOLVED_Q].confirmed == ()  # nothing certified, nothing remembered
    rec = by["q2-4"]
    assert [(c.doc_id, c.requirement, c.value) for c in rec.confirmed] == [
        ("Archive Zuthar", requirement_text(2, 4), "ledger ember2")
    ]
    assert rec.requirements[0]["text"] == requirement_text(2, 4) and rec.decomposition_source == "run"


def test_both_row_layouts_give_the_same_entries(tmp_path):
    a = load_lens_run(build_bench(tmp_path / "a", layout="evidence")[0])
    b = load_lens_run(build_bench(tmp_path / "b", layout="memory_entries")[0])
    assert b.event_sources == {"error": 1, "memory_entries": 29}
    assert [r.confirmed for r in a.records] == [r.confirmed for r in b.records]


def test_a_row_without_confirmed_evidence_is_refused_naming_the_fields(tmp_path):
    run, _, _ = build_bench(tmp_path, layout="bare")
    with pytest.raises(LensRunError, match=r'details\["requirements"\]\[\*\]\.\{text, status, value, evidence\}'):
        load_lens_run(run)


def test_the_event_log_is_online_append_only_and_frozen(bench, tmp_path):
    run = load_lens_run(bench[0])
    stream, log = _stream_and_log(run)
    assert log.frozen and len(log) == len(stream)
    by = {r.question_id: r for r in run.records}
    for e in log.entries:  # each entry sits at the position its question arrived, stamped with the stream clock
        assert log.query_ids[e.position] == stream.query_ids[e.position]
        assert e.question == by[log.owner(e)].question and e.observed_at == float(e.position)
    assert list(log.entry_pos) == sorted(log.entry_pos)
    with pytest.raises(FrozenLogError):
        log.append("x", "x?", ())
    with pytest.raises(ValueError):
        log.entry_pos[0] = 5
    path = log.save(tmp_path / "mem" / "memory.jsonl")
    assert MemoryStore(path.parent).entries() == list(log.entries)  # the agent's own store reads the saved log


# --------------------------------------------------------------------------- views through the agent's predicate


@pytest.mark.parametrize("capacity", [1, 4, 32])
def test_views_serve_only_eligible_entries_and_match_the_agents_lookup(bench, tmp_path, capacity):
    run, ctx = _context(bench, capacity=capacity)
    stream, log = _stream_and_log(run, seed=1)
    anchors = np.arange(len(stream))
    views = standard_views([2, 5])
    served = served_by_views(ctx, stream, log, anchors, views)
    store = MemoryStore(tmp_path / f"m{capacity}", capacity=capacity)
    store.append(log.entries)
    checked = 0
    for view, per_anchor in zip(views, served):
        for i, mem in zip(anchors, per_anchor):
            pos = mem.positions(log)
            assert int(i) not in pos  # never the anchor's own event
            if isinstance(view, Stateless):
                assert pos == []
            elif isinstance(view, PIT):
                assert all(p < i for p in pos)
            elif isinstance(view, FutureH):
                assert all(p <= i + view.horizon for p in pos)
            assert all(len(lst) <= capacity for lst in mem.served)
            # the production lookup through the same predicate serves exactly these entries, in this order
            rec = ctx.records[ctx.index[stream.query_ids[i]]]
            for req, lst in zip(rec.requirements, mem.served):
                got = store.lookup(
                    memory_key(rec.question, req["text"]), entry_predicate(view, int(i)), capacity=capacity
                )
                assert [(e.position, e.requirement, s) for e, s in got] == [
                    (int(log.entry_pos[k]), log.entries[k].requirement, s) for k, s in lst
                ]
                checked += 1
    assert checked == len(views) * len(anchors)
    # the memory is not empty: Future serves something at almost every anchor, PIT nothing at position 0
    fut = served[views.index(next(v for v in views if isinstance(v, Future)))]
    assert sum(bool(m.positions(log)) for m in fut) >= len(anchors) - 2
    assert served[1][0].positions(log) == []


def test_naive_is_materialised_separately_and_equals_future(bench, tmp_path):
    run, ctx = _context(bench)
    stream, log = _stream_and_log(run, seed=2)
    anchors = np.arange(len(stream))
    (fut,) = served_by_views(ctx, stream, log, anchors, [Future()])
    naive = served_by_naive(ctx, stream, log, anchors, tmp_path / "naive")
    assert [m.served for m in naive] == [m.served for m in fut]
    assert MemoryStore(tmp_path / "naive").entries() == list(log.entries)  # everything, up front


def test_stale_entries_are_ignored(bench, tmp_path):
    """An entry whose file changed (or vanished) after it was confirmed is never served to the prior."""
    import shutil

    run_dir, snap, _ = bench
    changed = tmp_path / "D9"
    shutil.copytree(snap, changed)
    (changed / "Archive Zuthar").write_text("Archive Zuthar\nRewritten since the run.\n", encoding="utf-8")  # group 2
    (changed / "Archive Ystra").unlink()  # group 3
    run, ctx = _context(bench, folder=changed)
    stream, log = _stream_and_log(run)
    doc, fresh = ctx.corpus.freshness(log.entries)
    stale_docs = {log.entries[k].doc_id for k in np.flatnonzero(~fresh)}
    assert stale_docs == {"Archive Zuthar", "Archive Ystra"}
    changed_entries = np.asarray([e.doc_id == "Archive Zuthar" for e in log.entries])
    gone_entries = np.asarray([e.doc_id == "Archive Ystra" for e in log.entries])
    assert (doc[changed_entries] >= 0).all() and (doc[gone_entries] == -1).all()  # still there but changed / gone
    anchors = np.arange(len(stream))
    (fut,) = served_by_views(ctx, stream, log, anchors, [Future()])
    stale_seen = 0
    for i, mem in zip(anchors, fut):
        signals, n_stale = memory_signals(mem, doc, fresh, np.asarray([e.posterior for e in log.entries]))
        served_docs = {log.entries[k].doc_id for lst in mem.served for k, _ in lst}
        signal_docs = {ctx.corpus.view.docs[d].doc_id for sig in signals for d in sig}
        assert signal_docs == served_docs - stale_docs
        assert n_stale == sum(1 for lst in mem.served for k, _ in lst if log.entries[k].doc_id in stale_docs)
        stale_seen += n_stale
    assert stale_seen > 0


def test_a_run_audited_against_a_changed_folder_serves_no_stale_entry(bench, tmp_path):
    import shutil

    run_dir, snap, qfile = bench
    changed = tmp_path / "D9"
    shutil.copytree(snap, changed)
    for x in ("Quillon", "Miravex", "Zuthar", "Ystra", "Wenlow"):
        (changed / f"Archive {x}").write_text(
            f"Archive {x}\nThe archive holds old ledgers.\nIt was rebuilt.\n", encoding="utf-8"
        )
    cfg = load_audit_config(write_config(tmp_path, run_dir, qfile, kinds='["random"]')).with_paths(
        snapshot=str(changed)
    )
    run_lens_audit(cfg, tmp_path / "run")
    assert check_run(tmp_path / "run") == []
    t = read_rows(tmp_path / "run" / "rows.jsonl")
    cond = t["condition"].astype(str)
    served = t["n_selected"] > 0
    # every entry points at a rewritten archive: all are stale, none reaches the prior, so every view scores Stateless
    assert served.any() and (t["n_stale"][served] == t["n_selected"][served]).all() and (t["memory_docs"] == 0).all()
    for view in ("pit", "future"):
        for m in ("recall@2", "recall@4", "recall@10"):
            assert (t[m][cond == view] == t[m][cond == "stateless"]).all()
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["bindings"]["D9"]["folder"]["same_corpus_as_run"] is False


def test_memory_reaches_the_prior_and_changes_candidate_recall(lens_run):
    """In the synthetic design the Archive article is found only through the memory: S < P < F."""
    t = read_rows(lens_run / "rows.jsonl")
    head = ~t["uses_gold"].astype(bool)
    cond = t["condition"].astype(str)
    r2 = t["recall@2"].astype(float)
    s, p, f = (r2[head & (cond == c)].mean() for c in ("stateless", "pit", "future"))
    assert s == pytest.approx(0.5)  # the Port article (named in the question) only
    assert s < p < f
    # memory is filed under requirement + question, and the template's words are shared across groups: a PIT row
    # whose memory served only other groups' archives keeps exactly the Stateless recall; one that served its own
    # group's archive finds it
    qid = t["query_id"].astype(str)
    stateless = {q: r for q, r, c in zip(qid, r2, cond) if c == "stateless"}
    pit = np.flatnonzero(head & (cond == "pit"))
    assert (t["memory_docs"][pit] > 0).any()
    assert any(r2[i] == stateless[qid[i]] for i in pit) and any(r2[i] > stateless[qid[i]] for i in pit)


# --------------------------------------------------------------------------- rows, contract, report


def test_lens_rows_carry_the_contract_and_pass_the_checker(lens_run):
    assert check_run(lens_run) == []
    t = read_rows(lens_run / "rows.jsonl")
    for f in (
        "anchor",
        "condition",
        "selected",
        "capacity",
        "seed",
        "corpus_hash",
        "index_hash",
        "tvr",
        "recall@10",
        "events_hash",
    ):
        assert f in t or f == "selected"
    cond = t["condition"].astype(str)
    assert set(cond) == {"stateless", "pit", "future-h", "future", "naive"}
    assert (t["tvr"][cond == "pit"] == 0).all()
    assert (t["capacity"] == 4 * t["lookups"]).all()
    fut = t["tvr"][cond == "future"]
    assert fut.max() > 0  # Future really reads post-anchor entries
    manifest = json.loads((lens_run / "manifest.json").read_text())
    wb = manifest["bindings"]["D9"]
    assert wb["lens_run"]["event_sources"] == {"error": 1, "evidence": 29} and wb["folder"]["same_corpus_as_run"]
    assert wb["agent_config"]["reproduces_run_config"]
    rep = (lens_run / "report" / "report.md").read_text()
    assert "| D9 | lens | Random | Lens-prior |" in rep and "Stress streams" in rep


def test_naive_equals_future_row_for_row(lens_run):
    t = read_rows(lens_run / "rows.jsonl")
    cond = t["condition"].astype(str)
    key = lambda r: (t["stream"][r], int(t["anchor"][r]))  # noqa: E731
    fut = {key(r): r for r in np.flatnonzero(cond == "future")}
    nav = np.flatnonzero(cond == "naive")
    assert len(nav) == len(fut)
    for r in nav:
        f = fut[key(r)]
        assert t.selected_lists[r] == t.selected_lists[f]
        for m in t.metric_fields() + ["n_stale", "memory_docs", "top_sim", "mean_sim"]:
            assert t[m][r] == t[m][f] or (np.isnan(t[m][r]) and np.isnan(t[m][f]))


def _records(lens_run) -> list[dict]:
    return [json.loads(line) for line in (lens_run / "rows.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(
    "code, tamper",
    [
        ("pit-future-entry", "future-into-pit"),
        ("own-event", "own-event"),
        ("capacity-mismatch", "capacity"),
        ("corpus-hash-mismatch", "corpus"),
        ("naive-future-mismatch", "naive"),
        ("tvr-mismatch", "tvr"),
    ],
)
def test_the_checker_catches_a_tampered_lens_row(lens_run, code, tamper):
    recs = _records(lens_run)
    manifest = json.loads((lens_run / "manifest.json").read_text())
    assert check_rows(RowTable(recs), manifest["bindings"]) == []
    pit = next(r for r in recs if r["condition"] == "pit" and r["anchor"] > 2)
    if tamper == "future-into-pit":
        pit["selected"] = pit["selected"] + [pit["anchor"] + 1]
        pit["n_selected"] += 1
        pit["n_future"] += 1
        pit["tvr"] = pit["n_future"] / pit["n_selected"]
    elif tamper == "own-event":
        fut = next(r for r in recs if r["condition"] == "future")
        fut["selected"][0] = fut["anchor"]
    elif tamper == "capacity":
        pit["capacity"] += 4
    elif tamper == "corpus":
        pit["corpus_hash"] = "0" * 64
    elif tamper == "naive":
        nav = next(r for r in recs if r["condition"] == "naive")
        nav["recall@2"] = nav["recall@2"] - 0.5
    elif tamper == "tvr":
        fut = next(r for r in recs if r["condition"] == "future" and r["n_future"] > 0)
        fut["tvr"] = 0.0
    codes = {v.code for v in check_rows(RowTable(recs), manifest["bindings"])}
    assert code in codes


def test_a_tampered_lens_run_fails_check_and_report(lens_run, tmp_path):
    import shutil

    from harness.audit.contract import ContractFailed
    from harness.audit.report import build_report

    bad = tmp_path / "bad"
    shutil.copytree(lens_run, bad)
    recs = _records(bad)
    nav = next(r for r in recs if r["condition"] == "naive" and r["selected"])
    nav["selected"] = nav["selected"][1:] + nav["selected"][:1] if len(nav["selected"]) > 1 else []
    nav["n_selected"] = len(nav["selected"])
    (bad / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    codes = {v.code for v in check_run(bad)}
    assert {"naive-future-mismatch", "output-hash-mismatch"} <= codes
    with pytest.raises(ContractFailed):
        build_report(bad)


# --------------------------------------------------------------------------- config and CLI


def test_config_kind_hash_and_paths(bench, tmp_path):
    run, _, qfile = bench
    cfg = load_audit_config(write_config(tmp_path, run, qfile))
    assert isinstance(cfg, LensAuditConfig) and cfg.headline == "recall@10"
    moved = cfg.with_paths(run="/elsewhere", snapshot="/x", questions="/y")
    assert moved.hash == cfg.hash and moved.lens.run == "/elsewhere"
    assert cfg.model_copy(update={"replay": cfg.replay.model_copy(update={"capacity": 8})}).hash != cfg.hash
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "lens-memory"\n[streams]\nkinds = ["natural"]\n', encoding="utf-8")
    with pytest.raises(AuditConfigError, match="natural"):
        load_audit_config(bad)
    for preset in ("audit-lens", "audit-lens-full", "audit-lens-stream"):
        assert isinstance(load_audit_config(preset), LensAuditConfig)
    stream = load_audit_config("audit-lens-stream")  # data products: Asset Recall@100 is the headline
    assert stream.metrics.cutoffs == [10, 20, 50, 100] and stream.headline == "recall@100"


def test_questions_file_must_be_the_one_the_run_was_bound_to(bench, tmp_path):
    from lens._errors import LensError

    run, _, qfile = bench
    other = tmp_path / "q.json"
    data = json.loads(qfile.read_text())
    other.write_text(json.dumps(data[::-1]))
    cfg = load_audit_config(write_config(tmp_path, run, other))
    with pytest.raises(LensError, match="differs from the questions file the run was bound to"):
        run_lens_audit(cfg, tmp_path / "out")


def test_lens_audit_cli_run_check_report(bench, tmp_path, capsys):
    from lens.faces._cli import main

    run, snap, qfile = bench
    cfg = write_config(tmp_path, tmp_path / "nowhere", tmp_path / "nothing.json", kinds='["random"]', per=2)
    out = tmp_path / "cli-run"
    rc = main(
        [
            "audit",
            "run",
            "--config",
            str(cfg),
            "--lens-run",
            str(run),
            "--snapshot",
            str(snap),
            "--questions",
            str(qfile),
            "--out",
            str(out),
            "-q",
        ]
    )
    assert rc == 0, capsys.readouterr()
    assert main(["audit", "check", str(out)]) == 0
    assert main(["audit", "report", str(out)]) == 0
    assert (out / "report" / "tables" / "hg.csv").read_text().count("\n") == 2  # header + the one lens cell
    assert main(["audit", "run", "--config", "audit-small", "--lens-run", str(run), "--out", str(tmp_path / "x")]) == 2


# --------------------------------------------------------------------------- helpers


def test_merge_round_robin_and_seed_cues():
    assert merge_round_robin([[1, 2, 3], [4, 2, 5]], 4) == [1, 4, 2, 3]
    assert merge_round_robin([[1], []], 10) == [1]
    waiting = {"id": "R2", "text": "In what year was #1 founded?", "cues": ["year"], "depends_on": "R1"}
    assert seed_cues(waiting) == ["year"]  # a bridge fact waiting on R1 seeds with its own cues only
    ready = {"id": "R1", "text": "Which yard built the Gull?", "cues": ["Gull"]}
    assert seed_cues(ready) == ["Gull", "Which yard built the Gull?"]


def test_a_run_that_confirmed_nothing_audits_to_an_empty_memory(tmp_path):
    """A weak oracle may certify nothing: every row's memory is empty. The audit still runs, passes the contract,
    writes the (empty) materialised Naive log, and every condition serves exactly what Stateless serves."""
    run, _, qfile = build_bench(tmp_path / "b", layout="memory_entries")
    rows = [json.loads(line) for line in (run / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    for r in rows:
        if r["system"] == "lens" and "memory_entries" in r["prediction"]["details"]:
            r["prediction"]["details"]["memory_entries"] = []
    (run / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = load_audit_config(write_config(tmp_path, run, qfile, kinds='["random"]'))
    result = run_lens_audit(cfg, tmp_path / "run")
    assert result.violations == 0 and result.rows > 0
    naive_logs = list((tmp_path / "run" / "naive").rglob("memory.jsonl"))
    assert naive_logs and all(p.stat().st_size == 0 for p in naive_logs)
    t = read_rows(tmp_path / "run" / "rows.jsonl")
    by_anchor: dict = {}
    for r in range(len(t["condition"])):
        metrics = tuple(float(t[m][r]) for m in t.metric_fields())
        by_anchor.setdefault((t["stream"][r], int(t["anchor"][r])), set()).add(metrics)
        assert t.selected_lists[r] in ([], ()) or not any(t.selected_lists[r])
    assert len(set(t["condition"].astype(str))) > 2  # stateless, the views and naive were all replayed
    assert by_anchor and all(len(v) == 1 for v in by_anchor.values())
