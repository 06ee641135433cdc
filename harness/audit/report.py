"""``lens audit report``: tables and plots from a run that passes the contract — and nothing from one that fails.

Headline results use label-free streams only (rows with ``uses_gold = false``); the gold-overlap stress stream
gets its own table. Every contrast is paired within an anchor, averaged per query id and bootstrapped over
query clusters (:class:`~harness.audit.metrics.Bootstrap`). Written under ``RUN_DIR/report/``:

- ``report.md`` — all tables below in markdown, with the run's bindings;
- ``tables/hg.csv`` — paper Table 5 shape: HG (Asset Recall@K, points) per domain × stream × retriever × memory;
- ``tables/utility.csv`` — S, P, F, ΔPIT, HG, MHF with intervals, ``S<P<F``, and the verdict (helps / harms /
  inconclusive, gated by the contract);
- ``tables/cache_ranges.csv`` — paper Table 6 shape: ranges of P − S and F − P per domain for the cache;
- ``tables/audit.csv`` — max PIT TVR, Future's future-slot share, slot fill, Naive = Future max difference;
- ``tables/cutoffs.csv`` — HG at every cutoff, by asset type, complete-product success and ``rank80``;
- ``tables/dose.csv`` + ``plots/dose-*.png`` — the Future-h dose curve;
- ``tables/anchor_position.csv`` + ``plots/anchor-*.png`` — HG and future-slot share by anchor position;
- ``tables/stress.csv`` — the same contrasts on ``uses_gold = true`` streams (excluded from the headline);
- ``summary.json`` and ``manifest.json`` (sha256 of the run files read and of every file written).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from harness.audit.contract import ContractFailed, check_run
from harness.audit.manifest import file_record, load_manifest, write_manifest
from harness.audit.metrics import Bootstrap, Estimate, contrast_set, verdict
from harness.audit.rows import RowTable, read_rows
from harness.files import atomic_write, atomic_write_json

__all__ = ["build_report", "cell_contrasts"]

_PCT = 100.0


def _csv_bytes(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow(
            [
                "" if (isinstance(x, float) and math.isnan(x)) else (round(x, 6) if isinstance(x, float) else x)
                for x in r
            ]
        )
    return buf.getvalue().encode("utf-8")


def _md_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    for r in rows:
        lines.append("| " + " | ".join(str(x) for x in r) + " |")
    return "\n".join(lines)


class _Cell:
    """Rows of one (workload, memory, retriever, stream kind, uses_gold) cell, paired by (stream, anchor)."""

    def __init__(self, t: RowTable, idx: np.ndarray) -> None:
        self.t = t
        self.idx = idx
        keys = np.asarray([f"{s}\x1f{a}" for s, a in zip(t["stream"][idx], t["anchor"][idx])], dtype=object)
        self.pairs, inv = np.unique(keys, return_inverse=True)
        self.view = t["view"][idx].astype(str)
        self.views = sorted(set(self.view))
        self._row = {v: np.full(self.pairs.size, -1, dtype=np.int64) for v in self.views}
        for k, (v, r) in enumerate(zip(self.view, idx)):
            self._row[v][inv[k]] = r
        first = self._row["pit"] if "pit" in self._row else next(iter(self._row.values()))
        self.query = t["query_id"][first].astype(str)
        self.group = t["anchor_group"][first].astype(np.float64)

    def values(self, field: str, view: str, scale: float = 1.0) -> np.ndarray:
        return self.t[field][self._row[view]].astype(np.float64) * scale

    def by_condition(self, field: str, scale: float, mask: np.ndarray | None = None) -> dict[str, np.ndarray]:
        sel = slice(None) if mask is None else mask
        return {v: self.values(field, v, scale)[sel] for v in self.views if v != "naive"}


def cell_contrasts(
    t: RowTable, *, field: str, resamples: int, seed: int, uses_gold: bool = False
) -> list[dict[str, Any]]:
    """Contrasts (HG, ΔPIT, MHF, HG_h) of ``field`` for every (workload, memory, retriever, stream kind)."""
    out = []
    for key, idx in _cells(t, uses_gold):
        cell = _Cell(t, idx)
        scale = _PCT if field != "rank80" else 1.0
        vals = cell.by_condition(field, scale)
        est = contrast_set(vals, cell.query, resamples=resamples, seed=seed)
        means = {v: float(np.nanmean(x)) for v, x in vals.items()}
        out.append({"key": key, "cell": cell, "est": est, "means": means})
    return out


def _cells(t: RowTable, uses_gold: bool) -> list[tuple[tuple[str, str, str, str], np.ndarray]]:
    ug = t["uses_gold"].astype(bool)
    groups: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)
    for r in np.flatnonzero(ug == uses_gold):
        groups[(str(t["workload"][r]), str(t["memory"][r]), str(t["stream_kind"][r]), str(t["retriever"][r]))].append(
            int(r)
        )
    return [(k, np.asarray(v, dtype=np.int64)) for k, v in sorted(groups.items())]


def _fmt(e: Estimate, digits: int = 2) -> str:
    return e.fmt(scale=1.0, digits=digits)


def _pct(e: Estimate) -> str:
    if not math.isfinite(e.mean):
        return "n/a"
    return f"{e.mean * 100:+.1f} % [{e.lo * 100:.1f}, {e.hi * 100:.1f}]"


def _range(vals: list[float]) -> str:
    vals = [v for v in vals if math.isfinite(v)]
    if not vals:
        return "n/a"
    return f"{min(vals):+.2f}…{max(vals):+.2f}" if len(vals) > 1 else f"{vals[0]:+.2f}"


@dataclass
class _Table:
    """One table of the report: ``tables/<name>.csv`` and its section(s) of ``report.md`` (none: no section)."""

    name: str
    header: list[str]
    rows: list[list[Any]]
    md: list[str] = field(default_factory=list)


@dataclass
class _Inputs:
    """What every table builder reads: the rows, the headline contrasts per cell and the bootstrap settings."""

    t: RowTable
    main: list[dict[str, Any]]
    headline: str
    resamples: int
    seed: int
    summary: dict[str, Any]


def _section(title: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    return ["", f"## {title}", "", _md_table(header, rows)]


def _ci(mean: float, lo: float, hi: float) -> str:
    return f"{mean:+.2f} [{lo:.2f}, {hi:.2f}]"


_KEY = ["workload", "memory", "stream", "retriever"]
_MD_KEY = ["Domain", "Memory", "Stream", "Retriever"]


def _hg_table(x: _Inputs) -> _Table:
    """Paper Table 5 shape: HG per cell, also without near-duplicate neighbours."""
    rows, md = [], []
    for c in x.main:
        wl, mem, sk, ret = c["key"]
        hg = c["est"]["HG"]
        nd, kept = _hg_without_near_duplicates(c["cell"], x.headline, x.resamples, x.seed)
        rows.append([wl, mem, sk, ret, hg.mean, hg.lo, hg.hi, hg.n_clusters, hg.n_pairs, nd.mean, nd.lo, nd.hi, kept])
        retriever = ret.upper() if ret == "bm25" else ret.capitalize()
        md.append([wl, mem, sk.capitalize(), retriever, _fmt(hg), f"{_fmt(nd)} ({kept:.1%} kept)"])
    header = _KEY + ["hg", "lo", "hi", "query_clusters", "pairs"]
    header += ["hg_no_near_dup", "lo_no_near_dup", "hi_no_near_dup", "kept_share_no_near_dup"]
    md_header = _MD_KEY + ["HG [95% CI]", f"HG without near-duplicate neighbours (sim ≥ {NEAR_DUP})"]
    return _Table("hg", header, rows, _section("Hindsight Gain (paper Table 5 shape)", md_header, md))


def _utility_table(x: _Inputs) -> _Table:
    """S, P, F, ΔPIT, HG, MHF per cell, ``S<P<F`` and the verdict; fills ``summary["cells"]``."""
    rows, md_util, md_verdict = [], [], []
    for c in x.main:
        wl, mem, sk, ret = c["key"]
        e, m = c["est"], c["means"]
        spf = m["stateless"] < m["pit"] < m["future"]
        spf_sig = spf and e["dPIT"].lo > 0 and e["HG"].lo > 0
        v = verdict(e["dPIT"], contract_ok=True)
        spread = [getattr(e[k], a) for k in ("dPIT", "HG", "MHF") for a in ("mean", "lo", "hi")]
        rows.append([wl, mem, sk, ret, m["stateless"], m["pit"], m["future"], *spread, spf, spf_sig, v])
        means = [f"{m['stateless']:.2f}", f"{m['pit']:.2f}", f"{m['future']:.2f}"]
        md_util.append(
            [wl, mem, sk, ret, *means, _fmt(e["dPIT"]), _fmt(e["HG"]), _pct(e["MHF"]), "yes" if spf else "no"]
        )
        md_verdict.append([wl, mem, sk, ret, "pass", _fmt(e["dPIT"]), v])
        x.summary["cells"].append(
            {
                "workload": wl,
                "memory": mem,
                "stream": sk,
                "retriever": ret,
                "S": m["stateless"],
                "P": m["pit"],
                "F": m["future"],
                **{name: {"mean": est.mean, "lo": est.lo, "hi": est.hi} for name, est in e.items()},
                "S<P<F": spf,
                "S<P<F_intervals": spf_sig,
                "verdict": v,
                "pairs": e["HG"].n_pairs,
                "clusters": e["HG"].n_clusters,
            }
        )
    header = _KEY + ["S", "P", "F", "dpit", "dpit_lo", "dpit_hi", "hg", "hg_lo", "hg_hi", "mhf", "mhf_lo", "mhf_hi"]
    header += ["S<P<F", "S<P<F_intervals_exclude_0", "verdict"]
    md = _section(
        "Utility: S, P, F, ΔPIT = P − S, HG = F − P, MHF = HG / |ΔPIT|",
        _MD_KEY + ["S", "P", "F", "ΔPIT [CI]", "HG [CI]", "MHF [CI] (%)", "S<P<F"],
        md_util,
    )
    md += _section(
        "Verdict (gated by the contract; paper Table 7)",
        _MD_KEY + ["Contract", "ΔPIT [CI]", "Verdict"],
        md_verdict,
    )
    return _Table("utility", header, rows, md)


def _cache_table(x: _Inputs) -> _Table:
    """Paper Table 6 shape: ranges of P − S and F − P per domain for the positive-feedback cache."""
    rows = []
    by_wl: dict[str, list[dict]] = defaultdict(list)
    for c in x.main:
        if c["key"][1] == "cache":
            by_wl[c["key"][0]].append(c)
    for wl, cs in sorted(by_wl.items()):
        dp = [c["est"]["dPIT"].mean for c in cs]
        hg = [c["est"]["HG"].mean for c in cs]
        excl = all(c["est"]["dPIT"].excludes_zero() and c["est"]["HG"].excludes_zero() for c in cs)
        rows.append([wl, _range(dp), _range(hg), "yes" if excl else "no", len(cs)])
    md = []
    if rows:
        md = _section(
            "Positive-feedback cache (label-based stress test; paper Table 6 shape)",
            ["Domain", "PIT utility P − S", "HG F − P", "all intervals exclude 0", "cells"],
            rows,
        )
    header = ["workload", "pit_utility_P-S", "hg_F-P", "all_intervals_exclude_0", "cells"]
    return _Table("cache_ranges", header, rows, md)


def _naive_future_diff(t: RowTable, cell: _Cell) -> float:
    """The largest |Future − Naive| over every metric and TVR (NaN on both sides counts as equal)."""
    diff = 0.0
    for f in t.metric_fields() + ["tvr"]:
        a, b = cell.values(f, "future"), cell.values(f, "naive")
        d = np.abs(a - b)[~(np.isnan(a) & np.isnan(b))]
        if d.size:
            diff = max(diff, math.inf if np.isnan(d).any() else float(d.max()))
    return diff


def _audit_table(x: _Inputs) -> _Table:
    """TVR, Future's future-slot share, slot fill and Naive = Future per cell; fills ``summary["audit"]``."""
    t, rows = x.t, []
    for c in x.main:
        cell: _Cell = c["cell"]
        same_sel = bool((t.selected[cell._row["future"]] == t.selected[cell._row["naive"]]).all())
        rows.append(
            [
                *c["key"],
                float(cell.values("tvr", "pit").max()),
                float(cell.values("tvr", "future").mean() * _PCT),
                float(cell.values("n_selected", "pit").mean()),
                float(cell.values("n_selected", "future").mean()),
                _naive_future_diff(t, cell),
                same_sel,
                int(cell.pairs.size),
            ]
        )
    x.summary["audit"] = {
        "max_pit_tvr": max((r[4] for r in rows), default=0.0),
        "future_slot_share_pct": [
            min((r[5] for r in rows), default=math.nan),
            max((r[5] for r in rows), default=math.nan),
        ],
        "naive_future_max_abs_diff": max((r[8] for r in rows), default=0.0),
        "naive_future_same_entries": all(r[9] for r in rows),
        "rows": int(t.n),
    }
    header = _KEY + ["max_pit_tvr", "future_slot_share_pct", "pit_fill", "future_fill"]
    header += ["naive_future_max_abs_diff", "naive_future_same_entries", "pairs"]
    md_header = _MD_KEY + ["max PIT TVR", "Future future-slot share %", "PIT fill", "Future fill"]
    md_header += ["Naive=Future max |Δ|", "same entries", "pairs"]
    md = [[*r[:4], f"{r[4]:.3f}", f"{r[5]:.1f}", f"{r[6]:.1f}", f"{r[7]:.1f}", f"{r[8]:g}", r[9], r[10]] for r in rows]
    return _Table("audit", header, rows, _section("Audit", md_header, md))


