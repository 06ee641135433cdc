"""The audit keeps the posterior and certification the agent recorded on each memory entry."""

from __future__ import annotations

import pytest

from harness.audit.lens_events import LensRunError, _from_memory_entries

ENTRY = {
    "requirement": "Which yard built the Marren Gull?",
    "path": "a.txt",
    "doc_id": "a.txt",
    "first": 1,
    "last": 1,
    "line_start": 2,
    "line_end": 2,
    "value": "Osk Yard",
    "sha256": "0" * 64,
}


def test_posterior_and_certification_are_read_and_default_for_older_rows():
    (new,) = _from_memory_entries([dict(ENTRY, posterior=0.62, certified=False)], "row 1")
    assert new.posterior == 0.62 and new.certified is False
    (old,) = _from_memory_entries([ENTRY], "row 2")
    assert old.posterior == 1.0 and old.certified is True


def test_a_posterior_outside_0_1_names_the_row_and_field():
    with pytest.raises(LensRunError, match=r"row 3: details.memory_entries\[0\]: field 'posterior'"):
        _from_memory_entries([dict(ENTRY, posterior=1.7)], "row 3")
