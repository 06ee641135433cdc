"""Point-in-time (PIT) audit of retrieval memory: paired Stateless / PIT / Future-h / Future / Naive replay.

Module map (one concept of the PIT paper each):

- :mod:`~harness.workloads` (shared with ``lens bench stream``) — typed assets, queries, gold products; the BEIR
  loader; :mod:`~harness.audit.inputs` — the HotpotQA loader and the workload a config names
- :mod:`~harness.audit.baselists` — base top-``L`` lists and query vectors, shared by every condition
- :mod:`~harness.streams` (shared with ``lens bench stream``) — random, semantic-burst, natural and (stress) gold-overlap streams
- :mod:`~harness.audit.events` — the append-only event log
- :mod:`~harness.audit.views` — memory views as eligibility predicates; the Naive full-stream memory
- :mod:`~harness.audit.memories` — trace memory, positive-feedback cache, the rule combining them with the base
- :mod:`~harness.audit.replay` — the vectorised paired replay
- :mod:`~harness.audit.metrics` — recall, product metrics, TVR, query-cluster bootstrap, verdict
- :mod:`~harness.audit.contract`, :mod:`~harness.audit.rescore` — the replay contract checker; every row's metrics
  recomputed from its selected positions and the labels
- :mod:`~harness.audit.rows`, :mod:`~harness.audit.manifest` — row files and sha256 manifests
- :mod:`~harness.audit.report` — tables (paper Tables 5–7 shapes) and plots
- :mod:`~harness.audit.config`, :mod:`~harness.audit.pipeline` — configs and ``lens audit run``
- :mod:`~harness.audit.lens_events` — LENS warm-reuse memory events from a ``lens bench run`` (label-free)
- :mod:`~harness.audit.lens_memory` — LENS memory through the agent's eligibility predicate: cheap mode (prior recall)
- :mod:`~harness.audit.lens_full` — full mode (the agent rerun at a few anchors)
- :mod:`~harness.audit.lens_pipeline` — ``lens audit run`` for ``kind = "lens-memory"`` configs

This package imports nothing heavy: the names below load their module on first access, so ``lens --help``
(which imports :mod:`harness.audit.cli`) stays instant.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "AuditConfig",
    "load_audit_config",
    "run_audit",
    "check_run",
    "build_report",
    "Asset",
    "Query",
    "Request",
    "Workload",
    "load_beir",
    "load_hotpotqa",
    "Stream",
    "EventLog",
    "MemoryView",
    "Stateless",
    "PIT",
    "FutureH",
    "Future",
    "NaiveMemory",
    "TraceMemory",
    "PositiveFeedbackCache",
    "Violation",
]

_WHERE = {
    "AuditConfig": "config",
    "load_audit_config": "config",
    "run_audit": "pipeline",
    "check_run": "contract",
    "Violation": "contract",
    "build_report": "report",
    "Asset": "harness.workloads",
    "Query": "harness.workloads",
    "Request": "harness.workloads",
    "Workload": "harness.workloads",
    "load_beir": "harness.workloads",
    "load_hotpotqa": "inputs",
    "Stream": "harness.streams",
    "EventLog": "events",
    "MemoryView": "views",
    "Stateless": "views",
    "PIT": "views",
    "FutureH": "views",
    "Future": "views",
    "NaiveMemory": "views",
    "TraceMemory": "memories",
    "PositiveFeedbackCache": "memories",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        where = _WHERE[name]
        return getattr(importlib.import_module(where if "." in where else f"harness.audit.{where}"), name)
    raise AttributeError(f"module 'harness.audit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
