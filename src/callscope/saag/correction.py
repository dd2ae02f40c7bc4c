"""The correction loop's decisions: the one engine the SAAG loop and the guard's repair share.

A correction loop asks a model, checks the answer with the cascade and, while it fails, sends
feedback and asks again (SAAG paper, section 2.4; the gated mode of issue 17). The drivers
(:func:`callscope.runs.loop.run_loop`, :func:`callscope.guard.repair.repair`) call the model,
parse and diagnose; after each attempt they ask this module what to do next. Everything here
is a pure function of the verdicts so far, one per attempt, oldest first:

* an :class:`AnswerVerdict` is the cascade's verdict on one attempt's answer: the calls the
  cascade checked (any number, none included: the unit is the answer, not the call), every
  call the answer made (the repeat stop compares them) and the parser's error; ``None`` stands
  for an attempt that got no answer (the backend failed);
* a :class:`Policy` is the loop's mode: the feedback it sends (``binary``, ``structured`` or
  ``gated`` with its :class:`~callscope.saag.gated.GatedSettings`), its attempt budget and
  whether its answer is the best attempt or the last.

:func:`decide` says whether to stop and why, or which feedback to send (:func:`feedback`: for
an answer of several calls, each failing call named by position and name and the calls that
passed to be kept, :func:`answer_correction`; an answer of one call gets the paper's message).
The stop reasons, in the order they are checked after an attempt:

``error``
    the last attempt got no answer.
``regression``
    (gated, ``stop_on_regression``) the last answer ranks below the best earlier one.
``passed``
    every call of the last answer passed all three stages.
``budget``
    ``max_attempts`` attempts were made (direct mode's budget is 1; the guard's is ``k + 1``).
``repeat``
    (gated, ``repeat_patience`` > 0) the last ``repeat_patience`` revisions each repeated the
    calls before them (:func:`repeats`).
``deadline``
    the driver says no further attempt may start (the guard's clock; the SAAG loop has none).
``gate``
    (gated) no failure confident enough to correct (:func:`callscope.saag.gated.confident_kinds`):
    the feedback is ``None``.

:func:`answer_at` says which attempt is the answer: with ``keep_best`` the best one by
:func:`answer_rank` (deepest stage reached, then fewest flagged names and values); on a tie
the **later** attempt is kept (:func:`best_at`), as the SAAG loop always has: a revision as
good as the best so far is the model's latest word on the same correction. (The guard's
repair kept the earlier one until issue 27; its committed measurement does not depend on it:
tied answers fail at the same stage, and only a pass counts as solved.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from callscope.records.answers import (  # noqa: F401 (the answer's verdict: records)
    PASSED_DEPTH,
    AnswerVerdict,
    CheckedCall,
    NoCall,
    answer_rank,
    call_depth,
    call_rank,
    flagged_values,
)
from callscope.saag.gated import GatedSettings
from callscope.saag.messages import (
    BINARY_FEEDBACK,
    NO_NAME,
    call_label,
    correction_message,
    gated_message,
    keep_passed,
    unreadable_message,
)

#: why a correction loop stopped (module docstring)
StopReason = Literal["passed", "budget", "error", "gate", "regression", "repeat", "deadline"]

#: the feedback a loop sends: the SAAG paper's ``binary`` ("No") and ``structured`` (Table 4)
#: corrections, or the ``gated`` one (:func:`callscope.saag.messages.gated_message`)
FeedbackMode = Literal["binary", "structured", "gated"]


@dataclass(frozen=True)
class Policy:
    """A correction loop's mode: the ``feedback`` it sends (``gated`` needs ``gated``, the
    settings of its ingredients), ``max_attempts`` (attempts in all, the first included) and
    ``keep_best`` (the answer is the best attempt, :func:`best_at`; else the last)."""

    feedback: FeedbackMode
    max_attempts: int
    gated: GatedSettings | None = None
    keep_best: bool = False

    def __post_init__(self) -> None:
        if (self.feedback == "gated") != (self.gated is not None):
            raise ValueError("gated feedback needs its settings, and only it takes them")


@dataclass(frozen=True)
class Decision:
    """What a loop does after an attempt: ``stop`` (why), or send ``feedback`` and ask again."""

    stop: StopReason | None = None
    feedback: str | None = None


def best_at(history: Sequence[AnswerVerdict | None]) -> int | None:
    """The index of the best answer in ``history`` (:func:`answer_rank`; attempts without an
    answer never count); on a tie the later attempt; ``None`` when no attempt has an answer."""
    best: int | None = None
    for i, v in enumerate(history):
        if v is not None and (best is None or answer_rank(v) >= answer_rank(history[best])):
            best = i
    return best


def answer_at(history: Sequence[AnswerVerdict | None], policy: Policy) -> int | None:
    """The index of the attempt that is the loop's answer: :func:`best_at` with
    ``policy.keep_best``, else ``None`` (the last answer)."""
    return best_at(history) if policy.keep_best else None


def repeats(calls: Sequence[Any], patience: int) -> bool:
    """Whether the last ``patience`` revisions each repeated the calls before them: the last
    ``patience + 1`` entries of ``calls`` (one per answered attempt, oldest first, each the
    answer's calls in any comparable form) are all equal. ``False`` for ``patience <= 0`` or
    when there are fewer attempts."""
    if patience <= 0 or len(calls) < patience + 1:
        return False
    tail = calls[-(patience + 1) :]
    return all(c == tail[0] for c in tail[1:])


def feedback(v: AnswerVerdict, policy: Policy) -> str | None:
    """The feedback after the failing answer ``v``: ``binary``'s "No" (whatever the answer:
    the paper's binary mode says only that it is wrong); the ``structured`` correction
    (:func:`~callscope.saag.messages.correction_message`) or the ``gated`` one
    (:func:`~callscope.saag.messages.gated_message`) of each failing call, composed by
    :func:`answer_correction` (for an answer of several calls: each failing call named by
    position and name, then the calls that passed, to keep; gated with ``keep_right``: to
    keep exactly as they are); the paper's "No function name found" for an answer with no
    checked call. ``None`` (gated only) when the gate is closed for every failing call.
    Built from the answer alone: never from the gold, nor from how many calls it has. For
    an answer of one call, exactly the paper's (and the gated mode's) message for that call."""
    if policy.feedback == "binary":
        return BINARY_FEEDBACK
    if not v.checked:
        return NO_NAME
    if policy.gated is None:
        return answer_correction(v.checked, lambda c: correction_message(c.diagnosis)) or NO_NAME
    settings = policy.gated
    return answer_correction(
        v.checked,
        lambda c: gated_message(c.diagnosis, c.call, settings, c.reason or v.parse_error),
        keep_as_is=settings.keep_right,
    )


def call_fix(checked: CheckedCall) -> str | None:
    """The correction of one call: for a call the parser could not read, the parser's reason
    (:func:`~callscope.saag.messages.unreadable_message`, as the gated loop sends it) where
    it has one; else the structured correction (SAAG Table 4)."""
    if checked.call is None and (why := unreadable_message(checked.reason)) is not None:
        return why
    return correction_message(checked.diagnosis)


def per_call(
    checked: Sequence[CheckedCall], message: Callable[[CheckedCall], str | None]
) -> str | None:
    """``message`` of each failing call (one giving ``None`` or ``""`` left out), each prefixed
    with the call it is for (``Call 2 (name): ...``, :func:`~callscope.saag.messages.call_label`)
    when the answer made several calls; ``None`` when no failing call has one."""
    fixes = [
        (i, c, m)
        for i, c in enumerate(checked)
        if not c.diagnosis.passed
        for m in (message(c),)
        if m
    ]
    if not fixes:
        return None
    if len(checked) == 1:
        return fixes[0][2]
    return " ".join(f"{call_label(i, c.call)}: {m}" for i, c, m in fixes)


def passed_labels(checked: Sequence[CheckedCall]) -> list[str]:
    """The labels (:func:`~callscope.saag.messages.call_label`) of the calls of an answer
    that passed all three stages, in answer order."""
    return [
        call_label(i, c.call)
        for i, c in enumerate(checked)
        if c.call is not None and c.diagnosis.passed
    ]


def answer_correction(
    checked: Sequence[CheckedCall],
    message: Callable[[CheckedCall], str | None],
    *,
    keep_as_is: bool = False,
) -> str | None:
    """The correction of a failing answer (issue 28 item 6): :func:`per_call` (each failing
    call's ``message``, named ``Call N (name): `` when the answer made several calls), then,
    when the answer made several calls and some passed, the sentence asking to keep those
    (:func:`~callscope.saag.messages.keep_passed`; ``keep_as_is``: "exactly as they are",
    the gated mode's). ``None`` when no failing call has a message (nothing is sent, so no
    keep sentence either). An answer of one call gets its call's message unchanged."""
    fixes = per_call(checked, message)
    if fixes is None or len(checked) < 2:
        return fixes
    kept = passed_labels(checked)
    if not kept:
        return fixes
    return f"{fixes} {keep_passed(kept, as_is=keep_as_is)}"


def decide(
    history: Sequence[AnswerVerdict | None],
    policy: Policy,
    *,
    out_of_time: Callable[[], bool] | None = None,
) -> Decision:
    """What the loop does after the last attempt of ``history`` (module docstring: the stop
    reasons in the order they are checked). ``out_of_time`` is the driver's deadline, asked
    only when no earlier reason stops the loop."""
    if not history:
        raise ValueError("decide needs at least one attempt")
    last = history[-1]
    if last is None:
        return Decision("error")
    settings = policy.gated
    best = best_at(history[:-1])
    if (
        settings is not None
        and settings.stop_on_regression
        and best is not None
        and answer_rank(last) < answer_rank(history[best])
    ):
        return Decision("regression")
    if last.passed:
        return Decision("passed")
    if len(history) >= policy.max_attempts:
        return Decision("budget")
    if settings is not None and repeats(
        [v.calls for v in history if v is not None], settings.repeat_patience
    ):
        return Decision("repeat")
    if out_of_time is not None and out_of_time():
        return Decision("deadline")
    fix = feedback(last, policy)
    if fix is None:
        return Decision("gate")
    return Decision(feedback=fix)
