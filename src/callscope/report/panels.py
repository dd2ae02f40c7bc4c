"""The calibration panel's figure and page: Acc against GAR per category, one marker per
model, with the Acc = GAR diagonal (a point above it is a bound violation: the grader passed
cases whose gold action class never appeared), and the panel's own ``report.html``.

The figure is a PNG drawn on matplotlib's Agg canvas (no display, no pyplot state); the page
is :func:`callscope.report.html.build_diagnostic_page` with the two panel tables and the PNG
named in its notes.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from callscope.calibration.panel import (
    Panel,
    capability_lines,
    panel_points,
    panel_table,
    turn_panel_table,
)
from callscope.report.html import build_diagnostic_page

FIGURE_CAPTION = (
    "Acc against case-level GAR per category, one marker per model; points above the dashed "
    "diagonal Acc = GAR are bound violations (grader masking)."
)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
DPI = 100


def panel_figure_file(probe: str = "baseline") -> str:
    """``panel-<probe>.png``."""
    return f"panel-{probe}.png"


def panel_figure(panel: Panel, path: str | Path) -> Path:
    """Draw Acc (y) against case-level GAR (x) in percent, one subplot per category, one
    marker shape per model (legend below), the diagonal Acc = GAR dashed; a category without
    any point says so. Returns ``path``."""
    path = Path(path)
    cats = panel.categories or ["(none)"]
    fig = Figure(figsize=(3.2 * len(cats) + 0.6, 3.9), dpi=DPI)
    FigureCanvasAgg(fig)
    points = panel_points(panel)
    handles = {}
    for i, cat in enumerate(cats):
        ax = fig.add_subplot(1, len(cats), i + 1)
        ax.plot([0, 100], [0, 100], linestyle="--", color="#7f7f7f", linewidth=1)
        mine = [p for p in points if p["category"] == cat]
        for p in mine:
            m = panel.models.index(p["model"]) if p["model"] in panel.models else 0
            h = ax.scatter(
                100 * p["gar"],
                100 * p["acc"],
                marker=MARKERS[m % len(MARKERS)],
                s=55,
                color=f"C{m % 10}",
                zorder=3,
            )
            handles.setdefault(p["model"], h)
        if not mine:
            ax.text(50, 50, "no GAR and Acc", ha="center", va="center", color="#7f7f7f")
        ax.set_xlim(-3, 103)
        ax.set_ylim(-3, 103)
        ax.set_aspect("equal")
        ax.set_title(cat, fontsize=10)
        ax.set_xlabel("GAR % (case level)", fontsize=9)
        if i == 0:
            ax.set_ylabel("Acc %", fontsize=9)
        ax.text(4, 94, "Acc > GAR:\ngrader masking", fontsize=7, color="#d62728", va="top")
    if handles:
        fig.legend(
            list(handles.values()),
            # model names are data: "$" would start matplotlib's mathtext
            [(m if len(m) <= 40 else m[:39] + "…").replace("$", r"\$") for m in handles],
            loc="lower center",
            ncol=min(len(handles), 3),
            fontsize=8,
            frameon=False,
        )
    fig.subplots_adjust(bottom=0.3, top=0.9, wspace=0.3, left=0.08, right=0.98)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def write_panel_page(out_dir: str | Path, panel: Panel, probe: str = "baseline") -> Path:
    """The panel's figure (:func:`panel_figure`, ``panel-<probe>.png``) and ``report.html``
    in ``out_dir``: both panel tables (bound violations highlighted), the capability
    warnings first, the notes, the figure embedded. Returns the page's path."""
    out = Path(out_dir)
    figure = panel_figure(panel, out / panel_figure_file(probe))
    case_t, turn_t = panel_table(panel), turn_panel_table(panel)
    page = build_diagnostic_page(
        out,
        f"Calibration panel ({probe}): {len(panel.models)} models",
        [
            (case_t.title or "", case_t.caption or "", case_t),
            (turn_t.title or "", turn_t.caption or "", turn_t),
        ],
        notes=panel.notes,
        warnings=capability_lines(panel),
    )
    # the figure, embedded after the tables (the page allows data: images only)
    caption = html.escape(FIGURE_CAPTION)
    b64 = base64.b64encode(figure.read_bytes()).decode("ascii")
    img = (
        f'<figure id="fig-panel"><img alt="{caption}" src="data:image/png;base64,{b64}">'
        f"<figcaption>{caption}</figcaption></figure>"
    )
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("</section>", img + "</section>", 1), encoding="utf-8")
    return page
