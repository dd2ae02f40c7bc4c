"""The SAAG report's tables: aggregate frames -> :class:`~callscope.core.table.Table`.

Each builder takes a frame of :mod:`callscope.report.aggregate` and returns one
:class:`~callscope.core.table.Table` whose text cells are the formatted values (``mean ± std``
with the row count, rates with their intervals) and whose ``raw`` table holds the frame's
exact numbers (:func:`raw_table`), so that its CSV file keeps them for other tools while the
Markdown, LaTeX and HTML show the formatted cells. The report writes every table with
:func:`callscope.core.table_formats.write_tables` (``tables/<name>.{csv,md,tex}``).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from callscope.core.table import Table
from callscope.records import FailureKind
from callscope.report.aggregate import METRIC_LABELS
from callscope.report.outcome import EXTRINSIC, INTRINSIC, STAGE_LABELS
from callscope.report.revisions import KEPT_ITEMS

#: metric key -> column label (from the one metric spec list, :mod:`callscope.saag.metrics`)
LABELS: dict[str, str] = METRIC_LABELS

STAGE_NOTE = (
    "Intrinsic metrics are stage-conditional: each is averaged only over the final attempts "
    "where it is defined (later-stage metrics only over calls that passed the earlier stages); "
    "n is the number of rows behind each mean. FNEM is the rate of FNEM = 1."
)
EXTRINSIC_NOTE = (
    "Extrinsic metrics and solve rate are over all outcomes of cases with a gold call; an "
    "outcome that ended in a model error counts as unsolved with all extrinsic metrics 0."
)


def raw_table(df: pd.DataFrame) -> Table:
    """The frame's exact values as text cells, as pandas writes them to CSV: floats of a float
    column with ``%.6g``, every other value with ``str``, missing values (``None``, NaN, NA)
    empty."""
    columns = [str(c) for c in df.columns]
    formats = [
        (lambda v: f"{v:.6g}") if pd.api.types.is_float_dtype(dtype) else str for dtype in df.dtypes
    ]
    rows = [
        ["" if _nan(v) else fmt(v) for v, fmt in zip(row, formats, strict=True)]
        for row in df.itertuples(index=False, name=None)
    ]
    return Table(columns, rows)


def report_table(
    name: str, title: str, caption: str, data: pd.DataFrame, display: pd.DataFrame
) -> Table:
    """One report table: the ``display`` frame's cells as text (the first three columns, the
    row keys, left-aligned, the rest right-aligned; ``_(no rows)_`` in Markdown when it is
    empty) and ``data``'s exact values as its ``raw`` table (:func:`raw_table`)."""
    cols = [str(c) for c in display.columns]
    rows = [] if display.empty else list(display.itertuples(index=False))
    align = "l" * min(3, len(cols)) + "r" * max(0, len(cols) - 3)
    return Table(
        cols,
        rows,
        title=title,
        caption=caption,
        name=name,
        align=align,
        empty="_(no rows)_",
        raw=raw_table(data),
    )


# --------------------------------------------------------------------------- formatting


def _nan(x: Any) -> bool:
    """Missing: ``None``, pandas' ``NA`` or a float NaN."""
    return x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x))


def fmt_num(x: Any, digits: int = 3) -> str:
    """A number with ``digits`` decimals; ``"–"`` (en dash) for missing."""
    return "–" if _nan(x) else f"{float(x):.{digits}f}"


def fmt_pm(mean: Any, std: Any, n: Any = None, digits: int = 3) -> str:
    """``"0.812 ± 0.101 (n=12)"``; the std part is dropped when missing, ``"–"`` with no mean."""
    if _nan(mean):
        return "–" if n is None else f"– (n={int(n)})"
    text = fmt_num(mean, digits)
    if not _nan(std):
        text += f" ± {fmt_num(std, digits)}"
    if n is not None:
        text += f" (n={int(n)})"
    return text


def fmt_ci(value: Any, lo: Any, hi: Any, digits: int = 3) -> str:
    """``"0.500 [0.236, 0.764]"``."""
    if _nan(value):
        return "–"
    if _nan(lo) or _nan(hi):
        return fmt_num(value, digits)
    return f"{fmt_num(value, digits)} [{fmt_num(lo, digits)}, {fmt_num(hi, digits)}]"


