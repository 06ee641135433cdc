"""``lens bench compare RUN_A RUN_B``: the same questions asked over two corpora, paired question by question.

Made for format invariance (issue 58): the same G_n asked over D_n written as text and as PDF (``lens bench
snapshot --as pdf``), with the same configuration and code. Two runs of ``lens bench run`` have different bindings
(their corpus checksums differ), so ``lens bench report`` never puts them in one table; this command pairs them
where they may be paired and refuses otherwise:

- the questions file, the stage's question order and the question set must be the same, and so must the
  configuration (``config_hash``: model, budgets, ablation flags, cache off or on) and each compared arm's code
  fingerprint (``params.code``) — a difference is named and nothing is written;
- per system present in both runs, the questions both answered (in the frozen order): EM and Ev.Rec of each run,
  their differences B − A in pp with paired percentile bootstrap intervals, the exact McNemar test on EM, tokens
  and seconds per question, and whether both differences lie within ``--margin`` pp (the point estimates);
- where the two runs' answers differ (normalised as EM normalises them), whether the evidence the answers were
  given was the same text in both (then the format reached the answer only through the prompt's file names and
  places: the model's sensitivity, not the reader's) or not (the prior, the units or the extraction chose or
  read other text), each such question listed.

Writes ``compare.md``, ``compare.csv`` and ``differences.csv`` into ``--out`` (default ``RUN_B/compare``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.bench.datasets import DataError
from harness.bench.metrics import mcnemar_exact, normalize_answer
from harness.bench.report import SYSTEM_LABELS, SYSTEM_ORDER, Run, Table, _paired_difference, load_run
from harness.bench.snapshots import read_manifest, snapshot_format
from harness.files import write_text_atomic

__all__ = ["compare_runs", "run_label"]

_SAME = (
    ("questions_file_sha256", "the questions file"),
    ("question_order_sha256", "the question order"),
    ("question_set", "the question set"),
)


def run_label(run: Run) -> str:
    """The run's corpus and the format of its files (from the snapshot manifest beside the corpus, if any)."""
    b = run.manifest["binding"]
    fmt = "?"
    mpath = (run.manifest.get("snapshot") or {}).get("manifest")
    if mpath and Path(mpath).is_file():
        try:
            fmt = snapshot_format(read_manifest(mpath))
        except DataError:
            pass
    return f"{b['corpus']['name']} ({fmt}, `{b['corpus']['corpus_checksum'][:12]}`)"


def _current(run: Run) -> dict[str, dict[str, dict[str, Any]]]:
    systems = run.manifest.get("systems", {})
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in run.rows:
        if systems.get(r["system"], {}).get("system_hash") == r["system_hash"]:
            out.setdefault(r["system"], {})[r["question_id"]] = r
    return out


def _check_pairable(a: Run, b: Run) -> list[str]:
    problems = []
    ba, bb = a.manifest["binding"], b.manifest["binding"]
    for key, what in _SAME:
        if ba.get(key) != bb.get(key):
            problems.append(f"{what} differs ({key})")
    if ba.get("stage", {}).get("order_sha256") != bb.get("stage", {}).get("order_sha256"):
        problems.append("the stage's order differs (stage.order_sha256)")
    if a.manifest["config_hash"] != b.manifest["config_hash"]:
        ca, cb = a.manifest.get("config") or {}, b.manifest.get("config") or {}
        keys = sorted(
            f"{s}.{k}"
            for s in set(ca) | set(cb)
            for k in set(ca.get(s) or {}) | set(cb.get(s) or {})
            if isinstance(ca.get(s), dict) and isinstance(cb.get(s), dict) and ca[s].get(k) != cb[s].get(k)
        )
        problems.append("the configuration differs" + (f" ({', '.join(keys[:6])})" if keys else ""))
    sa, sb = a.manifest.get("systems", {}), b.manifest.get("systems", {})
    for name in sorted(set(sa) & set(sb)):
        if sa[name].get("params", {}).get("code") != sb[name].get("params", {}).get("code"):
            problems.append(f"{name} ran other code (params.code differs)")
    return problems


_DIFF_HEADERS = ["System", "Question", "Gold", "Answer A", "Answer B", "EM A", "EM B", "Evidence"]


def _evidence_texts(row: dict[str, Any]) -> list[str]:
    return [str(e.get("text", "")) for e in row["prediction"].get("evidence") or []]


def _differences(system: str, a: dict[str, dict], b: dict[str, dict], ids: list[str]) -> list[list[str]]:
    """A row per question whose answers differ: its answers, EM and whether its evidence was the same text."""
    out = []
    for i in ids:
        ra, rb = a[i], b[i]
        ans_a, ans_b = str(ra["prediction"].get("answer") or ""), str(rb["prediction"].get("answer") or "")
        if normalize_answer(ans_a) == normalize_answer(ans_b):
            continue
        same = _evidence_texts(ra) == _evidence_texts(rb)
        out.append(
            [
                SYSTEM_LABELS.get(system, system),
                i,
                str(ra.get("gold_answer", "")),
                ans_a,
                ans_b,
                str(int(bool(ra["scores"]["em"]))),
                str(int(bool(rb["scores"]["em"]))),
                "same" if same else "differs",
            ]
        )
    return out


