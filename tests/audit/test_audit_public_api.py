"""The curated public surface of harness.audit."""

from __future__ import annotations

import harness.audit


def test_audit_exports_exactly_its_public_names_and_each_resolves():
    assert set(harness.audit.__all__) == {
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
    }
    for name in harness.audit.__all__:
        assert getattr(harness.audit, name) is not None
