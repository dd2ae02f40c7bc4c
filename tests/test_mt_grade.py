"""grade(): BFCL's multi-turn verdicts on sanitized call strings, gold replay, agreement."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("bfcl_eval")

from scripted import Scripted  # noqa: E402

from callscope.benchmarks.bfcl.env import (  # noqa: E402
    ExecResult,
    executor_instance_names,
    rebuild_call,
    unique_model_name,
)
from callscope.benchmarks.bfcl.grade import bfcl_check, grade, sanitized_calls  # noqa: E402
from callscope.benchmarks.bfcl.multi_turn import gold_calls  # noqa: E402
from callscope.errors import ModelError  # noqa: E402
from callscope.runs.conversation import (  # noqa: E402
    StepRecord,
    Trajectory,
    TurnRecord,
    run_conversation,
)
from callscope.types import ModelReply, ToolCall  # noqa: E402


def script(turns: list[list[ToolCall]], style: str = "native") -> list[ModelReply]:
    """One step with all of a turn's calls, then a closing text (a no-call turn: text only)."""
    out: list[ModelReply] = []
    for calls in turns:
        if calls and style == "native":
            out.append(ModelReply(tool_calls=[c.to_dict() for c in calls]))
        elif calls:
            out.append(
                ModelReply(
                    text="[" + ", ".join(rebuild_call(c.name, c.arguments) for c in calls) + "]"
                )
            )
        out.append(ModelReply(text="Done."))
    return out