# --------------------------------------------------------------------------- builders


def _keys(df: pd.DataFrame, cols: tuple[str, ...]) -> pd.DataFrame:
    return df[[c for c in cols if c in df.columns]].copy()


def per_scale_table(df: pd.DataFrame) -> Table:
    """Per (model, scale, mode): intrinsic and extrinsic mean ± std over rows (Appendix E)."""
    disp = _keys(df, ("model", "scale", "mode", "n"))
    for m in (*INTRINSIC, *EXTRINSIC):
        disp[LABELS[m]] = [fmt_pm(r[m], r[f"{m}_std"], r[f"{m}_n"]) for _, r in df.iterrows()]
    disp["Solve rate [95% Wilson]"] = [
        fmt_ci(r["solve_rate"], r["solve_lo"], r["solve_hi"]) for _, r in df.iterrows()
    ]
    disp["Attempts to solve"] = [
        fmt_pm(r["attempts_to_solve"], r["attempts_to_solve_std"], r["attempts_to_solve_n"], 2)
        for _, r in df.iterrows()
    ]
    caption = (
        "Per-scale results: mean ± std over the rows at each registry scale (population std, "
        f"as in the paper's Appendix E). {STAGE_NOTE} {EXTRINSIC_NOTE} Attempts to solve is "
        "the mean over solved outcomes."
    )
    return report_table("per_scale", "Per-scale results", caption, df, disp)


