"""Deterministic top-k and all-or-nothing file writes."""

from __future__ import annotations

import numpy as np
import pytest

from harness.files import atomic_write
from harness.retrieval import top_k
from harness.retrieval.store import IndexFolderError, read_folder_record, write_folder_record


def test_top_k_orders_by_score_then_index_even_at_the_cut():
    scores = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 0.0]])
    idx, val = top_k(scores, 2)
    assert idx.tolist() == [[1, 2]]  # three-way tie at 3.0: the two smallest indices
    idx, _ = top_k(scores, 10)
    assert idx.tolist() == [[1, 2, 4, 3, 0, 5]]


def test_top_k_accepts_a_tie_key():
    idx, _ = top_k(np.array([5.0, 5.0, 5.0]), 2, tie_key=np.array([2, 0, 1]))
    assert idx.tolist() == [[1, 2]]


def test_top_k_matches_a_full_sort_on_random_ties():
    rng = np.random.default_rng(1)
    s = rng.integers(0, 4, size=(20, 50)).astype(float)
    idx, _ = top_k(s, 7)
    for r in range(20):
        ref = sorted(range(50), key=lambda j: (-s[r, j], j))[:7]
        assert idx[r].tolist() == ref


def test_top_k_rejects_nan_and_bad_k():
    with pytest.raises(ValueError):
        top_k(np.array([1.0, np.nan]), 1)
    with pytest.raises(ValueError):
        top_k(np.array([1.0]), 0)


def test_atomic_write_leaves_the_old_file_when_writing_fails(tmp_path):
    p = tmp_path / "f.txt"
    atomic_write(p, b"old")

    def boom(fh):
        fh.write(b"partial")
        raise OSError("disk full")

    with pytest.raises(OSError):
        atomic_write(p, boom)
    assert p.read_bytes() == b"old"
    assert [x.name for x in tmp_path.iterdir()] == ["f.txt"]  # no temporary left behind


def test_folder_record_detects_a_missing_file(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"x")
    write_folder_record(tmp_path, {"kind": "k"}, ["a.bin"])
    assert read_folder_record(tmp_path, "k")["files"]["a.bin"]
    (tmp_path / "a.bin").unlink()
    with pytest.raises(IndexFolderError, match="missing"):
        read_folder_record(tmp_path, "k")


def test_folder_record_of_another_kind_is_rejected(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"x")
    write_folder_record(tmp_path, {"kind": "bm25"}, ["a.bin"])
    with pytest.raises(IndexFolderError, match="expected a 'dense' index"):
        read_folder_record(tmp_path, "dense")
