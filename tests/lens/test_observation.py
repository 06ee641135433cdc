"""Unit tests for lens/_observation.py: every claim of the oracle is checked against the window's text before it
counts — invented quotes are discarded, case/space/punctuation differences are tolerated, sentence ids are
re-derived, values must occur in the text and fit the expected answer type, claims about a subject the
document never mentions are rejected, and mentions must occur in an observed window."""

from __future__ import annotations

import pytest

from lens._corpus import Document
from lens._observation import ObservationReply, mentions, normalise, observation_messages, verify_reply
from lens._windows import windows_for

TEXT = (
    "Skerrow Light\n"
    "Skerrow Light is a lighthouse on the west coast. "
    "It was built in 1912 by the Northern Board. "
    "The tower is 38 metres tall. "
    "The keeper retired tomorrow in the department store."
)
# sentences: 0 title, 1 lighthouse, 2 built 1912, 3 tower 38 m, 4 keeper


@pytest.fixture(scope="module")
def doc() -> Document:
    return Document("d1", "skerrow.txt", "Skerrow Light", TEXT, "0" * 64)


@pytest.fixture(scope="module")
def win(doc):
    (w,) = windows_for(doc, 0, [], 6)
    return w


def verify(doc, win, findings, mentions_=(), outstanding=("R1", "R2"), **kw):
    reply = ObservationReply.model_validate({"findings": findings, "mentions": list(mentions_)})
    return verify_reply(reply, {"P1": win}, {win.key: doc}, set(outstanding), **kw)


def claim(quote="", value="", fact="R1", passage="P1", sentences=()):
    return {"fact": fact, "passage": passage, "quote": quote, "value": value, "sentences": list(sentences)}


def test_fixture_sentences(doc, win):
    assert [s.index for s in doc.sentences] == [0, 1, 2, 3, 4]
    assert doc.sentences[3].text == "The tower is 38 metres tall."
    assert (win.first, win.last) == (0, 4)


# ---------------------------------------------------------------- normalise


def test_normalise_lowercases_unifies_quotes_and_drops_punctuation():
    assert normalise("“Don’t”  STOP—now!") == "don't stop now"
    assert normalise("  It was\tbuilt\n in 1,912.  ") == "it was built in 1 912"
    assert normalise("Café Ångström") == "café ångström"


# ---------------------------------------------------------------- quote verification


def test_exact_quote_is_kept_with_rederived_sentence(doc, win):
    obs = verify(doc, win, [claim("It was built in 1912 by the Northern Board.", "1912", sentences=[4])])
    assert obs.rejected == []
    (f,) = obs.findings
    assert (f.requirement_id, f.window_key) == ("R1", win.key)
    assert f.sentences == (2,)  # from where the quote occurs, not the cited sentence 4
    assert f.value == "1912"


def test_quote_matching_tolerates_case_whitespace_and_punctuation(doc, win):
    obs = verify(doc, win, [claim("IT WAS   built in 1912 — by the northern board", "1912")])
    (f,) = obs.findings
    assert f.sentences == (2,)
    assert f.quote == "IT WAS   built in 1912 — by the northern board"  # the quote is kept as given


def test_near_exact_long_quote_is_accepted_by_fuzzy_match(doc, win):
    obs = verify(doc, win, [claim("It was buit in 1912 by the Northern Board", "1912")])  # one typo
    (f,) = obs.findings
    assert f.sentences == (2,)


def test_invented_quote_is_discarded(doc, win):
    obs = verify(doc, win, [claim("It was built in 1913 by the Southern Board", "1913")])
    assert obs.findings == []
    (r,) = obs.rejected
    assert r["reason"] == "quote not found in the passage"
    assert (r["fact"], r["passage"], r["value"]) == ("R1", "P1", "1913")


def test_short_quote_must_match_exactly(doc, win):
    # under 12 normalised characters there is no fuzzy match
    assert verify(doc, win, [claim("38 metres")]).findings
    assert not verify(doc, win, [claim("39 metres")]).findings


def test_quote_across_sentences_is_found_in_the_window_text(doc, win):
    obs = verify(doc, win, [claim("on the west coast. It was built")])
    (f,) = obs.findings
    assert f.sentences == (1, 2)


def test_quote_stitched_from_non_adjacent_text_is_discarded(doc, win):
    obs = verify(doc, win, [claim("built in 1912. The tower")])  # "by the Northern Board" skipped
    assert obs.findings == []


