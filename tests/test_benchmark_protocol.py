"""A multi-turn benchmark that is not BFCL, plugged in through the protocol alone.

A two-turn "lamp" benchmark: turn 0 asks to switch the lamp on (TOOL_CALL due), turn 1 asks
for a colour the lamp does not have (ASK due: the user must say which). The scripted model
calls the tool at turn 0 and asks at turn 1, so every number below follows by hand: GAR 1 and
Acc 1 for the ``good`` case; the ``bad`` case never calls, so GAR (TOOL_CALL at turn 0) is 0
and the lamp stays off (Acc 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scripted import Scripted

from callscope.benchmarks.protocol import (
    BENCHMARKS,
    MultiTurnBenchmark,
    get_benchmark,
    register_benchmark,
)
from callscope.records import ExecResult, Trajectory
from callscope.report.conversations import conversation_report
from callscope.runs.calibrate import calibrate_model, select_cases
from callscope.store.run_store import RunStore
from callscope.types import TOOL_CALL, ModelReply

SWITCH = {
    "name": "switch_lamp",
    "description": "Switch the lamp on or off",
    "parameters": {
        "type": "object",
        "properties": {"on": {"type": "boolean"}},
        "required": ["on"],
    },
}


@dataclass
class LampCase:
    id: str
    category: str
    turns: list[list[dict[str, Any]]]
    functions: list[dict[str, Any]] = field(default_factory=lambda: [SWITCH])
    missed_function: dict[int, list[str]] = field(default_factory=dict)

    def functions_at(self, turn: int) -> list[dict[str, Any]]:
        return self.functions


class LampEnv:
    def __init__(self) -> None:
        self.on = False
        self.log: list[ExecResult] = []

    def execute(self, calls, available) -> list[ExecResult]:
        out = []
        for c in calls:
            ok = c.name in available and isinstance(c.arguments.get("on"), bool)
            if ok:
                self.on = c.arguments["on"]
            out.append(ExecResult(c.name, dict(c.arguments), ok, "done" if ok else "refused"))
        self.log.extend(out)
        return out

    def state(self) -> dict[str, Any]:
        return {"on": self.on}


@dataclass
class Verdict:
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed}


class Lamp:
    name = "lamp"
    categories = ("lamp",)

    def __init__(self) -> None:
        self.envs: dict[str, LampEnv] = {}

    def cases(self, categories=None) -> list[LampCase]:
        turns = [
            [{"role": "user", "content": "Switch the lamp on."}],
            [{"role": "user", "content": "Now make it a nice colour."}],
        ]
        return [LampCase("lamp_good", "lamp", turns), LampCase("lamp_bad", "lamp", turns)]

    def tools_at(self, case: LampCase, turn: int) -> list[dict[str, Any]]:
        return case.functions_at(turn)

    def environment(self, case: LampCase) -> LampEnv:
        self.envs[case.id] = LampEnv()
        return self.envs[case.id]

    def grade(self, case: LampCase, trajectory: Trajectory) -> Verdict:
        return Verdict(self.envs[case.id].state() == {"on": True})

    def gold_class(self, case: LampCase) -> str:
        return TOOL_CALL

    def due_turns(self, case: LampCase) -> list[int]:
        return [0]


def test_a_new_benchmark_runs_through_calibrate_by_the_protocol_alone(tmp_path) -> None:
    register_benchmark("lamp", Lamp)
    try:
        bench = get_benchmark("lamp")
        assert isinstance(bench, MultiTurnBenchmark)
        cases = select_cases(["lamp"], None, bench)
        assert [c.id for c in cases] == ["lamp_good", "lamp_bad"]
        call_on = ModelReply(tool_calls=[{"name": "switch_lamp", "arguments": {"on": True}}])
        model = Scripted(
            {
                "lamp_good": [call_on, ModelReply(text="Done."), ModelReply(text="Which colour?")],
                "lamp_bad": [ModelReply(text="Sure."), ModelReply(text="Which colour?")],
            },
            then=ModelReply(text="Done."),
            spec="scripted:lamp",
        )
        done = calibrate_model(model, tmp_path / "cal", cases, style="native", benchmark=bench)
        (row,) = [r for r in done.result.rows() if r["category"] == "lamp"]
        assert (row["n"], row["gar_case"], row["acc"]) == (2, 0.5, 0.5)
        assert row["gold_class"] == TOOL_CALL
        # per emission: good = call, "Done.", "Which colour?"; bad = "Sure.", "Which colour?"
        assert row["class_counts"] == {
            "TOOL_CALL": 1,
            "REFUSE": 0,
            "ASK": 2,
            "CONFIRM": 0,
            "OTHER": 2,
        }
        # the one executed call was checked by the SAAG cascade against the protocol's tools
        assert (row["tool_calls_scored"], row["calls_stage0"]) == (1, 1.0)
        assert (tmp_path / "cal" / "calibration-baseline.md").is_file()
        # the report finds the benchmark from the run store, not from BFCL
        store = RunStore(tmp_path / "cal")
        try:
            report = conversation_report(store)
        finally:
            store.close()
        assert report["note"] is None
        recs = {r["case_id"]: r for r in report["conversations"]}
        assert {k: (r["gold_class"], r["due_turns"]) for k, r in recs.items()} == {
            "lamp_good": (TOOL_CALL, [0]),
            "lamp_bad": (TOOL_CALL, [0]),
        }
    finally:
        BENCHMARKS.unregister("lamp")
