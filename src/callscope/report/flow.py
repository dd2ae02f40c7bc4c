"""How a run's calls flow through the SAAG cascade: the data of the report's first figure.

Pure functions over the outcome dicts of :func:`callscope.report.aggregate.load_outcomes`.
Every call is counted once, in the segment of the stage where the cascade stopped it
(:data:`SEGMENTS`): ``passed`` (all three stages), one segment per failure kind of stages 1-3
(a call showing several kinds is counted under the first in cascade order,
:data:`callscope.report.aggregate.FAILURE_KINDS`; the failure-breakdown table counts every
kind), ``stage<k>`` for a failure without a recorded kind, and ``error`` (no reply). So the
segments of one bar partition its calls and their shares sum to 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from callscope.report import aggregate as agg

#: bar segments in cascade order, and the stage each belongs to (0 passed, 4 no reply)
SEGMENT_STAGE: dict[str, int] = {
    "passed": 0,
    "wrong_name": 1,
    "no_name": 1,
    "stage1": 1,
    "missing": 2,
    "spurious": 2,
    "drifted": 2,
    "stage2": 2,
    "numeric": 3,
    "hard": 3,
    "soft": 3,
    "stage3": 3,
    "error": 4,
}
SEGMENTS: tuple[str, ...] = tuple(SEGMENT_STAGE)
#: the bar of attempt 1 (shared by every mode: the first attempt is computed once per case)
FIRST = "attempt 1"
FLOW_COLUMNS = ("model", "bar", "mode", "segment", "stage", "n", "total", "share", "solved")


def _bar_rows(
    model: str, bar: str, mode: str, items: list[tuple[str, bool]]
) -> list[dict[str, Any]]:
    total = len(items)
    solved = sum(ok for _, ok in items)
    counts = {s: 0 for s in SEGMENTS}
    for seg, _ in items:
        counts[seg] += 1
    return [
        {
            "model": model,
            "bar": bar,
            "mode": mode,
            "segment": seg,
            "stage": SEGMENT_STAGE[seg],
            "n": k,
            "total": total,
            "share": k / total if total else 0.0,
            "solved": solved,
        }
        for seg, k in counts.items()
    ]


def call_flow(outcomes: Iterable[agg.Outcomeish]) -> pd.DataFrame:
    """Per model, one bar for attempt 1 (one outcome per case: it is shared by the modes)
    and one per feedback mode other than ``direct`` for the final attempt; per bar one row per
    segment of :data:`SEGMENTS` with its count ``n``, the bar's ``total`` calls, ``share`` =
    n / total, and ``solved``: the bar's calls that solved their case (passed the cascade
    with the gold function name, the SAAG paper's solve; cases without gold never count).
    Rows in model, bar, segment order.

    Attempt 1 of ``direct`` is its final attempt, so direct mode has no bar of its own."""
    facts = agg.as_facts(outcomes)
    rows: list[dict[str, Any]] = []
    for model in sorted({f.model for f in facts}):
        mine = [f for f in facts if f.model == model]
        first: dict[str, agg.OutcomeFacts] = {}
        for f in mine:  # one per case, preferring one whose first attempt exists
            if f.case_id not in first or (not first[f.case_id].has_first and f.has_first):
                first[f.case_id] = f
        items = [(agg.first_segment(f), f.first_solved and f.has_gold) for f in first.values()]
        rows += _bar_rows(model, FIRST, "", items)
        modes = sorted({f.mode for f in mine} - {"direct"}, key=agg.mode_sort_key)
        for mode in modes:
            finals = [(f.final_segment, f.solved) for f in mine if f.mode == mode]
            rows += _bar_rows(model, f"final, {mode}", mode, finals)
    return pd.DataFrame(rows, columns=list(FLOW_COLUMNS))
