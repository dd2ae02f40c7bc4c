"""Units: which unit a value names and which units a text states (pint's unit registry).

Part of the registry grounding's rules (:mod:`callscope.saag.normalise`): a value naming a
unit ("km", "kilometers", "°F", "ounce") is grounded when the request states the same unit
in any spelling pint knows ("a 10 kilometers run", "25°C", "a 100m sprint"). The spellings,
symbols, plurals and prefixes are pint's (BSD-3-Clause); what is left here is which words
of a request may name a unit:

* a word of two letters or more, anywhere ("distance in km"), unless it is one of the
  English words pint also reads as a unit (:data:`~.knowledge.quantities.NOT_UNITS`: "in",
  "at", "pm", ...);
* a shorter symbol only directly after a number ("100m", "5 kg"), so "call m soon" states no
  metre;
* "degrees C" / "°C" and a lone C, F or K after a number are temperature scales (pint reads
  "C" as the coulomb and "F" as the farad), and so is a value that is only that letter
  (:data:`TEMPERATURE_LETTERS`).

Currencies are not pint's: :mod:`.knowledge.currencies` reads them. pint is imported, and
its registry built, the first time a value is looked up here (~1 s, once per process).
"""

from __future__ import annotations

import re
import unicodedata

from callscope.core.memo import text_cache
from callscope.saag.normalise.knowledge.quantities import NOT_UNITS, unit_name

#: a value or a request token that may name a unit: letters, and the symbols units use
_SHAPE = re.compile(r"[A-Za-z°µμΩ][A-Za-z°µμΩ/ ]{0,29}")
#: temperature scales by their letter: pint reads "C" as the coulomb and "F" as the farad
TEMPERATURE_LETTERS = {"c": "degC", "f": "degF", "k": "kelvin"}
_DEGREES = re.compile(r"(?:degrees?\s?|°\s?)([cfk])(?:[a-z]*)", re.I)
_TOKEN = re.compile(r"[A-Za-zµμΩ°][A-Za-zµμΩ°]*(?:/[A-Za-z]+)?")
_AFTER_NUMBER = re.compile(r"\d\s?([A-Za-zµμΩ°][A-Za-zµμΩ°]*(?:/[A-Za-z]+)?)")
_PER = re.compile(r"\b([a-z]{3,})\sper\s([a-z]{3,})\b", re.I)


def _temperature(text: str) -> str | None:
    m = _DEGREES.fullmatch(text.strip())
    if m is None:
        return None
    return TEMPERATURE_LETTERS.get(m.group(1).lower())


@text_cache(4096)
def unit_group(value: str) -> str | None:
    """The key (:func:`~.knowledge.quantities.unit_name`) of the unit ``value`` names as a
    whole ("km", "kilometres"; "Fahrenheit", "°F"; "c" for Celsius), else ``None``."""
    v = unicodedata.normalize("NFKC", value).strip()
    if not v or _SHAPE.fullmatch(v) is None:
        return None
    if v.lower() in TEMPERATURE_LETTERS:
        return unit_name(TEMPERATURE_LETTERS[v.lower()], spaced=False)
    return unit_name(_temperature(v) or v.replace(" per ", "/"), spaced=False)


def unit_groups_stated(text: str) -> frozenset[str]:
    """The units ``text`` states, by their keys (see the module doc for which words)."""
    low = unicodedata.normalize("NFKC", text)[:4096]
    found: set[str] = set()
    for m in _DEGREES.finditer(low):
        found.add(str(unit_name(TEMPERATURE_LETTERS[m.group(1).lower()], spaced=False)))
    for m in _AFTER_NUMBER.finditer(low):
        token = m.group(1)
        if len(token) == 1 and token.lower() in TEMPERATURE_LETTERS:
            token = TEMPERATURE_LETTERS[token.lower()]
        unit = unit_name(token, spaced=False)
        if unit is not None:
            found.add(unit)
    for m in _PER.finditer(low):
        unit = unit_name(f"{m.group(1)}/{m.group(2)}", spaced=True)
        if unit is not None:
            found.add(unit)
    for token in set(_TOKEN.findall(low)):
        if len(token) >= 2 and token.lower() not in NOT_UNITS:
            unit = unit_name(token, spaced=True)
            if unit is not None:
                found.add(unit)
    return frozenset(found)
