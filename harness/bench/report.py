"""``lens bench report``: markdown + CSV tables shaped like the LENS paper's Tables 1–6, and PNG plots.

Tables (each emitted once per binding it can honestly hold):

- **Table 1** — snapshot composition (Articles, Ev., Dist., Bg.) and the lifecycle audit (index-free, query-ready
  after growth, rebuild needed, index build seconds, index storage, peak memory), from ``lens bench lifecycle``
  output when given (``--lifecycle``), else from the index builds the runs recorded.
- **Table 2** — controlled evaluation per run binding: EM, F1, Ev.Rec, Ground (+ supporting-fact and joint F1
  where a system gives sentence evidence), errors.
- **Table 3** — fullwiki runs (the sample over the raw shard pool) take Table 2's place, once on every question
  and once on the questions whose gold articles are all in the pool; so do Table 6 and the JudgeAcc table.
- **JudgeAcc** — ``lens bench judge`` verdicts beside EM with Cohen's κ, per run group (auxiliary).
- **Table 4** — Ev.Rec by snapshot size (one column per D_n; each column is one binding; one configuration).
- **Table 5** — staleness: the stale arm (indexes built on D_from answer the questions new in D_to; index-free
  systems read D_to) against the reference run on D_from with the same configuration; EM and Ev.Rec gaps. When a
  fresh run over D_to is given too, a paired Table 5 sets each system's stale-arm rows against its own fresh D_to
  rows on the same questions (ΔEM, ΔEv.Rec with paired bootstrap intervals, McNemar).
- **Cost and statistics** (paper §6.6) — tokens, oracle calls, seconds per question, cache hits, EM with a 95 %
  bootstrap interval; paired exact McNemar on EM and a paired bootstrap interval of the EM difference for every
  pair of systems; the failure taxonomy.
- **Table 6** — ablation rows, when runs of the same binding differ from the main one only in ``ablation.*``;
  JudgeAcc beside EM where the folders hold verdicts.

Binding rules (refusals are listed in the report and make the command exit 1): rows are grouped by
(``binding_hash``, ``config_hash``); a table takes rows of one group only (Table 4: one group per column and
one configuration; Table 5: the stale group and a reference whose corpus is the stale arm's "from" corpus, same
configuration); the same system with two different ``system_hash`` values in one group, or a (system,
question) row present twice, is refused. Metrics are computed over the questions every system of the table
answered (paired), and the table says how many that is.
"""

from __future__ import annotations

import csv
import json
import os
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from rapidfuzz import fuzz

from harness.bench.judge import cohen_kappa, load_verdicts
from harness.bench.lifecycle import lifecycle_table
from harness.bench.metrics import FAILURE_CLASSES, bootstrap_ci, exact_match, mcnemar_exact, normalize_answer
from harness.bench.run_store import read_rows, read_run_manifest
from lens import LensError

__all__ = ["ReportError", "Run", "Group", "load_run", "group_runs", "build_report", "ReportResult"]

SYSTEM_LABELS = {
    "lens": "LENS",
    "react": "ReAct Search",
    "hybrid": "Hybrid-RAG",
    "bm25": "BM25-RAG",
    "closed": "Closed-Book",
    "bm25-span": "BM25-RAG + span",
    "gold-passages": "Gold passages",
    "paperqa": "PaperQA2",
}
# the paper's row order, then controls, then the peer arm (last, so the paper's plot colours stay)
SYSTEM_ORDER = ("lens", "react", "hybrid", "bm25", "bm25-span", "closed", "paperqa")
REFERENCE_ARMS = frozenset({"gold-passages"})  # read labels: never in a headline table or a significance test


class ReportError(LensError):
    """The given runs cannot be reported (unreadable, or a binding rule is broken)."""


@dataclass
class Run:
    path: Path
    manifest: dict[str, Any]
    rows: list[dict[str, Any]]

    @property
    def key(self) -> tuple[str, str]:
        return self.manifest["binding_hash"], self.manifest["config_hash"]


@dataclass
class Group:
    """Rows of one binding and one configuration, merged across run folders."""

    binding_hash: str
    config_hash: str
    manifest: dict[str, Any]  # the first run's (bindings and config are equal by construction)
    runs: list[Path]
    systems: dict[str, dict[str, Any]]  # name -> manifest entry
    rows: dict[str, dict[str, dict[str, Any]]]  # system -> question id -> row

    @property
    def binding(self) -> dict[str, Any]:
        return self.manifest["binding"]

    @property
    def arm(self) -> str:
        return self.binding["arm"]["kind"]

    @property
    def corpus(self) -> str:
        return self.binding["corpus"]["name"]

    @property
    def fullwiki(self) -> bool:
        """The open-domain setting (``lens bench fullwiki`` pool): the paper's Table 3 instead of Table 2."""
        return self.binding.get("setting") == "fullwiki"

    @property
    def corpus_checksum(self) -> str:
        return self.binding["corpus"]["corpus_checksum"]

    @property
    def size(self) -> int:
        snap = self.manifest.get("snapshot") or {}
        return int(snap.get("size") or self.binding["stage"]["size"] or 0)

    def ordered_systems(self) -> list[str]:
        """The systems of headline tables and tests, in the paper's order: reference arms that read labels
        (``REFERENCE_ARMS``) are left out; ``_ceiling_table`` reports them."""
        rest = sorted(s for s in self.rows if s not in SYSTEM_ORDER and s not in REFERENCE_ARMS)
        return [s for s in SYSTEM_ORDER if s in self.rows] + rest

    def common_ids(self, systems: Sequence[str] | None = None) -> list[str]:
        systems = list(systems or self.ordered_systems())
        if not systems:
            return []
        ids = set(self.rows[systems[0]])
        for s in systems[1:]:
            ids &= set(self.rows[s])
        first = self.rows[systems[0]]
        return sorted(ids, key=lambda i: first[i]["position"])

    def label(self) -> str:
        b = self.binding
        st = b["stage"]
        arm = b["arm"]
        if arm["kind"] == "stale":
            where = f"stale arm {arm['from']['name']}→{arm['to']['name']} ({b['question_set']})"
        else:
            where = f"{self.corpus} ({b['question_set']} {st['name']})"
        return f"{where} · config {self.config_hash[:12]}"

    def binding_line(self) -> str:
        b = self.binding
        st = b["stage"]
        parts = [
            f"corpus {b['corpus']['name']} `{b['corpus']['corpus_checksum'][:16]}`",
            f"stage {st['name']} sample `{str(st['sample_sha256'])[:8]}` order `{str(st['order_sha256'])[:8]}`",
            f"questions: {b['question_set']} (order `{b['question_order_sha256'][:8]}`)",
            f"questions file `{b['questions_file_sha256'][:8]}`",
            f"binding `{self.binding_hash[:12]}`",
            f"config `{self.config_hash[:12]}`",
        ]
        if b["arm"]["kind"] == "stale":
            a = b["arm"]
            parts.insert(
                1,
                f"stale: index corpus {a['from']['name']} `{a['from']['corpus_checksum'][:16]}` → "
                f"read corpus {a['to']['name']} `{a['to']['corpus_checksum'][:16]}`",
            )
        model = self.manifest.get("model")
        if model:
            parts.append(f"model {model}")
        parts.extend(self._budget_and_code())
        return " · ".join(parts)

    def _budget_and_code(self) -> list[str]:
        """The budgets every system ran under (from the run's configuration) and the code that ran: the git
        commits the runner recorded, else the note that only the rows' system hashes bind it."""
        config = self.manifest.get("config") or {}
        budget, llm = config.get("budget") or {}, config.get("llm") or {}
        parts = []
        if budget:
            parts.append(
                f"preset {config.get('preset', '—')}, budget {_count(budget.get('max_rounds'))} rounds / "
                f"{_count(budget.get('max_files'))} files / {_count(budget.get('max_tokens_per_query'))} tokens / "
                f"{_count(budget.get('question_timeout_s'))} s per question, {_count(llm.get('call_timeout_s'))} s "
                f"per call, temperature {_count(llm.get('temperature'))}"
            )
        commits = sorted({c for e in self.manifest.get("sessions") or [] if (c := e.get("git_commit"))})
        if commits:
            parts.append("code: commit " + ", ".join(f"`{c[:12]}`" for c in commits))
        else:
            parts.append("code: no git commit recorded (each row's `system_hash` fingerprints its arm's code)")
        return parts


