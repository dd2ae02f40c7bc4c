"""Score rows ``{id, query, functions, output, gold?}`` -> the ``score`` output format.

The metric keys and their order come from :mod:`callscope.saag.metrics`."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from callscope.parse import parse_output
from callscope.records import Diagnosis
from callscope.saag.cascade import diagnose
from callscope.saag.extrinsic import extrinsic
from callscope.saag.groundings import Grounding, Judge, get_grounding
from callscope.saag.messages import correction_message
from callscope.saag.metrics import GOLD_ROW_KEYS, INTRINSIC_KEYS
from callscope.types import Case, ParseResult

#: the intrinsic metric keys of a score row, in cascade order (:data:`METRIC_SPECS
#: <callscope.saag.metrics.METRIC_SPECS>`)
METRICS: tuple[str, ...] = INTRINSIC_KEYS
#: the gold-dependent keys of a score row (present only when the row has a gold call)
GOLD_KEYS: tuple[str, ...] = GOLD_ROW_KEYS


def score_parsed(
    parsed: ParseResult,
    case: Case,
    grounding: str | Grounding | None = None,
    judge: Judge | None = None,
) -> tuple[Diagnosis, dict[str, Any]]:
    """Diagnose the first parsed call of ``parsed`` for ``case`` in the ``grounding`` mode
    (:mod:`callscope.saag.groundings`; default the registry-aware one); return the diagnosis
    and the output row (``score`` format). The row names the mode (``grounding``) and every
    grounded argument with its reason (``grounded``)."""
    call = parsed.first
    mode = get_grounding(grounding)
    d = diagnose(call, case.functions, case.query, grounding=mode, judge=judge)
    row = diagnosis_row(case.id, d, mode.name, parsed.error)
    if case.gold is not None:
        ext = extrinsic(call, case.gold, case.functions)
        row.update(ext)
        row["solved"] = d.passed and bool(ext["name_match"])
    return d, row


def diagnosis_row(
    case_id: str, d: Diagnosis, grounding: str, parse_error: str | None = None
) -> dict[str, Any]:
    """The gold-free part of a ``score`` row for a diagnosis made in the ``grounding`` mode:
    ``id``, ``stage``, the metrics, the failure lists, the fix, the parse error, the mode's
    name and the grounded values."""
    row: dict[str, Any] = {"id": case_id, "stage": d.stage}
    for m in METRICS:
        row[m] = getattr(d, m)
    row.update(
        nearest=d.nearest,
        missing=d.missing,
        drifted=d.drifted,
        spurious=d.spurious,
        fix=correction_message(d),
        parse_error=parse_error,
        grounding=grounding,
        grounded=d.grounded,
    )
    return row


def score_row(
    row: dict[str, Any], grounding: str | Grounding | None = None, judge: Judge | None = None
) -> dict[str, Any]:
    """Score one input row (in the ``grounding`` mode). A malformed row yields ``{"id",
    "error"}`` instead of raising."""
    rid = row.get("id") if isinstance(row, dict) else None
    if isinstance(rid, int) and not isinstance(rid, bool) and rid.bit_length() > 14_000:
        rid = hex(rid)  # over Python's int/str digit limit: kept, as text that can be printed
    try:
        case = Case.from_dict(row)
    except ValueError as exc:
        return {"id": rid, "error": f"malformed row: {exc}"}
    if "output" not in row:
        return {"id": rid, "error": "malformed row: no 'output'"}
    try:
        _, out = score_parsed(parse_output(row["output"]), case, grounding, judge)
    except RecursionError:  # e.g. a native call object nested thousands deep
        return {"id": rid, "error": "output nested too deeply to score"}
    out["id"] = rid  # keep the caller's id as given (Case ids are strings)
    return out


@dataclass
class ScoreSummary:
    """Per-stage failure counts and the mean of each metric over rows where it is defined."""

    rows: int = 0
    errors: int = 0
    stages: Counter[int] = field(default_factory=Counter)
    means: dict[str, float | None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


class _ExactSum:
    """A running sum whose total is ``math.fsum`` of every value added (Shewchuk's
    non-overlapping partials, as ``math.fsum`` keeps them): O(1) memory in practice."""

    __slots__ = ("partials",)

    def __init__(self) -> None:
        self.partials: list[float] = []

    def add(self, x: float) -> None:
        i = 0
        for y in self.partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                self.partials[i] = lo
                i += 1
            x = hi
        self.partials[i:] = [x]

    def total(self) -> float:
        return math.fsum(self.partials)


class SummaryAccumulator:
    """:func:`summarize` one row at a time (``add``), for a stream of rows of any length;
    ``summary()`` gives the same :class:`ScoreSummary` as :func:`summarize` over the rows
    added: each mean is ``fsum / n`` (``statistics.fmean``'s definition) of the defined values."""

    def __init__(self) -> None:
        self.rows = 0
        self.errors = 0
        self.stages: Counter[int] = Counter()
        self.sums = {key: _ExactSum() for key in (*METRICS, *GOLD_KEYS)}
        self.counts = dict.fromkeys(self.sums, 0)

    def add(self, row: dict[str, Any]) -> None:
        self.rows += 1
        if "error" in row:
            self.errors += 1
            return
        self.stages[row["stage"]] += 1
        for key, acc in self.sums.items():
            value = row.get(key)
            if value is not None:
                acc.add(float(value))
                self.counts[key] += 1

    def summary(self) -> ScoreSummary:
        s = ScoreSummary(rows=self.rows, errors=self.errors, stages=Counter(self.stages))
        for key, acc in self.sums.items():
            n = self.counts[key]
            s.counts[key] = n
            s.means[key] = acc.total() / n if n else None
        return s


def summarize(rows: Iterable[dict[str, Any]]) -> ScoreSummary:
    """Rows (any iterable, read once) -> per-stage counts of the scored rows, how many were
    malformed, and each metric's mean (``fsum / n``) over the rows where it is defined."""
    acc = SummaryAccumulator()
    for row in rows:
        acc.add(row)
    return acc.summary()
