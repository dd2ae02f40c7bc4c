import json

import pytest
from rich.console import Console

from callscope.benchmarks.bfcl.categories import gold_class
from callscope.benchmarks.case_records import read_case_records, write_case_records
from callscope.calibration.classify import ASK_OVER_TOOL_CALL
from callscope.calibration.diagnostics import (
    CaseRecord,
    DiagnosticsSettings,
    capability_check,
    classify_case,
    compute_diagnostics,
    diagnostics_table,
    rich_table,
)
from callscope.types import ASK, REFUSE, TOOL_CALL

NATIVE_LS = {"content": None, "tool_calls": [{"function": {"name": "ls", "arguments": "{}"}}]}


def _records() -> list[CaseRecord]:
    mp = "miss_param"
    mf = "miss_func"
    return [
        # miss_param, gold ASK
        CaseRecord("p1", mp, ASK, [["[ls(a=1)]"], ["Which file do you mean?"]], [1], True),
        CaseRecord(
            "p2", mp, ASK, [["Could you tell me the name?"], ["[cd(folder='a')]"]], [1], False
        ),
        CaseRecord(
            "p3", mp, ASK, [["[cd(folder='a')]"], ["[mv(source='a', destination='b')]"]], [1], True
        ),
        CaseRecord("p4", mp, ASK, [["[cd(folder='a')]"]], [1], False, "force-terminated"),
        # miss_func, gold REFUSE: every case passes, one refuses -> bound violation
        CaseRecord("f1", mf, REFUSE, [["[sort(file_name='a')]"]], [0], True),
        CaseRecord("f2", mf, REFUSE, [["I cannot find a function to sort files."]], [0], True),
        CaseRecord("f3", mf, REFUSE, [['{"name": "sort", "arguments": {}}']], [0], True),
        # base, gold TOOL_CALL: calls everywhere, nothing passes -> large slack
        CaseRecord(
            "b1",
            "base",
            TOOL_CALL,
            [["[ls(a=1)]"], ["Done, all files have been successfully moved."]],
            [0, 1],
            False,
        ),
        CaseRecord(
            "b2", "base", TOOL_CALL, [[NATIVE_LS], [[{"cd": '{"folder": "x"}'}]]], [0, 1], False
        ),
    ]


def _row(diag, category):
    return next(r for r in diag.rows if r["category"] == category)


def test_rows_are_ordered_and_carry_config():
    diag = compute_diagnostics(_records())
    assert [r["category"] for r in diag.rows] == ["base", "miss_param", "miss_func"]
    assert diag.config["name"] == "default"
    assert diag.settings == {"slack_threshold": 0.2, "t_cap": 10, "multi_label": False, "z": 1.96}


def test_miss_param_case_turn_and_acc():
    row = _row(compute_diagnostics(_records()), "miss_param")
    assert row["gold_class"] == ASK
    assert row["n"] == 4 and row["n_errors"] == 1
    # case level: p1 and p2 emitted an ASK somewhere
    assert row["gar_case_k"] == 2 and row["gar_case"] == 0.5
    # Wilson 95% for 2/4, worked by hand: centre 0.5, half-width 0.349964
    assert row["gar_case_ci_low"] == pytest.approx(0.150036, abs=1e-5)
    assert row["gar_case_ci_high"] == pytest.approx(0.849964, abs=1e-5)
    # turn level: only p1 asked at its due turn 1 (p4 never reached turn 1)
    assert (row["gar_turn_k"], row["gar_turn_n"]) == (1, 4)
    assert row["gar_turn"] == 0.25
    assert row["gar_turn_ci_low"] == pytest.approx(0.045586, abs=1e-5)
    assert row["gar_turn_ci_high"] == pytest.approx(0.699364, abs=1e-5)
    assert (row["per_turn_k"], row["per_turn_n"]) == (1, 4)
    # Acc: p1 and p3 passed
    assert (row["acc_k"], row["acc_n"], row["acc_source"]) == (2, 4, "cases")
    assert row["acc"] == 0.5
    assert row["gap"] == 0.0
    assert row["bound_violation"] is False
    assert row["large_slack"] is False
    # p3 passed without ever asking: grader masking at case level
    assert row["passed_without_gold"] == 1
    assert row["class_counts"] == {TOOL_CALL: 5, REFUSE: 0, ASK: 2, "CONFIRM": 0, "OTHER": 0}


