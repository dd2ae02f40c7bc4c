"""Repair a failing response by re-asking with the gated (or the structured) correction.

:func:`repair` asks any chat function, checks the answer (:func:`callscope.guard.check.check`)
and, while a call fails, appends the model's answer and a correction and asks again, at most
``k`` times. This module is the guard's driver of the correction engine the SAAG loop shares
(:mod:`callscope.saag.correction`): the engine says which correction to send, when to stop and
which answer to keep. By default the correction is the gated mode's (issue 17,
:func:`callscope.saag.messages.gated_message` with :data:`~callscope.saag.gated.GATED_DEFAULT`):
only confident failures are corrected (a soft drift alone closes the gate and ends the repair,
``stopped="gate"``), the message names what of the model's own name and arguments already
passed, a revision that ranks below the best so far ends it (``stopped="regression"``), and so
does a call repeated unchanged through two corrections (``stopped="repeat"``).
``settings=None`` sends the SAAG paper's ``structured`` correction
(:func:`callscope.saag.messages.correction_message`, section 2.4) until ``k`` is spent. It
keeps the best response seen (:func:`callscope.saag.correction.best_at`): the one whose worst
call reached the deepest stage, then the one with the fewest flagged names and values, then
the later one. Every re-asked answer is checked against the *original* messages: the
correction is never evidence for grounding.

The unit is the answer (issue 28): every call of each answer is checked; a failing call among
passing ones is corrected by position and name (``Call 2 (get_weather): ...``) and the calls
that passed are named, to be kept exactly as they are (the engine's
:func:`~callscope.saag.correction.answer_correction`); the answer kept is the best *whole*
answer (its worst call's depth, then its flagged values over all its calls). A first answer
without a call attempt (prose) is not repaired (``stopped="no_call"``): the agent may answer
in prose. A re-asked answer without a call, after a call attempt, counts as no answer to the
correction (it ranks below any call and is corrected with the paper's "No function name
found").

An ASK correction (issue 46: a required value the user did not state,
:attr:`~callscope.records.FailureKind.ASK`) asks the agent to ask the user: a re-asked answer
in prose after it is the answer asked for, not a missing call; the repair ends there
(``stopped="asked"``) and returns that answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from callscope.guard.check import TurnVerdict, check, message_of
from callscope.models.prompting import assistant_turn
from callscope.records import FailureKind
from callscope.saag.correction import AnswerVerdict, Policy, answer_at, decide
from callscope.saag.gated import GATED_DEFAULT, GatedSettings
from callscope.saag.groundings import Grounding
from callscope.types import ParseResult

#: Re-asks after the first response when ``k`` is not given (the one place the guard, the
#: proxy and ``callscope serve --attempts`` read it). The gated settings end most repairs
#: sooner (a repeated call, a regression, a closed gate); in the issue-17 comparison's first
#: 20 cases the 0.5B's loops that went on past attempt 3 only repeated their call (9 of 12),
#: and its one late fix (structured, attempt 6) is not worth six round trips in a live agent.
DEFAULT_REPAIR_ATTEMPTS = 3
#: re-asks at most that a guard may be configured with (``callscope serve --attempts``, the
#: LiteLLM guardrail's ``attempts``)
MAX_REPAIR_ATTEMPTS = 20

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
    ``budget`` (``k`` re-asks spent), ``deadline``, ``error`` (the chat function raised),
    ``asked`` (after an ASK correction the model asked the user, in prose: that answer is
    the response), and
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


def repair(
    chat_fn: ChatFn,
    messages: Sequence[dict[str, Any]],
    tools: Sequence[Any] | None,
    *,
    k: int = DEFAULT_REPAIR_ATTEMPTS,
    grounding: str | Grounding | None = None,
    first: Any = None,
    first_verdict: TurnVerdict | None = None,
    settings: GatedSettings | None = GATED_DEFAULT,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    checker: Callable[..., TurnVerdict] = check,
) -> RepairResult:
    """Ask ``chat_fn`` (or take ``first``, an answer already had, and ``first_verdict``, its
    verdict when already checked), then re-ask with the correction up to ``k`` times while the
    answer fails; return the best answer and the record.

    ``settings`` are the gated mode's ingredients used here (``confident_only``, ``keep_right``,
    ``stop_on_regression``, ``repeat_patience``, ``explain_parse``; the answer is always the
    best so far); ``None`` sends the paper's structured correction. ``deadline`` is a
    ``clock()`` time after which no further re-ask starts. ``checker`` is :func:`check` or a
    function that runs it elsewhere (the proxy's worker processes, for a long conversation).
    An exception from the first ask propagates; one from a re-ask, or a re-ask's answer that
    cannot be read (``None``, an object that is no message), ends the repair with the best
    answer so far (``stopped="error"``)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    policy = repair_policy(k, settings)
    base = [dict(m) for m in messages]
    t0 = clock()
    # each ask gets its own copies of the messages: a chat function that edits them in
    # place must not change the evidence the answers are checked against
    response = chat_fn([dict(m) for m in base], tools) if first is None else first
    verdict = (
        first_verdict if first_verdict is not None else checker(response, tools, base, grounding)
    )
    attempts = [RepairAttempt(1, base, response, verdict, latency_s=clock() - t0)]
    if not verdict.checked:
        return RepairResult(response, verdict, 1, "no_call", attempts)
    history: list[AnswerVerdict | None] = [verdict.answer]
    convo = list(base)

    def out_of_time() -> bool:
        return deadline is not None and clock() >= deadline

    while True:
        decision = decide(history, policy, out_of_time=out_of_time)
        if decision.stop is not None:
            stopped: str = decision.stop
            break
        last = attempts[-1]
        assert last.verdict is not None  # an attempt without an answer stops the repair
        last.feedback = decision.feedback
        convo = [
            *convo,
            _assistant(last.response, last.verdict),
            {"role": "user", "content": decision.feedback},
        ]
        n = len(attempts) + 1
        t0 = clock()
        try:
            reply = chat_fn([dict(m) for m in convo], tools)
            v = checker(reply, tools, base, grounding)  # (an answer it cannot read: TypeError)
        except Exception as exc:  # noqa: BLE001 - any failure of the re-ask ends it
            attempts.append(RepairAttempt(n, list(convo), error=str(exc), latency_s=clock() - t0))
            history.append(None)
            continue
        attempts.append(RepairAttempt(n, list(convo), reply, v, latency_s=clock() - t0))
        if v.no_call == "abstained" and asks_user(last.verdict):
            return RepairResult(reply, v, n, "asked", attempts)
        history.append(v.answer if v.checked else AnswerVerdict(parse_error=v.parse_error))
    best = answer_at(history, policy)
    assert best is not None  # the first attempt always has an answer
    chosen = attempts[best]
    assert chosen.verdict is not None
    return RepairResult(chosen.response, chosen.verdict, chosen.attempt, stopped, attempts)


def asks_user(verdict: TurnVerdict) -> bool:
    """Whether the correction of ``verdict`` asks the agent to ask the user: a call of it
    failed with :attr:`~callscope.records.FailureKind.ASK`."""
    return any(FailureKind.ASK in c.diagnosis.failure_kinds() for c in verdict.calls)


def repair_policy(k: int, settings: GatedSettings | None) -> Policy:
    """The repair's correction policy: ``k`` re-asks after the first answer, the gated
    feedback with ``settings`` (``None``: the paper's structured one), the best answer kept."""
    if settings is None:
        return Policy("structured", k + 1, keep_best=True)
    return Policy("gated", k + 1, settings, keep_best=True)


def _assistant(response: Any, verdict: TurnVerdict) -> dict[str, Any]:
    """The answer as it is appended before the correction: a call as its JSON text, so the
    next turn can be a plain user message (OpenAI wants tool results after ``tool_calls``)."""
    try:
        text = verdict.content or str(message_of(response).get("content") or "")
    except TypeError:
        text = ""
    return assistant_turn(text, ParseResult(calls=verdict.tool_calls), True)
