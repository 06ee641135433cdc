"""Unit tests for lens/answer/_consolidation.py: from per-requirement beliefs to the evidence set E*.

A certified requirement contributes its verified span in its favoured window, widened by one sentence each side
inside the window ("confirmed"); other documents are admitted by weight up to ``max_docs`` with their most
probable window ("candidate"); regions of one document that overlap or touch are merged keeping their
requirement ids; certified documents come first, then by weight; every region carries the document's sha256.

The states are built by hand over a real folder (``scan_corpus``) so sentence indices, line ranges and hashes are
the reader's own.
"""

from __future__ import annotations

import hashlib

import pytest

from lens._result import Evidence
from lens.answer._consolidation import consolidate
from lens.loop._beliefs import Belief
from lens.loop._grading import Reading
from lens.loop._loop import LoopState
from lens.parts import CorpusView
from lens.question._requirements import Decomposition, Requirement
from lens.reader._corpus import scan_corpus
from lens.reader._windows import Window


def _article(title: str, n: int) -> str:
    # one sentence per line: sentence i (0 = the title) is on line i + 1
    return title + "\n" + "".join(f"{title} fact number {i}.\n" for i in range(1, n + 1))


FILES = {
    "alder.txt": _article("Alder House", 10),  # sentences 0..10
    "birch.txt": _article("Birch Hall", 6),
    "cedar.txt": _article("Cedar Mill", 4),
    "dune.txt": _article("Dune Farm", 4),
}


@pytest.fixture
def view(tmp_path) -> CorpusView:
    root = tmp_path / "corpus"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).write_text(text, encoding="utf-8")
    v = CorpusView(scan_corpus(root))
    assert [d.path for d in v.docs] == ["alder.txt", "birch.txt", "cedar.txt", "dune.txt"]
    return v


ALDER, BIRCH, CEDAR, DUNE = 0, 1, 2, 3


def window(view: CorpusView, doc_index: int, first: int, last: int) -> Window:
    d = view.docs[doc_index]
    return Window(doc_index, d.doc_id, d.path, d.title, first, last, d.sha256, 50)


def make_state(view: CorpusView, req_ids=("R1",)) -> LoopState:
    reqs = [Requirement(rid, f"fact {rid}") for rid in req_ids]
    return LoopState("q?", Decomposition("lookup", reqs, "heuristic"), view=view, prior=None)  # type: ignore[arg-type]


def believe(state: LoopState, rid: str, weights: dict[Window, float]) -> None:
    for w in weights:
        state.windows[w.key] = w
    b = Belief(rid)
    b.init({w.key: p for w, p in weights.items()})
    state.beliefs[rid] = b


def find(state: LoopState, rid: str, w: Window, sentence: int) -> None:
    """A confirming reading of ``w`` for ``rid`` that named ``sentence``."""
    reading = Reading(
        round=1,
        requirement_id=rid,
        requirement=f"fact {rid}",
        window_key=w.key,
        found=True,
        features={},
        log_lr=1.0,
        logprobs=True,
        value="value",
        sentence=sentence,
        quote="quote",
        confirmed=True,
    )
    state.findings.setdefault(rid, []).append(reading)


def text_of(view: CorpusView, doc_index: int, first: int, last: int) -> str:
    return " ".join(s.text for s in view.docs[doc_index].sentences[first : last + 1])


# ---------------------------------------------------------------- fixture sanity


def test_fixture_sentences_are_one_per_line(view):
    alder = view.docs[ALDER]
    assert len(alder.sentences) == 11
    assert alder.sentences[4].text == "Alder House fact number 4."
    assert (alder.sentences[4].line_start, alder.sentences[4].line_end) == (5, 5)
    assert alder.sha256 == hashlib.sha256(FILES["alder.txt"].encode()).hexdigest()


# ---------------------------------------------------------------- certified spans


