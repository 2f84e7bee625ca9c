"""argparse ``type=`` checks shared by every command, so a bad number is refused before any work.

A count of -1 is not harmless: ``tasks[:-1]`` runs all tasks but one, ``--n -5`` writes empty files and
``--max-steps -1`` means "train by epochs" to transformers. Each check raises
``argparse.ArgumentTypeError``, which argparse reports as ``argument --n: must be ...``.
"""

from __future__ import annotations

import argparse
import math


def _number(text: str, kind: type) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def positive_int(text: str) -> int:
    """A count: 1 or more."""
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return int(value)


def nonnegative_int(text: str) -> int:
    """A count that may be 0."""
    value = _number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return int(value)


def positive_float(text: str) -> float:
    """Seconds, a budget: more than 0."""
    value = _number(text, float)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def nonnegative_float(text: str) -> float:
    """A temperature: 0 (greedy) or more."""
    value = _number(text, float)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def fraction(text: str) -> float:
    """A share: 0 to 1."""
    value = _number(text, float)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def distinct_ints(text: str) -> list[int]:
    """Seeds or lengths: a comma-separated list of distinct integers >= 0, at least one ("0,1,2")."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: a comma-separated list of integers") from exc
    if not values or any(v < 0 for v in values) or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"{text!r}: distinct integers >= 0, at least one")
    return values
