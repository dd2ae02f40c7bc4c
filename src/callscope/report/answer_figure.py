"""The report's figure over answers (issue 28): calls made against calls expected per case
category (``calls_by_category.png``), drawn from
:func:`callscope.report.answers.calls_by_category`. A run scored before answers were the unit
has no such figure (:func:`callscope.report.answers.has_answers`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from callscope.report.figures import _style
from callscope.report.outcome import mode_sort_key
from callscope.report.png import empty_png, save_png, short_label

CALLS_FIGURE = "calls_by_category.png"
CALLS_CAPTION = (
    "Calls made against calls expected per case category (final answers of cases with gold): "
    "for each category the number of gold calls (grey, hatched) and, per mode, the calls the "
    "answers made; a bar above the grey one made extra calls, below it missed some. No-call "
    "categories (BFCL's irrelevance) expect 0 calls: any bar there is a call made where none "
    "was right."
)


def calls_by_category_plot(df: pd.DataFrame, out_dir: str | Path) -> Path:
    """``out_dir/calls_by_category.png``: one panel per model; x = category; per category a
    grey hatched bar of the calls expected, then one bar per mode of the calls made, each
    labelled with its count. The calls expected are the same for every mode that ran the
    same cases; where modes ran different cases of a category, the bar shows the largest."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / CALLS_FIGURE
    if df.empty:
        return empty_png(path, "calls made against calls expected")
    models = sorted(df["model"].unique())
    categories = sorted(df["category"].unique())
    modes = sorted(df["mode"].unique(), key=mode_sort_key)
    width = 0.8 / (len(modes) + 1)
    fig = Figure(
        figsize=(max(5.0, 1.2 + 0.9 * len(categories) * (len(modes) + 1) * 0.5), 3.2 * len(models)),
        layout="constrained",
    )
    axes = np.atleast_1d(fig.subplots(len(models), 1, squeeze=False)[:, 0])
    x = np.arange(len(categories))
    for ax, model in zip(axes, models, strict=True):
        sub = df[df["model"] == model]
        expected = sub.groupby("category")["calls_expected"].max()
        heights = [int(expected.get(c, 0)) for c in categories]
        bars = [
            ax.bar(
                x,
                heights,
                width,
                color="#d9d9d9",
                edgecolor="#7f7f7f",
                hatch="//",
                label="calls expected",
            )
        ]
        for k, mode in enumerate(modes):
            made = sub[sub["mode"] == mode].set_index("category")["calls_made"]
            bars.append(
                ax.bar(
                    x + (k + 1) * width,
                    [int(made.get(c, 0)) for c in categories],
                    width,
                    color=_style(mode)["color"],
                    label=f"calls made: {mode}",
                )
            )
        for b in bars:
            ax.bar_label(b, fontsize=7, padding=1)
        ax.set_xticks(x + width * len(modes) / 2, categories, fontsize=8, rotation=15)
        ax.set_ylabel("calls")
        ax.set_title(short_label(model, 60), fontsize=9)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save_png(fig, path)
