"""Normalisation of answer and argument values before comparison.

The rules named in ``toolkit.records`` (``exact``, ``text``, ``number``, ``date``, ``name``) each come in
two forms: ``equal(rule, a, b)`` compares two values (tool arguments, state fields) and
``contains(rule, text, v)`` asks whether a free-text answer states ``v``. Everything here is pure and
never raises on odd input: a value that cannot be parsed simply does not match.
"""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import date, datetime
from typing import Any

RULES = ("exact", "text", "number", "date", "name")

_NUMBER_RE = re.compile(
    r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?\s*%?|[-+−]?\.\d+\s*%?"
)
_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}
_MONTH_ALT = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_PATTERNS = (
    # 2025-10-15, 2025/10/15, 2025-10-15T06:49:06
    (re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?=\b|T)"), ("y", "m", "d")),
    # 10/15/2025 (US order first; day-first only when the month field is > 12)
    (re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b"), ("m", "d", "y")),
    # 15 October 2025, 15 Oct. 2025
    (
        re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_ALT})\.?,?\s+(\d{{4}})\b", re.I),
        ("d", "M", "y"),
    ),
    # October 15, 2025, Oct 15th 2025
    (
        re.compile(rf"\b({_MONTH_ALT})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I),
        ("M", "d", "y"),
    ),
)


def normalize_text(value: Any) -> str:
    """Case-folded, accent-stripped, whitespace-collapsed text."""
    s = unicodedata.normalize("NFKC", str(value)).casefold()
    return " ".join(s.split())


def name_tokens(value: Any) -> list[str]:
    """Lower-case word tokens of a person or entity name, punctuation dropped ("Tan, Mei" -> [tan, mei])."""
    s = unicodedata.normalize("NFKD", str(value)).casefold()
    s = "".join(ch for ch in s if not unicodedata.combining(ch))
    return re.findall(r"[^\W_]+", s)


def parse_number(value: Any) -> float | None:
    """A number from an int/float or a string such as "1,234.5", "$12", "12.5%", "−3"; else None.

    Percentages parse to the number before the sign ("12.5%" -> 12.5), as the rubric rules say.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    found = find_numbers(value)
    return found[0] if len(found) == 1 else None


def find_numbers(text: str) -> list[float]:
    """Every number written in ``text`` (thousands separators, signs, percentages handled)."""
    out = []
    for m in _NUMBER_RE.finditer(text):
        tok = m.group(0).replace(",", "").replace("%", "").replace("−", "-").strip()
        try:
            out.append(float(tok))
        except ValueError:
            continue
    return out


def parse_date(value: Any) -> date | None:
    """A calendar date from a date/datetime or a string in a common format; else None."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if not isinstance(value, str):
        return None
    found = find_dates(value)
    return found[0] if found else None


def find_dates(text: str) -> list[date]:
    """Every calendar date written in ``text`` in ISO, US numeric or month-name form."""
    out: list[date] = []
    for pattern, order in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            parts = dict(zip(order, m.groups(), strict=True))
            try:
                month = _MONTHS[parts["M"].casefold().rstrip(".")] if "M" in parts else int(parts["m"])
                day, year = int(parts["d"]), int(parts["y"])
                if month > 12 and "m" in parts:  # 15/10/2025: day-first
                    month, day = day, month
                out.append(date(year, month, day))
            except (KeyError, ValueError):
                continue
    return out


def numbers_close(a: float, b: float, tolerance: float = 0.0) -> bool:
    """|a - b| within ``tolerance`` (absolute), with a tiny relative slack for float round-off."""
    return abs(a - b) <= max(tolerance, 1e-9 * max(1.0, abs(a), abs(b)))


def equal(rule: str | None, a: Any, b: Any, tolerance: float = 0.0) -> bool:
    """Whether values ``a`` and ``b`` are the same under ``rule`` (default ``exact``)."""
    rule = rule or "exact"
    if rule == "exact":
        return loose_equal(a, b, text_rule=False)
    if rule == "text":
        return normalize_text(a) == normalize_text(b)
    if rule == "number":
        x, y = parse_number(a), parse_number(b)
        return x is not None and y is not None and numbers_close(x, y, tolerance)
    if rule == "date":
        x, y = parse_date(a), parse_date(b)
        return x is not None and x == y
    if rule == "name":
        x, y = name_tokens(a), name_tokens(b)
        return bool(x) and sorted(x) == sorted(y)
    raise ValueError(f"unknown normalisation rule {rule!r}; expected one of {RULES}")


def contains(rule: str | None, text: str, value: Any, tolerance: float = 0.0) -> bool:
    """Whether free text ``text`` states ``value`` under ``rule`` (default ``exact``)."""
    rule = rule or "exact"
    text = text or ""
    if rule == "exact":
        return str(value) in text
    if rule == "text":
        needle = normalize_text(value)
        return bool(needle) and needle in normalize_text(text)
    if rule == "number":
        target = parse_number(value)
        return target is not None and any(numbers_close(x, target, tolerance) for x in find_numbers(text))
    if rule == "date":
        target = parse_date(value)
        return target is not None and target in find_dates(text)
    if rule == "name":
        want = sorted(name_tokens(value))
        have = name_tokens(text)
        n = len(want)
        # any window of n consecutive words that is a permutation of the name ("Tan, Mei" for "Mei Tan")
        return n > 0 and any(sorted(have[i : i + n]) == want for i in range(len(have) - n + 1))
    raise ValueError(f"unknown normalisation rule {rule!r}; expected one of {RULES}")


def loose_equal(a: Any, b: Any, text_rule: bool = True) -> bool:
    """Structural equality that forgives JSON's blind spots: 2 == 2.0, "3" vs 3 stays unequal, and
    (with ``text_rule``) strings compared case- and whitespace-insensitively. Used for argument values."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, bool) and isinstance(b, bool) and a == b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return numbers_close(float(a), float(b))
    if isinstance(a, str) and isinstance(b, str):
        return normalize_text(a) == normalize_text(b) if text_rule else a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(loose_equal(x, y, text_rule) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(loose_equal(a[k], b[k], text_rule) for k in a)
    return a == b
