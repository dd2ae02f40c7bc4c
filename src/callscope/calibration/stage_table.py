"""The SAAG stage-mix table of a calibrate run: where the model's tool calls fail, per
category (the first failing stage of each call, as shares of the calls scored), built from
the diagnostic rows of :meth:`callscope.runs.calibration_store.CalibrationResult.rows` (the keys
``category``, ``tool_calls_scored`` and ``calls_stage0`` .. ``calls_stage3``) as a
:class:`~callscope.core.table.Table`, which renders every format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from callscope.core.table import Table, pct

STAGE_MIX_COLUMNS: tuple[str, ...] = (
    "Category",
    "tool calls",
    "passed SAAG %",
    "stage 1 (registry) %",
    "stage 2 (structure) %",
    "stage 3 (grounding) %",
)


def stage_mix_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """Where the model's tool calls fail, per category (SAAG first failing stage: the shares
    ``calls_stage0..3`` of the rows), one row per category."""
    return Table(
        STAGE_MIX_COLUMNS,
        [
            [
                r["category"],
                r["tool_calls_scored"],
                *(pct(r.get(f"calls_stage{k}")) for k in range(4)),
            ]
            for r in rows
        ],
    )
