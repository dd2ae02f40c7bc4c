"""core/table.py (one Table type, five renderings) and the statistics of core/stats.py that
moved there from calibration (rate_ci, newcombe_paired, cohen_kappa)."""

from __future__ import annotations

import math

import pytest
from rich.console import Console

from callscope.calibration.diagnostics import diagnostics_table
from callscope.calibration.paired import ablation_table, compare_markdown, compare_table
from callscope.core.stats import cohen_kappa, newcombe_paired, rate_ci, wilson
from callscope.core.table import Table, latex_escape, markdown_escape, pct, pct_ci


def _table(**kw: object) -> Table:
    return Table(["Name", "n"], [["a|b", 3], ["c\\d", 10]], **kw)  # type: ignore[arg-type]


def test_markdown_plain_escapes_and_note() -> None:
    md = _table(note="Intervals: Wilson.").to_markdown()
    assert md == ("| Name | n |\n|---|---|\n| a\\|b | 3 |\n| c\\\\d | 10 |\n\nIntervals: Wilson.\n")


def test_markdown_title_caption_and_empty() -> None:
    t = Table(["x"], [], title="Summary", caption="What it shows.", empty="_(no rows)_")
    assert t.to_markdown() == "**Summary.** What it shows.\n\n_(no rows)_\n"
    # without ``empty`` an empty table keeps its header
    assert Table(["x", "y"], []).to_markdown() == "| x | y |\n|---|---|\n"


def test_cells_are_what_the_markdown_reads_back_as() -> None:
    t = _table(note="one note")
    assert t.cells() == {
        "columns": ["Name", "n"],
        "rows": [["a|b", "3"], ["c\\d", "10"]],
        "notes": ["one note"],
    }


def test_html_escapes_and_no_rows() -> None:
    html = _table(title="T", caption="<cap>", name="t1").to_html()
    assert html.startswith('<div class="table-wrap"><table class="report" id="table-t1">')
    assert "<caption><b>T.</b> &lt;cap&gt;</caption>" in html
    assert "<td>a|b</td><td>3</td>" in html
    empty = Table(["a", "b"], [], title="E", caption="").to_html("e", "report diag")
    assert '<tr><td colspan="2">(no rows)</td></tr>' in empty and 'class="report diag"' in empty


def test_latex_booktabs_alignment_and_escaping() -> None:
    tex = Table(
        ["model_name", "x ± s"],
        [["m_1", "0.5 ± 0.1"]],
        caption="50% of _all_",
        name="demo",
        align="lr",
    ).to_latex()
    lines = tex.splitlines()
    assert lines[:5] == [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        r"\caption{50\% of \_all\_}",
        r"\label{tab:demo}",
    ]
    assert r"\begin{tabular}{lr}" in lines and r"\toprule" in lines and r"\bottomrule" in lines
    assert r"m\_1 & 0.5 $\pm$ 0.1 \\" in lines
    assert latex_escape("a–b") == "a--b" and markdown_escape("x\ny") == "x y"


def test_csv_and_rich() -> None:
    assert _table().to_csv() == "Name,n\na|b,3\nc\\d,10\n"
    rich = _table(title="R", align="lr", row_styles=[None, "red"]).to_rich()
    assert rich.row_count == 2 and rich.columns[1].justify == "right"
    console = Console(record=True, width=80)
    console.print(rich)
    assert "a|b" in console.export_text()


def test_shape_is_checked() -> None:
    with pytest.raises(ValueError, match="row 0 has 1 cells for 2 columns"):
        Table(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="align"):
        Table(["a"], [], align="c")
    with pytest.raises(ValueError, match="row_styles"):
        Table(["a"], [["x"]], row_styles=[])


def test_percent_cells() -> None:
    assert pct(None) == "n/a" and pct(0.125) == "12.5" and pct(0.125, signed=True) == "+12.5"
    assert pct_ci(0.5, 0.094528, 0.905472) == "50.0 [9.5, 90.5]"
    assert pct_ci(-0.25, -0.5, None, signed=True) == "-25.0 [-50.0, n/a]"
    assert pct_ci(None, 0.1, 0.2) == "n/a"


def test_diagnostic_and_paired_tables_round_trip_through_markdown() -> None:
    row = {
        "category": "miss_param",
        "gold_class": "ASK",
        "n": 2,
        "gar_case": 0.5,
        "gar_case_ci_low": 0.094528,
        "gar_case_ci_high": 0.905472,
        "gar_turn": None,
        "gar_per_turn": None,
        "acc": 1.0,
        "acc_ci_low": 0.342372,
        "acc_ci_high": 1.0,
        "gap": -0.5,
        "bound_violation": True,
        "passed_without_gold": 1,
    }
    table = diagnostics_table([row])
    assert table.row_styles == ["red"]
    cmp_row = {
        "probe": "sri",
        "category": "all",
        "n": 1,
        "unpaired": 0,
        "acc_base": 1.0,
        "acc_probe": 0.0,
        "d_acc": -1.0,
        "d_acc_lo": -1.0,
        "d_acc_hi": 0.2,
        "pass_to_fail": 1,
        "fail_to_pass": 0,
        "gar_valid": True,
        "gar_base": 1.0,
        "gar_probe": 1.0,
        "d_gar": 0.0,
        "d_gar_lo": -0.8,
        "d_gar_hi": 0.8,
        "fired_rate": 1.0,
    }
    assert compare_markdown([cmp_row]) == compare_table([cmp_row]).to_markdown()
    assert ablation_table([]).cells() == {"columns": [], "rows": [], "notes": []}


# --------------------------------------------------------------------------- statistics


def test_rate_ci_is_wilson_with_none_for_no_trials() -> None:
    assert rate_ci(0, 0) == (None, None, None)
    rate, lo, hi = rate_ci(1, 2)
    assert rate == 0.5 and (lo, hi) == wilson(1, 2)
    assert lo == pytest.approx(0.094528, abs=1e-6) and hi == pytest.approx(0.905472, abs=1e-6)
    assert all(not math.isnan(x) for x in rate_ci(3, 3, z=2.58) if x is not None)


def test_newcombe_and_kappa_live_in_stats() -> None:
    theta, lo, hi = newcombe_paired(3, 0, 1, 0)  # p1 = 3/4, p2 = 4/4
    assert theta == pytest.approx(-0.25) and -1.0 <= lo < theta < hi <= 1.0
    with pytest.raises(ValueError):
        newcombe_paired(0, -1, 0, 0)
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == 0.5
    with pytest.raises(ValueError):
        cohen_kappa([True], [])
