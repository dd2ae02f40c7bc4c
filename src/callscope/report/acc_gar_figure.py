"""The calibration run's first figure and the panel's: Acc against case-level GAR per
category, one marker per model (:func:`acc_vs_gar_plot`, the one drawing of that figure; the
report's ``acc_vs_gar.png`` and the panel's ``panel-<probe>.png``), and its points from
diagnostics rows (:func:`acc_gar_point`, :func:`acc_gar_points`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import PercentFormatter

from callscope.report.png import empty_png, save_png, short_label

#: the calibration run's first figure (not among
#: :data:`callscope.report.figures.FIGURE_FILES`: SAAG runs lack it)
ACC_GAR_FILE = "acc_vs_gar.png"


def acc_gar_point(
    model: str, category: str, row: Mapping[str, Any], probe: str | None = None
) -> dict[str, Any] | None:
    """One point of :func:`acc_vs_gar_plot` from a diagnostics row (``gar_case``, ``acc``
    and their ``*_ci_low``/``*_ci_high`` Wilson bounds), ``None`` when either rate is missing:
    ``gar`` (case-level GAR), ``acc``, their bounds (the rate itself where a bound is missing)
    and ``masked`` = Acc > GAR (grader masking: GAR bounds Acc from above when the grader only
    passes cases whose gold action was emitted; calibration paper section 3)."""
    gar, acc = _rate(row.get("gar_case")), _rate(row.get("acc"))
    if gar is None or acc is None:
        return None
    return {
        "model": str(model),
        "probe": None if probe is None else str(probe),
        "category": str(category),
        "gar": gar,
        "acc": acc,
        "gar_lo": _rate(row.get("gar_case_ci_low"), gar),
        "gar_hi": _rate(row.get("gar_case_ci_high"), gar),
        "acc_lo": _rate(row.get("acc_ci_low"), acc),
        "acc_hi": _rate(row.get("acc_ci_high"), acc),
        "masked": acc > gar,
    }


def acc_gar_points(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The points of :func:`acc_vs_gar_plot` for the ``runs`` of
    :func:`callscope.report.conversations.conversation_report`: per (model, probe) run and
    category with both rates, :func:`acc_gar_point` of its row."""
    out = []
    for run in runs:
        for row in run.get("rows") or []:
            p = acc_gar_point(
                str(run.get("model")), str(row.get("category", "")), row, str(run.get("probe"))
            )
            if p is not None:
                out.append(p)
    return out


def _rate(v: Any, default: float | None = None) -> float | None:
    if v is None or isinstance(v, bool) or not isinstance(v, int | float) or np.isnan(v):
        return default
    return float(v)


@dataclass(frozen=True)
class AccGarFigure:
    """What :func:`acc_vs_gar_plot` drew: the PNG, the subplot titles (one per category, in
    order), the legend's entries as drawn (one per series: a model, or ``model (probe)`` when
    the points hold several probes) and the points plotted."""

    path: Path
    categories: list[str]
    legend: list[str]
    points: list[dict[str, Any]]


#: the figure's caption, wherever it is shown (the report's first screen, the panel page)
ACC_GAR_CAPTION = (
    "Acc against case-level GAR per category, one marker per model, Wilson 95% whiskers: Acc "
    "is the share of cases the grader passed, GAR the share whose gold action class (base "
    "TOOL_CALL, miss_param ASK, miss_func REFUSE) was emitted. A sound grader keeps Acc <= GAR: "
    "a point above the dashed diagonal Acc = GAR (the shaded region, ringed red) is grader "
    "masking, cases passed without the gold action."
)
#: one marker shape per series (model), cycled
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
_MASK_COLOR = "#d62728"


def _series_label(point: Mapping[str, Any], probes: int) -> str:
    label = short_label(str(point["model"]))
    if probes > 1 and point.get("probe") is not None:
        label = f"{label} ({point['probe']})"
    # model names are data: "$" would start matplotlib's mathtext
    return label.replace("$", r"\$")


