import importlib.util
import json
from pathlib import Path

import pytest

from callscope.benchmarks.bfcl.categories import due_turns
from callscope.benchmarks.bfcl.results import (
    load_bfcl_results,
    load_bfcl_run,
    result_file_name,
    score_file_name,
)
from callscope.calibration.diagnostics import compute_diagnostics
from callscope.types import REFUSE, TOOL_CALL

MODEL = "org/my-model-FC"
MODEL_DIR = "org_my-model-FC"

GOLD = {
    "base": {
        "multi_turn_base_0": [["cd(folder='document')"], ["ls()"]],
        "multi_turn_base_1": [["cd(folder='document')"], ["ls()"]],
        "multi_turn_base_2": [["cd(folder='a')"], [], ["ls(a=True)"]],
    },
    "miss_func": {
        "multi_turn_miss_func_0": [["cd(folder='a')"], [], ["sort(file_name='x')"]],
    },
}
QUESTIONS = {
    "base": {},
    "miss_func": {"multi_turn_miss_func_0": {"missed_function": {"2": ["sort"]}}},
}


def fake_ground_truth(category):
    if category not in GOLD:
        raise FileNotFoundError(f"no gold for {category}")
    return GOLD[category], QUESTIONS[category]


def _write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def tree(tmp_path):
    results = tmp_path / "result"
    scores = tmp_path / "score"
    base_rows = [
        # prompt-mode text emissions
        json.dumps(
            {
                "id": "multi_turn_base_0",
                "result": [["[cd(folder='document')]", "Moved into document."], ["[ls()]"]],
            }
        ),
        # FC emissions: [{tool_name: json-args-string}] and {tool_name: dict}, then text
        json.dumps(
            {
                "id": "multi_turn_base_1",
                "result": [
                    [[{"cd": '{"folder": "document"}'}], "I changed directory."],
                    [[{"ls": {}}], None],
                ],
                "latency": [[1.0, 2.0], [0.5, 0.1]],
            }
        ),
        "{this is not json",
        json.dumps({"id": "multi_turn_base_2", "result": "Error during inference: timeout"}),
        json.dumps({"result": [[]]}),
    ]
    _write_lines(results / MODEL_DIR / "multi_turn" / result_file_name("base"), base_rows)
    score_rows = [
        json.dumps({"accuracy": 0.3333333333333333, "correct_count": 1, "total_count": 3}),
        json.dumps(
            {
                "id": "multi_turn_base_1",
                "model_name": MODEL_DIR,
                "test_category": "multi_turn_base",
                "valid": False,
                "error": {"error_message": ["state mismatch"], "error_type": "multi_turn:x"},
            }
        ),
        json.dumps({"id": "multi_turn_base_2", "valid": False, "error": {}}),
    ]
    _write_lines(scores / MODEL_DIR / "multi_turn" / score_file_name("base"), score_rows)
    miss_func_rows = [
        json.dumps(
            {
                "id": "multi_turn_miss_func_0",
                "result": [
                    ["[cd(folder='a')]"],
                    ["I cannot sort files: there is no such function."],
                    ["[sort(file_name='x')]"],
                ],
            }
        )
    ]
    _write_lines(results / MODEL_DIR / "multi_turn" / result_file_name("miss_func"), miss_func_rows)
    return results, scores


def test_reads_both_emission_shapes_and_scores(tree):
    results, scores = tree
    run = load_bfcl_run(results, scores, model=MODEL, ground_truth=fake_ground_truth)
    assert run.model == MODEL_DIR
    by_id = {r.id: r for r in run.records}
    assert sorted(by_id) == [
        "multi_turn_base_0",
        "multi_turn_base_1",
        "multi_turn_base_2",
        "multi_turn_miss_func_0",
    ]
    b0, b1, b2 = by_id["multi_turn_base_0"], by_id["multi_turn_base_1"], by_id["multi_turn_base_2"]
    assert b0.turn_emissions == [["[cd(folder='document')]", "Moved into document."], ["[ls()]"]]
    assert b1.turn_emissions[0][0] == [{"cd": '{"folder": "document"}'}]
    assert b1.turn_emissions[1] == [[{"ls": {}}], None]
    assert (b0.category, b0.gold_class, b0.due_turns) == ("base", TOOL_CALL, [0, 1])
    assert b2.due_turns == [0, 2]
    assert b2.turn_emissions == [] and b2.error == "Error during inference: timeout"
    # Acc: only base_0 is absent from the failure lines
    assert (b0.passed, b1.passed, b2.passed) == (True, False, False)
    mf = by_id["multi_turn_miss_func_0"]
    assert (mf.gold_class, mf.due_turns, mf.passed) == (REFUSE, [1], None)
    assert run.headers["base"]["correct_count"] == 1
    assert run.header_acc() == {"base": (1, 3)}


