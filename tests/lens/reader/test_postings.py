"""Term counts as columns: exactly the rule's counts (maximal ``str.isalnum()`` runs of the folded text) whatever
the text, and the store's packed runs of postings read back as written."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lens._terms import fold
from lens.reader import _postings, _store
from lens.reader._columns import DocStat
from lens.reader._folder import _Entry
from lens.reader._postings import Postings, count_terms

_RULE = re.compile(r"[^\W_]+")  # the rule as the store always applied it


def _rule(text: str) -> Counter:
    return Counter(_RULE.findall(fold(text)))


TRICKY = [
    "",
    "   ",
    "Gutiérrez Tower, 2 towers; snake_case harbors_x2 — naïve café",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ and ﬁ ligatures, Ⅻ roman, ½ fractions, ² superscripts",
    "北京大学 東京 서울 Москва Αθήνα ١٢٣ देवनागरी",
    "emoji 😀👍🏽 between👨‍👩‍👧words and flags 🇫🇷",
    "combining e\u0301 a\u0308 o\u0303 and n\u0303o z\u0335 marks",
    "eight888 nine99999 sixteen123456789 seventeen12345678 x" * 2,
    "abcdefgh abcdefghi abcdefghijklmnop abcdefghijklmnopq " + "a" * 40 + " " + "ab1" * 30,
    "MiXeD CaSe ASCII Words NOT lowered",
    "nul\x00inside\x00text and tab\tnew\nline",
    "lone surrogate \ud800 between \udfff letters",
    "İstanbul ǅungla ß ẞ ŉ ﬃ",  # lower-casing or NFKD changes length
    "under_score __dunder__ _lead trail_ a_b_c",
    "digits 1912 3.14 1,000,000 2010–11 ٣ ५",
    "ǅ" * 20 + " é" * 9,
]


def test_count_terms_is_the_rule_on_tricky_text():
    lowered = [fold(t) for t in TRICKY]
    assert count_terms(lowered).counters(len(lowered)) == [_rule(t) for t in TRICKY]


def test_each_text_alone_and_all_together_count_the_same():
    for t in TRICKY:
        assert count_terms([fold(t)]).counters(1) == [_rule(t)]


_ALPHABET = st.sampled_from(
    list("abcxyzABCXYZ0189_ -.,'\n\t\x00") + ["é", "ß", "ǅ", "北", "京", "١", "😀", "\u0301", "\u200d", "Ⅻ", "ﬁ", "½"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=_ALPHABET, max_size=60), max_size=8))
def test_count_terms_is_the_rule_on_any_text(texts):
    lowered = [fold(t) for t in texts]
    assert count_terms(lowered).counters(len(lowered)) == [_rule(t) for t in texts]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=6))
def test_count_terms_is_the_rule_on_any_unicode(texts):
    lowered = [fold(t) for t in texts]
    assert count_terms(lowered).counters(len(lowered)) == [_rule(t) for t in texts]


def test_many_documents_are_counted_in_passes_with_one_vocabulary(monkeypatch):
    monkeypatch.setattr(_postings, "_DOCS_PER_PASS", 3)  # a document's index must fit its pass
    monkeypatch.setattr(_postings, "_PASS_CHARS", 80)  # and a pass's arrays their memory
    texts = [f"Doc {i} shares words; word{i % 4} and naïve{i % 2}" for i in range(11)]
    got = count_terms([fold(t) for t in texts])
    assert got.counters(len(texts)) == [_rule(t) for t in texts]
    assert len(got.vocab) == len(set(got.vocab))


def test_postings_joined_keep_each_parts_documents_apart():
    a, b = ["Cape Quill cape", "tower"], ["quill tower tower", "", "cape"]
    joined = Postings.concat([count_terms(map(fold, a)), Postings.empty(), count_terms(map(fold, b))], [2, 0, 3])
    assert joined.counters(5) == [_rule(t) for t in a + b]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["cape", "quill", "tower", "é", "z" * 20]),
            st.integers(0, 5_000_000_000),
            st.sampled_from([1, 2, 255, 256, 65_535, 65_536, 2**32 + 1]),
        ),
        min_size=1,
        max_size=40,
        unique_by=lambda x: (x[0], x[1]),
    )
)
def test_runs_of_postings_read_back_as_written(postings):
    """Documents far apart and counts large (every width of gap and count) pack and unpack exactly."""
    vocab = sorted({t for t, _, _ in postings})
    docs = sorted({d for _, d, _ in postings})
    p = Postings(
        vocab,
        np.asarray([vocab.index(t) for t, _, _ in postings], dtype=np.int64),
        np.asarray([docs.index(d) for _, d, _ in postings], dtype=np.int64),
        np.asarray([n for _, _, n in postings], dtype=np.int64),
    )
    runs = _store._runs(p, np.asarray(docs, dtype=np.int64))
    assert [r[:2] for r in runs] == sorted(r[:2] for r in runs)  # in key order
    rows = [(t, f, _store._FIRST.pack(f) + b) for t, f, b in runs]
    got = sorted((t, d, n) for t, ds, ns in (_store._unpack_run(*r) for r in rows) for d, n in zip(ds, ns))
    assert got == sorted(postings)


def test_the_runs_of_several_parts_of_a_write_are_one_row_per_term_and_count_as_one_reading():
    """Parts counted apart (as workers count chunks) are stored as a row per term of segments."""
    texts = ["Cape quill cape", "tower", "quill tower tower", "", "cape naïve", "tower"]
    parts = [texts[:2], texts[2:5], texts[5:]]
    items = [
        (f"f{i}", _Entry("", True, True, {"nbytes": 1}, (DocStat(f"f{i}", f"f{i}", "T", "t", 1, "0" * 64, None),), ()))
        for i in range(len(texts))
    ]
    counted = [(_store._runs(count_terms(map(fold, p)), np.arange(len(p))), len(p)) for p in parts]
    store = _store.StatsStore(None)
    store.put_counted("s", [(p, e, (None,)) for p, e in items], counted)
    ids = [e.ids[0] for _, e in items]
    rows = store.db.execute("SELECT term, count(*) FROM terms GROUP BY term").fetchall()
    assert all(n == 1 for _, n in rows) and {t for t, _ in rows} == {"cape", "quill", "tower", "naive"}
    got = [Counter() for _ in texts]
    for term, docs, counts in store.counts(["cape", "quill", "tower", "naive", "absent"]):
        for d, n in zip(docs.tolist(), counts.tolist()):
            got[ids.index(d)][term] += n
    assert got == [_rule(t) for t in texts]


_SEGMENT = _store._HEAD.pack(7, 0, 2) + b"\x03\x01\x01"  # documents 7 and 10, once each


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00\x01\x02", _SEGMENT[:-1], _SEGMENT + _SEGMENT[:5], _store._HEAD.pack(7, 16, 1) + b"\x01"],
    ids=["empty", "short", "cut", "second-cut", "tag"],
)
def test_a_run_that_does_not_decode_is_a_value_error_naming_its_row(data):
    with pytest.raises(ValueError, match="terms row"):
        _store._unpack_run("cape", 7, data)