def test_without_quote_the_value_must_occur_in_the_cited_sentences(doc, win):
    ok = verify(doc, win, [claim("", "38 metres", sentences=[3])])
    assert [f.sentences for f in ok.findings] == [(3,)]
    wrong_sentence = verify(doc, win, [claim("", "38 metres", sentences=[2])])
    assert wrong_sentence.findings == [] and wrong_sentence.rejected
    # a bare yes/no value can't be located, so it is no evidence on its own
    yes = verify(doc, win, [claim("", "yes", sentences=[2])])
    assert yes.findings == [] and yes.rejected


def test_empty_claim_is_rejected(doc, win):
    obs = verify(doc, win, [claim("", "")])
    assert obs.findings == [] and len(obs.rejected) == 1


# ---------------------------------------------------------------- values


def test_value_not_in_text_is_dropped_but_span_kept(doc, win):
    obs = verify(doc, win, [claim("The tower is 38 metres tall", "45 metres")])
    (f,) = obs.findings
    assert f.sentences == (3,)
    assert f.value == ""


def test_yes_no_values_need_not_occur_in_text(doc, win):
    (f,) = verify(doc, win, [claim("Skerrow Light is a lighthouse", "Yes")]).findings
    assert f.value == "Yes"


def test_value_of_the_wrong_answer_type_is_dropped(doc, win):
    quote = "It was built in 1912 by the Northern Board"
    (f,) = verify(doc, win, [claim(quote, "1912")], kinds={"R1": "name"}).findings
    assert f.value == ""  # "Which board built it?" answered with a year
    (f,) = verify(doc, win, [claim(quote, "Northern Board")], kinds={"R1": "name"}).findings
    assert f.value == "Northern Board"
    (f,) = verify(doc, win, [claim(quote, "Northern Board")], kinds={"R1": "date"}).findings
    assert f.value == ""
    (f,) = verify(doc, win, [claim(quote, "1912")], kinds={"R1": "date"}).findings
    assert f.value == "1912"


def test_value_that_is_only_part_of_a_longer_number_is_dropped(doc, win):
    (f,) = verify(doc, win, [claim("It was built in 1912 by the Northern Board", "12")]).findings
    assert f.value == ""


# ---------------------------------------------------------------- routing and de-duplication


def test_unknown_fact_and_unknown_passage_are_rejected(doc, win):
    obs = verify(
        doc,
        win,
        [claim("The tower is 38 metres tall", fact="R3"), claim("The tower is 38 metres tall", passage="P9")],
    )
    assert obs.findings == []
    assert [r["reason"] for r in obs.rejected] == ["unknown or settled fact", "unknown passage"]


def test_settled_fact_is_not_outstanding(doc, win):
    obs = verify(doc, win, [claim("The tower is 38 metres tall", fact="R2")], outstanding=("R1",))
    assert obs.findings == [] and obs.rejected[0]["reason"] == "unknown or settled fact"


def test_fact_and_passage_ids_are_normalised_and_duplicates_dropped(doc, win):
    obs = verify(
        doc,
        win,
        [
            claim("It was built in 1912 by the Northern Board", "1912", fact="r1", passage="1"),
            claim("The tower is 38 metres tall", "38", fact="#R1", passage="p1"),
            claim("The tower is 38 metres tall", "38 metres", fact="R2"),
        ],
    )
    assert [(f.requirement_id, f.sentences, f.value) for f in obs.findings] == [
        ("R1", (2,), "1912"),  # the first claim for (R1, window) wins
        ("R2", (3,), "38 metres"),
    ]


# ---------------------------------------------------------------- subject check


def test_claim_about_a_subject_the_document_never_mentions_is_rejected(doc, win):
    quote = "The tower is 38 metres tall"
    obs = verify(doc, win, [claim(quote, "38 metres")], subjects={"R1": "Eddystone Lighthouse"})
    assert obs.findings == []
    assert "never mentions 'Eddystone Lighthouse'" in obs.rejected[0]["reason"]
    obs = verify(doc, win, [claim(quote, "38 metres")], subjects={"R1": "the Skerrow lighthouse"})
    assert len(obs.findings) == 1


def test_mentions_checks_content_words_of_the_name(doc):
    assert mentions(doc, "Skerrow Light")
    assert mentions(doc, "the Skerrow Light")  # stopwords don't have to occur
    assert mentions(doc, "Skerrow lighthouse")  # all content words occur, not necessarily together
    assert mentions(doc, "SKERROW")
    assert not mentions(doc, "Eddystone")
    assert not mentions(doc, "Skerrow Castle")
    assert mentions(doc, "the")  # only stopwords: judged on them, and "the" occurs


