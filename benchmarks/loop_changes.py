"""Full LENS against its no-exploration ablation, paired question by question (issue 59): EM, Ev.Rec and tokens of
each, the differences with paired bootstrap intervals, exact McNemar on EM, and for every question whose answer
differs, which stage changed it.

    python benchmarks/loop_changes.py FULL_RUN ABLATION_RUN [--out report.md]

Both are `lens bench run` folders (rows.jsonl) of the same questions. A differing answer is put down to, in
this order: **comparison in code** (the full arm computed a comparison from the values its readings copied),
**cue fill** (a bridge fact's cues were filled from a reading — its value or the names in its sentence — and the
evidence differs), **window choice** (the readings changed which documents E* holds), **synthesis** (the same
documents, answered differently: the sentences the readings named are put first). A reading's copied value is
no longer the answer unless trusted (`loop.min_value_precision`); a row where the answer still equals a value a
reading copied is counted as **reading value**.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.bench.metrics import bootstrap_ci, mcnemar_exact, normalize_answer


def rows(folder: Path) -> dict[str, dict]:
    out = {}
    for line in (folder / "rows.jsonl").open(encoding="utf-8"):
        r = json.loads(line)
        if r.get("system") == "lens" and not r["prediction"].get("error"):
            out[r["question_id"]] = r
    return out


def cause(full: dict, abl: dict) -> str:
    """Which stage of the full arm made its answer differ from the ablation's (module docstring)."""
    d = full["prediction"]["details"]
    if any(s.get("stage") == "synthesis" and s.get("in_code") for s in d.get("stages", [])):
        return "comparison in code"
    answer = normalize_answer(full["prediction"]["answer"] or "")
    if answer and any(normalize_answer(r.get("value") or "") == answer for r in d.get("readings", [])):
        return "reading value"
    cited = [e.get("title") or e.get("path") for e in d.get("evidence", [])]
    cited_abl = [e.get("title") or e.get("path") for e in abl["prediction"]["details"].get("evidence", [])]
    if set(cited) != set(cited_abl):
        bridged = any(r.get("depends_on") for r in d.get("decomposition", {}).get("requirements", [])) and any(
            r.get("value") for r in d.get("requirements", [])
        )
        return "cue fill" if bridged else "window choice"
    return "synthesis"


def compare(full_dir: Path, abl_dir: Path) -> str:
    full, abl = rows(full_dir), rows(abl_dir)
    ids = sorted(set(full) & set(abl), key=lambda i: full[i]["position"])
    n = len(ids)
    em_f = {i: bool(full[i]["scores"]["em"]) for i in ids}
    em_a = {i: bool(abl[i]["scores"]["em"]) for i in ids}
    ev_f = [full[i]["scores"]["ev_rec"] for i in ids]
    ev_a = [abl[i]["scores"]["ev_rec"] for i in ids]
    tok_f = sum(full[i]["prediction"]["tokens"] for i in ids) / max(n, 1)
    tok_a = sum(abl[i]["prediction"]["tokens"] for i in ids) / max(n, 1)
    m = mcnemar_exact(em_f, em_a)
    d_em = [100 * (em_f[i] - em_a[i]) for i in ids]
    d_ev = [100 * (f - a) for f, a in zip(ev_f, ev_a)]
    ci_em, ci_ev = bootstrap_ci(d_em), bootstrap_ci(d_ev)
    lines = [
        f"n = {n} paired questions ({full_dir.name} vs {abl_dir.name})",
        "",
        "| arm | EM | Ev.Rec | tokens/q |",
        "| --- | ---: | ---: | ---: |",
        f"| full | {100 * sum(em_f.values()) / n:.1f} | {100 * sum(ev_f) / n:.1f} | {tok_f:,.0f} |",
        f"| ablation | {100 * sum(em_a.values()) / n:.1f} | {100 * sum(ev_a) / n:.1f} | {tok_a:,.0f} |",
        "",
        f"ΔEM {sum(d_em) / n:+.1f} pp [{ci_em.low:+.1f}, {ci_em.high:+.1f}], McNemar {m.b}:{m.c} (full only : ablation "
        f"only), p = {m.p_value:.3f}; ΔEv.Rec {sum(d_ev) / n:+.2f} pp [{ci_ev.low:+.2f}, {ci_ev.high:+.2f}]; tokens "
        f"{tok_f / max(tok_a, 1):.2f}× the ablation's",
        "",
        "| question | type | full | ablation | gold | full right | cause |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    tally: dict[str, list[int]] = {}
    for i in ids:
        a_f, a_a = full[i]["prediction"]["answer"] or "", abl[i]["prediction"]["answer"] or ""
        if normalize_answer(a_f) == normalize_answer(a_a):
            continue
        c = cause(full[i], abl[i])
        won = em_f[i] and not em_a[i]
        lost = em_a[i] and not em_f[i]
        tally.setdefault(c, [0, 0, 0])[0 if won else 1 if lost else 2] += 1
        mark = "won" if won else "lost" if lost else "—"
        lines.append(f"| {i} | {full[i].get('type')} | {a_f} | {a_a} | {full[i]['gold_answer']} | {mark} | {c} |")
    lines += ["", "| cause | won | lost | neither right |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {c} | {w} | {lo} | {ne} |" for c, (w, lo, ne) in sorted(tally.items())]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("full")
    ap.add_argument("ablation")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    for folder in (args.full, args.ablation):
        if not (Path(folder) / "rows.jsonl").is_file():
            raise SystemExit(f"loop_changes: {folder}: no rows.jsonl (a lens bench run folder)")
    text = compare(Path(args.full), Path(args.ablation))
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
