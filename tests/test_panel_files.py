"""Panels from the real published result files in ``../shared/external`` (see their
README.txt), numbers pinned after checking them against the READMEs:

* BFCL (``bfcl/``: glyphh-ada-1.1 with score files, airev-ai/AIREV-Agent-0.8B without): glyphh's
  Acc per category is its score header (README: base 121/200, miss_param 95/200, miss_func
  102/200, long_context 112/200); it is an FC model whose files hold calls only, so its GAR is
  100 % on base / long_context and 0 % on miss_param / miss_func (bound violations there).
  airev has no score files: Acc unknown, never another model's.
* τ² (``tau2/``): two agent models; grok-3's airline TOOL_CALL row: 17 simulations, GAR 8/17,
  Acc (reward 1) 9/17 -> Δ = +1/17 = +5.9 pp, a bound violation.

Skipped cleanly when the folders are absent."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

EXTERNAL = Path(__file__).resolve().parents[2] / "shared" / "external"
BFCL, TAU2 = EXTERNAL / "bfcl", EXTERNAL / "tau2"


@pytest.mark.skipif(not BFCL.is_dir(), reason="shared/external/bfcl absent")
def test_bfcl_panel_of_the_two_published_models() -> None:
    pytest.importorskip("bfcl_eval")
    from callscope.runs.panel_files import bfcl_models, panel_from_bfcl

    assert list(bfcl_models(BFCL)) == ["airev-ai/AIREV-Agent-0.8B", "glyphh-ada-1.1"]
    p = panel_from_bfcl(BFCL).panel
    assert p.models == ["airev-ai/AIREV-Agent-0.8B", "glyphh-ada-1.1"]
    assert p.categories == ["base", "miss_param", "miss_func", "long_context"]
    headers = {"base": 121, "miss_param": 95, "miss_func": 102, "long_context": 112}
    for cat, correct in headers.items():
        row = p.cell("glyphh-ada-1.1", cat).row
        assert (row["n"], row["acc_k"], row["acc_n"]) == (200, correct, 200)
        assert row["acc_source"] == "cases"
    assert p.cell("glyphh-ada-1.1", "base").row["gar_case"] == 1.0
    mp = p.cell("glyphh-ada-1.1", "miss_param")
    # GAR − Acc, the single-model table's sign: below 0 is the bound violation
    assert (mp.row["gar_case"], mp.delta) == (0.0, pytest.approx(-0.475))
    assert "bound violation (Acc > GAR)" in mp.flags()
    assert mp.delta_lo is not None and mp.delta_lo < -0.475 < mp.delta_hi
    airev = p.cell("airev-ai/AIREV-Agent-0.8B", "base").row
    assert (airev["n"], airev["gar_case_k"], airev["acc"]) == (200, 171, None)


@pytest.mark.skipif(not BFCL.is_dir(), reason="shared/external/bfcl absent")
def test_from_bfcl_cli_over_many_models_writes_the_panel(tmp_path) -> None:
    pytest.importorskip("bfcl_eval")
    from callscope.cli import app

    res = CliRunner().invoke(app, ["calibrate", "--from-bfcl", str(BFCL), "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "panel-baseline.md").read_text()
    assert "| glyphh-ada-1.1 | 200 | 100.0 [98.1, 100.0] | 60.5 [53.6, 67.0] |" in md
    tex = (tmp_path / "panel-baseline.tex").read_text()
    assert "\\toprule" in tex and "glyphh-ada-1.1" in tex
    assert (tmp_path / "panel-baseline.png").read_bytes()[:4] == b"\x89PNG"
    assert "glyphh-ada-1.1" in (tmp_path / "report.html").read_text()


@pytest.mark.skipif(not TAU2.is_dir(), reason="shared/external/tau2 absent")
def test_tau2_panel_one_row_per_agent_model() -> None:
    from callscope.calibration.panel import panel_from_rows, panel_table
    from callscope.runs.from_results import tau2_diagnostics

    diag = tau2_diagnostics(TAU2)
    p = panel_from_rows(diag.rows, diag.capability)
    assert p.models == [
        "xai/grok-3 (user: xai/grok-3)",
        "openai/gpt-4.1-mini (user: openai/gpt-4.1-mini)",
    ]
    cell = p.cell("xai/grok-3 (user: xai/grok-3)", "airline TOOL_CALL")
    assert (cell.row["n"], cell.row["gar_case_k"], cell.row["acc_k"]) == (17, 8, 9)
    assert cell.delta == pytest.approx(1 / 17)
    assert "bound violation (Acc > GAR)" in cell.flags()
    row = panel_table(p).rows[0]
    assert row[1] == "17" and row[4] == "+5.9"