def _cutoffs_table(x: _Inputs) -> _Table:
    """HG and ΔPIT at every other cutoff, by asset type, complete-product success and rank80."""
    rows = []
    for f in [f for f in x.t.metric_fields() if f != x.headline]:
        for c in cell_contrasts(x.t, field=f, resamples=x.resamples, seed=x.seed):
            hg, dpit = c["est"]["HG"], c["est"]["dPIT"]
            rows.append([*c["key"], f, hg.mean, hg.lo, hg.hi, dpit.mean, dpit.lo, dpit.hi])
    header = _KEY + ["metric", "hg", "hg_lo", "hg_hi", "dpit", "dpit_lo", "dpit_hi"]
    md = [[*r[:5], _ci(*r[5:8]), _ci(*r[8:11])] for r in rows]
    title = "Other cutoffs and product metrics (HG; rank80 in ranks, lower is better)"
    return _Table("cutoffs", header, rows, _section(title, _MD_KEY + ["metric", "HG [CI]", "ΔPIT [CI]"], md))


def _dose_table(x: _Inputs) -> _Table:
    """The Future-h dose curve: HG_h = F_h − P per horizon, and its share of the full HG."""
    rows = []
    for c in x.main:
        e = c["est"]
        full = e["HG"]
        for h in sorted(int(k[len("HG_h") :]) for k in e if k.startswith("HG_h")):
            hg_h = e[f"HG_h{h}"]
            # The share of the full HG is only meaningful when the full HG is distinguishable from zero.
            share = hg_h.mean / full.mean if full.excludes_zero() else math.nan
            rows.append([*c["key"], str(h), hg_h.mean, hg_h.lo, hg_h.hi, share])
        rows.append([*c["key"], "future", full.mean, full.lo, full.hi, 1.0 if full.excludes_zero() else math.nan])
    header = _KEY + ["horizon", "hg", "lo", "hi", "share_of_full_hg"]
    md = [[*r[:5], _ci(*r[5:8]), f"{r[8]:.2f}" if math.isfinite(r[8]) else "n/a"] for r in rows]
    md_header = _MD_KEY + ["h", "HG_h [CI]", "share of full HG (when F − P excludes 0)"]
    return _Table("dose", header, rows, _section("Future-h dose curve (HG_h = F_h − P, points)", md_header, md))


