"""The calibration paper's panel: one row per model, per category GAR, Acc and their gap.

Input: ``{model: Diagnostics}`` (:func:`callscope.calibration.diagnostics.compute_diagnostics`
of each model's cases, from a ``calibrate`` run or from result files). Everything here is a
pure function of those diagnostics; it only re-arranges their per-category rows and adds the
paired interval of the gap.

Per (model, category) cell:

* **GAR** (case level, calibration paper section 3): share of cases whose emissions include
  the gold action class, with its Wilson 95% interval (the diagnostics row's).
* **Acc**: share of cases the grader passed, Wilson 95% interval (or the score-file header's
  count when no case has a verdict; marked ``(header)``).
* **GAR − Acc** in percentage points, the sign of the single-model table's gap
  (:func:`callscope.calibration.diagnostics` ``gap``: the bound's slack). GAR bounds Acc (a
  case cannot be solved without its gold class), so a gap below 0 is a **bound violation**
  (grader masking) and a gap above ``slack_threshold`` is **large slack** (the right class,
  then an execution failure). When every case has a verdict, GAR and Acc are paired
  proportions on the same cases and the gap
  carries Newcombe's (1998) paired interval (:func:`callscope.core.stats.newcombe_paired`,
  the same method as :mod:`callscope.calibration.paired`); with header Acc it has none.
* Flags: bound violation, large slack, and the **capability check** (a gold class emitted
  fewer than ``t_cap`` times over the model's run: that row's GAR says little).

The second table holds turn-level GAR (share of cases whose gold class appeared at a due
turn, Wilson interval) and the pooled per-turn rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from callscope.benchmarks.protocol import (
    MultiTurnBenchmark,
    benchmark_or_default,
    category_key,
    short_category,
)
from callscope.calibration.diagnostics import Diagnostics
from callscope.core.stats import newcombe_paired
from callscope.core.table import Table, pct, pct_ci

#: interval method of the gap GAR − Acc, as stated under the table
DELTA_CI_METHOD = "Newcombe paired (method 10) on the cases with a verdict"


def delta_interval(cases: Sequence[Any], category: str) -> tuple[float, float, float] | None:
    """``(gap, low, high)`` for the gap GAR − Acc over the cases of ``category`` (each with
    ``passed`` and ``gar_case``), Newcombe's paired interval; ``None`` when a case of the
    category has no verdict (Acc then is not paired with GAR) or there is none."""
    mine = [c for c in cases if c.category == category]
    if not mine or any(c.passed is None for c in mine):
        return None
    both = sum(bool(c.passed) and c.gar_case for c in mine)
    only_acc = sum(bool(c.passed) and not c.gar_case for c in mine)
    only_gar = sum(not c.passed and c.gar_case for c in mine)
    neither = len(mine) - both - only_acc - only_gar
    return newcombe_paired(both, only_gar, only_acc, neither)  # p1 = GAR, p2 = Acc


@dataclass
class PanelCell:
    """One (model, category): the diagnostics row and the gap GAR − Acc with its interval."""

    model: str
    category: str
    row: dict[str, Any]
    delta: float | None
    delta_lo: float | None = None
    delta_hi: float | None = None

    def flags(self) -> list[str]:
        """``bound violation``, ``large slack``, ``capability check failed (...)``."""
        out = []
        if self.row.get("capability_failed"):
            out.append(f"capability check failed ({self.row['capability_failed']})")
        if self.row.get("bound_violation"):
            out.append("bound violation (Acc > GAR)")
        if self.row.get("large_slack"):
            out.append("large slack")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "category": self.category,
            "delta": self.delta,
            "delta_ci_low": self.delta_lo,
            "delta_ci_high": self.delta_hi,
            "flags": self.flags(),
            **{k: v for k, v in self.row.items() if k != "category"},
        }


@dataclass
class Panel:
    """The panel: ``models`` in row order, ``categories`` in the benchmark's display order, one
    :class:`PanelCell` per (model, category) the model has, each model's capability check."""

    models: list[str]
    categories: list[str]
    cells: dict[tuple[str, str], PanelCell] = field(default_factory=dict)
    capability: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: free text shown under the tables (what was read, settings)
    notes: list[str] = field(default_factory=list)

    def cell(self, model: str, category: str) -> PanelCell | None:
        return self.cells.get((model, category))

    def to_dict(self) -> dict[str, Any]:
        return {
            "models": self.models,
            "categories": self.categories,
            "cells": [c.to_dict() for c in self.cells.values()],
            "capability": self.capability,
            "notes": self.notes,
        }


