"""The report's PNG figures (matplotlib, Agg canvas; no display needed, no pyplot state).

File names are fixed, so a report directory always holds the same four files:
``solve_rate_by_scale.png`` (paper Fig. 2), ``cumulative_solve.png`` (Fig. 3),
``failure_stages.png`` and ``overcorrection.png``. A figure without data says so in the image.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from callscope.report.aggregate import (
    STAGE_LABELS,
    mode_sort_key,
    scale_sort_key,
)

FIGURE_FILES: tuple[str, ...] = (
    "solve_rate_by_scale.png",
    "cumulative_solve.png",
    "failure_stages.png",
    "overcorrection.png",
)
MODE_STYLE = {
    "direct": {"color": "#7f7f7f", "linestyle": ":", "marker": "o"},
    "binary": {"color": "#1f77b4", "linestyle": "--", "marker": "s"},
    "structured": {"color": "#d62728", "linestyle": "-", "marker": "^"},
}
STAGE_COLORS = {
    "passed": "#2ca02c",
    "stage1": "#d62728",
    "stage2": "#ff7f0e",
    "stage3": "#9467bd",
    "error": "#7f7f7f",
}
DPI = 100


def _style(mode: str) -> dict[str, str]:
    return MODE_STYLE.get(mode, {"color": "#17becf", "linestyle": "-.", "marker": "d"})


def _short(model: str, width: int = 40) -> str:
    """A plot label: ``backend:/long/path/file`` keeps only the file name; long labels are
    cut from the left."""
    kind, sep, rest = model.partition(":")
    if sep and "/" in rest:
        model = f"{kind}:{rest.rstrip('/').rsplit('/', 1)[-1]}"
    return model if len(model) <= width else "…" + model[-(width - 1) :]


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=DPI, metadata={"Software": None})
    return path


def _empty(path: Path, title: str) -> Path:
    fig = Figure(figsize=(5, 2))
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, f"{title}: no data", ha="center", va="center")
    return _save(fig, path)


def _grid(n_rows: int, n_cols: int, w: float = 4.2, h: float = 3.2) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(w * n_cols, h * n_rows), layout="constrained")
    axes = np.atleast_2d(fig.subplots(n_rows, n_cols, squeeze=False))
    return fig, axes


def solve_rate_by_scale(per_scale: pd.DataFrame, out_dir: Path) -> Path:
    """Solve rate by registry scale, one panel per model, one line per mode, with Wilson
    95% error bars (paper Fig. 2)."""
    path = out_dir / FIGURE_FILES[0]
    if per_scale.empty:
        return _empty(path, "solve rate by scale")
    models = sorted(per_scale["model"].unique())
    scales = sorted(per_scale["scale"].unique(), key=scale_sort_key)
    fig, axes = _grid(1, len(models))
    for ax, model in zip(axes[0], models, strict=True):
        sub = per_scale[per_scale["model"] == model]
        modes = sorted(sub["mode"].unique(), key=mode_sort_key)
        for i, mode in enumerate(modes):
            s = sub[sub["mode"] == mode].set_index("scale").reindex(scales)
            x = np.arange(len(scales)) + 0.05 * (i - (len(modes) - 1) / 2)  # dodge error bars
            y = s["solve_rate"].to_numpy(dtype=float)
            err = np.vstack(
                [y - s["solve_lo"].to_numpy(dtype=float), s["solve_hi"].to_numpy(dtype=float) - y]
            )
            ax.errorbar(x, y, yerr=err, capsize=3, label=mode, **_style(mode))
        ax.set_xticks(np.arange(len(scales)), scales)
        ax.set_xlabel("registry scale")
        ax.set_ylabel("solve rate")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(_short(model), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def cumulative_solve_plot(cum: pd.DataFrame, out_dir: Path) -> Path:
    """Cumulative solve rate by attempt: rows = models, columns = scales, one line per mode
    (direct dotted as the single-pass baseline; paper Fig. 3)."""
    path = out_dir / FIGURE_FILES[1]
    if cum.empty:
        return _empty(path, "cumulative solve rate")
    models = sorted(cum["model"].unique())
    scales = sorted(cum["scale"].unique(), key=scale_sort_key)
    fig, axes = _grid(len(models), len(scales), 3.8, 3.0)
    for i, model in enumerate(models):
        for j, scale in enumerate(scales):
            ax: Axes = axes[i][j]
            sub = cum[(cum["model"] == model) & (cum["scale"] == scale)]
            for mode in sorted(sub["mode"].unique(), key=mode_sort_key):
                s = sub[sub["mode"] == mode].sort_values("attempt")
                ax.plot(s["attempt"], s["rate"], label=mode, markersize=3, **_style(mode))
            ax.set_ylim(-0.02, 1.02)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_title(f"{_short(model, 30)}  S={scale}", fontsize=8)
            ax.set_xlabel("attempt")
            ax.set_ylabel("cumulative solve rate")
            ax.grid(alpha=0.3)
            if not sub.empty:
                ax.legend(fontsize=7)
    return _save(fig, path)


def failure_stages_plot(fb: pd.DataFrame, out_dir: Path) -> Path:
    """Stacked bars per (model, scale): share of cases whose first attempt passed, failed at
    stage 1/2/3, or got no reply."""
    path = out_dir / FIGURE_FILES[2]
    if fb.empty:
        return _empty(path, "failure stages")
    labels = [f"{_short(m, 24)}\nS={s}" for m, s in zip(fb["model"], fb["scale"], strict=True)]
    fig = Figure(figsize=(max(5.0, 1.1 * len(labels) + 2), 4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    x = np.arange(len(labels))
    bottom = np.zeros(len(labels))
    for stage in STAGE_LABELS:
        vals = fb[stage].to_numpy(dtype=float)
        ax.bar(x, vals, bottom=bottom, label=stage, color=STAGE_COLORS[stage])
        bottom += vals
    ax.set_xticks(x, labels, fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("share of cases (first attempt)")
    ax.set_ylim(0, 1.0)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("Where the first attempt failed", fontsize=10)
    return _save(fig, path)


def overcorrection_plot(oc: pd.DataFrame, out_dir: Path) -> Path:
    """Bars per (model, mode): share of correct first names / arguments lost by the final
    attempt (Wilson 95% error bars), and the mean F1 change with its bootstrap CI."""
    path = out_dir / FIGURE_FILES[3]
    if oc.empty:
        return _empty(path, "overcorrection")
    labels = [f"{_short(m, 24)}\n{mo}" for m, mo in zip(oc["model"], oc["mode"], strict=True)]
    fig = Figure(figsize=(max(7.0, 1.6 * len(labels) + 2), 4), layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    x = np.arange(len(labels))
    width = 0.38
    for off, key, color, name in (
        (-width / 2, "name", "#1f77b4", "gold name lost"),
        (width / 2, "args", "#ff7f0e", "gold args lost"),
    ):
        y = np.nan_to_num(oc[f"{key}_rate"].to_numpy(dtype=float))
        lo = np.nan_to_num(oc[f"{key}_lo"].to_numpy(dtype=float))
        hi = np.nan_to_num(oc[f"{key}_hi"].to_numpy(dtype=float))
        ax1.bar(
            x + off,
            y,
            width,
            yerr=np.vstack([np.maximum(y - lo, 0), np.maximum(hi - y, 0)]),
            capsize=3,
            label=name,
            color=color,
        )
    ax1.set_xticks(x, labels, fontsize=7, rotation=30, ha="right")
    ax1.set_ylim(0, 1.0)
    ax1.set_ylabel("share lost by the final attempt")
    ax1.legend(fontsize=8)
    ax1.set_title("Overcorrection", fontsize=10)
    y = np.nan_to_num(oc["f1_delta"].to_numpy(dtype=float))
    lo = np.nan_to_num(oc["f1_delta_lo"].to_numpy(dtype=float))
    hi = np.nan_to_num(oc["f1_delta_hi"].to_numpy(dtype=float))
    ax2.bar(
        x,
        y,
        0.6,
        yerr=np.vstack([np.maximum(y - lo, 0), np.maximum(hi - y, 0)]),
        capsize=3,
        color="#2ca02c",
    )
    ax2.axhline(0, color="black", linewidth=0.8)
    ax2.set_xticks(x, labels, fontsize=7, rotation=30, ha="right")
    ax2.set_ylabel("mean arg F1: final − first")
    ax2.set_title("F1 change over the loop", fontsize=10)
    return _save(fig, path)


def make_figures(
    per_scale: pd.DataFrame,
    cum: pd.DataFrame,
    fb: pd.DataFrame,
    oc: pd.DataFrame,
    out_dir: str | Path,
) -> list[Path]:
    """Write the four figures into ``out_dir`` (created) and return their paths in
    :data:`FIGURE_FILES` order."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [
        solve_rate_by_scale(per_scale, out),
        cumulative_solve_plot(cum, out),
        failure_stages_plot(fb, out),
        overcorrection_plot(oc, out),
    ]
