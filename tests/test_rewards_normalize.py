"""Normalisation rules used by the rubric checks and the argument matchers."""

import pytest

from toolkit.checks import normalize as norm


@pytest.mark.parametrize(
    "rule,a,b,expected",
    [
        ("exact", 2, 2.0, True),
        ("exact", "2", 2, False),
        ("exact", True, 1, False),
        ("exact", "Closed", "closed", False),
        ("text", "  Closed \n", "closed", True),
        ("text", "closed", "open", False),
        ("number", "1,234.50", 1234.5, True),
        ("number", "12.5%", 12.5, True),
        ("number", "$12", 13, False),
        ("date", "2025-10-15T06:49:06", "October 15, 2025", True),
        ("date", "10/15/2025", "2025-10-15", True),
        ("date", "15 Oct 2025", "2025-10-16", False),
        ("name", "Tan, Mei", "mei tan", True),
        ("name", "Mei Tan", "Mei Tang", False),
    ],
)
def test_equal(rule, a, b, expected):
    assert norm.equal(rule, a, b) is expected


def test_number_tolerance():
    assert norm.equal("number", 4.953, "4.95", tolerance=0.01)
    assert not norm.equal("number", 4.953, "4.95")


@pytest.mark.parametrize(
    "rule,text,value,expected",
    [
        ("exact", "ticket 48 closed", "48", True),
        ("text", "The status is CLOSED now.", "closed", True),
        ("number", "went from 1,200 to 900 (-25%)", -25, True),
        ("number", "went down 25%", -25, False),
        ("number", "about 4.95 on average", "4.95", True),
        ("date", "She last logged in on 15/10/2025 at 06:49.", "2025-10-15", True),
        ("date", "Last login: Oct 15th, 2025", "2025-10-15", True),
        ("date", "Last login: 2025-10-14", "2025-10-15", False),
        ("name", "The requester was Tan, Mei (user 7).", "Mei Tan", True),
        ("name", "Mei Lin and Ann Tan", "Mei Tan", False),
        ("text", "", "closed", False),
    ],
)
def test_contains(rule, text, value, expected):
    assert norm.contains(rule, text, value) is expected


def test_unparseable_values_do_not_match_or_raise():
    assert not norm.equal("number", None, None)
    assert not norm.equal("date", "soon", "soon")
    assert not norm.contains("number", "no digits here", 3)
    assert not norm.contains("name", "anything", "")
    with pytest.raises(ValueError, match="unknown normalisation rule"):
        norm.equal("fuzzy", 1, 1)


def test_find_numbers_and_dates():
    assert norm.find_numbers("a -3, b 1,000.5 and 7%") == [-3.0, 1000.5, 7.0]
    assert [d.isoformat() for d in norm.find_dates("2025-01-02 and March 4, 2024")] == [
        "2025-01-02",
        "2024-03-04",
    ]
