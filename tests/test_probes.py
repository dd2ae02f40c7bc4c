"""SRI / CRI probes in the multi-turn runner, and the paired probe report.

Conversations are scripted by hand on real BFCL cases: multi_turn_base_0 (file system +
Twitter, 4 turns), multi_turn_miss_param_0 (its turn 3 has empty gold) and
multi_turn_miss_func_0 (``sort`` held out until turn 3; turn 2 is the empty-gold turn).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("bfcl_eval")

from scripted import Scripted  # noqa: E402

from callscope.benchmarks.bfcl.env import SafeEnv  # noqa: E402
from callscope.benchmarks.bfcl.grade import sanitized_calls  # noqa: E402
from callscope.benchmarks.bfcl.multi_turn import load_multi_turn  # noqa: E402
from callscope.calibration.cri_detectors import (  # noqa: E402
    detect_label_free,
    detect_saag,
    has_antecedent,
)
from callscope.calibration.paired import (  # noqa: E402
    ablation_markdown,
    ablation_matrix,
    compare_markdown,
    compare_probe,
)
from callscope.calibration.probes import (  # noqa: E402
    BYPASS_ABSTENTION,
    CRI_RETRY_INSTRUCTION,
    DECISION_RULE,
    NO_STATE,
    PROBES,
    RECONCILE_HEADER,
    STATE_TITLE,
    ProbeConfig,
    get_probe,
    reconciliation_block,
    state_snapshot,
)
from callscope.core.stats import newcombe_paired  # noqa: E402
from callscope.models.replay import ReplayModel  # noqa: E402
from callscope.records import ExecResult  # noqa: E402
from callscope.runs.conversation import Trajectory, run_conversation  # noqa: E402
from callscope.types import ModelReply, ToolCall  # noqa: E402

DONE = ModelReply(text="Done.")
HALT = ModelReply(text="I will take care of that.")
ASKING = ModelReply(text="Which file do you mean?")


def scripted(replies: list[ModelReply]) -> Scripted:
    """The replies in order, then ``DONE`` forever."""
    return Scripted(replies, then=DONE, spec="scripted:probe")


def call(name: str, **arguments: Any) -> ModelReply:
    return ModelReply(text="", tool_calls=[{"name": name, "arguments": arguments}])


@pytest.fixture(scope="module")
def cases():
    ids = {"multi_turn_base_0", "multi_turn_miss_param_0", "multi_turn_miss_func_0"}
    return {c.id: c for c in load_multi_turn() if c.id in ids}


def events_of(traj: Trajectory) -> list[tuple[int, str, str, str]]:
    return [(e["turn"], e["seam"], e["decision"], e["reason"]) for e in traj.events]


def ls_output(env: SafeEnv) -> str:
    return env.execute([ToolCall("ls", {})], {"ls"})[0].output


# ------------------------------------------------------------------------------ registry


def test_probe_registry():
    assert list(PROBES) == [
        "sri",
        "sri-no-history",
        "sri-no-state",
        "sri-no-reconciliation",
        "sri-gate",
        "sri-gate-miss-param",
        "cri-retry",
        "cri-bypass",
        "cri-retry-saag",
        "cri-bypass-saag",
    ]
    with pytest.raises(ValueError, match="sri-no-history.*cri-bypass-saag"):
        get_probe("sri-full")
    p = get_probe("sri-no-state")
    assert (p.seam, p.history_edit, p.state_injection, p.reconciliation) == (
        "halt",
        True,
        False,
        True,
    )
    assert ProbeConfig.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    assert get_probe("sri-gate-miss-param").gate == "miss_param"
    assert [n for n, q in PROBES.items() if not q.gar_valid] == ["cri-bypass", "cri-bypass-saag"]
    assert get_probe("cri-retry-saag").detector == "saag"
    with pytest.raises(ValueError):
        ProbeConfig("x", seam="elsewhere")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- SRI texts


def test_state_snapshot_is_capped_keeping_the_latest_calls():
    results = [ExecResult("f", {}, True, "x" * 100, f"f(i={i})") for i in range(10, 40)]
    results.insert(5, ExecResult("g", {}, False, "Error: function 'g' is not available"))
    text = state_snapshot(results)
    lines = text.splitlines()
    # title 84 chars; each line 113; 20 lines + "- (10 earlier calls omitted)" = 2393 <= 2400,
    # a 21st line would need 114 more
    assert len(STATE_TITLE) == 84 and len(text) == 2393
    assert lines[0] == STATE_TITLE and lines[1] == "- (10 earlier calls omitted)"
    assert lines[2].startswith("- f(i=20) -> xxx") and lines[-1].startswith("- f(i=39) -> ")
    assert "'g'" not in text  # a rejected call did not execute
    assert state_snapshot([]) == NO_STATE
    assert len(state_snapshot(results, cap=150)) <= 150
    one = state_snapshot([ExecResult("cd", {}, True, '{"cwd":\n "a"}', "cd(folder='a')")])
    assert one == STATE_TITLE + '\n- cd(folder=\'a\') -> {"cwd": "a"}'


def test_reconciliation_block_orders_and_caps_requests():
    prior = ["req-one", "req-two", "x" * 900, "req-four", "req-five", "req-six"]
    text = reconciliation_block(prior, "now do this")
    lines = text.splitlines()
    assert lines[0] == RECONCILE_HEADER
    assert lines[1] == "Earlier requests (most recent first):"
    assert lines[2:5] == ["1. req-six", "2. req-five", "3. req-four"]
    assert lines[5] == "4. " + "x" * 697 + "..."  # 700 characters
    assert lines[6] == "Current request: now do this"
    assert lines[7] == DECISION_RULE and len(lines) == 8
    assert "req-one" not in text and "req-two" not in text
    assert reconciliation_block([], "go").splitlines()[1] == "Current request: go"


# ------------------------------------------------------------------------------ SRI runs


def test_sri_fires_on_a_no_call_turn_not_after_a_call(cases):
    case = cases["multi_turn_base_0"]
    model = scripted(
        [
            call("cd", folder="document"),
            DONE,  # turn 0: a call, then prose: no trigger
            HALT,
            call("cd", folder="temp"),
            DONE,  # turn 1: no call -> SRI -> the retry calls
        ]
    )
    env = SafeEnv(case)
    traj = run_conversation(model, case, probe=get_probe("sri"), env=env)
    assert events_of(traj)[:1] == [(1, "halt", "fired", "halt")]
    assert all(e["turn"] != 0 for e in traj.events)
    assert traj.probe == get_probe("sri").to_dict() and traj.probe_fired
    ev = traj.events[0]
    assert (ev["case_id"], ev["step"], ev["probe"], ev["detector"]) == (case.id, 0, "sri", "halt")
    assert ev["components"] == ["history", "state", "reconciliation"]
    assert ev["halting_class"] == "OTHER"
    # the retry request: history edited (no halting reply), text appended to the user message
    retry = model.messages[3]
    assert retry[-2]["role"] == "assistant" and retry[-2]["content"] == "Done."  # turn 0's end
    user = retry[-1]
    assert user["role"] == "user"
    assert user["content"] == case.turns[1][0]["content"] + "\n\n" + ev["injected"]
    assert not any(m.get("content") == HALT.text for m in retry)
    injected = ev["injected"]
    assert STATE_TITLE + "\n- cd(folder='document') -> " in injected
    assert f"1. {case.turns[0][0]['content']}" in injected
    assert f"Current request: {case.turns[1][0]['content']}" in injected
    # the halting reply stays recorded; the retry's call executed
    steps = traj.turns[1].steps
    assert [s.text for s in steps[:1]] == [HALT.text] and steps[1].results[0].accepted
    assert traj.turns[1].user_messages == case.turns[1]  # the record is not edited
    # turns 2 and 3 end without a call: SRI fires there too, once each
    assert events_of(traj)[1:] == [
        (2, "halt", "fired", "halt"),
        (2, "halt", "suppressed", "once_per_turn"),
        (3, "halt", "fired", "halt"),
        (3, "halt", "suppressed", "once_per_turn"),
    ]
    assert len(model.requests) == 2 + 3 + 2 + 2


def test_sri_at_most_once_per_turn(cases):
    case = cases["multi_turn_base_0"]
    model = scripted([HALT, HALT, call("pwd")])
    traj = run_conversation(model, case, probe=get_probe("sri"))
    assert events_of(traj)[:2] == [
        (0, "halt", "fired", "halt"),
        (0, "halt", "suppressed", "once_per_turn"),
    ]
    assert [s.text for s in traj.turns[0].steps] == [HALT.text, HALT.text]
    assert traj.turns[1].steps[0].calls == [{"name": "pwd", "arguments": {}}]
    # turn 1 made a call: no decision at turn 1
    assert all(e["turn"] != 1 for e in traj.events)


@pytest.mark.parametrize("name", ["sri", "sri-no-history", "sri-no-state", "sri-no-reconciliation"])
def test_sri_ablations_build_the_retry_context(cases, name):
    case = cases["multi_turn_base_0"]
    model = scripted([call("cd", folder="document"), DONE, HALT])
    run_conversation(model, case, probe=get_probe(name))
    retry = model.messages[3]
    probe = get_probe(name)
    turn1 = case.turns[1][0]["content"]
    if probe.history_edit:
        assert retry[-1]["role"] == "user" and retry[-1]["content"].startswith(turn1 + "\n\n")
        text = retry[-1]["content"][len(turn1) + 2 :]
        assert HALT.text not in [m.get("content") for m in retry]
    else:
        assert retry[-3] == case.turns[1][0]
        assert retry[-2] == {"role": "assistant", "content": HALT.text}
        assert retry[-1]["role"] == "user"
        text = retry[-1]["content"]
    assert (STATE_TITLE in text) == probe.state_injection
    assert ("- cd(folder='document') -> " in text) == probe.state_injection
    assert (RECONCILE_HEADER in text) == probe.reconciliation
    assert (DECISION_RULE in text) == probe.reconciliation


def test_sri_gate_skips_asks(cases):
    base, mp = cases["multi_turn_base_0"], cases["multi_turn_miss_param_0"]
    traj = run_conversation(scripted([ASKING]), base, probe=get_probe("sri-gate"))
    assert events_of(traj)[0] == (0, "halt", "suppressed", "gate_ask")
    assert traj.events[0]["halting_class"] == "ASK"
    # a non-ask halt still fires under the gate
    traj = run_conversation(scripted([HALT]), base, probe=get_probe("sri-gate"))
    assert events_of(traj)[0] == (0, "halt", "fired", "halt")
    # miss_param-only gate: fires on an ask of a base case, skips it on a miss_param case
    traj = run_conversation(scripted([ASKING]), base, probe=get_probe("sri-gate-miss-param"))
    assert events_of(traj)[0] == (0, "halt", "fired", "halt")
    traj = run_conversation(scripted([ASKING]), mp, probe=get_probe("sri-gate-miss-param"))
    assert events_of(traj)[0] == (0, "halt", "suppressed", "gate_ask")
    # the plain SRI retries an ask too
    traj = run_conversation(scripted([ASKING]), mp, probe=get_probe("sri"))
    assert events_of(traj)[0] == (0, "halt", "fired", "halt")


def test_sri_with_the_replay_backend(cases, tmp_path: Path):
    case = cases["multi_turn_base_0"]
    outputs: list[Any] = [
        "Let me think.",
        {"text": "", "tool_calls": [{"name": "cd", "arguments": {"folder": "document"}}]},
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
    ]
    path = tmp_path / "replay.jsonl"
    path.write_text(json.dumps({"case_id": case.id, "outputs": outputs}) + "\n")
    traj = run_conversation(ReplayModel(path, native_tools=True), case, probe=get_probe("sri"))
    assert traj.completed
    assert traj.accepted_calls()[0] == [["cd(folder='document')"]]
    assert events_of(traj)[0] == (0, "halt", "fired", "halt")


# ------------------------------------------------------------------------------ detectors


def test_has_antecedent_rules():
    assert has_antecedent("Final_Report.pdf", "move 'final_report.pdf' now")
    assert not has_antecedent("zq_archive", "move 'final_report.pdf' now")
    assert has_antecedent("q", "")  # shorter than 2 characters
    assert has_antecedent(7, "")  # one character
    assert not has_antecedent(12345, "ticket 1234 please")
    assert has_antecedent(12345.0, "ticket 12,345 please")
    assert has_antecedent(True, "") and has_antecedent(None, "")
    assert has_antecedent(["zz unknown"], "") and has_antecedent({"k": "zz unknown"}, "")
    assert has_antecedent("Celsius", "", {"enum": ["celsius", "fahrenheit"]})
    assert not has_antecedent("kelvin", "", {"enum": ["celsius", "fahrenheit"]})
    assert has_antecedent("medium", "", {"default": "medium"})
    assert has_antecedent(20, "", {"default": 20.0})
    assert not has_antecedent(20, "", {"default": "20x"})


SPEC = [
    {
        "name": "set_mode",
        "parameters": {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["eco", "sport"]},
                "level": {"type": "string", "default": "normal"},
                "label": {"type": "string"},
                "tags": {"type": "array"},
                "note": {"type": "string"},
            },
            "required": ["mode", "level", "label", "tags"],
        },
    }
]


def test_label_free_detector():
    def detect(args: dict[str, Any], user: str = "", observed: str = "") -> Any:
        return detect_label_free([ToolCall("set_mode", args)], SPEC, user, observed)

    ok = {"mode": "eco", "level": "normal", "label": "kitchen", "tags": ["zz nowhere"]}
    assert detect(ok, user="label the kitchen") is None
    assert detect(ok, observed='{"labels": ["kitchen"]}') is None
    found = detect(ok)
    assert (found.kind, found.details["argument"], found.details["value"]) == (
        "UR",
        "label",
        "kitchen",
    )
    assert detect({**ok, "mode": "turbo"}, user="kitchen").details["argument"] == "mode"
    assert detect({**ok, "note": "zz nowhere"}, user="kitchen") is None  # not required
    assert detect({"mode": "eco"}) is None  # missing required args are not UR
    mc = detect_label_free([ToolCall("set_mode", ok), ToolCall("reboot", {})], SPEC, "kitchen", "")
    assert (mc.kind, mc.index, mc.call.name) == ("MC", 1, "reboot")


def test_saag_detector_mapping(cases):
    case = cases["multi_turn_base_0"]
    functions = case.functions_at(0)
    user = case.turns[0][0]["content"]
    mc = detect_saag([ToolCall("make_directory", {"dir_name": "temp"})], functions, user, "")
    assert mc.kind == "MC" and mc.details["saag_stage"] == 1
    ur = detect_saag([ToolCall("mkdir", {"dir_name": "zq_archive_77"})], functions, user, "")
    assert ur.kind == "UR" and ur.details["argument"] == "dir_name"
    assert detect_saag([ToolCall("mkdir", {"dir_name": "temp"})], functions, user, "") is None
    # soft drift (close to the query) passes SAAG but not the label-free substring test
    soft = [ToolCall("mkdir", {"dir_name": "temps"})]
    assert detect_saag(soft, functions, user, "") is None
    assert detect_label_free(soft, functions, user, "").kind == "UR"
    # a stage-2 failure (missing required argument) is neither MC nor UR
    assert detect_saag([ToolCall("mkdir", {})], functions, user, "") is None


# ------------------------------------------------------------------------------ CRI runs


def test_cri_retry_retracts_and_never_executes(cases):
    case = cases["multi_turn_base_0"]
    script = [call("mkdir", dir_name="zq_archive_77"), ModelReply(text="I cannot proceed yet.")]
    env = SafeEnv(case)
    model = scripted(list(script))
    traj = run_conversation(model, case, probe=get_probe("cri-retry"), env=env)
    assert events_of(traj) == [(0, "call", "fired", "detected")]
    ev = traj.events[0]
    assert (ev["detector"], ev["argument"], ev["value"], ev["action"], ev["method"]) == (
        "UR",
        "dir_name",
        "zq_archive_77",
        "retry",
        "label-free",
    )
    step = traj.turns[0].steps[0]
    assert step.retracted and step.results == [] and step.calls[0]["name"] == "mkdir"
    assert env.log == [] and "zq_archive_77" not in ls_output(env)
    retry = model.messages[1]
    assert retry[-1] == {
        "role": "user",
        "content": case.turns[0][0]["content"] + "\n\n" + CRI_RETRY_INSTRUCTION,
    }
    assert not any(m["role"] == "assistant" for m in retry)
    assert traj.turns[0].steps[1].text == "I cannot proceed yet."
    assert sanitized_calls(case, traj)[0] == []
    # a retracted emission is still a model emission
    assert [s.text for _, _, s in traj.model_emissions()][0] == ""
    # control: without the probe the same call changes the file system
    env = SafeEnv(case)
    run_conversation(scripted(list(script)), case, env=env)
    assert "zq_archive_77" in ls_output(env)


def test_cri_once_per_case(cases):
    case = cases["multi_turn_base_0"]
    suspect = call("mkdir", dir_name="zq_archive_77")
    env = SafeEnv(case)
    model = scripted([suspect, suspect, DONE, call("cd", folder="zz_nowhere")])
    traj = run_conversation(model, case, probe=get_probe("cri-retry"), env=env)
    assert events_of(traj) == [
        (0, "call", "fired", "detected"),
        (0, "call", "suppressed", "once_per_case"),
        (1, "call", "suppressed", "once_per_case"),
    ]
    assert traj.events[1]["fired_at_turn"] == 0
    assert traj.turns[0].steps[1].results[0].accepted  # the second one executed
    assert "zq_archive_77" in ls_output(env)
    # a call that passes the detector logs nothing
    traj = run_conversation(
        scripted([call("cd", folder="document")]), case, probe=get_probe("cri-retry")
    )
    assert traj.events == [] and not traj.probe_fired


def test_cri_mc_and_suppression_after_reinjection(cases):
    case = cases["multi_turn_miss_func_0"]
    sort = call("sort", file_name="final_report.pdf")
    model = scripted([DONE, DONE, sort, ModelReply(text="I cannot sort files."), sort])
    traj = run_conversation(model, case, probe=get_probe("cri-retry"))
    assert events_of(traj) == [(2, "call", "fired", "detected")]
    assert traj.events[0]["detector"] == "MC"
    assert traj.turns[2].steps[0].retracted
    assert traj.turns[3].steps[0].results[0].accepted  # sort is back at turn 3
    # a suspect call at the re-injection turn is suppressed (the gate, not the detector)
    model = scripted([DONE, DONE, DONE, call("mkdir", dir_name="zq_archive_77")])
    traj = run_conversation(model, case, probe=get_probe("cri-retry"))
    assert events_of(traj) == [(3, "call", "suppressed", "after_reinjection")]
    assert traj.events[0]["reinjection_turn"] == 3 and traj.turns[3].steps[0].results


def test_cri_bypass_only_at_the_empty_gold_turn(cases):
    case = cases["multi_turn_miss_func_0"]
    model = scripted(
        [
            call("mkdir", dir_name="zq_archive_77"),
            DONE,
            DONE,
            call("sort", file_name="final_report.pdf"),
        ]
    )
    traj = run_conversation(model, case, probe=get_probe("cri-bypass"))
    assert events_of(traj) == [
        (0, "call", "suppressed", "not_empty_gold_turn"),
        (2, "call", "fired", "detected"),
    ]
    assert traj.events[0]["empty_gold_turns"] == [2]
    assert traj.turns[0].steps[0].results[0].accepted  # suppressed: it executed
    steps = traj.turns[2].steps
    assert [(s.retracted, s.placeholder, s.text) for s in steps] == [
        (True, False, ""),
        (False, True, BYPASS_ABSTENTION),
    ]
    assert traj.events[1]["placeholder_step"] == 1
    # no re-query: turn 3 came next and saw the abstention
    assert len(model.requests) == 2 + 1 + 1 + 2
    assert model.messages[4][-2] == {"role": "assistant", "content": BYPASS_ABSTENTION}
    assert [(t, j) for t, j, _ in traj.model_emissions() if t == 2] == [(2, 0)]
    assert len(list(traj.emissions())) == len(list(traj.model_emissions())) + 1
    # miss_param: the empty-gold turn is turn 3
    mp = cases["multi_turn_miss_param_0"]
    traj = run_conversation(
        scripted([DONE, DONE, DONE, call("mkdir", dir_name="zq_9")]),
        mp,
        probe=get_probe("cri-bypass"),
    )
    assert events_of(traj) == [(3, "call", "fired", "detected")]
    # base cases have no empty-gold turn: bypass never fires
    traj = run_conversation(
        scripted([call("mkdir", dir_name="zq_archive_77")]),
        cases["multi_turn_base_0"],
        probe=get_probe("cri-bypass"),
    )
    assert events_of(traj) == [(0, "call", "suppressed", "not_empty_gold_turn")]


def test_cri_saag_probe_end_to_end(cases):
    case = cases["multi_turn_miss_func_0"]
    model = scripted([DONE, DONE, call("sort", file_name="final_report.pdf")])
    traj = run_conversation(model, case, probe=get_probe("cri-bypass-saag"))
    assert events_of(traj) == [(2, "call", "fired", "detected")]
    assert (traj.events[0]["detector"], traj.events[0]["method"]) == ("MC", "saag")


def test_trajectory_round_trip_and_old_dicts(cases):
    case = cases["multi_turn_miss_func_0"]
    model = scripted([DONE, DONE, call("sort", file_name="final_report.pdf")])
    traj = run_conversation(model, case, probe=get_probe("cri-bypass"))
    again = Trajectory.from_dict(json.loads(json.dumps(traj.to_dict())))
    assert again.to_dict() == traj.to_dict() and again.events == traj.events
    assert again.turns[2].steps[1].placeholder and again.turns[2].steps[0].retracted
    old = traj.to_dict()
    del old["events"], old["probe"]
    for turn in old["turns"]:
        for step in turn["steps"]:
            del step["retracted"], step["placeholder"]
    loaded = Trajectory.from_dict(old)
    assert loaded.events == [] and loaded.probe is None
    assert not any(s.retracted or s.placeholder for _, _, s in loaded.emissions())


# --------------------------------------------------------------------------- the report


def test_newcombe_paired_interval():
    # Bentur et al. (2009) airway data as in Fagerland, Lydersen & Laake (2014):
    # Newcombe hybrid score interval -0.507 to -0.026 for a difference of -6/21
    theta, lo, hi = newcombe_paired(1, 1, 7, 12)
    assert theta == pytest.approx(-6 / 21)
    assert (round(lo, 3), round(hi, 3)) == (-0.507, -0.026)
    # phi = 0 (a margin is empty): the square-and-add of the two Wilson half-widths
    z = 1.96

    def wil(k, n):
        c = (k + z * z / 2) / (n + z * z)
        h = z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
        return c - h, c + h

    (l1, u1), (l2, u2) = wil(3, 4), wil(4, 4)
    theta, lo, hi = newcombe_paired(3, 0, 1, 0)  # p1 = 3/4, p2 = 4/4
    assert theta == -0.25
    assert lo == pytest.approx(-0.25 - math.sqrt((0.75 - l1) ** 2 + (u2 - 1.0) ** 2))
    assert hi == pytest.approx(-0.25 + math.sqrt((u1 - 0.75) ** 2 + (1.0 - l2) ** 2))
    with pytest.raises(ValueError):
        newcombe_paired(0, 0, 0, 0)


def test_compare_probe_by_hand():
    base = [
        ("b1", "multi_turn_base", True, True),
        ("b2", "multi_turn_base", True, True),
        ("b3", "multi_turn_base", False, True),
        ("b4", "multi_turn_base", False, False),
        ("m1", "multi_turn_miss_param", False, False),
        ("m2", "multi_turn_miss_param", True, True),
        ("m3", "multi_turn_miss_param", False, False),
        ("x9", "multi_turn_base", True, True),  # no probe counterpart
    ]
    probed = [
        ("b1", "multi_turn_base", True, True),
        ("b2", "multi_turn_base", False, True),
        ("b3", "multi_turn_base", True, True),
        ("b4", "multi_turn_base", True, True),
        ("m1", "multi_turn_miss_param", False, True),
        ("m2", "multi_turn_miss_param", True, True),
        ("m3", "multi_turn_miss_param", False, False),
    ]
    fired = {"b2": True, "b4": True, "m1": True, "m3": False}
    rows = compare_probe(base, probed, fired, "sri")
    assert [r["category"] for r in rows] == ["base", "miss_param", "all"]
    b, m, a = rows
    # base: Acc 2/4 -> 3/4 (b2 lost, b3 and b4 gained); GAR 3/4 -> 4/4; fired 2 of 4
    assert (b["n"], b["unpaired"], b["acc_base"], b["acc_probe"]) == (4, 1, 0.5, 0.75)
    assert b["d_acc"] == 0.25 and (b["pass_to_fail"], b["fail_to_pass"]) == (1, 2)
    assert (b["gar_base"], b["gar_probe"], b["d_gar"]) == (0.75, 1.0, 0.25)
    assert (b["gar_hit_to_miss"], b["gar_miss_to_hit"]) == (0, 1)
    assert (b["fired"], b["fired_rate"]) == (2, 0.5)
    assert (b["d_acc_lo"], b["d_acc_hi"]) == pytest.approx(newcombe_paired(1, 2, 1, 0)[1:])
    assert b["d_acc_lo"] < 0.25 < b["d_acc_hi"]
    # miss_param: Acc 1/3 both; GAR 1/3 -> 2/3; fired 1 of 3
    assert (m["n"], m["acc_base"], m["acc_probe"], m["d_acc"]) == (3, 1 / 3, 1 / 3, 0.0)
    assert (m["pass_to_fail"], m["fail_to_pass"]) == (0, 0)
    assert m["d_gar"] == pytest.approx(1 / 3) and m["fired_rate"] == pytest.approx(1 / 3)
    # all: 7 paired; Acc 3/7 -> 4/7; flips 1 and 2; fired 3
    assert (a["n"], a["unpaired"], a["pass_to_fail"], a["fail_to_pass"], a["fired"]) == (
        7,
        1,
        1,
        2,
        3,
    )
    assert a["d_acc"] == pytest.approx(1 / 7)
    # bypass: GAR of the probe run is not reported
    rows = compare_probe(base, probed, fired, "cri-bypass")
    assert all(r["gar_probe"] is None and r["d_gar"] is None for r in rows)
    assert rows[0]["gar_base"] == 0.75 and not rows[0]["gar_valid"]
    md = compare_markdown(rows)
    assert "| cri-bypass | base | 4 | 50.0 | 75.0 | +25.0 [" in md
    assert "n/a (bypass)" in md and "GAR is n/a under CRI-bypass" in md


def test_ablation_matrix():
    def rows(name: str, acc: float, gar: float | None) -> list[dict[str, Any]]:
        return [
            {"category": c, "d_acc": acc, "d_gar": gar, "fired_rate": 0.5}
            for c in ("miss_func", "base", "all")
        ]

    matrix = ablation_matrix(
        {"sri": rows("sri", 0.1, -0.05), "cri-bypass": rows("cri-bypass", 0.02, None)}
    )
    assert [r["probe"] for r in matrix] == ["sri", "cri-bypass"]
    assert list(matrix[0]) == [
        "probe",
        "base.d_acc",
        "base.d_gar",
        "miss_func.d_acc",
        "miss_func.d_gar",
        "all.d_acc",
        "all.d_gar",
        "all.fired_rate",
    ]
    assert matrix[0]["base.d_gar"] == -0.05 and matrix[1]["miss_func.d_gar"] is None
    md = ablation_markdown(matrix)
    assert "| sri | +10.0 / -5.0 | +10.0 / -5.0 | +10.0 / -5.0 | 50.0 |" in md
    assert "| cri-bypass | +2.0 / n/a |" in md


def test_markdown_leaves_out_categories_the_probe_never_ran():
    base = [
        ("b1", "multi_turn_base", False, True),
        ("b2", "multi_turn_base", False, False),
        ("m1", "multi_turn_miss_param", False, False),
    ]
    probed = [("m1", "multi_turn_miss_param", False, True)]
    md = compare_markdown(compare_probe(base, probed, {"m1": True}, "cri-retry"))
    lines = md.splitlines()
    assert [line.split(" | ")[1] for line in lines[2:4]] == ["miss_param", "all"]
    assert "| cri-retry | miss_param | 1 | 0.0 | 0.0 | +0.0" in md and "| 100.0 |" in md
    assert "Not paired (in one run only): base (2 cases)." in md
