"""The SAAG stage mix of a multi-turn conversation: the cascade's verdict on every parsed call
of a :class:`~callscope.records.Trajectory`, computed once when the conversation is recorded
and stored with it (:meth:`callscope.store.run_store.RunStore.save_conversation`), so that
diagnostics and the report read the stored verdicts and never re-run the cascade.

Beyond the "Calibration is the Bottleneck" paper (which classifies emissions, not calls): each
call of a completed turn (``Trajectory.turns``; a model error's partial turn is not scored) is
checked by :func:`callscope.saag.cascade.diagnose` against the tools available at its turn and
the user text sent so far, with the outputs of earlier accepted calls as the grounding context;
``stage`` 0 means it passed all three stages. Retracted emissions are scored (the model emitted
them); a probe's placeholder has no calls.

This module is pure: the tools of a turn come from a callable (the benchmark's ``tools_at``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from callscope.core.serde import Record
from callscope.records import STAGES, Trajectory
from callscope.saag import cascade
from callscope.saag.groundings import Grounding, get_grounding
from callscope.types import ToolCall


@dataclass(frozen=True)
class CallStage(Record):
    """The cascade's verdict on one call of a conversation: where it is (``turn``, ``step``
    within the turn, ``index`` within the step's calls), its first failing ``stage`` (0 =
    passed) and its failure kinds (:class:`~callscope.records.FailureKind` values)."""

    turn: int
    step: int
    index: int
    stage: int
    kinds: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CallStages(Record):
    """Every call's :class:`CallStage` of one conversation, with what they were computed
    under: the stage-3 ``grounding`` mode and the cascade's
    :data:`~callscope.saag.cascade.CASCADE_VERSION` (verdicts of another mode or version are
    stale: :meth:`is_current`)."""

    grounding: str
    cascade_version: int
    calls: list[CallStage] = field(default_factory=list)

    def is_current(self, grounding: str | None) -> bool:
        """Whether these verdicts are those of ``grounding`` (``None``: the default mode)
        under the running cascade version."""
        return (
            self.cascade_version == cascade.CASCADE_VERSION
            and self.grounding == get_grounding(grounding).name
        )


def call_stages(
    trajectory: Trajectory,
    tools_at: Callable[[int], list[dict[str, Any]]],
    grounding: str | Grounding | None = None,
) -> CallStages:
    """The cascade's verdict on every call of ``trajectory``'s completed turns (see the
    module doc), in the ``grounding`` mode (``None``: the default); ``tools_at(turn)`` gives
    the JSON-schema specs available at a turn.

    >>> from callscope.records import StepRecord, TurnRecord
    >>> spec = {"name": "switch", "parameters": {"type": "object", "properties": {}}}
    >>> step = StepRecord("", None, [{"name": "lamp", "arguments": {}}], None, "native", [], [])
    >>> turn = TurnRecord(0, [{"role": "user", "content": "Lamp on."}], ["switch"], steps=[step])
    >>> stages = call_stages(Trajectory("c", "cat", turns=[turn]), lambda t: [spec])
    >>> [(s.turn, s.step, s.index, s.stage, s.kinds) for s in stages.calls]
    [(0, 0, 0, 1, ['wrong_name'])]
    """
    mode = get_grounding(grounding)
    out: list[CallStage] = []
    user_text: list[str] = []
    observed: list[str] = []
    for turn in trajectory.turns:
        user_text.extend(str(m.get("content") or "") for m in turn.user_messages)
        functions = tools_at(turn.index)
        for j, step in enumerate(turn.steps):
            for i, call in enumerate(step.calls):
                d = cascade.diagnose(
                    ToolCall(call["name"], call.get("arguments") or {}),
                    functions,
                    "\n".join(user_text),
                    grounding=mode,
                    context=observed,
                )
                out.append(
                    CallStage(turn.index, j, i, d.stage, [str(k) for k in d.failure_kinds()])
                )
            observed.extend(str(r.output or "") for r in step.results if r.accepted)
    return CallStages(mode.name, cascade.CASCADE_VERSION, out)


#: the keys of :func:`stage_counts`, by stage 0-3 (a calibrate run's ``calls_<key>`` columns,
#: :mod:`callscope.calibration.stage_table`): the stage number, not the tables'
#: :attr:`~callscope.records.StageInfo.segment`, as those columns have always been named
CALL_MIX_KEYS: tuple[str, ...] = tuple(f"stage{s.number}" for s in STAGES if s.number is not None)


def stage_counts(stages: Iterable[CallStage]) -> Counter[str]:
    """Calls per first failing stage, keyed ``stage0`` (passed) .. ``stage3``: the counts
    whose shares are the stage-mix table's columns.

    >>> stage_counts([CallStage(0, 0, 0, 0), CallStage(0, 1, 0, 3, ["hard"])])
    Counter({'stage0': 1, 'stage3': 1})
    """
    return Counter(CALL_MIX_KEYS[s.stage] for s in stages)
