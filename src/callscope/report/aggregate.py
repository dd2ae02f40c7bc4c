"""Aggregation of a run's outcomes into the SAAG paper's tables (pure functions).

Input: outcome dicts (:func:`callscope.report.load.load_outcomes`) or their compact
:class:`~callscope.report.facts.OutcomeFacts` (:func:`callscope.report.load.load_facts`);
every function takes either. What one outcome counts as (error, gold, solved, each metric's
value, attempt 1's stage and failure kinds) is defined once in :mod:`callscope.report.outcome`
and :mod:`callscope.report.revisions`; this module groups and counts.

Conventions a reader of the tables relies on:

* **Intrinsic metrics** (FNEM, NCS, RPR, PDS, SPR, AVEM, QSLO, VHR) are taken from each
  outcome's final attempt and averaged only over the outcomes where the metric is defined:
  the cascade halts at the first failing stage, so later-stage metrics are *stage-
  conditional*. Every mean comes with its row count ``<metric>_n``. FNEM is reported as the
  rate of FNEM = 1 (the paper's -1 "no name parsed" and 0 "not in the registry" both count 0).
  Outcomes that ended in a model error have no final prediction and are left out.
* **Extrinsic metrics** (name accuracy, argument precision, recall, F1) and the solve rate
  are over *all* outcomes of cases that have a gold call; an outcome that ended in a model
  error counts as a failure with all four metrics 0 and unsolved.
* Per-scale ``std`` is the population std over rows (paper Appendix E); across scales the
  value is the mean of the per-scale values ± their *sample* std (paper Tables 2, 3, 8, 12, 16).
* ``scale`` is a string label: the registry scale (``"5"``), ``"-"`` for cases without one,
  and ``"all"`` for rows pooled over scales.
* Failure kinds are :class:`callscope.records.FailureKind`, in cascade order.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from callscope.core.stats import bootstrap_ci, mean_sample_std, mean_std, wilson
from callscope.records import FailureKind
from callscope.report.facts import OutcomeFacts, Outcomeish, as_facts
from callscope.report.outcome import (
    ALL,
    EXTRINSIC,
    INTRINSIC,
    STAGE_LABELS,
    mode_sort_key,
    scale_sort_key,
)
from callscope.report.revisions import KEPT_ITEMS
from callscope.saag.metrics import METRIC_SPECS

#: metric key -> table label (``fnem`` -> ``FNEM``, ``name_acc`` -> ``Name acc``...)
METRIC_LABELS: dict[str, str] = {m.key: m.label for m in METRIC_SPECS}


# --------------------------------------------------------------------------- helpers


def _group(
    outcomes: Iterable[OutcomeFacts], keys: Sequence[str]
) -> dict[tuple[str, ...], list[OutcomeFacts]]:
    groups: dict[tuple[str, ...], list[OutcomeFacts]] = {}
    for f in outcomes:
        key = tuple(str(getattr(f, k)) for k in keys)
        groups.setdefault(key, []).append(f)
    return groups


def _sorted_keys(keys: Iterable[tuple[str, ...]], names: Sequence[str]) -> list[tuple[str, ...]]:
    def key(k: tuple[str, ...]) -> tuple[Any, ...]:
        parts: list[Any] = []
        for name, v in zip(names, k, strict=True):
            if name == "scale":
                parts.append(scale_sort_key(v))
            elif name == "mode":
                parts.append(mode_sort_key(v))
            else:
                parts.append(v)
        return tuple(parts)

    return sorted(keys, key=key)


def order_free(values: Iterable[float]) -> list[float]:
    """``values`` sorted (NaN last), so that a bootstrap over them depends only on which
    values there are, never on the order the rows came in (a resumed or concurrent run
    stores rows in another order; the resampled indices must pick the same values)."""
    return sorted(values, key=lambda v: (math.isnan(v), 0.0 if math.isnan(v) else v))


def metric_interval(key: str, values: list[float], n_boot: int, seed: int) -> tuple[float, float]:
    """The 95% interval a report gives metric ``key`` over its per-outcome ``values``: Wilson
    for the solve rate (``values`` are 0/1: one per gold outcome), a percentile bootstrap
    over :func:`order_free` values for every other metric (intrinsic and extrinsic, whose
    per-outcome values may be fractions). The one owner of that choice: the report's tables
    and ``callscope compare`` both call it, so a figure has one interval wherever it is shown.

    >>> metric_interval("solve_rate", [1.0, 1.0, 0.0], 200, 0) == wilson(2, 3)
    True
    """
    if key == "solve_rate":
        return wilson(int(sum(values)), len(values))
    return bootstrap_ci(order_free(values), n_boot=n_boot, seed=seed)


def _summary(values: list[float], prefix: str, n_boot: int, seed: int) -> dict[str, float]:
    mean, std = mean_std(values)
    lo, hi = metric_interval(prefix, values, n_boot, seed)
    return {
        prefix: mean,
        f"{prefix}_std": std,
        f"{prefix}_n": len(values),
        f"{prefix}_lo": lo,
        f"{prefix}_hi": hi,
    }


# --------------------------------------------------------------------------- per-scale


def group_metrics(rows: Sequence[Outcomeish], n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """All metrics of one group of outcomes (see the module docstring for the conventions).

    Keys: ``n``, ``n_errors``, per metric ``m, m_std, m_n, m_lo, m_hi`` (mean, population std,
    rows behind the mean, bootstrap CI); ``solved, solve_n, solve_rate, solve_lo, solve_hi``
    (Wilson); ``attempts_to_solve`` (+ ``_std``, ``_n``): mean attempts over solved outcomes."""
    rows = as_facts(rows)
    out: dict[str, Any] = {"n": len(rows), "n_errors": sum(f.error for f in rows)}
    for i, m in enumerate(INTRINSIC):
        vals = [v for f in rows if (v := f.intrinsic[i]) is not None]
        out.update(_summary(vals, m, n_boot, seed))
    for i, m in enumerate(EXTRINSIC):
        vals = [v for f in rows if (v := f.extrinsic[i]) is not None]
        out.update(_summary(vals, m, n_boot, seed))
    gold_rows = [f for f in rows if f.has_gold]
    solved = sum(f.solved for f in gold_rows)
    lo, hi = metric_interval("solve_rate", [float(f.solved) for f in gold_rows], n_boot, seed)
    out.update(
        solved=solved,
        solve_n=len(gold_rows),
        solve_rate=solved / len(gold_rows) if gold_rows else math.nan,
        solve_lo=lo,
        solve_hi=hi,
    )
    at = [float(f.solved_at) for f in gold_rows if f.solved]
    mean, std = mean_std(at)
    out.update(attempts_to_solve=mean, attempts_to_solve_std=std, attempts_to_solve_n=len(at))
    return out


def per_scale(outcomes: Iterable[Outcomeish], n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per (model, scale, mode): the paper's per-scale tables (Appendix E)."""
    groups = _group(as_facts(outcomes), ("model", "scale", "mode"))
    names = ("model", "scale", "mode")
    rows = [
        {**dict(zip(names, k, strict=True)), **group_metrics(groups[k], n_boot, seed)}
        for k in _sorted_keys(groups, names)
    ]
    return pd.DataFrame(rows)


