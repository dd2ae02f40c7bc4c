"""Issue 14, BFCL part: hand-made minimal result trees for each item (1-9), so that the suite
proves them without the external files. Expected values are worked out by hand in comments."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callscope.benchmarks.bfcl.results import find_bfcl_files, load_bfcl_run
from callscope.calibration.diagnostics import compute_diagnostics
from callscope.runs.from_results import calibrate_from_bfcl
from callscope.types import ASK, REFUSE, TOOL_CALL

GOLD = {
    "base": {"multi_turn_base_0": [["cd(folder='document')"], ["ls()"]]},
    "miss_param": {"multi_turn_miss_param_0": [["cd(folder='a')"], []]},
}


def fake_ground_truth(category):
    if category not in GOLD:
        raise FileNotFoundError(f"no gold for {category}")
    return GOLD[category], {}


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


BASE_ROW = {"id": "multi_turn_base_0", "result": [["[cd(folder='document')]"], ["[ls()]"]]}
HEADER = {"accuracy": 1.0, "correct_count": 1, "total_count": 1}


# ----------------------------------------------------------------------- 1: names and layouts


def test_v3_names_nested_layout(tmp_path):
    _write(
        tmp_path / "result" / "m" / "multi_turn" / "BFCL_v3_multi_turn_base_result.json", [BASE_ROW]
    )
    run = load_bfcl_run(tmp_path / "result", ground_truth=fake_ground_truth)
    assert (run.model, run.version, run.layout) == ("m", "v3", "nested <model>/multi_turn/")
    assert [r.id for r in run.records] == ["multi_turn_base_0"]


def test_flat_layout_with_slash_model_pointed_at_root_or_model_folder(tmp_path):
    folder = tmp_path / "result" / "org" / "My-Model"
    _write(folder / "BFCL_v4_multi_turn_base_result.json", [BASE_ROW])
    for path in (tmp_path / "result", tmp_path, folder):
        run = load_bfcl_run(path, ground_truth=fake_ground_truth)
        assert run.layout == "flat <model>/" and run.version == "v4", path
        assert len(run.records) == 1
    # the model's name keeps its "/" below BFCL's result/ folder; either spelling selects it
    assert load_bfcl_run(tmp_path, ground_truth=fake_ground_truth).model == "org/My-Model"
    for name in ("org/My-Model", "org_My-Model", "My-Model"):
        assert len(load_bfcl_run(tmp_path, model=name, ground_truth=fake_ground_truth).records) == 1


def test_scores_found_under_a_folder_holding_both_trees(tmp_path):
    _write(
        tmp_path / "result" / "m" / "multi_turn" / "BFCL_v4_multi_turn_base_result.json", [BASE_ROW]
    )
    _write(tmp_path / "score" / "m" / "multi_turn" / "BFCL_v4_multi_turn_base_score.json", [HEADER])
    run = load_bfcl_run(tmp_path, ground_truth=fake_ground_truth, categories=("base",))
    assert run.records[0].passed is True and run.header_acc() == {"base": (1, 1)}
    assert run.score_version == "v4" and "score files v4" in run.found()
    assert [f.kind for f in find_bfcl_files(tmp_path, "score")] == ["score"]


def test_v4_preferred_over_v3_and_said_so(tmp_path):
    folder = tmp_path / "m" / "multi_turn"
    _write(
        folder / "BFCL_v3_multi_turn_base_result.json",
        [{"id": "multi_turn_base_0", "result": [["x"]]}],
    )
    _write(folder / "BFCL_v4_multi_turn_base_result.json", [BASE_ROW])
    run = load_bfcl_run(tmp_path, ground_truth=fake_ground_truth, categories=("base",))
    assert run.version == "v4" and run.records[0].turn_emissions == BASE_ROW["result"]
    assert any("BFCL_v3" in p and "read instead" in p for p in run.problems)


# ----------------------------------------------------------------------- 2: nothing read


def test_nothing_read_exits_2_and_says_what_it_looked_for(tmp_path):
    from callscope.cli import app

    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="looked for BFCL_v3/v4_multi_turn_"):
        calibrate_from_bfcl(tmp_path / "empty", tmp_path / "o")
    assert not (tmp_path / "o").exists()
    res = CliRunner().invoke(
        app, ["calibrate", "--from-bfcl", str(tmp_path / "empty"), "-o", str(tmp_path / "o")]
    )
    assert res.exit_code == 2
    assert "looked for" in res.output and "BFCL results of None" not in res.output


# ----------------------------------------------------------------------- 3: per-turn strings


def test_turn_saved_as_one_string_is_one_emission_and_counted(tmp_path):
    rows = [{"id": "multi_turn_base_0", "result": ['[cd(folder="document")]', "[ls()]"]}]
    _write(tmp_path / "m" / "BFCL_v4_multi_turn_base_result.json", rows)
    run = load_bfcl_run(tmp_path, ground_truth=fake_ground_truth, categories=("base",))
    rec = run.records[0]
    assert rec.error is None and rec.turn_emissions == [['[cd(folder="document")]'], ["[ls()]"]]
    assert run.single_string_turns == 2
    assert any("2 turns of 1 cases saved as one string" in p for p in run.problems)
    row = compute_diagnostics(run.records).rows[0]
    assert (row["gar_case_k"], row["per_turn_k"], row["per_turn_n"]) == (1, 2, 2)


# ----------------------------------------------------------------------- 4-7 through a tree


def test_docs_nonliteral_calls_user_turns_and_empties_in_a_tree(tmp_path):
    doc = json.dumps(
        {
            "name": "setParkingBrake",
            "description": "Sets the brake.",
            "parameters": {"type": "dict", "properties": {"mode": {"type": "string"}}},
        },
        indent=4,
    )
    rows = [
        # 4: regurgitated documentation only -> no TOOL_CALL, GAR 0 for this case
        {"id": "multi_turn_base_0", "result": [[doc], [doc]]},
        # 5: call syntax with a non-literal argument -> TOOL_CALL
        {
            "id": "multi_turn_base_1",
            "result": [["[setCruiseControl(speed=65.0, activate=true)]"], ["[ls()]"]],
        },
    ]
    _write(tmp_path / "m" / "multi_turn" / "BFCL_v4_multi_turn_base_result.json", rows)
    mp = [
        # 6: the only "?" is in a user turn the model hallucinated -> not ASK; 7: "" and []
        {
            "id": "multi_turn_miss_param_0",
            "result": [["[cd(folder='a')]\nuser\nWhat is the cost?"], ["", []]],
        },
    ]
    _write(tmp_path / "m" / "multi_turn" / "BFCL_v4_multi_turn_miss_param_result.json", mp)
    gold = {**GOLD, "base": {**GOLD["base"], "multi_turn_base_1": [["x()"], ["ls()"]]}}
    run = load_bfcl_run(tmp_path, ground_truth=lambda c: (gold[c], {}))
    diag = compute_diagnostics(run.records)
    base, miss_param = diag.rows
    assert base["gar_case_k"] == 1 and base["class_counts"][TOOL_CALL] == 2
    assert base["class_counts"]["OTHER"] == 2
    assert miss_param["gar_case_k"] == 0 and miss_param["class_counts"][ASK] == 0
    # the two empty emissions get no class: 1 emission classed, 2 counted empty
    assert sum(miss_param["class_counts"].values()) == 1 and miss_param["n_empty"] == 2


# ----------------------------------------------------------------------- 8: capability check


def test_capability_check_first_in_cli_markdown_and_html(tmp_path):
    from callscope.cli import app

    _write(
        tmp_path / "r" / "m" / "multi_turn" / "BFCL_v4_multi_turn_miss_param_result.json",
        [{"id": "multi_turn_miss_param_0", "result": [[[{"cd": '{"folder": "a"}'}]], [[]]]}],
    )
    _write(tmp_path / "r" / "m" / "multi_turn" / "BFCL_v4_multi_turn_base_result.json", [BASE_ROW])
    # Acc 1/1 on miss_param while ASK is never emitted: a bound violation the check voids
    _write(
        tmp_path / "s" / "m" / "multi_turn" / "BFCL_v4_multi_turn_miss_param_score.json", [HEADER]
    )
    res = CliRunner().invoke(
        app,
        [
            "calibrate",
            "--from-bfcl",
            str(tmp_path / "r"),
            "--scores",
            str(tmp_path / "s"),
            "-o",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert out.startswith("Capability check failed") and "ASK 0" in out
    assert out.index("Capability check failed") < out.index("BFCL results of m")
    md = (tmp_path / "o" / "calibration-from-bfcl.md").read_text()
    assert md.startswith("**Capability check failed")
    row = next(line for line in md.splitlines() if line.startswith("| miss_param"))
    assert (
        "capability check failed (ASK emitted 0x &lt; 10); bound violation" in row
    )  # Markdown escapes < > &
    page = (tmp_path / "o" / "report.html").read_text()
    assert page.index("Capability check failed") < page.index("GAR and Acc per category")
    # emissions: base 2 calls, miss_param one call and one [] -> 1 of 4 empty
    assert "1 of 4 emissions are empty" in page


# ----------------------------------------------------------------------- 9: paper preset


def test_classifier_option_paper_and_report_says_which(tmp_path):
    from callscope.cli import app

    # "is not provided" is a REFUSE cue of the paper's code only
    _write(
        tmp_path / "r" / "m" / "BFCL_v4_multi_turn_base_result.json",
        [{"id": "multi_turn_base_0", "result": [["The folder name is not provided."]]}],
    )
    for name, refuse in (("default", 0), ("paper", 1)):
        out = tmp_path / name
        res = CliRunner().invoke(
            app,
            ["calibrate", "--from-bfcl", str(tmp_path / "r"), "--classifier", name, "-o", str(out)],
        )
        assert res.exit_code == 0, res.output
        assert f"classifier: {name}" in " ".join(res.output.split())
        data = json.loads((out / "calibration-from-bfcl.json").read_text())
        assert data["config"]["name"] == name and data["class_counts"][REFUSE] == refuse
        assert f"Classifier: {name}." in (out / "calibration-from-bfcl.md").read_text()
        assert f"the &#x27;{name}&#x27; classifier" in (out / "report.html").read_text() or (
            f"the '{name}' classifier" in (out / "report.html").read_text()
        )
    res = CliRunner().invoke(
        app,
        [
            "calibrate",
            "--from-bfcl",
            str(tmp_path / "r"),
            "--classifier",
            "nope",
            "-o",
            str(tmp_path / "x"),
        ],
    )
    assert res.exit_code == 2 and "unknown classifier preset" in res.output
