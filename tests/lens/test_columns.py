"""Document statistics as columns: an item is the statistics it was built from, and the hashed title index finds
exactly the documents whose names hold a key, even when keys share a hash."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.reader import _columns
from lens.reader._columns import NAMES_SEP, DocColumns, DocStat, TitleIndex

STATS = [
    DocStat("a.txt", "a.txt", "Bass", NAMES_SEP.join(["bass", "a"]), 10, "ab" * 32, None),
    DocStat(
        "w.bz2:3", "w.bz2", "Bass (disambiguation)", NAMES_SEP.join(["bass disambiguation", "bass"]), 7, "cd" * 32, 3
    ),
    DocStat("c.txt", "c.txt", "", "", 0, "ef" * 32, None),
]


def test_an_item_of_the_columns_is_the_statistics_they_were_built_from():
    cols = DocColumns.of(STATS, [5, 6, 7])
    assert list(cols) == STATS and cols[1:] == STATS[1:] and cols.sha256(2) == "ef" * 32
    assert cols.take(np.asarray([2, 0])).ids.tolist() == [7, 5] and list(cols.take(np.asarray([2, 0]))) == [
        STATS[2],
        STATS[0],
    ]
    halves = [cols.take(np.asarray([0])), cols.take(np.asarray([1, 2]))]
    assert list(DocColumns.gather(halves, np.arange(3))) == STATS


def test_gathering_from_several_parts_is_picking_from_their_concatenation():
    cols = DocColumns.of(STATS, [5, 6, 7])
    parts = [cols.take(np.asarray([0])), DocColumns.empty(), cols.take(np.asarray([1, 2]))]
    for index in ([2, 0, 1], [1], [], [0, 1, 2], [2, 2, 0]):
        got = DocColumns.gather(parts, np.asarray(index, dtype=np.int64))
        assert list(got) == [STATS[i] for i in index] and got.ids.tolist() == [[5, 6, 7][i] for i in index]
    named = DocColumns.of([s._replace(doc_id=s.path) for s in STATS])
    named.doc_id = named.path  # ids that are the paths: one list, kept one list
    picked = DocColumns.gather([named, named], np.asarray([4, 0], dtype=np.int64))
    assert picked.doc_id is picked.path and picked.path == ["w.bz2", "a.txt"]
    assert _columns.pick_strings([["x", "y"], ["z"]], np.asarray([2, 0], dtype=np.int64)) == ["z", "x"]


def _as_dict(index: TitleIndex) -> dict:
    return {k: v for k, v in index.items()}


def test_the_title_index_finds_the_documents_each_key_names(monkeypatch):
    index = TitleIndex.build([s.names for s in STATS])
    assert _as_dict(index) == {"bass": [0, 1], "a": [0], "bass disambiguation": [1]}
    assert all(index[k] == v for k, v in _as_dict(index).items())
    assert index.get("quill") is None and "quill" not in index and index.get("", [9]) == [9]


def test_keys_sharing_a_hash_are_told_apart_by_the_names(monkeypatch):
    monkeypatch.setattr(_columns, "_key_hash", lambda key: 7)  # every key collides
    index = TitleIndex.build([s.names for s in STATS])
    assert index["bass"] == [0, 1] and index["a"] == [0] and index["bass disambiguation"] == [1]
    assert index.get("quill") is None


@settings(max_examples=200, deadline=None)
@given(
    names=st.lists(
        st.lists(st.sampled_from(["bass", "a", "bass disambiguation", "quill", "cape", ""]), max_size=3).map(
            NAMES_SEP.join
        ),
        max_size=12,
    ),
    cuts=st.lists(st.integers(0, 12), max_size=3),
    built=st.lists(st.booleans(), min_size=4, max_size=4),
    picked=st.lists(st.integers(0, 11), max_size=12, unique=True),
    collide=st.booleans(),
)
def test_a_gathered_title_index_is_the_one_built_from_the_gathered_names(names, cuts, built, picked, collide):
    """Kept from the parts' indexes (a part without one built for it alone), it equals building it anew."""
    cols = DocColumns.of([DocStat(f"d{i}", f"d{i}", "T", n, 1, "ab" * 32, None) for i, n in enumerate(names)])
    bounds = sorted({0, len(names), *(c for c in cuts if c <= len(names))})
    parts = [cols.take(np.arange(a, b)) for a, b in zip(bounds, bounds[1:])] or [DocColumns.empty()]
    old = _columns._key_hash
    try:
        if collide:
            _columns._key_hash = lambda key: len(key) % 2  # many keys share a hash
        for part, b in zip(parts, built):
            if b:
                part.titles  # noqa: B018 (built now, as a question would)
        index = np.asarray([i for i in picked if i < len(names)], dtype=np.int64)
        got = DocColumns.gather(parts, index)
        kept = got._titles
        titles = got.titles  # the kept one, or built now
        expected = TitleIndex.build(got.names)
    finally:
        _columns._key_hash = old
    if any(p._titles is not None for p in parts):
        assert kept is not None  # kept, not left to be built again
    assert titles.hashes.tolist() == expected.hashes.tolist() and titles.docs.tolist() == expected.docs.tolist()
    assert titles.names is got.names


def test_a_document_picked_twice_gets_a_title_index_built_anew():
    cols = DocColumns.of(STATS)
    cols.titles  # noqa: B018
    got = DocColumns.gather([cols], np.asarray([1, 1, 0], dtype=np.int64))
    assert _as_dict(got.titles) == {"bass": [0, 1, 2], "bass disambiguation": [0, 1], "a": [2]}
