"""Grade a multi-turn trajectory with BFCL's own ``multi_turn_checker``.

What is graded: per turn, per step, the call strings of the calls that were accepted and
executed, REBUILT here from the recorded names and argument values through
:func:`callscope.benchmarks.bfcl.env.validate_call` against the tools the case makes available at that
turn (a stored trajectory is never trusted to hold safe strings). Steps without an accepted call
are dropped, as BFCL drops steps that decode to nothing. This is BFCL's
``multi_turn_model_result_list_decoded``.

Semantics, as ``bfcl_eval.eval_checker.eval_runner`` + ``multi_turn_checker``:

* a recorded model error fails the case (``multi_turn:inference_error``);
* a number of turns different from the gold's fails it (``multi_turn:force_terminated``);
* otherwise BFCL's checker runs, under :func:`callscope.benchmarks.bfcl.env.bfcl_sandbox` with a model
  name no other call uses; the instances it leaves in its module globals are deleted and the
  simulator module globals restored afterwards.

Deliberate difference from BFCL: calls to tools that were not available at that turn (for
example a miss_func held-out tool before its turn) never reach the checker, because they never
reached the simulator; BFCL's executor would have run them. One gold answer in
``bfcl-eval==2026.3.23`` depends on this (``multi_turn_miss_func_49`` calls the held-out ``tail``
at turn 1), so strict gold replay passes 799/800 (see ``tests/test_mt_grade.py``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from callscope.benchmarks.bfcl.env import (
    CallRejected,
    bfcl_sandbox,
    unique_model_name,
    validate_call,
)
from callscope.benchmarks.bfcl.multi_turn import MTCase
from callscope.records import Trajectory
from callscope.types import ToolCall


@dataclass
class TurnVerdict:
    """``status``: ``passed``, ``failed``, ``skipped`` (empty gold, not checked by BFCL),
    ``unchecked`` (after the failing turn, or the case was not graded)."""

    index: int
    status: str
    gold_calls: int
    model_calls: int
    steps: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Verdict:
    passed: bool
    reason: str
    error_type: str | None = None
    failed_turn: int | None = None
    per_turn: list[TurnVerdict] = field(default_factory=list)
    decoded: list[list[list[str]]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "reason": self.reason,
            "error_type": self.error_type,
            "failed_turn": self.failed_turn,
            "per_turn": [t.to_dict() for t in self.per_turn],
            "decoded": self.decoded,
            "details": self.details,
        }


def sanitized_calls(case: MTCase, trajectory: Trajectory) -> list[list[list[str]]]:
    """BFCL-shaped decoded results: per turn, per step with an accepted call, the rebuilt
    strings of the accepted calls (re-validated against ``case``'s availability)."""
    out: list[list[list[str]]] = []
    for turn in trajectory.turns:
        available = case.available_at(turn.index)
        steps: list[list[str]] = []
        for step in turn.steps:
            calls: list[str] = []
            for res in step.results:
                if not res.accepted:
                    continue
                try:
                    calls.append(validate_call(ToolCall(res.name, res.arguments), available))
                except CallRejected:
                    continue
            if calls:
                steps.append(calls)
        out.append(steps)
    return out


def _checker() -> Any:
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    return multi_turn_checker


def bfcl_check(case: MTCase, decoded: list[list[list[str]]]) -> dict[str, Any]:
    """BFCL's ``multi_turn_checker`` on ``decoded`` (strings that must come from
    :func:`callscope.benchmarks.bfcl.env.validate_call`: the checker ``eval``s them), isolated.

    Requires ``len(decoded) == len(case.ground_truth)``.
    """
    if len(decoded) != len(case.ground_truth):
        raise ValueError("decoded results must have one entry per gold turn")
    checker = _checker()
    model_name = unique_model_name()
    entry = {
        "id": case.id,
        "initial_config": copy.deepcopy(case.initial_config),
        "involved_classes": list(case.involved_classes),
    }
    with bfcl_sandbox(executor_prefix=model_name):
        return checker(decoded, case.ground_truth, entry, case.category, model_name)


def _summarise(result: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    """A JSON-safe summary of a failing checker result, and the failing turn."""
    message = str(result.get("error_message", ""))
    details = result.get("details") or {}
    summary: dict[str, Any] = {"error_message": message}
    if isinstance(details.get("differences"), dict):
        summary["differing_attributes"] = sorted(details["differences"])
    if isinstance(details.get("missing_items"), list):
        summary["missing_items"] = [str(x)[:500] for x in details["missing_items"]]
    turn: int | None = None
    m = re.search(r"for turn (\d+)", message)
    if m:
        turn = int(m.group(1))
    else:
        executed = result.get("execution_result") or details.get("execution_result")
        if isinstance(executed, list) and executed:
            turn = len(executed) - 1
    return summary, turn


def grade(case: MTCase, trajectory: Trajectory) -> Verdict:
    """BFCL's verdict on ``trajectory`` (see module doc). Never raises on model behaviour."""
    if trajectory.case_id != case.id:
        raise ValueError(f"trajectory of {trajectory.case_id!r} graded against {case.id!r}")
    gold = case.ground_truth
    decoded = sanitized_calls(case, trajectory)

    def per_turn(failed: int | None, checked: bool) -> list[TurnVerdict]:
        rows = []
        for i, g in enumerate(gold):
            steps = decoded[i] if i < len(decoded) else []
            n_steps = len(trajectory.turns[i].steps) if i < len(trajectory.turns) else 0
            if not checked or (failed is not None and i > failed):
                status = "unchecked"
            elif failed == i:
                status = "failed"
            elif not g:
                status = "skipped"
            else:
                status = "passed"
            rows.append(TurnVerdict(i, status, len(g), sum(len(s) for s in steps), n_steps))
        return rows

    if trajectory.error is not None:
        return Verdict(
            False,
            f"model error: {trajectory.error.get('message', '')}",
            "multi_turn:inference_error",
            None,
            per_turn(None, False),
            decoded,
            {"error": trajectory.error},
        )
    if len(decoded) != len(gold):
        reason = f"force-terminated: {len(decoded)} turns for {len(gold)} gold turns" + (
            " (step limit)" if trajectory.force_quit else ""
        )
        return Verdict(
            False, reason, "multi_turn:force_terminated", None, per_turn(None, False), decoded
        )
    result = bfcl_check(case, decoded)
    if result.get("valid"):
        return Verdict(True, "passed", None, None, per_turn(None, True), decoded)
    summary, failed = _summarise(result)
    return Verdict(
        False,
        summary["error_message"],
        str(result.get("error_type")),
        failed,
        per_turn(failed, True),
        decoded,
        summary,
    )
