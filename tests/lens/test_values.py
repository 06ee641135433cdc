"""Unit tests for lens/question/_values.py: parsing dates and numbers, reading the comparison a question asks for,
computing it in code (earlier/later, larger/smaller, "both"/"same" yes/no), and the answer-type checks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.question._values import Comparison, answer_type, compare, comparison_of, fits_type, parse_date, parse_number

EARLIEST = Comparison("date", "min")
LATEST = Comparison("date", "max")
LARGEST = Comparison("number", "max")
SMALLEST = Comparison("number", "min")
SAME = Comparison("same", "equal")

# ---------------------------------------------------------------- parse_date


@pytest.mark.parametrize(
    "text, expected",
    [
        ("March 5, 2001", (2001, 3, 5)),
        ("5 March 2001", (2001, 3, 5)),
        ("5th of March 2001", (2001, 3, 5)),
        ("2001-03-05", (2001, 3, 5)),
        ("Sept. 2001", (2001, 9, 0)),
        ("May 2001", (2001, 5, 0)),
        ("1999", (1999, 0, 0)),
        ("around 1066", (1066, 0, 0)),
        ("500 BC", (-500, 0, 0)),
        ("c. 300 BCE", (-300, 0, 0)),
        ("19 March 1919", (1919, 3, 19)),  # the day is not confused with digits of the year
        ("1 January 2011", (2011, 1, 1)),
        ("June 12, 1812", (1812, 6, 12)),
    ],
)
def test_parse_date(text, expected):
    assert parse_date(text) == expected


@pytest.mark.parametrize("text", ["", "unknown", "the 1990s", "AD 79", "in the spring"])
def test_parse_date_without_a_year_is_none(text):
    assert parse_date(text) is None


# ---------------------------------------------------------------- parse_number


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1,234", 1234.0),
        ("1,234.5", 1234.5),
        ("3.5 million", 3_500_000.0),
        ("2 billion", 2e9),
        ("$2 bn", 2e9),
        ("2 bn", 2.0),  # short scale words only after a currency sign
        ("$40k", 40_000.0),
        ("12 thousand people", 12_000.0),
        ("-7", -7.0),
        ("12 metres", 12.0),  # "m" is only a scale word on its own
        ("5 km", 5.0),
        ("about 38 m", 38.0),  # metres, not million
        ("$38m", 38e6),
        ("£1.5 m", 1.5e6),
    ],
)
def test_parse_number(text, expected):
    assert parse_number(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["", "none", "three", "n/a"])
def test_parse_number_without_digits_is_none(text):
    assert parse_number(text) is None


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=10**12))
def test_parse_number_round_trips_thousands_separators(n):
    assert parse_number(f"{n:,}") == float(n)


# ---------------------------------------------------------------- comparison_of


@pytest.mark.parametrize(
    "question, expected",
    [
        ("Who was born first, Alice Hart or Bob Lane?", EARLIEST),
        ("Which was founded earlier, Acme or Globex?", EARLIEST),
        ("Who is older, Alice or Bob?", EARLIEST),
        ("Which film was released later, Up or Cars?", LATEST),
        ("Who is younger, Alice or Bob?", LATEST),
        ("Which was founded more recently, Acme or Globex?", LATEST),
        ("Which is taller, the Spire or the Needle?", LARGEST),
        ("Which city has more inhabitants, Ayr or Troon?", LARGEST),
        ("Which lake is smaller, Loch A or Loch B?", SMALLEST),
        ("Which band has fewer members, X or Y?", SMALLEST),
        ("Which university has the higher rank, A or B?", SMALLEST),  # better rank = smaller number
        ("Are both Ayr and Troon in Scotland?", SAME),
        ("Were Alice and Bob of the same nationality?", SAME),
        ("What is the capital of France?", None),
        ("Who directed Jaws?", None),
    ],
)
def test_comparison_of(question, expected):
    assert comparison_of(question) == expected


# ---------------------------------------------------------------- compare


def test_compare_dates_picks_earlier_and_later():
    entities = ["Alice", "Bob"]
    values = ["12 May 1998", "3 January 1999"]
    assert compare(EARLIEST, entities, values) == "Alice"
    assert compare(LATEST, entities, values) == "Bob"


def test_compare_dates_orders_by_month_and_day_within_a_year():
    assert compare(EARLIEST, ["A", "B"], ["3 June 1999", "12 June 1999"]) == "A"
    assert compare(EARLIEST, ["A", "B"], ["December 1999", "March 1999"]) == "B"
    assert compare(LATEST, ["A", "B", "C"], ["1999-06-12", "1999-06-03", "1998-12-31"]) == "A"


def test_compare_bc_dates():
    assert compare(EARLIEST, ["Rome", "Athens"], ["753 BC", "508 BC"]) == "Rome"
    assert compare(LATEST, ["Rome", "Athens"], ["753 BC", "508 BC"]) == "Athens"


def test_compare_dates_at_the_coarsest_common_precision():
    # a bare year against a full date is compared by year only
    assert compare(EARLIEST, ["A", "B"], ["1999", "12 May 1998"]) == "B"
    # same year, one without a month: a tie at year precision, left to synthesis
    assert compare(EARLIEST, ["A", "B"], ["1999", "12 May 1999"]) is None
    # same month, one without a day: a tie at month precision
    assert compare(EARLIEST, ["A", "B"], ["June 1999", "12 June 1999"]) is None


def test_compare_numbers_larger_and_smaller():
    entities = ["Ayr", "Troon"]
    values = ["1.2 million", "999,999"]
    assert compare(LARGEST, entities, values) == "Ayr"
    assert compare(SMALLEST, entities, values) == "Troon"
    assert compare(LARGEST, ["A", "B", "C"], ["40k", "$39,500", "41 thousand"]) == "C"


def test_compare_number_tie_is_left_to_synthesis():
    assert compare(LARGEST, ["A", "B"], ["10", "10.0"]) is None


@pytest.mark.parametrize(
    "comparison, values",
    [
        (EARLIEST, ["1999", "unknown"]),
        (LATEST, ["sometime", "1999"]),
        (LARGEST, ["many", "12"]),
        (SMALLEST, ["12", ""]),
    ],
)
def test_unparseable_value_falls_back_to_none(comparison, values):
    assert compare(comparison, ["A", "B"], values) is None


def test_compare_needs_two_values_and_one_per_entity():
    assert compare(LARGEST, ["A"], ["12"]) is None
    assert compare(LARGEST, ["A", "B"], ["12"]) is None
    assert compare(SAME, ["A", "B", "C"], ["x", "x"]) is None


@pytest.mark.parametrize(
    "values, expected",
    [
        (["American", "american"], "yes"),
        (["American.", "  AMERICAN "], "yes"),  # normalised: case, punctuation, spaces
        (["American", "British"], "no"),
        (["yes", "True"], "yes"),
        (["yes", "no"], "no"),
        (["false", "American"], "no"),
        (["Scotland", "Scotland", "Wales"], "no"),
    ],
)
def test_compare_same_answers_yes_or_no(values, expected):
    entities = [f"E{i}" for i in range(len(values))]
    assert compare(SAME, entities, values) == expected


def test_compare_same_with_an_empty_value_falls_back_to_none():
    assert compare(SAME, ["A", "B"], ["American", "?!"]) is None
    assert compare(SAME, ["A", "B"], ["", "American"]) is None


def test_question_to_answer_end_to_end_in_code():
    q = "Which was founded first, Acme Corp or Globex?"
    assert compare(comparison_of(q), ["Acme Corp", "Globex"], ["1 May 1950", "1948"]) == "Globex"
    q = "Are both Acme Corp and Globex based in the same country?"
    assert compare(comparison_of(q), ["Acme Corp", "Globex"], ["the United States", "United States"]) == "no"


# ---------------------------------------------------------------- answer_type / fits_type


@pytest.mark.parametrize(
    "question, kind",
    [
        ("Is Ayr a town?", "yesno"),
        ("Did the ferry sink?", "yesno"),
        ("When was the shipyard founded?", "date"),
        ("In what year did it open?", "date"),
        ("How many people live in Ayr?", "number"),
        ("How tall is the Spire?", "number"),
        ("Who directed Jaws?", "name"),
        ("Which shipyard built the Marren Gull?", "name"),
        ("What colour is the flag?", "any"),
    ],
)
def test_answer_type(question, kind):
    assert answer_type(question) == kind


@pytest.mark.parametrize(
    "value, kind, ok",
    [
        ("yes", "yesno", True),
        ("False", "yesno", True),
        ("maybe", "yesno", False),
        ("12 May 1998", "date", True),
        ("1998", "date", True),
        ("Harland and Wolff", "date", False),
        ("1,200", "number", True),
        ("many", "number", False),
        ("Harland and Wolff", "name", True),
        ("1912", "name", False),
        ("12/05/1998", "name", False),
        ("none", "name", False),
        ("yes", "name", False),
        ("anything", "any", True),
        ("   ", "any", False),
        ("", "name", False),
    ],
)
def test_fits_type(value, kind, ok):
    assert fits_type(value, kind) is ok