def _count(x: Any) -> str:
    """A configured number as written in a caption: 128,000 and 1,200 rather than 128000 and 1200.0."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return "—" if x is None else str(x)
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,}"


def load_run(path: str | os.PathLike[str]) -> Run:
    """A HotpotQA run folder (``lens bench run``); another workload's run is refused, naming its own report."""
    p = Path(path)
    manifest = read_run_manifest(p)
    workload = (manifest.get("binding") or {}).get("workload")
    if workload:
        raise ReportError(f"{p}: a {workload} run; its report is lens bench {workload}-report")
    rows = read_rows(p, manifest)
    return Run(p, manifest, rows)


def _ablation_free(config: dict[str, Any]) -> str:
    c = {k: v for k, v in config.items() if k not in ("ablation", "preset")}
    return json.dumps(c, sort_keys=True)


def group_runs(runs: Iterable[Run]) -> list[Group]:
    """Merge runs by (binding, config); refuse conflicting arms or rows written twice."""
    groups: dict[tuple[str, str], Group] = {}
    for run in runs:
        g = groups.get(run.key)
        if g is None:
            g = groups[run.key] = Group(run.key[0], run.key[1], run.manifest, [], {}, defaultdict(dict))
        g.runs.append(run.path)
        for name, entry in run.manifest.get("systems", {}).items():
            prev = g.systems.get(name)
            if prev is not None and prev["system_hash"] != entry["system_hash"] and _has_rows(run, entry):
                if any(r["system_hash"] == prev["system_hash"] for r in g.rows.get(name, {}).values()):
                    raise ReportError(
                        f"{run.path}: {name} ran with other parameters than in {g.runs[0]} under the same binding; "
                        "one table cannot hold both"
                    )
        for r in run.rows:
            name = r["system"]
            entry = run.manifest["systems"].get(name)
            if entry is None or r["system_hash"] != entry["system_hash"]:
                continue  # rows of an arm the manifest no longer lists (parameters changed with no rows kept)
            if r["question_id"] in g.rows[name]:
                other = g.rows[name][r["question_id"]]
                raise ReportError(
                    f"{run.path}: row ({name}, {r['question_id']}) also comes from another run of the same binding ({other['_run']})"
                )
            r = dict(r)
            r["_run"] = str(run.path)
            g.rows[name][r["question_id"]] = r
            g.systems[name] = entry
    return list(groups.values())


def _has_rows(run: Run, entry: dict[str, Any]) -> bool:
    return any(r["system_hash"] == entry["system_hash"] for r in run.rows)


# --------------------------------------------------------------------------- metrics


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _pct(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{100 * x:.{digits}f}"


def _metrics(g: Group, system: str, ids: Sequence[str]) -> dict[str, Any]:
    rows = [g.rows[system][i] for i in ids]
    reads = g.systems[system].get("reads_corpus", True)
    s = [r["scores"] for r in rows]
    p = [r["prediction"] for r in rows]
    sp = [x["sp_f1"] for x in s if x.get("sp_f1") is not None]
    joint = [x["joint_f1"] for x in s if x.get("joint_f1") is not None]
    secs = [x["seconds"] for x in p]
    return {
        "n": len(rows),
        "em": _mean([x["em"] for x in s]),
        "f1": _mean([x["f1"] for x in s]),
        "ev_rec": _mean([x["ev_rec"] for x in s if x["ev_rec"] is not None]) if reads else None,
        "ground": _mean([float(bool(x["grounded"])) for x in s]),
        "sp_f1": _mean(sp) if len(sp) == len(s) and s else None,
        "joint_f1": _mean(joint) if len(joint) == len(s) and s else None,
        "errors": sum(1 for x in p if x.get("error")),
        "tokens": _mean([x["tokens"] for x in p]),
        "prompt_tokens": _mean([x["prompt_tokens"] for x in p]),
        "completion_tokens": _mean([x["completion_tokens"] for x in p]),
        "oracle_calls": _mean([x["oracle_calls"] for x in p]),
        "cache_hits": sum(x["cache_hits"] for x in p),
        "seconds": _mean(secs),
        "seconds_median": statistics.median(secs) if secs else None,
        "failures": {c: sum(1 for x in s if x["failure"] == c) for c in FAILURE_CLASSES},
    }


# --------------------------------------------------------------------------- output helpers


@dataclass
class Table:
    name: str  # file stem
    title: str
    caption: str
    headers: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        out = [f"### {self.title}", "", self.caption, ""]
        out.append("| " + " | ".join(self.headers) + " |")
        out.append("|" + "|".join(" --- " if i == 0 else " ---: " for i in range(len(self.headers))) + "|")
        out += ["| " + " | ".join(r) + " |" for r in self.rows]
        out += [""] + [f"- {n}" for n in self.notes] + ([""] if self.notes else [])
        return "\n".join(out)

    def write_csv(self, folder: Path) -> Path:
        path = folder / f"{self.name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(self.headers)
            w.writerows(self.rows)
        return path


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in text).strip("_")


def _group_slug(g: Group) -> str:
    arm = g.binding["arm"]
    where = f"{arm['from']['name']}-to-{arm['to']['name']}" if arm["kind"] == "stale" else g.corpus
    return _slug(f"{where}_{g.binding_hash[:8]}_{g.config_hash[:8]}")


# --------------------------------------------------------------------------- tables


def _composition_table(groups: Sequence[Group], lifecycle: Sequence[dict[str, Any]]) -> Table | None:
    seen: dict[str, list[str]] = {}
    for g in groups:
        snap = g.manifest.get("snapshot") or {}
        comp = snap.get("composition")
        if comp and g.arm == "fresh":
            seen[g.corpus_checksum] = [
                g.corpus,
                str(snap.get("size") or "—"),
                f"{comp['articles']:,}",
                f"{comp['evidence']:,}",
                f"{comp['distractors']:,}",
                f"{comp['background']:,}",
                f"{comp['background_ratio']:.2f}",
                f"`{g.corpus_checksum[:8]}`",
            ]
    for data in lifecycle:
        for st in data.get("stages", []):
            comp = st.get("composition")
            if comp and st["corpus_checksum"] not in seen:
                seen[st["corpus_checksum"]] = [
                    st["name"],
                    str(st.get("size") or "—"),
                    f"{comp['articles']:,}",
                    f"{comp['evidence']:,}",
                    f"{comp['distractors']:,}",
                    f"{comp['background']:,}",
                    f"{comp['background_ratio']:.2f}",
                    f"`{st['corpus_checksum'][:8]}`",
                ]
    if not seen:
        return None
    rows = sorted(seen.values(), key=lambda r: int(r[1]) if r[1].isdigit() else 0)
    return Table(
        "table1_composition",
        "Table 1 (upper) — snapshot construction",
        "Deterministic D_n sizes: Ev. = gold supporting articles, Dist. = context distractors, Bg. = background "
        "articles (target 3:1 to question-linked articles; realised ratio shown).",
        ["Snapshot", "n", "Articles", "Ev.", "Dist.", "Bg.", "Bg.:linked", "Corpus checksum"],
        rows,
    )


