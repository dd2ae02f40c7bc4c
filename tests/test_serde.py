"""Record (de)serialisation: one set of rules for every stored record."""

from __future__ import annotations

import json

from callscope.records import ExecResult, StepRecord, Trajectory, TurnRecord


def full_trajectory() -> Trajectory:
    step = StepRecord(
        text="[cd(folder='docs')]",
        tool_calls=None,
        calls=[{"name": "cd", "arguments": {}}],
        parse_error=None,
        parse_form="python",
        results=[ExecResult("cd", {"folder": "docs"}, True, "ok", "cd(folder='docs')")],
        available=["cd", "ls"],
        prompt_tokens=12,
        completion_tokens=3,
        latency_s=0.5,
        retracted=True,
    )
    turn = TurnRecord(0, [{"role": "user", "content": "go"}], ["cd", "ls"], ["ls"], [step])
    return Trajectory(
        "multi_turn_base_0",
        "multi_turn_base",
        "prompt",
        "local:x",
        7,
        "lenient",
        [turn],
        partial_turn=TurnRecord(1, [], []),
        force_quit=True,
        error={"kind": "timeout"},
        wall_s=1.25,
        probe={"name": "sri"},
        events=[{"decision": "fired"}],
    )


def test_round_trip_through_json_is_exact():
    traj = full_trajectory()
    d = json.loads(json.dumps(traj.to_dict()))
    assert Trajectory.from_dict(d) == traj
    assert list(d) == [
        "case_id",
        "category",
        "style",
        "model",
        "max_steps",
        "parse_mode",
        "turns",
        "partial_turn",
        "force_quit",
        "error",
        "wall_s",
        "probe",
        "events",
    ]
    assert d["turns"][0]["steps"][0]["results"][0] == {
        "name": "cd",
        "arguments": {"folder": "docs"},
        "accepted": True,
        "output": "ok",
        "call": "cd(folder='docs')",
        "reason": None,
    }


def test_missing_and_null_fields_take_defaults_or_empty_values():
    traj = Trajectory.from_dict(
        {
            "case_id": "c",
            "style": None,
            "turns": [{"index": 2, "steps": [{"text": None}]}],
        }
    )
    assert (traj.category, traj.style, traj.model, traj.max_steps, traj.parse_mode) == (
        "",
        "native",
        "",
        20,
        "bfcl",
    )
    assert traj.partial_turn is None and traj.error is None and traj.events == []
    (turn,) = traj.turns
    assert (turn.index, turn.user_messages, turn.available, turn.added_functions) == (2, [], [], [])
    (step,) = turn.steps
    assert (step.text, step.tool_calls, step.calls, step.results, step.latency_s) == (
        "",
        None,
        [],
        [],
        0.0,
    )
    assert step.retracted is False and step.placeholder is False


def test_wrongly_typed_values_are_coerced_or_emptied():
    r = ExecResult.from_dict({"name": 5, "arguments": "not a dict", "accepted": 1, "output": None})
    assert r == ExecResult("5", {}, True, "", None, None)
    t = TurnRecord.from_dict({"index": "3", "steps": "oops", "available": ["a"]})
    assert (t.index, t.steps, t.available) == (3, [], ["a"])
