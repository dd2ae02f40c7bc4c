"""Airports and the places they serve (airportsdata: IATA codes, cities, states, countries).

* an IATA code for the city the request names ("LAX" for "Los Angeles airport", "BER" for
  "Berlin");
* a city for the IATA code the request writes ("Los Angeles", or "Los Angeles, CA" with
  the airport's state or country, for "I am travelling to LAX");
* a state or country for a city the request names ("California" or "CA" for "San
  Francisco", "GB" for "London"): every airport of a city of that name counts, so "Paris"
  also grounds "TX" (Paris, Texas); the request names the city, the value one of its places.

Part of :mod:`callscope.saag.normalise.knowledge`; airportsdata (MIT, updated monthly) loads
its table (about 8,000 airports with an IATA code; ~0.01 s from the kept copy, see
:func:`airports`) on the first value shaped like a code or a place; a request is scanned
for city names once (title-case spans of at most :data:`~.base.MAX_SPAN_WORDS` words)."""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Any

from callscope.core.memo import text_cache
from callscope.core.paths import airports_dir
from callscope.saag.normalise.knowledge.base import (
    MAX_SPAN_WORDS,
    Match,
    StatedText,
    long_lived,
    name_stated,
    upper_tokens,
)
from callscope.saag.normalise.knowledge.countries import place_named

_WORD = re.compile(r"[A-Za-z\u00c0-\u024f][A-Za-z\u00c0-\u024f.'-]*")


#: the fields of an airportsdata record callscope reads (the kept table holds only these)
FIELDS = ("iata", "name", "city", "subd", "country")


@lru_cache(maxsize=1)
def airports() -> dict[str, dict[str, Any]]:
    """airportsdata's table by IATA code, :data:`FIELDS` of each record (loaded once). The
    table is kept as JSON under :func:`callscope.core.paths.airports_dir`, named by the
    installed airportsdata version (JSON, not pickle: a cache file is read as data, never
    run): parsing airportsdata's CSV takes ~0.12 s, reading the kept table ~0.01 s. A kept
    table that cannot be read is rebuilt; one that cannot be written is not kept."""
    import airportsdata  # lazy: only values shaped like a code or a place load the table

    version = str(getattr(airportsdata, "__version__", "unknown"))
    kept = airports_dir() / f"iata-{re.sub(r'[^0-9A-Za-z.]', '_', version)}.json"
    try:
        table = json.loads(kept.read_text(encoding="utf-8"))
        if isinstance(table, dict) and all(isinstance(r, dict) for r in table.values()):
            return long_lived(table)
    except (OSError, ValueError):
        pass
    table = {
        code: {f: record.get(f) for f in FIELDS}
        for code, record in airportsdata.load("IATA").items()
    }
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = kept.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
        tmp.replace(kept)  # atomic: a concurrent reader sees the old file or the whole new one
    except OSError:
        pass
    return long_lived(table)


@lru_cache(maxsize=1)
def _by_city() -> dict[str, tuple[dict[str, Any], ...]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for record in airports().values():
        city = str(record.get("city") or "").strip()
        if city:
            out.setdefault(city.lower(), []).append(record)
    return long_lived({k: tuple(v) for k, v in out.items()})


def _source(record: dict[str, Any]) -> str:
    where = ", ".join(
        x for x in (record.get("city"), record.get("subd"), record.get("country")) if x
    )
    return f"airportsdata ({record['iata']}: {record.get('name', '')}, {where})"


@text_cache(512)
def cities_named(query: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The cities with an airport that ``query`` names, each with every airport of that
    name: title-case spans of at most :data:`MAX_SPAN_WORDS` words, one linear scan."""
    words = _WORD.findall(query[:4096])
    index = _by_city()
    out: list[tuple[str, dict[str, Any]]] = []
    for i, first in enumerate(words):
        if not first[:1].isupper():
            continue
        for k in range(1, MAX_SPAN_WORDS + 1):
            if i + k > len(words):
                break
            span = " ".join(words[i : i + k]).rstrip(".,'")
            for record in index.get(span.lower(), ()):
                out.append((span, record))
    return tuple(out)


def _in_place(record: dict[str, Any], place: str) -> bool:
    """The airport ``record`` lies in ``place``: its US state (name or postal code) or its
    country (name or ISO code)."""
    state, country = place_named(place)
    if state is not None and record.get("country") == "US" and record.get("subd") == state.name:
        return True
    return country is not None and record.get("country") == country.alpha_2


class Airports:
    """IATA codes, the cities they serve, and the places those cities are in."""

    name = "airports"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if not isinstance(value, str) or not value[:1].isalpha() or len(value) > 60:
            return None
        if len(value) == 3 and value.isascii() and value.isalpha() and value.isupper():
            record = airports().get(value)
            if record is not None and name_stated(str(record.get("city") or ""), text):
                return Match(str(record["city"]), value, _source(record))
        city, _, place = value.partition(",")
        city, place = city.strip(), place.strip()
        for code in sorted(upper_tokens(text.query)):  # sorted: one verdict whatever the hash seed
            if len(code) != 3:
                continue
            record = airports().get(code)
            if record is None or str(record.get("city") or "").lower() != city.lower():
                continue
            if not place or _in_place(record, place):
                return Match(code, value, _source(record))
        return self._place(value, text)

    def _place(self, value: str, text: StatedText) -> Match | None:
        """A state or country (name or code) that a city the request names is in."""
        state, country = place_named(value)
        if state is None and country is None:
            return None
        for span, record in cities_named(text.query):
            if (
                state is not None
                and record.get("country") == "US"
                and record.get("subd") == state.name
            ):
                return Match(span, value, _source(record))
            if country is not None and record.get("country") == country.alpha_2:
                return Match(span, value, _source(record))
        return None


AIRPORTS = Airports()