def _lifecycle_tables(groups: Sequence[Group], lifecycle: Sequence[dict[str, Any]]) -> list[Table]:
    tables = []
    for k, data in enumerate(lifecycle):
        headers, rows = lifecycle_table(data)
        order = {s: i for i, s in enumerate(SYSTEM_ORDER)}
        rows = [[r[0], SYSTEM_LABELS.get(r[1], r[1]), *r[2:]] for r in rows]
        rows.sort(
            key=lambda r: (
                next((st["size"] or 0 for st in data["stages"] if st["name"] == r[0]), 0),
                order.get(next((s for s, label in SYSTEM_LABELS.items() if label == r[1]), r[1]), 99),
            )
        )
        tables.append(
            Table(
                f"table1_lifecycle{'' if k == 0 else f'_{k + 1}'}",
                "Table 1 (lower) — lifecycle audit",
                "Measured by `lens bench lifecycle`: query-ready after growth and rebuild needed compare each stage with the "
                "previous one (coverage = share of the grown folder's documents the system can reach without a rebuild); "
                "index build time covers tokenising/encoding and saving; peak RSS is the building process's resident "
                "memory; query-time read is LENS's per-question folder scan or ReAct's one-off in-memory warm-up after a change.",
                headers,
                rows,
                notes=[
                    f"builds isolated in child processes: {data.get('isolated_builds')}; index root {data.get('index_root')}"
                ],
            )
        )
    if lifecycle:
        return tables
    # no lifecycle file: what the runs recorded about their indexes
    rows = []
    for g in groups:
        for name in g.ordered_systems():
            e = g.systems[name]
            builds = e.get("indexes") or []
            free = e.get("index_free", True)
            stale = g.arm == "stale" and not free
            rows.append(
                [
                    g.corpus if g.arm == "fresh" else f"{g.corpus} (stale arm)",
                    SYSTEM_LABELS.get(name, name),
                    "yes" if free else "no",
                    "yes" if free else "no",
                    "no" if free else "yes",
                    ", ".join(f"{b['kind']} on {b['corpus']}" for b in builds) or "—",
                    f"{sum(b['seconds'] for b in builds):.2f}" if builds else "0.00",
                    f"{sum(b['bytes'] for b in builds) / 1e6:.2f}" if builds else "0.00",
                    f"{max(b['peak_rss_bytes'] for b in builds) / 1e6:.0f}" if builds else "—",
                    "stale index" if stale else "",
                ]
            )
    if not rows:
        return []
    return [
        Table(
            "table1_lifecycle",
            "Table 1 (lower) — lifecycle audit (as recorded by the runs)",
            "Index-dependent arms are not query-ready after growth and need a rebuild; index-free arms read the folder "
            "as it is. Build measurements are those recorded with each index (run `lens bench lifecycle` for all stages).",
            [
                "Snapshot",
                "System",
                "Index-free",
                "Query-ready after growth",
                "Rebuild needed",
                "Indexes",
                "Index build (s)",
                "Index on disk (MB)",
                "Peak RSS (MB)",
                "Note",
            ],
            rows,
        )
    ]


def _where(g: Group) -> str:
    """Where a group's rows come from, as a table title says it: "D125" or "the stale arm D125→D250"."""
    arm = g.binding["arm"]
    return f"the stale arm {arm['from']['name']}→{arm['to']['name']}" if arm["kind"] == "stale" else g.corpus


def _incomplete_notes(g: Group, ids: Sequence[str]) -> list[str]:
    notes = []
    for s in g.ordered_systems():
        if len(g.rows[s]) != len(ids):
            notes.append(
                f"{SYSTEM_LABELS.get(s, s)} has {len(g.rows[s])} rows; the table uses the {len(ids)} questions every system answered"
            )
    planned = (g.manifest.get("questions") or {}).get("planned")
    if planned and len(ids) < planned:
        notes.append(f"{len(ids)} of the {planned} planned questions ({g.binding['question_set']}) are in this table")
    return notes


NEAR_MISS_CLASSES = ("answer contains gold", "gold contains answer", "spelling variant", "other")


def near_miss_class(prediction: str, gold: str) -> str:
    """How an EM-wrong answer with F1 > 0 misses (both under the official normalisation): it holds the whole gold
    answer, the gold holds the whole answer, a spelling variant (character similarity ≥ 80), or other."""
    p, q = normalize_answer(prediction), normalize_answer(gold)
    if q and f" {q} " in f" {p} ":
        return "answer contains gold"
    if p and f" {p} " in f" {q} ":
        return "gold contains answer"
    if fuzz.ratio(p, q) >= 80:
        return "spelling variant"
    return "other"


def _near_miss_table(g: Group) -> Table | None:
    """EM-wrong answers with F1 > 0 per system (reference arms included, labelled), by how they miss: the
    formatting loss of every arm on the same questions."""
    systems = g.ordered_systems() + [s for s in sorted(REFERENCE_ARMS) if s in g.rows]
    if not systems:
        return None
    ids = g.common_ids(systems)
    rows = []
    for s in systems:
        counts = dict.fromkeys(NEAR_MISS_CLASSES, 0)
        wrong = 0
        for i in ids:
            r = g.rows[s][i]
            if r["scores"]["em"]:
                continue
            wrong += 1
            if r["scores"]["f1"] > 0:
                counts[near_miss_class(r["prediction"]["answer"] or "", r["gold_answer"])] += 1
        label = SYSTEM_LABELS.get(s, s) + (" (uses gold)" if s in REFERENCE_ARMS else "")
        rows.append([label, str(wrong), str(sum(counts.values())), *(str(counts[c]) for c in NEAR_MISS_CLASSES)])
    return Table(
        f"near_misses__{_group_slug(g)}",
        f"Near misses on {g.corpus} (n={len(ids)})",
        f"{g.binding_line()}. EM-wrong answers with F1 > 0, classified under the official normalisation: the answer "
        "holds the gold answer, the gold holds the answer, a spelling variant (character similarity ≥ 80), other.",
        ["System", "EM wrong", "F1 > 0", *(c.capitalize() for c in NEAR_MISS_CLASSES)],
        rows,
    )


COMPARISONS = ("date-min", "date-max", "number-min", "number-max", "same-equal")