def _position_table(x: _Inputs) -> _Table:
    """HG, future-slot share, fill and top similarity by anchor position."""
    rows = []
    for c in x.main:
        cell = c["cell"]
        for g in sorted(set(cell.group.tolist())):
            mask = cell.group == g
            bs = Bootstrap(cell.query[mask], resamples=x.resamples, seed=x.seed)
            P, F = cell.values(x.headline, "pit", _PCT)[mask], cell.values(x.headline, "future", _PCT)[mask]
            e = bs.estimate(F - P)
            rows.append(
                [
                    *c["key"],
                    g,
                    e.mean,
                    e.lo,
                    e.hi,
                    float(cell.values("tvr", "future")[mask].mean() * _PCT),
                    float(cell.values("n_selected", "pit")[mask].mean()),
                    float(cell.values("n_selected", "future")[mask].mean()),
                    _top_sim(x.t, cell, "pit", mask),
                    _top_sim(x.t, cell, "future", mask),
                    int(mask.sum()),
                ]
            )
    header = _KEY + ["anchor_group", "hg", "lo", "hi", "future_slot_share_pct", "pit_fill", "future_fill"]
    header += ["pit_top_sim", "future_top_sim", "pairs"]
    md_header = _MD_KEY + ["anchor", "HG [CI]", "future-slot %", "PIT fill", "Future fill", "PIT top sim"]
    md_header += ["Future top sim"]
    md = [
        [
            *r[:4],
            f"{r[4]:.0%}",
            _ci(*r[5:8]),
            f"{r[8]:.1f}",
            f"{r[9]:.1f}",
            f"{r[10]:.1f}",
            f"{r[11]:.3f}",
            f"{r[12]:.3f}",
        ]
        for r in rows
    ]
    return _Table("anchor_position", header, rows, _section("HG by anchor position", md_header, md))


