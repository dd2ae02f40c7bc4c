"""The records that cross callscope's layers: one module, one owner per record type.

Every stage hands the next typed records, never loose dicts: the cascade's verdict on one call
(:class:`Diagnosis`, with its :class:`FailureKind`\\ s), a ``score`` row (:class:`ScoreRow`),
the correction loop's :class:`Outcome` and :class:`Attempt`\\ s as the run store keeps them,
and a multi-turn conversation (:class:`Trajectory` of :class:`TurnRecord` /
:class:`StepRecord` / :class:`ExecResult`) with the :class:`CaseRecord` the action-class
diagnostics read. The store reads and writes these; the report reads them back and never
re-runs the cascade.

Records hold data and the properties derived from it only; the metrics that compute them live
in ``callscope.saag`` (cascade) and ``callscope.calibration`` (GAR), the readers that build them
from files in ``callscope.benchmarks``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, NotRequired, TypedDict

from callscope.core.serde import Record
from callscope.types import ACTION_CLASSES, OTHER, Mode

#: the step limit of a conversation when a benchmark states none (BFCL's
#: ``MAXIMUM_STEP_LIMIT``, which ``callscope.benchmarks.bfcl.categories`` sets from this)
DEFAULT_MAX_STEPS = 20


# --------------------------------------------------------------------------- stages


@dataclass(frozen=True)
class StageInfo:
    """One outcome of the cascade on an answer, the one vocabulary every reader shows (the
    CLI's tables, the report page, the guard's headers, the integrations): ``number`` as rows
    store it (``0`` passed, ``1``-``3`` the first failing stage, ``None`` no verdict),
    ``key`` a stable name, ``title`` the stage's name in the SAAG paper (section 2), ``short``
    a table label, ``what`` what the stage checks, ``colour`` the family the figures shade
    its failure kinds in."""

    number: int | None
    key: str
    title: str
    short: str
    what: str
    colour: str


#: the outcomes of an answer in report order: passed, the three stages, no verdict (issue 36)
STAGES: tuple[StageInfo, ...] = (
    StageInfo(0, "passed", "passed all three stages", "passed all", "", "#2ca02c"),
    StageInfo(1, "registry", "registry conformance", "1 registry", "function name", "#d62728"),
    StageInfo(
        2, "structure", "structural completeness", "2 structure", "argument schema", "#ff7f0e"
    ),  # fmt: skip
    StageInfo(3, "grounding", "argument grounding", "3 grounding", "value grounding", "#9467bd"),
    StageInfo(
        None, "no_verdict", "no call, none known to be expected", "no verdict", "", "#7f7f7f"
    ),  # fmt: skip
)
_STAGE_BY_NUMBER = {s.number: s for s in STAGES}


def stage_info(number: int | None) -> StageInfo:
    """The vocabulary entry of a stored ``stage`` (0-3, or ``None``: no verdict).

    >>> stage_info(2).short, stage_info(None).key
    ('2 structure', 'no_verdict')
    """
    return _STAGE_BY_NUMBER[number]


# --------------------------------------------------------------------------- failure kinds


class FailureKind(StrEnum):
    """What made a call fail, one per correction the cascade can send (SAAG paper, sections
    2.1-2.3 and the correction templates of appendix D). A kind *is* its string value (it is a
    ``StrEnum``), so stored rows and JSON keep the plain names; :attr:`stage` and
    :attr:`label` are the one place the report's segments and legends read.

    >>> FailureKind.HARD.stage, FailureKind.HARD.label
    (3, 'value not grounded')
    >>> [k.value for k in FailureKind.of_stage(2)]
    ['missing', 'spurious', 'drifted']
    """

    WRONG_NAME = "wrong_name"
    NO_NAME = "no_name"
    MISSING = "missing"
    SPURIOUS = "spurious"
    DRIFTED = "drifted"
    NUMERIC = "numeric"
    HARD = "hard"
    SOFT = "soft"

    @property
    def stage(self) -> int:
        """The cascade stage (1, 2 or 3) that detects this kind."""
        return _KIND_INFO[self][0]

    @property
    def label(self) -> str:
        """A short phrase for legends and tables (``name not in registry``...)."""
        return _KIND_INFO[self][1]

    def reason(self, name: str, value: str = "", target: str = "") -> str:
        """The one-line reason the guard gives for one item of this kind (``name`` the
        flagged parameter, or for stage 1 the called name; ``value`` its value as shown;
        ``target`` the schema name a drifted parameter looks like), prefixed with the kind.

        >>> FailureKind.MISSING.reason("city")
        "missing: required argument 'city' is absent"
        """
        text = _KIND_INFO[self][2].format(
            param=repr(name), name=name, value=value, target=repr(target)
        )
        return f"{self.value}: {text}"

    @classmethod
    def of_stage(cls, stage: int) -> tuple[FailureKind, ...]:
        """The kinds of one stage, in cascade order."""
        return tuple(k for k in cls if k.stage == stage)


#: kind -> (stage, label, reason): ``reason`` is the guard's one-line reason for one flagged
#: item, formatted with ``param`` (its name, ``repr``), ``value`` (the value, shortened) and
#: ``target`` (the schema name a drifted one looks like); stage 1's come with the call
_KIND_INFO: dict[str, tuple[int, str, str]] = {
    "wrong_name": (1, "name not in registry", "{param} is not in the tools"),
    "no_name": (1, "no call parsed", "no function name found"),
    "missing": (2, "required arg missing", "required argument {param} is absent"),
    "spurious": (2, "unknown arg", "argument {param} is not in the schema"),
    "drifted": (2, "misspelled arg", "argument {param} looks like {target}"),
    "numeric": (3, "number not in query", "{name}={value} does not match a number the user stated"),
    "hard": (3, "value not grounded", "{name}={value} has no grounding in the user's text"),
    "soft": (
        3,
        "value weakly grounded",
        "{name}={value} is only loosely related to the user's text",
    ),
}


def failure_kinds_of(
    stage: int | None, fnem: int | None, detail: Mapping[str, Any]
) -> list[FailureKind]:
    """The failure kinds of a verdict given as its ``stage``, ``fnem`` and the detail lists
    (``missing``, ``spurious``... as a :class:`Diagnosis` or a stored diagnosis dict holds
    them): stage 1 is ``no_name`` when FNEM = -1 (nothing parsed) else ``wrong_name``; stages
    2 and 3 list every kind of the failing stages whose detail list is non-empty, in cascade
    order. ``[]`` when the call passed (``stage`` 0 or ``None``).

    >>> failure_kinds_of(1, -1, {})
    [<FailureKind.NO_NAME: 'no_name'>]
    >>> [str(k) for k in failure_kinds_of(3, 1, {"hard": ["city"], "soft": []})]
    ['hard']
    """
    if not stage:
        return []
    if stage == 1:
        return [FailureKind.NO_NAME if fnem == -1 else FailureKind.WRONG_NAME]
    return [k for k in FailureKind if k.stage >= 2 and detail.get(k.value)]


# --------------------------------------------------------------------------- one call


@dataclass
class Diagnosis:
    """The cascade's verdict on one call (:func:`callscope.saag.cascade.diagnose`). ``stage``
    is 0 when all stages pass, else the first failing stage (1, 2 or 3). Failure detail lists
    keep the model's argument order.

    The metrics are the SAAG paper's (section 2), each computed by the function of
    :mod:`callscope.saag.intrinsic` that states its formula: ``fnem`` (eq. 1) and ``ncs``
    (eq. 2, only when ``fnem`` is 0) of stage 1; ``rpr``, ``pds``, ``spr`` (eqs. 3-5) of stage
    2; ``avem``, ``qslo``, ``vhr`` (eqs. 6-9) of stage 3. They are stage-conditional: a metric
    of a stage the cascade did not reach is ``None``. The stage-3 metrics depend on
    ``grounding``: under ``lexical`` they are the paper's; under ``registry`` (the default)
    ``avem`` is the share of values the mode accepts for any reason in ``grounded``, not only
    the verbatim ones of eq. 6.

    >>> d = Diagnosis(stage=2, fnem=1, rpr=0.5, spr=0.0, missing=["tip_percentage"])
    >>> d.passed, [str(k) for k in d.failure_kinds()], d.avem is None
    (False, ['missing'], True)
    """

    stage: int
    fnem: int
    ncs: float | None = None
    nearest: str | None = None
    rpr: float | None = None
    pds: float | None = None
    spr: float | None = None
    avem: float | None = None
    qslo: float | None = None
    vhr: float | None = None
    missing: list[str] = field(default_factory=list)
    drifted: list[str] = field(default_factory=list)
    spurious: list[str] = field(default_factory=list)
    numeric: list[str] = field(default_factory=list)
    hard: list[str] = field(default_factory=list)
    soft: list[str] = field(default_factory=list)
    #: for each drifted parameter, the schema name it most resembles
    drift_targets: dict[str, str] = field(default_factory=dict)
    #: the predicted name, when one was parsed (used by the stage-1 message)
    predicted: str | None = None
    #: the grounding mode stage 3 ran in (:data:`callscope.saag.groundings.GROUNDINGS`)
    grounding: str | None = None
    #: stage 3: each grounded argument with the reason it was accepted (``stated``,
    #: ``normalised``, ``unit``, ``context``, ``enum``, ``default``, ``judge``)
    grounded: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.stage == 0

    def failure_kinds(self) -> list[FailureKind]:
        """Failure kinds present at the failing stage, in cascade order
        (:class:`FailureKind`): ``[]`` when the call passed."""
        return failure_kinds_of(self.stage, self.fnem, self.__dict__)

    def flagged(self, stage: int | None = None) -> list[str]:
        """The parameters the detail lists of ``stage`` (2 or 3; both when ``None``) flag, in
        cascade order of their kinds (:class:`FailureKind`), whatever the stage reached.

        >>> Diagnosis(stage=3, fnem=1, hard=["city"], soft=["date"]).flagged()
        ['city', 'date']
        """
        return [
            p
            for k in FailureKind
            if k.stage >= 2 and (stage is None or k.stage == stage)
            for p in getattr(self, k.value)
        ]

    def to_dict(self) -> dict[str, Any]:
        """Every field, the lists and dicts copied (what ``dataclasses.asdict`` gives for these
        flat fields, at a fraction of its cost: it deep-copies each value)."""
        return {
            k: (list(v) if type(v) is list else dict(v) if type(v) is dict else v)
            for k, v in self.__dict__.items()
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Diagnosis:
        """A diagnosis from its :meth:`to_dict` form as the run store keeps it (keys it does not
        know, such as an answer's ``answer_calls``, are ignored)."""
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


class ScoreRow(TypedDict, total=False):
    """One ``score`` output row (:func:`callscope.saag.score.diagnosis_row`): ``id``, the
    diagnosis flattened (``stage``, the intrinsic metrics, the failure lists, the templated
    ``fix``), ``parse_error``, the grounding mode and the grounded values; with gold, the
    extrinsic metrics and ``solved``; ``error`` alone for a row that could not be scored. A
    ``TypedDict``: rows stay plain JSON objects in files and in the store, and type checkers
    see their keys."""

    id: Any
    stage: int
    fnem: int
    ncs: float | None
    rpr: float | None
    pds: float | None
    spr: float | None
    avem: float | None
    qslo: float | None
    vhr: float | None
    nearest: str | None
    missing: list[str]
    drifted: list[str]
    spurious: list[str]
    fix: str | None
    parse_error: str | None
    grounding: str
    grounded: dict[str, str]
    name_match: NotRequired[bool]
    arg_precision: NotRequired[float | None]
    arg_recall: NotRequired[float | None]
    arg_f1: NotRequired[float | None]
    solved: NotRequired[bool]
    error: NotRequired[str]


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
    def final_row(self) -> ScoreRow | None:
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


# --------------------------------------------------------------------------- τ²-bench


@dataclass
class ConfirmDecision:
    """The CONFIRM rule's verdict on one write call
    (:func:`callscope.calibration.confirm.detect_confirmation`): ``confirmed``, the user
    message it rests on (``user_index`` into the trajectory's messages, ``None`` when there is
    none), the cue that decided (``cue``) and a one-line ``reason``."""

    confirmed: bool
    reason: str
    user_index: int | None = None
    cue: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class JudgeVerdict:
    """A CONFIRM judge's answer on one write call: ``confirmed`` (``None`` = undecided), the
    raw ``reply`` text and the ``error`` when the judge's backend failed."""

    confirmed: bool | None
    reply: str = ""
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CallRecord:
    """One agent tool call of a τ² simulation: where it is, whether it writes, its SAAG stage
    (``None`` = unchecked: no schemas and a known name), and for writes the CONFIRM verdicts."""

    domain: str
    simulation_id: str
    task_id: str
    message_index: int
    name: str
    arguments: dict[str, Any]
    write: bool
    stage: int | None
    failure_kinds: list[str] = field(default_factory=list)
    nearest: str | None = None
    confirm_rule: ConfirmDecision | None = None
    confirm_judge: JudgeVerdict | None = None
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["confirm_rule"] = self.confirm_rule.to_dict() if self.confirm_rule else None
        d["confirm_judge"] = self.confirm_judge.to_dict() if self.confirm_judge else None
        return d


@dataclass
class SimulationRecord:
    """One τ² simulation as diagnosed: gold classes, per-message classes, GAR per gold class
    (``None`` = no verdict), Acc, and counts. ``group``: the agent / user simulator label
    the rows are grouped by; ``path``: ``write`` / ``read-only`` reference path of a TOOL_CALL
    task; ``check_failures``: kinds of the failed agent checks; ``user_checks``: action checks
    of the user's actions (not counted); ``mismatch``: why the action checks do not belong
    to the task (``None`` when they do); ``excluded``: why the simulation is left out of the
    per-class rows (``None`` when it is in)."""

    domain: str
    source: str
    id: str
    task_id: str
    trial: int | None
    gold_class: str | None
    ask_gold: bool
    reward: float | None
    passed: bool | None
    termination_reason: str | None
    error: str | None
    message_classes: list[list[str]]
    union: list[str]
    write_calls: int
    action_checks: int | None
    failed_action_checks: int | None
    gar: dict[str, bool | None]
    group: str = ""
    path: str | None = None
    check_failures: list[str] = field(default_factory=list)
    user_checks: int = 0
    mismatch: str | None = None
    excluded: str | None = None

    @property
    def max_steps(self) -> bool:
        """Whether the simulation ended on τ²'s step limit."""
        return self.termination_reason == "max_steps"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class WriteDecision(TypedDict):
    """Whether a τ² tool writes to the database
    (:func:`callscope.benchmarks.tau2.write_tools.decide_write_tools`): the decision, the rule
    that made it (``source``), τ²'s ``tool_type`` label when one is known, and whether it is
    (``known`` false: a guess by name pattern, description verb or the read default)."""

    write: bool
    source: str
    tool_type: str | None
    known: bool


class AskCandidate(TypedDict):
    """A τ² task whose scenario text holds ASK cues, for a person to check: where, the cues,
    the text around the first, whether every cue is in shared boilerplate, and whether the
    task serves as ASK gold."""

    domain: str
    task_id: str
    cues: list[str]
    snippet: str
    boilerplate: bool
    used_as_gold: bool


class RateCI(TypedDict):
    """A rate with its Wilson interval (``None`` each when nothing was counted)."""

    rate: float | None
    ci_low: float | None
    ci_high: float | None


class ConfirmSummary(TypedDict):
    """CONFIRM over a set of τ² write calls: how many, how many the rule found confirmed
    (``rule_k``, and as a :class:`RateCI`), and the judge's agreement with the rule
    (:func:`callscope.calibration.confirm.agreement_stats` plus its YES rate; ``None`` when no
    judge ran)."""

    write_calls: int
    rule_k: int
    rule: RateCI
    judge: dict[str, Any] | None


class Tau2AccRow(TypedDict):
    """The file-level Acc (the leaderboard's pass^1) of one (group, domain) of τ² simulations:
    reward 1 over every simulation with a reward, with its Wilson interval, and the
    simulations that ended on ``max_steps``, in error, without reward, with another task's
    action checks, or withheld from the GAR rows."""

    group: str
    domain: str
    agent: str | None
    user: str | None
    sources: list[str]
    n_simulations: int
    n_tasks: int
    acc_k: int
    acc_n: int
    acc: float | None
    acc_ci_low: float | None
    acc_ci_high: float | None
    n_no_reward: int
    n_max_steps: int
    n_errors: int
    n_mismatch: int
    n_excluded: int


class Tau2DomainRow(TypedDict):
    """One (group, domain) of τ² simulations: emission class counts, the SAAG stage mix of the
    agent's tool calls (``stage_mode``: ``schemas``, ``stock schemas``, ``names_only`` or
    ``mixed``), the write tools and CONFIRM."""

    group: str
    domain: str
    n_simulations: int
    n_tasks: int
    assistant_messages: int
    class_counts: dict[str, int]
    tool_calls: int
    stage_mode: str
    stage_mix: dict[str, int]
    write_tools: list[str]
    confirm: ConfirmSummary
