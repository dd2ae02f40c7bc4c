"""Normalisation rules of the registry-aware grounding (:mod:`callscope.saag.groundings`).

Beyond the SAAG paper. The paper's grounding is lexical (section 2.3, eqs. 6-9: a value is
grounded when it occurs verbatim in the query) and names that as its limitation; on BFCL's
own gold calls that definition flags 37.5% of minimal gold calls (issue 13). These pure
functions say when a value is *stated after normalisation*, each rule a separate function so
it can be tested and ablated alone:

* :func:`norm_words`: case, NFKC, curly and straight quotes, punctuation, ``_`` ``-`` ``/``
  and whitespace runs are one space ("six_months" is stated by "the last six months").
* :func:`compact`: whitespace removed and ``**`` written ``^`` ("x**2" is stated by "y=x^2").
* :func:`number_evidence`: the numbers a text states: digit tokens (thousands separators
  dropped), number words ("twenty-five", "a dozen", "half"), scale words ("2 million",
  "5k"), percentages also as fractions ("40%" states 40 and 0.4) and fractions ("1/2"
  states 0.5).
* :func:`unit_groups_stated`: unit names and their abbreviations ("10 km" states
  "kilometers"; single-letter abbreviations only directly after a number).
* :func:`schema_defaults`: a parameter's default, from the schema's ``default`` or from its
  description ("defaults to 'units' if not specified", "(default: 9.81)").

Every function is linear in the length of its input (regular expressions without nested
quantifiers; token scans).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

from callscope.core.text import normalize_quotes

_SEPARATORS = re.compile(r"[\s_\-/\\.,;:!?'\"`()\[\]{}<>|~]+")
_WS = re.compile(r"\s+")


@lru_cache(maxsize=8192)
def norm_words(text: str) -> str:
    """``text`` lower-cased (NFKC) with quotes, punctuation, ``_``, ``-``, ``/`` and
    whitespace runs each made one space, padded with one space on both sides (so a word-
    boundary search is a plain substring search for ``" " + needle + " "``)."""
    t = unicodedata.normalize("NFKC", normalize_quotes(text)).lower()
    return " " + _SEPARATORS.sub(" ", t).strip() + " "


@lru_cache(maxsize=8192)
def compact(text: str) -> str:
    """``text`` lower-cased with all whitespace removed and ``**`` written ``^`` (math
    notation: "x ** 2", "x**2" and "x^2" are one form)."""
    t = unicodedata.normalize("NFKC", text).lower()
    return _WS.sub("", t).replace("**", "^")


_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def words_state(value: str, text_words: str) -> bool:
    """``value`` (any string) occurs as whole words in ``text_words`` (a :func:`norm_words`
    result). Scripts written without spaces between words (Chinese, Japanese, Korean) need no
    word boundary. The empty value never does."""
    needle = norm_words(value)
    if needle.strip() == "":
        return False
    if _UNSPACED.search(needle):
        return needle.strip() in text_words
    return needle in text_words


_SUFFIXES = ("ing", "ed", "es", "s", "ly")


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """A light stem: one common English suffix removed when four letters remain ("tolls" ->
    "toll", "detailed" -> "detail"); other words unchanged."""
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 4:
            return word[: -len(suf)]
    return word


def stems(text_words: str) -> frozenset[str]:
    """The stems of the words of a :func:`norm_words` result."""
    return frozenset(stem(w) for w in text_words.split())


# --------------------------------------------------------------------------- numbers

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
_WORD_TOKEN = re.compile(r"[a-z]+")
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


def _as_number(tok: str) -> int | float:
    clean = tok.replace(",", "")
    return float(clean) if "." in clean or "e" in clean.lower() else int(clean)


def _word_numbers(text: str) -> list[int | float]:
    """Numbers written in words, one linear scan: "twenty five" -> 25, "one hundred and
    twenty" -> 120, "three million" -> 3,000,000, "a dozen" -> 12, "half" -> 0.5,
    ordinals ("third") -> 3."""
    out: list[int | float] = []
    total, current, active = 0, 0, False
    for word in _WORD_TOKEN.findall(text):
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
            n = _as_number(body)
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
        return _as_number(v) if re.fullmatch(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", v) else None
    except ValueError:  # pragma: no cover
        return None


# --------------------------------------------------------------------------- units

#: unit groups: every spelling of one unit; the short forms (one letter, or a symbol) count
#: only directly after a number
UNIT_GROUPS: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(long), frozenset(short))
    for long, short in (
        (("meters", "meter", "metres", "metre"), ("m",)),
        (("kilometers", "kilometer", "kilometres", "kilometre", "km", "kms"), ()),
        (("centimeters", "centimeter", "centimetres", "centimetre", "cm"), ()),
        (("millimeters", "millimeter", "millimetres", "millimetre", "mm"), ()),
        (("miles", "mile", "mi"), ()),
        (("feet", "foot", "ft"), ()),
        (("inches", "inch"), ('"',)),
        (("yards", "yard", "yd", "yds"), ()),
        (("celsius", "centigrade", "°c", "degrees c"), ("c",)),
        (("fahrenheit", "°f", "degrees f"), ("f",)),
        (("kelvin",), ("k",)),
        (("kilograms", "kilogram", "kg", "kgs", "kilos", "kilo"), ()),
        (("grams", "gram", "g"), ()),
        (("pounds", "pound", "lbs", "lb"), ()),
        (("ounces", "ounce", "oz"), ()),
        (("liters", "liter", "litres", "litre"), ("l",)),
        (("milliliters", "milliliter", "millilitres", "ml"), ()),
        (("gallons", "gallon", "gal"), ()),
        (("seconds", "second", "sec", "secs"), ("s",)),
        (("minutes", "minute", "min", "mins"), ()),
        (("hours", "hour", "hr", "hrs"), ("h",)),
        (("days", "day"), ("d",)),
        (("weeks", "week"), ()),
        (("months", "month"), ()),
        (("years", "year", "yr", "yrs"), ()),
        (("usd", "dollars", "dollar", "us dollars"), ("$",)),
        (("eur", "euros", "euro"), ("€",)),
        (("gbp", "british pounds", "pounds sterling"), ("£",)),
        (("jpy", "yen", "japanese yen"), ("¥",)),
        (("mph", "miles per hour"), ()),
        (("kph", "km/h", "kmh", "kilometers per hour"), ()),
        (("m/s", "meters per second"), ()),
    )
)


@lru_cache(maxsize=4096)
def unit_group(value: str) -> int | None:
    """The index in :data:`UNIT_GROUPS` of the unit ``value`` names (long forms only, or a
    short form given alone), else ``None``."""
    v = unicodedata.normalize("NFKC", value).strip().lower()
    for i, (long, short) in enumerate(UNIT_GROUPS):
        if v in long or v in short:
            return i
    return None


@lru_cache(maxsize=1)
def _unit_forms() -> tuple[
    tuple[tuple[tuple[bool, str], ...], tuple[tuple[re.Pattern[str], re.Pattern[str] | None], ...]],
    ...,
]:
    """What :func:`unit_groups_stated` looks for, per group of :data:`UNIT_GROUPS`, made once:
    each long form (``True`` and its padded :func:`norm_words` form, or ``False`` and the
    form itself for a symbol-led one), each short form's patterns (after a number; before one
    for a symbol)."""
    out = []
    for long, short in UNIT_GROUPS:
        longs = tuple(
            (True, " " + norm_words(form).strip() + " ") if form[0].isalnum() else (False, form)
            for form in long
        )
        shorts = tuple(
            (
                re.compile(rf"\d\s?{re.escape(form)}(?![a-z])"),
                None if form.isalpha() else re.compile(rf"{re.escape(form)}\s?\d"),
            )
            for form in short
        )
        out.append((longs, shorts))
    return tuple(out)


def unit_groups_stated(text: str) -> frozenset[int]:
    """The unit groups ``text`` states: a long form as whole words, or a short form directly
    after a number ("10m", "25 °C", "$5" before the number for currency symbols)."""
    words = norm_words(text)
    low = unicodedata.normalize("NFKC", text).lower()
    found: set[int] = set()
    for i, (longs, shorts) in enumerate(_unit_forms()):
        if any((form in words) if padded else (form in low) for padded, form in longs):
            found.add(i)
            continue
        for after, before in shorts:
            if after.search(low) or (before is not None and before.search(low)):
                found.add(i)
                break
    return frozenset(found)


# --------------------------------------------------------------------------- defaults

_DEFAULT_IN_DESCRIPTION = re.compile(
    r"default(?:s|ed)?(?:\s+value)?(\s+(?:is|to|of|will\s+be|being)|\s*[:=])?\s*"
    r"(?:'([^'\n]{1,80})'|\"([^\"\n]{1,80})\"|`([^`\n]{1,80})`|(-?\d+(?:\.\d+)?)(?![\w.])"
    r"|([A-Za-z][\w.-]{0,40}))",
    re.I,
)
_NOT_A_DEFAULT = frozenset(
    {"if", "the", "a", "an", "is", "to", "value", "none", "null", "not", "when", "and", "or"}
)


def schema_defaults(schema: dict[str, Any] | None) -> tuple[Any, ...]:
    """The parameter's defaults: ``schema["default"]`` when present, then every value a
    description states as the default ("Default is 'units'", "defaults to 9.81", "(default:
    celsius)"). Numbers in descriptions are returned as numbers."""
    if not isinstance(schema, dict):
        return ()
    out: list[Any] = []
    if "default" in schema:
        out.append(schema["default"])
    desc = schema.get("description")
    if isinstance(desc, str) and "default" in desc.lower():
        for m in _DEFAULT_IN_DESCRIPTION.finditer(desc[:4000]):
            connector, number, word = m.group(1), m.group(5), m.group(6)
            quoted = m.group(2) or m.group(3) or m.group(4)
            if quoted is not None:
                out.append(quoted)
            elif number is not None:
                out.append(_as_number(number))
            elif word is not None and connector and word.lower() not in _NOT_A_DEFAULT:
                out.append(word.rstrip("."))  # a bare word only after "is" / "to" / ":" ...
    return tuple(out)