def test_miss_func_bound_violation():
    row = _row(compute_diagnostics(_records()), "miss_func")
    assert row["gar_case_k"] == 1 and row["gar_case"] == pytest.approx(1 / 3)
    assert row["acc"] == 1.0
    assert row["gap"] == pytest.approx(-2 / 3)
    assert row["bound_violation"] is True
    assert row["passed_without_gold"] == 2
    # Wilson for 1/3: (0.061490, 0.792345); for 3/3: (0.438494, 1.0)
    assert row["gar_case_ci_low"] == pytest.approx(0.061490, abs=1e-5)
    assert row["gar_case_ci_high"] == pytest.approx(0.792345, abs=1e-5)
    assert row["acc_ci_low"] == pytest.approx(0.438494, abs=1e-5)
    assert row["acc_ci_high"] == pytest.approx(1.0)
    assert row["gar_turn"] == pytest.approx(1 / 3)


def test_base_large_slack_and_per_turn_rate():
    row = _row(compute_diagnostics(_records()), "base")
    assert row["gar_case"] == 1.0 and row["acc"] == 0.0
    assert row["gap"] == 1.0 and row["large_slack"] is True
    assert row["bound_violation"] is False
    # due turns: b1 (call, confirm) -> 1 of 2; b2 (call, call) -> 2 of 2
    assert (row["per_turn_k"], row["per_turn_n"]) == (3, 4)
    assert row["gar_turn"] == 1.0
    assert row["class_counts"]["CONFIRM"] == 1 and row["class_counts"][TOOL_CALL] == 3


def test_slack_threshold_is_configurable():
    diag = compute_diagnostics(_records(), settings=DiagnosticsSettings(slack_threshold=1.0))
    assert _row(diag, "base")["large_slack"] is False


def test_run_class_counts_and_capability():
    diag = compute_diagnostics(_records())
    assert diag.class_counts == {TOOL_CALL: 10, REFUSE: 1, ASK: 2, "CONFIRM": 1, "OTHER": 0}
    cap = diag.capability
    assert cap["t_cap"] == 10
    assert cap["passed"] == {TOOL_CALL: True, REFUSE: False, ASK: False, "CONFIRM": False}
    assert cap["ok"] is False and cap["below"] == [REFUSE, ASK, "CONFIRM"]
    low = compute_diagnostics(_records(), settings=DiagnosticsSettings(t_cap=1)).capability
    assert low["ok"] is True
    assert capability_check({TOOL_CALL: 3}, t_cap=3)["below"] == [REFUSE, ASK, "CONFIRM"]


def test_ask_variant_changes_gar():
    rec = CaseRecord(
        "q",
        "miss_param",
        ASK,
        [[{"content": "Which folder?", "tool_calls": NATIVE_LS["tool_calls"]}]],
        [0],
        False,
    )
    assert compute_diagnostics([rec]).rows[0]["gar_case"] == 0.0
    diag = compute_diagnostics([rec], config=ASK_OVER_TOOL_CALL)
    assert diag.rows[0]["gar_case"] == 1.0
    assert diag.config["name"] == "ask_over_tool_call"


def test_multi_label_credits_ask_inside_refusal():
    rec = CaseRecord("q", "miss_param", ASK, [["I cannot do that yet. Which folder?"]], [0])
    assert classify_case(rec).union == [REFUSE]
    assert classify_case(rec, multi_label=True).union == [REFUSE, ASK]
    single = compute_diagnostics([rec]).rows[0]
    multi = compute_diagnostics([rec], settings=DiagnosticsSettings(multi_label=True)).rows[0]
    assert single["gar_case"] == 0.0 and multi["gar_case"] == 1.0


