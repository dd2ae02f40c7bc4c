"""One results-source protocol: BFCL result trees and τ² files are two registered sources, and
:func:`callscope.runs.from_results.calibrate_from_results` drives any of them by name (a toy
source of case records is one class and one registration)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from callscope.benchmarks.results_source import (
    RESULTS_SOURCES,
    ResultsSource,
    detect_results_source,
    register_results_source,
)
from callscope.errors import ConfigError
from callscope.records import CaseRecord
from callscope.runs.from_results import calibrate_from_results, tau2_diagnostics


def _tau2_file(path: Path) -> Path:
    task = {
        "id": "0",
        "user_scenario": {"instructions": {"domain": "airline", "task_instructions": "hi"}},
        "evaluation_criteria": {"actions": []},
    }
    msgs = [
        {"role": "user", "content": "cancel R1"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "name": "cancel_reservation", "arguments": {"reservation_id": "R1"}}
            ],
        },
    ]
    sim = {
        "id": "s",
        "task_id": "0",
        "trial": 0,
        "messages": msgs,
        "termination_reason": "user_stop",
        "reward_info": {"reward": 1.0, "action_checks": None},
    }
    info = {"environment_info": {"domain_name": "airline"}, "agent_info": {"llm": "m"}}
    path.write_text(json.dumps({"info": info, "tasks": [task], "simulations": [sim]}))
    return path


def test_bfcl_and_tau2_are_registered_sources() -> None:
    assert list(RESULTS_SOURCES) == ["bfcl", "tau2", "bfcl-single"]
    for source in RESULTS_SOURCES.values():
        assert isinstance(source, ResultsSource)
    assert RESULTS_SOURCES["bfcl"].diagnostic == "cases"
    assert RESULTS_SOURCES["tau2"].diagnostic == "tau2"
    assert RESULTS_SOURCES["bfcl-single"].diagnostic == "answers"
    with pytest.raises(ConfigError, match="choose one of: bfcl, tau2, bfcl-single"):
        RESULTS_SOURCES["nope"]


def test_detect(tmp_path: Path) -> None:
    tau2 = _tau2_file(tmp_path / "run.json")
    assert detect_results_source(tau2) is RESULTS_SOURCES["tau2"]
    tree = tmp_path / "result" / "m" / "multi_turn"
    tree.mkdir(parents=True)
    (tree / "BFCL_v4_multi_turn_base_result.json").write_text("")
    assert detect_results_source(tmp_path / "result") is RESULTS_SOURCES["bfcl"]
    assert detect_results_source(tmp_path / "missing") is None


def test_tau2_by_name_is_the_tau2_diagnostic(tmp_path: Path) -> None:
    path = _tau2_file(tmp_path / "run.json")
    done = calibrate_from_results("tau2", path, tmp_path / "out")
    assert done.source == "tau2" and done.written == [tmp_path / "out" / "tau2-diagnostics.json"]
    assert done.diagnostics.rows == tau2_diagnostics(path).rows
    data = json.loads(done.written[0].read_text())
    assert [(r["gold_class"], r["gar_case_k"], r["acc_k"]) for r in data["rows"]] == [
        ("REFUSE", 0, 1)
    ]


@dataclass
class ToyResults:
    """A toy benchmark's read results: a :class:`CaseResults`."""

    records: list[CaseRecord]
    problems: list[str] = field(default_factory=list)

    def header_acc(self) -> dict[str, tuple[int, int]]:
        return {}

    def found(self) -> str:
        return f"{len(self.records)} toy cases"

    def describe(self) -> dict[str, Any]:
        return {"cases": len(self.records)}


@dataclass(frozen=True)
class ToySource:
    """One JSON line per case: ``{id, asked, passed}``; every case is ASK gold."""

    name: str = "toy"
    title: str = "toy results"
    diagnostic: str = "cases"

    def detect(self, path: Path) -> bool:
        return path.suffix == ".toy"

    def read(self, path: Path) -> ToyResults:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return ToyResults(
            [
                CaseRecord(
                    id=r["id"],
                    category="toy",
                    gold_class="ASK",
                    turn_emissions=[["Which city?" if r["asked"] else "Done."]],
                    due_turns=[0],
                    passed=r["passed"],
                )
                for r in rows
            ]
        )


def test_a_case_record_source_is_one_class_and_one_registration(tmp_path: Path) -> None:
    path = tmp_path / "cases.toy"
    lines = [
        {"id": "a", "asked": True, "passed": True},
        {"id": "b", "asked": False, "passed": True},
        {"id": "c", "asked": False, "passed": False},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines))
    register_results_source(ToySource())
    try:
        assert detect_results_source(path) is RESULTS_SOURCES["toy"]
        done = calibrate_from_results("toy", path, tmp_path / "out")
    finally:
        RESULTS_SOURCES.unregister("toy")
    (row,) = done.diagnostics.rows
    assert (row["category"], row["n"], row["gar_case_k"], row["acc_k"]) == ("toy", 3, 1, 2)
    data = json.loads((tmp_path / "out" / "calibration-from-toy.json").read_text())
    assert data["source"] == {"cases": 3, "empty_emissions": 0, "problems": []}
    empty = tmp_path / "empty.toy"
    empty.write_text("")
    register_results_source(ToySource())
    try:
        with pytest.raises(FileNotFoundError, match="no toy results read from"):
            calibrate_from_results("toy", empty, tmp_path / "o2")
    finally:
        RESULTS_SOURCES.unregister("toy")
