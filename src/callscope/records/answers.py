"""An answer's verdict, the one typed record of what the cascade decided about one attempt's
answer of any number of calls (issue 48, :mod:`callscope.records`): each call and its
:class:`~callscope.records.Diagnosis` (:class:`CheckedCall`), what an answer without a call is,
the answer's stage, and how good it is (:func:`answer_rank`, the correction loop's keep-best
and regression rule). The SAAG loop and the guard decide with it
(:mod:`callscope.saag.correction`), ``score`` rows are made from it
(:mod:`callscope.saag.score`), and the run store keeps it in its one stored form
(:func:`verdict_record`, version :data:`VERDICT_VERSION`: everything a ``score`` row is
computed from, so the store keeps no row beside it; :func:`verdict_from_dict` reads every
form stored so far: a diagnosis of one call from before answers were the unit, the answer
form of version 2, and version 3). :func:`verdict_to_dict` is the version-2 view the report
reads (the deciding call's diagnosis at the top)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from callscope.records.verdicts import Diagnosis
from callscope.types import ToolCall

#: the stored form :func:`verdict_record` writes: 1 = one call's diagnosis (before issue 28),
#: 2 = the deciding call's diagnosis with every call's (``answer_calls``) and ``no_call``
#: (:func:`verdict_to_dict`; stored beside a ``score`` row), 3 = every call's diagnosis with
#: why an unreadable one could not be read, ``no_call``, ``parse_error``, ``expect_call`` and
#: the grounding mode: the whole verdict, its row computed when read (issue 48)
VERDICT_VERSION = 3
#: the key of a stored verdict's version (absent: version 1 or 2)
VERSION_KEY = "version"
#: the key of an unreadable call's entry in a version-3 verdict: why it could not be read
UNREAD_KEY = "unread"

#: the depth of a call that passed every stage (one past stage 3)
PASSED_DEPTH = 4


@dataclass(frozen=True)
class CheckedCall:
    """One call of an answer and the cascade's diagnosis of it; ``call`` is ``None`` when no
    call could be read (the diagnosis is then stage 1, no name)."""

    call: ToolCall | None
    diagnosis: Diagnosis
    #: for ``call=None``: why the parser could not read this call (``None``: no call at all)
    reason: str | None = None


#: what an answer without a call is (:func:`callscope.saag.answer.no_call_kind`)
NoCall = Literal["abstained", "broken", "empty"]


@dataclass(frozen=True)
class AnswerVerdict:
    """The cascade's verdict on one attempt's answer of any number of calls.

    ``checked`` holds the calls the cascade diagnosed, in the answer's order (every call of
    the answer, :func:`callscope.saag.answer.diagnose_answer`; for an answer without a call
    that fails, one stage-1 "no name" entry with ``call=None``); ``calls`` every call the
    answer made, as parsed (compared by the repeat stop); ``parse_error`` why no call could
    be read, when none could; ``no_call`` what an answer without a call is (``abstained``,
    ``broken``, ``empty``; ``None`` when it made calls). ``expect_call`` is what the case
    expects of an answer (``Case.expects_call``): an answer with no checked call and a clean
    abstention (``abstained`` or ``empty``) passed when no call was expected (``False``), and
    has no verdict (:attr:`undecided`, ``stage`` ``None``) when that is unknown (``None``)."""

    checked: tuple[CheckedCall, ...] = ()
    calls: tuple[ToolCall, ...] = ()
    parse_error: str | None = None
    no_call: NoCall | None = None
    expect_call: bool | None = False

    @property
    def abstained(self) -> bool:
        """A clean abstention that no call was expected of (it passes)."""
        return (
            not self.checked
            and self.no_call in ("abstained", "empty")
            and self.expect_call is False
        )

    @property
    def undecided(self) -> bool:
        """A clean abstention where nobody said whether a call was expected: neither passed
        nor failed (issue 36: gold-free, no call is not a pass)."""
        return (
            not self.checked and self.no_call in ("abstained", "empty") and self.expect_call is None
        )

    @property
    def passed(self) -> bool:
        """Every call passed all three stages (at least one was checked), or a clean
        abstention where no call was expected."""
        return self.depth == PASSED_DEPTH

    @property
    def stage(self) -> int | None:
        """The earliest failing stage over the answer's calls; 0 when it passed; ``None``
        when it has no verdict (:attr:`undecided`)."""
        failing = [c.diagnosis.stage for c in self.checked if c.diagnosis.stage]
        if failing:
            return min(failing)
        if self.undecided:
            return None
        return 0 if self.passed else 1

    @property
    def depth(self) -> int:
        """The deepest stage the answer's worst call reached; 0 when no call was checked."""
        return answer_rank(self)[0]

    @property
    def flagged(self) -> int:
        """Names and values flagged over all the checked calls."""
        return -answer_rank(self)[1]


