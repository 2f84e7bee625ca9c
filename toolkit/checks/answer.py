"""The answer check: an answer passes when it states the expected value and commits to it.

A reward that only asks whether the expected value appears *somewhere* in the answer pays for pasting
every tool output, for listing numbers and for hedging ("42, or maybe 17"); RL finds that within a few
steps. Here an answer passes an ``answer`` rubric item only when

1. it states the expected value (the normalisation rules of ``toolkit.checks.normalize``), outside any
   longer value that merely contains it ("Granite Bank" inside the deal name "Granite Bank - Renewal"
   is not the company name), and
2. it states no *competing candidate*: another value of the same kind that is not part of the
   expected answer. What is not a competitor: the task's other expected values (multi-part answers,
   the intermediate hops of a chain), values the request itself names (restating the request is fine),
   and context the task's own reference answer states ("18.8% of the 16 deals": the 16).

What counts as a competitor depends on the kind of the expected value:

- numbers, dates and identifiers (``t-1033``, ``co-007``): *every* other one the answer states. These
  kinds are cheap to list ("0 1 2 ... 100") and invented ones are as wrong as offered ones.
  Identifiers, dates, times, phone numbers and list markers ("(2)") are masked before numbers are read,
  so the digits of ``t-1033`` or ``2025-10-09`` are not numbers.
- words and names ("web", "Osaka", "Granite Bank - Pilot"): every string value of the episode's tool
  outputs that the answer states (words cannot be enumerated the way numbers can; the outputs are what
  a pasting or hedging policy has at hand). When the request itself offers the choice ("Chicago or
  Madrid?"), the alternatives it names are competitors too, even where the reference answer states them.
- and, whatever the kind, an alternation around the expected value ("web or email", "web/email") or a
  hedge word ("maybe", "perhaps", "possibly", "not sure") fails the answer.

Each rule is tried by the adversarial policies in ``toolkit.rewards.adversarial`` (docs/rewards.md).
Everything here is pure; only an unknown normalisation rule (a malformed spec) raises ValueError.
"""

from __future__ import annotations

import itertools
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from toolkit.checks import normalize as norm

# ---- folding and masks ------------------------------------------------------------------------------


def fold(text: Any) -> str:
    """NFKC, case-folded, accents stripped, whitespace collapsed: the form every mention is found in."""
    s = unicodedata.normalize("NFKC", str(text)).casefold()
    s = "".join(ch for ch in unicodedata.normalize("NFKD", s) if not unicodedata.combining(ch))
    return " ".join(s.split())


_ISO_DATETIME = re.compile(
    r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:[t ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?(?!\d)"
)
_OTHER_DATES = norm._DATE_PATTERNS[1:]  # US numeric and month-name forms (ISO handled above, with times)
_TIME = re.compile(r"(?<![\w:])\d{1,2}:\d{2}(?::\d{2})?(?![\w:])")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"\b(?:https?://|www\.)\S+")
_PHONE = re.compile(r"(?<![\w])\+?\d{1,3}(?:[-\s.]\d{2,4}){2,}(?![\w])")
_ENUMERATOR = re.compile(r"\(\d{1,2}\)|(?:^|(?<=[.?!:;] ))\d{1,2}[.)](?=\s)")
# A token holding both letters and digits (t-1033, co-007, o-5011, sku_12); ordinals and numbers with a
# unit glued on (1st, 12kg, 9.5c) are not identifiers.
_TOKEN = re.compile(r"[^\W_][\w-]*[^\W_]|[^\W_]")
_ORDINAL_OR_UNIT = re.compile(r"\d+(?:st|nd|rd|th)|[-+]?\d+(?:[.,]\d+)*[a-z%]{1,3}")
_HEDGES = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might be|could be|not sure|either|i think|i guess|approximately or)\b"
)


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