def schema_enum(schema: dict[str, Any] | None) -> tuple[Any, ...]:
    """The parameter's ``enum`` members (``()`` when it has none)."""
    if not isinstance(schema, dict):
        return ()
    enum = schema.get("enum")
    return tuple(enum) if isinstance(enum, list) else ()


# --------------------------------------------------------------------------- dates, times

_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        (
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
        )
    )
    for m in names
}
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_Y_FIRST = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_Y_LAST = re.compile(r"(?<!\d)(\d{1,2})[-/.](\d{1,2})[-/.](\d{4}|\d{2})(?!\d)")
_COMPACT_DATE = re.compile(r"(?<!\d)(\d{4})(\d{2})(\d{2})(?!\d)")
_MONTH_DAY = re.compile(
    rf"\b({_MONTH_RE})\.?[\s.]?(?:the\s)?(\d{{1,2}}){_ORD}(?!\d)(?:,?\s?(\d{{4}}))?", re.I
)
_DAY_MONTH = re.compile(
    rf"\b(\d{{1,2}}){_ORD}\s(?:of\s)?(?:this\s)?({_MONTH_RE})\b\.?(?:,?\s(\d{{4}}))?", re.I
)
_YEAR_MONTH_DAY = re.compile(rf"\b(\d{{4}})\s+({_MONTH_RE})\.?\s+(\d{{1,2}}){_ORD}\b", re.I)
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")
_MONTH_YEAR = re.compile(rf"\b({_MONTH_RE})\.?,?\s+(?:of\s+)?(\d{{4}})(?!\d)", re.I)
_DAY_BEFORE = re.compile(r"\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:the\s+)?$", re.I)
_NUMERIC_MONTH_YEAR = re.compile(
    r"(?<![\d/.-])(?:(\d{1,2})[/-](\d{4})|(\d{4})[/-](\d{1,2}))(?![\d/.-])"
)
#: a whole value naming a month of a year: "04-2022", "2022/04", "2022-04-01" (its first day)
_VALUE_MONTH_YEAR = re.compile(
    r"(\d{1,2})[-/.](\d{4})|(\d{4})[-/.](\d{1,2})|(\d{4})-(\d{1,2})-0?1(?:T00:00(?::00)?Z?)?"
)
_TIME_12 = re.compile(r"(?<!\d)(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s?m\b\.?", re.I)
_TIME_WORDS = re.compile(
    r"(?<!\d)(\d{1,2})(?::(\d{2}))?\s(?:o'clock\s)?in\sthe\s(morning|afternoon|evening|night)\b",
    re.I,
)
_NOON = re.compile(r"\b(noon|midday)\b", re.I)
_TIME_24 = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?::\d{2})?(?![\d])")
_VALUE_TIME = re.compile(
    r"(?:^|[T\s])(\d{1,2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?$"
)

