"""The panel table (calibration/panel.py) on hand-made records, numbers worked out by hand.

Model ``x``, base (gold TOOL_CALL), 4 cases, one turn each (due turn 0):
  c0 call, passed; c1 call, failed; c2 text "Done.", failed; c3 call, passed
  -> GAR 3/4 = 75.0 %, Acc 2/4 = 50.0 %, GAR − Acc = +25.0 pp > 20 pp:
  large slack; TOOL_CALL emitted 3 times < t_cap 10: capability check failed. Paired table: both 2 (c0, c3), Acc only 0, GAR only 1 (c1), neither 1 (c2).
Model ``y``, miss_param (gold ASK), 2 cases, never asks:
  c0 text "Done.", passed; c1 call, failed -> GAR 0/2, Acc 1/2, GAR − Acc = −50.0 pp: bound violation;
  ASK emitted 0 times < t_cap 10: capability check failed.
Wilson 95% of 3/4: [30.1, 95.4] %; of 2/4: [15.0, 85.0] %; of 0/2: [0.0, 65.8] %.
"""

from __future__ import annotations

import pytest

from callscope.calibration.diagnostics import compute_diagnostics
from callscope.calibration.panel import (
    build_panel,
    capability_lines,
    panel_table,
    turn_panel_table,
)
from callscope.core.stats import newcombe_paired
from callscope.records import CaseRecord
from callscope.report.panels import panel_acc_gar_points

CALL = [{"cd": '{"folder": "a"}'}]


def _rec(cid: str, cat: str, gold: str, emission, passed: bool | None) -> CaseRecord:
    return CaseRecord(
        id=cid,
        category=cat,
        gold_class=gold,
        turn_emissions=[[emission]],
        due_turns=[0],
        passed=passed,
    )


@pytest.fixture
def panel():
    x = [
        _rec("b0", "multi_turn_base", "TOOL_CALL", CALL, True),
        _rec("b1", "multi_turn_base", "TOOL_CALL", CALL, False),
        _rec("b2", "multi_turn_base", "TOOL_CALL", "Done.", False),
        _rec("b3", "multi_turn_base", "TOOL_CALL", CALL, True),
    ]
    y = [
        _rec("p0", "multi_turn_miss_param", "ASK", "Done.", True),
        _rec("p1", "multi_turn_miss_param", "ASK", CALL, False),
    ]
    return build_panel({"x": compute_diagnostics(x), "y": compute_diagnostics(y)})


def test_cells_delta_flags(panel) -> None:
    assert panel.models == ["x", "y"]
    assert panel.categories == ["base", "miss_param"]
    bx = panel.cell("x", "base")
    assert (bx.row["gar_case"], bx.row["acc"]) == (0.75, 0.5)
    # the single-model table's sign: GAR − Acc (slack > 0, a bound violation < 0)
    assert bx.delta == pytest.approx(0.25) == bx.row["gap"]
    theta, lo, hi = newcombe_paired(2, 1, 0, 1)  # both, GAR only, Acc only, neither
    assert theta == pytest.approx(0.25)
    assert (bx.delta_lo, bx.delta_hi) == pytest.approx((lo, hi))
    assert lo < 0.25 < hi
    # x emitted TOOL_CALL 3 times over its run, fewer than t_cap = 10
    assert bx.flags() == ["capability check failed (TOOL_CALL emitted 3x < 10)", "large slack"]
    py = panel.cell("y", "miss_param")
    assert (py.row["gar_case"], py.row["acc"], py.delta) == (0.0, 0.5, -0.5)
    assert py.flags()[0].startswith("capability check failed (ASK emitted 0x < 10)")
    assert "bound violation (Acc > GAR)" in py.flags()
    assert panel.cell("x", "miss_param") is None
    assert capability_lines(panel)[1].startswith(
        "y: capability check failed: TOOL_CALL, REFUSE, ASK, CONFIRM emitted fewer than 10"
    )


def test_case_table_markdown_csv_latex(panel) -> None:
    t = panel_table(panel)
    assert t.columns[:5] == ["Model", "base n", "base GAR %", "base Acc %", "base GAR−Acc pp"]
    x, y = t.rows
    assert x[1:4] == ["4", "75.0 [30.1, 95.4]", "50.0 [15.0, 85.0]"]
    assert x[4].startswith("+25.0 [")
    assert x[5:9] == ["", "n/a", "n/a", "n/a"]
    assert y[6:8] == ["0.0 [0.0, 65.8]", "50.0 [9.5, 90.5]"]
    assert y[8].startswith("-50.0 [")
    assert "miss_param: capability check failed" in y[9]
    assert t.row_styles == [None, "red"]
    md = t.to_markdown()
    assert "| x | 4 | 75.0 [30.1, 95.4] |" in md
    csv = t.to_csv().splitlines()
    assert csv[0].startswith("Model,base n,base GAR %")
    tex = t.to_latex()
    assert "\\toprule" in tex and "\\bottomrule" in tex and "\\label{tab:panel}" in tex
    assert "75.0 [30.1, 95.4]" in tex


def test_turn_table_and_points(panel) -> None:
    t = turn_panel_table(panel)
    assert t.columns == [
        "Model",
        "base GAR turn %",
        "base per-turn %",
        "miss_param GAR turn %",
        "miss_param per-turn %",
    ]
    assert t.rows[0][1:3] == ["75.0 [30.1, 95.4]", "75.0 (3/4)"]
    assert t.rows[1][3:5] == ["0.0 [0.0, 65.8]", "0.0 (0/2)"]
    pts = {(p["model"], p["category"]): (p["gar"], p["acc"]) for p in panel_acc_gar_points(panel)}
    assert pts == {("x", "base"): (0.75, 0.5), ("y", "miss_param"): (0.0, 0.5)}


def test_header_acc_has_no_paired_interval() -> None:
    recs = [_rec(f"b{i}", "base", "TOOL_CALL", CALL, None) for i in range(2)]
    p = build_panel({"m": compute_diagnostics(recs, header_acc={"base": (1, 2)})})
    c = p.cell("m", "base")
    assert (c.row["acc"], c.row["acc_source"], c.delta) == (0.5, "header", 0.5)
    assert c.delta_lo is None
    row = panel_table(p).rows[0]
    assert row[3] == "50.0 [9.5, 90.5] (header)" and row[4] == "+50.0"


def test_panel_figure_draws_png(panel, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from callscope.report.panels import panel_figure, write_panel_page

    fig = panel_figure(panel, tmp_path / "p.png")
    assert fig.path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # one subplot per panel column, one legend entry (marker) per model
    assert fig.categories == ["base", "miss_param"] and fig.legend == ["x", "y"]
    got = {(p["model"], p["category"]): (p["gar"], p["acc"], p["masked"]) for p in fig.points}
    assert got == {("x", "base"): (0.75, 0.5, False), ("y", "miss_param"): (0.0, 0.5, True)}
    x_base = next(p for p in fig.points if p["model"] == "x")
    assert (round(x_base["gar_lo"], 3), round(x_base["acc_hi"], 3)) == (0.301, 0.850)  # Wilson
    page = write_panel_page(tmp_path / "page", panel).read_text()
    assert "GAR, Acc and GAR − Acc per model and category" in page
    assert 'class="row-red"' in page
    assert '<figure id="fig-panel"><img alt="Acc against case-level GAR' in page
    assert page.count("data:image/png;base64,") == 1
    # the same panel section as a run report: figure first, then the case and turn tables
    assert page.index('id="fig-panel"') < page.index('id="table-panel-0"')
    assert page.index('id="table-panel-0"') < page.index('id="table-panel-turn-0"')