def _overlaps(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    return any(span[0] < b and a < span[1] for a, b in spans)


def _inside(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    """Strictly inside a longer span."""
    return any(a <= span[0] and span[1] <= b and (b - a) > (span[1] - span[0]) for a, b in spans)


# ---- mentions of each kind ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mention:
    kind: str  # "number" | "date" | "id" | "text"
    value: Any  # float, date, folded id, folded text
    span: tuple[int, int]


def date_mentions(text: str) -> list[Mention]:
    """Calendar dates in folded ``text`` (ISO with or without a time, US numeric, month names)."""
    out = []
    for m in _ISO_DATETIME.finditer(text):
        try:
            out.append(Mention("date", date(int(m.group(1)), int(m.group(2)), int(m.group(3))), m.span()))
        except ValueError:
            continue
    for pattern, _ in _OTHER_DATES:
        for m in pattern.finditer(text):
            if _overlaps(m.span(), [d.span for d in out]):
                continue
            found = norm.find_dates(m.group(0))
            if found:
                out.append(Mention("date", found[0], m.span()))
    return out


def id_mentions(text: str) -> list[Mention]:
    """Identifier tokens (letters and digits together) in folded ``text``, dates and e-mails excluded."""
    masked = [d.span for d in date_mentions(text)] + _spans(_EMAIL, text) + _spans(_URL, text)
    out = []
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        has_alpha = any(c.isalpha() for c in tok)
        has_digit = any(c.isdigit() for c in tok)
        if not (has_alpha and has_digit) or _ORDINAL_OR_UNIT.fullmatch(tok) or _overlaps(m.span(), masked):
            continue
        out.append(Mention("id", tok, m.span()))
    return out


def number_mentions(text: str) -> list[Mention]:
    """Numbers in folded ``text``, with the digits of dates, times, identifiers, e-mails, URLs, phone
    numbers and list markers ("(2)") masked out."""
    masked = (
        [d.span for d in date_mentions(text)]
        + [i.span for i in id_mentions(text)]
        + _spans(_TIME, text)
        + _spans(_EMAIL, text)
        + _spans(_URL, text)
        + _spans(_PHONE, text)
        + _spans(_ENUMERATOR, text)
    )
    out = []
    for m in norm._NUMBER_RE.finditer(text):
        if _overlaps(m.span(), masked):
            continue
        tok = m.group(0).replace(",", "").replace("%", "").replace("−", "-").strip()
        try:
            out.append(Mention("number", float(tok), m.span()))
        except ValueError:
            continue
    return out + word_number_mentions(text)


_UNITS = "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_WORD_NUMBERS = {w: float(i) for i, w in enumerate(_UNITS, start=2)} | {
    t: float(10 * i) for i, t in enumerate(_TENS, start=2)
}
# "one" is left out: it is a pronoun as often as a number ("the latest one")
_WORD_NUMBER = re.compile(
    r"\b("
    + "|".join(_TENS)
    + r")(?:[- ](one|"
    + "|".join(_UNITS[:8])
    + r"))?\b|\b("
    + "|".join(_UNITS)
    + r")\b"
)


def word_number_mentions(text: str) -> list[Mention]:
    """Numbers spelled out in folded ``text`` ("seventeen", "twenty-seven"), so a list cannot hide in words."""
    out = []
    for m in _WORD_NUMBER.finditer(text):
        if m.group(3):
            value = _WORD_NUMBERS[m.group(3)]
        else:
            value = _WORD_NUMBERS[m.group(1)] + (
                1.0 if m.group(2) == "one" else _WORD_NUMBERS.get(m.group(2) or "", 0.0)
            )
        out.append(Mention("number", value, m.span()))
    return out


def text_mentions(text: str, needle: str, rule: str | None = "text") -> list[tuple[int, int]]:
    """Where folded ``text`` states ``needle``: as a whole-word substring, or for the ``name`` rule as its
    words in any order ("Tan, Mei" for "Mei Tan")."""
    folded = fold(needle)
    if not folded:
        return []
    if rule == "name":
        words = norm.name_tokens(needle)
        if not words or len(words) > 4:
            return []
        spans: list[tuple[int, int]] = []
        for perm in set(itertools.permutations(words)):
            pattern = r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, perm)) + r"(?![^\W_])"
            spans += _spans(re.compile(pattern), text)
        return spans
    left = r"(?<![^\W_])" if folded[0].isalnum() else ""
    right = r"(?![^\W_])" if folded[-1].isalnum() else ""
    return _spans(re.compile(left + re.escape(folded) + right), text)


# ---- what the episode offers ------------------------------------------------------------------------------

_JSON_STRING_VALUE = re.compile(r'(?:"([\w ]{1,40})"\s*:|[\[,])\s*"((?:[^"\\]|\\.){2,200})"')


def output_strings(outputs: Sequence[str]) -> set[tuple[str, str]]:
    """The string values of the tool outputs as ``(key, value)``: JSON leaves where an output parses
    (the key of the field that holds it, "" in a list of strings), else the quoted values a cut JSON
    still shows."""
    found: set[tuple[str, str]] = set()
    for out in outputs:
        if not out:
            continue
        try:
            found |= set(string_leaves(json.loads(out)))
        except (ValueError, RecursionError):
            for m in _JSON_STRING_VALUE.finditer(out):
                try:
                    found.add((m.group(1) or "", json.loads(f'"{m.group(2)}"')))
                except ValueError:
                    found.add((m.group(1) or "", m.group(2)))
    return {(k, v) for k, v in found if 2 <= len(v.strip()) <= 200}


