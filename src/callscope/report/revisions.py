"""What each revision of the correction loop kept, lost and gained, for one outcome (issue
17): the scored attempts as a trajectory, what an attempt had right (:data:`KEPT_ITEMS`), and
the per-outcome *overcorrection* indicator (:func:`lost_any`). Pure functions over one
outcome dict; :func:`callscope.report.aggregate.revision_tradeoff` counts them per model and
mode.
"""

from __future__ import annotations

from typing import Any

from callscope.records import ScoreRow
from callscope.report.outcome import OutcomeRow, gold_args

#: what an attempt can have right, in cascade order, then against the gold: passing stage 1
#: (a registered name), stage 2 (the schema's parameters), stage 3 (grounded values: the
#: attempt passed), the gold name, the gold arguments (precision = recall = 1)
KEPT_ITEMS: tuple[str, ...] = ("stage1", "stage2", "stage3", "name", "args")


def trajectory_step(attempt: int, row: ScoreRow) -> dict[str, Any]:
    """One scored attempt as the revision analysis needs it: ``attempt``, ``stage`` and, with
    gold, ``name`` (gold name) and ``args`` (gold arguments); the stage items of
    :data:`KEPT_ITEMS` follow from ``stage``."""
    step: dict[str, Any] = {"attempt": int(attempt), "stage": row.get("stage")}
    if "name_match" in row:
        step["name"] = bool(row.get("name_match"))
        step["args"] = gold_args(row)
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
