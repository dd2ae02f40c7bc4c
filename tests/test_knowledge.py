"""Stage 3's knowledge (issue 37): a value the request states in other words is grounded
through a well-kept library, with evidence saying which library matched which words; the same
value with a request that does not state it (its negative twin) stays flagged.

Driven through ``callscope score`` as a user runs it (one subprocess for every row). Every
expected value was worked out by hand: 50 mH = 0.05 H, 100 µF = 0.0001 F, 5 km = 5,000 m,
5 ft 10 in = 70 in, 11 PM = 23 h, 2023-04-24 is a Monday so the Wednesday after it is
2023-04-26, "the 9th" of September 2023 is 2023-09-09, "April 13th of next year" from
2023-10-01 is 2024-04-13."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from callscope.records import Diagnosis
from callscope.saag.cascade import diagnose
from callscope.saag.gated import GATED_DEFAULT
from callscope.saag.messages import gated_message
from callscope.types import ToolCall


def _function(param: str, kind: str) -> list[dict[str, Any]]:
    return [
        {
            "name": "f",
            "description": "a tool",
            "parameters": {
                "type": "object",
                "properties": {param: {"type": kind, "description": "a value"}},
                "required": [param],
            },
        }
    ]


#: (id, query, param, value, words the evidence names, library it names) for a grounded
#: value, and the negative twin's query (the same value, not stated)
CASES: list[tuple[str, str, str, Any, str, str, str]] = [
    # currencies: Babel / pycountry
    ("currency_name", "How many Canadian dollars for 500 US dollars?", "to", "CAD",
     "'Canadian Dollar' → CAD", "Babel", "How many yen for 500 US dollars?"),
    ("currency_symbol", "Convert £20 to euros", "from", "GBP", "'£' → GBP", "Babel",
     "Convert $20 to euros"),
    ("currency_country_name", "How much is 20000 Japanese Yen in United States Dollar?",
     "to", "USD", "'United States Dollar' → USD", "Babel",
     "How much is 20000 Japanese Yen in Canadian Dollar?"),
    # countries: pycountry; US states: us
    ("country_alpha2", "What is the population of Japan?", "country", "JP", "'Japan' → JP",
     "pycountry (ISO 3166-1)", "What is the population of Korea?"),
    ("country_alpha3", "What is the population of Japan?", "country", "JPN",
     "'Japan' → JPN", "pycountry (ISO 3166-1)", "What is the population of China?"),
    ("country_for_a_code", "Visa rules for JP citizens", "country", "Japan", "'JP' → Japan",
     "pycountry (ISO 3166-1)", "Visa rules for KR citizens"),
    ("state_code", "Hotels in California please", "state", "CA", "'California' → CA",
     "us (US states)", "Hotels in Nevada please"),
    ("state_for_a_code", "Hotels in CA please", "state", "California", "'CA' → California",
     "us (US states)", "Hotels in NV please"),
    # languages: pycountry (ISO 639)
    ("language_region", "Answer me in English", "lang", "en-US", "'English' → en-US",
     "pycountry (ISO 639)", "Answer me in Spanish"),
    ("language", "Translate this sentence into French", "lang", "fr", "'French' → fr",
     "pycountry (ISO 639)", "Translate this sentence into German"),
    # airports: airportsdata
    ("airport_code", "Flights from the Los Angeles airport tomorrow", "origin", "LAX",
     "'Los Angeles' → LAX", "airportsdata", "Flights from Boston tomorrow"),
    ("city_of_airport", "Hotels are costly, I need a house. I am travelling to LAX.",
     "where_to", "Los Angeles, CA", "'LAX' → Los Angeles, CA", "airportsdata",
     "Hotels are costly, I need a house. I am travelling to JFK."),
    ("state_of_city", "The crime rate in San Francisco in 2020", "state", "California",
     "'San Francisco' → California", "airportsdata", "The crime rate in Boston in 2020"),
    ("country_of_a_city", "The weather in London today", "country", "GB", "'London' → GB",
     "airportsdata", "The weather in Madrid today"),
    # cities and their short names: the GeoNames table
    ("city_short_name", "How is the weather in Philly?", "city", "Philadelphia",
     "'Philly' → Philadelphia", "GeoNames", "How is the weather in Pittsburgh?"),
    ("city_abbreviation", "Find me the best SF psychologist", "city", "San Francisco, CA",
     "'SF' → San Francisco, CA", "GeoNames", "Find me the best LA psychologist"),
    ("city_with_state", "A counselor in Berkeley, please", "city", "Berkeley, CA",
     "'Berkeley' → Berkeley, CA", "GeoNames", "A counselor in Oakland, please"),
    # ticker symbols: the S&P 500 list
    ("ticker", "Get the stock price of Apple for the last 5 days", "ticker", "AAPL",
     "'Apple' → AAPL", "S&P 500", "Get the stock price of Microsoft for the last 5 days"),
    # time zones: the IANA tz database
    ("timezone", "Convert 3pm from New York time to Berlin time", "tz", "America/New_York",
     "'New York' → America/New_York", "IANA tz database",
     "Convert 3pm from Boston time to Berlin time"),
    # quantities in other units: pint
    ("millihenry", "An LC circuit with an inductance of 50mH", "inductance", 0.05,
     "'50mH' → 0.05", "pint (0.05 henry)", "An LC circuit with an inductance of 60mH"),
    ("microfarad", "An LC circuit with a capacitance of 100µF", "capacitance", 0.0001,
     "'100µF' → 0.0001", "pint (0.0001 farad)", "An LC circuit with a capacitance of 100nF"),
    ("kilometres", "I ran 5 km this morning", "meters", 5000, "'5 km' → 5000",
     "pint (5000 meter)", "I ran 5 miles this morning"),
    ("feet_and_inches", "A person of height 5ft 10in", "height", 70, "'5ft 10in' → 70",
     "pint (70 inch)", "A person of height 5ft 11in"),
    ("duration_string", "Set a countdown for 5 mins", "duration", "5 minutes",
     "'5 mins' → 5 minutes", "pint", "Set a countdown for 6 mins"),
    # numbers stated as phrases: callscope's phrase table
    ("from_rest", "It started from rest and accelerated at 9.8 m/s^2 for 5 seconds",
     "initial_velocity", 0, "'from rest' → 0", "callscope's phrase table (a body at rest",
     "It started at 3 m/s and accelerated at 9.8 m/s^2 for 5 seconds"),
    ("every_hour", "each bacterium duplicates every hour for 6 hours", "frequency", 1,
     "'every hour' → 1", "callscope's phrase table (once per unit of time)",
     "each bacterium duplicates twice an hour for 6 hours"),
    ("pi_multiple", "Plot a sine wave from 0 to 2 pi", "end", 6.2832, "'2 pi' → 6.2832",
     "callscope's phrase table (π", "Plot a sine wave from 0 to 2 radians"),
    # typing slips and spacing: RapidFuzz
    ("slip", "I need a weather update for Chcicago", "city", "Chicago",
     "'chcicago' → Chicago", "RapidFuzz (optimal string alignment), 1 edit",
     "I need a weather update for Cicero"),
    ("spacing", "Order 5 fries from uber eats mc donalds", "restaurant", "McDonald's",
     "'mc donalds' → McDonald's", "the same letters, spaced",
     "Order 5 fries from uber eats burger king"),
    # acronyms of stated words
    ("acronym", "remove their email addresses and social security numbers", "column", "ssn",
     "'social security numbers' → ssn", "initials of the request's words",
     "remove their email addresses and phone numbers"),
    # a city abbreviation typed in lower case (no vowel)
    ("city_abbreviation_lower_case", "get the weather of nyc", "city", "New York, NY",
     "'NYC' → New York, NY", "GeoNames", "get the weather of bos"),
]  # fmt: skip

#: rule-shaped values (no evidence line: reason ``normalised``) and their twins
RULES: list[tuple[str, str, str, Any, str]] = [
    ("number_words", "a table for twenty-five people", "n", 25, "a table for thirty-five people"),
    ("hour_of_a_time", "a restaurant open until at least 11 PM", "hours", 23,
     "a restaurant open until at least 11 AM"),
    ("west_longitude", "the forecast at 37.8651 N, 119.5383 W", "lon", -119.5383,
     "the forecast at 37.8651 N, 119.5383 E"),
    ("spaced_minus", "the area under y=3x^2 + 2x - 4", "c", -4, "the area under y=3x^2 + 2x + 4"),
    ("two_dozen", "three pumpkins and two dozen eggs", "eggs", 24,
     "three pumpkins and two eggs"),
    ("ordinal_date", "a hotel room for 3 nights starting from 1st June 2022", "start",
     "2022-06-01", "a hotel room for 3 nights starting from 1st July 2022"),
    ("weekday_from_told_today", "the forecast for the upcoming Wednesday, today is Monday "
     "April 24th 2023", "date", "2023-04-26",
     "the forecast for the upcoming Thursday, today is Monday April 24th 2023"),
    ("lone_day_of_a_month", "a drama on the 9th, currently is sep 2023", "date", "2023-09-09",
     "a drama on the 10th, currently is sep 2023"),
    ("next_year", "the weather on April 13th of next year? today is 2023.10.1", "date",
     "2024-04-13", "the weather on April 13th? today is 2023.10.1"),
    ("unit_spelling", "a distance of 10 kilometers", "unit", "km", "a distance of 10 miles"),
    ("unit_symbol", "it is 25°C outside", "unit", "celsius", "it is 77°F outside"),
    ("number_words_decimal", "a dose of one point five grams", "dose", 1.5,
     "a dose of two point five grams"),
    # a date or time moved by a stated duration; the span between two stated dates or times
    ("date_plus_nights", "a hotel room for 3 nights starting from 1st June 2022", "end",
     "2022-06-04", "a hotel room starting from 1st June 2022"),
    ("time_plus_duration", "a housekeeper on 20/3/2024 at 9:00 for a duration of 3 hours",
     "end", "2024-03-20 12:00:00", "a housekeeper on 20/3/2024 at 9:00 for a duration of 2 hours"),
    ("days_between", "a room for the dates of August 15th to August 17th, 2023", "stay", 2,
     "a room from August 15th, 2023"),
    ("seconds_between", "the readings from 15:30 to 15:32 today", "timespan", 120,
     "the readings from 15:30 today"),
    # a line break written as an escape; a musical note's sign; a compact date with a dash
    ("escaped_line_break", "classify these sentences\\nlink my account\\nhello", "greeting",
     "hello", "classify these sentences\\nlink my account\\nhi there"),
    ("music_note", "the musical scale of C sharp major", "key", "C#",
     "the musical scale of C major"),
    ("compact_date_with_a_dash", "the weather on Saturday, which is 2023-0101", "date",
     "2023-01-01", "the weather on Saturday"),
]  # fmt: skip

_PROVINCE = {
    "type": "integer",
    "description": "ID of the province. Example: 1 for Bangkok, 2 for Chiang Mai.",
}
_SONG = {
    "type": "string",
    "description": "The search query, in the format 'track:SongName artist:ArtistName'.",
}
_SERVER = {"type": "string", "enum": ["all", "postgres", "graphql"], "default": "all"}
_TARGETS = {
    "type": "array",
    "description": "Target entities, such as 'brand:Nike' or 'country:USA'.",
    "items": {"type": "string"},
}
_TICKETS = {"type": "integer", "description": "The number of tickets.", "default": 1}

#: values a parameter's schema grounds with the request's words: (id, query, param, value,
#: schema, reason, the negative twin's query)
SCHEMA_RULES: list[tuple[str, str, str, Any, dict[str, Any], str, str]] = [
    # (a twin states a number: a number for a request without one has no grounding context)
    ("described_pair", "a cleaner in Bangkok, 5 stars", "province_id", 1, _PROVINCE,
     "described", "a cleaner in Phuket, 5 stars"),
    ("search_syntax", "Play the song 'Friends' by Marshmello", "query",
     "track:Friends artist:Marshmello", _SONG, "format", "Play the song 'Friends'"),
    ("enum_member_in_a_word", "List all PostgreSQL servers", "type", "postgres", _SERVER,
     "enum", "List all GraphQL servers"),
    ("array_items_read_with_the_array_description", "How have views of Apple changed?",
     "targets", ["brand:Apple"], _TARGETS, "format", "How have views of Samsung changed?"),
    # the default is not contradicted by the numbers of dates ("April 15th" is no 4 or 15),
    # but is by a number of people
    ("default_beside_dates", "Flights departing April 15th, returning April 22nd 2023",
     "number_of_tickets", 1, _TICKETS, "default", "Flights for 3 people departing April 15th"),
]  # fmt: skip


def _row(
    case_id: str, query: str, param: str, value: Any, schema: dict[str, Any] | None = None
) -> dict[str, Any]:
    kind = "number" if isinstance(value, int | float) else "string"
    functions = _function(param, kind)
    if schema is not None:
        functions[0]["parameters"]["properties"][param] = schema
    return {
        "id": case_id,
        "query": query,
        "functions": functions,
        "output": json.dumps({"name": "f", "arguments": {param: value}}),
    }


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("callscope")
    cmd = [exe] if exe else [sys.executable, "-m", "callscope.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every row of :data:`CASES` and :data:`RULES` and its twin, scored by the CLI once."""
    rows = []
    for case_id, query, param, value, _, _, twin in CASES:
        rows += [_row(case_id, query, param, value), _row(f"{case_id}~", twin, param, value)]
    for case_id, query, param, value, twin in RULES:
        rows += [_row(case_id, query, param, value), _row(f"{case_id}~", twin, param, value)]
    for case_id, query, param, value, schema, _, twin in SCHEMA_RULES:
        rows += [
            _row(case_id, query, param, value, schema),
            _row(f"{case_id}~", twin, param, value, schema),
        ]
    folder = tmp_path_factory.mktemp("knowledge")
    src, out = folder / "cases.jsonl", folder / "scored.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    proc = _cli("score", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return {r["id"]: r for r in map(json.loads, out.read_text("utf-8").splitlines())}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_value_a_library_links_to_the_request_is_grounded_with_its_evidence(
    case: tuple[str, str, str, Any, str, str, str], scored: dict[str, dict[str, Any]]
) -> None:
    case_id, _, param, _, words, library, _ = case
    row = scored[case_id]
    assert row["stage"] == 0, row
    assert row["grounded"] == {param: "knowledge"}
    note = row["evidence"][param]
    assert note.startswith(words + " by "), note
    assert library in note, note
    assert row["calls"][0]["evidence"] == row["evidence"]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_same_value_for_a_request_that_does_not_state_it_stays_flagged(
    case: tuple[str, str, str, Any, str, str, str], scored: dict[str, dict[str, Any]]
) -> None:
    row = scored[case[0] + "~"]
    assert row["stage"] == 3, row
    assert row["grounded"] == {} and "evidence" not in row