def call_depth(d: Diagnosis | None) -> int:
    """How far one call got: :data:`PASSED_DEPTH` for a pass, its failing stage (3, 2, 1)
    otherwise, 0 for no diagnosis (no answer)."""
    if d is None:
        return 0
    return PASSED_DEPTH if d.stage == 0 else d.stage


def flagged_values(d: Diagnosis) -> int:
    """How many names or values the diagnosis flags: 0 for a pass, 1 for a stage-1 failure
    (the name), else every parameter a failure kind of stages 2-3 lists."""
    if d.stage == 0:
        return 0
    if d.stage == 1:
        return 1
    return len(d.flagged())


def call_rank(d: Diagnosis | None) -> tuple[int, int]:
    """How good one call is by the cascade alone, larger is better: ``(depth, -flags)``
    (:func:`call_depth`, :func:`flagged_values`); ``(0, 0)`` for no diagnosis."""
    if d is None:
        return (0, 0)
    return (call_depth(d), -flagged_values(d))


def answer_rank(v: AnswerVerdict | None) -> tuple[int, int]:
    """How good an answer is, larger is better: the depth its worst call reached, then fewer
    flagged names and values over all its calls (:func:`call_rank` of each); ``(0, 0)`` for
    no answer or an answer with no checked call. An answer of one call ranks as that call."""
    if v is None or not v.checked:
        return (PASSED_DEPTH, 0) if v is not None and v.abstained else (0, 0)
    ranks = [call_rank(c.diagnosis) for c in v.checked]
    return (min(depth for depth, _ in ranks), sum(flags for _, flags in ranks))


def deciding_call(verdict: AnswerVerdict) -> CheckedCall | None:
    """The call whose diagnosis the answer's stage comes from: the first call failing at the
    earliest failing stage, else the first call; ``None`` for an answer with no checked call.
    For an answer of one call, that call: a ``score`` row's top-level metrics are its."""
    if not verdict.checked:
        return None
    failing = [c for c in verdict.checked if c.diagnosis.stage]
    if not failing:
        return verdict.checked[0]
    return min(failing, key=lambda c: c.diagnosis.stage)


def verdict_to_dict(verdict: AnswerVerdict) -> dict[str, Any]:
    """The answer's verdict in version 2's form (what the guard's records stored beside their
    row before they stored version 3, and the view the store gives a version-3 verdict as an attempt's ``diagnosis`` when
    it reads it): the deciding call's diagnosis (:func:`deciding_call`; what readers of one
    diagnosis per attempt see, as before), plus ``answer_calls`` (every checked call's
    diagnosis, by position) and ``no_call``. A clean abstention stores stage 0 with FNEM = -1 (no name: nothing failed,
    nothing was called)."""
    deciding = deciding_call(verdict)
    base = (
        deciding.diagnosis.to_dict()
        if deciding is not None
        else Diagnosis(stage=0, fnem=-1).to_dict()
    )
    base["stage"] = verdict.stage
    base["answer_calls"] = [c.diagnosis.to_dict() for c in verdict.checked]
    base["no_call"] = verdict.no_call
    return base