def test_mentions_accepts_a_near_exact_long_name():
    d = Document("d2", "x.txt", "Notes", "Notes\nThe Marren Gullsworth ferry sailed daily.", "1" * 64)
    assert mentions(d, "Marren Gullsworth")
    assert mentions(d, "Marren Gulsworth ferry")  # one letter short, fuzzy ≥ 94 over ≥ 12 characters
    assert not mentions(d, "Marren Bay")


def test_mentions_looks_at_the_title_too():
    d = Document("d3", "x.txt", "Harland Yard", "Founded in 1861.", "2" * 64)
    assert mentions(d, "Harland Yard")


# ---------------------------------------------------------------- mentions of the reply


def test_reply_mentions_kept_only_if_in_an_observed_window(doc, win):
    obs = verify(doc, win, [], mentions_=["Northern Board", " the west coast ", "Southern Board", "Zz", ""])
    assert obs.mentions == ["Northern Board", "the west coast"]


def test_reply_mention_inside_another_word_is_not_kept(doc, win):
    obs = verify(doc, win, [], mentions_=["Tom", "Art"])
    assert obs.mentions == []


# ---------------------------------------------------------------- verification holes (fixed; keep them closed)


def test_invented_quote_that_starts_with_the_title_is_discarded(doc, win):
    obs = verify(doc, win, [claim("Skerrow Light was demolished in 1950 by the council", "1950")])
    assert obs.findings == []


def test_sentences_of_a_cross_sentence_quote_are_where_it_occurs(doc, win):
    (f,) = verify(doc, win, [claim("the Northern Board. The tower is")]).findings
    assert f.sentences == (2, 3)


# ---------------------------------------------------------------- reply parsing and prompt


def test_reply_accepts_the_keyed_shape_the_prompt_asks_for():
    reply = ObservationReply.model_validate(
        {
            "R1": {"passage": 2, "sentence": "[3]", "quote": "q", "value": None},
            "#r2": {"passage": "P1", "sentences": ["1", "x", 4], "quote": ["a", "b"]},
            "R3": None,  # "not stated" for R3
            "names": "Bob",
        }
    )
    assert [(f.fact, f.passage, f.sentences, f.quote, f.value) for f in reply.findings] == [
        ("R1", "P2", [3], "q", ""),
        ("#r2", "P1", [1, 4], "a b", ""),
    ]
    assert reply.mentions == ["Bob"]


def test_observation_messages_label_windows_in_order(doc, win):
    other = Document("d9", "other.txt", "Other", "Other\nNothing to see here.", "9" * 64)
    (w2,) = windows_for(other, 1, [], 6)
    messages, labels = observation_messages(
        "How tall is Skerrow Light?", [("R1", "height of Skerrow Light")], [win, w2], [doc, other]
    )
    assert labels == {"P1": win, "P2": w2}
    text = "\n".join(m["content"] for m in messages)
    assert "R1: height of Skerrow Light" in text
    assert "The tower is 38 metres tall." in text and "Nothing to see here." in text
    assert text.index("The tower is 38 metres tall.") < text.index("Nothing to see here.")


def test_a_claim_whose_value_says_not_stated_is_no_finding():
    """The 1.5B fills the format and writes "null" as the value; that is "nothing here", not a finding."""
    from lens._observation import ObservationReply, verify_reply

    doc = _doc_for_not_stated()
    win = _win_for(doc)
    reply = ObservationReply.model_validate(
        {"R1": {"passage": "P1", "sentence": 1, "quote": "Tally Boatworks is in Dunmere.", "value": "null"}}
    )
    obs = verify_reply(reply, {"P1": win}, {win.key: doc}, {"R1"})
    assert obs.findings == [] and obs.rejected[0]["reason"].startswith("the oracle's value says")
    ok = ObservationReply.model_validate(
        {"R1": {"passage": "P1", "sentence": 1, "quote": "Tally Boatworks is in Dunmere.", "value": "Dunmere"}}
    )
    assert len(verify_reply(ok, {"P1": win}, {win.key: doc}, {"R1"}).findings) == 1


def _doc_for_not_stated():
    import hashlib

    from lens._corpus import Document

    text = "Tally Boatworks\nTally Boatworks is in Dunmere.\n"
    return Document("t.txt", "t.txt", "Tally Boatworks", text, hashlib.sha256(text.encode()).hexdigest())


def _win_for(doc):
    from lens._windows import Window

    return Window(0, doc.doc_id, doc.path, doc.title, 0, len(doc.sentences) - 1, doc.sha256, 20)
