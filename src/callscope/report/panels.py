"""The calibration panel's figure and its own page, for panels that have no run report: those
read from BFCL result trees of several models (``calibrate --from-bfcl``) and from τ²-bench
runs of several agents (``--from-tau2``). A panel run of models (``calibrate -m A -m B``)
shows the same panel in its run's ``report.html`` (:func:`callscope.report.sections.panel_html`).

The figure is :func:`callscope.report.acc_gar_figure.acc_vs_gar_plot` (Acc against case-level GAR per
category, one marker per model, the Acc = GAR diagonal with the grader-masking region above
it, Wilson whiskers) on the panel's cells; the page is the panel section of the run report
(figure first, then the case-level and turn-level tables).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from callscope.calibration.panel import Panel
from callscope.report.acc_gar_figure import (
    ACC_GAR_CAPTION,
    AccGarFigure,
    acc_gar_point,
    acc_vs_gar_plot,
)
from callscope.report.conversations import panel_entry
from callscope.report.html import write_page
from callscope.report.sections import figure_html, panel_html


def panel_figure_file(probe: str = "baseline") -> str:
    """``panel-<probe>.png``."""
    return f"panel-{probe}.png"


def panel_acc_gar_points(panel: Panel) -> list[dict[str, Any]]:
    """The figure's points of a panel: :func:`~callscope.report.acc_gar_figure.acc_gar_point` of each
    cell with both rates (its category the panel's column), models in the panel's row order."""
    rank = {m: i for i, m in enumerate(panel.models)}
    cells = sorted(panel.cells.values(), key=lambda c: rank.get(c.model, len(rank)))
    points = (acc_gar_point(c.model, c.category, c.row) for c in cells)
    return [p for p in points if p is not None]


def panel_figure(panel: Panel, path: str | Path) -> AccGarFigure:
    """The panel's figure at ``path``: its points (:func:`panel_acc_gar_points`) drawn by
    :func:`~callscope.report.acc_gar_figure.acc_vs_gar_plot`, one subplot per panel column."""
    return acc_vs_gar_plot(panel_acc_gar_points(panel), Path(path), categories=panel.categories)


def write_panel_page(out_dir: str | Path, panel: Panel, probe: str = "baseline") -> Path:
    """The panel's figure (:func:`panel_figure`, ``panel-<probe>.png``) and ``report.html`` in
    ``out_dir``: the run report's panel section (the figure embedded first, the capability
    warnings, both panel tables with bound violations highlighted, the notes). Returns the
    page's path."""
    out = Path(out_dir)
    fig = panel_figure(panel, out / panel_figure_file(probe))
    section = panel_html(
        [panel_entry(panel, probe)], figure_html(fig.path, ACC_GAR_CAPTION, "panel")
    )
    return write_page(out, f"Calibration panel ({probe}): {len(panel.models)} models", [section])