@pytest.mark.parametrize("case", RULES, ids=[c[0] for c in RULES])
def test_rule_shaped_values_and_their_twins(
    case: tuple[str, str, str, Any, str], scored: dict[str, dict[str, Any]]
) -> None:
    case_id, _, param, _, _ = case
    assert scored[case_id]["stage"] == 0, scored[case_id]
    assert scored[case_id]["grounded"][param] in ("normalised", "unit")
    assert scored[case_id + "~"]["stage"] == 3, scored[case_id + "~"]


@pytest.mark.parametrize("case", SCHEMA_RULES, ids=[c[0] for c in SCHEMA_RULES])
def test_values_the_schema_grounds_with_the_requests_words_and_their_twins(
    case: tuple[str, str, str, Any, dict[str, Any], str, str], scored: dict[str, dict[str, Any]]
) -> None:
    case_id, _, param, _, _, reason, _ = case
    assert scored[case_id]["stage"] == 0, scored[case_id]
    assert scored[case_id]["grounded"] == {param: reason}
    assert scored[case_id + "~"]["stage"] == 3, scored[case_id + "~"]


def test_the_correction_keeps_a_library_grounded_value_with_its_evidence() -> None:
    functions = [
        {
            "name": "convert",
            "parameters": {
                "type": "object",
                "properties": {"to": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["to", "amount"],
            },
        }
    ]
    call = ToolCall("convert", {"to": "CAD", "amount": 700})
    d = diagnose(call, functions, "How many Canadian dollars for 500 US dollars?")
    assert d.stage == 3 and d.numeric == ["amount"]
    message = gated_message(d, call, GATED_DEFAULT)
    assert message is not None
    assert "to = \"CAD\" ('Canadian Dollar' → CAD by Babel (CLDR) / pycountry" in message
    assert Diagnosis.from_dict(d.to_dict()).evidence == d.evidence  # kept in the run store


def test_the_case_browser_row_carries_the_evidence() -> None:
    from callscope.report.case_data import _attempt_record

    d = diagnose(
        ToolCall("f", {"origin": "BER"}), _function("origin", "string"), "Flights from Berlin"
    )
    record = _attempt_record({"attempt": 1, "row": {"stage": 0}, "diagnosis": d.to_dict()})
    assert record["row"]["evidence"] == {
        "origin": "'Berlin' → BER by airportsdata (BER: Berlin Brandenburg Airport, Berlin, "
        "Brandenburg, DE)"
    }
    js = (Path(__file__).parents[1] / "src/callscope/report/report.js").read_text("utf-8")
    assert "row.evidence[p]" in js  # the verdict line shows it (as text: el() sets textContent)


def test_libraries_load_only_for_values_of_their_type() -> None:
    code = (
        "import sys\n"
        "from callscope.saag.cascade import diagnose\n"
        "from callscope.types import ToolCall\n"
        "heavy = ('pint', 'pycountry', 'babel', 'airportsdata', 'text_to_num')\n"
        "assert not [m for m in heavy if m in sys.modules], 'loaded on import'\n"
        "fs = [{'name': 'f', 'parameters': {'type': 'object', 'properties': {'city': "
        "{'type': 'string'}, 'n': {'type': 'integer'}}, 'required': ['city', 'n']}}]\n"
        "d = diagnose(ToolCall('f', {'city': 'Paris', 'n': 3}), fs, 'Book 3 rooms in Paris')\n"
        "assert d.stage == 0\n"
        "assert not [m for m in heavy if m in sys.modules], 'loaded for stated values'\n"
        "d = diagnose(ToolCall('f', {'city': 'Paris', 'n': 3000}), fs, 'Book 3 km in Paris')\n"
        "assert 'pint' in sys.modules and d.evidence == {'n': \"'3 km' → 3000 by pint (3000 "
        'meter)"}\n'
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_the_kept_airport_table_is_rebuilt_when_unreadable_and_read_when_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """airportsdata's table is kept as JSON under the cache root (~0.01 s to read instead of
    ~0.12 s to parse its CSV); a kept file that is not the table is rebuilt, a kept table is
    what is read, and a cache root that cannot be written still gives the table."""
    import airportsdata  # lazy: the knowledge extra's own table

    from callscope.saag.normalise.knowledge import airports as ap

    monkeypatch.setenv("CALLSCOPE_CACHE", str(tmp_path))
    kept = tmp_path / "airportsdata" / f"iata-{airportsdata.__version__}.json"
    kept.parent.mkdir()
    kept.write_text("[1, 2", encoding="utf-8")  # a torn write
    ap.airports.cache_clear()
    try:
        table = ap.airports()
        assert table["LAX"]["city"] == "Los Angeles" and table["LAX"]["subd"] == "California"
        assert json.loads(kept.read_text(encoding="utf-8"))["LAX"] == table["LAX"]
        # what is kept is what is read: a marked copy comes back as written
        marked = {**table, "LAX": {**table["LAX"], "city": "Kept"}}
        kept.write_text(json.dumps(marked), encoding="utf-8")
        ap.airports.cache_clear()
        assert ap.airports()["LAX"]["city"] == "Kept"
        # a cache root that is a file: nothing kept, the table all the same
        monkeypatch.setenv("CALLSCOPE_CACHE", str(kept))
        ap.airports.cache_clear()
        assert ap.airports()["JFK"]["city"] == "New York"
    finally:
        ap.airports.cache_clear()


def test_readings_by_factors_are_pints_own_floats() -> None:
    """A multiplicative unit's readings come from factors pint gives for 1.0 (issue 49): the
    same floats as pint's conversions, bit for bit; an offset unit is still converted by pint."""
    from callscope.saag.normalise.knowledge.quantities import _factors, _readings, units

    for magnitude, unit in ((5.0, "km"), (150.0, "lb"), (5.5, "ft"), (100.0, "uF"), (65.0, "mph")):
        q = units().Quantity(magnitude, unit)
        assert _factors(q.units) is not None
        readings = dict((name, value) for value, name in _readings(q))
        assert readings[str(q.to_base_units().units)] == q.to_base_units().magnitude
    q = units().Quantity(150.0, "lb")
    assert dict((n, v) for v, n in _readings(q))["kilogram"] == q.to("kilogram").magnitude
    assert _factors(units().Quantity(25.0, "degC").units) is None  # offset: pint converts


def test_a_spaced_phrase_is_a_unit_only_when_pint_names_each_word() -> None:
    from callscope.saag.normalise.units import unit_group

    assert unit_group("San Francisco") is None
    for phrase, same in (("square feet", "square foot"), ("kilowatt hour", "kWh"), ("N m", "J")):
        assert unit_group(phrase) is not None and unit_group(phrase) == unit_group(same)


def test_a_country_is_found_by_its_names_only() -> None:
    from callscope.saag.normalise.knowledge.countries import country_by_name

    assert country_by_name("Japan").alpha_2 == "JP"
    assert country_by_name("Bolivia, Plurinational State of").alpha_2 == "BO"
    assert country_by_name("Japn") is None and country_by_name("Chicago") is None


def test_the_unit_name_test_answers_as_pint_does() -> None:
    """``_named_by_pint`` runs pint's own test (a prefix, a unit name, a suffix) over fewer
    pairs than pint (issue 49, the cold pass), reading pint's registry tables: on every unit
    name bare, plural and behind every prefix, and on every word of the BFCL requests, it
    answers as ``parse_unit_name`` does (a pint that reads names otherwise fails here)."""
    import re

    from callscope.benchmarks.bfcl.single import load_bfcl_single
    from callscope.saag.normalise.knowledge.quantities import _named_by_pint, units

    reg = units()
    names = sorted(reg._units)
    words = {w for name in names for w in (name, name + "s", name.upper(), name[:-1])}
    words |= {p + name for p in reg._prefixes for name in names[::7]}
    words |= {w for c in load_bfcl_single() for w in re.findall(r"[^\W\d_]+", c.query)}
    words |= {"e", "u", "re", "kilometers", "km", "mph", "Paris", "uF", "µF", "kWh", "sq"}
    differ = [w for w in sorted(words) if _named_by_pint(w) != bool(reg.parse_unit_name(w))]
    assert len(words) > 10_000
    assert differ == []
    assert _named_by_pint("kilometers") and _named_by_pint("mph") and not _named_by_pint("Paris")
