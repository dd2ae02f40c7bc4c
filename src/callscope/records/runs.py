"""The correction loop's :class:`Attempt` / :class:`Outcome` and a multi-turn conversation
(:mod:`callscope.records`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from callscope.core.serde import Record
from callscope.records.answers import is_record
from callscope.records.verdicts import ScoreRow
from callscope.types import ACTION_CLASSES, OTHER, Mode

#: the step limit of a conversation when a benchmark states none (BFCL's
#: ``MAXIMUM_STEP_LIMIT``, which ``callscope.benchmarks.bfcl.categories`` sets from this)
DEFAULT_MAX_STEPS = 20


# --------------------------------------------------------------------------- the correction loop


@dataclass
class Attempt:
    """One model call of the loop and everything the cascade said about it."""

    attempt: int
    messages: list[dict[str, Any]]
    reply: dict[str, Any] | None
    parsed: list[dict[str, Any]]
    row: ScoreRow | None  # the `score` output row of this attempt
    diagnosis: dict[str, Any] | None
    feedback: str | None = None  # the turn sent after this attempt (None when it stopped)
    error: str | None = None
    error_kind: str | None = None
    latency_s: float = 0.0
    #: the guard's action class of the turn (:mod:`callscope.guard.record`; ``None`` for the
    #: loop's attempts, and then not stored): its row is :func:`callscope.saag.score.turn_row`
    action: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        if d["action"] is None:
            del d["action"]
        return d


#: the keys :meth:`Outcome.export_row` adds to the final score row (the outcome's, not the row's)
EXPORT_KEYS = (
    "attempts", "mode", "solved_at", "model", "scale", "answer_at", "stop", "error", "error_kind",
)  # fmt: skip
#: the key of an outcome stored without its rows (:meth:`Outcome.stored_rows`) that names its
#: answering attempt (:attr:`Outcome.final_at`; its ``final`` row is computed when read)
ROW_AT = "$row_at"


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
    def final_at(self) -> int | None:
        """The attempt whose row is the answer's: ``answer_at`` when set (and scored), else
        the last scored one; ``None`` when no attempt was scored."""
        scored = [a.attempt for a in self.attempts if a.row is not None]
        if self.answer_at is not None and self.answer_at in scored:
            return self.answer_at
        return scored[-1] if scored else None

    @property
    def final_row(self) -> ScoreRow | None:
        """The answer's score row: that of attempt :attr:`final_at`."""
        at = self.final_at
        return next((a.row for a in self.attempts if a.attempt == at), None)

    @property
    def solved_at(self) -> int | None:
        for a in self.attempts:
            if a.row is not None and a.row.get("solved"):
                return a.attempt
        return None

    def export_row(self, model: str, scale: int | None) -> dict[str, Any]:
        """The final row in the ``score`` format plus the outcome's own keys
        (:data:`EXPORT_KEYS`)."""
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

    def stored_rows(
        self, model: str, scale: int | None
    ) -> tuple[dict[str, object], ScoreRow | None]:
        """The ``final`` and ``first`` the run store keeps for this outcome. When every scored
        attempt keeps its verdict whole (version 3,
        :func:`~callscope.records.answers.verdict_record`: the store keeps it without its
        row), only the outcome's own keys (:data:`EXPORT_KEYS`) and :data:`ROW_AT`, and no
        ``first``: the rows are computed when read (:mod:`callscope.store.upgrade`).
        Otherwise (a verdict in an older form) the :meth:`export_row` and the first attempt's
        row, as before."""
        export = self.export_row(model, scale)
        if all(a.row is None or is_record(a.diagnosis) for a in self.attempts):
            own: dict[str, object] = {k: export[k] for k in EXPORT_KEYS if k in export}
            return {ROW_AT: self.final_at, **own}, None
        return export, self.attempts[0].row if self.attempts else None


# --------------------------------------------------------------------------- multi-turn


@dataclass(frozen=True)
class ExecResult(Record):
    """What happened to one call. ``call`` is the rebuilt call string when accepted."""

    name: str
    arguments: dict[str, Any]
    accepted: bool
    output: str
    call: str | None = None
    reason: str | None = None  # unavailable | bad_name | bad_argument_name | not_literal | ...


@dataclass
class StepRecord(Record):
    """One model query within a turn. ``retracted``: a probe removed this emission before its
    calls executed (it is still the model's emission). ``placeholder``: a probe wrote this
    step (CRI-bypass abstention); it is not a model emission."""

    text: str
    tool_calls: list[dict[str, Any]] | None
    calls: list[dict[str, Any]]
    parse_error: str | None
    parse_form: str | None
    results: list[ExecResult]
    available: list[str]
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    retracted: bool = False
    placeholder: bool = False
    #: prompt tokens the engine computed (the rest re-used a kept or live prefix; ``None``:
    #: the backend did not say)
    prompt_tokens_evaluated: int | None = None


