"""The records of a SAAG correction-loop run, as the run store keeps them.

An :class:`Outcome` is the loop's result for one (case, mode): its :class:`Attempt`\\ s, each
with the request, the reply, the parsed calls, the ``score`` row and the feedback sent after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from callscope.types import Mode


@dataclass
class Attempt:
    """One model call of the loop and everything the cascade said about it."""

    attempt: int
    messages: list[dict[str, Any]]
    reply: dict[str, Any] | None
    parsed: list[dict[str, Any]]
    row: dict[str, Any] | None  # the `score` output row of this attempt
    diagnosis: dict[str, Any] | None
    feedback: str | None = None  # the turn sent after this attempt (None when it stopped)
    error: str | None = None
    error_kind: str | None = None
    latency_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Outcome:
    """The loop's result for one (case, mode)."""

    case_id: str
    mode: Mode
    attempts: list[Attempt] = field(default_factory=list)
    error: str | None = None
    error_kind: str | None = None
    #: the attempt that is the loop's answer (the gated mode's best so far); None: the last
    answer_at: int | None = None
    #: why the loop stopped: passed, budget, error, gate (nothing confident to correct),
    #: regression (a revision ranked below the best so far), repeat (the model repeated its
    #: call through ``repeat_patience`` corrections); None when not recorded
    stop: str | None = None

    @property
    def final_row(self) -> dict[str, Any] | None:
        """The answer's score row: attempt ``answer_at`` when set, else the last scored one."""
        if self.answer_at is not None:
            for a in self.attempts:
                if a.attempt == self.answer_at and a.row is not None:
                    return a.row
        rows = [a.row for a in self.attempts if a.row is not None]
        return rows[-1] if rows else None

    @property
    def solved_at(self) -> int | None:
        for a in self.attempts:
            if a.row is not None and a.row.get("solved"):
                return a.attempt
        return None

    def export_row(self, model: str, scale: int | None) -> dict[str, Any]:
        """The final row in the ``score`` format plus ``attempts``, ``mode``, ``solved_at``."""
        row = dict(self.final_row or {"id": self.case_id})
        row.update(
            attempts=len(self.attempts),
            mode=self.mode,
            solved_at=self.solved_at,
            model=model,
            scale=scale,
        )
        if self.answer_at is not None:
            row["answer_at"] = self.answer_at
        if self.stop is not None:
            row["stop"] = self.stop
        if self.error:
            row["error"] = self.error
            row["error_kind"] = self.error_kind
        return row
