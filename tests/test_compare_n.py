"""`compare RUN...` over N models: headline metrics, stage-failure mix and paired differences.

Three scripted models in one store, direct mode, one attempt, four weather cases (gold
``get_weather(city=...)``):

* ``m:a`` answers every case with its gold call: solve rate 4/4, first stage passed 4/4;
* ``m:b`` gets c1, c2 right and calls ``get_wether`` (not in the registry: stage 1) on c3, c4:
  solve 2/4, passed 2/4 (Wilson [15.0, 85.0] %), stage1 2/4;
* ``m:c`` (a second run directory) gets c1, c3, c4 right and omits the required ``city`` on c2
  (stage 2): solve 3/4.

Paired against ``m:a`` on the 4 shared cases: b − a = −0.5 (2 cases lost), c − a = −0.25.
"""

from __future__ import annotations

import json

import pytest
from scripted import Scripted
from typer.testing import CliRunner

from callscope.report.compare import compare_many, many_tables, outcome_groups
from callscope.runs.runner import run_cases
from callscope.store.run_store import RunStore
from callscope.types import Case

WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
CITIES = {"c1": "Paris", "c2": "Rome", "c3": "Oslo", "c4": "Lima"}


def _call(name: str, **args: str) -> str:
    return json.dumps({"name": name, "arguments": args})


def _cases() -> list[Case]:
    return [
        Case(
            id=cid,
            query=f"What is the weather in {city}?",
            functions=[WEATHER],
            gold={"name": "get_weather", "arguments": {"city": city}},
            scale=1,
        )
        for cid, city in CITIES.items()
    ]


def _run(run_dir, spec: str, answers: dict[str, str]) -> None:
    store = RunStore(run_dir)
    try:
        model = Scripted({cid: [a] for cid, a in answers.items()}, spec=spec, native=False)
        run_cases(model, _cases(), store, modes=("direct",), max_attempts=1, show_progress=False)
    finally:
        store.close()


@pytest.fixture
def runs(tmp_path):
    good = {cid: _call("get_weather", city=c) for cid, c in CITIES.items()}
    _run(tmp_path / "ab", "m:a", good)
    _run(
        tmp_path / "ab",
        "m:b",
        {**good, "c3": _call("get_wether", city="Oslo"), "c4": _call("get_wether", city="Lima")},
    )
    _run(tmp_path / "c", "m:c", {**good, "c2": _call("get_weather")})
    return tmp_path / "ab", tmp_path / "c"


def test_n_models_metrics_stages_and_paired(runs) -> None:
    groups = outcome_groups(list(runs))
    assert list(groups) == ["m:a", "m:b", "m:c"]
    metrics, stages, paired = compare_many(groups)
    solve = metrics[metrics.metric == metrics.metric.iloc[0]].set_index("model")
    assert solve.loc["m:a", "value"] == 1.0
    assert solve.loc["m:b", "value"] == 0.5
    assert solve.loc["m:c", "value"] == 0.75
    st = stages.set_index("model")
    assert (st.loc["m:b", "passed"], st.loc["m:b", "stage1"]) == (0.5, 0.5)
    assert st.loc["m:b", "passed_lo"] == pytest.approx(0.150, abs=5e-4)
    assert st.loc["m:b", "passed_hi"] == pytest.approx(0.850, abs=5e-4)
    assert (st.loc["m:c", "passed"], st.loc["m:c", "stage2"]) == (0.75, 0.25)
    assert st.loc["m:a", "passed"] == 1.0
    pr = paired[paired.metric == metrics.metric.iloc[0]].set_index("model")
    assert set(pr.index) == {"m:b", "m:c"} and set(pr.baseline) == {"m:a"}
    assert (pr.loc["m:b", "n"], pr.loc["m:b", "diff"]) == (4, -0.5)
    assert pr.loc["m:c", "diff"] == -0.25
    assert -1.0 <= pr.loc["m:b", "lo"] < -0.5 < pr.loc["m:b", "hi"]
    head, stage_t, pair_t = many_tables(metrics, stages, paired)
    assert [r[0] for r in head.rows] == ["m:a", "m:b", "m:c"]
    assert stage_t.rows[1][3] == "50.0 [15.0, 85.0]"


def test_baseline_choice_and_unknown_baseline(runs) -> None:
    groups = outcome_groups(list(runs))
    _, _, paired = compare_many(groups, baseline="m:c")
    solve = paired[paired.metric == paired.metric.iloc[0]].set_index("model")
    assert solve.loc["m:a", "diff"] == 0.25 and solve.loc["m:b", "diff"] == -0.25
    with pytest.raises(ValueError, match="not among the models"):
        compare_many(groups, baseline="m:zzz")


def test_compare_cli_n_runs(runs) -> None:
    from callscope.cli import app

    res = CliRunner().invoke(
        app, ["compare", str(runs[0]), str(runs[1]), "--baseline", "m:b"], env={"COLUMNS": "240"}
    )
    assert res.exit_code == 0, res.output
    assert "Paired differences against the baseline" in res.output
    assert "m:c" in res.output and "Stage-failure mix" in res.output
    one = CliRunner().invoke(app, ["compare", str(runs[0])], env={"COLUMNS": "240"})
    assert one.exit_code == 0, one.output
    assert "m:a" in one.output and "m:b" in one.output
