"""Held term counts in a temporary file (``lens.reader._spill``): they answer look-ups and read back exactly as the
postings held in memory do."""

from __future__ import annotations

import os

import numpy as np
import pytest

from lens.reader import _spill
from lens.reader._postings import Postings, count_terms
from lens.reader._spill import Spill, SpilledPart
from lens.reader._store import _HeldPart

TEXTS = [
    "the cape light keeper kept the cape light",
    "",
    "quill and ink, ink and quill: naïve über café",
    "tower tower tower of the keep",
    "x" * 40 + " cape",
]
ASKED = ["cape", "tower", "naïve", "ink", "x" * 40, "keep", "absent", ""]


def _sorted(hits):
    return sorted((t, d.tolist(), n.tolist()) for t, d, n in hits)


@pytest.mark.parametrize("shuffled", [False, True], ids=["as counted", "shuffled"])
def test_a_spilled_part_answers_and_reads_back_as_one_held_in_memory(tmp_path, shuffled):
    postings = count_terms(TEXTS)  # sorted by term and document, as a chunk's counts come (else sorted here)
    if shuffled:
        order = np.random.default_rng(0).permutation(len(postings))
        postings = Postings(postings.vocab, postings.term[order], postings.doc[order], postings.n[order])
    rows = np.array([10, 11, -1, 13, 14], dtype=np.int64)  # the third document's counts are another process's
    spill = Spill(tmp_path)
    Spill(tmp_path).put(b"elsewhere")  # another file's bytes do not shift this one's
    spill.put(b"a part before")
    part = SpilledPart(spill, postings, rows)
    assert os.listdir(tmp_path) == []  # the file has no name
    assert _sorted(part.counts(ASKED)) == _sorted(_HeldPart(postings, rows).counts(ASKED))
    for term, docs, _ in part.counts(ASKED):
        assert np.all(np.diff(docs) > 0), term  # each term's documents ascending
    back = part.postings
    assert back.counters(len(TEXTS)) == postings.counters(len(TEXTS))
    assert back.term.dtype == back.doc.dtype == back.n.dtype == np.int32
    spill.close()


def test_terms_of_one_hash_are_told_apart_by_their_names(tmp_path, monkeypatch):
    """A hash only points at a term: its name, read back, decides (every term made to share one hash here)."""
    postings = count_terms(TEXTS)
    rows = np.arange(len(TEXTS), dtype=np.int64)
    monkeypatch.setattr(_spill, "_hashes", lambda names: np.zeros(len(names), dtype=np.int64))
    part = SpilledPart(Spill(tmp_path), postings, rows)
    assert _sorted(part.counts(ASKED)) == _sorted(_HeldPart(postings, rows).counts(ASKED))
    assert [t for t, _, _ in part.counts(["tower"])] == ["tower"]


def test_an_empty_part_spills_and_answers_nothing(tmp_path):
    part = SpilledPart(Spill(tmp_path), count_terms(["", ""]), np.array([1, 2], dtype=np.int64))
    assert part.counts(["cape"]) == []
    assert len(part.postings) == 0 and part.postings.vocab == []
