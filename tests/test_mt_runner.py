"""run_conversation: BFCL's turn/step structure, miss_func re-injection, records, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("bfcl_eval")

from scripted import Scripted  # noqa: E402

from callscope.benchmarks.bfcl.categories import gold_class  # noqa: E402
from callscope.errors import ModelError  # noqa: E402
from callscope.models.replay import ReplayModel  # noqa: E402
from callscope.runs.conversation import (  # noqa: E402
    REINJECT_MESSAGE,
    Trajectory,
    parse_bfcl_prompt,
    run_conversation,
)
from callscope.types import ModelReply  # noqa: E402


def native(*calls: tuple[str, dict[str, Any]], text: str = "") -> ModelReply:
    return ModelReply(text=text, tool_calls=[{"name": n, "arguments": a} for n, a in calls])


DONE = ModelReply(text="Done.")


def test_dataset_shape(mt_by_id):
    assert len(mt_by_id) == 800
    base0 = mt_by_id["multi_turn_base_0"]
    assert base0.involved_classes == ["TwitterAPI", "GorillaFileSystem"]
    assert len(base0.turns) == 4 and len(base0.ground_truth) == 4
    assert base0.ground_truth[0] == [
        "cd(folder='document')",
        "mkdir(dir_name='temp')",
        "mv(source='final_report.pdf', destination='temp')",
    ]
    assert base0.functions[0]["description"].endswith(
        " Note that the provided function is in Python 3 syntax."
    )
    mf = mt_by_id["multi_turn_miss_func_0"]
    assert mf.missed_function == {3: ["sort"]}
    assert mf.turns[3] == []
    assert "sort" not in mf.available_at(2) and "sort" in mf.available_at(3)
    assert [f["name"] for f in mf.functions_at(3)][-1] == "sort"  # appended, as BFCL does


def test_gold_class_and_due_turns(mt_by_id):
    assert [
        gold_class(c)
        for c in (
            "multi_turn_base",
            "multi_turn_long_context",
            "multi_turn_miss_param",
            "multi_turn_miss_func",
        )
    ] == ["TOOL_CALL", "TOOL_CALL", "ASK", "REFUSE"]
    assert mt_by_id["multi_turn_base_0"].due_turns() == [0, 1, 2, 3]
    assert mt_by_id["multi_turn_miss_func_0"].due_turns() == [2]
    mp = mt_by_id["multi_turn_miss_param_0"]
    assert mp.due_turns() == [i for i, g in enumerate(mp.ground_truth) if g == []]
    assert len(mp.due_turns()) == 1
    with pytest.raises(ValueError):
        gold_class("simple_python")


def test_native_conversation_structure(mt_by_id):
    case = mt_by_id["multi_turn_base_0"]
    model = Scripted(
        [
            native(("cd", {"folder": "document"}), ("mkdir", {"dir_name": "temp"})),
            native(("nope", {})),
            DONE,
            DONE,
            DONE,
            DONE,
        ]
    )
    traj = run_conversation(model, case, style="native")
    assert traj.completed and len(traj.turns) == 4
    assert [len(t.steps) for t in traj.turns] == [3, 1, 1, 1]
    msgs, tools, _ = model.requests[1]
    assert msgs[0] == case.turns[0][0]
    assert msgs[1]["role"] == "assistant"
    assert [tc["function"]["name"] for tc in msgs[1]["tool_calls"]] == ["cd", "mkdir"]
    ids = [tc["id"] for tc in msgs[1]["tool_calls"]]
    assert [(m["role"], m["tool_call_id"], m["name"]) for m in msgs[2:4]] == [
        ("tool", ids[0], "cd"),
        ("tool", ids[1], "mkdir"),
    ]
    assert msgs[2]["content"] == '{"current_working_directory": "document"}'
    assert [t["function"]["name"] for t in tools] == [f["name"] for f in case.functions]
    # the rejected call is recorded and its error text reaches the model
    step = traj.turns[0].steps[1]
    assert step.results[0].reason == "unavailable"
    assert model.requests[2][0][-1]["content"] == "Error: function 'nope' is not available"
    # turn 2 starts with the next user message after the closing assistant text
    msgs, _, _ = model.requests[3]
    assert msgs[-2] == {"role": "assistant", "content": "Done."}
    assert msgs[-1] == case.turns[1][0]
    assert not any(m["role"] == "system" for m in msgs)


def test_prompt_mode_renders_functions_and_results(mt_by_id):
    case = mt_by_id["multi_turn_base_0"]
    model = Scripted([ModelReply(text="[cd(folder='document'), pwd()]"), DONE, DONE, DONE, DONE])
    traj = run_conversation(model, case, style="prompt")
    msgs, tools, _ = model.requests[0]
    assert tools is None
    system = msgs[0]["content"]
    assert msgs[0]["role"] == "system"
    assert "[func_name1(params_name1=params_value1" in system
    assert json.dumps(case.functions, indent=4) in system
    msgs, _, _ = model.requests[1]
    assert msgs[-1]["role"] == "user"
    assert msgs[-1]["content"] == repr(
        [
            {
                "role": "tool",
                "name": "cd(folder='document')",
                "content": '{"current_working_directory": "document"}',
            },
            {
                "role": "tool",
                "name": "pwd()",
                "content": '{"current_working_directory": "/workspace/document"}',
            },
        ]
    )
    assert traj.turns[0].steps[0].parse_form == "python"


def test_miss_func_reinjection_native_and_prompt(mt_by_id):
    case = mt_by_id["multi_turn_miss_func_0"]
    model = Scripted([DONE] * 5)
    traj = run_conversation(model, case, style="native")
    for turn in range(5):
        names = [t["function"]["name"] for t in model.requests[turn][1]]
        assert ("sort" in names) == (turn >= 3)
    assert model.requests[3][0][-1] == {"role": "user", "content": REINJECT_MESSAGE}
    assert traj.turns[3].added_functions == ["sort"]
    assert traj.turns[2].available == sorted(case.available_at(2))

    model = Scripted([DONE] * 5)
    run_conversation(model, case, style="prompt")
    system = model.requests[0][0][0]["content"]
    assert '"name": "sort"' not in system
    msg = model.requests[3][0][-1]["content"]
    assert msg.endswith("\n" + REINJECT_MESSAGE)
    assert msg.startswith("[{'name': 'sort'")
    assert model.requests[4][0][0]["content"] == system  # system prompt unchanged


def test_step_limit_force_quits(mt_by_id):
    case = mt_by_id["multi_turn_base_0"]
    model = Scripted([native(("pwd", {}))] * 10)
    traj = run_conversation(model, case, max_steps=2)
    assert traj.force_quit and traj.error is None
    assert len(traj.turns) == 1 and len(traj.turns[0].steps) == 3  # count > 2 after 3 steps
    assert len(model.requests) == 3


def test_model_error_is_recorded_not_raised(mt_by_id):
    case = mt_by_id["multi_turn_base_0"]
    model = Scripted([native(("pwd", {})), DONE, ModelError("boom", kind="http_5xx")])
    traj = run_conversation(model, case)
    assert traj.error == {"kind": "http_5xx", "message": "boom", "turn": 1, "step": 0}
    assert len(traj.turns) == 1
    assert traj.partial_turn is not None and traj.partial_turn.index == 1


def test_emissions_and_json_round_trip(mt_by_id):
    case = mt_by_id["multi_turn_miss_func_0"]
    model = Scripted(
        [
            ModelReply(
                text="",
                tool_calls=[{"id": "x1", "name": "ls", "arguments": "{}"}],
                prompt_tokens=10,
                completion_tokens=3,
                latency_s=0.5,
            ),
            ModelReply(text="Sure, what file?", prompt_tokens=12, completion_tokens=4),
            DONE,
            DONE,
            DONE,
            DONE,
        ]
    )
    traj = run_conversation(model, case)
    em = list(traj.emissions())
    assert [(t, s) for t, s, _ in em] == [(0, 0), (0, 1), (1, 0), (2, 0), (3, 0), (4, 0)]
    assert em[0][2].tool_calls[0]["id"] == "x1"
    assert em[1][2].text == "Sure, what file?" and em[1][2].calls == []
    assert model.requests[1][0][-1]["tool_call_id"] == "x1"
    assert traj.prompt_tokens == 22 and traj.completion_tokens == 7
    again = Trajectory.from_dict(json.loads(json.dumps(traj.to_dict())))
    assert again.to_dict() == traj.to_dict()
    assert again.accepted_calls() == [[["ls()"]], [], [], [], []]


def test_bfcl_prompt_parsing_is_strict_and_lenient_is_optional(mt_by_id):
    assert [c.name for c in parse_bfcl_prompt("```\n[cd(folder='a'), ls()]\n```").calls] == [
        "cd",
        "ls",
    ]
    assert parse_bfcl_prompt("cd(folder='a')").calls[0].arguments == {"folder": "a"}
    assert not parse_bfcl_prompt("I will run cd(folder='a') now").ok
    assert not parse_bfcl_prompt("[cd(folder=__import__('os'))]").ok
    case = mt_by_id["multi_turn_base_0"]
    text = ModelReply(text="I will run cd(folder='document') now")
    strict = run_conversation(Scripted([text, DONE, DONE, DONE]), case, style="prompt")
    assert strict.turns[0].steps[0].calls == []
    lenient = run_conversation(
        Scripted([text, DONE, DONE, DONE, DONE]), case, style="prompt", parse_mode="lenient"
    )
    assert lenient.turns[0].steps[0].calls == [{"name": "cd", "arguments": {"folder": "document"}}]


def test_replay_backend_drives_a_case(mt_by_id, tmp_path: Path):
    case = mt_by_id["multi_turn_base_0"]
    outputs: list[Any] = [
        {"text": "", "tool_calls": [{"name": "cd", "arguments": {"folder": "document"}}]},
        "ok",
        "ok",
        "ok",
        "ok",
    ]
    path = tmp_path / "replay.jsonl"
    path.write_text(json.dumps({"case_id": case.id, "outputs": outputs}) + "\n")
    traj = run_conversation(ReplayModel(path, native_tools=True), case)
    assert traj.completed
    assert traj.accepted_calls() == [[["cd(folder='document')"]], [], [], []]
