"""Physical quantities and unit conversion (pint): a number or a quantity the request states
in another unit.

"0.05" for "50mH" (henry), "0.0001" for "100µF", "5000" for "5 km" (metres), "70" for
"5ft 10in" (inches), "300" for "5 minutes" (seconds), "5 minutes" for "5 mins". The request
is scanned once for a number directly followed by a unit name pint knows; each quantity is
then read in its own unit, in SI base units and in the usual units of its kind
(:data:`TARGETS`), and consecutive quantities of one kind ("5ft 10in") also as their sum.

Which words count as a unit: any unit name or symbol of pint's default registry written
after a number, except single letters and the English words that are also symbols (
:data:`NOT_UNITS`: "in", "a", "am", "pm", ...) when a space separates them from the number
("5 in a row" is no length; "10in" is). A converted value matches when it is equal, or
equal after rounding to the decimals the value itself has (at most 4): "68.04" for "150
lbs" in kilograms.

Part of :mod:`callscope.saag.normalise.knowledge`; pint (BSD-3-Clause) is imported and its
registry built once per process (~1 s), on the first number value the request does not
state as written while the request has a number followed by a word.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

from callscope.core.memo import text_cache
from callscope.core.paths import pint_dir
from callscope.saag.normalise.knowledge.base import Match, StatedText, long_lived

PINT = "pint"
#: a number directly followed (at most one space) by a unit-like token
_QUANTITY = re.compile(
    r"(?<![\w.])(-?\d+(?:\.\d+)?)( ?)([A-Za-zµμ°Ω][A-Za-zµμ°Ω]*(?:/[A-Za-z]+)?(?:\^\d)?)"
)
#: English words that pint also reads as unit symbols: not a unit after a space
NOT_UNITS = frozenset(
    {
        "in",
        "a",
        "at",
        "am",
        "pm",
        "are",
        "as",
        "b",
        "bar",
        "c",
        "d",
        "e",
        "h",
        "l",
        "s",
        "t",
        "x",
        "y",
        "to",
        "of",
        "or",
        "percent",
        "pi",
        "point",
        "dozen",
        "is",
        "it",
        "be",
        "we",
        "me",
        "my",
        "no",
        "so",
        "do",
        "go",
        "up",
        "us",
        "on",
        "by",
        "an",
        "he",
        "if",
        "hi",
        "ok",
    }
)
#: the units a call may carry a quantity of each kind in (beside its own and SI base units)
TARGETS: dict[str, tuple[str, ...]] = {
    "[length]": ("meter", "kilometer", "centimeter", "millimeter", "mile", "foot", "inch", "yard"),
    "[mass]": ("kilogram", "gram", "pound", "ounce"),
    "[time]": ("second", "minute", "hour", "day", "week"),
    "[temperature]": ("degree_Celsius", "degree_Fahrenheit", "kelvin"),
    "[length] ** 3": ("liter", "milliliter", "gallon"),
    "[length] / [time]": ("meter / second", "kilometer / hour", "mile / hour"),
}
_MAX_QUANTITIES = 32
_DIGIT = re.compile(r"\d")


@lru_cache(maxsize=1)
def units() -> Any:
    """pint's default unit registry (built once per process; its parsed definitions kept in
    :func:`callscope.core.paths.pint_dir`, or parsed each time where that is not writable)."""
    import pint  # lazy: only a value pint may have to read loads pint

    try:
        folder = pint_dir()
        folder.mkdir(parents=True, exist_ok=True)
        return long_lived(pint.UnitRegistry(cache_folder=folder))
    except Exception:  # an unwritable or broken cache: pint parses its definitions itself
        return long_lived(pint.UnitRegistry())


_DEFINITION = re.compile(r"^\s*([^\s=#@;]+)\s*=(.*)$")


@lru_cache(maxsize=1)
def _pint_names() -> tuple[frozenset[str], tuple[str, ...]]:
    """Every unit name, symbol and alias pint's definition files give, and every prefix:
    read from the files themselves, without importing pint (~1 s), so that a word that
    cannot be a unit never imports it. A superset of what pint parses (a name found here may
    still be refused by pint; one not found here never parses)."""
    import importlib.util  # lazy: only the first unit-shaped word needs the files
    from pathlib import Path

    spec = importlib.util.find_spec("pint")
    names: set[str] = set()
    prefixes: set[str] = {""}
    for folder in spec.submodule_search_locations or () if spec else ():
        for path in Path(folder).glob("*_en.txt"):
            for line in path.read_text(encoding="utf-8").splitlines():
                m = _DEFINITION.match(line)
                if m is None:
                    continue
                fields = [m.group(1), *(f.strip() for f in m.group(2).split("=")[1:])]
                if fields[0].endswith("-"):
                    prefixes |= {f[:-1] for f in fields if f.endswith("-") and f != "_-"}
                else:
                    names |= {f.split(";")[0].strip() for f in fields if f and f != "_"}
    return frozenset(names), tuple(sorted(prefixes, key=len, reverse=True))


def _maybe_unit(token: str) -> bool:
    """``token`` may be a unit pint knows: a name, symbol or alias of its definition files,
    after one of its prefixes and with or without a plural "s"."""
    names, prefixes = _pint_names()
    if not names:  # the files were not found: let pint decide
        return True
    known = _prefix_set()
    for size in _prefix_sizes():  # one look-up per prefix length, not a test per prefix
        if token[:size] in known:
            rest = token[size:]
            if rest in names or (rest.endswith("s") and rest[:-1] in names):
                return True
    return False


#: words of letters written with spaces ("San Francisco", "square feet"): pint reads them as
#: a product of units
_SPACED_WORDS = re.compile(r"[A-Za-z]+(?: +[A-Za-z]+)+")
#: the words pint's parser reads as no unit of their own: powers ("square metre", "metre
#: cubed"), "per" and "dimensionless"
_NO_UNIT_WORDS = frozenset({"square", "sq", "cubic", "squared", "cubed", "per", "dimensionless"})


@lru_cache(maxsize=1)
def _prefix_set() -> frozenset[str]:
    return frozenset(_pint_names()[1])


@lru_cache(maxsize=1)
def _prefix_sizes() -> tuple[int, ...]:
    """The lengths of pint's prefixes, longest first (``0``: no prefix)."""
    return tuple(sorted({len(p) for p in _pint_names()[1]}, reverse=True))