def _difference_note(system: str, diffs: list[list[str]], n: int) -> str:
    """One line: how many of the system's ``n`` answers differ (``diffs``: its rows of :func:`_differences`), split
    by whether the evidence was the same text, with EM won / lost."""
    parts = []
    for kind in ("same", "differs"):
        rows = [d for d in diffs if d[7] == kind]
        won = sum(d[6] == "1" and d[5] == "0" for d in rows)
        lost = sum(d[5] == "1" and d[6] == "0" for d in rows)
        what = "the same evidence text" if kind == "same" else "other evidence"
        parts.append(f"{len(rows)} with {what} (B right only {won}, A right only {lost})")
    return f"{SYSTEM_LABELS.get(system, system)}: answers differ on {len(diffs)} of {n} questions — " + "; ".join(parts)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def compare_runs(
    run_a: str | os.PathLike[str],
    run_b: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    margin: float = 1.5,
    resamples: int = 10_000,
    seed: int = 42,
) -> Table:
    """Pair two runs question by question (see the module docstring); writes compare.md and compare.csv and returns
    the table. Raises DataError naming what makes them unpairable."""
    a, b = load_run(run_a), load_run(run_b)
    problems = _check_pairable(a, b)
    if problems:
        raise DataError(f"{run_a} and {run_b} cannot be paired: " + "; ".join(problems))
    ra, rb = _current(a), _current(b)
    systems = [s for s in SYSTEM_ORDER if s in ra and s in rb] + sorted(
        s for s in set(ra) & set(rb) if s not in SYSTEM_ORDER
    )
    if not systems:
        raise DataError(f"{run_a} and {run_b} have no system in common with rows")
    rows = []
    diffs: list[list[str]] = []
    notes = []
    for s in systems:
        ids = sorted(set(ra[s]) & set(rb[s]), key=lambda i: ra[s][i]["position"])
        mine = _differences(s, ra[s], rb[s], ids)
        diffs += mine
        notes.append(_difference_note(s, mine, len(ids)))
        xa = [bool(ra[s][i]["scores"]["em"]) for i in ids]
        xb = [bool(rb[s][i]["scores"]["em"]) for i in ids]
        ea = [ra[s][i]["scores"]["ev_rec"] for i in ids]
        eb = [rb[s][i]["scores"]["ev_rec"] for i in ids]
        t = mcnemar_exact(xa, xb)
        em_a, em_b = _mean([float(x) for x in xa]), _mean([float(x) for x in xb])
        ev_a = _mean([float(x) for x in ea if x is not None])
        ev_b = _mean([float(x) for x in eb if x is not None])
        reads = a.manifest["systems"][s].get("reads_corpus", True)
        d_em = None if em_a is None or em_b is None else 100 * (em_b - em_a)
        d_ev = None if not reads or ev_a is None or ev_b is None else 100 * (ev_b - ev_a)
        within = all(abs(d) <= margin for d in (d_em, d_ev) if d is not None) and d_em is not None
        rows.append(
            [
                SYSTEM_LABELS.get(s, s),
                str(len(ids)),
                _pct(em_a),
                _pct(em_b),
                _paired_difference(xb, xa, resamples, seed),
                f"{t.c} / {t.b} (p {t.p_value:.3f})",
                _pct(ev_a) if reads else "—",
                _pct(ev_b) if reads else "—",
                _paired_difference(eb, ea, resamples, seed) if reads else "—",
                f"{_mean([ra[s][i]['prediction']['tokens'] for i in ids]) or 0:,.0f} / "
                f"{_mean([rb[s][i]['prediction']['tokens'] for i in ids]) or 0:,.0f}",
                f"{_mean([ra[s][i]['prediction']['seconds'] for i in ids]) or 0:.1f} / "
                f"{_mean([rb[s][i]['prediction']['seconds'] for i in ids]) or 0:.1f}",
                "yes" if within else "no",
            ]
        )
    la, lb = run_label(a), run_label(b)
    table = Table(
        "compare",
        f"The same questions over A = {la} and B = {lb}",
        f"Runs A `{run_a}` and B `{run_b}`: same questions file, question order and configuration "
        f"(`{a.manifest['config_hash'][:12]}`), same code per arm; paired over the questions both answered. "
        f"Δ = B − A in pp with a 95 % paired percentile bootstrap interval ({resamples:,} resamples, seed {seed}); "
        f"McNemar on EM: questions only B got right / only A got right, exact two-sided p; 'within' = both point "
        f"differences within ±{margin:g} pp.",
        [
            "System",
            "n",
            "EM A",
            "EM B",
            "ΔEM pp [95% CI]",
            "McNemar B-only / A-only",
            "Ev.Rec A",
            "Ev.Rec B",
            "ΔEv.Rec pp [95% CI]",
            "Tokens/q A / B",
            "Seconds/q A / B",
            f"Within ±{margin:g} pp",
        ],
        rows,
        notes,
    )
    listed = Table(
        "differences",
        "Where the answers differ",
        "Each question whose answers differ between A and B (normalised as EM normalises them); Evidence: whether "
        "the evidence given to the answer was the same text in both runs.",
        _DIFF_HEADERS,
        diffs,
    )
    folder = Path(out) if out else Path(run_b) / "compare"
    folder.mkdir(parents=True, exist_ok=True)
    table.write_csv(folder)
    listed.write_csv(folder)
    write_text_atomic(
        folder / "compare.md",
        "# Paired comparison of two runs\n\n" + table.markdown() + "\n" + listed.markdown() + "\n",
    )
    return table
