"""BFCL-format export: a callscope multi-turn run written as BFCL result and score files and read
back by ``--from-bfcl`` gives the same numbers (a round trip), per model and category.

The run: two scripted models on the first 2 cases of ``base`` and ``miss_param``. The gold
actor calls every turn's gold calls natively (GAR = Acc = 1 everywhere); the asker only asks
(its text at every turn is the ASK sentence): on base GAR = Acc = 0, on miss_param GAR = 1
(it asked) and Acc = 0 (it never solved a turn). Those are the values the read-back panel
must show, and they must equal the panel computed from the store.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("bfcl_eval")

from scripted import Scripted  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from callscope.benchmarks.bfcl.multi_turn import gold_calls  # noqa: E402
from callscope.runs.calibrate import run_calibration, select_cases  # noqa: E402
from callscope.runs.calibrate_panel import panel_of_store  # noqa: E402
from callscope.runs.export_bfcl import export_bfcl, step_emission  # noqa: E402
from callscope.runs.panel_files import panel_from_bfcl  # noqa: E402
from callscope.store.run_store import RunStore  # noqa: E402
from callscope.types import ModelReply  # noqa: E402

ASK = "Which file do you mean? Please provide the name."


def gold_actor(cases) -> Scripted:
    scripts = {}
    for case in cases:
        out = []
        for calls in gold_calls(case):
            if calls:
                out += [ModelReply(tool_calls=[c.to_dict() for c in calls]), ModelReply(text="Ok.")]
            else:
                out.append(ModelReply(text=ASK))
        scripts[case.id] = out
    return Scripted(scripts, then=ModelReply(text="Ok."), spec="scripted:gold")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cases = select_cases(["base", "miss_param"], 2)
    run_dir = tmp_path_factory.mktemp("run")
    store = RunStore(run_dir)
    run_calibration(gold_actor(cases), store, cases, show_progress=False)
    asker = Scripted([], then=ModelReply(text=ASK), spec="scripted:asker")
    run_calibration(asker, store, cases, show_progress=False)
    store.close()
    return run_dir, cases


def test_step_emission_is_bfcl_fc_shape() -> None:
    step = {"text": "", "tool_calls": [{"name": "cd", "arguments": {"folder": "a"}}]}
    assert step_emission(step) == [{"cd": '{"folder": "a"}'}]
    assert step_emission({"text": "Which one?", "tool_calls": None}) == "Which one?"


def test_round_trip_gives_the_same_panel(run, tmp_path) -> None:
    run_dir, cases = run
    done = export_bfcl(run_dir, tmp_path / "bfcl", n_turns={c.id: len(c.turns) for c in cases})
    assert done.cases == {
        ("scripted:asker", "base"): 2,
        ("scripted:asker", "miss_param"): 2,
        ("scripted:gold", "base"): 2,
        ("scripted:gold", "miss_param"): 2,
    }
    res = tmp_path / "bfcl/result/scripted-gold/multi_turn/BFCL_v4_multi_turn_base_result.json"
    lines = [json.loads(x) for x in res.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["multi_turn_base_0", "multi_turn_base_1"]
    # base_0 turn 0: the 3 gold calls in one message, then the closing text
    assert lines[0]["result"][0] == [
        [
            {"cd": '{"folder": "document"}'},
            {"mkdir": '{"dir_name": "temp"}'},
            {"mv": '{"source": "final_report.pdf", "destination": "temp"}'},
        ],
        "Ok.",
    ]
    score = tmp_path / "bfcl/score/scripted-asker/multi_turn/BFCL_v4_multi_turn_base_score.json"
    header, *failed = [json.loads(x) for x in score.read_text().splitlines()]
    assert header == {"accuracy": 0.0, "correct_count": 0, "total_count": 2}
    assert sorted(f["id"] for f in failed) == ["multi_turn_base_0", "multi_turn_base_1"]

    back = panel_from_bfcl(tmp_path / "bfcl")
    assert back.panel.models == ["scripted-asker", "scripted-gold"]
    store = RunStore(run_dir)
    direct = panel_of_store(store, ["scripted:asker", "scripted:gold"])
    store.close()
    expected = {
        ("scripted-gold", "base"): (1.0, 1.0),
        ("scripted-gold", "miss_param"): (1.0, 1.0),
        ("scripted-asker", "base"): (0.0, 0.0),
        ("scripted-asker", "miss_param"): (1.0, 0.0),
    }
    keys = ("n", "gar_case", "gar_turn", "gar_per_turn", "per_turn_k", "per_turn_n", "acc")
    for (label, cat), (gar, acc) in expected.items():
        cell = back.panel.cell(label, cat)
        assert (cell.row["gar_case"], cell.row["acc"], cell.row["n"]) == (gar, acc, 2)
        spec = label.replace("-", ":", 1)
        mine = direct.cell(spec, cat)
        assert {k: cell.row[k] for k in keys} == {k: mine.row[k] for k in keys}
        assert cell.delta == pytest.approx(mine.delta)
    assert done.text_dropped == 0 and done.skipped_errors == 0


def test_export_cli_then_from_bfcl_cli(run, tmp_path) -> None:
    from callscope.cli import app

    run_dir, _ = run
    out = tmp_path / "bfcl"
    res = CliRunner().invoke(app, ["calibrate", "-o", str(run_dir), "--export-bfcl", str(out)])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(
        app, ["calibrate", "--from-bfcl", str(out), "-o", str(tmp_path / "panel")]
    )
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "panel" / "panel-baseline.json").read_text())
    cells = {(c["model"], c["category"]): c for c in data["cells"]}
    # GAR − Acc, the single-model table's sign: the asker asks (GAR 1) and fails (Acc 0)
    assert cells[("scripted-asker", "miss_param")]["delta"] == pytest.approx(1.0)
    assert cells[("scripted-gold", "base")]["flags"] == []