def build_panel(
    diagnostics: Mapping[str, Diagnostics],
    models: Sequence[str] | None = None,
    benchmark: MultiTurnBenchmark[Any] | None = None,
) -> Panel:
    """The :class:`Panel` of ``{model: Diagnostics}``; rows in the order of ``models`` (default:
    the mapping's order), categories by ``benchmark``'s short name (BFCL: ``base``) in its
    display order over every model (:func:`callscope.benchmarks.protocol.short_category`,
    :func:`~callscope.benchmarks.protocol.category_key`; default benchmark: the
    :data:`~callscope.benchmarks.protocol.DEFAULT_BENCHMARK`)."""
    bench = benchmark_or_default(benchmark)
    order = list(models) if models is not None else list(diagnostics)
    cats = sorted(
        {short_category(bench, r["category"]) for d in diagnostics.values() for r in d.rows},
        key=lambda c: category_key(bench, c),
    )
    panel = Panel(models=order, categories=cats)
    for model in order:
        diag = diagnostics[model]
        panel.capability[model] = diag.capability
        for row in diag.rows:
            delta = row.get("gap")  # GAR − Acc: the diagnostics row owns the sign
            paired = delta_interval(diag.cases, row["category"]) if row["acc_source"] else None
            cat = short_category(bench, row["category"])
            cell = PanelCell(model, cat, dict(row), delta)
            if paired is not None:
                cell.delta, cell.delta_lo, cell.delta_hi = paired
            panel.cells[(model, cat)] = cell
    return panel


def _acc_cell(row: Mapping[str, Any]) -> str:
    text = pct_ci(row.get("acc"), row.get("acc_ci_low"), row.get("acc_ci_high"))
    return text + " (header)" if row.get("acc_source") == "header" else text


def _delta_cell(cell: PanelCell) -> str:
    if cell.delta_lo is not None:
        return pct_ci(cell.delta, cell.delta_lo, cell.delta_hi, signed=True)
    return pct(cell.delta, signed=True)


def _row_flags(panel: Panel, model: str) -> str:
    parts = []
    for cat in panel.categories:
        cell = panel.cell(model, cat)
        if cell is not None and cell.flags():
            parts.append(f"{cat}: {', '.join(cell.flags())}")
    return "; ".join(parts)


def panel_table(panel: Panel, name: str = "panel") -> Table:
    """Case-level panel: ``Model``, then per category ``<cat> n``, ``GAR %``, ``Acc %``
    (Wilson 95% intervals) and ``GAR−Acc pp`` (the single-model table's column: paired
    interval when every case has a verdict), then ``Flags`` (per category). Rows with a bound violation are styled red."""
    cols = ["Model"]
    for cat in panel.categories:
        cols += [f"{cat} n", f"{cat} GAR %", f"{cat} Acc %", f"{cat} GAR−Acc pp"]
    cols.append("Flags")
    rows, styles = [], []
    for model in panel.models:
        line = [model]
        violated = False
        for cat in panel.categories:
            cell = panel.cell(model, cat)
            if cell is None:
                line += ["", "n/a", "n/a", "n/a"]
                continue
            r = cell.row
            line += [
                str(r["n"]),
                pct_ci(r.get("gar_case"), r.get("gar_case_ci_low"), r.get("gar_case_ci_high")),
                _acc_cell(r),
                _delta_cell(cell),
            ]
            violated = violated or bool(r.get("bound_violation"))
        line.append(_row_flags(panel, model))
        rows.append(line)
        styles.append("red" if violated else None)
    return Table(
        cols,
        rows,
        title="GAR, Acc and GAR − Acc per model and category",
        caption=(
            "Case-level GAR (gold action class anywhere in the case) and Acc (grader's verdict), "
            "Wilson 95% intervals; GAR − Acc in points (as in the single-model table), its "
            f"interval {DELTA_CI_METHOD}. Below 0 is a bound violation (grader masking)."
        ),
        name=name,
        align="l" + "rlll" * len(panel.categories) + "l",
        row_styles=styles,
    )