def test_a_certified_window_is_cited_by_the_sentence_its_reading_named(view):
    state = make_state(view)
    w = window(view, ALDER, 0, 10)
    believe(state, "R1", {w: 1.0})
    find(state, "R1", w, 5)
    (e,) = consolidate(state, {}, certified={"R1"}, max_docs=3)
    assert isinstance(e, Evidence)
    assert (e.first_sentence, e.last_sentence) == (0, 10)  # synthesis reads the whole window
    assert e.sentence == 5 and e.sentence_text == "Alder House fact number 5."
    assert e.sentence_lines == (6, 6) and e.citation == "alder.txt:6"  # the line of the sentence named
    assert e.sentence_sha256 == hashlib.sha256(b"Alder House fact number 5.").hexdigest()
    assert e.status == "confirmed"
    assert e.requirements == ("R1",)
    assert e.id == "E1"
    assert (e.path, e.doc_id, e.title) == ("alder.txt", "alder.txt", "Alder House")
    assert e.sha256 == view.docs[ALDER].sha256


def test_a_window_read_but_not_certified_is_found_and_cited_by_its_sentence(view):
    state = make_state(view)
    w = window(view, ALDER, 3, 6)
    believe(state, "R1", {w: 1.0})
    find(state, "R1", w, 4)
    state.beliefs["R1"].confirmed.add(w.key)
    (e,) = consolidate(state, {}, certified=set(), max_docs=3)
    assert e.status == "found" and e.citation == "alder.txt:5"


def test_the_latest_reading_of_the_window_gives_the_citation(view):
    state = make_state(view)
    w = window(view, ALDER, 0, 10)
    believe(state, "R1", {w: 1.0})
    find(state, "R1", w, 7)
    find(state, "R1", w, 4)
    (e,) = consolidate(state, {}, certified={"R1"}, max_docs=3)
    assert e.sentence == 4


def test_findings_in_other_windows_do_not_count_for_the_favoured_window(view):
    state = make_state(view)
    fav, other = window(view, ALDER, 6, 9), window(view, ALDER, 0, 3)
    believe(state, "R1", {fav: 3.0, other: 1.0})
    find(state, "R1", other, 1)  # a finding, but not in the favoured window
    (e,) = consolidate(state, {}, certified={"R1"}, max_docs=3)
    # no reading named a sentence in the favoured window: the whole window, cited as a region
    assert (e.first_sentence, e.last_sentence) == (6, 9) and e.sentence is None and e.citation == "alder.txt:7-10"
    assert e.status == "confirmed"


def test_uncertified_requirement_contributes_no_confirmed_span(view):
    state = make_state(view)
    w = window(view, ALDER, 0, 10)
    believe(state, "R1", {w: 1.0})
    find(state, "R1", w, 5)
    assert consolidate(state, {}, certified=set(), max_docs=3) == []
    (e,) = consolidate(state, {ALDER: 0.8}, certified=set(), max_docs=3)
    assert e.status == "candidate"
    assert (e.first_sentence, e.last_sentence) == (0, 10)  # the most probable window, not the span


# ---------------------------------------------------------------- admission by weight


def test_documents_are_admitted_by_weight_up_to_max_docs(view):
    state = make_state(view)
    wb, wc, wd = window(view, BIRCH, 0, 6), window(view, CEDAR, 0, 4), window(view, DUNE, 0, 4)
    believe(state, "R1", {wb: 1.0, wc: 1.0, wd: 1.0})
    ev = consolidate(state, {BIRCH: 0.2, CEDAR: 0.9, DUNE: 0.5}, certified=set(), max_docs=2)
    assert [e.path for e in ev] == ["cedar.txt", "dune.txt"]
    assert [e.id for e in ev] == ["E1", "E2"]
    assert all(e.status == "candidate" for e in ev)
    assert [e.requirements for e in ev] == [("R1",), ("R1",)]


def test_equal_weights_are_broken_by_document_index(view):
    state = make_state(view)
    wb, wc = window(view, BIRCH, 0, 6), window(view, CEDAR, 0, 4)
    believe(state, "R1", {wb: 1.0, wc: 1.0})
    ev = consolidate(state, {CEDAR: 0.5, BIRCH: 0.5}, certified=set(), max_docs=1)
    assert [e.path for e in ev] == ["birch.txt"]


