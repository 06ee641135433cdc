"""``lens bench run``: every (system, question) of a plan answered once, scored, and appended as a row.

Plan
- **Questions**: the snapshot manifest's G_n in frozen order (or a stage of a ``sample.json`` with ``--sample``/
  ``--stage``); ``--limit N`` keeps the first N. The **stale arm** (``--stale-from D125``, snapshot D250) takes the
  questions new in D250 (G250 minus G125, frozen order); BM25-RAG and Hybrid-RAG answer them from the indexes
  built on D125, the index-free arms read D250.
- **Corpus**: the snapshot folder is read and its corpus checksum must equal its manifest's.
- **Bindings**: ``binding`` = questions-file sha256, the stage's sample/order hashes, the corpus checksum and the
  arm (stale: from/to checksums); ``binding_hash`` is its sha256. ``config_hash`` is the shared LLM/agent
  configuration's. Each arm's ``system_hash`` adds its own parameters (k, prompt, steps, index hashes, ...).

Resume
- Rows are keyed by ``(system_hash, question_id)``. Rerunning the same command skips every key already in
  ``rows.jsonl`` and runs the rest; a row interrupted mid-write is cut off and rerun. Nothing is ever written
  twice, nothing finished is lost.
- One run writes a folder at a time: a second run on a busy folder exits 2 naming the holder (pid, host,
  since); the lock dies with its process, so a run that was killed never blocks the next.
- A run folder made under another binding or configuration is refused (the message names what differs); so is
  an arm whose parameters changed while it has rows — its parameters include a fingerprint of the code and
  prompts it runs (``harness.bench.systems.provenance``), so rows made before and after an edit of the agent are never
  mixed either. ``--limit`` may change between sessions (it only selects a prefix of the bound question order)
  and arms may be added. Each session (start, end, git commit, rows written, why it stopped) is recorded in the
  manifest, also when it ends by an interrupt (Ctrl-C, or SIGTERM, which ``lens`` turns into a normal exit).
- Each run uses its own LLM response cache (``RUN_DIR/llm-cache``) unless ``llm.cache_dir`` is set: a run
  starts cold, and a question rerun after an interruption replays the calls it had made (reported as hits).

Errors
- A question-level failure (its time or token budget spent, an unparseable reply, a request too long) is a row
  with ``error`` set: it is the system's result on that question and stays final.
- An endpoint failure (auth, unknown model, 429/5xx or timeouts after every retry: the prediction is marked
  ``endpoint_failure``) is not a result: the attempt is appended to ``attempts.jsonl`` (system, question, error,
  cost) and no row is written, so rerunning the same command retries that question once the endpoint
  recovers. After ``ENDPOINT_BREAKER`` such failures in a row with no success between them the run stops.
- An unreachable endpoint, or a local I/O error in a question (a file of this machine that cannot be read or
  written), stops the run at once. Rows so far are kept; rerun to resume (the question is asked again).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Callable, Protocol, TextIO

import lens
from harness.bench.datasets import DataError, Question, load_questions
from harness.bench.executor import Executor, LocalExecutor
from harness.bench.fullwiki import read_fullwiki_manifest
from harness.bench.metrics import (
    answer_scores,
    evidence_recall,
    failure_class,
    joint_scores,
    support_scores,
)
from harness.bench.run_store import (
    ATTEMPT_FORMAT,
    ATTEMPTS_NAME,
    ROW_FORMAT,
    ROWS_NAME,
    RUN_FORMAT,
    RowLog,
    RunLock,
    RunStoreError,
    read_run_manifest,
    row_key,
    write_run_manifest,
)
from harness.bench.samples import ids_sha256, read_samples
from harness.bench.snapshots import read_manifest
from harness.bench.systems.base import RUN_STOPPERS
from harness.bench.systems.corpus import SnapshotCorpus
from harness.bench.systems.prediction import Prediction
from harness.bench.systems.provenance import code_fingerprint
from harness.bench.systems.registry import (
    ArmPlan,
    ArmSettings,
    build_systems,
    index_free,
    prepare_indexes,
    reads_corpus,
    uses_gold,
)
from harness.files import canonical_json, sha256_bytes, sha256_file
from lens import open_client

__all__ = [
    "Job",
    "RunPlan",
    "Workload",
    "RunSummary",
    "Worker",
    "plan_run",
    "run_benchmark",
    "score_prediction",
    "canonical_hash",
]


ENDPOINT_BREAKER = 10  # endpoint failures in a row (no success between) that stop a run


class Workload(Protocol):
    """What a workload other than HotpotQA puts in a row and how it sums rows up; its questions (``RunPlan.questions``)
    need only an ``id`` and a ``question`` (never the gold) for the systems."""

    def row_fields(self, question: Any, pred: Prediction) -> dict[str, Any]:
        """The row's question and gold fields and its ``scores``."""

    def summarise(self, rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
        """Per system, the run summary's figures."""


def canonical_hash(obj: Any) -> str:
    """sha256 of the canonical JSON form (``harness.files.canonical_json``): binding and system hashes."""
    return sha256_bytes(canonical_json(obj))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class Job:
    """One (system, question) to answer: plain, picklable data with no gold answer."""

    system: str
    question_id: str
    question: str
    position: int


@dataclass
class RunPlan:
    out: Path
    config: Any  # LensConfig
    systems: tuple[str, ...]
    settings: ArmSettings
    questions: list[Question]  # to run, in frozen order (after --limit)
    planned_ids: tuple[str, ...]  # the bound question order (before --limit)
    binding: dict[str, Any]
    corpus: SnapshotCorpus  # read at query time
    index_corpus: SnapshotCorpus  # the corpus the persisted indexes cover (== corpus unless stale)
    index_root: Path
    snapshot_info: dict[str, Any]
    limit: int | None = None
    # another workload's questions and scores (``lens bench financebench``): None for HotpotQA over a snapshot
    workload: Workload | None = None

    @property
    def arm(self) -> str:
        return self.binding["arm"]["kind"]

    @property
    def binding_hash(self) -> str:
        return canonical_hash(self.binding)

    @property
    def config_hash(self) -> str:
        return self.config.canonical_hash()


def _snapshot_manifest(folder: Path) -> tuple[dict[str, Any] | None, Path]:
    path = folder.parent / f"{folder.name}.manifest.json"
    return (read_manifest(path) if path.is_file() else None), path


def _verified_corpus(folder: Path) -> tuple[SnapshotCorpus, dict[str, Any] | None, Path]:
    corpus = SnapshotCorpus.load(folder)
    manifest, mpath = _snapshot_manifest(folder)
    if manifest is not None and manifest.get("corpus_checksum") != corpus.checksum:
        raise DataError(
            f"{folder}: corpus checksum {corpus.checksum[:12]}… differs from its manifest's "
            f"{str(manifest.get('corpus_checksum'))[:12]}… ({mpath}): the snapshot changed after it was built"
        )
    return corpus, manifest, mpath


def _fullwiki_setting(folder: Path, corpus: SnapshotCorpus, stage_info: dict[str, Any]) -> dict[str, Any] | None:
    """For the pool of a ``lens bench fullwiki`` build (``<out>/pool`` with ``<out>/fullwiki.manifest.json``):
    the pool checksum checked, and the sampled questions whose gold articles are all in the pool."""
    mpath = folder.parent / "fullwiki.manifest.json"
    if folder.name != "pool" or not mpath.is_file():
        return None

    m = read_fullwiki_manifest(folder.parent)
    if m["pool"]["checksum"] != corpus.checksum:
        raise DataError(f"{folder}: shards differ from {mpath} (pool checksum): the pool changed after it was built")
    flags = m["gold"]["questions"]
    return {
        "manifest": str(mpath),
        "sample_order_sha256": m["sample"]["order_sha256"],
        "same_sample": m["sample"]["order_sha256"] == stage_info.get("order_sha256"),
        "gold_in_pool": sorted(i for i, f in flags.items() if f["gold_in_pool"]),
        "gold_missing": sorted(i for i, f in flags.items() if not f["gold_in_pool"]),
    }


def _stage_from_manifest(manifest: dict[str, Any], where: Path) -> dict[str, Any]:
    s = manifest.get("sample") or {}
    ids = s.get("question_ids")
    if not isinstance(ids, list) or not ids:
        raise DataError(f"{where}: snapshot manifest lists no question ids")
    if ids_sha256(ids) != s.get("order_sha256"):
        raise DataError(f"{where}: question ids do not match the manifest's order hash")
    return {
        "name": s.get("name"),
        "size": len(ids),
        "ids": ids,
        "sample_sha256": s.get("sample_sha256"),
        "order_sha256": s.get("order_sha256"),
        "source": "snapshot manifest",
    }


def _stage_info(
    folder: Path,
    snap_manifest: dict[str, Any] | None,
    snap_mpath: Path,
    sample: str | os.PathLike[str] | None,
    stage: int | None,
) -> dict[str, Any]:
    """The stage whose questions run, in its frozen order: from ``--sample``/``--stage``, else the snapshot's
    manifest."""
    if sample is not None:
        if stage is None:
            raise DataError("--sample needs --stage (e.g. --stage 125)")
        fs = read_samples(sample)
        try:
            st = fs.stage(stage)
        except KeyError as exc:
            raise DataError(f"{sample}: {exc.args[0]}") from None
        return {
            "name": st.name,
            "size": st.size,
            "ids": list(st.ids),
            "sample_sha256": st.sample_sha256,
            "order_sha256": st.order_sha256,
            "source": "sample file",
        }
    if snap_manifest is not None:
        return _stage_from_manifest(snap_manifest, snap_mpath)
    raise DataError(f"{folder}: no snapshot manifest beside it ({snap_mpath.name}); pass --sample and --stage")


def _arm_setting(
    folder: Path, corpus: SnapshotCorpus, stage_info: dict[str, Any], stale_from: str | os.PathLike[str] | None
) -> tuple[dict[str, Any], SnapshotCorpus, list[str], str]:
    """Fresh (indexes over the folder) or stale (indexes over the stage it grew from, only the questions new since
    then): the arm's binding, the corpus its indexes cover, the planned question ids and what they are."""
    arm: dict[str, Any] = {"kind": "fresh"}
    index_corpus = corpus
    planned = list(stage_info["ids"])
    question_set = "stage"
    if stale_from is not None:
        from_folder = Path(stale_from)
        index_corpus, from_manifest, from_mpath = _verified_corpus(from_folder)
        if from_manifest is None:
            raise DataError(f"{from_folder}: the stale arm needs its snapshot manifest ({from_mpath.name})")
        old = _stage_from_manifest(from_manifest, from_mpath)
        old_names = {d.name for d in index_corpus.docs}
        if not old_names <= {d.name for d in corpus.docs} or index_corpus.checksum == corpus.checksum:
            raise DataError(f"--stale-from {from_folder}: {folder} does not grow from it (append-only growth expected)")
        seen = set(old["ids"])
        planned = [i for i in planned if i not in seen]
        question_set = f"new since {old['name']}"
        arm = {
            "kind": "stale",
            "from": {
                "name": from_folder.name,
                "corpus_checksum": index_corpus.checksum,
                "stage": old["name"],
                "order_sha256": old["order_sha256"],
            },
            "to": {"name": folder.name, "corpus_checksum": corpus.checksum},
        }
        if not planned:
            raise DataError(f"{folder}: no questions are new since {from_folder}")
    return arm, index_corpus, planned, question_set


def plan_run(
    *,
    snapshot: str | os.PathLike[str],
    questions_file: str | os.PathLike[str],
    systems: tuple[str, ...],
    out: str | os.PathLike[str],
    config: Any,
    sample: str | os.PathLike[str] | None = None,
    stage: int | None = None,
    limit: int | None = None,
    stale_from: str | os.PathLike[str] | None = None,
    index_dir: str | os.PathLike[str] | None = None,
    settings: ArmSettings = ArmSettings(),
) -> RunPlan:
    """Resolve questions, corpus and bindings. Raises DataError naming the input that is wrong."""
    folder = Path(snapshot)
    corpus, snap_manifest, snap_mpath = _verified_corpus(folder)
    stage_info = _stage_info(folder, snap_manifest, snap_mpath, sample, stage)
    arm, index_corpus, planned, question_set = _arm_setting(folder, corpus, stage_info, stale_from)
    fullwiki = _fullwiki_setting(folder, corpus, stage_info)
    population = {q.id: q for q in load_questions(questions_file)}
    missing = [i for i in planned if i not in population]
    if missing:
        raise DataError(f"{questions_file}: {len(missing)} planned question ids are not in it (first: {missing[0]})")
    if limit is not None and limit < 1:
        raise DataError(f"--limit {limit}: must be >= 1")
    chosen = planned[:limit] if limit else planned
    binding = {
        "questions_file_sha256": sha256_file(questions_file),
        "stage": {k: stage_info[k] for k in ("name", "size", "sample_sha256", "order_sha256")},
        "question_set": question_set,
        "question_order_sha256": ids_sha256(planned),
        "corpus": {"name": folder.name, "corpus_checksum": corpus.checksum},
        "arm": arm,
    }
    if fullwiki is not None:
        binding["setting"] = "fullwiki"
    info = {
        "path": str(folder.resolve()),
        "questions_from": stage_info["source"],
        "manifest": str(snap_mpath) if snap_manifest else None,
        "composition": (snap_manifest or {}).get("composition"),
        "size": (snap_manifest or {}).get("size"),
        "documents": len(corpus),
        "grows_from": (snap_manifest or {}).get("grows_from"),
    }
    if fullwiki is not None:
        info["fullwiki"] = fullwiki
    if stale_from is not None:
        info["stale_from"] = {"path": str(Path(stale_from).resolve()), "documents": len(index_corpus)}
    out = Path(out)
    return RunPlan(
        out=out,
        config=config,
        systems=tuple(systems),
        settings=settings,
        questions=[population[i] for i in chosen],
        planned_ids=tuple(planned),
        binding=binding,
        corpus=corpus,
        index_corpus=index_corpus,
        index_root=Path(index_dir) if index_dir else out / "indexes",
        snapshot_info=info,
        limit=limit,
    )


# --------------------------------------------------------------------------- worker


class Worker:
    """Builds the arms once (lazily) and answers jobs. Picklable before first use (plan + config only)."""

    def __init__(self, arm_plan: ArmPlan, config: Any, client: Any = None) -> None:
        self.arm_plan = arm_plan
        self.config = config
        self._client = client
        self._systems: dict[str, Any] | None = None

    @property
    def systems(self) -> dict[str, Any]:
        if self._systems is None:
            if self._client is None:
                self._client = open_client(self.config)
            self._systems = build_systems(self.arm_plan, self.config, self._client)
        return self._systems

    def __call__(self, job: Job) -> Prediction:
        return self.systems[job.system].answer(job.question)


def _same_worker(worker: Worker) -> Worker:
    return worker


def _fresh_worker(arm_plan: ArmPlan, config: Any, llm: tuple[str, str] | None = None) -> Worker:
    """A worker built where a remote executor runs it; ``llm`` = (base_url, model) of that node's model server."""
    if llm is not None:
        config = config.model_copy(deep=True)
        config.llm.base_url, config.llm.model = llm
    return Worker(arm_plan, config)


class _DriverClient:
    """The LLM client's stand-in in the driver of a remote run on the embedded model: the driver builds the arms
    only to describe them (system hashes), and must not start a model server it would never use."""

    backend = "embedded llama.cpp, one server per Ray node"

    def __init__(self, config: Any) -> None:
        self.model = config.llm.served_model

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"the driver of a remote run makes no LLM calls (asked for .{name})")


