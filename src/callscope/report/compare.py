"""``compare_runs(run_a, run_b)``: headline metrics of two runs side by side.

Rows are matched on (model, mode). When each run holds exactly one model and the two
differ (comparing two models), rows are matched on mode alone and ``model`` reads
``"<a> vs <b>"``. Rates (solve rate, name accuracy) carry Wilson 95% intervals; means
(argument F1, VHR, AVEM) carry bootstrap 95% intervals; every difference ``B - A`` carries
an unpaired bootstrap 95% interval. ``note`` says whether A's and B's intervals overlap and
whether the difference's interval excludes 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from callscope.core.stats import bootstrap_ci, bootstrap_diff_ci, wilson
from callscope.report import aggregate as agg
from callscope.saag.metrics import metric

#: the metrics compared, keys of :data:`callscope.saag.metrics.METRIC_SPECS`
HEADLINE_KEYS: tuple[str, ...] = ("solve_rate", "name_acc", "arg_f1", "vhr", "avem")

#: (metric, label, kind), derived from the specs: the label is the spec's ``short`` one; kind
#: "rate" (0/1 values) gets a Wilson interval, "mean" a bootstrap one
HEADLINE_METRICS: tuple[tuple[str, str, str], ...] = tuple(
    (k, metric(k).short, "rate" if metric(k).rate else "mean") for k in HEADLINE_KEYS
)


def metric_values(outcomes: Sequence[dict[str, Any]], key: str) -> list[float]:
    """Per-outcome values behind a headline metric (aggregate's conventions: solve rate and
    extrinsic over gold cases with errors as 0; VHR/AVEM only where defined)."""
    if key == "solve_rate":
        return [1.0 if agg.is_solved(o) else 0.0 for o in outcomes if agg.has_gold(o)]
    if key in agg.EXTRINSIC:
        return [v for o in outcomes if (v := agg.extrinsic_value(o, key)) is not None]
    return [v for o in outcomes if (v := agg.intrinsic_value(o, key)) is not None]


def _interval(values: list[float], kind: str, n_boot: int, seed: int) -> tuple[float, float]:
    if kind == "rate":
        return wilson(int(round(sum(values))), len(values))
    return bootstrap_ci(values, n_boot=n_boot, seed=seed)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool | None:
    if any(math.isnan(x) for x in (*a, *b)):
        return None
    return a[0] <= b[1] and b[0] <= a[1]


def _pairs(
    a: list[dict[str, Any]], b: list[dict[str, Any]]
) -> list[tuple[str, str, list[dict[str, Any]], list[dict[str, Any]]]]:
    models_a = sorted({o["model"] for o in a})
    models_b = sorted({o["model"] for o in b})
    if len(models_a) == 1 and len(models_b) == 1 and models_a != models_b:
        label = f"{models_a[0]} vs {models_b[0]}"
        keys = sorted({o["mode"] for o in a} | {o["mode"] for o in b}, key=agg.mode_sort_key)
        return [
            (label, m, [o for o in a if o["mode"] == m], [o for o in b if o["mode"] == m])
            for m in keys
        ]
    keys = sorted(
        {(o["model"], o["mode"]) for o in [*a, *b]}, key=lambda k: (k[0], agg.mode_sort_key(k[1]))
    )
    return [
        (
            m,
            mo,
            [o for o in a if (o["model"], o["mode"]) == (m, mo)],
            [o for o in b if (o["model"], o["mode"]) == (m, mo)],
        )
        for m, mo in keys
    ]


def compare_outcomes(
    a: list[dict[str, Any]], b: list[dict[str, Any]], n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """The comparison table for two lists of outcome dicts (pure; see the module docstring).

    Columns: model, mode, metric, n_a, a, a_lo, a_hi, n_b, b, b_lo, b_hi, diff (b - a),
    diff_lo, diff_hi, overlap (bool or None), note."""
    rows = []
    for model, mode, oa, ob in _pairs(a, b):
        for key, label, kind in HEADLINE_METRICS:
            va, vb = metric_values(oa, key), metric_values(ob, key)
            ia, ib = _interval(va, kind, n_boot, seed), _interval(vb, kind, n_boot, seed)
            ma, mb = _mean(va), _mean(vb)
            dlo, dhi = bootstrap_diff_ci(va, vb, n_boot=n_boot, seed=seed)
            overlap = _overlap(ia, ib)
            if overlap is None:
                note = "missing in one run"
            else:
                note = "intervals overlap" if overlap else "intervals do not overlap"
                if dlo > 0 or dhi < 0:
                    note += "; difference CI excludes 0"
            rows.append(
                {
                    "model": model,
                    "mode": mode,
                    "metric": label,
                    "n_a": len(va),
                    "a": ma,
                    "a_lo": ia[0],
                    "a_hi": ia[1],
                    "n_b": len(vb),
                    "b": mb,
                    "b_lo": ib[0],
                    "b_hi": ib[1],
                    "diff": mb - ma,
                    "diff_lo": dlo,
                    "diff_hi": dhi,
                    "overlap": overlap,
                    "note": note,
                }
            )
    return pd.DataFrame(rows)


def compare_runs(
    run_a: str | Path, run_b: str | Path, n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """Load two run directories and compare their headline metrics (see
    :func:`compare_outcomes` for the columns). Raises FileNotFoundError without a store."""
    return compare_outcomes(agg.load_outcomes(run_a), agg.load_outcomes(run_b), n_boot, seed)


def _f(x: float) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def comparison_table(df: pd.DataFrame, title: str = "A vs B") -> Table:
    """A rich table of :func:`compare_runs`' result."""
    t = Table(title=title)
    for col in ("model", "mode", "metric", "A [95% CI]", "B [95% CI]", "B − A [95% CI]", "note"):
        t.add_column(col, justify="right" if "CI" in col else "left")
    for r in df.to_dict("records"):
        t.add_row(
            str(r["model"]),
            str(r["mode"]),
            str(r["metric"]),
            f"{_f(r['a'])} [{_f(r['a_lo'])}, {_f(r['a_hi'])}] (n={r['n_a']})",
            f"{_f(r['b'])} [{_f(r['b_lo'])}, {_f(r['b_hi'])}] (n={r['n_b']})",
            f"{_f(r['diff'])} [{_f(r['diff_lo'])}, {_f(r['diff_hi'])}]",
            str(r["note"]),
        )
    return t


def print_comparison(
    df: pd.DataFrame, console: Console | None = None, title: str = "A vs B"
) -> None:
    """Print the comparison with rich (to stdout unless a console is given)."""
    (console or Console()).print(comparison_table(df, title))