@dataclass
class TurnRecord(Record):
    """One turn: the user messages sent, the tools available, the steps."""

    index: int
    user_messages: list[dict[str, Any]]
    available: list[str]
    added_functions: list[str] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)


@dataclass
class Trajectory(Record):
    """A whole conversation. ``turns`` holds the turns BFCL would keep in its result (the
    force-quit turn included); a turn cut by a model error is kept in ``partial_turn``.
    ``probe`` is the probe's :meth:`~callscope.calibration.probes.ProbeConfig.to_dict` (``None``
    for a plain run) and ``events`` its decisions, in order."""

    case_id: str
    category: str
    style: str = "native"
    model: str = ""
    max_steps: int = DEFAULT_MAX_STEPS
    parse_mode: str = "bfcl"
    turns: list[TurnRecord] = field(default_factory=list)
    partial_turn: TurnRecord | None = None
    force_quit: bool = False
    error: dict[str, Any] | None = None
    wall_s: float = 0.0
    probe: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def probe_fired(self) -> bool:
        """Whether the probe fired at least once in this case."""
        return any(e.get("decision") == "fired" for e in self.events)

    @property
    def completed(self) -> bool:
        return not self.force_quit and self.error is None

    def emissions(self) -> Iterator[tuple[int, int, StepRecord]]:
        """``(turn, step, record)`` for every assistant emission, the partial turn included."""
        all_turns = list(self.turns) + ([self.partial_turn] if self.partial_turn else [])
        for turn in all_turns:
            for j, step in enumerate(turn.steps):
                yield turn.index, j, step

    def model_emissions(self) -> Iterator[tuple[int, int, StepRecord]]:
        """:meth:`emissions` without probe placeholders (retracted emissions stay: the model
        emitted them)."""
        return ((t, j, s) for t, j, s in self.emissions() if not s.placeholder)

    def accepted_calls(self) -> list[list[list[str]]]:
        """Per completed turn, per step with at least one accepted call, the rebuilt call
        strings as recorded (BFCL's decoded-results shape). The grader recomputes them."""
        return [
            [
                calls
                for step in turn.steps
                if (calls := [r.call for r in step.results if r.accepted and r.call])
            ]
            for turn in self.turns
        ]

    @property
    def prompt_tokens(self) -> int:
        return sum(s.prompt_tokens or 0 for _, _, s in self.emissions())

    @property
    def completion_tokens(self) -> int:
        return sum(s.completion_tokens or 0 for _, _, s in self.emissions())


@dataclass
class CaseRecord:
    """One multi-turn case as the diagnostics read it (see the module docstring)."""

    id: str
    category: str
    gold_class: str
    turn_emissions: list[list[Any]] = field(default_factory=list)
    due_turns: list[int] = field(default_factory=list)
    passed: bool | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(
        cls, d: Any, gold_class_of: Callable[[str], str | None] | None = None
    ) -> CaseRecord:
        """Build a record from a row; ``ValueError`` with the reason when malformed.

        ``gold_class`` may be omitted when ``gold_class_of(category)`` knows it (the reader
        passes its benchmark's table, e.g. BFCL's categories)."""
        if not isinstance(d, dict):
            raise ValueError("record is not a JSON object")
        for key in ("id", "category"):
            if not isinstance(d.get(key), str) or not d[key]:
                raise ValueError(f"record needs a non-empty string {key!r}")
        gold = d.get("gold_class") or (gold_class_of(d["category"]) if gold_class_of else None)
        if gold not in ACTION_CLASSES or gold == OTHER:
            raise ValueError(
                f"gold_class must be one of TOOL_CALL/ASK/REFUSE/CONFIRM, got {gold!r}"
            )
        turns = d.get("turn_emissions", [])
        if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
            raise ValueError("'turn_emissions' must be a list of lists (per turn, its emissions)")
        due = d.get("due_turns", [])
        if not isinstance(due, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in due
        ):
            raise ValueError("'due_turns' must be a list of non-negative integers")
        passed = d.get("passed")
        if passed is not None and not isinstance(passed, bool):
            raise ValueError("'passed' must be true, false or null")
        error = d.get("error")
        return cls(
            id=d["id"],
            category=d["category"],
            gold_class=gold,
            turn_emissions=turns,
            due_turns=sorted(set(due)),
            passed=passed,
            error=str(error) if error is not None else None,
        )


__all__ = [
    "DEFAULT_MAX_STEPS",
    "Attempt",
    "Outcome",
    "ExecResult",
    "StepRecord",
    "TurnRecord",
    "Trajectory",
    "CaseRecord",
]