@text_cache(4096)
def _unit(token: str, spaced: bool) -> Any:
    """pint's unit for ``token`` (``None`` when pint knows none, or the word is excluded)."""
    if spaced and (len(token) < 2 or token.lower() in NOT_UNITS):
        return None
    if token.lower() in ("percent", "pi", "dozen"):
        return None
    token = token.replace("μ", "µ")
    if not any(c in token for c in "/^ *") and not _maybe_unit(token):
        return None  # no name pint defines: pint is not imported for it
    try:
        if not any(c in token for c in "/^ *") and not _named_by_pint(token):
            return None  # no unit of that name (pint's fast path; parse_units is ~50x slower)
        if _SPACED_WORDS.fullmatch(token) and not all(
            w in _NO_UNIT_WORDS or _named_by_pint(w) for w in token.split()
        ):
            return None  # pint multiplies spaced words: one it cannot name fails the whole
        unit = units().parse_units(token)
    except Exception:  # pint raises several kinds for words that are no unit
        return None
    return unit if not unit.dimensionless else None


def _named_by_pint(word: str) -> bool:
    """``bool(units().parse_unit_name(word))``: whether pint's registry names a unit ``word``
    (a prefix it starts with, a suffix it ends with, the name between them one of the
    registry's units: ``_yield_unit_triplets``' own test), trying only the prefixes ``word``
    starts with, not every prefix and suffix pair (~15 us a new word). pint itself answers
    for a registry read otherwise (case-insensitive, suffixes that name something)."""
    reg = units()
    # pint's own tables (private: a pint that keeps them elsewhere is asked itself)
    prefixes = getattr(reg, "_prefixes", None)
    suffixes = getattr(reg, "_suffixes", None)
    names = getattr(reg, "_units", None)
    if (
        not isinstance(prefixes, dict)
        or not isinstance(suffixes, dict)
        or names is None
        or not getattr(reg, "case_sensitive", False)
        or any(suffixes.values())
    ):
        return bool(reg.parse_unit_name(word))
    for size in _registry_prefix_sizes():
        if size > len(word) or word[:size] not in prefixes:
            continue
        for suffix in suffixes:
            if not word.endswith(suffix):
                continue
            name = word[size:]
            if suffix:
                name = name[: -len(suffix)]
                if len(name) == 1:
                    continue
            if name in names:
                return True
    return False


