"""``compare_runs(run_a, run_b)``: headline metrics of two runs side by side.

Rows are matched on (model, mode). When each run holds exactly one model and the two
differ (comparing two models), rows are matched on mode alone and ``model`` reads
``"<a> vs <b>"``. Each run's value carries the interval the run's own report gives it
(:func:`callscope.report.aggregate.metric_interval`: Wilson for the solve rate, a bootstrap
over the per-outcome values for the other metrics), so a figure reads the same here and in
``callscope report``. Every difference ``B - A`` carries an unpaired bootstrap 95% interval,
and only when the two runs hold cases in common: two runs over different cases (no case id
in common) measure different things, so their difference gets no interval and the note says
so instead of testing it. ``note`` says whether A's and B's intervals overlap and whether the
difference's interval excludes 0.

``compare_many(outcome_groups(runs), baseline)``: any number of runs or models in one store
(one group per model; labelled ``<run folder>:<model>`` when a model is in several runs):
headline metrics and the first attempt's stage-failure mix per model with intervals, and the
paired differences of each model against the baseline on the cases both hold (Newcombe's
paired interval for rates, a bootstrap of the per-case differences for means).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console

from callscope.core.stats import bootstrap_ci, bootstrap_diff_ci, newcombe_paired, wilson
from callscope.core.table import Table, pct_ci
from callscope.report.aggregate import metric_interval
from callscope.report.load import load_outcomes
from callscope.report.outcome import (
    EXTRINSIC,
    STAGE_LABELS,
    extrinsic_value,
    first_stage,
    has_gold,
    intrinsic_value,
    is_solved,
    mode_sort_key,
)
from callscope.saag.metrics import metric

#: the metrics compared, keys of :data:`callscope.saag.metrics.METRIC_SPECS`
HEADLINE_KEYS: tuple[str, ...] = ("solve_rate", "name_acc", "arg_f1", "vhr", "avem")

#: (metric, label), derived from the specs: the label is the spec's ``short`` one
HEADLINE_METRICS: tuple[tuple[str, str], ...] = tuple((k, metric(k).short) for k in HEADLINE_KEYS)

#: the note of a pair of runs that share no case: no difference is tested
NO_SHARED_CASE = "no case in common: different cases, difference not tested"


def metric_values(outcomes: Sequence[dict[str, Any]], key: str) -> list[float]:
    """Per-outcome values behind a headline metric (aggregate's conventions: solve rate and
    extrinsic over gold cases with errors as 0; VHR/AVEM only where defined)."""
    if key == "solve_rate":
        return [1.0 if is_solved(o) else 0.0 for o in outcomes if has_gold(o)]
    if key in EXTRINSIC:
        return [v for o in outcomes if (v := extrinsic_value(o, key)) is not None]
    return [v for o in outcomes if (v := intrinsic_value(o, key)) is not None]


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
        keys = sorted({o["mode"] for o in a} | {o["mode"] for o in b}, key=mode_sort_key)
        return [
            (label, m, [o for o in a if o["mode"] == m], [o for o in b if o["mode"] == m])
            for m in keys
        ]
    keys = sorted(
        {(o["model"], o["mode"]) for o in [*a, *b]}, key=lambda k: (k[0], mode_sort_key(k[1]))
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
        shared = bool({o["case_id"] for o in oa} & {o["case_id"] for o in ob})
        for key, label in HEADLINE_METRICS:
            va, vb = metric_values(oa, key), metric_values(ob, key)
            ia = metric_interval(key, va, n_boot, seed)
            ib = metric_interval(key, vb, n_boot, seed)
            ma, mb = _mean(va), _mean(vb)
            dlo, dhi = (
                bootstrap_diff_ci(va, vb, n_boot=n_boot, seed=seed)
                if shared
                else (math.nan, math.nan)
            )
            overlap = _overlap(ia, ib)
            if overlap is None:
                note = "missing in one run"
            elif not shared:
                note = NO_SHARED_CASE
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
    return compare_outcomes(load_outcomes(run_a), load_outcomes(run_b), n_boot, seed)


def _f(x: float) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def comparison_table(df: pd.DataFrame, title: str = "A vs B") -> Table:
    """:func:`compare_runs`' result as a :class:`~callscope.core.table.Table`: per model, mode
    and metric, A and B with their intervals and ``n``, the difference B − A with its
    interval, and the note."""
    columns = ("model", "mode", "metric", "A [95% CI]", "B [95% CI]", "B − A [95% CI]", "note")
    rows = [
        [
            r["model"],
            r["mode"],
            r["metric"],
            f"{_ci(r['a'], r['a_lo'], r['a_hi'])} (n={r['n_a']})",
            f"{_ci(r['b'], r['b_lo'], r['b_hi'])} (n={r['n_b']})",
            _ci(r["diff"], r["diff_lo"], r["diff_hi"]),
            r["note"],
        ]
        for r in df.to_dict("records")
    ]
    return Table(
        columns, rows, title=title, align="".join("r" if "CI" in c else "l" for c in columns)
    )


def print_comparison(
    df: pd.DataFrame, console: Console | None = None, title: str = "A vs B"
) -> None:
    """Print the comparison with rich (to stdout unless a console is given)."""
    (console or Console()).print(comparison_table(df, title).to_rich())


# --------------------------------------------------------------------------- N runs / models

#: the first-attempt stage labels of the stage-failure mix (aggregate's)
STAGE_MIX: tuple[str, ...] = STAGE_LABELS


def outcome_groups(run_dirs: Sequence[str | Path]) -> dict[str, list[dict[str, Any]]]:
    """``{label: outcomes}`` per model of every run directory, in the order given (models
    sorted within a run). The label is the model spec; when the same model is in several
    runs it is ``<run folder>:<model>``. Raises FileNotFoundError without a store."""
    per_run = [(Path(d), load_outcomes(d)) for d in run_dirs]
    seen: dict[str, int] = {}
    for _, outcomes in per_run:
        for m in {o["model"] for o in outcomes}:
            seen[m] = seen.get(m, 0) + 1
    groups: dict[str, list[dict[str, Any]]] = {}
    for run_dir, outcomes in per_run:
        for m in sorted({o["model"] for o in outcomes}):
            label = m if seen[m] == 1 else f"{run_dir.name}:{m}"
            while label in groups:  # the same folder name twice
                label = f"{run_dir}:{m}"
            groups[label] = [o for o in outcomes if o["model"] == m]
    return groups


def _case_key(o: dict[str, Any]) -> tuple[str, str]:
    return str(o["mode"]), str(o["case_id"])


def paired_values(
    a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], key: str
) -> list[tuple[float, float]]:
    """``(a, b)`` values of ``key`` on the cases both hold (same mode and case id) where the
    metric is defined in both, in case-id order."""
    by_a = {_case_key(o): o for o in a}
    by_b = {_case_key(o): o for o in b}
    pairs = []
    for k in sorted(set(by_a) & set(by_b)):
        va, vb = metric_values([by_a[k]], key), metric_values([by_b[k]], key)
        if va and vb:
            pairs.append((va[0], vb[0]))
    return pairs


def compare_many(
    groups: dict[str, list[dict[str, Any]]],
    baseline: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """N models side by side (pure). Returns three tables:

    * ``metrics``: per (model, mode, metric) the value and its 95% interval (the report's,
      :func:`~callscope.report.aggregate.metric_interval`, as :func:`compare_outcomes`), ``n``;
    * ``stages``: per (model, mode) the share of outcomes whose first attempt passed the SAAG
      cascade or first failed at stage 1 / 2 / 3 or had no reply (``error``), each with its
      Wilson interval (:func:`callscope.core.stats.wilson`), ``n``;
    * ``paired``: per other model, mode and metric, the difference model − ``baseline``
      (default: the first model) on the cases both hold: 0/1 values with Newcombe's paired
      interval (:func:`callscope.core.stats.newcombe_paired`), other values with a bootstrap
      interval of the per-case differences; ``n`` = shared cases."""
    labels = list(groups)
    base = baseline if baseline is not None else (labels[0] if labels else None)
    if base is not None and base not in groups:
        raise ValueError(f"baseline {base!r} is not among the models: {', '.join(labels)}")
    metric_rows, stage_rows, paired_rows = [], [], []
    for label in labels:
        outs = groups[label]
        for mode in sorted({o["mode"] for o in outs}, key=mode_sort_key):
            of_mode = [o for o in outs if o["mode"] == mode]
            for key, name in HEADLINE_METRICS:
                vals = metric_values(of_mode, key)
                lo, hi = metric_interval(key, vals, n_boot, seed)
                metric_rows.append(
                    {
                        "model": label,
                        "mode": mode,
                        "metric": name,
                        "n": len(vals),
                        "value": _mean(vals),
                        "lo": lo,
                        "hi": hi,
                    }
                )
            firsts = [first_stage(o) for o in of_mode]
            row: dict[str, Any] = {"model": label, "mode": mode, "n": len(firsts)}
            for s in STAGE_MIX:
                k = sum(f == s for f in firsts)
                row[s] = k / len(firsts) if firsts else math.nan
                row[f"{s}_lo"], row[f"{s}_hi"] = wilson(k, len(firsts))
            stage_rows.append(row)
            if base is None or label == base:
                continue
            base_mode = [o for o in groups[base] if o["mode"] == mode]
            for key, name in HEADLINE_METRICS:
                pairs = paired_values(base_mode, of_mode, key)
                diff, lo, hi = _paired_diff(pairs, n_boot, seed)
                paired_rows.append(
                    {
                        "model": label,
                        "baseline": base,
                        "mode": mode,
                        "metric": name,
                        "n": len(pairs),
                        "diff": diff,
                        "lo": lo,
                        "hi": hi,
                    }
                )
    return pd.DataFrame(metric_rows), pd.DataFrame(stage_rows), pd.DataFrame(paired_rows)


def _paired_diff(
    pairs: Sequence[tuple[float, float]], n_boot: int, seed: int
) -> tuple[float, float, float]:
    """``(mean(b − a), lo, hi)`` of paired values; Newcombe when every value is 0 or 1 (a
    fractional per-case value, such as a multi-call name accuracy, is bootstrapped)."""
    if not pairs:
        return math.nan, math.nan, math.nan
    if all(v in (0.0, 1.0) for pair in pairs for v in pair):
        both = sum(1 for a, b in pairs if a and b)
        only_b = sum(1 for a, b in pairs if b and not a)
        only_a = sum(1 for a, b in pairs if a and not b)
        neither = len(pairs) - both - only_a - only_b
        return newcombe_paired(both, only_b, only_a, neither)
    diffs = [b - a for a, b in pairs]
    lo, hi = bootstrap_ci(diffs, n_boot=n_boot, seed=seed)
    return _mean(diffs), lo, hi


def _ci(value: float, lo: float, hi: float) -> str:
    return f"{_f(value)} [{_f(lo)}, {_f(hi)}]"


def many_tables(metrics: pd.DataFrame, stages: pd.DataFrame, paired: pd.DataFrame) -> list[Table]:
    """:func:`compare_many`'s three results as :class:`~callscope.core.table.Table`\\ s:
    headline metrics (models as rows, one column per metric), stage-failure mix, and the
    paired differences against the baseline."""
    names = [name for _, name in HEADLINE_METRICS]
    rows = []
    for (model, mode), g in metrics.groupby(["model", "mode"], sort=False):
        by = {r["metric"]: r for r in g.to_dict("records")}
        rows.append(
            [model, mode]
            + [
                f"{_ci(by[n]['value'], by[n]['lo'], by[n]['hi'])} (n={by[n]['n']})"
                if n in by
                else "–"
                for n in names
            ]
        )
    head = Table(
        ["model", "mode", *(f"{n} [95% CI]" for n in names)],
        rows,
        title="Headline metrics per model",
        caption="Rates with Wilson 95% intervals, means with bootstrap 95% intervals.",
        name="compare-metrics",
    )
    stage_t = Table(
        ["model", "mode", "n", *(f"{s} % [95% CI]" for s in STAGE_MIX)],
        [
            [r["model"], r["mode"], r["n"]]
            + [pct_ci(r[s], r[f"{s}_lo"], r[f"{s}_hi"]) if r["n"] else "n/a" for s in STAGE_MIX]
            for r in stages.to_dict("records")
        ],
        title="Stage-failure mix of the first attempt",
        caption="Share of cases whose first attempt passed the SAAG cascade or first failed at "
        "stage 1 (registry), 2 (structure), 3 (grounding), or had no reply; Wilson 95% intervals.",
        name="compare-stages",
    )
    pair_t = Table(
        ["model", "baseline", "mode", "metric", "shared cases", "model − baseline [95% CI]"],
        [
            [
                r["model"],
                r["baseline"],
                r["mode"],
                r["metric"],
                r["n"],
                _ci(r["diff"], r["lo"], r["hi"]),
            ]
            for r in paired.to_dict("records")
        ],
        title="Paired differences against the baseline",
        caption="On the cases both hold (same mode and case id): rates with Newcombe's paired "
        "95% interval, means with a bootstrap 95% interval of the per-case differences.",
        name="compare-paired",
        empty="(one model only: nothing to pair)",
    )
    return [head, stage_t, pair_t]
