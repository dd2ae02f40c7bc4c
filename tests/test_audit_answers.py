"""The detector audit over answers (issue 28 item 7): hand-worked multi-call and no-call cases,
each detector measured apart, and the command over a file that mixes single-call cases with
answer cases."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeServer, Step, openai_reply
from typer.testing import CliRunner

from callscope.cli import app
from callscope.saag.answer_audit import (
    ANSWER_SUMMARY_COLUMNS,
    answer_positives,
    audit_answers,
    gold_answer,
)
from callscope.saag.audit import audit
from callscope.saag.audit_engine import audit_counts, write_audit
from callscope.types import Case, ToolCall

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
PARIS = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
LONDON = {"name": "get_weather", "arguments": {"city": "London", "unit": "fahrenheit"}}


def two_cities() -> Case:
    return Case(
        "p",
        "What's the weather in Paris in celsius and in London in fahrenheit?",
        [WEATHER, TIME],
        gold=[PARIS, LONDON],
        meta={"category": "parallel"},
    )


def joke() -> Case:
    return Case(
        "i", "Tell me a joke about cats", [WEATHER, TIME], gold=[], meta={"category": "irr"}
    )


def single() -> Case:
    return Case(
        "s",
        "Time in Paris, please",
        [TIME, WEATHER],
        gold={"name": "get_time", "arguments": {"zone": "Paris"}},
    )


def rows_of(result: Any, case_id: str) -> dict[tuple[str, str], tuple[bool, int]]:
    return {(r.detector, r.kind): (r.flagged, r.stage) for r in result.rows if r.case_id == case_id}


def test_gold_answer_forms() -> None:
    case = Case(
        "m",
        "Weather in Oslo and Rome",
        [WEATHER],
        gold=[
            {
                "name": "get_weather",
                "arguments": {"city": "Oslo"},
                "acceptable": {"city": ["Oslo"], "unit": ["celsius", ""]},
            },
            {"name": "get_weather", "acceptable": {"city": ["Rome"], "unit": [""]}},
        ],
    )
    calls, gold = gold_answer(case)  # type: ignore[misc]
    # minimal forms: unit may be omitted in both; the second call's city comes from acceptable
    assert calls == [
        ToolCall("get_weather", {"city": "Oslo"}),
        ToolCall("get_weather", {"city": "Rome"}),
    ]
    assert gold == case.gold
    assert gold_answer(joke()) == ([], [])
    assert gold_answer(single()) is None  # one gold call (a dict): the single-call audit's


@pytest.mark.parametrize("mode", ["lexical", "registry"])
def test_hand_worked_two_call_answer(mode: str) -> None:
    got = rows_of(audit_answers([two_cities()], grounding=mode), "p")
    # the gold answer: both calls state their values -> neither detector flags it
    assert got[("cascade", "gold_answer")] == (False, 0)
    assert got[("gold", "gold_answer")] == (False, 0)
    # a call dropped: the remaining call is right on its own, so the gold-free cascade passes
    # it; only the gold knows a call is missing
    assert got[("cascade", "dropped_call")] == (False, 0)
    assert got[("gold", "dropped_call")][0] is True
    # a call repeated: every call passes the cascade (stage 0), flagged as a repeat
    assert got[("cascade", "duplicated_call")] == (True, 0)
    assert got[("gold", "duplicated_call")][0] is True
    # get_time called with {city, unit}: zone (required) missing, city and unit spurious
    assert got[("cascade", "extra_call")] == (True, 2)
    assert got[("gold", "extra_call")][0] is True
    # get_time with zone = "fahrenheit" (the request's longest word): a stated value in a
    # schema-valid call, so the cascade passes it; the gold sees an extra call
    assert got[("cascade", "extra_call_filled")] == (False, 0)
    assert got[("gold", "extra_call_filled")][0] is True
    # seed 0 picks call 1's city: London -> "Zanzibar Quartz", stated nowhere: stage 3
    assert got[("cascade", "unstated_value")] == (True, 3)
    assert got[("gold", "unstated_value")][0] is True
    # seed 0 swaps city between the calls (Paris in fahrenheit, London in celsius): each
    # value is stated, so the cascade passes the answer; against gold both calls are wrong
    assert got[("cascade", "swapped_values")] == (False, 0)
    assert got[("gold", "swapped_values")][0] is True


@pytest.mark.parametrize("mode", ["lexical", "registry"])
def test_no_call_case(mode: str) -> None:
    result = audit_answers([joke()], grounding=mode)
    got = rows_of(result, "i")
    # the clean abstention passes both (the case expects no call)
    assert got[("cascade", "clean_abstention")] == (False, 0)
    assert got[("gold", "clean_abstention")] == (False, 0)
    # a call filled from the request ("about", its longest word, for city or zone) is
    # grounded: the gold-free cascade cannot tell it was not wanted; the gold can
    assert got[("cascade", "call_on_no_call")] == (False, 0)
    assert got[("gold", "call_on_no_call")] == (True, 0)
    ((kind, answer, _),) = answer_positives(joke(), [], [], 0)
    assert kind == "call_on_no_call"
    assert list(answer[0].arguments.values()) == ["about"]


def test_positives_skip_what_cannot_be_built() -> None:
    one = Case(
        "o",
        "Weather in Oslo",
        [WEATHER],
        gold=[{"name": "get_weather", "arguments": {"city": "Oslo"}}],
    )
    base, gold = gold_answer(one)  # type: ignore[misc]
    kinds = [k for k, _, _ in answer_positives(one, base, gold, 0)]
    # one call: nothing to drop or swap between; one registered function: no extra call
    assert kinds == ["duplicated_call", "unstated_value"]
    # two calls of the same function differing only in city: swapping city is a reordering
    same = Case("r", "Weather in Oslo and Rome", [WEATHER], gold=[
        {"name": "get_weather", "arguments": {"city": "Oslo"}},
        {"name": "get_weather", "arguments": {"city": "Rome"}},
    ])  # fmt: skip
    base, gold = gold_answer(same)  # type: ignore[misc]
    assert "swapped_values" not in [k for k, _, _ in answer_positives(same, base, gold, 0)]


def test_a_flagged_gold_answer_keeps_the_other_detectors_positives() -> None:
    """Gold with a value the request does not state ("Berlin" for London): the cascade flags
    one of its two calls, so no cascade positive is built from it; the gold detector solves
    it and keeps its positives."""
    case = Case("d", "Weather in Paris and in London?", [WEATHER, TIME], gold=[
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "get_weather", "arguments": {"city": "Berlin"}},
    ])  # fmt: skip
    result = audit_answers([case], grounding="registry")
    cascade = [r for r in result.rows if r.detector == "cascade"]
    assert [(r.kind, r.flagged, r.stage, r.calls, r.calls_flagged) for r in cascade] == [
        ("gold_answer", True, 3, 2, 1)
    ]
    summary = {(e["detector"], e["kind"]): e for e in result.summary()}
    neg = summary[("cascade", "gold_answer")]
    assert (neg["n"], neg["flagged"], neg["calls"], neg["calls_flagged"], neg["call_rate"]) == (
        1, 1, 2, 1, 0.5,
    )  # fmt: skip
    assert summary[("gold", "gold_answer")]["flagged"] == 0
    assert summary[("gold", "dropped_call")]["flagged"] == 1
    # why, as the single-call audit says it: the deciding call's stage, kind of value, argument
    assert result.false_alarm_reasons() == [
        {
            "detector": "cascade",
            "reason": "stage 3: string not grounded",
            "count": 1,
            "examples": [
                {
                    "id": "d",
                    "query": "Weather in Paris and in London?",
                    "answer": [
                        {"name": "get_weather", "arguments": {"city": "Paris"}},
                        {"name": "get_weather", "arguments": {"city": "Berlin"}},
                    ],
                    "flagged": ["city"],
                }
            ],
        }
    ]
    counts = audit_counts(result)
    assert (
        counts[("cascade", "dropped_call", False)] + counts[("cascade", "dropped_call", True)] == 0
    )


def test_the_single_call_audit_skips_answer_cases() -> None:
    mixed = [single(), two_cities(), joke()]
    rows = audit(mixed, grounding="registry").rows
    assert {r.case_id for r in rows} == {"s"}
    assert [r.__dict__ for r in rows] == [
        r.__dict__ for r in audit([single()], grounding="registry").rows
    ]
    assert {r.case_id for r in audit_answers(mixed, grounding="registry").rows} == {"p", "i"}


def test_deterministic_and_written(tmp_path: Path) -> None:
    a = audit_answers([two_cities(), joke()], grounding="registry", seed=5)
    b = audit_answers([two_cities(), joke()], grounding="registry", seed=5)
    assert [r.__dict__ for r in a.rows] == [r.__dict__ for r in b.rows]
    paths = write_audit([a], tmp_path)
    rows = list(csv.reader(paths["csv"].open(encoding="utf-8")))
    assert tuple(rows[0]) == ANSWER_SUMMARY_COLUMNS
    assert len(rows) == 1 + len(a.summary()) + len(a.summary(by_category=True))
    payload = json.loads(paths["json"].read_text())
    assert payload["answer_audits"][0]["grounding"] == "registry"
    assert "| dropped_call | detection |" in paths["md"].read_text()


def test_audit_command_on_answer_cases(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(
        "".join(json.dumps(c.to_dict()) + "\n" for c in (single(), two_cities(), joke()))
    )
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["audit", str(path), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert {p.name for p in out.iterdir()} == {
        f"{stem}.{ext}" for stem in ("audit", "audit_answers") for ext in ("json", "csv", "md")
    }
    # issue 28: a file of no-call cases only (gold []) is audited (the answer audit), no longer
    # refused as gold-free
    only = tmp_path / "irrelevance.jsonl"
    only.write_text(json.dumps(joke().to_dict()) + "\n")
    out2 = tmp_path / "out2"
    res = CliRunner().invoke(app, ["audit", str(only), "-o", str(out2), "--grounding", "lexical"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out2.iterdir()) == [
        "audit_answers.csv", "audit_answers.json", "audit_answers.md",
    ]  # fmt: skip


# --------------------------------------------------------------------------- real BFCL

ANSWER_CATEGORIES = [
    "parallel",
    "parallel_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "irrelevance",
    "live_irrelevance",
]

#: (detector, kind) -> (flagged, n) on every answer case of BFCL's six answer categories at
#: S = 5 (440 multi-call, 1,124 no-call; `callscope bench build --source bfcl --categories
#: <the six> --scales 5 --n 1564`, seed 0), per grounding mode. Pinned from a run of this
#: code (issue 28 item 7). The gold detector is the same in both modes (it reads no grounding).
PINNED_BFCL: dict[str, dict[tuple[str, str], tuple[int, int]]] = {
    "lexical": {
        ("cascade", "gold_answer"): (113, 440),
        ("cascade", "clean_abstention"): (0, 1124),
        ("cascade", "dropped_call"): (0, 327),
        ("cascade", "duplicated_call"): (327, 327),
        ("cascade", "extra_call"): (326, 326),
        ("cascade", "extra_call_filled"): (28, 326),
        ("cascade", "unstated_value"): (322, 322),
        ("cascade", "swapped_values"): (20, 164),
        ("cascade", "call_on_no_call"): (144, 1124),
    },
    # cascade version 3 (issue 37: the knowledge rule): was 44 gold answers, then 37; 34 with
    # version 4 (phrases, spellings, acronyms, spans, described values; the positives' n grows
    # with the base)
    "registry": {
        ("cascade", "gold_answer"): (34, 440),
        ("cascade", "clean_abstention"): (0, 1124),
        ("cascade", "dropped_call"): (0, 406),
        ("cascade", "duplicated_call"): (406, 406),
        ("cascade", "extra_call"): (405, 405),
        ("cascade", "extra_call_filled"): (5, 405),
        ("cascade", "unstated_value"): (401, 401),
        ("cascade", "swapped_values"): (21, 202),
        ("cascade", "call_on_no_call"): (44, 1124),
    },
}
PINNED_GOLD = {
    ("gold", "gold_answer"): (0, 440),
    ("gold", "clean_abstention"): (0, 1124),
    ("gold", "dropped_call"): (440, 440),
    ("gold", "duplicated_call"): (440, 440),
    ("gold", "extra_call"): (439, 439),
    ("gold", "extra_call_filled"): (439, 439),
    ("gold", "unstated_value"): (435, 435),
    ("gold", "swapped_values"): (220, 220),
    ("gold", "call_on_no_call"): (1124, 1124),
}
#: calls of gold answers the cascade flags / calls (the per-call false alarms)
PINNED_CALLS = {"lexical": (204, 1241), "registry": (52, 1241)}


@pytest.fixture(scope="module")
def bfcl_answer_cases() -> list[Case]:
    pytest.importorskip("bfcl_eval")
    from callscope.benchmarks.sources import build_benchmark

    return build_benchmark("bfcl", scales=[5], n=1564, seed=0, categories=ANSWER_CATEGORIES).cases


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["lexical", "registry"])
def test_bfcl_answer_audit_counts(bfcl_answer_cases: list[Case], mode: str) -> None:
    result = audit_answers(bfcl_answer_cases, grounding=mode)
    got = {(e["detector"], e["kind"]): e for e in result.summary()}
    assert {k: (e["flagged"], e["n"]) for k, e in got.items()} == {
        **PINNED_BFCL[mode],
        **PINNED_GOLD,
    }
    neg = got[("cascade", "gold_answer")]
    assert (neg["calls_flagged"], neg["calls"]) == PINNED_CALLS[mode]


def test_the_command_runs_both_designs_with_a_judge(tmp_path: Path, monkeypatch) -> None:
    """`callscope audit --judge` over a file of a single-call case and an answer case: each
    design is audited in the mode and in the mode with the judge, side by side. Both gold
    calls give a value the request does not state (Berlin), which the rules flag; a judge that
    answers "yes" to every question forgives it, so the false alarm is 1 without the judge and
    0 with it, in both files."""
    monkeypatch.setenv("CALLSCOPE_CACHE", str(tmp_path / "cache"))
    time_case = Case("s", "Time in Paris, please", [TIME, WEATHER],
                     gold={"name": "get_time", "arguments": {"zone": "Berlin"}})  # fmt: skip
    answer_case = Case("d", "Weather in Paris and in London?", [WEATHER, TIME], gold=[
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "get_weather", "arguments": {"city": "Berlin"}},
    ])  # fmt: skip
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in (time_case, answer_case)))
    with FakeServer() as srv:
        srv.push(*[Step(body=openai_reply("yes")) for _ in range(100)])
        res = CliRunner().invoke(app, [
            "audit", str(path), "-o", str(tmp_path / "out"), "--grounding", "registry",
            "--judge", "openai:judge", "--base-url", srv.url + "/v1",
        ])  # fmt: skip
        asked = len(srv.requests)
    assert res.exit_code == 0, res.output
    assert asked >= 2  # the judge was asked, about each design's flagged value at least
    for stem, key, kind in (("audit", "audits", "gold_minimal"),
                            ("audit_answers", "answer_audits", "gold_answer")):  # fmt: skip
        payload = json.loads((tmp_path / "out" / f"{stem}.json").read_text())
        flagged = {
            a["grounding"]: next(e["flagged"] for e in a["summary"]
                                 if e["kind"] == kind and e["detector"] == "cascade")
            for a in payload[key]
        }  # fmt: skip
        assert flagged == {"registry": 1, "registry+judge": 0}, stem
        assert [s["mode"] for s in payload["judge"]] == ["registry"]


def test_the_command_writes_hostile_values_from_the_cases_file(tmp_path: Path) -> None:
    """A category holding a lone surrogate (valid JSON: ``"\\ud800"``) and a no-call request
    stating a 400-digit number and "inf": the audit writes every file, the surrogate as its
    visible escape, and fills the number parameter of ``call_on_no_call`` with no value JSON
    cannot carry (the request's first number a float holds; none here: 1.0)."""
    big = "9" * 400
    count = {
        "name": "count",
        "parameters": {
            "type": "object",
            "properties": {"n": {"type": "integer"}, "x": {"type": "number"}},
            "required": ["n", "x"],
        },
    }
    no_call = Case("n", f"Say {big} and inf now", [count], gold=[], meta={"category": "\ud800"})
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(no_call.to_dict()) + "\n")  # ensure_ascii: "\ud800" escaped
    res = CliRunner().invoke(app, ["audit", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    csv_text = (tmp_path / "out" / "audit_answers.csv").read_text(encoding="utf-8")
    assert "\\ud800" in csv_text
    payload = json.loads((tmp_path / "out" / "audit_answers.json").read_text())
    assert payload["answer_audits"][0]["by_category"][0]["category"] == "\ud800"
    [(kind, calls, _)] = answer_positives(no_call, [], [], 0)
    assert kind == "call_on_no_call"
    assert calls[0].arguments == {"n": int(big), "x": 1.0}
