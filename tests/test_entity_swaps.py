"""An entity swapped for another of the same kind is an invented value, not a slip (issue 46):
"Austria" for Australia, "Niger" for Nigeria, "GOOG" for GOOGL, "Bolton" for Boston are
hard drifts (the guard corrects them), where a string that is no entity ("Australa") stays a
soft drift and the right entity passes.

Driven through ``callscope score`` as a user runs it, in both grounding modes. Every
expectation was worked out by hand: Austria, Australia, Niger and Nigeria are ISO 3166-1
countries; GOOG and GOOGL are both S&P 500 symbols (Alphabet's class C and class A shares);
Boston, Bolton, Santa Clara and Santa Clarita are GeoNames cities of 100,000 people or more;
"Australa", "Austira", "Nigeira", "GOOGLL", "Bostn" and "Santa Clarrita" are in no table."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

#: (id, request, parameter, the swapped entity, a slip of the right one, the right one); the
#: registry mode's verdict on the swap (hard) and on the slip (soft), the right one passes
CASES: list[tuple[str, str, str, str, str, str]] = [
    ("austria_for_australia", "What is the population of Australia?", "country", "Austria",
     "Australa", "Australia"),
    # before issue 46 the registry mode read "Austria" as the user's slip for "Australia"
    ("australia_for_austria", "What is the population of Austria?", "country", "Australia",
     "Austira", "Austria"),
    ("niger_for_nigeria", "What is the population of Nigeria?", "country", "Niger",
     "Nigeira", "Nigeria"),
    ("goog_for_googl", "What is the stock price of GOOGL today?", "symbol", "GOOG", "GOOGLL",
     "GOOGL"),
    ("bolton_for_boston", "What's the weather in Boston right now?", "city", "Bolton", "Bostn",
     "Boston"),
    ("santa_clara_for_santa_clarita", "Find restaurants in Santa Clarita", "city",
     "Santa Clara", "Santa Clarrita", "Santa Clarita"),
]  # fmt: skip

#: the lexical mode (the SAAG paper's) flags the same swaps hard where the paper's h(v) is
#: above 0; "Niger" inside "Nigeria" and "GOOG" inside "GOOGL" score PartialRatio 100, so the
#: paper's h is 0 and they pass there (the paper's definition, kept)
LEXICAL_HARD = ("austria_for_australia", "australia_for_austria", "bolton_for_boston",
                "santa_clara_for_santa_clarita")  # fmt: skip


def _row(case_id: str, query: str, param: str, value: str) -> dict[str, Any]:
    return {
        "id": case_id,
        "query": query,
        "functions": [
            {
                "name": "lookup",
                "description": "Look a place or a listed company up.",
                "parameters": {
                    "type": "object",
                    "properties": {param: {"type": "string", "description": "what to look up"}},
                    "required": [param],
                },
            }
        ],
        "output": json.dumps({"name": "lookup", "arguments": {param: value}}),
    }


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("callscope")
    cmd = [exe] if exe else [sys.executable, "-m", "callscope.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300)


def _score(folder: Path, mode: str) -> dict[str, dict[str, Any]]:
    rows = []
    for case_id, query, param, swap, slip, right in CASES:
        rows += [
            _row(case_id, query, param, swap),
            _row(f"{case_id}~slip", query, param, slip),
            _row(f"{case_id}~right", query, param, right),
        ]
    src, out = folder / f"cases-{mode}.jsonl", folder / f"scored-{mode}.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    proc = _cli("score", str(src), "-o", str(out), "--grounding", mode)
    assert proc.returncode == 0, proc.stderr
    return {r["id"]: r for r in map(json.loads, out.read_text("utf-8").splitlines())}


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    """Every case, its slip and its right value, scored by the CLI once per mode."""
    folder = tmp_path_factory.mktemp("swaps")
    return {mode: _score(folder, mode) for mode in ("registry", "lexical")}


def _kinds(row: dict[str, Any]) -> list[str]:
    return list(row["calls"][0]["kinds"])


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_an_entity_for_another_of_its_kind_is_hard_a_slip_soft_the_right_one_passes(
    case: tuple[str, str, str, str, str, str], scored: dict[str, dict[str, dict[str, Any]]]
) -> None:
    case_id = case[0]
    rows = scored["registry"]
    swap = rows[case_id]
    assert (swap["stage"], _kinds(swap)) == (3, ["hard"]), swap
    assert swap["grounded"] == {} and "evidence" not in swap
    assert "Do not invent values" in swap["fix"]
    slip = rows[f"{case_id}~slip"]
    assert (slip["stage"], _kinds(slip)) == (3, ["soft"]), slip
    right = rows[f"{case_id}~right"]
    assert right["stage"] == 0, right


@pytest.mark.parametrize("case_id", LEXICAL_HARD)
def test_the_lexical_mode_flags_the_same_swaps_hard(
    case_id: str, scored: dict[str, dict[str, dict[str, Any]]]
) -> None:
    rows = scored["lexical"]
    assert (rows[case_id]["stage"], _kinds(rows[case_id])) == (3, ["hard"]), rows[case_id]
    slip = rows[f"{case_id}~slip"]
    assert (slip["stage"], _kinds(slip)) == (3, ["soft"]), slip
    assert rows[f"{case_id}~right"]["stage"] == 0


def test_a_swap_beside_the_requests_own_slip(tmp_path: Path) -> None:
    """In one call, "Bolton" for the stated "Boston" is a swap (hard) while "Chicago" for the
    request's "Chcicago" (no entity) is the request's slip: grounded with its evidence in the
    registry mode, a soft drift in the lexical one ("Boston" is no spelling of "Chicago")."""
    params = {"origin": "Bolton", "destination": "Chicago"}
    row = _row("two_cities", "Book a flight from Boston to Chcicago", "origin", "Bolton")
    fn = row["functions"][0]["parameters"]
    fn["properties"]["destination"] = {"type": "string", "description": "where to"}
    fn["required"] = list(params)
    row["output"] = json.dumps({"name": "lookup", "arguments": params})
    src = tmp_path / "cases.jsonl"
    src.write_text(json.dumps(row) + "\n", "utf-8")
    verdicts = {}
    for mode in ("registry", "lexical"):
        out = tmp_path / f"{mode}.jsonl"
        proc = _cli("score", str(src), "-o", str(out), "--grounding", mode)
        assert proc.returncode == 0, proc.stderr
        verdicts[mode] = json.loads(out.read_text("utf-8"))
    registry, lexical = verdicts["registry"], verdicts["lexical"]
    assert (registry["stage"], _kinds(registry)) == (3, ["hard"]), registry
    assert registry["grounded"] == {"destination": "knowledge"}
    assert registry["evidence"]["destination"].startswith("'chcicago' → Chicago by ")
    assert "origin" in registry["fix"] and "destination" not in registry["fix"]
    assert (lexical["stage"], sorted(_kinds(lexical))) == (3, ["hard", "soft"]), lexical


def _tool(name: str, param: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{name} of a {param}",
        "parameters": {
            "type": "object",
            "properties": {param: {"type": "string", "description": f"the {param}"}},
            "required": [param],
        },
    }


#: (id, request, function, parameter, gold value); the audit swaps the gold value for the
#: nearest other entity of its table: Austria, Bolton, GOOG
AUDITED = [
    ("population", "What is the population of Australia?", "get_population", "country",
     "Australia"),
    ("weather", "What's the weather in Boston right now?", "get_weather", "city", "Boston"),
    ("quote", "What is the stock price of GOOGL today?", "get_quote", "symbol", "GOOGL"),
]  # fmt: skip


def test_the_audit_swaps_an_entity_for_the_nearest_of_its_kind_and_detects_it(
    tmp_path: Path,
) -> None:
    """``callscope audit``'s ``same_kind_entity`` probe: each gold value is swapped and the
    registry mode flags all three hard; the lexical mode flags "Austria" and "Bolton" hard,
    and "GOOG" inside "GOOGL" not at all (the paper's h is 0); no gold is flagged."""
    rows = []
    for case_id, query, name, param, value in AUDITED:
        other = _tool("get_time", "zone")
        gold = {"name": name, "arguments": {param: value}}
        rows.append(
            {"id": case_id, "query": query, "functions": [_tool(name, param), other], "gold": gold}
        )
    src = tmp_path / "cases.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    proc = _cli("audit", str(src), "-o", str(tmp_path / "audit"))
    assert proc.returncode == 0, proc.stderr
    audits = json.loads((tmp_path / "audit" / "audit.json").read_text("utf-8"))["audits"]
    found = {
        (a["grounding"], e["kind"]): (e["flagged"], e["n"])
        for a in audits
        for e in a["summary"]
        if e["kind"] in ("gold_minimal", "same_kind_entity")
    }
    assert found == {
        ("registry", "gold_minimal"): (0, 3),
        ("registry", "same_kind_entity"): (3, 3),
        ("lexical", "gold_minimal"): (0, 3),
        ("lexical", "same_kind_entity"): (2, 3),
    }
