"""Countries by their ISO 3166-1 codes and names (pycountry) and US states by their postal
codes and names (us).

"JP" / "JPN" for "Japan", "CA" for "California", "California" for "CA" written as a code
(an all-capital token of the request). A country or state the request names only through a
city is the airports normaliser's (:mod:`.airports`).

Part of :mod:`callscope.saag.normalise.knowledge`; pycountry (LGPL-2.1, the ISO tables
Debian's iso-codes keeps) and us (BSD-3-Clause; 56 states, DC and territories, ~0.1 s
against pycountry's ~0.4 s for all of ISO 3166-2) are imported on the first value shaped
like a code or a name."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from callscope.core.memo import text_cache
from callscope.saag.normalise.knowledge.base import (
    Match,
    StatedText,
    long_lived,
    name_stated,
    upper_tokens,
)

ISO_3166_1 = "pycountry (ISO 3166-1)"
US_STATES = "us (US states)"


def _pycountry() -> Any:
    import pycountry  # lazy: only values shaped like a country or state load the ISO tables

    return pycountry


def country_names(record: Any) -> tuple[str, ...]:
    """Every English name pycountry gives a country (name, common and official name)."""
    names = [record.name]
    for attr in ("common_name", "official_name"):
        extra = getattr(record, attr, None)
        if extra:
            names.append(extra)
    return tuple(names)


@text_cache(1024)
def country_by_code(code: str) -> Any:
    """The country with ISO 3166-1 alpha-2 or alpha-3 code ``code`` (written in capitals, as
    codes are: "Bra" is a cut word, not Brazil), else ``None``."""
    if not (2 <= len(code) <= 3 and code.isascii() and code.isalpha() and code.isupper()):
        return None
    countries = _pycountry().countries
    key = "alpha_2" if len(code) == 2 else "alpha_3"
    return countries.get(**{key: code.upper()})


class State(NamedTuple):
    """A US state, district or territory: its name and postal code ("California", "CA")."""

    name: str
    code: str


@lru_cache(maxsize=1)
def _us_states() -> tuple[dict[str, State], dict[str, State]]:
    import us  # lazy: only values shaped like a state load the table

    states = [State(s.name, s.abbr) for s in us.states.STATES_AND_TERRITORIES]
    return long_lived(({s.code: s for s in states}, {s.name.lower(): s for s in states}))


@text_cache(1024)
def us_state_by_code(code: str) -> State | None:
    """The US state (or district, territory) with the postal code ``code`` (in capitals),
    else ``None``."""
    if not (len(code) == 2 and code.isascii() and code.isalpha() and code.isupper()):
        return None
    return _us_states()[0].get(code)


@text_cache(4096)
def us_state_by_name(name: str) -> State | None:
    """The US state named ``name`` (any case), else ``None``."""
    if not name[:1].isupper() or len(name) > 40:
        return None
    return _us_states()[1].get(name.lower())


@lru_cache(maxsize=1)
def _country_names_lowered() -> frozenset[str]:
    """Every country's names (:func:`country_names`) in small letters: no other name is a
    country's (pycountry's ``lookup`` is a scan of every record for a name it lacks)."""
    countries = _pycountry().countries
    return long_lived(frozenset(x.lower() for c in countries for x in country_names(c)))


@text_cache(4096)
def country_by_name(name: str) -> Any:
    """The country named ``name`` (name, common or official name; any case), else ``None``."""
    if not name[:1].isupper() or len(name) > 60 or len(name) < 4:
        return None
    if name.lower() not in _country_names_lowered():
        return None
    try:
        found = _pycountry().countries.lookup(name)
    except LookupError:
        return None
    return found if name.lower() in (x.lower() for x in country_names(found)) else None


def place_named(place: str) -> tuple[State | None, Any]:
    """The US state and the country ``place`` names (a two-letter postal code or a name; an
    ISO code of at most three letters or a name): either or both ``None``."""
    state = us_state_by_code(place) if len(place) == 2 else us_state_by_name(place)
    country = country_by_code(place) if len(place) <= 3 else country_by_name(place)
    return state, country


class Countries:
    """Countries and US states: a code whose name the request states, or a name whose code
    the request writes as a code."""

    name = "countries"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if not isinstance(value, str) or not value[:1].isalpha():
            return None
        if len(value) <= 3:
            country = country_by_code(value)
            if country is not None:
                for name in country_names(country):
                    if name_stated(name, text):
                        return Match(name, value, ISO_3166_1)
            state = us_state_by_code(value)
            if state is not None and name_stated(state.name, text):
                return Match(state.name, value, US_STATES)
            return None
        codes = upper_tokens(text.query)
        if not codes:
            return None
        state = us_state_by_name(value)
        if state is not None and state.code in codes:
            return Match(state.code, value, US_STATES)
        country = country_by_name(value)
        if country is not None:
            for code in (country.alpha_2, country.alpha_3):
                if code in codes:
                    return Match(code, value, ISO_3166_1)
        return None


COUNTRIES = Countries()