def _answer_path_table(g: Group) -> Table | None:
    """How each agent arm made its answers (from the stages its rows record): comparisons computed in code, per
    kind, with their EM; answers that are verified spans of the cited evidence; answers left unverified."""
    systems = [
        s
        for s in g.ordered_systems()
        if any("stages" in (r["prediction"].get("details") or {}) for r in g.rows[s].values())
    ]
    if not systems:
        return None
    ids = g.common_ids(systems)
    rows = []
    for s in systems:
        by_kind = dict.fromkeys(COMPARISONS, 0)
        in_code = em_code = verified = unverified = em_before = 0
        for i in ids:
            r = g.rows[s][i]
            details = r["prediction"].get("details") or {}
            spans = [st for st in details.get("stages") or [] if st.get("stage") == "answer-span"]
            before = spans[-1].get("from", "") if spans else (r["prediction"]["answer"] or "")
            em_before += exact_match(before, r["gold_answer"])
            computed = [
                st for st in details.get("stages") or [] if st.get("stage") == "synthesis" and st.get("in_code")
            ]
            if computed:
                in_code += 1
                em_code += bool(r["scores"]["em"])
                kind = computed[-1].get("comparison")
                if kind in by_kind:
                    by_kind[kind] += 1
            if details.get("answer_verified") is True:
                verified += 1
            elif details.get("answer_verified") is False:
                unverified += 1
        rows.append(
            [
                SYSTEM_LABELS.get(s, s),
                str(in_code),
                *(str(by_kind[k]) for k in COMPARISONS),
                _pct(em_code / in_code) if in_code else "—",
                str(verified),
                str(unverified),
                _pct(em_before / len(ids)) if ids else "—",
                _pct(sum(bool(g.rows[s][i]["scores"]["em"]) for i in ids) / len(ids)) if ids else "—",
            ]
        )
    return Table(
        f"answer_paths__{_group_slug(g)}",
        f"How answers were made on {g.corpus} (n={len(ids)})",
        f"{g.binding_line()}. Answers computed in code from verified values, by comparison kind, and their EM %; "
        "answers that are a verified span of the cited evidence (computed and yes/no answers count as verified) "
        "and answers marked unverified; EM of the answers before the answer-span step (the model's own wording) "
        "and after it (the final answers).",
        ["System", "Computed", *COMPARISONS, "EM % computed", "Verified", "Unverified", "EM % before span", "EM %"],
        rows,
    )


def _judge_table(g: Group, subset: Sequence[str] | None = None) -> Table | None:
    """JudgeAcc beside EM (``lens bench judge`` verdicts in the group's run folders), per system on the table's
    questions (or the ``subset`` of them, e.g. fullwiki's gold-in-pool questions), with Cohen's κ of the two and the
    verdicts missing. Auxiliary, never a primary score."""
    verdicts = load_verdicts(g.runs)
    if not verdicts:
        return None
    ids = _restrict(g.common_ids(), subset)
    rows = []
    for s in g.ordered_systems():
        em, judged, missing = [], [], 0
        for i in ids:
            r = g.rows[s][i]
            v = verdicts.get((r["system_hash"], i))  # None: not judged, or the judge failed
            if v is None:
                missing += 1
                continue
            em.append(bool(r["scores"]["em"]))
            judged.append(v)
        kappa = cohen_kappa(em, judged)
        rows.append(
            [
                SYSTEM_LABELS.get(s, s),
                str(len(judged)),
                _pct(sum(em) / len(em)) if em else "—",
                _pct(sum(judged) / len(judged)) if judged else "—",
                "—" if kappa is None else f"{kappa:.2f}",
                str(missing),
            ]
        )
    return Table(
        f"judge{'_gold_in_pool' if subset is not None else ''}__{_group_slug(g)}",
        f"JudgeAcc beside EM on {g.corpus} (auxiliary; n={len(ids)}"
        + (f", {_GOLD_IN_POOL})" if subset is not None else ")"),
        f"{g.binding_line()}. JudgeAcc: the share an LLM judge (`lens bench judge`, its own configuration, calls "
        "outside every system's budget) grades correct; EM on the same judged questions; Cohen's κ of the two; "
        "Missing: questions without a verdict (judge failed or not run), left out of both.",
        ["System", "n judged", "EM", "JudgeAcc", "κ (EM, judge)", "Missing"],
        rows,
    )


def _ceiling_table(g: Group) -> Table | None:
    """The reading ceiling: the gold-passages reference arm (labels: uses_gold) on the questions it and every
    headline system answered, and each system's EM as a ratio of it. Never a headline table or a test."""
    ref = [s for s in sorted(REFERENCE_ARMS) if s in g.rows]
    systems = g.ordered_systems()
    if not ref or not systems:
        return None
    ids = g.common_ids(systems + ref)
    rows = []
    for r in ref:
        gold = _metrics(g, r, ids)
        rows.append([f"{SYSTEM_LABELS.get(r, r)} (uses gold)", _pct(gold["em"]), _pct(gold["f1"]), "1.00"])
        for s in systems:
            m = _metrics(g, s, ids)
            ratio = m["em"] / gold["em"] if gold["em"] else None
            rows.append(
                [SYSTEM_LABELS.get(s, s), _pct(m["em"]), _pct(m["f1"]), "—" if ratio is None else f"{ratio:.2f}"]
            )
    return Table(
        f"reading_ceiling__{_group_slug(g)}",
        f"Reading ceiling on {g.corpus} (%, n={len(ids)}; uses gold — not a headline result)",
        f"{g.binding_line()}. The gold-passages arm answers with the BM25-RAG prompt over the question's gold "
        "supporting paragraphs (it reads labels); EM ratio = a system's EM over the gold-passage EM on the same "
        "questions.",
        ["System", "EM", "F1", "EM / gold-passage EM"],
        rows,
    )


_GOLD_IN_POOL = "questions whose gold articles are all in the pool"  # the fullwiki subset, in every table title


def _restrict(ids: Sequence[str], subset: Sequence[str] | None) -> list[str]:
    """``ids`` in their order, kept to ``subset`` when one is given."""
    if subset is None:
        return list(ids)
    keep = set(subset)
    return [i for i in ids if i in keep]


def _gold_in_pool(g: Group) -> list[str] | None:
    """A fullwiki group's questions whose gold articles are all in the pool (None for other settings)."""
    if not g.fullwiki:
        return None
    return (g.manifest.get("snapshot") or {}).get("fullwiki", {}).get("gold_in_pool", [])


def _main_table(g: Group, subset: Sequence[str] | None = None) -> Table:
    ids = _restrict(g.common_ids(), subset)
    rows = []
    for s in g.ordered_systems():
        m = _metrics(g, s, ids)
        rows.append(
            [
                SYSTEM_LABELS.get(s, s),
                str(m["n"]),
                _pct(m["em"]),
                _pct(m["f1"]),
                _pct(m["ev_rec"]),
                _pct(m["ground"]),
                _pct(m["sp_f1"]),
                _pct(m["joint_f1"]),
                str(m["errors"]),
            ]
        )
    if g.fullwiki:
        name = "table3_fullwiki" + ("_gold_in_pool" if subset is not None else "")
        title = f"Table 3 — open-domain fullwiki over the raw {g.corpus}, zero indexing (%, n={len(ids)})"
        if subset is not None:
            title += f", {_GOLD_IN_POOL}"
    else:
        name, title = "table2_main", f"Table 2 — controlled evaluation on {g.corpus} (%, n={len(ids)})"
    return Table(
        f"{name}__{_group_slug(g)}",
        title,
        f"{g.binding_line()}. EM/F1 are the official answer metrics; Ev.Rec is gold supporting-document recall "
        "among retrieved documents; Ground is the share of answers traceable to the system's evidence; SP F1 and "
        "Joint F1 only where a system cites sentences; Errors counts rows whose system failed (scored as given)."
        + (
            " Fullwiki: the shared pool lacks some gold articles; those questions are scored (a system can only "
            "miss them) and the gold-in-pool table repeats the metrics without them."
            if g.fullwiki
            else ""
        ),
        ["System", "n", "EM", "F1", "Ev.Rec", "Ground", "SP F1", "Joint F1", "Errors"],
        rows,
        notes=_incomplete_notes(g, ids),
    )


