"""The compact per-outcome record the report aggregates: :class:`OutcomeFacts`, what every
table, figure and finding needs of one outcome (the definitions of
:mod:`callscope.report.outcome` and :mod:`callscope.report.revisions` applied once), so that a
store of any size is aggregated from a few hundred bytes per outcome instead of its decoded
rows. :func:`as_facts` turns outcome dicts into facts; every aggregate takes either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from callscope.records import FailureKind
from callscope.report.outcome import (
    EXTRINSIC,
    INTRINSIC,
    NO_CATEGORY,
    AnswerFacts,
    OutcomeRow,
    answer_of,
    call_stages_of,
    extrinsic_value,
    first_kinds,
    first_stage,
    gold_args,
    has_gold,
    intrinsic_value,
    is_error,
    is_solved,
    scale_label,
    segment_of,
)
from callscope.report.revisions import KEPT_ITEMS, lost_any, revision_flags, trajectory_of


def _key(x: Any) -> Any:
    """A sharing key that keeps types apart (``1`` is not ``1.0``, ``-0.0`` not ``0.0``, a
    named tuple not a plain one)."""
    if isinstance(x, tuple):
        return (type(x), tuple(_key(v) for v in x))
    if isinstance(x, float):
        return (float, x, math.copysign(1.0, x))
    return (type(x), x)


def _shared(x: Any, pool: dict[Any, Any] | None) -> Any:
    """``x`` itself or an equal value of the same type already in ``pool`` (so that a run's
    repeated model names, case ids and value tuples are held once)."""
    if pool is None or x is None or isinstance(x, bool):
        return x
    return pool.setdefault(_key(x), x)


class OutcomeFacts:
    """What the report's aggregates need of one outcome, computed once by the per-outcome
    definitions (:func:`intrinsic_value`,
    :func:`extrinsic_value`,
    :func:`first_stage`, :func:`first_kinds`,
    :func:`~callscope.report.revisions.revision_flags`, ...), so that a store of any size is
    aggregated from a few hundred bytes per outcome instead of its decoded rows.
    Read-only; ``facts["model"]`` and ``facts.get("mode")`` work as on an outcome dict for the
    key fields. Build with :func:`outcome_facts`."""

    __slots__ = (
        "model",
        "case_id",
        "mode",
        "scale",
        "error",
        "error_text",
        "error_kind",
        "has_gold",
        "solved",
        "solved_at",
        "n_attempts",
        "intrinsic",
        "extrinsic",
        "first_stage",
        "first_kinds",
        "has_first",
        "first_solved",
        "final_segment",
        "overcorrection",
        "revisions",
        "lost_any",
        "category",
        "answer",
        "first_calls",
        "rederived",
    )
    #: fields readable with ``facts[key]`` (the outcome dict's names for them)
    _ITEMS = frozenset(("model", "case_id", "mode", "solved_at", "n_attempts"))

    model: str
    case_id: str
    mode: str
    #: the scale label (:func:`scale_label`)
    scale: str
    error: bool
    error_text: str | None
    error_kind: str | None
    has_gold: bool
    solved: bool
    solved_at: int | None
    n_attempts: Any
    #: :func:`intrinsic_value` per :data:`INTRINSIC` metric
    intrinsic: tuple[float | None, ...]
    #: :func:`extrinsic_value` per :data:`EXTRINSIC` metric
    extrinsic: tuple[float | None, ...]
    first_stage: str
    first_kinds: tuple[FailureKind, ...]
    #: the outcome has an attempt-1 row (``o["first"] is not None``)
    has_first: bool
    #: attempt 1 solved the case (its row's ``solved``)
    first_solved: bool
    #: the final attempt's :func:`segment_of`
    final_segment: str
    #: ``(first gold name, final gold name, first gold args, final gold args, F1 change)``
    #: where :func:`callscope.report.aggregate.overcorrection` uses the outcome, else None
    overcorrection: tuple[bool, bool, bool, bool, float] | None
    #: per :data:`KEPT_ITEMS` item ``(lost, gained)`` or None where it cannot be told; None
    #: for the whole when :func:`callscope.report.aggregate.revision_tradeoff` leaves the
    #: outcome out
    revisions: tuple[tuple[bool, bool] | None, ...] | None
    lost_any: bool
    #: the case's category (:func:`~callscope.report.outcome.category_of`)
    category: str
    #: the final answer's :func:`~callscope.report.outcome.answer_of` (None: scored before
    #: answers were the unit)
    answer: AnswerFacts | None
    #: the stage of each call of attempt 1's answer
    #: (:func:`~callscope.report.outcome.call_stages_of`; None: no reply, or scored before)
    first_calls: tuple[int, ...] | None
    #: its answers without a readable call were re-derived from the stored replies
    #: (:mod:`callscope.store.upgrade`)
    rederived: bool

    def __init__(self, **fields: Any) -> None:
        for name in self.__slots__:
            object.__setattr__(self, name, fields[name])

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("OutcomeFacts is read-only")

    def __getitem__(self, key: str) -> Any:
        if key not in self._ITEMS:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self._ITEMS else default

    def __repr__(self) -> str:
        return f"OutcomeFacts({self.model!r}, {self.case_id!r}, {self.mode!r})"


#: an outcome dict (:func:`callscope.report.load.load_outcomes`) or its :class:`OutcomeFacts`
Outcomeish = OutcomeRow | OutcomeFacts


def outcome_facts(o: OutcomeRow, pool: dict[Any, Any] | None = None) -> OutcomeFacts:
    """The :class:`OutcomeFacts` of an outcome dict (``pool``: values shared across calls)."""
    first, final = o.get("first"), o.get("final") or {}
    usable = has_gold(o) and not is_error(o) and first and "name_match" in first
    oc = None
    if usable:
        oc = (
            bool(first.get("name_match")),
            bool(final.get("name_match")),
            gold_args(first),
            gold_args(final),
            float(final.get("arg_f1") or 0.0) - float(first.get("arg_f1") or 0.0),
        )
    rev = None
    if not is_error(o) and trajectory_of(o)[0]:
        flags = revision_flags(o)
        rev = tuple(
            (flags[i]["lost"], flags[i]["gained"]) if i in flags else None for i in KEPT_ITEMS
        )
    s = _shared
    return OutcomeFacts(
        model=s(o["model"], pool),
        case_id=s(o["case_id"], pool),
        mode=s(o["mode"], pool),
        scale=s(scale_label(o.get("scale")), pool),
        error=is_error(o),
        error_text=o.get("error"),
        error_kind=s(o.get("error_kind"), pool),
        has_gold=has_gold(o),
        solved=is_solved(o),
        solved_at=s(o.get("solved_at"), pool),
        n_attempts=s(o.get("n_attempts"), pool),
        intrinsic=s(tuple(intrinsic_value(o, m) for m in INTRINSIC), pool),
        extrinsic=s(tuple(extrinsic_value(o, m) for m in EXTRINSIC), pool),
        first_stage=s(first_stage(o), pool),
        first_kinds=s(tuple(first_kinds(o)), pool),
        has_first=first is not None,
        first_solved=bool((first or {}).get("solved")),
        final_segment=s(segment_of(o.get("final"), o.get("final_diagnosis")), pool),
        overcorrection=s(oc, pool),
        revisions=s(rev, pool),
        lost_any=lost_any(o),
        category=s(o.get("category", NO_CATEGORY), pool),
        answer=s(answer_of(o), pool),
        first_calls=s(call_stages_of(first), pool),
        rederived=bool(o.get("rederived")),
    )


def as_facts(outcomes: Iterable[Outcomeish]) -> list[OutcomeFacts]:
    """``outcomes`` as :class:`OutcomeFacts` (dicts converted, facts kept), in order."""
    pool: dict[Any, Any] = {}
    return [o if isinstance(o, OutcomeFacts) else outcome_facts(o, pool) for o in outcomes]


def first_segment(f: OutcomeFacts) -> str:
    """Attempt 1's :func:`callscope.report.outcome.segment_of`, from the facts (its first
    kind, else its stage)."""
    return f.first_kinds[0].value if f.first_kinds else f.first_stage