@lru_cache(maxsize=1)
def _registry_prefix_sizes() -> tuple[int, ...]:
    """The lengths of the prefixes of pint's registry."""
    return tuple(sorted({len(p) for p in units()._prefixes}))


@text_cache(4096)
def unit_name(token: str, spaced: bool) -> str | None:
    """A key of the unit ``token`` names, the same for every spelling of one unit ("km",
    "kilometres"; "mph", "mile/hour"): its kind and its size and zero in SI base units;
    ``None`` when pint knows no such unit (see :func:`_unit` for ``spaced``; a capitalised
    word is also tried in small letters: "Fahrenheit")."""
    unit = _unit(token, spaced)
    if unit is None and token[:1].isupper() and token[1:].islower():
        unit = _unit(token.lower(), spaced)
    if unit is None:
        return None
    try:
        one = units().Quantity(1, unit).to_base_units()
        zero = units().Quantity(0, unit).to_base_units()
    except Exception:  # a unit pint cannot express in base units
        return str(unit)
    return f"{one.dimensionality}|{one.magnitude:.9g}|{zero.magnitude:.9g}"


def _quantities(text: str) -> list[tuple[str, Any, bool]]:
    """The ``(words, pint quantity, written)`` triples ``text`` states (``written``: its
    number is in the text as it is), consecutive ones of one kind also summed."""
    out: list[tuple[str, Any, bool]] = []
    previous: tuple[int, str, Any] | None = None
    for m in _QUANTITY.finditer(text[:4096]):
        if len(out) >= _MAX_QUANTITIES:
            break
        unit = _unit(m.group(3), bool(m.group(2)))
        if unit is None:
            previous = None
            continue
        q = units().Quantity(float(m.group(1)), unit)
        out.append((m.group(0), q, True))
        if previous is not None and text[previous[0] : m.start()].strip(" ,") in ("", "and"):
            try:
                total = previous[2] + q.to(previous[2].units)
                out.append((f"{previous[1]} {m.group(0)}", total.to(q.units), False))
            except Exception:  # other kinds, or offset units (temperatures) that do not add
                pass
        previous = (m.end(), m.group(0), q)
    return out


@text_cache(256)
def _container(unit: str) -> Any:
    """The unit expression ``unit`` as pint reads it for ``Quantity.to(unit)`` (the same
    ``to_units_container`` call), read once: ``to`` parses a string on every call, and the
    readings of a request convert each quantity to several units."""
    from pint.util import to_units_container  # lazy: pint is loaded by the quantity already

    return to_units_container(unit, units())


def _unprefixed(q: Any) -> Any:
    """``q`` in its unit without an SI prefix (100 µF as 0.0001 farad), or ``None``."""
    try:
        prefix, name, suffix = units().parse_unit_name(str(q.units))[0]
    except Exception:  # a compound unit ("meter / second"): no single name
        return None
    if not prefix or suffix:
        return None
    return q.to(_container(name))


def _converted(q: Any) -> list[tuple[Any, str]]:
    """``q`` itself, then ``q`` without its SI prefix, in SI base units and in the usual units
    of its kind (:data:`TARGETS`), each with its unit's name, up to the first conversion pint
    refuses."""
    out = [(q, f"{q.units}")]
    try:
        plain = _unprefixed(q)
        if plain is not None:
            out.append((plain, f"{plain.units}"))
        base = q.to_base_units()
        out.append((base, f"{base.units}"))
        kind = str(q.dimensionality)
        for target in TARGETS.get(kind, ()):
            out.append((q.to(_container(target)), target))
    except Exception:  # a conversion pint refuses
        pass
    return out