class StoredVerdict(TypedDict):
    """An answer's verdict as the store keeps it, version 3 (:func:`verdict_record`)."""

    version: int
    #: each checked call's diagnosis (``Diagnosis.to_dict``), in the answer's order; an
    #: unreadable call's with :data:`UNREAD_KEY`
    checked: list[dict[str, object]]
    no_call: NoCall | None
    parse_error: str | None
    expect_call: bool | None
    #: the name of the stage-3 mode the calls were diagnosed in
    grounding: str


def verdict_record(verdict: AnswerVerdict, grounding: str) -> StoredVerdict:
    """The answer's verdict as an attempt stores it (version :data:`VERDICT_VERSION`): each
    checked call's diagnosis in the answer's order, an unreadable one with
    :data:`UNREAD_KEY` (why the parser could not read it, ``None``: no call at all), and
    ``no_call``, ``parse_error``, ``expect_call``, ``grounding`` (the stage-3 mode's name).
    The calls themselves are the attempt's ``parsed``; with them this is everything
    :func:`callscope.saag.score.verdict_row` computes a row from."""
    checked: list[dict[str, object]] = []
    for c in verdict.checked:
        entry: dict[str, object] = c.diagnosis.to_dict()
        if c.call is None:
            entry[UNREAD_KEY] = c.reason
        checked.append(entry)
    return StoredVerdict(
        version=VERDICT_VERSION,
        checked=checked,
        no_call=verdict.no_call,
        parse_error=verdict.parse_error,
        expect_call=verdict.expect_call,
        grounding=grounding,
    )


def is_record(stored: object) -> bool:
    """A verdict stored whole (:func:`verdict_record`): its row is computed when read."""
    return isinstance(stored, dict) and stored.get(VERSION_KEY) == VERDICT_VERSION


def verdict_from_dict(
    stored: Mapping[str, Any], calls: Sequence[ToolCall], parse_error: str | None = None
) -> AnswerVerdict:
    """The verdict stored in any version, with the answer's parsed ``calls``: version 3
    (:func:`verdict_record`) as it was decided; version 2 (:func:`verdict_to_dict`) with
    ``parse_error`` from the attempt's row and ``expect_call`` ``False`` (neither was
    stored: an unreadable call's reason is lost, and the row beside it says the rest); a
    diagnosis stored before answers were the unit (no ``answer_calls``) is the verdict on
    the answer's first call, as the loop scored it then."""
    from_dict = Diagnosis.from_dict
    if stored.get(VERSION_KEY) == VERDICT_VERSION:
        readable = iter(calls)
        return AnswerVerdict(
            checked=tuple(
                CheckedCall(None, from_dict(d), d[UNREAD_KEY])
                if UNREAD_KEY in d
                else CheckedCall(next(readable, None), from_dict(d))
                for d in stored["checked"]
            ),
            calls=tuple(calls),
            parse_error=stored.get("parse_error"),
            no_call=stored.get("no_call"),
            expect_call=stored.get("expect_call"),
        )
    per_call = stored.get("answer_calls")
    if per_call is None:
        checked: tuple[CheckedCall, ...] = (
            CheckedCall(calls[0] if calls else None, from_dict(stored)),
        )
    else:
        readable = iter(calls)  # an unreadable call (stage 1, FNEM = -1) has no parsed call
        checked = tuple(
            CheckedCall(None if d.get("fnem") == -1 else next(readable, None), from_dict(d))
            for d in per_call
        )
    return AnswerVerdict(
        checked=checked, calls=tuple(calls), parse_error=parse_error, no_call=stored.get("no_call")
    )


__all__ = [
    "VERDICT_VERSION",
    "VERSION_KEY",
    "StoredVerdict",
    "UNREAD_KEY",
    "PASSED_DEPTH",
    "NoCall",
    "CheckedCall",
    "AnswerVerdict",
    "call_depth",
    "flagged_values",
    "call_rank",
    "answer_rank",
    "deciding_call",
    "verdict_to_dict",
    "verdict_record",
    "is_record",
    "verdict_from_dict",
]
