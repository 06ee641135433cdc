"""Handlers of ``lens audit run | check | report`` (imported only when the command runs)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from harness.audit.config import LensAuditConfig, load_audit_config
from harness.audit.contract import ContractFailed, check_run, violations_json
from harness.audit.lens_pipeline import run_lens_audit
from harness.audit.pipeline import run_audit
from harness.audit.report import build_report
from lens import LensError

__all__ = ["run", "check", "report"]


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the design of ``--config`` into ``--out``; exit 0 with a report, non-zero when the contract fails."""
    config = load_audit_config(args.config)
    paths = {
        "run": getattr(args, "lens_run", None),
        "snapshot": getattr(args, "snapshot", None),
        "questions": getattr(args, "questions", None),
        "workload": getattr(args, "workload", None),
    }
    if isinstance(config, LensAuditConfig):
        config, audit = config.with_paths(**paths), run_lens_audit
    else:
        audit = run_audit
        given = [f"--{'lens-run' if k == 'run' else k}" for k, v in paths.items() if v]
        if given:
            _err(f'lens audit: {", ".join(given)} only apply to a lens-memory config (kind = "lens-memory")')
            return 2
    out = Path(args.out)
    before = set(os.listdir(out)) if out.is_dir() else None  # what was there already is never touched
    try:
        result = audit(
            config,
            args.out,
            root=args.data_root,
            cache_dir=args.cache,
            progress=None if args.quiet else (lambda m: _err(f"lens audit: {m}")),
        )
    except OSError as exc:  # disk full, a folder that cannot be written: one line, and no half run left behind
        if isinstance(exc, LensError):
            raise
        _remove_new(out, before)
        where = f": {exc.filename}" if exc.filename else ""
        _err(f"lens: error: cannot write the audit run{where}: {exc.strerror or exc}; nothing of it was kept in {out}")
        return 2
    except ContractFailed as exc:
        for v in exc.violations:
            _err(f"violation {v}")
        _err(f"lens audit: {exc}")
        return 1
    if args.json:
        print(
            json.dumps(
                {
                    "run_dir": str(result.run_dir),
                    "rows": result.rows,
                    "report": str(result.report_dir),
                    "timings": result.timings,
                },
                indent=2,
            )
        )
    else:
        print(f"{result.rows} rows, contract pass; report: {result.report_dir / 'report.md'}")
    return 0


def _remove_new(out: Path, before: set[str] | None) -> None:
    """Remove what this run created in ``out`` (the folder itself if it did not exist before)."""
    if not out.exists():
        return
    if before is None:
        shutil.rmtree(out, ignore_errors=True)
        return
    for name in set(os.listdir(out)) - before:
        target = out / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target, ignore_errors=True)
        else:
            try:
                target.unlink()
            except OSError:
                pass


def check(args: argparse.Namespace) -> int:
    """Exit 0 when RUN_DIR passes the replay contract; 1 naming each violation otherwise."""
    violations = check_run(Path(args.run_dir), args.data_root)
    if args.json:
        print(violations_json(violations))
    else:
        for v in violations:
            print(f"violation {v}")
        print(f"{args.run_dir}: contract {'pass' if not violations else 'FAIL'} ({len(violations)} violations)")
    return 0 if not violations else 1


def report(args: argparse.Namespace) -> int:
    """(Re)build RUN_DIR/report; refuses (exit 1) for a run that fails the contract."""
    try:
        rep = build_report(Path(args.run_dir), resamples=args.resamples, seed=args.seed)
    except ContractFailed as exc:
        for v in exc.violations:
            _err(f"violation {v}")
        _err(f"lens audit: {exc}")
        return 1
    print(rep / "report.md")
    return 0