def _stress_table(x: _Inputs) -> _Table:
    """The same contrasts on the ``uses_gold = true`` streams, excluded from every table above."""
    rows = []
    for c in cell_contrasts(x.t, field=x.headline, resamples=x.resamples, seed=x.seed, uses_gold=True):
        hg, dpit = c["est"]["HG"], c["est"]["dPIT"]
        rows.append([*c["key"], hg.mean, hg.lo, hg.hi, dpit.mean, dpit.lo, dpit.hi])
    md = []
    if rows:
        title = "Stress streams (uses_gold=true; excluded from headline results)"
        md = _section(title, _MD_KEY + ["HG [CI]", "ΔPIT [CI]"], [[*r[:4], _ci(*r[4:7]), _ci(*r[7:10])] for r in rows])
    return _Table("stress", _KEY + ["hg", "hg_lo", "hg_hi", "dpit", "dpit_lo", "dpit_hi"], rows, md)


# The report: its tables in the order they are computed (the audit table reads nothing the others write) and the
# order of their sections in report.md.
_TABLES = (
    _hg_table,
    _utility_table,
    _cache_table,
    _audit_table,
    _cutoffs_table,
    _dose_table,
    _position_table,
    _stress_table,
)
_SECTIONS = ("hg", "utility", "cache_ranges", "audit", "dose", "anchor_position", "cutoffs", "stress")