def _cost_tables(g: Group, resamples: int, seed: int) -> list[Table]:
    """Cost per question, paired EM tests and the failure taxonomy of one group."""
    ids = g.common_ids()
    return [_cost_table(g, ids, resamples, seed), _mcnemar_table(g, ids, resamples, seed), _failure_table(g, ids)]


def _cost_table(g: Group, ids: list[str], resamples: int, seed: int) -> Table:
    rows = []
    for s in g.ordered_systems():
        m = _metrics(g, s, ids)
        em = [g.rows[s][i]["scores"]["em"] for i in ids]
        ci = bootstrap_ci(em, resamples=resamples, seed=seed) if em else None
        rows.append(
            [
                SYSTEM_LABELS.get(s, s),
                f"{m['tokens']:,.0f}",
                f"{m['prompt_tokens']:,.0f}",
                f"{m['completion_tokens']:,.0f}",
                f"{m['oracle_calls']:.2f}",
                f"{m['seconds']:.1f}",
                f"{m['seconds_median']:.1f}",
                str(m["cache_hits"]),
                "—" if ci is None else f"{100 * ci.mean:.1f} [{100 * ci.low:.1f}, {100 * ci.high:.1f}]",
            ]
        )
    return Table(
        f"cost__{_group_slug(g)}",
        f"Cost per question on {_where(g)} (n={len(ids)})",
        f"{g.binding_line()}. Tokens are the endpoint's usage counts (cache hits cost zero and are counted); "
        f"seconds are wall time per question; EM with a 95 % percentile bootstrap interval ({resamples:,} resamples, seed {seed}).",
        [
            "System",
            "Tokens/query",
            "Prompt",
            "Completion",
            "Oracle calls",
            "Seconds (mean)",
            "Seconds (median)",
            "Cache hits",
            "EM % [95% CI]",
        ],
        rows,
        notes=_incomplete_notes(g, ids),
    )


def _mcnemar_table(g: Group, ids: list[str], resamples: int, seed: int) -> Table:
    systems = g.ordered_systems()
    pairs = []
    for i, a in enumerate(systems):
        for b in systems[i + 1 :]:
            xa = [bool(g.rows[a][q]["scores"]["em"]) for q in ids]
            xb = [bool(g.rows[b][q]["scores"]["em"]) for q in ids]
            t = mcnemar_exact(xa, xb)
            reads = g.systems[a].get("reads_corpus", True) and g.systems[b].get("reads_corpus", True)
            ev_a, ev_b = ([g.rows[s][q]["scores"]["ev_rec"] for q in ids] for s in (a, b))
            pairs.append(
                [
                    f"{SYSTEM_LABELS.get(a, a)} vs {SYSTEM_LABELS.get(b, b)}",
                    _pct(_mean([float(x) for x in xa])),
                    _pct(_mean([float(y) for y in xb])),
                    str(t.b),
                    str(t.c),
                    f"{t.p_value:.4f}",
                    _paired_difference(xa, xb, resamples, seed),
                    _paired_difference(ev_a, ev_b, resamples, seed) if reads else "—",
                ]
            )
    return Table(
        f"mcnemar__{_group_slug(g)}",
        f"Paired tests on EM and evidence recall, {_where(g)} (n={len(ids)})",
        "Exact two-sided McNemar on per-question EM (b = only the first system correct, c = only the second) and "
        "paired percentile bootstrap intervals of the EM and Ev.Rec differences (pp; Ev.Rec only where both systems "
        "read the corpus).",
        ["Pair", "EM A", "EM B", "b", "c", "p", "ΔEM pp [95% CI]", "ΔEv.Rec pp [95% CI]"],
        pairs,
    )


def _paired_difference(xs: Sequence[Any], ys: Sequence[Any], resamples: int, seed: int) -> str:
    """Mean of the per-question differences x − y in pp with its 95 % paired percentile bootstrap interval, over
    the questions where both values exist (a score of None is left out); "—" when no question has both."""
    diff = [float(x) - float(y) for x, y in zip(xs, ys) if x is not None and y is not None]
    if not diff:
        return "—"
    ci = bootstrap_ci(diff, resamples=resamples, seed=seed)
    return f"{100 * ci.mean:+.1f} [{100 * ci.low:+.1f}, {100 * ci.high:+.1f}]"


def _failure_table(g: Group, ids: list[str]) -> Table:
    fail_rows = []
    for s in g.ordered_systems():
        m = _metrics(g, s, ids)
        n = m["n"] or 1
        fail_rows.append(
            [SYSTEM_LABELS.get(s, s)]
            + [f"{m['failures'][c]} ({100 * m['failures'][c] / n:.0f}%)" for c in FAILURE_CLASSES]
        )
    return Table(
        f"failures__{_group_slug(g)}",
        f"Failure taxonomy, {_where(g)} (n={len(ids)})",
        "Each question in exactly one class, first match wins: correct → retrieved-but-unanswered → "
        "answered-but-wrong (every gold document retrieved) → not-retrieved.",
        ["System", *FAILURE_CLASSES],
        fail_rows,
    )


_PER_CORPUS_PARAMS = ("index_hash", "index_corpus_checksum")  # legitimately differ between corpora


def _param_conflicts(groups: Sequence[Group]) -> list[str]:
    """Arms whose parameters (code fingerprint included) differ between the groups of one table."""
    out = []
    names = sorted({s for g in groups for s in g.rows})
    for name in names:
        seen: dict[str, tuple[Group, dict]] = {}
        for g in groups:
            if name not in g.systems:
                continue
            params = {k: v for k, v in (g.systems[name].get("params") or {}).items() if k not in _PER_CORPUS_PARAMS}
            key = json.dumps(params, sort_keys=True)
            seen.setdefault(key, (g, params))
        if len(seen) > 1:
            (g1, p1), (g2, p2) = list(seen.values())[:2]
            keys = sorted(k for k in set(p1) | set(p2) if p1.get(k) != p2.get(k))
            out.append(f"{name} differs between {g1.corpus} and {g2.corpus} runs in {', '.join(keys)}")
    return out


