"""The detector validity audit: hand-worked cases, then a BFCL subset with pinned counts."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from callscope.cli import app
from callscope.saag.audit import KINDS, audit, gold_calls
from callscope.saag.audit_engine import audit_counts, write_audit
from callscope.types import Case

WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
}
TIME = {
    "name": "get_time",
    "parameters": {
        "type": "object",
        "properties": {"zone": {"type": "string"}},
        "required": ["zone"],
    },
}


def cases() -> list[Case]:
    return [
        Case(
            "a",
            "What's the weather in Berlin in celsius?",
            [WEATHER, TIME],
            gold={
                "name": "get_weather",
                "arguments": {"city": "Berlin", "unit": "celsius"},
                "acceptable": {"city": ["Berlin"], "unit": ["celsius", ""]},
            },
        ),
        Case(
            "b",
            "Time in Paris, please",
            [TIME, WEATHER],
            gold={"name": "get_time", "arguments": {"zone": "Paris"}},
        ),
        Case("c", "no gold here", [TIME]),
    ]


def by_kind(result: Any, case_id: str) -> dict[str, tuple[bool, int]]:
    return {r.kind: (r.flagged, r.stage) for r in result.rows if r.case_id == case_id}


def test_gold_calls_full_and_minimal() -> None:
    full, minimal = gold_calls(cases()[0])  # type: ignore[misc]
    assert full.arguments == {"city": "Berlin", "unit": "celsius"}
    assert minimal.arguments == {"city": "Berlin"}  # unit may be omitted (and is optional)
    assert gold_calls(cases()[2]) is None


@pytest.mark.parametrize("mode", ["lexical", "registry"])
def test_hand_worked_case(mode: str) -> None:
    got = by_kind(audit(cases(), grounding=mode), "a")
    # the minimal gold {city: Berlin} is a negative in both modes and passes; so does the full one
    assert got["gold_full"] == (False, 0) and got["gold_minimal"] == (False, 0)
    # stage 1: "get_weather" with one adjacent swap, the other registered name, an invented name
    assert got["misspelled_name"] == (True, 1)
    assert got["other_registry_name"] == (True, 2)  # get_time lacks zone, city is spurious
    assert got["invented_name"] == (True, 1)
    # stage 2: city dropped; a spurious parameter added. No parameter name of >= 5 letters
    # (city) -> no drifted positive; no number -> no unstated-number positive
    assert got["missing_required"] == (True, 2)
    assert got["spurious_param"] == (True, 2)
    assert "drifted_param" not in got and "unstated_number" not in got
    # stage 3: city -> "Zanzibar Quartz"; city -> nothing from case b (its parameter is zone,
    # not city), so no other-case positive; one string argument -> nothing to swap
    assert got["unstated_string"] == (True, 3)
    assert "other_case_value" not in got and "swapped_values" not in got
    # "Berlin" -> "Ber": a fragment of a word. The paper's h is 0 (PartialRatio 100): lexical
    # passes it; the registry-aware mode flags it
    assert got["truncated_string"] == ((mode == "registry"), 3 if mode == "registry" else 0)
    # city (required) -> "": flagged in both modes (the registry mode reads "" as "left out"
    # only for an optional parameter), a hard drift at stage 3
    assert got["blanked_required"] == (True, 3)


def test_other_case_value_and_swap() -> None:
    two_city = [
        Case(
            f"q{i}",
            q,
            [WEATHER],
            gold={"name": "get_weather", "arguments": {"city": city, "unit": unit}},
        )
        for i, (q, city, unit) in enumerate(
            [
                ("Weather in Oslo in celsius", "Oslo", "celsius"),
                ("Rome, fahrenheit", "Rome", "fahrenheit"),
            ]
        )
    ]
    result = audit(two_city, grounding="registry")
    got = by_kind(result, "q0")
    assert got["other_case_value"] == (True, 3)  # city "Rome" (or unit "fahrenheit") from q1
    # swapped: city="celsius", unit="Oslo"; both are stated words, but "Oslo" is no member
    # of unit's enum -> the registry-aware mode flags it (lexical: both verbatim, passes)
    assert got["swapped_values"] == (True, 3)
    assert by_kind(audit(two_city, grounding="lexical"), "q0")["swapped_values"] == (False, 0)


ROUND = {
    "name": "round_number",
    "parameters": {
        "type": "object",
        "properties": {
            "x": {"type": "number"},
            "decimals": {"type": "integer", "description": "Decimal places. Default is 2."},
            "mode": {"type": "string", "enum": ["half_up", "half_even"]},
        },
        "required": ["x"],
    },
}


def test_a_stated_number_replaced_by_its_default_is_detected() -> None:
    """defaulted_number: "to 3 decimals" with decimals = 2 (the schema's default) is the
    default the request contradicts; the audit builds it and the registry mode flags it."""
    case = Case(
        "r",
        "Round 3.14159 to 3 decimals",
        [ROUND],
        gold={"name": "round_number", "arguments": {"x": 3.14159, "decimals": 3}},
    )
    rows = [r for r in audit([case], grounding="registry").rows if r.kind == "defaulted_number"]
    assert [(r.detail, r.flagged, r.stage) for r in rows] == [("decimals: 3 -> default 2", True, 3)]


def test_a_gold_value_outside_its_enum_is_named_as_such() -> None:
    case = Case(
        "e",
        "Round 2.5 the banker's way",
        [ROUND],
        gold={"name": "round_number", "arguments": {"x": 2.5, "mode": "bankers"}},
    )
    result = audit([case], grounding="registry")
    (row,) = [r for r in result.rows if r.kind == "gold_minimal"]
    assert row.flagged and row.detail == "stage 3: value outside its enum"


def test_deterministic_for_a_seed_and_written_three_ways(tmp_path: Path) -> None:
    a = audit(cases(), grounding="registry", seed=3)
    b = audit(cases(), grounding="registry", seed=3)
    assert [r.__dict__ for r in a.rows] == [r.__dict__ for r in b.rows]
    paths = write_audit([audit(cases(), grounding="lexical"), a], tmp_path)
    payload = json.loads(paths["json"].read_text())
    assert [x["grounding"] for x in payload["audits"]] == ["lexical", "registry"]
    assert "| misspelled_name | detection | 1 |" in paths["md"].read_text()
    header = paths["csv"].read_text().splitlines()[0]
    assert header == "grounding,category,kind,polarity,stage,n,flagged,rate,lo,hi,at_stage"


def test_csv_quotes_a_cell_with_comma_quote_and_newline(tmp_path: Path) -> None:
    """audit.csv is written by the table writer: a category holding a comma, a quote and a
    newline reads back as one cell (csv quoting), and the row count is the summary's."""
    category = 'bfcl, "live"\nsimple'
    odd = [Case(c.id, c.query, c.functions, c.gold, meta={"category": category}) for c in cases()]
    result = audit(odd, grounding="registry")
    paths = write_audit([result], tmp_path)
    rows = list(csv.reader(io.StringIO(paths["csv"].read_text(encoding="utf-8"))))
    summary = [*result.summary(), *result.summary(by_category=True)]
    assert len(rows) == 1 + len(summary)
    assert {r[1] for r in rows[1:]} == {"all", category}
    assert all(len(r) == len(rows[0]) for r in rows)


# --------------------------------------------------------------------------- real BFCL


@pytest.fixture(scope="module")
def bfcl_cases() -> list[Case]:
    from callscope.benchmarks.sources import build_benchmark

    return build_benchmark("bfcl", scales=[5], n=120, seed=0).cases


def test_bfcl_subset_counts(bfcl_cases: list[Case]) -> None:
    lexical = audit_counts(audit(bfcl_cases, grounding="lexical"))
    registry = audit_counts(audit(bfcl_cases, grounding="registry"))
    n = len(bfcl_cases)
    assert (
        lexical[("cascade", "gold_minimal", True)] + lexical[("cascade", "gold_minimal", False)]
        == n
    )
    # the registry-aware mode flags far fewer correct calls than the paper's lexical one
    assert (
        registry[("cascade", "gold_minimal", True)] < lexical[("cascade", "gold_minimal", True)] / 2
    )
    # every stage-1 and stage-2 positive is detected in both modes
    for counts in (lexical, registry):
        for kind, stage in KINDS.items():
            if stage in (1, 2) and kind != "other_registry_name":
                assert counts[("cascade", kind, False)] == 0, kind
    assert (
        lexical[("cascade", "gold_minimal", True)],
        registry[("cascade", "gold_minimal", True)],
    ) == PINNED_FA


#: false alarms on the minimal gold of the first 120 BFCL S=5 cases (seed 0): (lexical,
#: registry). Pinned from a run of this code; the same audit over all 1,911 cases is in the
#: README ("How far to trust the diagnosis"). Registry 16 -> 14 when a month of a year
#: (simple_python_286: "04-2022" for "April 2022") and a description's URL template
#: (live_simple_130: "https://{ip}/...") became grounded; 14 -> 11 with the knowledge rule,
#: text2num and pint (issue 37); 11 -> 8 with a key:value search syntax the description shows
#: (live_simple_235: "track:Friends artist:Marshmello"), an enum member named inside a word
#: (live_multiple_108: "postgres" for "PostgreSQL") and a described value read where the
#: description runs pairs together (live_multiple_924: "Example: 1 for Bangkok"); 8 -> 7 with
#: acronyms (multiple_8: "SD" for "San Diego").
PINNED_FA = (40, 7)


def test_audit_command(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in cases()))
    res = CliRunner().invoke(app, ["audit", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out" / "audit.md").exists()
    empty = tmp_path / "nogold.jsonl"
    empty.write_text(json.dumps(cases()[2].to_dict()) + "\n")
    res = CliRunner().invoke(app, ["audit", str(empty)])
    assert res.exit_code == 2
