"""Repair a failing response by re-asking with the gated (or the structured) correction.

:func:`repair` asks any chat function, checks the answer (:func:`callscope.guard.check.check`)
and, while a call fails, appends the model's answer and a correction and asks again, at most
``k`` times. By default the correction is the gated mode's (issue 17,
:func:`callscope.saag.messages.gated_message` with :data:`~callscope.saag.gated.GATED_DEFAULT`):
only confident failures are corrected (a soft drift alone closes the gate and ends the repair,
``stopped="gate"``), the message names what of the model's own name and arguments already
passed, a revision that ranks below the best so far ends it (``stopped="regression"``), and so
does a call repeated unchanged through two corrections (``stopped="repeat"``).
``settings=None`` sends the SAAG paper's ``structured`` correction
(:func:`callscope.saag.messages.correction_message`, section 2.4) until ``k`` is spent. It
keeps the best response seen: the one whose worst call reached the deepest stage, then the one
with the fewest flagged names and values, then the earliest. Every re-asked answer is checked
against the *original* messages: the correction is never evidence for grounding.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from callscope.guard.check import NO_CALL_FEEDBACK, TurnVerdict, check, message_of
from callscope.models.prompting import assistant_turn
from callscope.saag.gated import GATED_DEFAULT, GatedSettings, repeats
from callscope.saag.groundings import Grounding
from callscope.saag.messages import gated_message
from callscope.types import ParseResult, ToolCall

#: Re-asks after the first response when ``k`` is not given (the one place the guard, the
#: proxy and ``callscope serve --attempts`` read it). The gated settings end most repairs
#: sooner (a repeated call, a regression, a closed gate); in the issue-17 comparison's first
#: 20 cases the 0.5B's loops that went on past attempt 3 only repeated their call (9 of 12),
#: and its one late fix (structured, attempt 6) is not worth six round trips in a live agent.
DEFAULT_REPAIR_ATTEMPTS = 3

#: ``chat_fn(messages, tools) -> response`` (an OpenAI message or completion, a ModelReply,
#: or text); it may raise to say no answer could be had
ChatFn = Callable[[list[dict[str, Any]], Sequence[Any] | None], Any]


@dataclass
class RepairAttempt:
    """One ask: what was sent, what came back, the verdict, and the feedback sent after it."""

    attempt: int
    messages: list[dict[str, Any]]
    response: Any = None
    verdict: TurnVerdict | None = None
    feedback: str | None = None
    error: str | None = None
    latency_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "verdict": self.verdict.to_dict() if self.verdict is not None else None,
            "feedback": self.feedback,
            "error": self.error,
            "latency_s": self.latency_s,
        }


@dataclass
class RepairResult:
    """What :func:`repair` did. ``response`` is the best response (unchanged when the first
    passed or made no call), ``best_attempt`` its 1-based attempt; ``stopped`` says why the
    re-asking ended: ``passed``, ``no_call`` (the first turn made no tool call),
    ``budget`` (``k`` re-asks spent), ``deadline``, ``error`` (the chat function raised), and
    with gated settings ``gate`` (only a soft drift is left: nothing confident to correct) or
    ``regression`` (a revision ranked below the best so far) or ``repeat`` (the model repeated
    its calls through ``repeat_patience`` corrections)."""

    response: Any
    verdict: TurnVerdict
    best_attempt: int
    stopped: str
    attempts: list[RepairAttempt] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @property
    def repaired(self) -> bool:
        """The first response failed and a re-asked one passed."""
        return self.verdict.passed and self.best_attempt > 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "repaired": self.repaired,
            "best_attempt": self.best_attempt,
            "stopped": self.stopped,
            "attempts": [a.to_dict() for a in self.attempts],
        }


def rank(verdict: TurnVerdict) -> tuple[int, int]:
    """Keep-best order of two responses (higher is better): the deepest stage the worst call
    reached (:attr:`TurnVerdict.reached`), then fewer flagged names and values."""
    return verdict.reached, -verdict.flagged


def repair(
    chat_fn: ChatFn,
    messages: Sequence[dict[str, Any]],
    tools: Sequence[Any] | None,
    *,
    k: int = DEFAULT_REPAIR_ATTEMPTS,
    grounding: str | Grounding | None = None,
    first: Any = None,
    settings: GatedSettings | None = GATED_DEFAULT,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RepairResult:
    """Ask ``chat_fn`` (or take ``first``, an answer already had), then re-ask with the
    correction up to ``k`` times while the answer fails; return the best answer and the record.

    ``settings`` are the gated mode's ingredients used here (``confident_only``, ``keep_right``,
    ``stop_on_regression``, ``repeat_patience``; the answer is always the best so far);
    ``None`` sends the paper's structured correction. ``deadline`` is a ``clock()`` time after
    which no further re-ask starts. An exception from the first ask propagates; one from a
    re-ask ends the repair with the best answer so far (``stopped="error"``)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    base = [dict(m) for m in messages]
    t0 = clock()
    response = chat_fn(list(base), tools) if first is None else first
    verdict = check(response, tools, base, grounding)
    attempts = [RepairAttempt(1, base, response, verdict, latency_s=clock() - t0)]
    if not verdict.checked:
        return RepairResult(response, verdict, 1, "no_call", attempts)
    best = 0
    convo = list(base)
    stopped = "passed"
    while not attempts[best].verdict.passed:  # type: ignore[union-attr]
        if len(attempts) > k:
            stopped = "budget"
            break
        if deadline is not None and clock() >= deadline:
            stopped = "deadline"
            break
        last = attempts[-1]
        last_verdict = last.verdict
        assert last_verdict is not None
        feedback = _feedback(last_verdict, settings)
        if feedback is None:
            stopped = "gate"
            break
        last.feedback = feedback
        convo = [
            *convo,
            _assistant(last.response, last_verdict),
            {"role": "user", "content": feedback},
        ]
        n = len(attempts) + 1
        t0 = clock()
        try:
            reply = chat_fn(list(convo), tools)
        except Exception as exc:  # noqa: BLE001 - any failure of the chat function ends it
            attempts.append(RepairAttempt(n, list(convo), error=str(exc), latency_s=clock() - t0))
            stopped = "error"
            break
        v = check(reply, tools, base, grounding)
        attempts.append(RepairAttempt(n, list(convo), reply, v, latency_s=clock() - t0))
        now, so_far = rank(v), rank(attempts[best].verdict)  # type: ignore[arg-type]
        if now > so_far:
            best = len(attempts) - 1
        elif now < so_far and settings is not None and settings.stop_on_regression:
            stopped = "regression"
            break
        if settings is not None and repeats(
            [a.verdict.tool_calls for a in attempts if a.verdict is not None],
            settings.repeat_patience,
        ):
            stopped = "repeat"
            break
    chosen = attempts[best]
    assert chosen.verdict is not None
    return RepairResult(chosen.response, chosen.verdict, chosen.attempt, stopped, attempts)


def _feedback(verdict: TurnVerdict, settings: GatedSettings | None) -> str | None:
    """The message sent after a failing turn: the structured correction (``settings=None``)
    or the gated one per failing call, labelled by call when the turn made several; a turn
    with no readable call gets :data:`NO_CALL_FEEDBACK`; ``None`` when the gate is closed for
    every failing call."""
    if not verdict.calls or settings is None:
        return verdict.correction or NO_CALL_FEEDBACK
    return verdict.feedback(
        lambda c: gated_message(
            c.diagnosis,
            ToolCall(c.name, c.arguments) if c.name else None,
            settings,
            verdict.parse_error,
        )
    )


def _assistant(response: Any, verdict: TurnVerdict) -> dict[str, Any]:
    """The answer as it is appended before the correction: a call as its JSON text, so the
    next turn can be a plain user message (OpenAI wants tool results after ``tool_calls``)."""
    try:
        text = verdict.content or str(message_of(response).get("content") or "")
    except TypeError:
        text = ""
    return assistant_turn(text, ParseResult(calls=verdict.tool_calls), True)