# --------------------------------------------------------------------------- scoring


def score_prediction(question: Question, pred: Prediction) -> dict[str, Any]:
    """Official EM/F1, Ev.Rec, Ground, supporting-fact and joint scores, failure class of one prediction."""
    a = answer_scores(pred.answer, question.answer)
    titles = pred.retrieved_titles
    gold = question.gold_titles
    out: dict[str, Any] = {
        "em": a.em,
        "f1": a.f1,
        "precision": a.precision,
        "recall": a.recall,
        "ev_rec": evidence_recall(gold, titles) if gold else None,
        "grounded": pred.grounded(gold),
        "failure": failure_class(correct=bool(a.em), answer=pred.answer, gold_titles=gold, retrieved_titles=titles),
        "sp_em": None,
        "sp_f1": None,
        "sp_precision": None,
        "sp_recall": None,
        "joint_em": None,
        "joint_f1": None,
    }
    if pred.supporting_facts is not None:
        sp = support_scores(pred.supporting_facts, question.supporting_facts)
        j = joint_scores(a, sp)
        out.update(
            sp_em=sp.em, sp_f1=sp.f1, sp_precision=sp.precision, sp_recall=sp.recall, joint_em=j.em, joint_f1=j.f1
        )
    return out


# --------------------------------------------------------------------------- run