def test_header_acc_used_when_no_case_verdicts():
    recs = [CaseRecord(f"c{i}", "base", TOOL_CALL, [["[ls(a=1)]"]], [0]) for i in range(4)]
    row = compute_diagnostics(recs, header_acc={"base": (3, 4)}).rows[0]
    assert (row["acc"], row["acc_source"], row["acc_k"], row["acc_n"]) == (0.75, "header", 3, 4)
    assert row["passed_without_gold"] is None
    assert row["acc_ci_low"] == pytest.approx(0.300636, abs=1e-5)
    assert row["gap"] == pytest.approx(0.25)
    bare = compute_diagnostics(recs).rows[0]
    assert bare["acc"] is None and bare["acc_source"] is None and bare["gap"] is None
    assert bare["bound_violation"] is None and bare["large_slack"] is None


def test_case_without_due_turns_is_out_of_turn_level():
    recs = [
        CaseRecord("a", "miss_param", ASK, [["Which one?"]], [], True),
        CaseRecord("b", "miss_param", ASK, [["ok"]], [0], True),
    ]
    row = compute_diagnostics(recs).rows[0]
    assert row["gar_case"] == 0.5
    assert (row["gar_turn_k"], row["gar_turn_n"], row["gar_turn"]) == (0, 1, 0.0)


def test_markdown_and_rich_rendering():
    diag = compute_diagnostics(_records())
    md = diagnostics_table(diag.rows).to_markdown()
    lines = md.splitlines()
    assert lines[0].startswith("| Category | Gold | n | GAR case % [95% CI]")
    mf_line = next(line for line in lines if line.startswith("| miss_func"))
    assert "| REFUSE | 3 | 33.3 [6.1, 79.2] |" in mf_line
    assert "100.0 [43.8, 100.0]" in mf_line
    assert "-66.7" in mf_line and "bound violation" in mf_line
    base_line = next(line for line in lines if line.startswith("| base"))
    assert "+100.0" in base_line and "large slack" in base_line
    console = Console(record=True, width=250)
    console.print(rich_table(diag.rows))
    text = console.export_text()
    assert "miss_func" in text and "33.3 [6.1, 79.2]" in text


def test_to_dict_is_json_serialisable():
    diag = compute_diagnostics(_records())
    d = json.loads(json.dumps(diag.to_dict(include_cases=True)))
    assert d["cases"][0]["id"] == "p1"
    assert d["cases"][0]["turn_classes"] == [[[TOOL_CALL]], [[ASK]]]


def test_record_round_trip_and_validation(tmp_path):
    path = tmp_path / "cases.jsonl"
    write_case_records(path, _records()[:2])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("{broken\n")
        fh.write(json.dumps({"id": "x", "category": "base", "turn_emissions": "nope"}) + "\n")
        fh.write(json.dumps({"id": "y", "category": "weird"}) + "\n")
        fh.write(json.dumps({"id": "z", "category": "miss_func", "due_turns": [1]}) + "\n")
    records, problems = read_case_records(path)
    assert [r.id for r in records] == ["p1", "p2", "z"]
    assert records[0] == _records()[0]
    assert records[2].gold_class == REFUSE  # derived from the category
    assert len(problems) == 3
    assert problems[0].endswith(
        ":3: not valid JSON (Expecting property name enclosed in double quotes)"
    )
    assert "turn_emissions" in problems[1]
    assert "weird" in problems[2]


def test_gold_class_for():
    assert gold_class("multi_turn_miss_func") == REFUSE
    assert gold_class("long_context") == TOOL_CALL
    with pytest.raises(ValueError):
        gold_class("simple_python")