Date = tuple[int | None, int, int]
_ANY_DIGIT = re.compile(r"\d")


def _valid(y: int | None, m: int, d: int) -> bool:
    return 1 <= m <= 12 and 1 <= d <= 31 and (y is None or 1000 <= y <= 9999)


def _year(y: str) -> int:
    v = int(y)
    return v + 2000 if len(y) == 2 else v


def _numeric_dates(text: str) -> set[Date]:
    out: set[Date] = set()
    for m in _Y_FIRST.finditer(text):
        y, a, b = int(m.group(1)), int(m.group(2)), int(m.group(3))
        out |= {x for x in ((y, a, b), (y, b, a)) if _valid(*x)}
    for m in _Y_LAST.finditer(text):
        a, b, y = int(m.group(1)), int(m.group(2)), _year(m.group(3))
        out |= {x for x in ((y, a, b), (y, b, a)) if _valid(*x)}
    for m in _COMPACT_DATE.finditer(text):
        x = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if _valid(*x):
            out.add(x)
    return out


def date_evidence(text: str) -> tuple[frozenset[Date], frozenset[int]]:
    """The dates ``text`` states as ``(year or None, month, day)`` (numeric dates in either
    day/month order, "March 14th", "14th of March 2023", "2023 April 21st"), and the years it
    states anywhere."""
    if _ANY_DIGIT.search(text) is None:  # every pattern below needs a digit
        return frozenset(), frozenset()
    out = _numeric_dates(text)
    for m in _MONTH_DAY.finditer(text):
        x = (int(m.group(3)) if m.group(3) else None, _MONTHS[m.group(1).lower()], int(m.group(2)))
        if _valid(*x):
            out.add(x)
    for m in _DAY_MONTH.finditer(text):
        x = (int(m.group(3)) if m.group(3) else None, _MONTHS[m.group(2).lower()], int(m.group(1)))
        if _valid(*x):
            out.add(x)
    for m in _YEAR_MONTH_DAY.finditer(text):
        x = (int(m.group(1)), _MONTHS[m.group(2).lower()], int(m.group(3)))
        if _valid(*x):
            out.add(x)
    years = frozenset(int(y) for y in _YEAR.findall(text))
    return frozenset(out), years