def _across_display(df: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    disp = _keys(df, ("model", "mode", "n_scales"))
    for m in metrics:
        digits = 2 if m == "attempts_to_solve" else 3
        # issue 32: the run's solve rate is the headline's (pooled over all outcomes); this
        # one is an average of per-scale rates and says so
        label = f"{LABELS[m]} (mean of scales)" if m == "solve_rate" else LABELS[m]
        disp[label] = [fmt_pm(r[m], r[f"{m}_std"], None, digits) for _, r in df.iterrows()]
    return disp


_ACROSS_NOTE = (
    "Values are the mean of the per-scale values ± their sample standard deviation (ddof = 1) "
    "across registry scales, reflecting variability due to registry complexity rather than "
    "sampling noise (empty with a single scale)."
)


def aggregate_table(df: pd.DataFrame) -> Table:
    """Every metric across scales, per (model, mode) (paper Tables 8, 12, 16)."""
    metrics = (*INTRINSIC, *EXTRINSIC, "solve_rate", "attempts_to_solve")
    caption = f"Aggregate results across registry scales. {_ACROSS_NOTE} {STAGE_NOTE}"
    return report_table(
        "aggregate", "Aggregate across scales", caption, df, _across_display(df, metrics)
    )


def extrinsic_table(df: pd.DataFrame) -> Table:
    """Extrinsic metrics and solve rate across scales (paper Table 2)."""
    cols = [c for c in ("model", "mode", "n_scales") if c in df.columns]
    metrics = (*EXTRINSIC, "solve_rate")
    data = df[cols + [c for m in metrics for c in (m, f"{m}_std")]] if not df.empty else df
    caption = f"Extrinsic metrics across registry scales (higher is better). {_ACROSS_NOTE} {EXTRINSIC_NOTE}"
    return report_table(
        "extrinsic", "Extrinsic metrics", caption, data, _across_display(df, metrics)
    )


def intrinsic_table(df: pd.DataFrame) -> Table:
    """Intrinsic grounding diagnostics across scales (paper Table 3)."""
    cols = [c for c in ("model", "mode", "n_scales") if c in df.columns]
    data = df[cols + [c for m in INTRINSIC for c in (m, f"{m}_std")]] if not df.empty else df
    caption = f"Intrinsic grounding diagnostics across registry scales. {_ACROSS_NOTE} {STAGE_NOTE}"
    return report_table(
        "intrinsic", "Intrinsic metrics", caption, data, _across_display(df, INTRINSIC)
    )


def headline_table(df: pd.DataFrame) -> Table:
    """Per (model, mode) pooled over scales: solve rate (Wilson CI), name accuracy, arg F1
    (bootstrap CIs), mean attempts to solve."""
    disp = _keys(df, ("model", "mode", "n"))
    rows = list(df.iterrows())
    disp["Solve rate, all outcomes [95% CI]"] = [
        fmt_ci(r["solve_rate"], r["solve_lo"], r["solve_hi"]) for _, r in rows
    ]
    disp["Name acc [95% CI]"] = [
        fmt_ci(r["name_acc"], r["name_acc_lo"], r["name_acc_hi"]) for _, r in rows
    ]
    disp["Arg F1 [95% CI]"] = [fmt_ci(r["arg_f1"], r["arg_f1_lo"], r["arg_f1_hi"]) for _, r in rows]
    disp["Mean attempts to solve"] = [
        fmt_pm(r["attempts_to_solve"], None, r["attempts_to_solve_n"], 2) for _, r in rows
    ]
    disp["Model errors"] = [str(int(r["n_errors"])) for _, r in rows]
    caption = (
        "Headline results per model and feedback mode, pooled over all scales. Solve rate: "
        "passes all three SAAG stages and matches the gold name within the attempt budget "
        "(95% Wilson interval). Name accuracy and argument F1 with 95% bootstrap intervals. "
        f"{EXTRINSIC_NOTE} Mean attempts is over solved outcomes (n)."
    )
    data = (
        df[
            [
                c
                for c in df.columns
                if c == "model"
                or c == "mode"
                or c
                in (
                    "n",
                    "n_errors",
                    "solved",
                    "solve_n",
                    "solve_rate",
                    "solve_lo",
                    "solve_hi",
                    "name_acc",
                    "name_acc_lo",
                    "name_acc_hi",
                    "arg_f1",
                    "arg_f1_lo",
                    "arg_f1_hi",
                    "attempts_to_solve",
                    "attempts_to_solve_n",
                )
            ]
        ]
        if not df.empty
        else df
    )
    return report_table("headline", "Summary", caption, data, disp)


def cumulative_table(df: pd.DataFrame) -> Table:
    """Cumulative solve rate by attempt, one column per attempt (paper Fig. 3 as a table)."""
    if df.empty:
        disp = pd.DataFrame(columns=["model", "mode", "scale", "n"])
    else:
        wide = df.pivot_table(
            index=["model", "mode", "scale", "n"], columns="attempt", values="rate", sort=False
        ).reset_index()
        wide.columns = [c if isinstance(c, str) else f"@{c}" for c in wide.columns]
        disp = wide.copy()
        for c in disp.columns:
            if c.startswith("@"):
                disp[c] = [fmt_num(v) for v in disp[c]]
        disp["n"] = [str(int(v)) for v in disp["n"]]
    caption = (
        "Cumulative solve rate: share of outcomes (cases with a gold call) solved at or before "
        "attempt k; direct mode has one attempt and stays flat. n is the number of outcomes."
    )
    return report_table("cumulative_solve", "Cumulative solve rate by attempt", caption, df, disp)


def failure_table(df: pd.DataFrame) -> Table:
    """Where the first attempt failed: stage shares and failure-kind shares per model/scale."""
    disp = _keys(df, ("model", "scale", "n"))
    for s in STAGE_LABELS:
        disp[s] = [f"{fmt_num(r[s])} ({int(r[f'n_{s}'])})" for _, r in df.iterrows()]
    for k in FailureKind:
        if k.value in df.columns:  # a guard-only kind only when a case shows it
            disp[k.value] = [
                f"{fmt_num(r[k.value])} ({int(r[f'n_{k.value}'])})" for _, r in df.iterrows()
            ]
    caption = (
        "First-attempt failure breakdown per case (attempt 1 is shared by all modes): share "
        "(count) of cases that passed, failed first at stage 1, 2 or 3, or got no reply "
        "(error); and the share of cases showing each failure kind at the failing stage "
        "(a case may show several kinds). Scale 'all' pools the scales."
    )
    return report_table("failure_breakdown", "First-failure breakdown", caption, df, disp)


def overcorrection_table(df: pd.DataFrame) -> Table:
    """Overcorrection per (model, mode)."""
    disp = _keys(df, ("model", "mode", "n"))
    rows = list(df.iterrows())
    disp["Gold name lost"] = [
        f"{int(r['name_lost'])}/{int(r['name_base'])} = {fmt_ci(r['name_rate'], r['name_lo'], r['name_hi'])}"
        for _, r in rows
    ]
    disp["Gold args lost"] = [
        f"{int(r['args_lost'])}/{int(r['args_base'])} = {fmt_ci(r['args_rate'], r['args_lo'], r['args_hi'])}"
        for _, r in rows
    ]
    disp["F1 final - first [95% CI]"] = [
        fmt_ci(r["f1_delta"], r["f1_delta_lo"], r["f1_delta_hi"]) for _, r in rows
    ]
    caption = (
        "Overcorrection: among outcomes whose first attempt had the gold name (resp. gold "
        "arguments: precision = recall = 1), the share whose final attempt no longer does "
        "(95% Wilson interval); and the mean change of argument F1 from the first to the final "
        "attempt (95% bootstrap interval). Outcomes that ended in a model error are left out."
    )
    return report_table("overcorrection", "Overcorrection", caption, df, disp)


#: :data:`callscope.report.revisions.KEPT_ITEMS` -> column label
KEPT_LABELS: dict[str, str] = {
    "stage1": "Stage 1 (name in registry)",
    "stage2": "Stage 2 (schema)",
    "stage3": "Stage 3 (grounded)",
    "name": "Gold name",
    "args": "Gold args",
}


def revision_table(df: pd.DataFrame) -> Table:
    """Per (model, mode): what the loop's revisions lost and gained, by stage and against the
    gold (:func:`callscope.report.aggregate.revision_tradeoff`), and the overcorrection rate."""
    disp = _keys(df, ("model", "mode", "n"))
    rows = list(df.iterrows())
    disp["Overcorrection [95% Wilson]"] = [
        f"{int(r['overcorrected'])} = "
        + fmt_ci(r["overcorrection"], r["overcorrection_lo"], r["overcorrection_hi"])
        for _, r in rows
    ]
    for item in KEPT_ITEMS:
        disp[f"{KEPT_LABELS[item]}: lost / gained"] = [
            f"{int(r[f'{item}_lost'])} / {int(r[f'{item}_gained'])} of {int(r[f'{item}_n'])}"
            for _, r in rows
        ]
    caption = (
        "The trade-off of each loop mode: an item is lost when some attempt before the loop's "
        "answer had it right and the answer does not (a revision moved it away: the SAAG "
        "paper's overcorrection, over every revision), gained when attempt 1 lacked it and the "
        "answer has it. Items: passing stage 1, 2, 3 of the cascade (no gold needed), the gold "
        "name and the gold arguments (precision = recall = 1). Overcorrection: outcomes whose "
        "answer lost any item, over n (95% Wilson). The answer is the last attempt, or in the "
        "gated modes the best so far. Outcomes that ended in a model error are left out."
    )
    return report_table("revisions", "Revisions: lost and gained", caption, df, disp)


def paired_table(df: pd.DataFrame) -> Table:
    """Paired differences between two modes on the same cases
    (:func:`callscope.report.paired_modes.paired_modes`)."""
    disp = _keys(df, ("model", "base", "other", "metric", "n"))
    rows = list(df.iterrows())
    disp["base value"] = [fmt_num(r["base_value"]) for _, r in rows]
    disp["other value"] = [fmt_num(r["other_value"]) for _, r in rows]
    disp["other − base [95% paired]"] = [fmt_ci(r["diff"], r["lo"], r["hi"]) for _, r in rows]
    disp["cases up / down"] = [f"{int(r['better'])} / {int(r['worse'])}" for _, r in rows]
    caption = (
        "Paired differences between two feedback modes on the same cases: 0/1 metrics with "
        "Newcombe's paired interval (method 10), means with a bootstrap of the per-case "
        "differences; 'cases up / down': cases where the second mode's value is higher / lower."
    )
    return report_table("paired_modes", "Paired mode differences", caption, df, disp)


def errors_table(df: pd.DataFrame) -> Table:
    disp = df.astype(str) if not df.empty else df
    caption = "Outcomes that ended in a model error, by error kind."
    return report_table("errors", "Model errors", caption, df, disp)
