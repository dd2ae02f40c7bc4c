"""Aggregation of a run's outcomes into the SAAG paper's tables (pure functions over dicts).

Input: outcome dicts as yielded by :meth:`callscope.store.run_store.RunStore.outcomes` (keys
``model, case_id, mode, scale, n_attempts, solved_at, error, error_kind, final, first``),
optionally enriched by :func:`load_outcomes` with ``first_diagnosis`` (attempt 1's full
cascade diagnosis, for the stage-3 failure kinds) and ``has_gold``.

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
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from callscope.core.stats import bootstrap_ci, mean_sample_std, mean_std, newcombe_paired, wilson
from callscope.saag.metrics import EXTRINSIC_KEYS, INTRINSIC_KEYS, METRIC_SPECS, specs
from callscope.store.run_store import STORE_FILE, RunStore
from callscope.types import LOOP_MODES

OutcomeRow = dict[str, Any]

#: metric keys, from the one spec list :data:`callscope.saag.metrics.METRIC_SPECS`
INTRINSIC: tuple[str, ...] = INTRINSIC_KEYS
EXTRINSIC: tuple[str, ...] = EXTRINSIC_KEYS
#: metric key -> table label (``fnem`` -> ``FNEM``, ``name_acc`` -> ``Name acc``...)
METRIC_LABELS: dict[str, str] = {m.key: m.label for m in METRIC_SPECS}
#: failure kinds in cascade order (stage 1: wrong_name/no_name; 2: missing/spurious/drifted;
#: 3: numeric/hard/soft)
FAILURE_KINDS: tuple[str, ...] = (
    "wrong_name",
    "no_name",
    "missing",
    "spurious",
    "drifted",
    "numeric",
    "hard",
    "soft",
)
STAGE_LABELS: tuple[str, ...] = ("passed", "stage1", "stage2", "stage3", "error")
MODE_ORDER: tuple[str, ...] = LOOP_MODES
ALL = "all"
NO_SCALE = "-"

#: extrinsic metric -> its key in a score row, where the two differ (``name_acc`` ->
#: ``name_match``)
_EXTRINSIC_KEY = {m.key: m.row_key for m in specs("extrinsic") if m.row_key not in (None, m.key)}


# --------------------------------------------------------------------------- loading


def _open(run_dir: str | Path) -> RunStore:
    run_dir = Path(run_dir)
    if not (run_dir / STORE_FILE).is_file():
        raise FileNotFoundError(f"no run store at {run_dir / STORE_FILE}")
    return RunStore(run_dir)


def iter_outcomes(store: RunStore) -> Iterator[OutcomeRow]:
    """The outcomes of an open store one at a time (store order, the rows streamed), each
    with ``first_diagnosis`` (attempt 1's cascade diagnosis or None), ``trajectory``
    (:func:`trajectory_step` per scored attempt), ``final_diagnosis`` (the last attempt's)
    and ``has_gold`` added. Message histories are not read."""
    gold = {c.id: c.gold is not None for c in store.iter_cases()}
    for o in store.outcomes(stream=True):
        attempts = store.attempts(o["model"], o["case_id"], o["mode"], with_messages=False)
        o["first_diagnosis"] = attempts[0].get("diagnosis") if attempts else None
        o["trajectory"] = [
            trajectory_step(a["attempt"], a["row"]) for a in attempts if a.get("row")
        ]
        o["final_diagnosis"] = attempts[-1].get("diagnosis") if attempts else None
        o["has_gold"] = gold.get(o["case_id"], True)
        yield o


def load_outcomes(run_dir: str | Path) -> list[OutcomeRow]:
    """Every outcome of a run directory as :func:`iter_outcomes` enriches it (memory grows
    with the store: :func:`load_facts` is the compact form the report reads). Raises
    FileNotFoundError without a store."""
    store = _open(run_dir)
    try:
        return list(iter_outcomes(store))
    finally:
        store.close()


def load_facts(run_dir: str | Path) -> list[OutcomeFacts]:
    """Every outcome of a run directory as its :class:`OutcomeFacts`, streamed from the store
    (one outcome dict alive at a time; repeated strings and small values shared), in store
    order: what every aggregate of this module needs, in a few hundred bytes per outcome.
    Raises FileNotFoundError without a store."""
    store = _open(run_dir)
    shared: dict[Any, Any] = {}
    try:
        return [outcome_facts(o, shared) for o in iter_outcomes(store)]
    finally:
        store.close()


def max_attempts_by_model(run_dir: str | Path, outcomes: Iterable[Outcomeish]) -> dict[str, int]:
    """The configured attempt budget per model (run config), else the most attempts seen."""
    seen: dict[str, int] = {}
    for f in as_facts(outcomes):
        seen[f.model] = max(seen.get(f.model, 1), int(f.n_attempts or 1))
    store = RunStore(run_dir)
    try:
        for model in seen:
            cfg = store.get_meta(f"config:{model}") or {}
            if isinstance(cfg.get("max_attempts"), int):
                seen[model] = max(seen[model], cfg["max_attempts"])
    finally:
        store.close()
    return seen


# --------------------------------------------------------------------------- helpers


def scale_label(scale: int | str | None) -> str:
    """``5 -> "5"``, ``None -> "-"``; strings pass through."""
    if scale is None:
        return NO_SCALE
    return str(scale)


def scale_sort_key(label: str) -> tuple[int, float, str]:
    """Numeric scales ascending, then ``"-"``, then ``"all"``."""
    try:
        return (0, float(label), "")
    except ValueError:
        return (1 if label == NO_SCALE else 2, 0.0, label)


def mode_sort_key(mode: str) -> tuple[int, str]:
    return (MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER), mode)


def is_error(o: OutcomeRow) -> bool:
    """The outcome ended in a model error (no final prediction)."""
    return bool(o.get("error"))


def has_gold(o: OutcomeRow) -> bool:
    if "has_gold" in o:
        return bool(o["has_gold"])
    final = o.get("final") or {}
    return is_error(o) or "name_match" in final or "name_match" in (o.get("first") or {})


def is_solved(o: OutcomeRow) -> bool:
    return not is_error(o) and o.get("solved_at") is not None


def intrinsic_value(o: OutcomeRow, metric: str) -> float | None:
    """The final attempt's value of ``metric`` or None where undefined (or a model error)."""
    if is_error(o):
        return None
    v = (o.get("final") or {}).get(metric)
    if v is None:
        return None
    if metric == "fnem":
        return 1.0 if v == 1 else 0.0
    return float(v)


def extrinsic_value(o: OutcomeRow, metric: str) -> float | None:
    """The final attempt's extrinsic metric; 0.0 for a model error; None without gold."""
    if not has_gold(o):
        return None
    if is_error(o):
        return 0.0
    v = (o.get("final") or {}).get(_EXTRINSIC_KEY.get(metric, metric))
    return float(v) if v is not None else 0.0


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


def _summary(values: list[float], prefix: str, n_boot: int, seed: int) -> dict[str, float]:
    mean, std = mean_std(values)
    lo, hi = bootstrap_ci(order_free(values), n_boot=n_boot, seed=seed)
    return {
        prefix: mean,
        f"{prefix}_std": std,
        f"{prefix}_n": len(values),
        f"{prefix}_lo": lo,
        f"{prefix}_hi": hi,
    }


# --------------------------------------------------------------------------- compact facts


def _key(x: Any) -> Any:
    """A sharing key that keeps types apart (``1`` is not ``1.0``, ``-0.0`` not ``0.0``)."""
    if isinstance(x, tuple):
        return tuple(_key(v) for v in x)
    if isinstance(x, float):
        return (float, x, math.copysign(1.0, x))
    return (type(x), x)


def _shared(x: Any, pool: dict[Any, Any] | None) -> Any:
    """``x`` itself or an equal value of the same type already in ``pool`` (so that a run's
    repeated model names, case ids and value tuples are held once)."""
    if pool is None or x is None or isinstance(x, bool):
        return x
    return pool.setdefault(_key(x), x)


class OutcomeFacts:
    """What the report's aggregates need of one outcome, computed once by the per-outcome
    definitions of this module (:func:`intrinsic_value`, :func:`extrinsic_value`,
    :func:`first_stage`, :func:`first_kinds`, :func:`revision_flags`, ...), so that a store of
    any size is aggregated from a few hundred bytes per outcome instead of its decoded rows.
    Read-only; ``facts["model"]`` and ``facts.get("mode")`` work as on an outcome dict for the
    key fields. Build with :func:`outcome_facts`."""

    __slots__ = (
        "model",
        "case_id",
        "mode",
        "scale",
        "error",
        "error_text",
        "error_kind",
        "has_gold",
        "solved",
        "solved_at",
        "n_attempts",
        "intrinsic",
        "extrinsic",
        "first_stage",
        "first_kinds",
        "has_first",
        "first_solved",
        "final_segment",
        "overcorrection",
        "revisions",
        "lost_any",
    )
    #: fields readable with ``facts[key]`` (the outcome dict's names for them)
    _ITEMS = frozenset(("model", "case_id", "mode", "solved_at", "n_attempts"))

    model: str
    case_id: str
    mode: str
    #: the scale label (:func:`scale_label`)
    scale: str
    error: bool
    error_text: str | None
    error_kind: str | None
    has_gold: bool
    solved: bool
    solved_at: int | None
    n_attempts: Any
    #: :func:`intrinsic_value` per :data:`INTRINSIC` metric
    intrinsic: tuple[float | None, ...]
    #: :func:`extrinsic_value` per :data:`EXTRINSIC` metric
    extrinsic: tuple[float | None, ...]
    first_stage: str
    first_kinds: tuple[str, ...]
    #: the outcome has an attempt-1 row (``o["first"] is not None``)
    has_first: bool
    #: attempt 1 solved the case (its row's ``solved``)
    first_solved: bool
    #: the final attempt's :func:`segment_of`
    final_segment: str
    #: ``(first gold name, final gold name, first gold args, final gold args, F1 change)``
    #: where :func:`overcorrection` uses the outcome, else None
    overcorrection: tuple[bool, bool, bool, bool, float] | None
    #: per :data:`KEPT_ITEMS` item ``(lost, gained)`` or None where it cannot be told;
    #: None for the whole when :func:`revision_tradeoff` leaves the outcome out
    revisions: tuple[tuple[bool, bool] | None, ...] | None
    lost_any: bool

    def __init__(self, **fields: Any) -> None:
        for name in self.__slots__:
            object.__setattr__(self, name, fields[name])

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("OutcomeFacts is read-only")

    def __getitem__(self, key: str) -> Any:
        if key not in self._ITEMS:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self._ITEMS else default

    def __repr__(self) -> str:
        return f"OutcomeFacts({self.model!r}, {self.case_id!r}, {self.mode!r})"


#: an outcome dict (:func:`load_outcomes`) or its :class:`OutcomeFacts`
Outcomeish = OutcomeRow | OutcomeFacts


def outcome_facts(o: OutcomeRow, pool: dict[Any, Any] | None = None) -> OutcomeFacts:
    """The :class:`OutcomeFacts` of an outcome dict (``pool``: values shared across calls)."""
    first, final = o.get("first"), o.get("final") or {}
    usable = has_gold(o) and not is_error(o) and first and "name_match" in first
    oc = None
    if usable:
        oc = (
            bool(first.get("name_match")),
            bool(final.get("name_match")),
            _gold_args(first),
            _gold_args(final),
            float(final.get("arg_f1") or 0.0) - float(first.get("arg_f1") or 0.0),
        )
    rev = None
    if not is_error(o) and trajectory_of(o)[0]:
        flags = revision_flags(o)
        rev = tuple(
            (flags[i]["lost"], flags[i]["gained"]) if i in flags else None for i in KEPT_ITEMS
        )
    s = _shared
    return OutcomeFacts(
        model=s(o["model"], pool),
        case_id=s(o["case_id"], pool),
        mode=s(o["mode"], pool),
        scale=s(scale_label(o.get("scale")), pool),
        error=is_error(o),
        error_text=o.get("error"),
        error_kind=s(o.get("error_kind"), pool),
        has_gold=has_gold(o),
        solved=is_solved(o),
        solved_at=s(o.get("solved_at"), pool),
        n_attempts=s(o.get("n_attempts"), pool),
        intrinsic=s(tuple(intrinsic_value(o, m) for m in INTRINSIC), pool),
        extrinsic=s(tuple(extrinsic_value(o, m) for m in EXTRINSIC), pool),
        first_stage=s(first_stage(o), pool),
        first_kinds=s(tuple(first_kinds(o)), pool),
        has_first=first is not None,
        first_solved=bool((first or {}).get("solved")),
        final_segment=s(segment_of(o.get("final"), o.get("final_diagnosis")), pool),
        overcorrection=s(oc, pool),
        revisions=s(rev, pool),
        lost_any=lost_any(o),
    )


def as_facts(outcomes: Iterable[Outcomeish]) -> list[OutcomeFacts]:
    """``outcomes`` as :class:`OutcomeFacts` (dicts converted, facts kept), in order."""
    pool: dict[Any, Any] = {}
    return [o if isinstance(o, OutcomeFacts) else outcome_facts(o, pool) for o in outcomes]


def segment_of(row: dict[str, Any] | None, diagnosis: dict[str, Any] | None) -> str:
    """The call-flow segment of one attempt (:data:`callscope.report.flow.SEGMENTS`): from its
    score ``row`` (``None``: no reply, ``error``) and its cascade ``diagnosis`` (for the
    stage-3 kinds; see :func:`attempt_kinds`): ``passed``, the first failure kind in cascade
    order, or ``stage<k>`` for a failure without a recorded kind."""
    if not row or row.get("stage") is None:
        return "error"
    stage = int(row["stage"])
    if stage == 0:
        return "passed"
    kinds = attempt_kinds(row, diagnosis)
    return kinds[0] if kinds else f"stage{stage}"


def first_segment(f: OutcomeFacts) -> str:
    """Attempt 1's :func:`segment_of`, from the facts (its first kind, else its stage)."""
    return f.first_kinds[0] if f.first_kinds else f.first_stage


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
    lo, hi = wilson(solved, len(gold_rows))
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


def first_stage(o: OutcomeRow) -> str:
    """Attempt 1's verdict: ``passed``, ``stage1``..``stage3`` or ``error`` (no reply)."""
    first = o.get("first")
    if not first or first.get("stage") is None:
        return "error"
    stage = int(first["stage"])
    return "passed" if stage == 0 else f"stage{stage}"


def first_kinds(o: OutcomeRow) -> list[str]:
    """Failure kinds of attempt 1 (several may apply): from its diagnosis when loaded, else
    from the attempt-1 score row (which lacks the stage-3 lists numeric/hard/soft)."""
    return attempt_kinds(o.get("first"), o.get("first_diagnosis"))


def attempt_kinds(row: dict[str, Any] | None, diagnosis: dict[str, Any] | None) -> list[str]:
    """Failure kinds of one attempt, from its score ``row`` and (when loaded) its cascade
    ``diagnosis``: ``[]`` when it passed or has no reply."""
    if not row or row.get("stage") in (None, 0):
        return []
    diag = diagnosis or row
    if int(row["stage"]) == 1:
        return ["no_name" if diag.get("fnem") == -1 else "wrong_name"]
    return [k for k in FAILURE_KINDS[2:] if diag.get(k)]


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
    need not sum to the failure share). Counts are in the ``n_<label>`` columns."""
    cases = _one_per_case(as_facts(outcomes))
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
            for k in FAILURE_KINDS:
                row[k] = kinds[k] / len(g)
                row[f"n_{k}"] = kinds[k]
            rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- overcorrection


def _gold_args(row: dict[str, Any]) -> bool:
    return row.get("arg_precision") == 1.0 and row.get("arg_recall") == 1.0


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

#: what an attempt can have right, in cascade order, then against the gold: passing stage 1
#: (a registered name), stage 2 (the schema's parameters), stage 3 (grounded values: the
#: attempt passed), the gold name, the gold arguments (precision = recall = 1)
KEPT_ITEMS: tuple[str, ...] = ("stage1", "stage2", "stage3", "name", "args")


def trajectory_step(attempt: int, row: dict[str, Any]) -> dict[str, Any]:
    """One scored attempt as the revision analysis needs it: ``attempt``, ``stage`` and, with
    gold, ``name`` (gold name) and ``args`` (gold arguments); the stage items of
    :data:`KEPT_ITEMS` follow from ``stage``."""
    step: dict[str, Any] = {"attempt": int(attempt), "stage": row.get("stage")}
    if "name_match" in row:
        step["name"] = bool(row.get("name_match"))
        step["args"] = _gold_args(row)
    return step


def is_right(step: dict[str, Any], item: str) -> bool | None:
    """Whether attempt ``step`` had ``item`` (:data:`KEPT_ITEMS`) right; ``None`` when that
    cannot be told (no stage; no gold for ``name``/``args``). A stage is passed when the
    attempt failed at a later one or passed all three (``stage == 0``)."""
    if item in ("name", "args"):
        return step.get(item)
    stage = step.get("stage")
    if stage is None:
        return None
    k = int(item[-1])
    return stage == 0 or stage > k


def trajectory_of(o: OutcomeRow) -> tuple[list[dict[str, Any]], int]:
    """The scored attempts of an outcome (``o["trajectory"]``; without it, attempt 1 and the
    final row) and the index of its answer in that list: attempt ``final["answer_at"]`` when
    the loop recorded one (the gated modes' best so far), else the last."""
    traj = o.get("trajectory")
    final = o.get("final") or {}
    if traj is None:
        traj = []
        if o.get("first") and o["first"].get("stage") is not None:
            traj.append(trajectory_step(1, o["first"]))
        n = int(o.get("n_attempts") or 1)
        if n > 1 and final.get("stage") is not None:
            traj.append(trajectory_step(n, final))
    answer = len(traj) - 1
    at = final.get("answer_at")
    if at is not None:
        answer = next((i for i, s in enumerate(traj) if s["attempt"] == at), answer)
    return traj, answer


def revision_flags(o: OutcomeRow) -> dict[str, dict[str, bool]]:
    """Per item of :data:`KEPT_ITEMS`: ``lost`` (some attempt before the answer had it right,
    the answer does not) and ``gained`` (attempt 1 did not have it right, the answer does).
    Items that cannot be told (no gold) are left out. Pure; the definition of overcorrection
    is the SAAG paper's (section 5: feedback "moving correct predictions away"), applied to
    every revision of the loop rather than to attempt 1 only."""
    traj, answer = trajectory_of(o)
    out: dict[str, dict[str, bool]] = {}
    if not traj or answer < 0:
        return out
    for item in KEPT_ITEMS:
        now = is_right(traj[answer], item)
        if now is None:
            continue
        had = any(is_right(s, item) for s in traj[:answer])
        out[item] = {
            "lost": had and not now,
            "gained": is_right(traj[0], item) is False and now,
        }
    return out


def lost_any(o: OutcomeRow) -> bool:
    """The answer lost something an earlier attempt had right (any item of
    :data:`KEPT_ITEMS`): the per-outcome *overcorrection* indicator."""
    return any(f["lost"] for f in revision_flags(o).values())


def revision_tradeoff(outcomes: Iterable[Outcomeish]) -> pd.DataFrame:
    """Per (model, mode): what the loop's revisions lost and gained, by stage and against the
    gold (:func:`revision_flags`), each as a count and a rate over the ``n`` outcomes (Wilson
    95% intervals, so modes run on the same cases share the denominator); ``overcorrection``:
    the share of outcomes whose answer lost anything (:func:`lost_any`). Columns per item
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


# --------------------------------------------------------------------------- paired modes

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
    the extrinsic metrics (:func:`extrinsic_value`), VHR of the answer (where stage 3 ran),
    :func:`lost_any`, and the attempts the loop made."""
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