@lru_cache(maxsize=256)
def _factors(unit: Any) -> tuple[tuple[float, str], ...] | None:
    """What :func:`_converted` makes of 1.0 ``unit``: each reading's factor and unit name, or
    ``None`` when a unit on the way has an offset or a logarithm (temperatures, decibels).
    pint converts a multiplicative unit by one product, ``magnitude * factor``
    (``PlainRegistry._convert``), and 1.0 times the factor is the factor: a magnitude times
    these factors gives pint's floats bit for bit, without pint's per-call parsing and
    look-ups."""
    out = []
    for reading, name in _converted(units().Quantity(1.0, unit)):
        if not getattr(reading, "_is_multiplicative", False):  # pint's own test; else: pint
            return None
        out.append((reading.magnitude, name))
    return tuple(out)


def _readings(q: Any) -> list[tuple[float, str]]:
    """The magnitudes of ``q`` (each with its unit) in its own unit, without its SI prefix, in
    SI base units and in the usual units of its kind (:data:`TARGETS`): a multiplicative
    unit's by its :func:`_factors`, others by pint."""
    factors = _factors(q.units)
    if factors is None:
        out = [(float(x.magnitude), name) for x, name in _converted(q)]
    else:
        magnitude = float(q.magnitude)
        out = [(float(magnitude * factor), name) for factor, name in factors]
    return [x for x in out if math.isfinite(x[0])]


@text_cache(512)
def stated_quantities(
    query: str,
) -> tuple[tuple[str, Any, tuple[tuple[float, str], ...]], ...]:
    """Every quantity ``query`` states with its readings (computed once per request); the
    reading a written number already gives is left out (the number rules see it)."""
    first = _DIGIT.search(query)  # a quantity starts with its number, at most a "-" before
    if first is None or _QUANTITY.search(query, max(0, first.start() - 1)) is None:
        return ()
    return tuple(
        (words, q, tuple(_readings(q))[1 if written else 0 :])
        for words, q, written in _quantities(query)
    )


def same_number(value: float, reading: float) -> bool:
    """``reading`` is ``value``: equal, within 1e-9 relative, or equal after rounding to the
    decimals ``value`` itself has (1 to 4: :func:`_decimals`)."""
    return _same_at(value, reading, _decimals(value))


def _same_at(value: float, reading: float, decimals: int | None) -> bool:
    """:func:`same_number` with ``value``'s decimals read already (a value compared with
    many readings reads them once)."""
    if value == reading or abs(value - reading) <= 1e-9 * max(abs(value), abs(reading)):
        return True
    return (
        decimals is not None and abs(reading) >= 10**-decimals and round(reading, decimals) == value
    )


def _decimals(value: float) -> int | None:
    """The decimals ``value`` is written with (its ``repr``) when 1 to 4, else ``None``."""
    text = repr(value)
    if "e" in text or "." not in text:
        return None
    decimals = len(text.split(".")[1])
    return decimals if 1 <= decimals <= 4 else None


class Quantities:
    """A number the request states as a quantity in another unit, or a quantity string the
    request states in another spelling or unit."""

    name = "quantities"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            try:
                number = float(value)
            except OverflowError:  # an integer no float holds is no stated quantity
                return None
            if not math.isfinite(number):
                return None
            stated = stated_quantities(text.query)  # () without a quantity
            places = _decimals(number) if stated else None  # read once, not once a reading
            for words, _, readings in stated:
                for r, unit in readings:
                    if _same_at(number, r, places):
                        return Match(words, str(value), f"{PINT} ({r:g} {unit})")
            return None
        if not value[:1].isdigit() and value[:1] != "-":
            return None
        mine = _quantities(value) if _QUANTITY.fullmatch(value.strip()) else []
        if len(mine) != 1:
            return None
        q = mine[0][1]
        for words, stated, _ in stated_quantities(text.query):
            try:
                same = same_number(float(q.to(stated.units).magnitude), float(stated.magnitude))
            except Exception:  # other kinds
                continue
            if same:
                return Match(words, value, PINT)
        return None


QUANTITIES = Quantities()