def string_leaves(obj: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """Every string value of parsed JSON with the key of the field that holds it."""
    if isinstance(obj, str):
        yield key, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from string_leaves(v, str(k))
    elif isinstance(obj, list):
        for v in obj:
            yield from string_leaves(v, key)


def pasted(answer: str, outputs: Sequence[str], width: int = 60, stride: int = 20) -> bool:
    """Whether folded ``answer`` copies a stretch of some tool output (about 80 characters or more):
    an answer is the model's own statement, not a dump of what the tools returned."""
    if len(answer) < width:
        return False
    windows = [answer[i : i + width] for i in range(0, len(answer) - width + 1, stride)]
    return any(w in out for out in map(fold, outputs) if len(out) >= width for w in windows)


def value_kind(value: Any, rule: str | None) -> str:
    """The kind of an expected value: ``number``, ``date``, ``id`` or ``text``."""
    if rule == "number" or (isinstance(value, int | float) and not isinstance(value, bool)):
        return "number"
    if rule == "date":
        return "date"
    folded = fold(value)
    ids = id_mentions(folded) if " " not in folded else []
    if ids and ids[0].span == (0, len(folded)):
        return "id"
    return "text"


# ---- the check ------------------------------------------------------------------------------------------


@dataclass
class AnswerContext:
    """What, besides the answer, decides what counts as a competitor.

    ``request``: the user's words (the prompt and any follow-ups). ``outputs``: every tool output the
    episode saw. ``expected``: every expected value of the task as ``(value, rule)``, this item's
    included. ``reference``: the task's reference answer, whose context values are allowed.
    """

    request: str = ""
    outputs: Sequence[str] = ()
    expected: Sequence[tuple[Any, str | None]] = ()
    reference: str = ""
    _strings: set[tuple[str, str]] | None = field(default=None, repr=False)

    def strings(self) -> set[tuple[str, str]]:
        if self._strings is None:
            self._strings = output_strings(self.outputs)
        return self._strings


@dataclass
class AnswerVerdict:
    passed: bool
    reason: str
    competitors: list[str] = field(default_factory=list)


def _same(kind: str, a: Any, b: Any, tolerance: float) -> bool:
    if kind == "number":
        return norm.numbers_close(a, b, tolerance)
    return a == b


def _mentions(kind: str, text: str) -> list[Mention]:
    return {"number": number_mentions, "date": date_mentions, "id": id_mentions}[kind](text)


def _parsed(kind: str, value: Any) -> Any:
    if kind == "number":
        return norm.parse_number(value)
    if kind == "date":
        return norm.parse_date(value)
    return fold(value)


def check_answer(
    answer: str, value: Any, rule: str | None, tolerance: float = 0.0, ctx: AnswerContext | None = None
) -> AnswerVerdict:
    """Whether ``answer`` states ``value`` under ``rule`` and commits to it (module docstring)."""
    if rule is not None and rule not in norm.RULES:  # a malformed spec: the caller leaves it ungraded
        raise ValueError(f"unknown normalisation rule {rule!r}; expected one of {norm.RULES}")
    ctx = ctx or AnswerContext(expected=[(value, rule)])
    text = fold(answer or "")
    if not text:
        return AnswerVerdict(False, "empty answer")
    kind = value_kind(value, rule)
    want = _parsed(kind, value)
    if want is None or want == "":
        return AnswerVerdict(False, f"expected value {value!r} cannot be read as a {kind}")
    request, reference = fold(ctx.request), fold(ctx.reference)
    expected = [(v, r) for v, r in ctx.expected] or [(value, rule)]

    if kind in ("number", "date", "id"):
        found = _mentions(kind, text)
        # an identifier inside a longer text value is part of that value, not a mention of its own
        stated = [m for m in found if _same(kind, m.value, want, tolerance)]
        if not stated:
            return AnswerVerdict(False, f"answer does not state {value!r}")
        allowed = [_parsed(kind, v) for v, r in expected if value_kind(v, r) == kind]
        allowed += [m.value for m in _mentions(kind, request)] + [m.value for m in _mentions(kind, reference)]
        others = [
            m for m in found if not any(a is not None and _same(kind, m.value, a, tolerance) for a in allowed)
        ]
        if others:
            names = [answer_slice(text, m.span) for m in others]
            return AnswerVerdict(False, f"answer also states {kind}(s) {names[:5]}", names)
        stated_spans = [m.span for m in stated]
    else:
        spans = text_mentions(text, str(value), rule)
        if not spans:
            return AnswerVerdict(False, f"answer does not state {value!r}")
        expected_text = {fold(v) for v, r in expected if value_kind(v, r) == "text"}
        keyed = {(k, fold(v)) for k, v in ctx.strings()}
        candidates = {v for _, v in keyed if any(ch.isalpha() for ch in v)} - expected_text - {""}
        # When the request itself offers the expected value ("Chicago or Madrid?"), the values it names
        # under the same output field as the expected one are the options it offers: the answer's pick
        # is the option it names first (naming the others afterwards, as context, is fine).
        want_keys = {k for k, v in keyed if v == fold(value) and k}
        alternatives = set()
        if text_mentions(request, str(value), rule):
            alternatives = {v for k, v in keyed if k in want_keys and text_mentions(request, v)}
        allowed_spans = [s for v in expected_text for s in text_mentions(text, v)]
        competitors = []
        longer = []  # candidate spans that contain a mention of the expected value
        for c in sorted(candidates):
            c_spans = text_mentions(text, c)
            if not c_spans:
                continue
            if any(_inside(s, c_spans) for s in spans):
                longer += c_spans
            if c in alternatives:
                if _picks_other(text, min(spans), c_spans):
                    competitors.append(c)
                continue
            if text_mentions(request, c) or text_mentions(reference, c):
                continue
            if all(_inside(s, allowed_spans) or s in allowed_spans for s in c_spans):
                continue  # only ever part of an expected value ("Granite Bank" in "Granite Bank - Pilot")
            competitors.append(c)
        stated_spans = [s for s in spans if not _inside(s, longer)]
        if not stated_spans:
            return AnswerVerdict(False, f"answer states {value!r} only inside a longer value")
        if competitors:
            return AnswerVerdict(False, f"answer also states {competitors[:5]}", competitors)
    if pasted(text, ctx.outputs):
        return AnswerVerdict(False, "answer pastes tool output")
    if hedged(text):
        return AnswerVerdict(False, "answer hedges", [hedged(text)])
    for a, b in stated_spans:
        before, after = text[max(0, a - 12) : a], text[b : b + 12]
        if re.search(r"(?:\bor|/)\s*$", before) or re.match(r"^\s*(?:or\b|/)", after):
            return AnswerVerdict(False, "answer offers the value as one alternative of several")
        if kind == "text" and _in_list(text, (a, b)):
            return AnswerVerdict(False, "answer lists the value among others")
    return AnswerVerdict(True, "answer states the value and nothing competing")


_SEP = r"(?:,\s*(?:and|or)\b|,|;|/|\band\b|\bor\b)"
_WORD = r"(?!(?:and|or)\b)[^\s,;/.!?:()]+"
_ITEM = rf"{_WORD}(?:\s+{_WORD}){{0,2}}"
_NEXT = re.compile(rf"^\s*{_SEP}\s*({_ITEM})\s*(?={_SEP}|[.!?;:)]|$)")
_PREV = re.compile(rf"(?:^|[:(,;/]|\band\b|\bor\b)\s*({_ITEM})\s*{_SEP}\s*$")


def _in_list(text: str, span: tuple[int, int]) -> bool:
    """Whether the words at ``span`` are one item of a list of three or more short items ("web, email,
    phone"), or of two joined by "and" that close the sentence ("web and email."): listing the values
    a field can take is not an answer."""
    items, end = 1, span[1]
    while (m := _NEXT.match(text[end:])) and items < 5:
        items, end = items + 1, end + m.end()
    start = span[0]
    while (m := _PREV.search(text[max(0, start - 80) : start])) and items < 5:
        items, start = items + 1, start - (len(text[max(0, start - 80) : start]) - m.start(1))
    if items >= 3:
        return True
    tail = text[span[1] :]
    pair = re.match(rf"^\s*\band\b\s*({_ITEM})\s*(?:[.!?]|$)", tail)
    return bool(pair)


def hedged(text: str) -> str:
    """The hedge word of folded ``text`` ("maybe", "perhaps", "not sure", ...), else ""."""
    m = _HEDGES.search(text)
    return m.group(0) if m else ""


_PART_START = _ENUMERATOR  # "(2)", "2." after a sentence: where the answer to another part begins
_JOINED = re.compile(r"^\s*(?:,|/|&|\band\b|\bor\b|\bvs\.?|\bversus\b)\s*$")


def _picks_other(text: str, first: tuple[int, int], other: list[tuple[int, int]]) -> bool:
    """For a choice the request offers: whether the answer names another option before the expected one
    in the part of the answer that first states it (its pick; a multi-part answer's parts start at "(2)"
    or "2."), or joins the two in a list ("Berlin and Madrid")."""
    start = max([m.end() for m in _PART_START.finditer(text, 0, first[0])], default=0)
    if any(start <= a < first[0] for a, _ in other):
        return True
    return any(_JOINED.match(text[b : first[0]]) or _JOINED.match(text[first[1] : a]) for a, b in other)


def answer_slice(text: str, span: tuple[int, int]) -> str:
    return text[span[0] : span[1]]