def test_candidate_document_contributes_its_most_probable_window(view):
    state = make_state(view, ("R1", "R2"))
    low, high = window(view, ALDER, 0, 3), window(view, ALDER, 7, 10)
    believe(state, "R1", {low: 1.0, high: 4.0})
    believe(state, "R2", {window(view, CEDAR, 0, 4): 1.0})
    (e,) = consolidate(state, {ALDER: 1.0}, certified=set(), max_docs=3)
    assert (e.first_sentence, e.last_sentence) == (7, 10)
    assert (e.line_start, e.line_end) == (8, 11)
    assert e.requirements == ("R1",)  # R2 puts no mass on that window


def test_candidate_window_lists_every_requirement_with_at_least_5_percent_on_it(view):
    state = make_state(view, ("R1", "R2", "R3"))
    w = window(view, BIRCH, 0, 6)
    other = window(view, CEDAR, 0, 4)
    believe(state, "R1", {w: 1.0})  # 0.8 on w
    believe(state, "R2", {w: 1.0, other: 9.0})  # 0.08 on w
    believe(state, "R3", {w: 1.0, other: 39.0})  # 0.02 on w: below the cut
    (e,) = consolidate(state, {BIRCH: 1.0}, certified=set(), max_docs=1)
    assert e.requirements == ("R1", "R2")


def test_document_without_any_window_in_the_beliefs_is_skipped(view):
    state = make_state(view)
    believe(state, "R1", {window(view, BIRCH, 0, 6): 1.0})
    ev = consolidate(state, {DUNE: 5.0, BIRCH: 1.0}, certified=set(), max_docs=1)
    assert [e.path for e in ev] == ["birch.txt"]  # Dune has weight but no candidate window: the slot goes on


# ---------------------------------------------------------------- merging


def test_one_window_confirmed_for_two_requirements_is_one_region_with_both_ids(view):
    state = make_state(view, ("R1", "R2"))
    w = window(view, ALDER, 0, 10)
    believe(state, "R1", {w: 1.0})
    believe(state, "R2", {w: 1.0})
    find(state, "R1", w, 3)
    find(state, "R2", w, 4)
    (e,) = consolidate(state, {}, certified={"R1", "R2"}, max_docs=3)
    assert (e.first_sentence, e.last_sentence) == (0, 10)
    assert e.requirements == ("R1", "R2") and e.sentence == 3  # cited by the first requirement's sentence
    assert e.status == "confirmed"
    assert e.text == text_of(view, ALDER, 0, 10)


def test_touching_regions_merge(view):
    state = make_state(view, ("R1", "R2"))
    w1, w2 = window(view, ALDER, 1, 3), window(view, ALDER, 4, 6)
    believe(state, "R1", {w1: 1.0})
    believe(state, "R2", {w2: 1.0})
    find(state, "R1", w1, 2)
    find(state, "R2", w2, 5)
    (e,) = consolidate(state, {}, certified={"R1", "R2"}, max_docs=3)
    assert (e.first_sentence, e.last_sentence) == (1, 6)
    assert e.requirements == ("R1", "R2")


def test_separate_regions_of_one_document_stay_apart_in_sentence_order(view):
    state = make_state(view, ("R1", "R2"))
    w1, w2 = window(view, ALDER, 7, 9), window(view, ALDER, 1, 3)
    believe(state, "R1", {w1: 1.0})
    believe(state, "R2", {w2: 1.0})
    find(state, "R1", w1, 8)
    find(state, "R2", w2, 2)  # a gap of 4..6
    ev = consolidate(state, {}, certified={"R1", "R2"}, max_docs=3)
    assert [(e.first_sentence, e.last_sentence, e.requirements) for e in ev] == [(1, 3, ("R2",)), (7, 9, ("R1",))]
    assert [e.sentence for e in ev] == [2, 8]
    assert [e.id for e in ev] == ["E1", "E2"]
    assert {e.sha256 for e in ev} == {view.docs[ALDER].sha256}


# ---------------------------------------------------------------- order and budget