def _md_head(run_dir: Path, cfg: dict[str, Any], manifest: dict[str, Any], x: _Inputs) -> list[str]:
    """The title, the run's contract and bootstrap settings, and one line per workload binding."""
    audit = x.summary["audit"]
    md = [f"# PIT audit report — {cfg.get('name', 'audit')}", ""]
    md.append(
        f"Run `{run_dir}`; config hash `{manifest['config_hash'][:16]}`; {x.t.n} rows; contract **pass** "
        f"(max PIT TVR {audit['max_pit_tvr']:.3f}; Naive = Future max |Δ| {audit['naive_future_max_abs_diff']:g}). "
        f"Headline metric {x.headline} (points); paired within anchor, query-cluster bootstrap with {x.resamples} "
        f"resamples (95 % percentile intervals). Streams with `uses_gold=true` are excluded from every table but the "
        "stress table."
    )
    md.append("")
    for wl, b in manifest["bindings"].items():
        s = b["summary"]
        md.append(
            f"- **{wl}**: corpus `{b['corpus_hash'][:16]}`, queries `{b['queries_hash'][:16]}`, {s['assets']} assets, "
            f"{s['queries']} queries, {s['gold_per_query_mean']:.1f} gold per query, "
            f"{s['queries_sharing_a_gold_asset']} share a gold asset; "
            + ", ".join(f"{r} index `{v['index_hash'][:16]}`" for r, v in b["retrievers"].items())
        )
    return md


