"""What the loop's readings did on a benchmark run: LENS (full) against its no-exploration ablation and the other
arms of the same run folders, with what only the agent reports about itself.

    python benchmarks/readings_report.py FULL_RUN NO_EXPLORATION_RUN [--out FILE.md]

Per arm, on the questions every arm answered (paired): EM, F1, Ev.Rec, Ground, cited documents, tokens, oracle
calls and seconds per question; for the LENS arms also readings per question, confirming readings, the share of
requirements certified, **certified-window precision** (a certified requirement's confirmed window lies in a
gold article), **certified-value precision** (the certified value of a bridge question's final requirement is
the gold answer, official normalisation; yes/no answers excluded), stop reasons, and the memory entries the
answer would write (and how many a reading confirmed). Exact McNemar on EM and a paired bootstrap (10,000,
seed 42) of ΔEv.Rec and ΔEM for full LENS against each other arm; LENS EM as a share of the gold-passage arm's.
Gold labels come from the rows (``gold_answer``, ``gold_titles``) and are read only to score.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from harness.bench.metrics import bootstrap_ci, mcnemar_exact, normalize_answer


def _rows(folder: str, ablation: str | None = None) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for line in (Path(folder) / "rows.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        name = r["system"] if r["system"] != "lens" or ablation is None else f"lens ({ablation})"
        out.setdefault(name, {})[r["question_id"]] = r
    return out


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def _agent(rows: list[dict]) -> dict:
    """The agent's own account over ``rows``."""
    reqs, cert_win, cert_val, stops, readings, confirmed, mem, mem_read = [], [], [], {}, [], [], 0, 0
    for r in rows:
        d = r["prediction"].get("details") or {}
        gold = {t.casefold() for t in r.get("gold_titles", [])}
        ev = {e["id"]: e for e in d.get("evidence", [])}
        statuses = d.get("requirements", [])
        final = statuses[-1]["id"] if statuses else None
        for q in statuses:
            reqs.append(q["status"] == "certified")
            if q["status"] != "certified":
                continue
            titles = [ev[e]["title"] for e in q.get("evidence", []) if e in ev and ev[e]["status"] == "confirmed"]
            if titles:
                cert_win.append(any(t.casefold() in gold for t in titles))
            answer = normalize_answer(r["gold_answer"])
            if r["type"] == "bridge" and q["id"] == final and answer not in {"yes", "no"} and q.get("value"):
                cert_val.append(normalize_answer(q["value"]) == answer)
        stop = str(d.get("stop_reason") or "—").split(";")[0]
        stops[stop] = stops.get(stop, 0) + 1
        rd = d.get("readings", [])
        readings.append(len(rd))
        confirmed.append(sum(1 for x in rd if x.get("confirmed")))
        entries = d.get("memory_entries", [])
        mem += len(entries)
        mem_read += sum(1 for e in entries if e.get("verified"))
    return {
        "readings": _mean(readings),
        "confirmed": _mean(confirmed),
        "certified": _mean([float(x) for x in reqs]),
        "requirements": len(reqs),
        "cert_window": (sum(cert_win), len(cert_win)),
        "cert_value": (sum(cert_val), len(cert_val)),
        "stops": stops,
        "memory": (mem, mem_read),
    }


def report(full_dir: str, ablation_dir: str) -> str:
    arms = _rows(full_dir)
    arms.update(_rows(ablation_dir, ablation="no exploration"))
    ids = set.intersection(*(set(v) for v in arms.values()))
    order = sorted(ids, key=lambda i: arms["lens"][i]["position"])
    n = len(order)
    lines = [f"n = {n} questions answered by every arm ({', '.join(f'{k}: {len(v)}' for k, v in arms.items())})", ""]
    lines.append(
        "| arm | EM | F1 | Ev.Rec | Ground | cited docs | tokens/q | oracle calls/q | s/q | readings/q | "
        "confirming/q | certified | certified window in gold | certified value = gold | stops |"
    )
    lines.append(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |"
    )
    memory = {}
    for name, rows_by in arms.items():
        rs = [rows_by[i] for i in order]
        sc = [r["scores"] for r in rs]
        p = [r["prediction"] for r in rs]
        cells = [
            name,
            _pct(_mean([s["em"] for s in sc])),
            _pct(_mean([s["f1"] for s in sc])),
            _pct(_mean([s["ev_rec"] for s in sc if s.get("ev_rec") is not None])),
            _pct(_mean([float(s["grounded"]) for s in sc if s.get("grounded") is not None])),
            f"{statistics.fmean(len({e['path'] for e in x.get('evidence', [])}) for x in p):.2f}",
            f"{statistics.fmean(x['tokens'] for x in p):,.0f}",
            f"{statistics.fmean(x['oracle_calls'] for x in p):.2f}",
            f"{statistics.fmean(x['seconds'] for x in p):.1f}",
        ]
        if name.startswith("lens"):
            a = _agent(rs)
            cw, cv = a["cert_window"], a["cert_value"]
            cells += [
                f"{a['readings']:.2f}",
                f"{a['confirmed']:.2f}",
                f"{_pct(a['certified'])} of {a['requirements']}",
                f"{cw[0]}/{cw[1]}" + (f" ({100 * cw[0] / cw[1]:.0f} %)" if cw[1] else ""),
                f"{cv[0]}/{cv[1]}" + (f" ({100 * cv[0] / cv[1]:.0f} %)" if cv[1] else ""),
                ", ".join(f"{k} {v}" for k, v in sorted(a["stops"].items())),
            ]
            memory[name] = a["memory"]
        else:
            cells += ["—"] * 6
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    full_em = [bool(arms["lens"][i]["scores"]["em"]) for i in order]
    full_ev = [arms["lens"][i]["scores"]["ev_rec"] for i in order]
    for name, rows_by in arms.items():
        if name == "lens":
            continue
        em = [bool(rows_by[i]["scores"]["em"]) for i in order]
        t = mcnemar_exact(full_em, em)
        dem = bootstrap_ci([float(a) - float(b) for a, b in zip(full_em, em)], resamples=10_000, seed=42)
        line = f"- LENS vs {name}: McNemar EM {t.b}:{t.c}, p = {t.p_value:.4f}; ΔEM {100 * dem.mean:+.1f} [{100 * dem.low:+.1f}, {100 * dem.high:+.1f}]"
        ev = [rows_by[i]["scores"]["ev_rec"] for i in order]
        diff = [float(a) - float(b) for a, b in zip(full_ev, ev) if a is not None and b is not None]
        if diff:
            c = bootstrap_ci(diff, resamples=10_000, seed=42)
            line += f"; ΔEv.Rec {100 * c.mean:+.1f} [{100 * c.low:+.1f}, {100 * c.high:+.1f}] pp"
        lines.append(line)
    if "gold-passages" in arms:
        gold = statistics.fmean(arms["gold-passages"][i]["scores"]["em"] for i in order)
        if gold:
            lines.append(f"- LENS EM / gold-passage EM = {statistics.fmean(full_em) / gold:.2f} (gold arm uses labels)")
    for name, (written, read) in memory.items():
        lines.append(f"- {name}: memory entries an answer would write: {written} ({read} read and confirmed)")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("full")
    ap.add_argument("ablation")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    text = report(args.full, args.ablation)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
