"""The stage-3 reference rows of a BFCL leaderboard run (:mod:`callscope.runs.leaderboard`):
the unstated-value test on the installed gold answers (a flag is a false alarm) and on the
same answers with one value replaced by one no request states (a flag is a detection)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from callscope.saag.answer import diagnose_answer
from callscope.types import Case, ParseResult, ToolCall

if TYPE_CHECKING:
    from callscope.runs.leaderboard import CaseTable

#: the values a perturbed gold call gets: nowhere in any BFCL request
UNSTATED_TEXT = "Zyxqv Plorth"
UNSTATED_NUMBER = 987654.321


def _perturbed(call: dict[str, Any]) -> dict[str, Any] | None:
    """A gold call with its first string or number argument replaced by a value no request
    states (:data:`UNSTATED_TEXT`, :data:`UNSTATED_NUMBER`); ``None`` when it has none."""
    arguments = dict(call["arguments"])
    for name, value in arguments.items():
        if isinstance(value, str) and value:
            arguments[name] = UNSTATED_TEXT
            return {"name": call["name"], "arguments": arguments}
        if isinstance(value, int | float) and not isinstance(value, bool):
            arguments[name] = UNSTATED_NUMBER
            return {"name": call["name"], "arguments": arguments}
    return None


@dataclass(frozen=True)
class Reference:
    """The stage-3 unstated-value test on answers whose truth is known: the installed gold
    answers (every value stated or implied: a flag is a false alarm) and the same answers
    with one value replaced by one no request states (a flag is a detection)."""

    gold: int
    gold_flagged: int
    perturbed: int
    perturbed_flagged: int


def unstated_reference(
    table: CaseTable, grounding: str | None = None
) -> tuple[Reference, np.ndarray]:
    """:class:`Reference` over the call cases of ``table`` (no-call cases have no gold call):
    an answer is flagged when a call has a value of the ``unstated`` kinds (``hard``,
    ``numeric``: :attr:`callscope.records.KindInfo.group`); and per case
    whether its gold answer is flagged."""

    def flagged(calls: list[dict[str, Any]], case: Case) -> bool:
        parsed = ParseResult(
            calls=tuple(ToolCall(name=c["name"], arguments=c["arguments"]) for c in calls)
        )
        verdict = diagnose_answer(
            parsed, case.functions, case.query, grounding=grounding, expect_call=True
        )
        return any(c.diagnosis.in_group("unstated") for c in verdict.checked)

    flags = np.zeros(len(table.cases), dtype=bool)
    gold = gold_flagged = perturbed = perturbed_flagged = 0
    for i, case in enumerate(table.cases):
        calls = list(case.gold_calls or ())
        if not calls:
            continue
        gold += 1
        flags[i] = flagged(calls, case)
        gold_flagged += flags[i]
        changed = _perturbed(calls[0])
        if changed is not None:
            perturbed += 1
            perturbed_flagged += flagged([changed, *calls[1:]], case)
    return Reference(gold, int(gold_flagged), perturbed, perturbed_flagged), flags
