"""Numbers a text states: digits, number words, scales, percentages, fractions, durations.

Part of the registry grounding's rules (:mod:`callscope.saag.normalise`)."""

from __future__ import annotations

import re
from functools import lru_cache

_UNITS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_SINGLE = {"dozen": 12, "half": 0.5, "quarter": 0.25, "twice": 2, "double": 2, "triple": 3}
_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
#: a digit token with optional thousands separators, decimals, and what follows it
_NUM = re.compile(
    r"(?<![\w.])(-)?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:e[-+]?\d{1,3})?|\.\d+)"
    r"(?:\s?(%|percent\b|k\b|m\b|bn\b|million\b|billion\b|thousand\b|hundred\b"
    r"|minutes?\b|mins?\b|hours?\b|hrs?\b|days?\b|weeks?\b))?"
)
_FRACTION = re.compile(r"(?<![\w.])(\d+)\s?/\s?(\d+)(?![\w.])")
WORD_TOKEN = re.compile(r"[a-z]+")
#: a duration also stated in smaller units ("3 minutes" states 180 seconds)
_DURATIONS = {
    "minute": (60,),
    "min": (60,),
    "hour": (60, 3600),
    "hr": (60, 3600),
    "day": (24, 1440, 86400),
    "week": (7, 168),
}
#: how often per year a compounding or payment frequency word means
_FREQUENCIES = {
    "annually": 1,
    "yearly": 1,
    "quarterly": 4,
    "monthly": 12,
    "weekly": 52,
    "daily": 365,
}
#: month names as numbers ("February" states 2); "may" and "march" are left out (common words)
_MONTH_NUMBERS = {
    m: i + 1
    for i, m in enumerate(
        (
            "january",
            "february",
            "",
            "april",
            "",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        )
    )
    if m
}
_SUFFIX_SCALE = {
    "k": 1000,
    "thousand": 1000,
    "hundred": 100,
    "m": 10**6,
    "million": 10**6,
    "bn": 10**9,
    "billion": 10**9,
}


#: every word :func:`_word_numbers` reads (any other word only ends a number)
_NUMBER_WORDS = frozenset(
    {*_UNITS, *_TENS, *_SCALES, *_SINGLE, *_ORDINALS, *_FREQUENCIES, *_MONTH_NUMBERS, "and"}
)


def as_number(tok: str) -> int | float:
    clean = tok.replace(",", "")
    return float(clean) if "." in clean or "e" in clean.lower() else int(clean)


def _word_numbers(text: str) -> list[int | float]:
    """Numbers written in words, one linear scan: "twenty five" -> 25, "one hundred and
    twenty" -> 120, "three million" -> 3,000,000, "a dozen" -> 12, "half" -> 0.5,
    ordinals ("third") -> 3."""
    out: list[int | float] = []
    total, current, active = 0, 0, False
    for word in WORD_TOKEN.findall(text):
        if word not in _NUMBER_WORDS:  # most words: what the last branch does with them
            if active:
                out.append(total + current)
                total, current, active = 0, 0, False
            continue
        if word in _UNITS or word in _TENS:
            current += _UNITS.get(word, 0) + _TENS.get(word, 0)
            active = True
        elif word in _SCALES and active:
            scale = _SCALES[word]
            if scale == 100:
                current *= 100
            else:
                total += current * scale
                current = 0
        elif word == "and" and active:
            continue
        else:
            if active:
                out.append(total + current)
            total, current, active = 0, 0, False
            if word in _SINGLE:
                out.append(_SINGLE[word])
            elif word in _ORDINALS:
                out.append(_ORDINALS[word])
            elif word in _FREQUENCIES:
                out.append(_FREQUENCIES[word])
            elif word in _MONTH_NUMBERS:
                out.append(_MONTH_NUMBERS[word])
            elif word in _SCALES:  # "a hundred"
                out.append(_SCALES[word])
    if active:
        out.append(total + current)
    return out


def number_evidence(text: str) -> tuple[int | float, ...]:
    """Every number ``text`` states, in the forms a call may carry it (see the module doc).
    Duplicates removed, order of first appearance kept."""
    lowered = text.lower()
    out: list[int | float] = []
    for m in _NUM.finditer(lowered):
        sign, body, suffix = m.group(1), m.group(2), m.group(3)
        try:
            n = as_number(body)
        except ValueError:  # pragma: no cover - the regex admits numbers only
            continue
        if sign:
            n = -n
        out.append(n)
        groups = body.split(",")
        if len(groups) >= 3 and len(groups[0]) == 3 and "." not in body:
            out.extend(int(part) for part in groups)  # "200,300,400" may be a list
        if suffix in ("%", "percent"):
            out.append(n / 100)
        elif suffix in _SUFFIX_SCALE:
            out.append(n * _SUFFIX_SCALE[suffix])
        elif suffix:
            unit = suffix[:-1] if suffix.endswith("s") else suffix
            out.extend(n * f for f in _DURATIONS.get(unit, ()))
    for m in _FRACTION.finditer(lowered):
        num, den = int(m.group(1)), int(m.group(2))
        if den:
            out.append(num / den)
    words = _word_numbers(lowered)
    out.extend(words)
    if "percent" in lowered:  # "forty percent" states 0.4 too
        out.extend(n / 100 for n in words)
    seen: set[float | int] = set()
    uniq: list[int | float] = []
    for n in out:
        if n not in seen:
            seen.add(n)
            uniq.append(n)
    return tuple(uniq)


@lru_cache(maxsize=8192)
def parse_number_string(value: str) -> int | float | None:
    """The number a string value holds ("10", "1,000", "2.5"), else ``None``."""
    v = value.strip()
    if not v or len(v) > 40:
        return None
    try:
        return as_number(v) if re.fullmatch(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", v) else None
    except ValueError:  # pragma: no cover
        return None