def bfcl_direct(case, decoded: list[list[list[str]]]) -> bool:
    """BFCL's checker called directly (its own globals, a fresh name), for agreement."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    from callscope.benchmarks.bfcl.env import bfcl_sandbox

    name = unique_model_name("direct")
    entry = {
        "id": case.id,
        "initial_config": case.initial_config,
        "involved_classes": case.involved_classes,
    }
    with bfcl_sandbox(executor_prefix=name):
        return bool(
            multi_turn_checker(decoded, case.ground_truth, entry, case.category, name)["valid"]
        )


@pytest.mark.slow
def test_gold_replay_all_800_through_the_pipeline(mt_by_id):
    failures = {}
    for case in mt_by_id.values():
        traj = run_conversation(Scripted(script(gold_calls(case))), case)
        verdict = grade(case, traj)
        if not verdict.passed:
            failures[case.id] = verdict
    # the one BFCL gold answer that calls a held-out tool before it is re-injected
    assert sorted(failures) == ["multi_turn_miss_func_49"]
    v = failures["multi_turn_miss_func_49"]
    assert v.failed_turn == 1 and v.error_type == "multi_turn:execution_response_mismatch"
    assert executor_instance_names("callscope_") == []


def test_the_gold_exception_is_the_held_out_tail(mt_by_id):
    case = mt_by_id["multi_turn_miss_func_49"]
    assert case.missed_function == {3: ["wc", "tail", "cat"]}
    assert "tail(file_name='file3.txt')" in case.ground_truth[1]
    traj = run_conversation(Scripted(script(gold_calls(case))), case)
    rejected = [r for _, _, s in traj.emissions() for r in s.results if not r.accepted]
    assert [(r.name, r.reason) for r in rejected] == [("tail", "unavailable")]
    # BFCL itself, which does not enforce availability, passes the raw gold strings
    assert bfcl_direct(case, [[g] if g else [] for g in case.ground_truth])


@pytest.mark.parametrize("style", ["native", "prompt"])
@pytest.mark.parametrize(
    "case_id",
    [
        "multi_turn_base_0",
        "multi_turn_long_context_50",
        "multi_turn_miss_param_7",
        "multi_turn_miss_func_0",
        "multi_turn_base_199",
    ],
)
def test_gold_replay_sample_both_styles(mt_by_id, case_id, style):
    case = mt_by_id[case_id]
    traj = run_conversation(Scripted(script(gold_calls(case), style)), case, style=style)
    verdict = grade(case, traj)
    assert verdict.passed, verdict.reason
    assert all(t.status in ("passed", "skipped") for t in verdict.per_turn)


@pytest.mark.parametrize(
    "case_id",
    [
        "multi_turn_base_0",
        "multi_turn_base_10",
        "multi_turn_long_context_3",
        "multi_turn_miss_param_20",
        "multi_turn_miss_func_30",
    ],
)
def test_perturbed_gold_fails(mt_by_id, case_id):
    case = mt_by_id[case_id]
    turns = gold_calls(case)
    k = next(i for i, t in enumerate(turns) if t)
    turns[k] = turns[k][:-1]
    verdict = grade(case, run_conversation(Scripted(script(turns)), case))
    assert not verdict.passed
    assert verdict.failed_turn == k
    assert verdict.per_turn[k].status == "failed"


def _traj(case, per_turn_calls: list[list[str]]) -> Trajectory:
    """A recorded trajectory built by hand: one accepted step per turn with calls."""
    traj = Trajectory(case.id, case.category, "native", "hand", 20)
    for i, strings in enumerate(per_turn_calls):
        steps = []
        if strings:
            calls = [gold_calls_one(case, s) for s in strings]
            steps.append(
                StepRecord(
                    text="",
                    tool_calls=[c.to_dict() for c in calls],
                    calls=[c.to_dict() for c in calls],
                    parse_error=None,
                    parse_form="native",
                    results=[
                        ExecResult(c.name, c.arguments, True, "", rebuild_call(c.name, c.arguments))
                        for c in calls
                    ],
                    available=sorted(case.available_at(i)),
                )
            )
        steps.append(StepRecord("Done.", None, [], "no native tool call", None, [], []))
        traj.turns.append(TurnRecord(i, case.turns[i], sorted(case.available_at(i)), [], steps))
    return traj


def gold_calls_one(case, text: str) -> ToolCall:
    from callscope.benchmarks.bfcl.multi_turn import parse_gold_call

    return parse_gold_call(text, case.involved_classes)


def test_agreement_with_bfcl_on_hand_built_trajectories(mt_by_id):
    case = mt_by_id["multi_turn_base_0"]
    gold = [list(t) for t in case.ground_truth]
    wrong_arg = [list(t) for t in gold]
    wrong_arg[0][1] = "mkdir(dir_name='tmp')"
    extra_read = [list(t) for t in gold]
    extra_read[1] = ["pwd()"] + extra_read[1] + ["ls()"]
    # not logged in: post_tweet returns an error and changes nothing, so BFCL passes it
    failed_tweet = [list(t) for t in gold]
    failed_tweet[3] = failed_tweet[3] + ["post_tweet(content='x')"]
    extra_write = [list(t) for t in gold]
    extra_write[3] = extra_write[3] + ["touch(file_name='extra.txt')"]
    expected = {
        "gold": True,
        "wrong_arg": False,
        "extra_read": True,
        "failed_tweet": True,
        "extra_write": False,
    }
    for label, turns in [
        ("gold", gold),
        ("wrong_arg", wrong_arg),
        ("extra_read", extra_read),
        ("failed_tweet", failed_tweet),
        ("extra_write", extra_write),
    ]:
        traj = _traj(case, turns)
        ours = grade(case, traj)
        # stored trajectories are graded the same after a JSON round trip
        again = grade(case, Trajectory.from_dict(json.loads(json.dumps(traj.to_dict()))))
        theirs = bfcl_direct(case, sanitized_calls(case, traj))
        assert ours.passed == theirs == again.passed == expected[label], label
    missing = _traj(case, gold[:-1])
    verdict = grade(case, missing)
    assert not verdict.passed and verdict.error_type == "multi_turn:force_terminated"


def test_empty_turn_and_state_mismatch_reasons(mt_by_id):
    case = mt_by_id["multi_turn_base_0"]
    gold = [list(t) for t in case.ground_truth]
    no_calls = grade(case, _traj(case, [gold[0], [], gold[2], gold[3]]))
    assert no_calls.error_type == "multi_turn:empty_turn_model_response"
    assert no_calls.failed_turn == 1
    assert [t.status for t in no_calls.per_turn] == ["passed", "failed", "unchecked", "unchecked"]
    state = grade(case, _traj(case, [gold[0][:-1], gold[1], gold[2], gold[3]]))
    assert state.error_type == "multi_turn:instance_state_mismatch"
    assert state.failed_turn == 0 and "root" in state.details["differing_attributes"]
    json.dumps(state.to_dict())


def test_tampered_stored_calls_never_reach_bfcl(mt_by_id, tmp_path):
    case = mt_by_id["multi_turn_base_0"]
    marker = tmp_path / "PWNED"
    traj = _traj(case, [list(t) for t in case.ground_truth])
    evil = ExecResult(
        f"__import__('os').system('touch {marker}')",
        {},
        True,
        "",
        f"__import__('os').system('touch {marker}')",
    )
    unavailable = ExecResult("book_flight", {}, True, "", "book_flight()")
    traj.turns[0].steps[0].results.extend([evil, unavailable])
    verdict = grade(case, traj)
    assert verdict.passed
    assert all(
        "import" not in s and "book_flight" not in s
        for turn in verdict.decoded
        for step in turn
        for s in step
    )
    assert not marker.exists()


def test_model_error_and_step_limit_verdicts(mt_by_id):
    case = mt_by_id["multi_turn_base_0"]
    err = run_conversation(Scripted([ModelError("down", kind="connection")]), case)
    v = grade(case, err)
    assert (v.passed, v.error_type) == (False, "multi_turn:inference_error")
    loop = run_conversation(
        Scripted([ModelReply(tool_calls=[{"name": "pwd", "arguments": {}}])] * 30),
        case,
        max_steps=3,
    )
    v = grade(case, loop)
    assert (v.passed, v.error_type) == (False, "multi_turn:force_terminated")


def test_bfcl_check_needs_every_turn(mt_by_id):
    with pytest.raises(ValueError):
        bfcl_check(mt_by_id["multi_turn_base_0"], [[]])
