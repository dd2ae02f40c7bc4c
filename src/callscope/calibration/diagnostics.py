"""GAR / Acc diagnostics of action-class calibration (paper "Calibration is the Bottleneck").

Input: one :class:`CaseRecord` per multi-turn case, from any source (callscope's own
multi-turn conversation driver, or a benchmark's result files through its reader in
:mod:`callscope.benchmarks`; :mod:`callscope.benchmarks.case_records` reads and writes them as
JSON Lines)::

    {"id": "multi_turn_miss_param_3", "category": "miss_param", "gold_class": "ASK",
     "turn_emissions": [[emission, ...], ...],   # per turn, that turn's emissions in order
     "due_turns": [2],                          # 0-based turns where the gold class is due
     "passed": true,                            # the grader's verdict (Acc); null = unknown
     "error": null}                             # why the case has no (complete) emissions

An emission is anything :func:`callscope.calibration.classify.classify_emission` reads (text, a
message ``{"content", "tool_calls"}``, BFCL's ``[{tool_name: args}]``, Python call strings).

Metrics per category (each record carries its own gold class; the row reports it):

* **case-level GAR** (the paper's main number): share of cases where the union, over all
  emissions of all turns, of the emission classes contains the gold class.
* **turn-level GAR**: share of cases, among those with at least one due turn, where the gold
  class is among the classes of the emissions of *at least one* due turn. Also the
  **per-turn rate**: share of all due turns (pooled over cases) whose emissions include the
  gold class. A due turn the model never reached (force-terminated, error) is a miss.
* **Acc**: share of cases with ``passed`` true, over the cases whose verdict is known. When no
  case of a category has a verdict, Acc may come from a header count (``header_acc``, e.g.
  BFCL's score-file header); ``acc_source`` says which.
* **GAR − Acc** (case-level GAR), Wilson 95% intervals for GAR and Acc.
* Flags: ``bound_violation`` (Acc > GAR: the grader passes cases where the gold class never
  appeared, "grader masking"; ``passed_without_gold`` counts those cases), ``large_slack``
  (GAR − Acc > ``slack_threshold``, default 0.2: execution failure after the right class).
* Emission counts per class, per category and over the run, and the **capability check**:
  each non-OTHER class must be emitted at least ``t_cap`` (default 10) times over the run,
  else GAR of that class says little about this model.

Records with an ``error`` are kept in every denominator (the case was attempted and its gold
class did not appear); ``n_errors`` reports how many. By default each emission contributes
its single (priority) class, as in the paper's BFCL cascade; ``multi_label=True`` uses every
class whose cues fire (the τ²-style detector). An emission of a shape the classifier does not
read counts as OTHER.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rich.table import Table as RichTable

from callscope.benchmarks.protocol import MultiTurnBenchmark, benchmark_or_default, category_key
from callscope.calibration.classify import DEFAULT, ClassifierConfig, fired_classes, resolve
from callscope.core.stats import rate_ci
from callscope.core.table import Table, pct, pct_ci
from callscope.records import CaseRecord
from callscope.types import ACTION_CLASSES, OTHER

# --------------------------------------------------------------------------- per case


@dataclass(frozen=True)
class DiagnosticsSettings:
    """Knobs of :func:`compute_diagnostics`; reported with every result."""

    slack_threshold: float = 0.2
    t_cap: int = 10
    multi_label: bool = False
    z: float = 1.96

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CaseClasses:
    """The classes one case emitted, and its GAR verdicts."""

    id: str
    category: str
    gold_class: str
    turn_classes: list[list[list[str]]]  # per turn, per emission, the classes it counts for
    union: list[str]
    gar_case: bool
    due_hits: list[bool]  # one per due turn, in order
    passed: bool | None
    error: str | None

    @property
    def gar_turn(self) -> bool | None:
        """Gold class at >= 1 due turn; ``None`` when the case has no due turn."""
        return any(self.due_hits) if self.due_hits else None


def _classes_of(emission: Any, config: ClassifierConfig, multi_label: bool) -> list[str]:
    try:
        fired = fired_classes(emission, config)
    except TypeError:
        fired = {OTHER}
    if not fired:  # an empty emission ("", [], None): no class, counted as n_empty
        return []
    if multi_label:
        return [c for c in ACTION_CLASSES if c in fired]
    return [resolve(fired, config)]


def classify_case(
    record: CaseRecord, config: ClassifierConfig = DEFAULT, multi_label: bool = False
) -> CaseClasses:
    """Classify every emission of ``record`` and decide case- and turn-level GAR."""
    turn_classes = [
        [_classes_of(e, config, multi_label) for e in turn] for turn in record.turn_emissions
    ]
    union = {c for turn in turn_classes for em in turn for c in em}
    due_hits = []
    for t in record.due_turns:
        at_t = turn_classes[t] if t < len(turn_classes) else []
        due_hits.append(any(record.gold_class in em for em in at_t))
    return CaseClasses(
        id=record.id,
        category=record.category,
        gold_class=record.gold_class,
        turn_classes=turn_classes,
        union=[c for c in ACTION_CLASSES if c in union],
        gar_case=record.gold_class in union,
        due_hits=due_hits,
        passed=record.passed,
        error=record.error,
    )


# --------------------------------------------------------------------------- per category


def category_row(
    category: str,
    cases: Sequence[CaseClasses],
    settings: DiagnosticsSettings,
    header: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """The row of one category (see the module docstring for every key): case- and
    turn-level GAR, per-turn rate, Acc (from the cases' verdicts, else ``header`` =
    ``(correct, total)``), Wilson intervals (:func:`callscope.core.stats.rate_ci`), GAR − Acc,
    the flags and the emission counts. The τ² diagnostic builds its rows with it too."""
    z = settings.z
    n = len(cases)
    golds = sorted({c.gold_class for c in cases})
    k_case = sum(c.gar_case for c in cases)
    turn_cases = [c for c in cases if c.due_hits]
    k_turn = sum(bool(c.gar_turn) for c in turn_cases)
    per_turn_n = sum(len(c.due_hits) for c in cases)
    per_turn_k = sum(sum(c.due_hits) for c in cases)

    judged = [c for c in cases if c.passed is not None]
    acc_source: str | None
    if judged:
        acc_k, acc_n, acc_source = sum(bool(c.passed) for c in judged), len(judged), "cases"
        passed_without_gold: int | None = sum(bool(c.passed) and not c.gar_case for c in judged)
    elif header is not None:
        acc_k, acc_n, acc_source = header[0], header[1], "header"
        passed_without_gold = None
    else:
        acc_k, acc_n, acc_source = 0, 0, None
        passed_without_gold = None

    gar, gar_lo, gar_hi = rate_ci(k_case, n, z)
    gar_turn, turn_lo, turn_hi = rate_ci(k_turn, len(turn_cases), z)
    acc, acc_lo, acc_hi = rate_ci(acc_k, acc_n, z)
    gap = gar - acc if gar is not None and acc is not None else None
    counts = Counter(c for case in cases for turn in case.turn_classes for em in turn for c in em)
    return {
        "category": category,
        "gold_class": "/".join(golds),
        "n": n,
        "n_errors": sum(c.error is not None for c in cases),
        "gar_case": gar,
        "gar_case_k": k_case,
        "gar_case_ci_low": gar_lo,
        "gar_case_ci_high": gar_hi,
        "gar_turn": gar_turn,
        "gar_turn_k": k_turn,
        "gar_turn_n": len(turn_cases),
        "gar_turn_ci_low": turn_lo,
        "gar_turn_ci_high": turn_hi,
        "gar_per_turn": rate_ci(per_turn_k, per_turn_n, z)[0],
        "per_turn_k": per_turn_k,
        "per_turn_n": per_turn_n,
        "acc": acc,
        "acc_k": acc_k if acc_source else None,
        "acc_n": acc_n if acc_source else None,
        "acc_ci_low": acc_lo,
        "acc_ci_high": acc_hi,
        "acc_source": acc_source,
        "gap": gap,
        "bound_violation": (acc > gar) if gap is not None else None,
        "passed_without_gold": passed_without_gold,
        "large_slack": (gap > settings.slack_threshold) if gap is not None else None,
        "class_counts": {c: counts.get(c, 0) for c in ACTION_CLASSES},
        "n_empty": sum(not em for case in cases for turn in case.turn_classes for em in turn),
    }


@dataclass
class Diagnostics:
    """Result of :func:`compute_diagnostics`: one row per category plus run-level facts."""

    rows: list[dict[str, Any]]
    class_counts: dict[str, int]
    capability: dict[str, Any]
    config: dict[str, Any]
    settings: dict[str, Any]
    cases: list[CaseClasses] = field(default_factory=list)

    def to_dict(self, include_cases: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "rows": self.rows,
            "class_counts": self.class_counts,
            "capability": self.capability,
            "config": self.config,
            "settings": self.settings,
        }
        if include_cases:
            d["cases"] = [asdict(c) for c in self.cases]
        return d


def capability_check(class_counts: Mapping[str, int], t_cap: int = 10) -> dict[str, Any]:
    """Whether each non-OTHER class was emitted at least ``t_cap`` times over the run."""
    per_class = {c: class_counts.get(c, 0) >= t_cap for c in ACTION_CLASSES if c != OTHER}
    return {
        "t_cap": t_cap,
        "passed": per_class,
        "ok": all(per_class.values()),
        "below": [c for c, ok in per_class.items() if not ok],
    }


def compute_diagnostics(
    records: Iterable[CaseRecord],
    config: ClassifierConfig = DEFAULT,
    settings: DiagnosticsSettings | None = None,
    header_acc: Mapping[str, tuple[int, int]] | None = None,
    benchmark: MultiTurnBenchmark[Any] | None = None,
) -> Diagnostics:
    """GAR, Acc and flags per category (see the module docstring).

    ``header_acc`` maps a category to ``(correct, total)`` used as Acc for a category none of
    whose records has a ``passed`` verdict (e.g. BFCL's score-file header). Rows follow the
    display order of ``benchmark``'s categories
    (:func:`callscope.benchmarks.protocol.category_key`; default: the
    :data:`~callscope.benchmarks.protocol.DEFAULT_BENCHMARK`).
    """
    bench = benchmark_or_default(benchmark)
    settings = settings or DiagnosticsSettings()
    cases = [classify_case(r, config, settings.multi_label) for r in records]
    by_cat: dict[str, list[CaseClasses]] = {}
    for case in cases:
        by_cat.setdefault(case.category, []).append(case)
    header_acc = header_acc or {}
    rows = [
        category_row(cat, by_cat[cat], settings, header_acc.get(cat))
        for cat in sorted(by_cat, key=lambda c: category_key(bench, c))
    ]
    totals = Counter(c for case in cases for turn in case.turn_classes for em in turn for c in em)
    class_counts = {c: totals.get(c, 0) for c in ACTION_CLASSES}
    capability = capability_check(class_counts, settings.t_cap)
    for row in rows:  # the capability check beside the flags it makes meaningless
        below = [g for g in str(row["gold_class"]).split("/") if g in capability["below"]]
        if below:
            row["capability_failed"] = ", ".join(
                f"{g} emitted {class_counts[g]}x < {settings.t_cap}" for g in below
            )
    return Diagnostics(
        rows=rows,
        class_counts=class_counts,
        capability=capability,
        config=config.to_dict(),
        settings=settings.to_dict(),
        cases=cases,
    )


# --------------------------------------------------------------------------- rendering


def row_flags(row: Mapping[str, Any]) -> str:
    """The flags of a diagnostic row as text: bound violation, passed without the gold
    class, large slack, errors (``""`` when none)."""
    flags = []
    if row.get("capability_failed"):
        flags.append(f"capability check failed ({row['capability_failed']})")
    if row.get("bound_violation"):
        flags.append("bound violation (Acc > GAR)")
    if row.get("passed_without_gold"):
        flags.append(f"{row['passed_without_gold']} passed without gold class")
    if row.get("large_slack"):
        flags.append("large slack (execution failure)")
    if row.get("n_errors"):
        flags.append(f"{row['n_errors']} errors")
    return "; ".join(flags)


COLUMNS: tuple[str, ...] = (
    "Category",
    "Gold",
    "n",
    "GAR case % [95% CI]",
    "GAR turn % [95% CI]",
    "per-turn %",
    "Acc % [95% CI]",
    "GAR−Acc pp",
    "Flags",
)


def _cells(row: Mapping[str, Any]) -> list[str]:
    acc = pct_ci(row.get("acc"), row.get("acc_ci_low"), row.get("acc_ci_high"))
    if row.get("acc_source") == "header":
        acc += " (header)"
    return [
        str(row["category"]),
        str(row["gold_class"]),
        str(row["n"]),
        pct_ci(row.get("gar_case"), row.get("gar_case_ci_low"), row.get("gar_case_ci_high")),
        pct_ci(row.get("gar_turn"), row.get("gar_turn_ci_low"), row.get("gar_turn_ci_high")),
        pct(row.get("gar_per_turn")),
        acc,
        pct(row.get("gap"), signed=True),
        row_flags(row),
    ]


def diagnostics_table(rows: Sequence[Mapping[str, Any]], title: str | None = None) -> Table:
    """The per-category rows as a :class:`Table` (percentages, Wilson 95% intervals; rows
    with a bound violation styled red in the terminal)."""
    return Table(
        COLUMNS,
        [_cells(r) for r in rows],
        title=title,
        align="".join("r" if c == "n" else "l" for c in COLUMNS),
        row_styles=["red" if r.get("bound_violation") else None for r in rows],
        terminal_drop=("GAR turn % [95% CI]", "per-turn %"),
    )


def rich_table(
    rows: Sequence[Mapping[str, Any]], title: str | None = "Action-class diagnostics"
) -> RichTable:
    """The per-category rows as a :class:`rich.table.Table` (bound violations in red)."""
    return diagnostics_table(rows, title).to_rich()