def _evrec_table(groups: Sequence[Group], config_hash: str) -> tuple[Table | None, list[str]]:
    fresh = [g for g in groups if g.arm == "fresh" and g.config_hash == config_hash]
    refusals: list[str] = []
    by_corpus: dict[str, Group] = {}
    for g in sorted(fresh, key=lambda g: g.size):
        if g.corpus_checksum in by_corpus:
            refusals.append(
                f"Table 4 (config {config_hash[:12]}): two bindings over {g.corpus} ({by_corpus[g.corpus_checksum].binding_hash[:8]}, "
                f"{g.binding_hash[:8]}); a column holds one binding — report them separately"
            )
            return None, refusals
        by_corpus[g.corpus_checksum] = g
    cols = list(by_corpus.values())
    if not cols:
        return None, refusals
    conflicts = _param_conflicts(cols)
    if conflicts:
        return None, [
            f"Table 4 (config {config_hash[:12]}): {'; '.join(conflicts)} — rows of different code or "
            "parameters never share a table"
        ]
    systems = [s for s in SYSTEM_ORDER if any(s in g.rows for g in cols)]
    rows = []
    for s in systems:
        cells = [SYSTEM_LABELS.get(s, s)]
        for g in cols:
            if s not in g.rows:
                cells.append("")
                continue
            m = _metrics(g, s, g.common_ids())
            cells.append(_pct(m["ev_rec"]))
        rows.append(cells)
    headers = ["System"] + [f"{g.corpus} (n={len(g.common_ids())})" for g in cols]
    return Table(
        f"table4_evidence_recall__{config_hash[:8]}",
        "Table 4 — evidence recall (%) by snapshot size",
        f"Config `{config_hash[:12]}`. Each column is one run binding: "
        + "; ".join(
            f"{g.corpus}: binding `{g.binding_hash[:8]}`, {g.binding['question_set']} {g.binding['stage']['name']}"
            for g in cols
        )
        + ". Closed-Book has no evidence trace by design (—).",
        headers,
        rows,
    ), refusals


def _stale_reference(
    stale: Group, groups: Sequence[Group], side: str, table: str, *, required: bool
) -> tuple[Group | None, list[str]]:
    """The one fresh run a staleness table compares the stale arm with: over the arm's ``side`` corpus ("from" or
    "to"), same configuration, same code and parameters — or None with the refusals (a missing reference is one
    only when ``required``)."""
    arm = stale.binding["arm"]
    where = arm[side]
    refs = [
        g
        for g in groups
        if g.arm == "fresh" and g.corpus_checksum == where["corpus_checksum"] and g.config_hash == stale.config_hash
    ]
    if not refs:
        if not required:
            return None, []
        return None, [
            f"{table} for {stale.label()}: no reference run over {where['name']} "
            f"(corpus `{where['corpus_checksum'][:12]}`) with config `{stale.config_hash[:12]}` was given"
        ]
    if len(refs) > 1:
        kind = "reference" if side == "from" else "fresh"
        return None, [f"{table} for {stale.label()}: {len(refs)} {kind} bindings over {where['name']}; pass one"]
    conflicts = _param_conflicts([refs[0], stale])
    if conflicts:
        return None, [
            f"{table} for {stale.label()}: {'; '.join(conflicts)} — rows of different code or parameters "
            "never share a table"
        ]
    return refs[0], []


def _stale_table(stale: Group, groups: Sequence[Group]) -> tuple[Table | None, list[str]]:
    arm = stale.binding["arm"]
    ref, refusals = _stale_reference(stale, groups, "from", "Table 5", required=True)
    if ref is None:
        return None, refusals
    s_ids = stale.common_ids()
    r_ids = ref.common_ids([s for s in stale.ordered_systems() if s in ref.rows] or None)
    rows = []
    for s in stale.ordered_systems():
        ms = _metrics(stale, s, s_ids)
        e = stale.systems[s]
        index = (
            "none"
            if not e.get("reads_corpus", True)
            else (f"reads {arm['to']['name']}" if e.get("index_free", True) else f"{arm['from']['name']} index (stale)")
        )
        if s in ref.rows:
            mr = _metrics(ref, s, r_ids)
            d_em = None if mr["em"] is None or ms["em"] is None else ms["em"] - mr["em"]
            d_ev = None if mr["ev_rec"] is None or ms["ev_rec"] is None else ms["ev_rec"] - mr["ev_rec"]
        else:
            mr, d_em, d_ev = {"em": None, "ev_rec": None}, None, None
        sign = lambda x: "—" if x is None else f"{100 * x:+.1f}"  # noqa: E731
        rows.append(
            [
                SYSTEM_LABELS.get(s, s),
                index,
                _pct(mr["em"]),
                _pct(ms["em"]),
                sign(d_em),
                _pct(mr["ev_rec"]),
                _pct(ms["ev_rec"]),
                sign(d_ev),
            ]
        )
    return Table(
        f"table5_staleness__{_group_slug(stale)}",
        f"Table 5 — staleness under corpus expansion ({arm['from']['name']}→{arm['to']['name']}, Δn={len(s_ids)})",
        f"STALE ARM. Index-heavy systems reuse the index built on {arm['from']['name']} (corpus "
        f"`{arm['from']['corpus_checksum'][:16]}`) to answer questions new in {arm['to']['name']} (corpus "
        f"`{arm['to']['corpus_checksum'][:16]}`); index-free systems read {arm['to']['name']} directly. Reference: the "
        f"run over {arm['from']['name']} ({ref.binding['question_set']} {ref.binding['stage']['name']}, n={len(r_ids)}, "
        f"binding `{ref.binding_hash[:8]}`); stale arm binding `{stale.binding_hash[:8]}`; config "
        f"`{stale.config_hash[:12]}`. Gaps are stale minus reference in pp; negative gaps indicate stale degradation "
        "(freshness/lifecycle robustness, not fresh-corpus answer quality).",
        [
            "System",
            "Index",
            f"EM ({arm['from']['name']})",
            "EM (stale arm)",
            "ΔEM",
            f"Ev.Rec ({arm['from']['name']})",
            "Ev.Rec (stale arm)",
            "ΔEv.Rec",
        ],
        rows,
        notes=_incomplete_notes(stale, s_ids),
    ), []


def _stale_paired_table(
    stale: Group, groups: Sequence[Group], resamples: int, seed: int
) -> tuple[Table | None, list[str]]:
    """Table 5, paired: each system's stale-arm rows against its own fresh rows over the grown corpus (D_to) on
    the same questions — ΔEM and ΔEv.Rec with paired bootstrap intervals and McNemar on EM. Only when a fresh run
    over D_to with the stale arm's configuration is given (it holds the new questions once it has run past them)."""
    arm = stale.binding["arm"]
    ref, refusals = _stale_reference(stale, groups, "to", "Table 5 (paired)", required=False)
    if ref is None:
        return None, refusals
    s_ids = stale.common_ids()
    systems = [s for s in stale.ordered_systems() if s in ref.rows]
    ids = [i for i in s_ids if all(i in ref.rows[s] for s in systems)]
    if not systems or not ids:
        return None, []

    def delta(s: str, key: str) -> str:
        return _paired_difference(
            [stale.rows[s][i]["scores"][key] for i in ids],
            [ref.rows[s][i]["scores"][key] for i in ids],
            resamples,
            seed,
        )

    rows = []
    for s in systems:
        ms, mr = _metrics(stale, s, ids), _metrics(ref, s, ids)
        t = mcnemar_exact(
            [bool(stale.rows[s][i]["scores"]["em"]) for i in ids], [bool(ref.rows[s][i]["scores"]["em"]) for i in ids]
        )
        reads = ms["ev_rec"] is not None
        rows.append(
            [
                SYSTEM_LABELS.get(s, s),
                "stale index" if stale.systems[s].get("index_free", True) is False else "reads the folder",
                _pct(mr["em"]),
                _pct(ms["em"]),
                delta(s, "em"),
                f"{t.b}:{t.c}, p={t.p_value:.3f}",
                _pct(mr["ev_rec"]),
                _pct(ms["ev_rec"]),
                delta(s, "ev_rec") if reads else "—",
            ]
        )
    to = arm["to"]["name"]
    return Table(
        f"table5_staleness_paired__{_group_slug(stale)}",
        f"Table 5 (paired) — the stale arm against fresh {to} on the same questions (n={len(ids)})",
        f"STALE ARM against each system's own fresh rows over {to} (binding `{ref.binding_hash[:8]}`) on the "
        f"{len(ids)} questions both answered; stale arm binding `{stale.binding_hash[:8]}`, config "
        f"`{stale.config_hash[:12]}`. Δ = stale − fresh in pp with a 95 % paired bootstrap interval ({resamples:,} "
        "resamples); McNemar b:c counts questions only the stale / only the fresh row got right.",
        [
            "System",
            "Index",
            f"EM (fresh {to})",
            "EM (stale arm)",
            "ΔEM [95% CI]",
            "McNemar EM",
            f"Ev.Rec (fresh {to})",
            "Ev.Rec (stale arm)",
            "ΔEv.Rec [95% CI]",
        ],
        rows,
        notes=_incomplete_notes(stale, ids),
    ), []


