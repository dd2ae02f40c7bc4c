"""The SAAG run's PNG figures (matplotlib, Agg canvas; no display needed, no pyplot state).

File names are fixed, so a report directory of a SAAG run always holds the same six files:
``call_flow.png`` (the first screen: where and why calls fail, per model and mode),
``solve_rate_by_scale.png`` (paper Fig. 2), ``cumulative_solve.png`` (Fig. 3),
``failure_stages.png``, ``overcorrection.png`` and ``revisions.png`` (what each mode's
revisions lost and gained, by stage). A figure without data says so in the image. The
calibration run's figure is :mod:`callscope.report.acc_gar_figure`; the canvas, DPI and
labels both use are :mod:`callscope.report.png`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from callscope.records import STAGES, FailureKind, stage_info
from callscope.report.flow import SEGMENT_STAGE, SEGMENTS, segment_label
from callscope.report.outcome import STAGE_LABELS, mode_sort_key, scale_sort_key
from callscope.report.png import empty_png, save_png, short_label
from callscope.report.revisions import KEPT_ITEMS

FIGURE_FILES: tuple[str, ...] = (
    "call_flow.png",
    "solve_rate_by_scale.png",
    "cumulative_solve.png",
    "failure_stages.png",
    "overcorrection.png",
    "revisions.png",
)
MODE_STYLE = {
    "direct": {"color": "#7f7f7f", "linestyle": ":", "marker": "o"},
    "binary": {"color": "#1f77b4", "linestyle": "--", "marker": "s"},
    "structured": {"color": "#d62728", "linestyle": "-", "marker": "^"},
}
#: a colour per outcome, from the one stage vocabulary (:data:`callscope.records.STAGES`)
STAGE_COLORS = {
    **{s.segment: s.colour for s in STAGES if s.number is not None},
    "error": stage_info(None).colour,
}


def _style(mode: str) -> dict[str, str]:
    return MODE_STYLE.get(mode, {"color": "#17becf", "linestyle": "-.", "marker": "d"})


def _grid(n_rows: int, n_cols: int, w: float = 4.2, h: float = 3.2) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(w * n_cols, h * n_rows), layout="constrained")
    axes = np.atleast_2d(fig.subplots(n_rows, n_cols, squeeze=False))
    return fig, axes


def solve_rate_by_scale(per_scale: pd.DataFrame, out_dir: Path) -> Path:
    """Solve rate by registry scale, one panel per model, one line per mode, with Wilson
    95% error bars (paper Fig. 2)."""
    path = out_dir / FIGURE_FILES[1]
    if per_scale.empty:
        return empty_png(path, "solve rate by scale")
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
        ax.set_title(short_label(model), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return save_png(fig, path)


def cumulative_solve_plot(cum: pd.DataFrame, out_dir: Path) -> Path:
    """Cumulative solve rate by attempt: rows = models, columns = scales, one line per mode
    (direct dotted as the single-pass baseline; paper Fig. 3)."""
    path = out_dir / FIGURE_FILES[2]
    if cum.empty:
        return empty_png(path, "cumulative solve rate")
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
            ax.set_title(f"{short_label(model, 30)}  S={scale}", fontsize=8)
            ax.set_xlabel("attempt")
            ax.set_ylabel("cumulative solve rate")
            ax.grid(alpha=0.3)
            if not sub.empty:
                ax.legend(fontsize=7)
    return save_png(fig, path)


def failure_stages_plot(fb: pd.DataFrame, out_dir: Path) -> Path:
    """Stacked bars per (model, scale): share of cases whose first attempt passed, failed at
    stage 1/2/3, or got no reply."""
    path = out_dir / FIGURE_FILES[3]
    if fb.empty:
        return empty_png(path, "failure stages")
    labels = [f"{short_label(m, 24)}\nS={s}" for m, s in zip(fb["model"], fb["scale"], strict=True)]
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
    return save_png(fig, path)


def overcorrection_plot(oc: pd.DataFrame, out_dir: Path) -> Path:
    """Bars per (model, mode): share of correct first names / arguments lost by the final
    attempt (Wilson 95% error bars), and the mean F1 change with its bootstrap CI."""
    path = out_dir / FIGURE_FILES[4]
    if oc.empty:
        return empty_png(path, "overcorrection")
    labels = [f"{short_label(m, 24)}\n{mo}" for m, mo in zip(oc["model"], oc["mode"], strict=True)]
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
    return save_png(fig, path)


#: the call-flow segments' colours: a colour family per stage (green passed, reds stage 1,
#: oranges stage 2, purples stage 3, grey no reply). Per stage, its darkest shade is for a
#: failure without a recorded kind (``stage<k>``), then one shade per failure kind of the
#: stage in :class:`~callscope.records.FailureKind` order; a kind beyond the listed shades
#: gets the stage's last shade lightened towards white (:func:`kind_shade`), so a new kind
#: in ``callscope/records.py`` is drawn in its stage's family with no change here.
STAGE_SHADES: dict[int, tuple[str, ...]] = {
    1: ("#b01c1c", "#d62728", "#f28e8c"),
    2: ("#b34700", "#e8590c", "#fd9a45", "#fcc58f", "#8c4a1a"),
    3: ("#4b2870", "#6a3d9a", "#9e7cc9", "#cbb8e6"),
}
_PASSED_COLOR = "#2ca02c"
_NO_REPLY_COLOR = "#9a9a9a"


def kind_shade(stage: int, index: int) -> str:
    """The colour of the ``index``-th failure kind (from 0, cascade order) of ``stage``: shade
    ``index + 1`` of the stage's family (:data:`STAGE_SHADES`); past the listed shades, the
    last one, halfway closer to white with each further kind."""
    shades = STAGE_SHADES[stage]
    i = index + 1
    if i < len(shades):
        return shades[i]
    fade = 0.5 ** (i - len(shades) + 1)
    return to_hex(tuple(1.0 - (1.0 - c) * fade for c in to_rgb(shades[-1])))


def _segment_color(segment: str) -> str:
    if segment == "passed":
        return _PASSED_COLOR
    if segment == "error":
        return _NO_REPLY_COLOR
    if segment.startswith("stage"):
        return STAGE_SHADES[SEGMENT_STAGE[segment]][0]
    kind = FailureKind(segment)
    return kind.info.colour or kind_shade(kind.stage, FailureKind.of_stage(kind.stage).index(kind))


#: segment -> colour, in :data:`callscope.report.flow.SEGMENTS` order (the bars' stacking)
SEGMENT_COLORS: dict[str, str] = {s: _segment_color(s) for s in SEGMENTS}


def _white_text(segment: str) -> bool:
    """A count is written in white on the dark shades (passed, no reply, ``stage<k>`` and
    each stage's first kind) and in black on the lighter kinds."""
    kind = next((k for k in FailureKind if k.value == segment), None)
    return kind is None or FailureKind.of_stage(kind.stage).index(kind) == 0


def call_flow_plot(flow: pd.DataFrame, out_dir: Path) -> Path:
    """The report's first figure: per model a panel of horizontal stacked bars, one for
    attempt 1 and one per feedback mode's final attempt; each bar split into the cascade
    segments of :func:`callscope.report.flow.call_flow` (passed, or the stage and failure
    kind that stopped the call), counts written inside, ``solved k/n`` at the right."""
    path = out_dir / FIGURE_FILES[0]
    if flow.empty:
        return empty_png(path, "call flow")
    models = list(dict.fromkeys(flow["model"]))
    bars = {m: list(dict.fromkeys(flow[flow["model"] == m]["bar"])) for m in models}
    n_bars = sum(len(b) for b in bars.values())
    present = [s for s in SEGMENTS if flow[(flow["segment"] == s)]["n"].sum() > 0]
    fig = Figure(figsize=(10.0, 0.42 * n_bars + 0.75 * len(models) + 0.9), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(
        len(models), 1, squeeze=False, height_ratios=[len(bars[m]) + 0.8 for m in models]
    )[:, 0]
    for ax, model in zip(axes, models, strict=True):
        sub = flow[flow["model"] == model]
        names = bars[model]
        for y, bar in enumerate(names):
            rows = sub[sub["bar"] == bar]
            left = 0.0
            for seg in SEGMENTS:
                r = rows[rows["segment"] == seg]
                share = float(r["share"].sum())
                if share <= 0:
                    continue
                ax.barh(y, share, left=left, color=SEGMENT_COLORS[seg], edgecolor="white")
                if share >= 0.045:
                    ax.text(
                        left + share / 2,
                        y,
                        str(int(r["n"].sum())),
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="white" if _white_text(seg) else "black",
                    )
                left += share
            total = int(rows["total"].iloc[0])
            solved = int(rows["solved"].iloc[0])
            ax.text(1.01, y, f"solved {solved}/{total}", va="center", fontsize=8)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0", "25%", "50%", "75%", "100%"], fontsize=7)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        first_total = int(sub["total"].iloc[0])
        ax.set_title(
            f"{short_label(model, 60)}: where the cascade stopped each call ({first_total} cases)",
            fontsize=9,
            loc="left",
        )
    handles = [
        Rectangle((0, 0), 1, 1, color=SEGMENT_COLORS[s], label=segment_label(s)) for s in present
    ]
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=min(len(handles), 4),
        fontsize=7.5,
        frameon=False,
        title="stage that stopped the call: what failed",
        title_fontsize=7.5,
    )
    return save_png(fig, path)


def make_figures(
    per_scale: pd.DataFrame,
    cum: pd.DataFrame,
    fb: pd.DataFrame,
    oc: pd.DataFrame,
    out_dir: str | Path,
    flow: pd.DataFrame | None = None,
    revisions: pd.DataFrame | None = None,
) -> list[Path]:
    """Write the six figures into ``out_dir`` (created) and return their paths in
    :data:`FIGURE_FILES` order (``flow``: :func:`callscope.report.flow.call_flow`; ``None``
    draws the call flow's "no data" image)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [
        call_flow_plot(flow if flow is not None else pd.DataFrame(), out),
        solve_rate_by_scale(per_scale, out),
        cumulative_solve_plot(cum, out),
        failure_stages_plot(fb, out),
        overcorrection_plot(oc, out),
        revision_plot(revisions if revisions is not None else pd.DataFrame(), out),
    ]


def revision_plot(rev: pd.DataFrame, out_dir: Path) -> Path:
    """The trade-off of each loop mode (``revisions.png``): per (model, mode), the share of
    outcomes whose answer lost (down, red) or gained (up, green) each item of
    :data:`callscope.report.revisions.KEPT_ITEMS`, with Wilson 95% error bars."""
    path = out_dir / FIGURE_FILES[5]
    if rev.empty:
        return empty_png(path, "revisions")
    items = KEPT_ITEMS
    labels = [
        f"{short_label(m, 24)}\n{mo}" for m, mo in zip(rev["model"], rev["mode"], strict=True)
    ]
    fig = Figure(figsize=(max(7.0, 1.4 * len(labels) + 2), 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    x = np.arange(len(labels))
    width = 0.8 / len(items)
    shades = ("#08306b", "#2171b5", "#6baed6", "#d94801", "#fd8d3c")
    for i, (item, shade) in enumerate(zip(items, shades, strict=True)):
        off = (i - (len(items) - 1) / 2) * width
        for what, sign in (("gained", 1.0), ("lost", -1.0)):
            y = np.nan_to_num(rev[f"{item}_{what}_rate"].to_numpy(dtype=float))
            lo = np.nan_to_num(rev[f"{item}_{what}_lo"].to_numpy(dtype=float))
            hi = np.nan_to_num(rev[f"{item}_{what}_hi"].to_numpy(dtype=float))
            # no error bar on a zero-height bar (issue 32: a Wilson interval of 0 of n drew
            # ±0.39 around nothing); the table beside it keeps every interval
            below = np.where(y > 0, np.maximum(y - lo, 0), 0.0)
            above = np.where(y > 0, np.maximum(hi - y, 0), 0.0)
            ax.bar(
                x + off,
                sign * y,
                width,
                color=shade,
                alpha=1.0 if what == "gained" else 0.55,
                hatch=None if what == "gained" else "//",
                label=item if what == "gained" else None,
            )
            shown = y > 0
            if shown.any():
                # a lost bar points down: its interval [-hi, -lo] extends the other way
                err = np.vstack([below, above] if sign > 0 else [above, below])
                ax.errorbar(
                    (x + off)[shown],
                    (sign * y)[shown],
                    yerr=err[:, shown],
                    fmt="none",
                    ecolor="black",
                    elinewidth=1,
                    capsize=2,
                )
    ax.axhline(0, color="black", linewidth=0.8)
    if len(labels) <= 6:
        ax.set_xticks(x, labels, fontsize=9)
    else:
        ax.set_xticks(x, labels, fontsize=9, rotation=30, ha="right")
    ax.set_ylim(-1.0, 1.0)
    ax.set_ylabel("share of outcomes\ngained (up) / lost (down, hatched)", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="item")
    ax.set_title("What the loop's revisions gained and lost", fontsize=10)
    return save_png(fig, path)