def month_year_evidence(text: str) -> frozenset[tuple[int, int]]:
    """The months of a year ``text`` states as such, ``(year, month)``: "April 2022", "Apr.
    2022", "July of 2022", "04/2022", "2022-04". A full date ("2023-03-05", "the 19th of
    March, 2024") states a day, not a month, and is not listed (:func:`month_year_stated`
    still reads its month, but not that month's first day)."""
    out: set[tuple[int, int]] = set()
    if _ANY_DIGIT.search(text) is None:
        return frozenset()
    for x in _MONTH_YEAR.finditer(text):
        if _DAY_BEFORE.search(text, max(0, x.start() - 16), x.start()) is None:
            out.add((int(x.group(2)), _MONTHS[x.group(1).lower()]))  # not "19th of March, 2024"
    for x in _NUMERIC_MONTH_YEAR.finditer(text):
        m, y = (x.group(1), x.group(2)) if x.group(1) else (x.group(4), x.group(3))
        if 1 <= int(m) <= 12:
            out.add((int(y), int(m)))
    return frozenset(out)


def month_year_stated(
    value: str, month_years: frozenset[tuple[int, int]], dates: frozenset[Date]
) -> bool:
    """A value naming a month of a year ("04-2022", "2022-04", "Apr 2022") that the text
    states as a month (``month_years``, :func:`month_year_evidence`) or as a day of it
    (``dates``, :func:`date_evidence`); or the first day of a month the text states as a
    month ("2022-07-01" for "since July 2022"; not for a stated day of it)."""
    v = value.strip()
    if not (month_years or dates) or len(v) > 24:
        return False
    m = _VALUE_MONTH_YEAR.fullmatch(v)
    if m is not None:
        g = m.groups()
        if g[4]:  # the first day of a month
            return (int(g[4]), int(g[5])) in month_years
        year, month = (int(g[1]), int(g[0])) if g[0] else (int(g[2]), int(g[3]))
    else:
        m = _MONTH_YEAR.fullmatch(v)
        if m is None:
            return False
        year, month = int(m.group(2)), _MONTHS[m.group(1).lower()]
    return (year, month) in month_years or any(y == year and mo == month for y, mo, _ in dates)