def test_problems_are_recorded_not_raised(tree):
    results, scores = tree
    run = load_bfcl_run(results, scores, model=MODEL, ground_truth=fake_ground_truth)
    text = "\n".join(run.problems)
    assert f"{result_file_name('base')}:3: malformed line skipped (not valid JSON" in text
    assert f"{result_file_name('base')}:5: malformed line skipped (no 'id')" in text
    assert f"{result_file_name('miss_param')}: no result file" in text
    assert f"{result_file_name('long_context')}: no result file" in text
    assert f"{score_file_name('miss_func')}: no score file" in text
    assert len(run.problems) == 5


def test_diagnostics_from_bfcl_tree(tree):
    results, scores = tree
    run = load_bfcl_run(results, scores, model=MODEL, ground_truth=fake_ground_truth)
    diag = compute_diagnostics(run.records, header_acc=run.header_acc())
    base, mf = diag.rows
    assert base["category"] == "base"
    # base_0 and base_1 called tools; base_2 crashed before emitting anything
    assert (base["gar_case_k"], base["n"], base["n_errors"]) == (2, 3, 1)
    assert (base["acc_k"], base["acc_n"], base["acc_source"]) == (1, 3, "cases")
    # due turns: base_0 2/2, base_1 2/2, base_2 0/2
    assert (base["per_turn_k"], base["per_turn_n"]) == (4, 6)
    assert mf["gar_case"] == 1.0 and mf["gar_turn"] == 1.0
    assert mf["acc"] is None and mf["acc_source"] is None


def test_without_scores_and_model_autodetect(tree):
    results, _ = tree
    records = load_bfcl_results(results)  # default ground truth: installed bfcl_eval or none
    assert {r.id for r in records} == {
        "multi_turn_base_0",
        "multi_turn_base_1",
        "multi_turn_base_2",
        "multi_turn_miss_func_0",
    }
    assert all(r.passed is None for r in records)
    # pointing at the model folder itself works too
    run = load_bfcl_run(results / MODEL_DIR, ground_truth=fake_ground_truth)
    assert len(run.records) == 4


def test_missing_folders_and_ambiguous_model(tmp_path):
    run = load_bfcl_run(tmp_path / "nowhere", ground_truth=fake_ground_truth)
    assert run.records == [] and "does not exist" in run.problems[0]
    (tmp_path / "res" / "a" / "multi_turn").mkdir(parents=True)
    run = load_bfcl_run(tmp_path / "res", ground_truth=fake_ground_truth)
    assert run.records == [] and run.problems[0].startswith("no result files: looked for")
    assert "BFCL_v3/v4_multi_turn_<" in run.looked_for and "flat <model>/" in run.looked_for
    for name in ("a", "b"):
        _write_lines(
            tmp_path / "res" / name / "multi_turn" / result_file_name("base"),
            [json.dumps({"id": "multi_turn_base_0", "result": [["[ls()]"]]})],
        )
    run = load_bfcl_run(tmp_path / "res", ground_truth=fake_ground_truth)
    assert run.records == [] and "several models" in run.problems[0]
    assert "(a, b)" in run.problems[0]
    run = load_bfcl_run(tmp_path / "res", model="c", ground_truth=fake_ground_truth)
    assert "no result files for model 'c'" in run.problems[0] and "found: a, b" in run.problems[0]
    run = load_bfcl_run(tmp_path / "res", model="b", ground_truth=fake_ground_truth)
    assert run.model == "b" and len(run.records) == 1


def test_score_file_without_header(tree, tmp_path):
    results, _ = tree
    scores = tmp_path / "s2"
    _write_lines(
        scores / MODEL_DIR / "multi_turn" / score_file_name("base"),
        [json.dumps({"id": "multi_turn_base_0", "valid": False})],
    )
    run = load_bfcl_run(results, scores, model=MODEL, ground_truth=fake_ground_truth)
    by_id = {r.id: r for r in run.records}
    assert by_id["multi_turn_base_0"].passed is False
    assert by_id["multi_turn_base_1"].passed is True
    assert any("not a header with 'accuracy'" in p for p in run.problems)
    assert "base" not in run.headers


def test_due_turns_rules():
    gold = [["a()"], [], ["b()"], []]
    assert due_turns("base", gold) == [0, 2]
    assert due_turns("long_context", gold) == [0, 2]
    assert due_turns("miss_param", gold) == [1, 3]
    assert due_turns("miss_func", gold, {"2": ["b"]}) == [1]
    assert due_turns("miss_func", gold, {}) == [1, 3]


@pytest.mark.skipif(importlib.util.find_spec("bfcl_eval") is None, reason="bfcl-eval missing")
def test_package_ground_truth_for_real_ids(tmp_path):
    results = tmp_path / "result" / "m" / "multi_turn"
    _write_lines(
        results / result_file_name("miss_func"),
        [json.dumps({"id": "multi_turn_miss_func_0", "result": [[], [], [], [], []]})],
    )
    run = load_bfcl_run(tmp_path / "result", categories=("miss_func",))
    assert run.problems == []
    # BFCL data: missed_function {"3": ["sort"]}, so REFUSE is due at turn 2
    assert run.records[0].due_turns == [2]