def headline(outcomes: Iterable[Outcomeish], n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per (model, mode) pooled over all scales (same columns as :func:`per_scale`,
    with ``scale == "all"``): the report's summary table."""
    groups = _group(as_facts(outcomes), ("model", "mode"))
    rows = [
        {"model": k[0], "scale": ALL, "mode": k[1], **group_metrics(groups[k], n_boot, seed)}
        for k in _sorted_keys(groups, ("model", "mode"))
    ]
    return pd.DataFrame(rows)


#: every metric of :func:`across_scales`: intrinsic, extrinsic, then the loop outcomes
ACROSS_METRICS: tuple[str, ...] = tuple(m.key for m in METRIC_SPECS)


def across_scales(per_scale_df: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, mode): each metric's mean over the per-scale values ± the *sample*
    std (ddof=1) of those values (paper Tables 2, 3, 8, 12, 16); ``n_scales`` says how many
    scales contributed (std is NaN with one). Rows with scale ``"-"`` count as one scale."""
    rows = []
    if per_scale_df.empty:
        return pd.DataFrame(rows)
    keys = _sorted_keys(
        {(m, mo) for m, mo in zip(per_scale_df["model"], per_scale_df["mode"], strict=True)},
        ("model", "mode"),
    )
    for model, mode in keys:
        sub = per_scale_df[(per_scale_df["model"] == model) & (per_scale_df["mode"] == mode)]
        row: dict[str, Any] = {
            "model": model,
            "mode": mode,
            "n_scales": len(sub),
            "scales": ",".join(sub["scale"]),
        }
        for m in ACROSS_METRICS:
            mean, std = mean_sample_std(sub[m].tolist())
            row[m] = mean
            row[f"{m}_std"] = std
            row[f"{m}_scales"] = int(sub[m].notna().sum())
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- cumulative solve


def cumulative_solve(
    outcomes: Iterable[Outcomeish], max_attempts: dict[str, int] | int | None = None
) -> pd.DataFrame:
    """Long table (model, mode, scale, attempt, solved, n, rate): the share of outcomes (of
    gold cases) solved at or before each attempt 1..max (paper Fig. 3). ``max_attempts`` per
    model (or one int); default the most attempts any outcome of that model used. Direct mode
    is extended flat to the same horizon so it can serve as the baseline."""
    facts = [f for f in as_facts(outcomes) if f.has_gold]
    horizon: dict[str, int] = {}
    for f in facts:
        horizon[f.model] = max(horizon.get(f.model, 1), int(f.n_attempts or 1))
    if isinstance(max_attempts, int):
        horizon = dict.fromkeys(horizon, max_attempts)
    elif isinstance(max_attempts, dict):
        horizon = {m: max_attempts.get(m, h) for m, h in horizon.items()}
    names = ("model", "mode", "scale")
    groups = _group(facts, names)
    rows = []
    for key in _sorted_keys(groups, names):
        g = groups[key]
        at = [f.solved_at for f in g if f.solved]
        for k in range(1, horizon[key[0]] + 1):
            solved = sum(1 for a in at if a <= k)
            rows.append(
                {
                    **dict(zip(names, key, strict=True)),
                    "attempt": k,
                    "solved": solved,
                    "n": len(g),
                    "rate": solved / len(g),
                }
            )
    return pd.DataFrame(rows, columns=[*names, "attempt", "solved", "n", "rate"])


# --------------------------------------------------------------------------- first failures


def _one_per_case(outcomes: Iterable[OutcomeFacts]) -> list[OutcomeFacts]:
    """Attempt 1 is shared by all modes: keep one outcome per (model, case), preferring one
    whose first attempt exists."""
    best: dict[tuple[str, str], OutcomeFacts] = {}
    for f in outcomes:
        key = (f.model, f.case_id)
        if key not in best or (not best[key].has_first and f.has_first):
            best[key] = f
    return list(best.values())


def failure_breakdown(outcomes: Iterable[Outcomeish]) -> pd.DataFrame:
    """Per (model, scale) plus a pooled ``scale == "all"`` row per model: how each case's
    first attempt ended (shares of ``passed``, ``stage1``..``stage3``, ``error``; they sum to 1)
    and the share of cases showing each failure kind (a case may show several, so kind shares
    need not sum to the failure share). Counts are in the ``n_<label>`` columns; a kind only
    the guard decides (``KindInfo.guard_only``: ASK) has its columns only when a case shows it."""
    cases = _one_per_case(as_facts(outcomes))
    seen = {k for f in cases for k in f.first_kinds}
    shown = [k for k in FailureKind if not k.info.guard_only or k in seen]
    rows = []
    by_model = _group(cases, ("model",))
    for (model,) in _sorted_keys(by_model, ("model",)):
        per = _group(by_model[(model,)], ("scale",))
        keys = _sorted_keys(per, ("scale",))
        groups = [(k[0], per[k]) for k in keys]
        if len(groups) > 1:
            groups.append((ALL, by_model[(model,)]))
        for scale, g in groups:
            stages = Counter(f.first_stage for f in g)
            kinds = Counter(k for f in g for k in f.first_kinds)
            row: dict[str, Any] = {"model": model, "scale": scale, "n": len(g)}
            for s in STAGE_LABELS:
                row[s] = stages[s] / len(g)
                row[f"n_{s}"] = stages[s]
            for k in shown:
                row[k.value] = kinds[k] / len(g)
                row[f"n_{k.value}"] = kinds[k]
            rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- overcorrection


def overcorrection(
    outcomes: Iterable[Outcomeish], n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """Per (model, mode): how often the loop moved a correct first attempt away.

    * ``name_lost / name_base``: among outcomes whose attempt 1 had the gold name, those whose
      final attempt does not (rate with Wilson CI);
    * ``args_lost / args_base``: likewise for gold arguments (attempt 1 precision = recall = 1);
    * ``f1_delta``: mean of final F1 − first F1 with a bootstrap CI.

    Only outcomes of gold cases that finished without a model error and have a first attempt
    are used (``n``)."""
    names = ("model", "mode")
    usable = [f for f in as_facts(outcomes) if f.overcorrection is not None]
    groups = _group(usable, names)
    rows = []
    for key in _sorted_keys(groups, names):
        g = groups[key]
        row: dict[str, Any] = {**dict(zip(names, key, strict=True)), "n": len(g)}
        oc = [f.overcorrection for f in g]
        name_base = [x for x in oc if x[0]]
        name_lost = sum(1 for x in name_base if not x[1])
        args_base = [x for x in oc if x[2]]
        args_lost = sum(1 for x in args_base if not x[3])
        for label, lost, base in (("name", name_lost, name_base), ("args", args_lost, args_base)):
            lo, hi = wilson(lost, len(base))
            row.update(
                {
                    f"{label}_base": len(base),
                    f"{label}_lost": lost,
                    f"{label}_rate": lost / len(base) if base else math.nan,
                    f"{label}_lo": lo,
                    f"{label}_hi": hi,
                }
            )
        deltas = [x[4] for x in oc]
        mean, _ = mean_std(deltas)
        lo, hi = bootstrap_ci(order_free(deltas), n_boot=n_boot, seed=seed)
        row.update(f1_delta=mean, f1_delta_lo=lo, f1_delta_hi=hi)
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- errors


def errors_by_kind(outcomes: Iterable[Outcomeish]) -> pd.DataFrame:
    """Counts of outcomes that ended in a model error, per (model, mode, error_kind)."""
    counts = Counter(
        (f.model, f.mode, f.error_kind or "error") for f in as_facts(outcomes) if f.error
    )
    rows = [
        {"model": m, "mode": mo, "error_kind": k, "count": c}
        for (m, mo, k), c in sorted(
            counts.items(), key=lambda kv: (kv[0][0], mode_sort_key(kv[0][1]), kv[0][2])
        )
    ]
    return pd.DataFrame(rows, columns=["model", "mode", "error_kind", "count"])


# --------------------------------------------------------------------------- revisions (issue 17)


def revision_tradeoff(outcomes: Iterable[Outcomeish]) -> pd.DataFrame:
    """Per (model, mode): what the loop's revisions lost and gained, by stage and against the
    gold (:func:`callscope.report.revisions.revision_flags`), each as a count and a rate over
    the ``n`` outcomes (Wilson 95% intervals, so modes run on the same cases share the
    denominator); ``overcorrection``: the share of outcomes whose answer lost anything
    (:func:`callscope.report.revisions.lost_any`). Columns per item of :data:`KEPT_ITEMS`
    ``<item>_lost, <item>_lost_rate, <item>_lost_lo, <item>_lost_hi`` and the same for
    ``gained``, with ``<item>_n`` outcomes where the item can be told. Outcomes that ended in
    a model error or have no scored attempt are left out."""
    names = ("model", "mode")
    usable = [f for f in as_facts(outcomes) if f.revisions is not None]
    groups = _group(usable, names)
    rows = []
    for key in _sorted_keys(groups, names):
        g = groups[key]
        flags = [f.revisions for f in g]
        row: dict[str, Any] = {**dict(zip(names, key, strict=True)), "n": len(g)}
        for i, item in enumerate(KEPT_ITEMS):
            told = [fl[i] for fl in flags if fl[i] is not None]
            row[f"{item}_n"] = len(told)
            for j, what in enumerate(("lost", "gained")):
                k = sum(1 for t in told if t[j])
                lo, hi = wilson(k, len(told))
                row.update(
                    {
                        f"{item}_{what}": k,
                        f"{item}_{what}_rate": k / len(told) if told else math.nan,
                        f"{item}_{what}_lo": lo,
                        f"{item}_{what}_hi": hi,
                    }
                )
        k = sum(1 for fl in flags if any(x[0] for x in fl if x is not None))
        lo, hi = wilson(k, len(g))
        row.update(overcorrected=k, overcorrection=k / len(g), overcorrection_lo=lo)
        row["overcorrection_hi"] = hi
        rows.append(row)
    return pd.DataFrame(rows)