def time_evidence(text: str) -> frozenset[tuple[int, int]]:
    """The clock times ``text`` states as ``(hour 0-23, minute)``: "7 PM", "10:00 a.m.",
    "19:00"."""
    out: set[tuple[int, int]] = set()
    if _ANY_DIGIT.search(text) is None:  # every pattern but noon's needs a digit
        return frozenset({(12, 0)}) if _NOON.search(text) else frozenset()
    for m in _TIME_12.finditer(text):
        h, mi = int(m.group(1)), int(m.group(2) or 0)
        if 1 <= h <= 12 and mi < 60:
            out.add(((h % 12) + (12 if m.group(3).lower() == "p" else 0), mi))
    for m in _TIME_WORDS.finditer(text):
        h, mi = int(m.group(1)), int(m.group(2) or 0)
        if 1 <= h <= 12 and mi < 60:
            pm = m.group(3).lower() != "morning" and h != 12
            out.add((h + 12 if pm else h % 12, mi))
    if _NOON.search(text):
        out.add((12, 0))
    for m in _TIME_24.finditer(text):
        h, mi = int(m.group(1)), int(m.group(2))
        if h < 24 and mi < 60:
            out.add((h, mi))
    return frozenset(out)


def date_time_stated(
    value: str, dates: frozenset[Date], years: frozenset[int], times: frozenset[tuple[int, int]]
) -> bool:
    """A date, time or date-time string ``value`` that the text's ``dates`` / ``times``
    (:func:`date_evidence`, :func:`time_evidence`) state. A date matches a stated one with the
    same month and day and either the same year, or no stated year while the text states no
    other year (the year is then the implied current one). Every part the value holds must
    be stated."""
    v = value.strip()
    if len(v) > 40:
        return False
    vdates = _numeric_dates(v)
    tm = _VALUE_TIME.search(v)
    if not vdates and tm is None:
        return False
    if tm is not None:
        h, mi = int(tm.group(1)), int(tm.group(2))
        whole_day = vdates and (h, mi) in ((0, 0), (23, 59))  # a date's start or end
        if (h, mi) not in times and not whole_day:
            return False
    if vdates:
        for y, m, d in vdates:
            if (y, m, d) in dates:
                return True
            if (None, m, d) in dates and (not years or y in years):
                return True
        return False
    return True


# --------------------------------------------------------------------------- descriptions

_COMMA_FORMAT = re.compile(r"[A-Za-z][\w.]*, [A-Za-z][\w.]*")


def comma_format(schema: dict[str, Any] | None) -> bool:
    """The parameter's description shows a comma-separated format ("'City, State'", "such as
    'New York, NY'")."""
    desc = schema.get("description") if isinstance(schema, dict) else None
    return isinstance(desc, str) and _COMMA_FORMAT.search(desc[:4000]) is not None


_STOP = frozenset(
    {"a", "an", "the", "of", "for", "to", "and", "or", "is", "in", "service", "services"}
)


def description_words(schema: dict[str, Any] | None) -> frozenset[str]:
    """The stems of the words of the parameter's description (its format and examples)."""
    desc = schema.get("description") if isinstance(schema, dict) else None
    return _description_stems(desc[:4000]) if isinstance(desc, str) else frozenset()


@lru_cache(maxsize=4096)
def _description_stems(desc: str) -> frozenset[str]:
    return stems(norm_words(desc))


_DESCRIBED = re.compile(
    r"(?<![\w.])['\"]?([\w.-]{1,20})['\"]?\s*(?:for|represents|means|corresponds\s+to|=|:|is)\s+"
    r"((?:an?\s+|the\s+)?[\w-]+(?:\s+[\w-]+){0,3})",
    re.I,
)


@lru_cache(maxsize=4096)
def _described_table(desc: str) -> dict[str, tuple[tuple[str, ...], ...]]:
    table: dict[str, list[tuple[str, ...]]] = {}
    for m in _DESCRIBED.finditer(desc):
        words = [w for w in m.group(2).lower().replace("-", " ").split() if w not in _STOP]
        if words:
            table.setdefault(m.group(1).lower(), []).append(tuple(words[:3]))
    return {k: tuple(v) for k, v in table.items()}


