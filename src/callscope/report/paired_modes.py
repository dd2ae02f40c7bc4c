"""Two feedback modes compared on the same cases: per model and metric, ``other − base``
with a paired 95% interval (:func:`paired_modes`), from the per-case values of
:data:`PAIRED_METRICS` (:func:`case_value`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pandas as pd

from callscope.core.stats import bootstrap_ci, newcombe_paired
from callscope.report.aggregate import order_free
from callscope.report.facts import OutcomeFacts, Outcomeish, as_facts, outcome_facts
from callscope.report.outcome import EXTRINSIC, INTRINSIC

#: (key, label, kind) of the per-case values :func:`paired_modes` compares: ``rate`` values
#: are 0/1 (Newcombe's paired interval), ``mean`` values get a bootstrap of the differences
PAIRED_METRICS: tuple[tuple[str, str, str], ...] = (
    ("solve_rate", "Solve", "rate"),
    ("name_acc", "Name acc", "rate"),
    ("arg_precision", "Arg P", "mean"),
    ("arg_recall", "Arg R", "mean"),
    ("arg_f1", "Arg F1", "mean"),
    ("vhr", "VHR", "mean"),
    ("overcorrection", "Overcorr.", "rate"),
    ("attempts", "Attempts", "mean"),
)


def case_value(o: Outcomeish, key: str) -> float | None:
    """One outcome's value of a :data:`PAIRED_METRICS` key (None where undefined): solved,
    the extrinsic metrics (:func:`callscope.report.outcome.extrinsic_value`), VHR of the
    answer (where stage 3 ran), :func:`callscope.report.revisions.lost_any`, and the
    attempts the loop made."""
    f = o if isinstance(o, OutcomeFacts) else outcome_facts(o)
    if key == "solve_rate":
        return (1.0 if f.solved else 0.0) if f.has_gold else None
    if key in EXTRINSIC:
        return f.extrinsic[EXTRINSIC.index(key)]
    if key == "overcorrection":
        return None if f.error else float(f.lost_any)
    if key == "attempts":
        return float(f.n_attempts or 0)
    return f.intrinsic[INTRINSIC.index(key)]


def paired_modes(
    outcomes: Iterable[Outcomeish],
    base: str,
    other: str,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per model and :data:`PAIRED_METRICS` metric: ``other − base`` on the cases both modes
    ran (paired by ``case_id``), with a paired 95% interval: Newcombe's method 10
    (:func:`callscope.core.stats.newcombe_paired`) for 0/1 values, else a percentile
    bootstrap of the per-case differences (:func:`callscope.core.stats.bootstrap_ci`).
    Columns: model, base, other, metric, n (pairs where both values exist), base_value,
    other_value, diff, lo, hi, better / worse (cases where ``other`` is above / below)."""
    by: dict[tuple[str, str], dict[str, OutcomeFacts]] = {}
    for f in as_facts(outcomes):
        by.setdefault((f.model, f.mode), {})[f.case_id] = f
    rows = []
    for model in sorted({m for m, _ in by}):
        a, b = by.get((model, base), {}), by.get((model, other), {})
        shared = sorted(set(a) & set(b))
        if not shared:
            continue
        for key, label, kind in PAIRED_METRICS:
            pairs = [
                (x, y)
                for c in shared
                if (x := case_value(a[c], key)) is not None
                and (y := case_value(b[c], key)) is not None
            ]
            row: dict[str, Any] = {
                "model": model,
                "base": base,
                "other": other,
                "metric": label,
                "key": key,
                "n": len(pairs),
                "better": sum(1 for x, y in pairs if y > x),
                "worse": sum(1 for x, y in pairs if y < x),
            }
            if not pairs:
                row.update(base_value=math.nan, other_value=math.nan, diff=math.nan)
                row.update(lo=math.nan, hi=math.nan)
            elif kind == "rate":
                both = sum(1 for x, y in pairs if x and y)
                only_other = sum(1 for x, y in pairs if y and not x)
                only_base = sum(1 for x, y in pairs if x and not y)
                theta, lo, hi = newcombe_paired(
                    both, only_other, only_base, len(pairs) - both - only_other - only_base
                )
                row.update(base_value=(both + only_base) / len(pairs))
                row.update(other_value=(both + only_other) / len(pairs), diff=theta, lo=lo, hi=hi)
            else:
                diffs = [y - x for x, y in pairs]
                lo, hi = bootstrap_ci(order_free(diffs), n_boot=n_boot, seed=seed)
                row.update(base_value=sum(x for x, _ in pairs) / len(pairs))
                row.update(other_value=sum(y for _, y in pairs) / len(pairs))
                row.update(diff=sum(diffs) / len(pairs), lo=lo, hi=hi)
            rows.append(row)
    return pd.DataFrame(rows)