def acc_vs_gar_plot(
    points: list[dict[str, Any]],
    path: Path,
    *,
    categories: list[str] | None = None,
    intervals: bool = True,
) -> AccGarFigure:
    """Acc (the grader passed the case) against case-level GAR (the gold action class was
    emitted), the calibration run's first figure and the panel's: one subplot per category
    (``categories`` in order, default the points' order; a category without a point says
    so), one marker shape and colour per model (per (model, probe) when the points hold
    several probes; legend below), the diagonal Acc = GAR dashed, the region above it shaded
    and labelled "grader masking" (a point there, ``masked``, gets a red ring), Wilson 95%
    whiskers when ``intervals``; earlier series are drawn larger, so models on the same spot
    stay visible, nested. ``points``: :func:`acc_gar_points` or
    :func:`acc_gar_point` rows. Returns what was drawn (:class:`AccGarFigure`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cats = list(categories) if categories is not None else []
    cats += [c for c in dict.fromkeys(p["category"] for p in points) if c not in cats]
    if not points:
        empty_png(path, "Acc vs GAR")
        return AccGarFigure(path, [], [], [])
    probes = len({p.get("probe") for p in points})
    series = list(dict.fromkeys((p["model"], p.get("probe")) for p in points))
    labels = {s: _series_label({"model": s[0], "probe": s[1]}, probes) for s in series}
    cols = min(len(cats), 4)
    n_rows = (len(cats) + cols - 1) // cols
    fig = Figure(figsize=(3.1 * cols + 0.4, 3.1 * n_rows + 0.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = np.atleast_2d(fig.subplots(n_rows, cols, squeeze=False))
    titles = []
    for i, ax in enumerate(axes.flat):
        if i >= len(cats):
            ax.axis("off")
            continue
        cat = cats[i]
        ax.fill_between([0, 1], [0, 1], [1, 1], color="#fde2e1", alpha=0.6, linewidth=0)
        ax.plot([0, 1], [0, 1], color="#555", linewidth=0.8, linestyle="--")
        ax.text(0.03, 0.97, "Acc > GAR:\ngrader masking", fontsize=7, color="#8a1010", va="top")
        mine = [p for p in points if p["category"] == cat]
        for p in mine:
            k = series.index((p["model"], p.get("probe")))
            color = f"C{k % 10}"
            x, y = p["gar"], p["acc"]
            if intervals:
                ax.errorbar(
                    [x],
                    [y],
                    xerr=[[max(x - p.get("gar_lo", x), 0.0)], [max(p.get("gar_hi", x) - x, 0.0)]],
                    yerr=[[max(y - p.get("acc_lo", y), 0.0)], [max(p.get("acc_hi", y) - y, 0.0)]],
                    fmt="none",
                    ecolor=color,
                    alpha=0.6,
                    capsize=2,
                    linewidth=0.9,
                )
            # earlier series drawn larger: models on the same spot stay visible, nested
            size = 30 * 2.0 ** min(len(series) - 1 - k, 4)
            if p.get("masked"):  # a red ring around a point in the masking region
                ax.scatter(
                    [x], [y], s=size * 2.2, facecolors="none", edgecolors=_MASK_COLOR, zorder=3
                )
            ax.scatter(
                [x],
                [y],
                marker=MARKERS[k % len(MARKERS)],
                s=size,
                color=color,
                edgecolors="white",
                linewidths=0.6,
                zorder=4,
            )
        if not mine:
            ax.text(0.5, 0.5, "no GAR and Acc", ha="center", va="center", color="#7f7f7f")
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(-0.03, 1.03)
        ax.set_aspect("equal")
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.tick_params(labelsize=7)
        title = cat.removeprefix("multi_turn_")
        ax.set_title(short_label(title, 40).replace("$", r"\$"), fontsize=9)
        titles.append(ax.get_title())
        ax.set_xlabel("GAR (gold action emitted)", fontsize=8)
        ax.set_ylabel("Acc (grader passed)", fontsize=8)
        ax.grid(alpha=0.3)
    handles = [
        Line2D(
            [],
            [],
            linestyle="none",
            marker=MARKERS[k % len(MARKERS)],
            color=f"C{k % 10}",
            markersize=7,
            label=labels[s],
        )
        for k, s in enumerate(series)
    ]
    legend = fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=min(len(handles), 4),
        fontsize=8,
        frameon=False,
    )
    save_png(fig, path)
    return AccGarFigure(path, titles, [t.get_text() for t in legend.get_texts()], list(points))