@dataclass
class RunSummary:
    out: Path
    rows_before: int
    rows_written: int
    rows_total: int
    planned: int
    cut_bytes: int
    stopped: str | None = None  # why the run stopped early, if it did
    per_system: dict[str, dict[str, float]] = field(default_factory=dict)
    endpoint_failures: int = 0  # attempts of this session that failed at the endpoint (no row; retried on rerun)
    endpoint_error: str | None = None  # the last such failure's message

    @property
    def complete(self) -> bool:
        return self.rows_total >= self.planned and self.stopped is None

    @property
    def endpoint_failed_all(self) -> bool:
        """Every job this session attempted failed at the endpoint."""
        return self.endpoint_failures > 0 and self.rows_written == 0


def _git_commit() -> str | None:
    try:
        r = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def _diff(old: Any, new: Any, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for k in sorted(set(old) | set(new)):
            out += _diff(old.get(k), new.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out
    if old != new:
        return [f"{prefix}: {json.dumps(old, ensure_ascii=False)[:80]} → {json.dumps(new, ensure_ascii=False)[:80]}"]
    return []


def _system_entry(name: str, system: Any, plan: RunPlan, indexes: dict[str, tuple[Any, bool]]) -> dict[str, Any]:
    params = {**system.params(), "code": code_fingerprint(name)}
    ident = {"system": name, "params": params, "config_hash": plan.config_hash, "binding_hash": plan.binding_hash}
    kinds = {"bm25": ["bm25"], "hybrid": ["bm25", "dense"], "paperqa": ["paperqa"]}.get(name, [])
    return {
        "system_hash": canonical_hash(ident),
        "params": params,
        "index_free": index_free(name),
        "reads_corpus": reads_corpus(name),
        "uses_gold": uses_gold(name),
        "indexes": [{**indexes[k][0].to_json(), "built_in_this_run": indexes[k][1]} for k in kinds if k in indexes],
    }


def rows_by_system(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """A run's rows grouped by system, in the order the systems first appear."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["system"]].append(r)
    return by


def _summaries(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out = {}
    for name, rs in rows_by_system(rows).items():
        n = len(rs)
        ev = [r["scores"]["ev_rec"] for r in rs if r["scores"]["ev_rec"] is not None]
        out[name] = {
            "rows": n,
            "em": sum(r["scores"]["em"] for r in rs) / n,
            "f1": sum(r["scores"]["f1"] for r in rs) / n,
            "ev_rec": sum(ev) / len(ev) if ev else 0.0,
            "ground": sum(bool(r["scores"]["grounded"]) for r in rs) / n,
            "tokens": sum(r["prediction"]["tokens"] for r in rs) / n,
            "seconds": sum(r["prediction"]["seconds"] for r in rs) / n,
            "errors": sum(1 for r in rs if r["prediction"]["error"]),
        }
    return out


def run_benchmark(
    plan: RunPlan,
    *,
    executor: Executor | None = None,
    progress: bool = True,
    client: Any = None,
    log: TextIO | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> RunSummary:
    """Run every (system, question) of ``plan`` not yet in ``plan.out``; see the module docstring. Raises
    RunStoreError when another run is writing the folder."""
    plan.out.mkdir(parents=True, exist_ok=True)
    with RunLock(plan.out):
        return _run_locked(plan, executor=executor, progress=progress, client=client, log=log, on_row=on_row)


def _run_locked(
    plan: RunPlan,
    *,
    executor: Executor | None,
    progress: bool,
    client: Any,
    log: TextIO | None,
    on_row: Callable[[dict[str, Any]], None] | None,
) -> RunSummary:
    log = log or sys.stderr
    executor = executor or LocalExecutor(5)
    out, cfg = plan.out, plan.config
    if cfg.llm.cache and cfg.llm.cache_dir is None:
        cfg.llm.cache_dir = str(out / "llm-cache")  # not hashed: where, not what

    # 1. run-level bindings, before anything expensive starts
    old = read_run_manifest(out) if (out / "manifest.json").exists() else None
    _check_run_binding(plan, old)
    rows_log = RowLog(out / ROWS_NAME)
    existing, cut = rows_log.recover(old or {"binding_hash": plan.binding_hash, "config_hash": plan.config_hash})
    if cut:
        print(f"resume: cut an interrupted last row ({cut} bytes); its question runs again", file=log)

    # 2. indexes (lifecycle: build seconds, bytes, peak memory) and the arms
    arm_plan, indexes = _arm_plan(plan, log, progress)
    remote = getattr(executor, "remote", False)
    if remote and client is None and cfg.llm.base_url is None:
        client = _DriverClient(cfg)  # the workers' nodes run the model
    worker = Worker(arm_plan, cfg, client)
    entries = {name: _system_entry(name, sysm, plan, indexes) for name, sysm in worker.systems.items()}

    # 3. arm-level bindings: an arm whose parameters changed may not add rows to its old ones
    _check_arm_bindings(out, entries, (old or {}).get("systems", {}), existing)
    if cfg.llm.base_url is None and getattr(executor, "concurrency", 1) > 1:
        print(_EMBEDDED_QUEUE_NOTE, file=log)
    manifest, session = _start_session(plan, old, entries, executor, worker)

    # 4. the jobs not yet done, question by question (so a partial run is paired across systems)
    done = {row_key(r) for r in existing}
    jobs = [
        Job(name, q.id, q.question, pos)
        for pos, q in enumerate(plan.questions)
        for name in plan.systems
        if (entries[name]["system_hash"], q.id) not in done
    ]
    total = len(plan.questions) * len(plan.systems)
    current = {e["system_hash"] for e in entries.values()}
    tally = _Tally(plan, entries, _progress(total, total - len(jobs), plan, enabled=progress), rows_log, on_row)
    tally.tokens = sum(r["prediction"]["tokens"] for r in existing if r["system_hash"] in current)
    try:
        make = partial(_fresh_worker, arm_plan, cfg) if remote else partial(_same_worker, worker)
        for outcome in executor.run(make, jobs):
            if outcome.error is not None:
                if isinstance(outcome.error, RUN_STOPPERS):
                    tally.stopped = str(outcome.error)
                    executor.stop()
                    continue
                raise outcome.error
            if tally.add(outcome.job, outcome.result):
                executor.stop()
    except BaseException as exc:  # an interrupt (Ctrl-C, or SIGTERM via `lens`) or a failure: the session says so
        tally.stopped = tally.stopped or f"ended by {type(exc).__name__}{f' ({exc})' if str(exc) else ''}"
        raise
    finally:
        tally.close()
        # the session record is written however the loop ended, so the manifest counts the rows already on disk
        manifest["updated"] = session["finished"] = _now()
        session["rows_written"] = tally.written
        session["endpoint_failures"] = tally.failed_attempts
        session["stopped"] = tally.stopped
        write_run_manifest(out, manifest)
    all_rows = [r for r in existing if r["system_hash"] in current] + tally.new_rows
    return _run_summary(plan, entries, all_rows, tally, total - len(jobs), cut)


def _run_summary(
    plan: RunPlan,
    entries: dict[str, dict[str, Any]],
    all_rows: list[dict[str, Any]],
    tally: _Tally,
    before: int,
    cut: int,
) -> RunSummary:
    """The session's summary over the planned (system, question) pairs of the current arms."""
    planned_keys = {(entries[n]["system_hash"], q.id) for q in plan.questions for n in plan.systems}
    return RunSummary(
        out=plan.out,
        rows_before=before,
        rows_written=tally.written,
        rows_total=len({row_key(r) for r in all_rows} & planned_keys),
        planned=len(plan.questions) * len(plan.systems),
        cut_bytes=cut,
        stopped=tally.stopped,
        per_system=(plan.workload.summarise if plan.workload is not None else _summaries)(
            [r for r in all_rows if row_key(r) in planned_keys]
        ),
        endpoint_failures=tally.failed_attempts,
        endpoint_error=tally.last_failure,
    )


_EMBEDDED_QUEUE_NOTE = (
    "note: the embedded model serves one request at a time; concurrent questions queue for it (and "
    "queueing counts against each call's timeout) — --concurrency 1 is the honest setting here"
)


def _check_run_binding(plan: RunPlan, old: dict[str, Any] | None) -> None:
    """Refuse to add rows to a folder whose run was bound to other inputs or another configuration."""
    if old is None:
        return
    problems = _diff(old.get("binding"), plan.binding, "binding")
    if old.get("config_hash") != plan.config_hash:
        problems += _diff(old.get("config"), plan.config.canonical(), "config") or ["config hash differs"]
    if problems:
        raise RunStoreError(
            f"{plan.out} holds a run with other bindings ({'; '.join(problems[:6])}); rows are never mixed — "
            f"use a new --out"
        )


def _arm_plan(plan: RunPlan, log: TextIO, progress: bool) -> tuple[ArmPlan, dict[str, tuple[Any, bool]]]:
    """Build or load the indexes the arms need (saying which) and the plan every worker builds its arms from."""
    indexes = prepare_indexes(plan.systems, plan.index_corpus, plan.index_root, plan.settings, progress=progress)
    for kind, (build, built) in indexes.items():
        what = "built" if built else "loaded"
        print(
            f"index {kind}: {what} for {build.corpus} ({build.n_docs:,} docs, {build.bytes / 1e6:.1f} MB, "
            f"build {build.seconds:.1f} s)",
            file=log,
        )
    gold_files: dict[str, list[str]] = {}
    if "gold-passages" in plan.systems:  # the reading-ceiling arm reads labels (uses_gold); no other arm sees them
        for q in plan.questions:
            docs = [plan.corpus.by_title(t) for t in q.gold_titles]
            gold_files[q.question] = [d.name for d in docs if d is not None]
    arm_plan = ArmPlan(
        names=plan.systems,
        folder=str(plan.corpus.folder),
        index_root=str(plan.index_root),
        index_checksum=plan.index_corpus.checksum,
        settings=plan.settings,
        gold_files=gold_files,
    )
    return arm_plan, indexes


def _check_arm_bindings(
    out: Path, entries: dict[str, dict[str, Any]], old_systems: dict[str, Any], existing: list[dict[str, Any]]
) -> None:
    """Refuse an arm whose parameters changed while the folder holds rows made with the old ones."""
    for name, entry in entries.items():
        prev = old_systems.get(name)
        if (
            prev
            and prev["system_hash"] != entry["system_hash"]
            and any(r["system_hash"] == prev["system_hash"] for r in existing)
        ):
            changes = _diff(prev.get("params"), entry["params"], f"{name}") or ["system hash differs"]
            raise RunStoreError(
                f"{out}: {name} has rows made with other parameters ({'; '.join(changes[:4])}); use a new --out"
            )


def _start_session(
    plan: RunPlan, old: dict[str, Any] | None, entries: dict[str, Any], executor: Executor, worker: Worker
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Write the run's manifest with a new session record; returns both (the session is finished at the end)."""
    session = {
        "started": _now(),
        "lens_version": _lens_version(),
        "git_commit": _git_commit(),
        "executor": executor.describe(),
        "rows_written": 0,
        "finished": None,
    }
    manifest = {
        "format": RUN_FORMAT,
        "created": (old or {}).get("created") or _now(),
        "updated": _now(),
        "sessions": (old or {}).get("sessions", []) + [session],
        "config_hash": plan.config_hash,
        "config": plan.config.canonical(),
        "binding": plan.binding,
        "binding_hash": plan.binding_hash,
        "snapshot": plan.snapshot_info,
        "systems": {**(old or {}).get("systems", {}), **entries},
        "questions": {"planned": len(plan.planned_ids), "ids": list(plan.planned_ids), "limit": plan.limit},
        "model": getattr(worker._client, "model", None),
        "backend": getattr(worker._client, "backend", None),
    }
    write_run_manifest(plan.out, manifest)
    return manifest, session


class _Tally:
    """One session's outcomes as they arrive: rows appended, endpoint failures logged as attempts, the counts the
    progress bar and the session record show."""

    def __init__(self, plan: RunPlan, entries: dict[str, dict[str, Any]], bar: Any, rows_log: RowLog, on_row) -> None:
        self.plan, self.entries, self.bar, self.rows_log, self.on_row = plan, entries, bar, rows_log, on_row
        self.by_id = {q.id: q for q in plan.questions}
        self.attempts_log = RowLog(plan.out / ATTEMPTS_NAME)
        self.tokens = self.errors = self.written = self.failed_attempts = self.in_a_row = 0
        self.last_failure: str | None = None
        self.stopped: str | None = None
        self.new_rows: list[dict[str, Any]] = []
        rows_log.open()

    def add(self, job: Job, pred: Prediction) -> bool:
        """Record one outcome; True when the run must stop (too many endpoint failures in a row)."""
        if pred.endpoint_failure:
            return self._failure(job, pred)
        self.in_a_row = 0
        row = self._row(job, pred)
        self.rows_log.append(row)
        self.written += 1
        self.new_rows.append(row)
        self.tokens += pred.tokens
        self.errors += bool(pred.error)
        if self.on_row is not None:
            self.on_row(row)
        self.bar.set_postfix_str(
            f"tokens {self.tokens / 1000:.1f}K · errors {self.errors} · last {job.system} {pred.seconds:.1f}s",
            refresh=False,
        )
        self.bar.update(1)
        return False

    def _failure(self, job: Job, pred: Prediction) -> bool:
        # not the system's result on this question: log the attempt, write no row, retry on resume
        if not self.attempts_log.is_open:
            self.attempts_log.open()
        self.attempts_log.append(
            {
                "format": ATTEMPT_FORMAT,
                "binding_hash": self.plan.binding_hash,
                "config_hash": self.plan.config_hash,
                "system": job.system,
                "system_hash": self.entries[job.system]["system_hash"],
                "question_id": job.question_id,
                "error": pred.error,
                "oracle_calls": pred.oracle_calls,
                "tokens": pred.tokens,
                "seconds": round(pred.seconds, 3),
                "finished_at": _now(),
            }
        )
        self.failed_attempts += 1
        self.in_a_row += 1
        self.last_failure = pred.error
        self.bar.set_postfix_str(
            f"endpoint failures {self.failed_attempts} · last {str(pred.error)[:60]}", refresh=False
        )
        self.bar.update(1)
        if self.in_a_row >= ENDPOINT_BREAKER and self.stopped is None:
            self.stopped = f"the endpoint failed {self.in_a_row} questions in a row (last: {pred.error})"
            return True
        return False

    def _row(self, job: Job, pred: Prediction) -> dict[str, Any]:
        plan, entry, q = self.plan, self.entries[job.system], self.by_id[job.question_id]
        return {
            "format": ROW_FORMAT,
            "binding_hash": plan.binding_hash,
            "config_hash": plan.config_hash,
            "arm": plan.arm,
            "system": job.system,
            "system_hash": entry["system_hash"],
            "corpus": plan.corpus.folder.name,
            "corpus_checksum": plan.corpus.checksum if entry["reads_corpus"] else None,
            "index_corpus_checksum": None if entry["index_free"] else plan.index_corpus.checksum,
            "stale": plan.arm == "stale" and not entry["index_free"],
            "question_id": q.id,
            "position": job.position,
            "question": q.question,
            **(
                plan.workload.row_fields(q, pred)
                if plan.workload is not None
                else {
                    "type": q.type,
                    "level": q.level,
                    "gold_answer": q.answer,
                    "gold_titles": list(q.gold_titles),
                    "scores": score_prediction(q, pred),
                }
            ),
            "prediction": pred.to_json(),
            "finished_at": _now(),
        }

    def close(self) -> None:
        self.rows_log.close()
        self.attempts_log.close()
        self.bar.close()


def _lens_version() -> str:
    return lens.__version__


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str, refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, initial: int, plan: RunPlan, *, enabled: bool):
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    label = f"{plan.corpus.folder.name} {plan.arm}"
    return tqdm(
        total=total, initial=initial, unit="row", desc=label, dynamic_ncols=True, file=sys.stderr, smoothing=0.1
    )
