"""Paired comparison of a probe run against a baseline run (same model, same cases).

Input per run: ``(case_id, category, passed, gar_hit)`` tuples: ``passed`` is the grader's
verdict (Acc), ``gar_hit`` whether the case's gold action class appeared (case-level GAR). Cases
are paired by id; a case present in only one run is left out of every number and counted in
``unpaired``. Rows are per category, by the benchmark's short name and in its display order
(:func:`callscope.benchmarks.protocol.short_category` and
:func:`~callscope.benchmarks.protocol.category_key`; BFCL: ``multi_turn_`` prefix dropped;
base, miss_param, miss_func, long_context, then others alphabetically) plus ``all``.

Intervals: ΔAcc = Acc(probe) − Acc(baseline) and ΔGAR likewise, with Newcombe's (1998)
hybrid score interval for the difference of *paired* proportions
(:func:`callscope.core.stats.newcombe_paired`: "method 10", the Wilson intervals of both
marginal proportions combined with the continuity-corrected phi correlation of the 2×2
paired table). It is closed-form and deterministic, stays inside [−1, 1], and does not
collapse to a zero-width interval when no case flipped (a paired bootstrap would). The
flips are reported as counts: ``pass_to_fail`` (baseline PASS, probe FAIL) and ``fail_to_pass``.

Under CRI-bypass GAR is not a measure of the model (the abstention placeholder is written by
the probe): ``gar_valid`` is false, the probe's GAR and ΔGAR are ``None`` and the markdown says
``n/a``; Acc and the fired rate (share of paired cases where the probe fired at least once)
are what bypass reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from callscope.benchmarks.protocol import (
    MultiTurnBenchmark,
    benchmark_or_default,
    category_key,
    short_category,
)
from callscope.calibration.probes import PROBES
from callscope.core.stats import newcombe_paired
from callscope.core.table import Table, pct, pct_ci

CaseResult = tuple[str, str, bool, bool]

CI_METHOD = "newcombe-paired-wilson (method 10, phi continuity-corrected), 95%"


def _gar_valid_for(probe_name: str) -> bool:
    probe = PROBES.get(probe_name, None)
    return probe.gar_valid if probe is not None else True


def _paired_delta(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """pairs = (baseline, probe) booleans -> rates, Δ with interval, flip counts."""
    n = len(pairs)
    both = sum(1 for x, y in pairs if x and y)
    lost = sum(1 for x, y in pairs if x and not y)
    gained = sum(1 for x, y in pairs if y and not x)
    neither = n - both - lost - gained
    if n == 0:
        return {
            "base": None,
            "probe": None,
            "delta": None,
            "lo": None,
            "hi": None,
            "lost": 0,
            "gained": 0,
        }
    theta, lo, hi = newcombe_paired(both, gained, lost, neither)
    return {
        "base": (both + lost) / n,
        "probe": (both + gained) / n,
        "delta": theta,
        "lo": lo,
        "hi": hi,
        "lost": lost,
        "gained": gained,
    }


def _row(
    probe: str,
    category: str,
    pairs: list[tuple[CaseResult, CaseResult]],
    fired: Mapping[str, bool],
    gar_valid: bool,
    unpaired: int,
) -> dict[str, Any]:
    acc = _paired_delta([(b[2], p[2]) for b, p in pairs])
    gar = _paired_delta([(b[3], p[3]) for b, p in pairs])
    n_fired = sum(1 for b, _ in pairs if fired.get(b[0], False))
    n = len(pairs)
    return {
        "probe": probe,
        "category": category,
        "n": n,
        "unpaired": unpaired,
        "acc_base": acc["base"],
        "acc_probe": acc["probe"],
        "d_acc": acc["delta"],
        "d_acc_lo": acc["lo"],
        "d_acc_hi": acc["hi"],
        "pass_to_fail": acc["lost"],
        "fail_to_pass": acc["gained"],
        "gar_valid": gar_valid,
        "gar_base": gar["base"],
        "gar_probe": gar["probe"] if gar_valid else None,
        "d_gar": gar["delta"] if gar_valid else None,
        "d_gar_lo": gar["lo"] if gar_valid else None,
        "d_gar_hi": gar["hi"] if gar_valid else None,
        "gar_hit_to_miss": gar["lost"] if gar_valid else None,
        "gar_miss_to_hit": gar["gained"] if gar_valid else None,
        "fired": n_fired,
        "fired_rate": n_fired / n if n else None,
        "ci_method": CI_METHOD,
    }


def compare_probe(
    baseline: Sequence[CaseResult],
    probed: Sequence[CaseResult],
    fired: Mapping[str, bool],
    probe_name: str,
    *,
    gar_valid: bool | None = None,
    benchmark: MultiTurnBenchmark[Any] | None = None,
) -> list[dict[str, Any]]:
    """Per-category paired rows (then ``all``) of ``probed`` against ``baseline``.

    ``fired`` maps case id -> whether the probe fired in that case (missing = no).
    ``gar_valid`` defaults to the named probe's :attr:`ProbeConfig.gar_valid` (false for the
    bypass probes, true for unknown names). A case's category is taken from the baseline;
    names and order are ``benchmark``'s (default: the
    :data:`~callscope.benchmarks.protocol.DEFAULT_BENCHMARK`).
    """
    bench = benchmark_or_default(benchmark)
    if gar_valid is None:
        gar_valid = _gar_valid_for(probe_name)
    base_by_id = {o[0]: o for o in baseline}
    probe_by_id = {o[0]: o for o in probed}
    pairs: dict[str, list[tuple[CaseResult, CaseResult]]] = {}
    unpaired: dict[str, int] = {}
    for cid, b in base_by_id.items():
        cat = short_category(bench, b[1])
        pairs.setdefault(cat, [])
        if cid in probe_by_id:
            pairs[cat].append((b, probe_by_id[cid]))
        else:
            unpaired[cat] = unpaired.get(cat, 0) + 1
    for cid, p in probe_by_id.items():
        if cid not in base_by_id:
            cat = short_category(bench, p[1])
            pairs.setdefault(cat, [])
            unpaired[cat] = unpaired.get(cat, 0) + 1
    rows = [
        _row(probe_name, cat, pairs[cat], fired, gar_valid, unpaired.get(cat, 0))
        for cat in sorted(pairs, key=lambda c: category_key(bench, c))
    ]
    everything = [pair for cat in pairs for pair in pairs[cat]]
    rows.append(_row(probe_name, "all", everything, fired, gar_valid, sum(unpaired.values())))
    return rows


def fired_by_case(convs: Iterable[Mapping[str, Any]]) -> dict[str, bool]:
    """Case id -> whether any probe event of its stored trajectory fired (conversation dicts as
    :meth:`callscope.store.run_store.RunStore.conversations` yields them)."""
    return {
        str(c["case_id"]): any(
            e.get("decision") == "fired" for e in (c.get("trajectory") or {}).get("events") or []
        )
        for c in convs
    }


def ablation_matrix(
    results: Mapping[str, Sequence[Mapping[str, Any]]],
    benchmark: MultiTurnBenchmark[Any] | None = None,
) -> list[dict[str, Any]]:
    """Probes × categories: one row per probe (in the given order) with ``<cat>.d_acc`` and
    ``<cat>.d_gar`` for every category any probe has (``None`` where a probe lacks it or GAR
    is not valid), and ``all.fired_rate``. Categories in ``benchmark``'s display order
    (default: the :data:`~callscope.benchmarks.protocol.DEFAULT_BENCHMARK`)."""
    bench = benchmark_or_default(benchmark)
    cats: list[str] = []
    for rows in results.values():
        for r in rows:
            if r["category"] not in cats:
                cats.append(r["category"])
    cats.sort(key=lambda c: (c == "all", category_key(bench, c)))
    out = []
    for probe, rows in results.items():
        by_cat = {r["category"]: r for r in rows}
        row: dict[str, Any] = {"probe": probe}
        for cat in cats:
            r = by_cat.get(cat, {})
            row[f"{cat}.d_acc"] = r.get("d_acc")
            row[f"{cat}.d_gar"] = r.get("d_gar")
        row["all.fired_rate"] = by_cat.get("all", {}).get("fired_rate")
        out.append(row)
    return out


# ------------------------------------------------------------------------------- tables

COMPARE_COLUMNS: tuple[str, ...] = (
    "Probe",
    "Category",
    "n",
    "Acc base",
    "Acc probe",
    "ΔAcc pp [95% CI]",
    "PASS→FAIL",
    "FAIL→PASS",
    "GAR base",
    "GAR probe",
    "ΔGAR pp [95% CI]",
    "fired %",
)


def compare_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """:func:`compare_probe` rows as a :class:`Table` (percentages, Δ in pp with 95% CI);
    categories the two runs never shared are named in the note, not shown as rows."""
    absent = [r for r in rows if r["n"] == 0 and r["category"] != "all"]
    cells = []
    for r in rows:
        if r in absent:
            continue
        gar_note = "" if r["gar_valid"] else " (bypass)"
        cells.append(
            [
                r["probe"],
                r["category"],
                r["n"],
                pct(r["acc_base"]),
                pct(r["acc_probe"]),
                pct_ci(r["d_acc"], r["d_acc_lo"], r["d_acc_hi"], signed=True),
                r["pass_to_fail"],
                r["fail_to_pass"],
                pct(r["gar_base"]),
                f"{pct(r['gar_probe'])}{gar_note}",
                f"{pct_ci(r['d_gar'], r['d_gar_lo'], r['d_gar_hi'], signed=True)}{gar_note}",
                pct(r["fired_rate"]),
            ]
        )
    notes = [f"Intervals: {CI_METHOD}; cases paired by id."]
    if absent:
        notes.append(
            "Not paired (in one run only): "
            + ", ".join(f"{r['category']} ({r['unpaired']} cases)" for r in absent)
            + "."
        )
    if any(not r["gar_valid"] for r in rows):
        notes.append("GAR is n/a under CRI-bypass: its abstention is not a model emission.")
    return Table(COMPARE_COLUMNS, cells, note=" ".join(notes))


def compare_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """A markdown table of :func:`compare_probe` rows (percentages, Δ in pp with 95% CI)."""
    return compare_table(rows).to_markdown()


def ablation_table(matrix: Sequence[Mapping[str, Any]]) -> Table:
    """:func:`ablation_matrix` rows as a :class:`Table`: ΔAcc / ΔGAR in pp per category and
    the fired rate (no columns for an empty matrix)."""
    if not matrix:
        return Table([], [])
    cats = [k[: -len(".d_acc")] for k in matrix[0] if k.endswith(".d_acc")]
    columns = ["Probe", *(f"{c} ΔAcc / ΔGAR" for c in cats), "fired %"]
    cells = [
        [
            row["probe"],
            *(f"{pct(row[f'{c}.d_acc'], True)} / {pct(row[f'{c}.d_gar'], True)}" for c in cats),
            pct(row.get("all.fired_rate")),
        ]
        for row in matrix
    ]
    return Table(columns, cells)


def ablation_markdown(matrix: Sequence[Mapping[str, Any]]) -> str:
    """A markdown table of :func:`ablation_matrix` rows: ΔAcc / ΔGAR in pp per category
    (``""`` for an empty matrix)."""
    return ablation_table(matrix).to_markdown() if matrix else ""
