"""SafeEnv: fresh simulator state per case, and no path from model output to code execution."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval")

from callscope.benchmarks.bfcl.env import (  # noqa: E402
    SafeEnv,
    bfcl_sandbox,
    executor_instance_names,
    rebuild_call,
    restore_module_globals,
    validate_call,
)
from callscope.benchmarks.bfcl.grade import bfcl_check  # noqa: E402
from callscope.parse import MAX_ARGUMENT_DEPTH  # noqa: E402
from callscope.types import ToolCall  # noqa: E402


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "INJECTED"


def _payloads(marker: Path) -> list[str]:
    m = str(marker)
    return [
        f"__import__('os').system('touch {m}')",
        f"open('{m}', 'w').write('x')",
        f"');__import__('pathlib').Path('{m}').touch();('",
        f"\"),__import__('pathlib').Path('{m}').touch(),str(\"",
        f"cd(folder=__import__('pathlib').Path('{m}').touch())",
    ]


def test_known_results_on_a_fresh_file_system(mt_by_id):
    case = mt_by_id["multi_turn_base_0"]
    env = SafeEnv(case)
    avail = case.available_at(0)
    out = env.execute(
        [ToolCall("pwd"), ToolCall("cd", {"folder": "document"}), ToolCall("pwd"), ToolCall("ls")],
        avail,
    )
    assert [r.output for r in out] == [
        '{"current_working_directory": "/workspace"}',
        '{"current_working_directory": "document"}',
        '{"current_working_directory": "/workspace/document"}',
        '{"current_directory_content": ["final_report.pdf", "previous_report.pdf"]}',
    ]
    assert [r.call for r in out] == ["pwd()", "cd(folder='document')", "pwd()", "ls()"]
    assert all(r.accepted and r.reason is None for r in out)


def test_each_env_starts_from_the_initial_config(mt_by_id):
    case = mt_by_id["multi_turn_base_0"]
    first = SafeEnv(case)
    first.execute([ToolCall("mkdir", {"dir_name": "temp"})], case.available_at(0))
    assert "temp" in first.execute([ToolCall("ls")], case.available_at(0))[0].output
    second = SafeEnv(case)  # a second environment of the same case: a fresh instance
    assert second.execute([ToolCall("ls")], case.available_at(0))[0].output == (
        '{"current_directory_content": ["document", "archive"]}'
    )
    # the config object the case holds was not mutated by either env
    assert "temp" not in str(case.initial_config)


def test_simulator_exception_is_a_result(mt_by_id):
    case = mt_by_id["multi_turn_base_0"]
    env = SafeEnv(case)
    (res,) = env.execute([ToolCall("cd", {"nonsense": 1})], case.available_at(0))
    assert res.accepted
    assert res.output.startswith("Error during execution: ")
    assert "nonsense" in res.output


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("__import__('os').system", "bad_name"),
        ("os.system", "bad_name"),
        ("ls()", "bad_name"),
        ("cd(folder='x')", "bad_name"),
        ("ls;pwd", "bad_name"),
        ("", "bad_name"),
        ("eval", "unavailable"),
        ("exec", "unavailable"),
        ("exit", "unavailable"),
        ("__import__", "unavailable"),
        ("_load_scenario", "unavailable"),
        ("post_tweet_x", "unavailable"),
    ],
)
def test_bad_names_never_run(mt_by_id, marker, name, reason):
    case = mt_by_id["multi_turn_base_0"]
    env = SafeEnv(case)
    before = env.state()
    (res,) = env.execute([ToolCall(name, {"command": f"touch {marker}"})], case.available_at(0))
    assert not res.accepted
    assert res.reason == reason
    assert res.call is None
    assert res.output.startswith("Error: ")
    assert env.state() == before
    assert not marker.exists()


def test_unavailable_message_is_readable(mt_by_id):
    case = mt_by_id["multi_turn_base_0"]
    (res,) = SafeEnv(case).execute([ToolCall("book_flight", {})], case.available_at(0))
    assert res.output == "Error: function 'book_flight' is not available"


def test_tool_of_another_turn_set_is_rejected(mt_by_id):
    case = mt_by_id["multi_turn_miss_func_0"]  # sort is held out until turn 3
    env = SafeEnv(case)
    call = ToolCall("sort", {"file_name": "final_report.pdf"})
    assert "sort" not in case.available_at(2)
    (early,) = env.execute([call], case.available_at(2))
    assert (early.accepted, early.reason) == (False, "unavailable")
    env.execute([ToolCall("cd", {"folder": "document"})], case.available_at(3))
    (late,) = env.execute([call], case.available_at(3))
    assert late.accepted and late.call == "sort(file_name='final_report.pdf')"


@pytest.mark.parametrize(
    "key",
    ["a=__import__('os')", "folder)", "class", "lambda", "1x", "a b", "folder=1,x", ""],
)
def test_argument_name_smuggling_is_rejected(mt_by_id, key):
    case = mt_by_id["multi_turn_base_0"]
    (res,) = SafeEnv(case).execute([ToolCall("cd", {key: "x"})], case.available_at(0))
    assert (res.accepted, res.reason) == (False, "bad_argument_name")


class _EvilStr(str):
    def __repr__(self) -> str:  # would smuggle code into a rebuilt call string
        return "__import__('os').getpid()"


def _deep(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({1, 2}, "not_literal"),
        ((1, 2), "not_literal"),
        (b"bytes", "not_literal"),
        (1j, "not_literal"),
        (float("inf"), "not_literal"),
        (float("nan"), "not_literal"),
        (object(), "not_literal"),
        (_EvilStr("document"), "not_literal"),
        (print, "not_literal"),
        ({(1, 2): "tuple key"}, "not_literal"),
        (_deep(MAX_ARGUMENT_DEPTH + 5), "too_deep"),
        (_deep(100_000), "too_deep"),
    ],
)
def test_non_literal_values_are_rejected(mt_by_id, value, reason):
    case = mt_by_id["multi_turn_base_0"]
    (res,) = SafeEnv(case).execute([ToolCall("cd", {"folder": value})], case.available_at(0))
    assert (res.accepted, res.reason) == (False, reason)
    assert res.output.startswith("Error: argument 'folder' is not a literal")


def test_code_strings_stay_strings_in_env_and_in_bfcl_checker(mt_by_id, marker):
    case = mt_by_id["multi_turn_base_0"]
    env = SafeEnv(case)
    avail = case.available_at(0)
    env.execute([ToolCall("touch", {"file_name": "notes.txt"})], avail)
    decoded_steps = []
    for payload in _payloads(marker):
        (res,) = env.execute(
            [ToolCall("echo", {"content": payload, "file_name": "notes.txt"})], avail
        )
        assert res.accepted and res.output == "None"
        (cat,) = env.execute([ToolCall("cat", {"file_name": "notes.txt"})], avail)
        assert json.loads(cat.output) == {"file_content": payload}  # stored as data
        decoded_steps.append([res.call])
    assert not marker.exists()
    # BFCL's checker eval()s call strings: the rebuilt ones must stay inert there too
    decoded = [decoded_steps] + [[] for _ in case.ground_truth[1:]]
    bfcl_check(case, decoded)
    assert not marker.exists()


def test_rebuilt_string_is_repr_of_values():
    call = ToolCall("echo", {"content": "a'b\"c\n", "n": 1, "x": [1.5, None, True, {"k": "v"}]})
    text = validate_call(call, {"echo"})
    assert text == rebuild_call("echo", call.arguments)
    assert text == "echo(content='a\\'b\"c\\n',n=1,x=[1.5, None, True, {'k': 'v'}])"


def test_module_globals_are_restored_after_long_context_weather(mt_by_id):
    vc = importlib.import_module(
        "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.vehicle_control"
    )
    before = dict(vc.LONG_WEATHER_EXTENSION)
    case = next(
        c
        for c in mt_by_id.values()
        if c.category == "multi_turn_long_context" and "VehicleControlAPI" in c.involved_classes
    )
    env = SafeEnv(case)
    (res,) = env.execute([ToolCall("get_outside_temperature_from_google")], case.available_at(0))
    assert res.accepted and "outsideTemperature" in res.output
    assert before == vc.LONG_WEATHER_EXTENSION
    assert restore_module_globals() == []


def test_long_context_travel_instance_shares_nothing_with_module(mt_by_id):
    tb = importlib.import_module(
        "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.travel_booking"
    )
    case = next(
        c
        for c in mt_by_id.values()
        if c.category == "multi_turn_long_context" and "TravelAPI" in c.involved_classes
    )
    env = SafeEnv(case)
    cards = env.instances["TravelAPI"].credit_card_list
    shared = [k for k in tb.CREDIT_CARD_EXTENSION if k in cards]
    assert shared, "long context adds the module's cards"
    assert all(cards[k] is not tb.CREDIT_CARD_EXTENSION[k] for k in shared)


def test_sandbox_deletes_executor_instances(mt_by_id):
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
        execute_multi_turn_func_call,
    )

    case = mt_by_id["multi_turn_base_0"]
    with bfcl_sandbox(executor_prefix="callscope_leaktest"):
        execute_multi_turn_func_call(
            [], case.initial_config, case.involved_classes, "callscope_leaktest", case.id
        )
        assert len(executor_instance_names("callscope_leaktest")) == 2
    assert executor_instance_names("callscope_leaktest") == []


def test_repeated_runs_see_the_same_seeded_state(mt_by_id):
    case = next(
        c
        for c in mt_by_id.values()
        if c.category == "multi_turn_base" and "VehicleControlAPI" in c.involved_classes
    )
    call = [ToolCall("get_outside_temperature_from_google")]
    avail = case.available_at(0)
    first_env = SafeEnv(case)
    first = first_env.execute(call, avail)[0].output
    second_call = first_env.execute(call, avail)[0].output
    fresh = SafeEnv(case).execute(call, avail)[0].output
    assert first == fresh  # a new env restarts the seeded random stream
    assert second_call != first  # the same env advances it


def test_no_module_or_executor_state_survives_grading(mt_by_id):
    from callscope.benchmarks.bfcl.env import _tracked_globals
    from callscope.benchmarks.bfcl.grade import grade
    from callscope.runs.conversation import Trajectory, TurnRecord

    def fingerprint() -> dict:
        return {key: repr(value) for key, value in _tracked_globals()}

    before = fingerprint()
    for case in [c for c in mt_by_id.values() if c.category == "multi_turn_long_context"][:40]:
        traj = Trajectory(case.id, case.category, "native", "none", 20)
        traj.turns = [TurnRecord(i, t, []) for i, t in enumerate(case.turns)]
        grade(case, traj)  # runs BFCL's gold executions on its own instances
    assert fingerprint() == before
    assert executor_instance_names("callscope_") == []


def test_import_stays_light():
    import subprocess
    import sys

    code = (
        "import sys, callscope.benchmarks.bfcl.grade, callscope.runs.conversation, callscope.benchmarks.bfcl.env;"
        "from callscope.benchmarks.bfcl.multi_turn import load_multi_turn;"
        "load_multi_turn(('multi_turn_base',));"
        "bad=[m for m in sys.modules if m in ('bfcl_eval.utils','bfcl_eval.constants.model_config',"
        "'bfcl_eval.constants.eval_config') or m.startswith('bfcl_eval.model_handler')];"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
