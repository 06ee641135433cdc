"""Golden cases of the official HotpotQA metrics, Ev.Rec, Ground, the taxonomy and the statistics, by hand."""

from __future__ import annotations

import math

import pytest

from harness.bench.datasets import Question
from harness.bench.metrics import (
    FAILURE_CLASSES,
    AnswerScore,
    SupportScore,
    answer_f1,
    answer_scores,
    bootstrap_ci,
    evidence_recall,
    exact_match,
    failure_class,
    is_grounded,
    joint_scores,
    mcnemar_exact,
    normalize_answer,
    score_official,
    support_scores,
)


def q(qid: str, answer: str, facts=(("A", 0), ("B", 1))) -> Question:
    return Question(qid, "?", answer, "bridge", "hard", tuple(facts), ())


# ---------------------------------------------------------------- normalisation


def test_normalisation_lowercases_drops_punctuation_articles_and_extra_spaces():
    # lower -> "the  quick, brown-fox!" -> no punct "the  quick brownfox" -> no article -> collapse
    assert normalize_answer("The  Quick, Brown-Fox!") == "quick brownfox"


def test_articles_are_dropped_only_as_whole_words():
    assert normalize_answer("Theatre an Apple, a Anne") == "theatre apple anne"


def test_punctuation_is_removed_before_articles_so_joined_words_survive():
    # "the-end" loses its hyphen first and becomes one word "theend", which is not an article
    assert normalize_answer("the-end") == "theend"


def test_only_ascii_punctuation_is_removed():
    assert normalize_answer("1912–2005") == "1912–2005"  # en dash is not in string.punctuation
    # an article between kept (non-ASCII) punctuation is replaced by a space, splitting the token
    assert normalize_answer("Rock–the–Vote") == "rock– –vote"


# ---------------------------------------------------------------- EM / F1


def test_em_ignores_case_articles_and_punctuation():
    assert exact_match("the Beatles!", "Beatles")
    assert not exact_match("Beatles band", "Beatles")


def test_em_has_no_yes_no_special_case():
    assert exact_match("YES.", "yes")
    assert exact_match("noanswer", "NoAnswer")
    assert not exact_match("yes indeed", "yes")


def test_f1_is_zero_when_a_yes_no_side_differs_even_with_overlap():
    # plain token F1 would be 2 * (1/2 * 1) / (1/2 + 1) = 2/3
    assert answer_f1("yes indeed", "yes") == (0.0, 0.0, 0.0)
    assert answer_f1("no", "no way") == (0.0, 0.0, 0.0)
    assert answer_f1("noanswer", "noanswer here") == (0.0, 0.0, 0.0)
    assert answer_f1("Yes!", "yes") == (1.0, 1.0, 1.0)


def test_f1_by_hand():
    f1, p, r = answer_f1("Barack Obama Sr.", "Barack Obama")
    assert (p, r) == (pytest.approx(2 / 3), 1.0)
    assert f1 == pytest.approx(0.8)


def test_f1_counts_token_overlap_as_a_multiset():
    # "bora bora island" vs "Bora Bora": Counter overlap min(2, 2) = 2 -> p = 2/3, r = 1, F1 = 0.8
    # (distinct-token overlap would give 1 common -> p = 1/3, r = 1/2, F1 = 0.4)
    assert answer_f1("bora bora island", "Bora Bora") == pytest.approx((0.8, 2 / 3, 1.0))
    # a repeated predicted token counts only as often as the gold has it: min(3, 1) = 1
    assert answer_f1("paris paris paris", "Paris") == pytest.approx((0.5, 1 / 3, 1.0))
    # "new york new york" vs "new york new york city": 4 common -> p = 1, r = 4/5, F1 = 8/9
    assert answer_f1("New York, New York", "new york new york city") == pytest.approx((8 / 9, 1.0, 0.8))


def test_answers_normalising_to_nothing_match_exactly_but_have_zero_f1():
    assert answer_scores("The", "a") == AnswerScore(1.0, 0.0, 0.0, 0.0)


