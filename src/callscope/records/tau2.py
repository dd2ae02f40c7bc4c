"""τ²-bench's records (:mod:`callscope.records`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

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


__all__ = [
    "ConfirmDecision",
    "JudgeVerdict",
    "CallRecord",
    "SimulationRecord",
    "WriteDecision",
    "AskCandidate",
    "RateCI",
    "ConfirmSummary",
    "Tau2AccRow",
    "Tau2DomainRow",
]
