"""Units and their abbreviations: which unit groups a text states.

Part of the registry grounding's rules (:mod:`callscope.saag.normalise`)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from callscope.saag.normalise.words import norm_words

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