def described_phrases(value: Any, schema: dict[str, Any] | None) -> tuple[tuple[str, ...], ...]:
    """What the description says ``value`` stands for: ``1 for Bangkok``, ``'2' represents an
    ironing service``, ``2 = ironing`` -> the content words of each phrase (at most three,
    stop words dropped). One scan of the description, cached."""
    desc = schema.get("description") if isinstance(schema, dict) else None
    if not isinstance(desc, str) or isinstance(value, bool):
        return ()
    return _described_table(desc[:4000]).get(str(value).strip().lower(), ())


_PLACEHOLDER = re.compile(r"\{[A-Za-z_][\w-]{0,40}\}|<[A-Za-z_][\w-]{0,40}>")
#: template matching reads at most this many characters of a value (bounded cost)
MAX_TEMPLATE_VALUE = 2048


def description_templates(schema: dict[str, Any] | None) -> tuple[tuple[str, ...], ...]:
    """The templates the parameter's description shows, each a whitespace-free token with
    ``{name}`` or ``<name>`` placeholders ("e.g., 'https://{ip}/api/v1/nodes?fabric={fabric}'")
    as its literal parts: ``("https://", "/api/v1/nodes?fabric=", "")``. Templates with two
    adjacent placeholders or no literal text are left out (they cannot be split)."""
    desc = schema.get("description") if isinstance(schema, dict) else None
    if not isinstance(desc, str) or ("{" not in desc and "<" not in desc):
        return ()
    return _templates(desc[:4000])


@lru_cache(maxsize=4096)
def _templates(desc: str) -> tuple[tuple[str, ...], ...]:
    out = []
    for token in desc.split():
        token = token.strip("'\"`()[],;:.")
        parts = tuple(_PLACEHOLDER.split(token))
        if len(parts) >= 2 and any(parts) and all(parts[1:-1]):
            out.append(parts)
    return tuple(out)


def template_fills(value: str, parts: tuple[str, ...]) -> list[str] | None:
    """What ``value`` puts in each placeholder of the template ``parts``
    (:func:`description_templates`), or ``None`` when it does not follow the template. Each
    literal is taken at its first occurrence after the previous one (one left-to-right scan);
    every fill is non-empty."""
    first, *middle, last = parts
    if len(value) > MAX_TEMPLATE_VALUE or not value.startswith(first) or not value.endswith(last):
        return None
    pos, end = len(first), len(value) - len(last)
    fills = []
    for literal in middle:
        i = value.find(literal, pos + 1, end)
        if i < 0:
            return None
        fills.append(value[pos:i])
        pos = i + len(literal)
    if end <= pos:
        return None
    fills.append(value[pos:end])
    return fills


# --------------------------------------------------------------------------- relative dates

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_RELATIVE_DAYS = {"tomorrow": 1, "yesterday": -1, "today": 0, "tonight": 0}


def relative_dates(text: str, dates: frozenset[Date]) -> frozenset[Date]:
    """Dates a request states relative to a full date it also states ("today is 2023-10-01 ...
    tomorrow", "next Wednesday", "a week later"): from each stated ``(year, month, day)``, the
    day before and after, the day after tomorrow, the next two occurrences of every weekday the
    text names, and a week later."""
    if not dates:
        return frozenset()  # nothing to count from (what the scan below finds too)
    import datetime as dt  # lazy: only requests with a full date and a relative word need it

    low = text.lower()
    words = set(_WORD_TOKEN.findall(low))
    offsets = {v for k, v in _RELATIVE_DAYS.items() if k in words}
    if "day after tomorrow" in low:
        offsets.add(2)
    if "week" in words:
        offsets.add(7)
    weekdays = [i for i, w in enumerate(_WEEKDAYS) if w in words]
    if not offsets and not weekdays:
        return frozenset()
    out: set[Date] = set()
    for y, m, d in dates:
        if y is None:
            continue
        try:
            ref = dt.date(y, m, d)
        except ValueError:
            continue
        days = set(offsets)
        for w in weekdays:
            ahead = (w - ref.weekday()) % 7 or 7
            days |= {ahead, ahead + 7}
        for k in days:
            x = ref + dt.timedelta(days=k)
            out.add((x.year, x.month, x.day))
    return frozenset(out)