def turn_panel_table(panel: Panel, name: str = "panel-turn") -> Table:
    """Turn-level panel: per category ``<cat> GAR turn %`` (Wilson 95% interval, over the
    cases with a due turn) and ``<cat> per-turn %`` (pooled due turns, ``k/n``)."""
    cols = ["Model"]
    for cat in panel.categories:
        cols += [f"{cat} GAR turn %", f"{cat} per-turn %"]
    rows = []
    for model in panel.models:
        line = [model]
        for cat in panel.categories:
            cell = panel.cell(model, cat)
            if cell is None:
                line += ["n/a", "n/a"]
                continue
            r = cell.row
            line += [
                pct_ci(r.get("gar_turn"), r.get("gar_turn_ci_low"), r.get("gar_turn_ci_high")),
                f"{pct(r.get('gar_per_turn'))} ({r.get('per_turn_k', 0)}/{r.get('per_turn_n', 0)})",
            ]
        rows.append(line)
    return Table(
        cols,
        rows,
        title="Turn-level GAR per model and category",
        caption=(
            "GAR turn: share of cases (with a due turn) whose gold class appeared at a due turn, "
            "Wilson 95% interval; per-turn: share of all due turns with the gold class."
        ),
        name=name,
        align="l" + "ll" * len(panel.categories),
    )


def capability_lines(panel: Panel) -> list[str]:
    """One line per model whose capability check failed (classes emitted < ``t_cap``)."""
    out = []
    for model in panel.models:
        cap = panel.capability.get(model) or {}
        if cap and not cap.get("ok", True):
            out.append(
                f"{model}: capability check failed: {', '.join(cap.get('below', []))} emitted "
                f"fewer than {cap.get('t_cap')} times over its run; their GAR says little."
            )
    return out


def rows_category(row: Mapping[str, Any]) -> str:
    """A τ² row's panel column: ``<domain> <gold class>``, with its path when it has one
    (``airline TOOL_CALL/write``)."""
    label = f"{row.get('domain') or row['category']} {row['gold_class']}"
    return f"{label}/{row['path']}" if row.get("path") else label


def panel_from_rows(
    rows: Sequence[Mapping[str, Any]],
    capability: Mapping[str, Any] | None = None,
    group_key: str = "group",
) -> Panel:
    """A :class:`Panel` from already computed diagnostic rows of several models (τ²-bench's
    rows, one group per agent / user pair, :mod:`callscope.calibration.tau2`): models = the
    ``group_key`` values in order, columns = :func:`rows_category`. The rows carry no
    per-case verdicts, so Δ has no paired interval; ``capability`` (the run's check) is
    reported for every model."""
    models = list(dict.fromkeys(str(r.get(group_key) or "") for r in rows))
    cats = list(dict.fromkeys(rows_category(r) for r in rows))
    panel = Panel(models=models, categories=cats)
    for r in rows:
        model, cat = str(r.get(group_key) or ""), rows_category(r)
        gar, acc = r.get("gar_case"), r.get("acc")
        delta = acc - gar if gar is not None and acc is not None else None
        panel.cells[(model, cat)] = PanelCell(model, cat, dict(r), delta)
        if capability is not None:
            panel.capability[model] = dict(capability)
    return panel
