"""How a run's calls flow through the SAAG cascade: the data of the report's first figure,
and the segments its bars are split into (:data:`SEGMENTS`, their stage and legend text).

Pure functions over outcome dicts (:func:`callscope.report.load.load_outcomes`) or their
facts. Every call is counted once, in the segment of the stage where the cascade stopped it
(:data:`SEGMENTS`): ``passed`` (all three stages), one segment per failure kind of stages 1-3
(:class:`callscope.records.FailureKind`; a call showing several kinds is counted under the
first in cascade order, the failure-breakdown table counts every kind), ``stage<k>`` for a
failure without a recorded kind, and ``error`` (no reply). So the segments of one bar
partition its calls and their shares sum to 1. The segments follow ``FailureKind``: a new
kind gets its segment, stage and legend text from its entry in ``callscope/records/verdicts.py``
alone; the stage segments are :attr:`callscope.records.StageInfo.segment`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from callscope.records import FAILING_STAGES, FailureKind, stage_segment
from callscope.report.facts import OutcomeFacts, Outcomeish, as_facts, first_segment
from callscope.report.outcome import mode_sort_key

#: what each cascade stage checks, in the legend of a failure there without a recorded kind
_STAGE_CHECKS: dict[int, str] = {1: "name", 2: "args", 3: "value"}
#: the stage of the no-reply segment (after the three cascade stages)
NO_REPLY_STAGE = 4


def _segment_stages() -> dict[str, int]:
    out = {stage_segment(0): 0}
    for s in FAILING_STAGES:
        out.update({k.value: s.number for k in FailureKind.of_stage(s.number)})
        out[s.segment] = s.number
    out["error"] = NO_REPLY_STAGE
    return out


#: bar segments in cascade order, and the stage each belongs to (0 passed, 4 no reply):
#: passed, then per stage its failure kinds (:meth:`FailureKind.of_stage`) and ``stage<k>``,
#: then error
SEGMENT_STAGE: dict[str, int] = _segment_stages()
SEGMENTS: tuple[str, ...] = tuple(SEGMENT_STAGE)


def _label(segment: str) -> str:
    if segment == "passed":
        return "passed all 3 stages"
    if segment == "error":
        return "no reply (backend error)"
    stage = SEGMENT_STAGE[segment]
    if segment == stage_segment(stage):
        return f"{stage}: {_STAGE_CHECKS[stage]} (other)"
    return f"{stage}: {FailureKind(segment).label}"


#: the legend text of each segment, in :data:`SEGMENTS` order: ``<stage>: <what failed>``
#: (a kind's :attr:`FailureKind.label`)
SEGMENT_LABELS: dict[str, str] = {s: _label(s) for s in SEGMENTS}


def segment_label(segment: str) -> str:
    """The legend text of a call-flow segment (``<stage>: <what failed>``)."""
    return SEGMENT_LABELS.get(segment, segment)


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


def call_flow(outcomes: Iterable[Outcomeish]) -> pd.DataFrame:
    """Per model, one bar for attempt 1 (one outcome per case: it is shared by the modes)
    and one per feedback mode other than ``direct`` for the final attempt; per bar one row per
    segment of :data:`SEGMENTS` with its count ``n``, the bar's ``total`` calls, ``share`` =
    n / total, and ``solved``: the bar's calls that solved their case (passed the cascade
    with the gold function name, the SAAG paper's solve; cases without gold never count).
    Rows in model, bar, segment order.

    Attempt 1 of ``direct`` is its final attempt, so direct mode has no bar of its own."""
    facts = as_facts(outcomes)
    rows: list[dict[str, Any]] = []
    for model in sorted({f.model for f in facts}):
        mine = [f for f in facts if f.model == model]
        first: dict[str, OutcomeFacts] = {}
        for f in mine:  # one per case, preferring one whose first attempt exists
            if f.case_id not in first or (not first[f.case_id].has_first and f.has_first):
                first[f.case_id] = f
        items = [(first_segment(f), f.first_solved and f.has_gold) for f in first.values()]
        rows += _bar_rows(model, FIRST, "", items)
        modes = sorted({f.mode for f in mine} - {"direct"}, key=mode_sort_key)
        for mode in modes:
            finals = [(f.final_segment, f.solved) for f in mine if f.mode == mode]
            rows += _bar_rows(model, f"final, {mode}", mode, finals)
    return pd.DataFrame(rows, columns=list(FLOW_COLUMNS))