def test_certified_documents_come_first_then_by_weight(view):
    state = make_state(view, ("R1", "R2"))
    wd = window(view, DUNE, 0, 4)
    wb, wc = window(view, BIRCH, 0, 6), window(view, CEDAR, 0, 4)
    believe(state, "R1", {wd: 1.0})
    find(state, "R1", wd, 2)
    believe(state, "R2", {wb: 1.0, wc: 2.0})
    ev = consolidate(state, {DUNE: 0.01, BIRCH: 0.3, CEDAR: 0.9}, certified={"R1"}, max_docs=3)
    assert [(e.path, e.status) for e in ev] == [
        ("dune.txt", "confirmed"),
        ("cedar.txt", "candidate"),
        ("birch.txt", "candidate"),
    ]
    assert [e.sha256 for e in ev] == [view.docs[i].sha256 for i in (DUNE, CEDAR, BIRCH)]
    assert [e.id for e in ev] == ["E1", "E2", "E3"]


def test_certified_documents_fill_max_docs_before_any_candidate(view):
    state = make_state(view, ("R1", "R2"))
    wa, wb, wc = window(view, ALDER, 0, 10), window(view, BIRCH, 0, 6), window(view, CEDAR, 0, 4)
    believe(state, "R1", {wa: 1.0})
    believe(state, "R2", {wb: 1.0, wc: 1.0})
    find(state, "R1", wa, 5)
    find(state, "R2", wb, 1)
    ev = consolidate(state, {CEDAR: 100.0}, certified={"R1", "R2"}, max_docs=2)
    assert [(e.path, e.status) for e in ev] == [("alder.txt", "confirmed"), ("birch.txt", "confirmed")]


def test_token_cap_drops_regions_after_the_first_that_would_exceed_it(view):
    state = make_state(view)
    wa, wb = window(view, ALDER, 0, 10), window(view, BIRCH, 0, 6)
    believe(state, "R1", {wa: 1.0, wb: 1.0})
    full = consolidate(state, {ALDER: 1.0, BIRCH: 0.5}, certified=set(), max_docs=2)
    assert [e.path for e in full] == ["alder.txt", "birch.txt"]
    first_cost = len(full[0].text) // 4
    capped = consolidate(state, {ALDER: 1.0, BIRCH: 0.5}, certified=set(), max_docs=2, token_cap=first_cost)
    assert [e.path for e in capped] == ["alder.txt"]
    # the first region is always kept, however small the cap
    assert [e.path for e in consolidate(state, {ALDER: 1.0}, certified=set(), max_docs=2, token_cap=1)] == ["alder.txt"]


def test_certified_requirement_without_a_candidate_window_gives_no_evidence(view):
    state = make_state(view)
    believe(state, "R1", {})  # all mass "elsewhere": nothing favoured
    assert state.beliefs["R1"].favoured() is None
    assert consolidate(state, {}, certified={"R1"}, max_docs=3) == []
    assert consolidate(state, {ALDER: 1.0}, certified={"R1"}, max_docs=3) == []


def test_evidence_dict_carries_citation_and_hash(view):
    state = make_state(view)
    w = window(view, CEDAR, 0, 4)
    believe(state, "R1", {w: 1.0})
    find(state, "R1", w, 2)
    (e,) = consolidate(state, {}, certified={"R1"}, max_docs=1)
    d = e.to_dict()
    assert d["citation"] == "cedar.txt:3" and d["sentence_lines"] == [3, 3]
    assert d["sha256"] == hashlib.sha256(FILES["cedar.txt"].encode()).hexdigest()
    assert d["requirements"] == ["R1"]
    assert d["status"] == "confirmed"


# ---------------------------------------------------------------- focused reading


def test_a_window_read_but_not_certified_comes_before_candidates_cited_by_its_sentence(view):
    state = make_state(view, ("R1", "R2"))
    w1, w2 = window(view, ALDER, 0, 10), window(view, BIRCH, 0, 6)
    believe(state, "R1", {w1: 1.0})
    believe(state, "R2", {w2: 1.0})
    state.beliefs["R1"].update(w1.key, 1.0, confirmed=True, value="value")
    find(state, "R1", w1, 5)  # confirmed but not certified
    ev = consolidate(state, {BIRCH: 2.0, ALDER: 1.0}, certified=set(), max_docs=3)
    assert [(e.path, e.status) for e in ev] == [("alder.txt", "found"), ("birch.txt", "candidate")]
    assert ev[0].citation == "alder.txt:6" and ev[1].sentence is None and ev[1].citation == "birch.txt:1-7"