# ---------------------------------------------------------------- supporting facts and joint


def test_supporting_fact_scores_by_hand():
    pred = [("A", 0), ("A", 0), ("B", 1), ("C", 2)]  # duplicates count once
    gold = [("A", 0), ("B", 1), ("B", 2)]
    s = support_scores(pred, gold)  # tp 2, fp 1, fn 1
    assert s == SupportScore(0.0, pytest.approx(2 / 3), pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert support_scores([("B", 1), ("A", 0)], [["A", 0], ["B", 1]]).em == 1.0


def test_supporting_fact_titles_compare_exactly_as_in_the_official_script():
    assert support_scores([("a", 0)], [("A", 0)]).f1 == 0.0


def test_joint_multiplies_precision_recall_and_em():
    a = AnswerScore(0.0, 0.5, 1 / 3, 1.0)
    s = SupportScore(0.0, 2 / 3, 2 / 3, 2 / 3)
    j = joint_scores(a, s)  # p = 2/9, r = 2/3, F1 = 2pr/(p+r) = (8/27)/(8/9) = 1/3
    assert j.precision == pytest.approx(2 / 9)
    assert j.recall == pytest.approx(2 / 3)
    assert j.f1 == pytest.approx(1 / 3)
    assert joint_scores(AnswerScore(1, 1, 1, 1), SupportScore(1, 1, 1, 1)).em == 1


def test_missing_prediction_scores_zero_stays_in_denominator_and_is_reported():
    gold = [q("q1", "Paris"), q("q2", "London"), q("q3", "Rome")]
    pred = {
        "answer": {"q1": "Paris", "q2": "London", "zz": "extra"},
        "sp": {"q1": [["A", 0], ["B", 1]], "q3": [["A", 0], ["B", 1]]},
    }
    res = score_official(gold, pred)
    assert res.metrics["em"] == pytest.approx(2 / 3)  # q3 has no answer: 0, still counted
    assert res.metrics["sp_em"] == pytest.approx(2 / 3)  # q2 has no sp
    assert res.metrics["joint_em"] == pytest.approx(1 / 3)  # only q1 has both
    assert res.missing_answer == ["q3"]
    assert res.missing_sp == ["q2"]
    assert res.extra == ["zz"]


def test_prediction_without_any_sp_section_leaves_sp_and_joint_unevaluated():
    res = score_official([q("q1", "Paris")], {"answer": {"q1": "paris"}})
    assert res.metrics["em"] == 1.0
    assert res.metrics["sp_f1"] is None and res.metrics["joint_em"] is None
    assert not res.sp_evaluated and res.missing_sp == []


# ---------------------------------------------------------------- Ev.Rec, Ground, taxonomy


def test_evidence_recall_matches_titles_case_insensitively():
    assert evidence_recall(["Animorphs", "The Hork-Bajir Chronicles"], ["ANIMORPHS", "Other"]) == 0.5
    assert evidence_recall(["A", "A", "B"], ["a", "b"]) == 1.0  # distinct gold titles
    with pytest.raises(ValueError):
        evidence_recall([], ["a"])


def test_grounded_when_the_answer_occurs_as_a_token_run_in_a_passage():
    ev = [("Animorphs", "Animorphs is a science fantasy series of young adult books.")]
    assert is_grounded("the Animorphs", ev, ["Animorphs"])
    assert is_grounded("science fantasy series", ev, ["Animorphs"])
    assert not is_grounded("fantasy science", ev, ["Animorphs"])  # not contiguous in that order
    assert not is_grounded("art", [("X", "The artist")], ["X"])  # token boundaries, not substrings


def test_not_grounded_without_an_answer_or_without_evidence():
    ev = [("A", "Paris is the capital.")]
    assert not is_grounded("", ev, ["A"])
    assert not is_grounded("noanswer", ev, ["A"])
    assert not is_grounded(None, ev, ["A"])
    assert not is_grounded("Paris", [], ["A"])


def test_yes_no_answers_need_evidence_for_every_requirement():
    gold = ["Scott Derrickson", "Ed Wood"]
    one_side = [("Scott Derrickson", "Scott Derrickson is an American director.")]
    both = one_side + [("ed wood", "Ed Wood was an American filmmaker.")]
    assert not is_grounded("yes", one_side, gold)
    assert is_grounded("Yes.", both, gold)
    assert is_grounded("no", both, gold)


def test_failure_taxonomy_follows_the_paper_order():
    gold = ["A", "B"]
    assert failure_class(correct=True, answer="x", gold_titles=gold, retrieved_titles=[]) == "correct"
    assert (
        failure_class(correct=False, answer="", gold_titles=gold, retrieved_titles=["a"]) == "retrieved_but_unanswered"
    )
    assert (
        failure_class(correct=False, answer="wrong", gold_titles=gold, retrieved_titles=["B", "a"])
        == "answered_but_wrong"
    )
    # wrong with only part of the evidence: discovery failed
    assert failure_class(correct=False, answer="wrong", gold_titles=gold, retrieved_titles=["A"]) == "not_retrieved"
    # unanswered and nothing gold retrieved
    assert failure_class(correct=False, answer=None, gold_titles=gold, retrieved_titles=["C"]) == "not_retrieved"
    assert FAILURE_CLASSES == ("correct", "retrieved_but_unanswered", "answered_but_wrong", "not_retrieved")


# ---------------------------------------------------------------- statistics


def test_mcnemar_exact_by_hand():
    # b = 5 (only A right), c = 1 (only B right): p = 2 * (C(6,0) + C(6,1)) / 2^6 = 14/64
    a = [1] * 5 + [0] * 1 + [1] * 10 + [0] * 4
    b = [0] * 5 + [1] * 1 + [1] * 10 + [0] * 4
    res = mcnemar_exact(a, b)
    assert (res.b, res.c, res.both, res.neither, res.n) == (5, 1, 10, 4, 20)
    assert res.p_value == pytest.approx(14 / 64)
    assert mcnemar_exact([1, 0], [1, 0]).p_value == 1.0  # no discordant pairs
    assert mcnemar_exact([1, 1, 1], [0, 0, 0]).p_value == pytest.approx(0.25)


def test_mcnemar_agrees_with_scipy_binomial_test():
    from scipy.stats import binomtest

    a = [i % 3 == 0 or i % 7 == 0 for i in range(200)]
    b = [i % 4 == 0 or i % 7 == 0 for i in range(200)]
    res = mcnemar_exact(a, b)
    assert res.p_value == pytest.approx(binomtest(min(res.b, res.c), res.b + res.c, 0.5).pvalue, rel=1e-12)


def test_mcnemar_pairs_by_id_and_refuses_unpaired_input():
    res = mcnemar_exact({"x": True, "y": False}, {"y": True, "x": True})
    assert (res.b, res.c) == (0, 1)
    with pytest.raises(ValueError):
        mcnemar_exact([1, 0], [1])
    with pytest.raises(ValueError):
        mcnemar_exact({"x": True}, {"y": True})


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = [1.0] * 100 + [0.0] * 100
    ci = bootstrap_ci(values, resamples=4000, seed=7)
    assert ci == bootstrap_ci(values, resamples=4000, seed=7)
    assert ci.mean == 0.5 and ci.low < 0.5 < ci.high
    # normal approximation: half-width ≈ 1.96 * sqrt(0.25 / 200) ≈ 0.069
    assert 0.055 < (ci.high - ci.low) / 2 < 0.085
    assert bootstrap_ci([0.3] * 10, resamples=100) == (pytest.approx(0.3),) * 3
    with pytest.raises(ValueError):
        bootstrap_ci([])
    assert not math.isnan(bootstrap_ci([1.0], resamples=10).low)
