"""Answer correctness for FinanceBench-style answers: numbers within 1 % after unit and scale normalisation,
yes/no by polarity, everything else left to the judge."""

from __future__ import annotations

import pytest

from harness.bench.numeric import decide, polarity, quantities, quantities_match, single_quantity


@pytest.mark.parametrize(
    "gold, prediction",
    [
        ("$1,577 million", "1577.00"),
        ("1577.00", "$1,577 million"),
        ("$1577.00", "$1.577 billion"),
        ("1.5 billion", "1,500 million"),
        ("$11588.00", "$11,588"),
        ("$11588.00", "11,588,000,000 USD"),
        ("$11588.00", "Amazon's FY2019 capex was $11.6 billion."),
        ("24.26", "24.26"),
        ("24.26", "The ratio is 24.3"),
        ("24.26", "FY2019 fixed asset turnover: 24.26"),
        ("93.86", "93.9"),
        ("1.9%", "1.9 %"),
        ("1.9%", "1.90 percent"),
        ("30.8%", "0.308"),
        ("30.8%", "30.8"),
        ("65.4%", "Gross margin was 65.4% in FY2016"),
        ("101.5%", "101.5 per cent"),
        ("-14.76%", "−14.76%"),
        ("$(1,234)", "-1,234"),
        ("$2,018mn", "$2.018 billion"),
        ("$2,018mn", "2,018 million"),
        ("$382.00", "$382 million"),
        ("2.7 times", "2.7x"),
        ("1.73", "1.7300"),
        ("$5466.00", "5,466"),
        ("USD 32780.00", "$32.78bn"),
        ("4.2%", "4.2% (FY2015)"),
        ("2019", "In 2019."),
    ],
)
def test_numbers_that_agree_within_one_percent_are_correct(gold, prediction):
    d = decide(gold, prediction)
    assert d.rule == "numeric" and d.correct is True, (gold, prediction)


@pytest.mark.parametrize(
    "gold, prediction",
    [
        ("24.26", "24.6"),  # 1.4 % off
        ("1.9%", "2.1%"),
        ("$1577.00", "$1,677 million"),
        ("-14.76%", "14.76%"),  # the sign matters
        ("$(1,234)", "1,234"),
        ("30.8%", "3.08"),
        ("1.73", "173"),  # no currency, no scale: not read in thousands
        ("93.86", "In FY2017 the figure was unchanged."),  # no number at all
        ("24.26", "2019"),  # a bare year is not an amount
        ("$11588.00", "$1,158 million"),  # a digit short, in whatever unit
        ("1.5 billion", "1.5 million"),
        ("0.62%", "0.6%"),  # 3 % off: rounding further than the question asked is wrong
    ],
)
def test_numbers_that_disagree_are_incorrect(gold, prediction):
    d = decide(gold, prediction)
    assert d.rule == "numeric" and d.correct is False, (gold, prediction)


def test_quantities_read_signs_scales_percentages_and_currencies():
    (q,) = quantities("$(1,234.5) million")
    assert q.value == -1234.5 and q.scale == 1e6 and q.currency and not q.percent
    (q,) = quantities("down 3.5 percentage points")
    assert q.value == 3.5 and q.percent
    (q,) = quantities("5 m")  # one letter after a space: metres, perhaps; not a scale
    assert q.scale == 1
    assert [x.value for x in quantities("FY2019 Q2 10-K revenue 1,577")] == [1577.0]  # inside words: not numbers
    (q,) = quantities("2019")
    assert q.year_like
    (q,) = quantities("$2019")
    assert not q.year_like


def test_a_gold_that_is_more_than_one_quantity_is_not_numeric():
    assert single_quantity("$11588.00") is not None
    assert single_quantity("approximately 2.7 times") is not None
    assert single_quantity("AMCOR's Adj. EBITDA was $2,018mn in FY 2023") is None
    assert single_quantity("Effective tax rate in FY2022 was 0.62%, compared to -14.76% in FY2021.") is None
    assert single_quantity("Trillium, Array, and Therachon") is None


def test_match_is_symmetric_for_the_examples_of_the_issue():
    a, b = single_quantity("$1,577 million"), single_quantity("1577.00")
    assert quantities_match(a, b) and quantities_match(b, a)
    a, b = single_quantity("1.5 billion"), single_quantity("1,500 million")
    assert quantities_match(a, b) and quantities_match(b, a)


@pytest.mark.parametrize(
    "gold, prediction, correct",
    [
        ("Yes, the margins have been consistent.", "Yes", True),
        ("Yes. Boeing has product categories over 20%.", "yes, two of them", True),
        ("Yes, there was a decline of ~42%.", "No.", False),
        ("No, JnJ's FY2022 financials are not of a high growth company.", "No", True),
        ("No, sales grew by 1.3%.", "The answer is yes", False),
    ],
)
def test_yes_no_questions_are_graded_by_polarity(gold, prediction, correct):
    d = decide(gold, prediction)
    assert d.rule == "yes_no" and d.correct is correct


def test_without_a_rule_the_judge_decides():
    assert decide("Yes, the margins have been consistent.", "They stayed about the same.").rule == "judge"
    d = decide("Trillium, Array, and Therachon", "Trillium and Array")
    assert d.rule == "judge" and d.correct is None
    assert decide("The Real Growth was flat in FY 2023 vs FY 2022.", "flat").correct is None


def test_an_empty_prediction_is_incorrect_without_the_judge():
    assert decide("24.26", "").correct is False and decide("Trillium", "  ").rule == "empty"


def test_polarity_is_the_first_word_or_the_only_yes_or_no():
    assert polarity("Yes, it did") == "yes" and polarity("no.") == "no"
    assert polarity("I would say yes") == "yes" and polarity("maybe yes, maybe no") is None and polarity("") is None
