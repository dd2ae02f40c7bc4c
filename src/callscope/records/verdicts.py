"""The cascade's verdicts: the stage vocabulary, the failure kinds, one call's
:class:`Diagnosis` and a ``score`` row (:mod:`callscope.records`)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple, NotRequired, TypedDict

# --------------------------------------------------------------------------- stages


@dataclass(frozen=True)
class StageInfo:
    """One outcome of the cascade on an answer, the one vocabulary every reader shows (the
    CLI's tables, the report page, the guard's headers, the integrations): ``number`` as rows
    store it (``0`` passed, ``1``-``3`` the first failing stage, ``None`` no verdict),
    ``key`` a stable name, ``title`` the stage's name in the SAAG paper (section 2), ``short``
    a table label, ``what`` what the stage checks, ``colour`` the family the figures shade
    its failure kinds in, ``muted`` the leaderboard figure's shade of it; :attr:`segment` is
    the key every table, figure and count uses for it (``passed``, ``stage1``..``stage3``)."""

    number: int | None
    key: str
    title: str
    short: str
    what: str
    colour: str
    muted: str = "#7f7f7f"

    @property
    def segment(self) -> str:
        """The one table key of this outcome: ``passed`` for stage 0, ``stage<n>`` for a
        failing stage, ``no_verdict`` for ``None`` (tables, the call flow, the figures, the
        calls-by-stage counts all use it).

        >>> [s.segment for s in STAGES]
        ['passed', 'stage1', 'stage2', 'stage3', 'no_verdict']
        """
        if self.number is None:
            return self.key
        return "passed" if self.number == 0 else f"stage{self.number}"


#: the outcomes of an answer in report order: passed, the three stages, no verdict (issue 36)
STAGES: tuple[StageInfo, ...] = (
    StageInfo(0, "passed", "passed all three stages", "passed all", "", "#2ca02c"),
    StageInfo(
        1, "registry", "registry conformance", "1 registry", "function name", "#d62728", "#c44e52"
    ),  # fmt: skip
    StageInfo(
        2,
        "structure",
        "structural completeness",
        "2 structure",
        "argument schema",
        "#ff7f0e",
        "#dd8452",
    ),  # fmt: skip
    StageInfo(
        3, "grounding", "argument grounding", "3 grounding", "value grounding", "#9467bd", "#ccb974"
    ),  # fmt: skip
    StageInfo(
        None, "no_verdict", "no call, none known to be expected", "no verdict", "", "#7f7f7f"
    ),  # fmt: skip
)
_STAGE_BY_NUMBER = {s.number: s for s in STAGES}
#: the cascade's three failing stages
FAILING_STAGES: tuple[StageInfo, ...] = tuple(s for s in STAGES if s.number)


def stage_info(number: int | None) -> StageInfo:
    """The vocabulary entry of a stored ``stage`` (0-3, or ``None``: no verdict).

    >>> stage_info(2).short, stage_info(None).key
    ('2 structure', 'no_verdict')
    """
    return _STAGE_BY_NUMBER[number]


def stage_segment(number: int) -> str:
    """The table key of a stored stage 0-3 (:attr:`StageInfo.segment`).

    >>> stage_segment(0), stage_segment(3)
    ('passed', 'stage3')
    """
    return _STAGE_BY_NUMBER[number].segment


# --------------------------------------------------------------------------- failure kinds


#: an audit probe of a failure kind: from a correct call's ``arguments``, its schema's
#: ``properties`` (parameter -> schema) and a seeded ``random.Random``, the arguments made
#: wrong in this kind's way and a note of the change (``None`` when the call offers nothing
#: to change); :mod:`callscope.saag.audit` runs every kind's probe as a positive
AuditProbe = Callable[
    [Mapping[str, Any], Mapping[str, Any], random.Random], "tuple[dict[str, Any], str] | None"
]


class KindInfo(NamedTuple):
    """Everything a :class:`FailureKind` does, in one entry of :data:`_KIND_INFO`: the
    ``stage`` that detects it (1-3), its ``label`` in legends and tables, the guard's
    ``reason`` for one flagged item (formatted with ``param`` (the name, ``repr``), ``name``,
    ``value`` (shortened) and ``target`` (the schema name a drifted one looks like)), its
    correction ``template`` (SAAG Table 4; ``{params}`` names the flagged parameters; stage-1
    kinds build theirs from the call), whether the gated correction ``corrects`` it (a kind it
    does not correct closes the gate when it is all that is left), its summary ``group`` (the
    leaderboard's answer columns: ``unstated``, ``soft``; ``None`` none), its figure
    ``colour`` (``None``: a shade of its stage's family), its audit ``probe``
    (:data:`AuditProbe`; ``None``: the audit's own positives cover it) and whether it is
    ``guard_only`` (the guard decides it, never the cascade: a report's tables list it only
    when a verdict shows it, so a run store without one reports as before the kind existed)."""

    stage: int
    label: str
    reason: str
    template: str | None = None
    corrects: bool = True
    group: str | None = None
    colour: str | None = None
    probe: AuditProbe | None = None
    guard_only: bool = False


class FailureKind(StrEnum):
    """What made a call fail, one per correction the cascade can send (SAAG paper, sections
    2.1-2.3 and the correction templates of appendix D). A kind *is* its string value (it is a
    ``StrEnum``), so stored rows and JSON keep the plain names; its entry in
    :data:`_KIND_INFO` (:attr:`info`) is the one place the report's segments and legends, the
    gate, the correction, the leaderboard's columns and the audit read.

    >>> FailureKind.HARD.stage, FailureKind.HARD.label
    (3, 'value not grounded')
    >>> [k.value for k in FailureKind.of_stage(2)]
    ['missing', 'spurious', 'drifted', 'ask']

    ``ASK`` is the guard's (issue 46), never the cascade's: a required argument whose value
    the user did not state, omitted or filled with one of the schema's own choices; the
    right action is to ask the user (the calibration paper's ASK class), and its correction
    says so (:func:`callscope.saag.ask.with_ask` decides it).
    """

    WRONG_NAME = "wrong_name"
    NO_NAME = "no_name"
    MISSING = "missing"
    SPURIOUS = "spurious"
    DRIFTED = "drifted"
    ASK = "ask"
    NUMERIC = "numeric"
    HARD = "hard"
    SOFT = "soft"

    @property
    def info(self) -> KindInfo:
        """This kind's entry (:class:`KindInfo`)."""
        return _INFO[self]

    @property
    def stage(self) -> int:
        """The cascade stage (1, 2 or 3) that detects this kind."""
        return _INFO[self].stage

    @property
    def label(self) -> str:
        """A short phrase for legends and tables (``name not in registry``...)."""
        return _INFO[self].label

    @property
    def template(self) -> str | None:
        """The correction template (SAAG Table 4) of a stage-2 or -3 kind."""
        return _INFO[self].template

    @property
    def corrects(self) -> bool:
        """Whether the gated correction corrects this kind
        (:func:`callscope.saag.gated.confident_kinds`)."""
        return _INFO[self].corrects

    @property
    def group(self) -> str | None:
        """The summary group (the leaderboard's answer column) this kind counts in."""
        return _INFO[self].group

    def reason(self, name: str, value: str = "", target: str = "") -> str:
        """The one-line reason the guard gives for one item of this kind (``name`` the
        flagged parameter, or for stage 1 the called name; ``value`` its value as shown;
        ``target`` the schema name a drifted parameter looks like), prefixed with the kind.

        >>> FailureKind.MISSING.reason("city")
        "missing: required argument 'city' is absent"
        """
        text = _INFO[self].reason.format(
            param=repr(name), name=name, value=value, target=repr(target)
        )
        return f"{self.value}: {text}"

    @classmethod
    def of_stage(cls, stage: int) -> tuple[FailureKind, ...]:
        """The kinds of one stage, in cascade order."""
        return tuple(k for k in cls if k.stage == stage)

    @classmethod
    def of_group(cls, group: str) -> tuple[FailureKind, ...]:
        """The kinds of one summary group, in cascade order.

        >>> [k.value for k in FailureKind.of_group("unstated")]
        ['numeric', 'hard']
        """
        return tuple(k for k in cls if k.group == group)


#: the summary groups of :attr:`KindInfo.group`, in column order
KIND_GROUPS: tuple[str, ...] = ("unstated", "soft")

#: kind -> its entry (:class:`KindInfo`); a 3-tuple ``(stage, label, reason)`` is read with
#: the other fields' defaults
_KIND_INFO: dict[str, KindInfo | tuple[Any, ...]] = {
    "wrong_name": KindInfo(1, "name not in registry", "{param} is not in the tools"),
    "no_name": KindInfo(1, "no call parsed", "no function name found"),
    "missing": KindInfo(
        2,
        "required arg missing",
        "required argument {param} is absent",
        "Key parameters of the agent from the registry are missing. Please ensure the "
        "invocation includes all parameters specified for that agent in the system prompt.",
    ),
    "spurious": KindInfo(
        2,
        "unknown arg",
        "argument {param} is not in the schema",
        "Spurious parameters not present in the registry are included. Please include only "
        "the parameters specified for that agent.",
    ),
    "drifted": KindInfo(
        2,
        "misspelled arg",
        "argument {param} looks like {target}",
        "Some parameters appear misspelled and deviate slightly from the registry. Please "
        "ensure all parameter names exactly match the schema in the system prompt.",
    ),
    "ask": KindInfo(
        2,
        "required value not stated",
        "required argument {param} has no value the user stated: ask the user for it",
        "The user did not state a value for {params}, which the tool requires. Do not guess it "
        "and do not leave it out: ask the user for it, in plain text, before calling the tool.",
        guard_only=True,
    ),
    "numeric": KindInfo(
        3,
        "number not in query",
        "{name}={value} does not match a number the user stated",
        "The numeric values for {params} do not match what the user stated. Use the exact "
        "numbers from the user's request.",
        group="unstated",
    ),
    "hard": KindInfo(
        3,
        "value not grounded",
        "{name}={value} has no grounding in the user's text",
        "The values for {params} have no grounding in the user's request. Do not invent "
        "values. Use only what the user explicitly stated, or omit the argument.",
        group="unstated",
    ),
    "soft": KindInfo(
        3,
        "value weakly grounded",
        "{name}={value} is only loosely related to the user's text",
        "The values for {params} are loosely related but not exact. Use the precise wording "
        "or value from the user's request.",
        corrects=False,
        group="soft",
    ),
}
_INFO: dict[FailureKind, KindInfo] = {
    FailureKind(k): v if isinstance(v, KindInfo) else KindInfo(*v) for k, v in _KIND_INFO.items()
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


#: the detail lists of each stage's kinds (``None``: stages 2 and 3), in cascade order
_DETAIL_LISTS: dict[int | None, tuple[str, ...]] = {
    stage: tuple(k.value for k in FailureKind if k.stage >= 2 and stage in (None, k.stage))
    for stage in (2, 3, None)
}


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
    #: required parameters whose value the user did not state (the guard's ASK, issue 46:
    #: :func:`callscope.saag.ask.with_ask`; the cascade leaves it empty)
    ask: list[str] = field(default_factory=list)
    #: for each drifted parameter, the schema name it most resembles
    drift_targets: dict[str, str] = field(default_factory=dict)
    #: the predicted name, when one was parsed (used by the stage-1 message)
    predicted: str | None = None
    #: the grounding mode stage 3 ran in (:data:`callscope.saag.groundings.GROUNDINGS`)
    grounding: str | None = None
    #: stage 3: each grounded argument with the reason it was accepted (``stated``,
    #: ``normalised``, ``unit``, ``knowledge``, ``context``, ``format``, ``described``,
    #: ``enum``, ``default``, ``judge``)
    grounded: dict[str, str] = field(default_factory=dict)
    #: stage 3: each argument grounded through a library with its evidence, which library
    #: matched which words of the request to the value ("'Los Angeles' → LAX by
    #: airportsdata (...)")
    evidence: dict[str, str] = field(default_factory=dict)

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
        lists = _DETAIL_LISTS[stage]
        if len(lists) == 3:  # one stage: the common case (the cascade's stage-3 check)
            a, b, c = (getattr(self, name) for name in lists)
            return [*a, *b, *c] if a or b or c else []
        return [p for name in lists for p in getattr(self, name)]

    def in_group(self, group: str) -> list[str]:
        """The parameters flagged by the kinds of one summary ``group``
        (:attr:`KindInfo.group`), in the kinds' cascade order.

        >>> Diagnosis(stage=3, fnem=1, hard=["city"], numeric=["n"]).in_group("unstated")
        ['n', 'city']
        """
        return [p for k in FailureKind.of_group(group) for p in getattr(self, k.value)]

    def to_dict(self) -> dict[str, Any]:
        """Every field, the lists and dicts copied (what ``dataclasses.asdict`` gives for these
        flat fields, at a fraction of its cost: it deep-copies each value); ``ask`` only when
        the guard set it (the cascade never does, so its stored verdicts keep their form)."""
        out = {
            k: (list(v) if type(v) is list else dict(v) if type(v) is dict else v)
            for k, v in self.__dict__.items()
        }
        if not self.ask:
            del out["ask"]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Diagnosis:
        """A diagnosis from its :meth:`to_dict` form as the run store keeps it (keys it does not
        know, such as an answer's ``answer_calls``, are ignored)."""
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


class ScoreRow(TypedDict, total=False):
    """One ``score`` output row, as its writers make it (:func:`callscope.saag.score.diagnosis_row`
    for one call, :func:`~callscope.saag.score.answer_row` for an answer,
    :func:`~callscope.saag.score.score_parsed` with gold): ``id``, the deciding call's
    diagnosis flattened (``stage``: the answer's, ``None`` when no call was made and nobody
    said whether one was expected; the intrinsic metrics, the failure lists, the templated
    ``fix``), ``parse_error``, the grounding mode and the grounded values; what the answer is
    (``answer``), each call's verdict (``calls``) and the repeated positions; with gold, the
    extrinsic metrics, ``solved`` and the answer-level keys
    (:meth:`callscope.saag.answer.AnswerScores.to_row`); ``error`` alone for a row that could
    not be scored. A ``TypedDict``: rows stay plain JSON objects in files and in the store,
    and type checkers see their keys."""

    id: Any
    stage: int | None
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
    evidence: NotRequired[dict[str, str]]
    name_match: NotRequired[bool]
    arg_precision: NotRequired[float | None]
    arg_recall: NotRequired[float | None]
    arg_f1: NotRequired[float | None]
    solved: NotRequired[bool]
    error: NotRequired[str]
    answer: str
    calls: list[dict[str, Any]]
    repeated: NotRequired[list[int]]
    calls_made: NotRequired[int]
    calls_expected: NotRequired[int]
    missing_calls: NotRequired[int]
    extra_calls: NotRequired[int]
    name_precision: NotRequired[float]
    name_recall: NotRequired[float]
    name_f1: NotRequired[float]
    answer_arg_precision: NotRequired[float]
    answer_arg_recall: NotRequired[float]
    answer_arg_f1: NotRequired[float]
    answer_solved: NotRequired[bool]
    matched: NotRequired[list[list[int]]]
    bfcl_credit: NotRequired[bool]


__all__ = [
    "StageInfo",
    "STAGES",
    "FAILING_STAGES",
    "stage_info",
    "stage_segment",
    "AuditProbe",
    "KindInfo",
    "KIND_GROUPS",
    "FailureKind",
    "failure_kinds_of",
    "Diagnosis",
    "ScoreRow",
]