def _lens_details(g: Group, ids: Sequence[str]) -> dict[str, Any]:
    """What the agent reported about itself on ``ids``: cited documents, certified share, stop reasons."""
    details = [g.rows["lens"][i]["prediction"].get("details", {}) or {} for i in ids]
    cited = [len({e.get("path") for e in d.get("evidence", [])}) for d in details]
    reqs = [r for d in details for r in d.get("requirements", [])]
    stops: dict[str, int] = {}
    for d in details:
        first = str(d.get("stop_reason") or "—").split(";")[0]
        stops[first] = stops.get(first, 0) + 1
    return {
        "cited": _mean([float(c) for c in cited]),
        "certified": _mean([float(r.get("status") == "certified") for r in reqs]) if reqs else None,
        "stops": stops,
    }


def _ablation_table(
    base: Group,
    variants: Sequence[Group],
    resamples: int = 10_000,
    seed: int = 42,
    subset: Sequence[str] | None = None,
) -> Table | None:
    """Full LENS against each ablation on the questions all of them answered (kept to ``subset`` when given, e.g.
    fullwiki's gold-in-pool questions): EM, JudgeAcc (where ``lens bench judge`` verdicts exist), F1, Ev.Rec,
    Ground, cited documents, certified share, tokens (and their ratio to the full system), oracle calls, seconds,
    and for each variant the exact McNemar test on EM and a paired bootstrap interval of the Ev.Rec difference
    (full − variant); stop reasons and judged counts in the notes."""
    if "lens" not in base.rows or not any("lens" in v.rows for v in variants):
        return None
    ids = set(base.rows["lens"])
    for v in variants:
        if "lens" in v.rows:
            ids &= set(v.rows["lens"])
    order = _restrict(sorted(ids, key=lambda i: base.rows["lens"][i]["position"]), subset)
    rows, notes = [], []
    full = _metrics(base, "lens", order)
    for g, label in [(base, "LENS (full)")] + [
        (v, "LENS (" + ", ".join(k.replace("_", " ") for k, on in v.manifest["config"]["ablation"].items() if on) + ")")
        for v in variants
        if "lens" in v.rows
    ]:
        m = _metrics(g, "lens", order)
        d = _lens_details(g, order)
        verdicts = load_verdicts(g.runs)
        judged = [verdicts.get((g.rows["lens"][i]["system_hash"], i)) for i in order]
        judged = [v for v in judged if v is not None]
        test, ci = _versus_full(base, g, order, resamples, seed)
        ratio = full["tokens"] / m["tokens"] if m["tokens"] else None
        rows.append(
            [
                label,
                _pct(m["em"]),
                _pct(sum(judged) / len(judged)) if judged else "—",
                _pct(m["f1"]),
                _pct(m["ev_rec"]),
                _pct(m["ground"]),
                f"{d['cited']:.2f}" if d["cited"] is not None else "—",
                _pct(d["certified"]),
                f"{m['tokens']:,.0f}",
                "—" if g is base or ratio is None else f"{ratio:.2f}×",
                f"{m['oracle_calls']:.2f}",
                f"{m['seconds']:.1f}" if m["seconds"] is not None else "—",
                test,
                ci,
                f"`{g.config_hash[:8]}`",
            ]
        )
        notes.append(
            f"{label} stop reasons: "
            + ", ".join(f"{k} {v}" for k, v in sorted(d["stops"].items()))
            + f"; judged {len(judged)}/{len(order)}"
        )
    return Table(
        f"table6_ablation{'_gold_in_pool' if subset is not None else ''}__{_group_slug(base)}",
        f"Table 6 — ablation on {base.corpus} (%, n={len(order)}"
        + (f", {_GOLD_IN_POOL})" if subset is not None else ")"),
        f"{base.binding_line()}. Rows share the binding; their configurations differ only in `ablation.*`. "
        "JudgeAcc: auxiliary LLM-judge accuracy on the judged rows (never a primary score). "
        f"Full/variant: the full system's tokens per query over the variant's. McNemar b:c on EM (b = only the "
        f"full system right) and the paired percentile bootstrap of ΔEv.Rec = full − variant (pp; {resamples:,} "
        f"resamples, seed {seed}).",
        _ABLATION_HEADER,
        rows,
        notes=notes,
    )


_ABLATION_HEADER = [
    "Variant",
    "EM",
    "JudgeAcc",
    "F1",
    "Ev.Rec",
    "Ground",
    "Cited docs",
    "Certified",
    "Tokens/query",
    "Full/variant tokens",
    "Oracle calls",
    "s/q",
    "McNemar EM vs full",
    "ΔEv.Rec pp [95% CI]",
    "Config",
]


def _versus_full(base: Group, g: Group, order: Sequence[str], resamples: int, seed: int) -> tuple[str, str]:
    """A variant against the full system on the same questions: McNemar b:c on EM, bootstrap of ΔEv.Rec."""
    if g is base or not order:
        return "—", "—"
    full_em = [bool(base.rows["lens"][i]["scores"]["em"]) for i in order]
    full_ev = [base.rows["lens"][i]["scores"]["ev_rec"] for i in order]
    em = [bool(g.rows["lens"][i]["scores"]["em"]) for i in order]
    t = mcnemar_exact(full_em, em)
    ev = [g.rows["lens"][i]["scores"]["ev_rec"] for i in order]
    return f"{t.b}:{t.c}, p={t.p_value:.3f}", _paired_difference(full_ev, ev, resamples, seed)


# --------------------------------------------------------------------------- plots