def build_report(run_dir: str | Path, *, resamples: int | None = None, seed: int | None = None) -> Path:
    """Write ``RUN_DIR/report/``; raises :class:`ContractFailed` (and writes nothing) for an invalid run."""
    run_dir = Path(run_dir)
    violations = check_run(run_dir)
    if violations:
        raise ContractFailed(run_dir, violations)
    manifest = load_manifest(run_dir)
    cfg_file = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    cfg = cfg_file["config"]
    resamples = resamples or cfg["metrics"]["bootstrap_resamples"]
    seed = cfg["metrics"]["bootstrap_seed"] if seed is None else seed
    headline = cfg_file.get("headline") or f"recall@{cfg['metrics']['headline_k']}"  # LENS full mode: "ev_rec"
    t = read_rows(run_dir / "rows.jsonl")
    rep = run_dir / "report"
    (rep / "tables").mkdir(parents=True, exist_ok=True)
    (rep / "plots").mkdir(parents=True, exist_ok=True)
    main = cell_contrasts(t, field=headline, resamples=resamples, seed=seed)
    x = _Inputs(t, main, headline, resamples, seed, {"headline": headline, "resamples": resamples, "cells": []})
    tables = {table.name: table for table in (build(x) for build in _TABLES)}
    written = [atomic_write(rep / f"tables/{tb.name}.csv", _csv_bytes(tb.header, tb.rows)) for tb in tables.values()]
    written.extend(_plots(rep / "plots", tables["dose"].rows, tables["anchor_position"].rows))
    md = _md_head(run_dir, cfg, manifest, x) + [line for name in _SECTIONS for line in tables[name].md]
    md += ["", "Plots: " + ", ".join(f"`{p.relative_to(rep)}`" for p in written if p.suffix == ".png"), ""]
    written.append(atomic_write(rep / "report.md", "\n".join(md).encode("utf-8")))
    written.append(atomic_write_json(rep / "summary.json", x.summary))
    write_manifest(
        rep,
        {
            "kind": "audit-report",
            "run": str(run_dir),
            "config_hash": manifest["config_hash"],
            "inputs": [file_record(run_dir / n, run_dir) for n in ("rows.jsonl", "manifest.json", "config.json")],
            "resamples": resamples,
            "seed": seed,
        },
        written,
    )
    return rep


NEAR_DUP = 0.99


def _hg_without_near_duplicates(cell: _Cell, field: str, resamples: int, seed: int) -> tuple[Estimate, float]:
    """HG after dropping anchors where PIT or Future selected a neighbour with similarity >= NEAR_DUP (paper §6.5)."""
    top_p = np.nan_to_num(cell.values("top_sim", "pit"), nan=-1.0)
    top_f = np.nan_to_num(cell.values("top_sim", "future"), nan=-1.0)
    keep = (top_p < NEAR_DUP) & (top_f < NEAR_DUP)
    if not keep.any():
        return Estimate(math.nan, math.nan, math.nan, 0, 0), 0.0
    d = cell.values(field, "future", _PCT)[keep] - cell.values(field, "pit", _PCT)[keep]
    return Bootstrap(cell.query[keep], resamples=resamples, seed=seed).estimate(d), float(keep.mean())


def _top_sim(t: RowTable, cell: _Cell, view: str, mask: np.ndarray) -> float:
    tops = cell.values("top_sim", view)[mask]
    return float(np.nanmean(tops)) if np.isfinite(tops).any() else math.nan


def _plots(folder: Path, dose_rows: list[list], pos_rows: list[list]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: list[Path] = []
    for kind, rows in (("dose", dose_rows), ("anchor", pos_rows)):
        by_fig: dict[tuple[str, str], list[list]] = defaultdict(list)
        for r in rows:
            by_fig[(r[0], r[1])].append(r)
        for (wl, mem), rs in sorted(by_fig.items()):
            fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
            series: dict[tuple[str, str], list[list]] = defaultdict(list)
            for r in rs:
                series[(r[2], r[3])].append(r)
            n_series = len(series)
            for k, ((sk, ret), pts) in enumerate(sorted(series.items())):
                labels = [p[4] for p in pts] if kind == "dose" else [f"{p[4]:.0%}" for p in pts]
                ticks = np.arange(len(pts))
                xs = ticks + (k - (n_series - 1) / 2) * 0.06  # a small offset keeps overlapping intervals readable
                y = np.asarray([p[5] for p in pts])
                lo = np.asarray([p[6] for p in pts])
                hi = np.asarray([p[7] for p in pts])
                ax.errorbar(xs, y, yerr=[y - lo, hi - y], marker="o", capsize=3, label=f"{sk} / {ret}")
                ax.set_xticks(ticks, labels)
            ax.axhline(0, color="grey", linewidth=0.8)
            ax.set_xlabel(
                "future horizon h (events after the anchor)" if kind == "dose" else "anchor position in the stream"
            )
            ax.set_ylabel("HG (Asset Recall points, F_h − P)" if kind == "dose" else "HG (Asset Recall points, F − P)")
            ax.set_title(
                f"{wl} — {mem} memory: " + ("Future-h dose curve" if kind == "dose" else "HG by anchor position")
            )
            ax.legend(fontsize=8)
            fig.tight_layout()
            safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in f"{kind}-{wl}-{mem}")
            buf = io.BytesIO()
            fig.savefig(buf, format="png")
            plt.close(fig)
            out.append(atomic_write(folder / f"{safe}.png", buf.getvalue()))
    return out