def _plots(groups: Sequence[Group], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    fresh = [g for g in groups if g.arm == "fresh" and not _is_ablation_variant(g, groups)]
    from matplotlib.ticker import FuncFormatter, NullFormatter

    colors = {s: f"C{i}" for i, s in enumerate(SYSTEM_ORDER)}
    if fresh:
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        markers = "osD^v<>"
        for k, g in enumerate(sorted(fresh, key=lambda g: g.size)):
            ids = g.common_ids()
            for s in g.ordered_systems():
                m = _metrics(g, s, ids)
                x = max(m["tokens"] or 0.0, 1.0)
                ax.scatter(
                    x,
                    100 * (m["em"] or 0.0),
                    marker=markers[k % len(markers)],
                    s=52,
                    color=colors.get(s, "k"),
                    alpha=0.85,
                    label=f"{SYSTEM_LABELS.get(s, s)} · {g.corpus} (n={len(ids)})",
                )
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}K" if v >= 1000 else f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(-2, 100)
        ax.set_xlabel("tokens per question (mean, log scale)")
        ax.set_ylabel("EM (%)")
        ax.set_title("EM vs tokens per system")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6, loc="best")
        fig.tight_layout()
        p = out / "em_vs_tokens.png"
        fig.savefig(p, dpi=150)
        plt.close(fig)
        written.append(p)
        by_config: dict[str, list[Group]] = defaultdict(list)
        for g in fresh:
            by_config[g.config_hash].append(g)
        config_hash, gs = max(by_config.items(), key=lambda kv: len(kv[1]))
        gs = sorted(gs, key=lambda g: g.size)
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for s in SYSTEM_ORDER:
            pts = [(g.size, _metrics(g, s, g.common_ids())["ev_rec"]) for g in gs if s in g.rows]
            pts = [(x, y) for x, y in pts if y is not None]
            if pts:
                ax.plot(
                    [x for x, _ in pts],
                    [100 * y for _, y in pts],
                    marker="o",
                    color=colors.get(s, "k"),
                    label=SYSTEM_LABELS.get(s, s),
                )
        ax.set_xlabel("snapshot size n (questions in D_n)")
        ax.set_ylabel("Ev.Rec (%)")
        ax.set_xticks([g.size for g in gs])
        ax.set_xticklabels([g.corpus for g in gs])
        ax.set_ylim(-2, 102)
        ax.set_title(f"Evidence recall by snapshot size (config {config_hash[:8]})")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        p = out / "evrec_by_size.png"
        fig.savefig(p, dpi=150)
        plt.close(fig)
        written.append(p)
    return written


def _is_ablation_variant(g: Group, groups: Sequence[Group]) -> bool:
    abl = g.manifest["config"].get("ablation", {})
    if not any(abl.values()):
        return False
    return any(
        o is not g
        and o.binding_hash == g.binding_hash
        and not any(o.manifest["config"].get("ablation", {}).values())
        and _ablation_free(o.manifest["config"]) == _ablation_free(g.manifest["config"])
        for o in groups
    )


# --------------------------------------------------------------------------- the report


@dataclass
class ReportResult:
    out: Path
    files: list[Path]
    refusals: list[str]
    tables: list[Table]


def build_report(
    run_dirs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    lifecycle_files: Sequence[str | os.PathLike[str]] = (),
    resamples: int = 10_000,
    seed: int = 42,
    plots: bool = True,
) -> ReportResult:
    """Write ``report.md``, one CSV per table and the PNG plots into ``out``."""
    if not run_dirs:
        raise ReportError("no run folders given")
    runs = [load_run(d) for d in run_dirs]
    groups = group_runs(runs)
    lifecycle = []
    for f in lifecycle_files:
        try:
            lifecycle.append(json.loads(Path(f).read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as exc:
            raise ReportError(f"{f}: unreadable lifecycle file ({exc})") from None
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    variants = {id(g) for g in groups if _is_ablation_variant(g, groups)}
    tables, refusals = _tables(groups, lifecycle, variants, resamples, seed)
    files = [t.write_csv(out) for t in tables]
    images = _plots(groups, out) if plots else []
    files += images
    md = _markdown(runs, groups, variants, refusals, tables, images)
    report = out / "report.md"
    report.write_text("\n".join(md), encoding="utf-8")
    files.insert(0, report)
    return ReportResult(out, files, refusals, tables)


def _tables(
    groups: list[Group], lifecycle: list[dict[str, Any]], variants: set[int], resamples: int, seed: int
) -> tuple[list[Table], list[str]]:
    """Every table of the report in its order, and the tables refused (with why)."""
    tables: list[Table] = []
    refusals: list[str] = []
    comp = _composition_table(groups, lifecycle)
    if comp:
        tables.append(comp)
    tables += _lifecycle_tables(groups, lifecycle)
    main = [g for g in groups if g.arm == "fresh" and id(g) not in variants]
    for g in sorted(main, key=lambda g: (g.size, g.config_hash)):
        tables.append(_main_table(g))
        gip = _gold_in_pool(g)
        if gip is not None:
            tables.append(_main_table(g, gip))
        judge = [_judge_table(g)] + ([_judge_table(g, gip)] if gip is not None else [])
        for extra in (_ceiling_table(g), _near_miss_table(g), _answer_path_table(g), *judge):
            if extra:
                tables.append(extra)
    for ch in sorted({g.config_hash for g in main}):
        t, r = _evrec_table(main, ch)
        refusals += r
        if t:
            tables.append(t)
    for g in [g for g in groups if g.arm == "stale"]:
        t, r = _stale_table(g, main)
        refusals += r
        if t:
            tables.append(t)
        t, r = _stale_paired_table(g, main, resamples, seed)
        refusals += r
        if t:
            tables.append(t)
    for g in sorted(main, key=lambda g: (g.size, g.config_hash)):
        tables += _cost_tables(g, resamples, seed)
    for g in main:
        t, r = _ablation_tables(g, groups, variants, resamples, seed)
        tables += t
        refusals += r
    for g in [g for g in groups if g.arm == "stale"]:
        tables += _cost_tables(g, resamples, seed)
    return tables, refusals


def _ablation_tables(
    g: Group, groups: list[Group], variants: set[int], resamples: int, seed: int
) -> tuple[list[Table], list[str]]:
    """Table 6 for one main group: its ablation variants of the same binding and code (and its gold-in-pool
    subset), or a refusal when their code differs."""
    vs = [
        v
        for v in groups
        if id(v) in variants
        and v.binding_hash == g.binding_hash
        and _ablation_free(v.manifest["config"]) == _ablation_free(g.manifest["config"])
    ]
    if not vs:
        return [], []
    conflicts = [c for c in _param_conflicts([g, *vs]) if c.startswith("lens ")]
    if conflicts:
        return [], [f"Table 6 for {g.label()}: {'; '.join(conflicts)} — rows of different code never share a table"]
    gip = _gold_in_pool(g)
    tables = [_ablation_table(g, vs, resamples, seed, subset) for subset in [None] + ([gip] if gip is not None else [])]
    return [t for t in tables if t], []


def _markdown(
    runs: list[Run],
    groups: list[Group],
    variants: set[int],
    refusals: list[str],
    tables: list[Table],
    images: list[Path],
) -> list[str]:
    """report.md: the runs and their bindings, the refused tables, every table, the plots."""
    md = ["# LENS benchmark report", ""]
    md.append("Runs: " + ", ".join(f"`{r.path}`" for r in runs))
    md.append("")
    md.append("Bindings (a table only ever holds rows of one binding and one configuration):")
    md.append("")
    for g in groups:
        tag = " (ablation variant)" if id(g) in variants else ""
        md.append(f"- **{g.label()}**{tag}: {g.binding_line()}")
    md.append("")
    if refusals:
        md.append("## Refused tables")
        md.append("")
        md += [f"- {r}" for r in refusals]
        md.append("")
    for t in tables:
        md.append(t.markdown())
    if images:
        md.append("## Plots")
        md.append("")
        md += [f"![{p.stem}]({p.name})" for p in images]
        md.append("")
    return md
