"""The SAAG correction loop (paper section 2.4): direct, binary ("No") and structured feedback,
and callscope's gated feedback (:mod:`callscope.saag.gated`, issue 17).

This module is the loop's driver: it asks the model, parses and scores each attempt and
records it; what feedback to send, when to stop and which attempt is the answer are decided
by the correction engine the guard's repair shares (:mod:`callscope.saag.correction`), from
the loop mode's :func:`loop_policy`.

The unit is the answer (issue 28): every call of an attempt is diagnosed, the attempt passes
when every call passes all three cascade stages, and a correction names each failing call by
position and name (``Call 2 (get_weather): ...``) and asks to keep the calls that passed
(the gated modes: exactly as they are); an answer of one call gets the paper's message for
it unchanged (:func:`callscope.saag.correction.answer_correction`). The best-so-far answer is
a whole attempt, never calls mixed from several.

The ground truth is never used inside the loop: an attempt stops the loop when it passes;
the gold's calls are only read afterwards, for the extrinsic metrics, and neither them nor
their number reach a message. What the loop reads of a case's gold is one bit,
``Case.expects_call``: on a case where no call is right (gold ``[]``: BFCL's irrelevance
categories) an answer without a call is a clean abstention that passes and stops the loop,
where a call is expected it is the paper's stage-1 failure ("No function name found"). Calls
and broken calls get the same verdicts and messages either way (a broken call: the parser's
reason in the gated modes, the paper's stage-1 message in the structured mode).

Why a loop stopped is recorded on its :class:`Outcome` (``stop``): ``passed`` (all three
stages), ``budget`` (``max_attempts`` spent; direct mode's budget is 1), ``error`` (the
backend failed), and in the gated modes ``gate`` (only a soft drift was left: nothing
confident to correct), ``regression`` (a revision ranked below the best attempt so far,
:func:`callscope.saag.correction.answer_rank`) and ``repeat`` (the last ``repeat_patience``
revisions repeated the calls before them, :func:`callscope.saag.correction.repeats`). A gated
loop with ``best_so_far`` answers with its best attempt (``Outcome.answer_at``; ties go to the
later attempt, :func:`callscope.saag.correction.best_at`).
"""

from __future__ import annotations

import time
from typing import Any

from callscope.errors import ModelError
from callscope.models.base import ChatModel, Decoding, RequestContext
from callscope.models.prompting import assistant_turn, initial_messages
from callscope.parse import parse_output
from callscope.records import Attempt, Outcome
from callscope.records.answers import verdict_from_dict, verdict_record
from callscope.saag.correction import (
    AnswerVerdict,
    Policy,
    answer_at,
    decide,
)
from callscope.saag.gated import GatedSettings, gated_settings
from callscope.saag.groundings import get_grounding
from callscope.saag.score import score_parsed
from callscope.types import Case, Mode, ModelReply, ParseResult, Style, ToolCall


def _call(
    model: ChatModel,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    decoding: Decoding,
    context: RequestContext,
) -> tuple[ModelReply | None, ModelError | None, float]:
    t0 = time.perf_counter()
    try:
        reply = model.chat(messages, tools, decoding, context=context)
    except ModelError as exc:
        return None, exc, time.perf_counter() - t0
    return reply, None, time.perf_counter() - t0


def _scored_attempt(
    n: int,
    case: Case,
    messages: list[dict[str, Any]],
    reply: ModelReply,
    latency: float,
    grounding: str | None,
) -> Attempt:
    """Attempt ``n`` scored: its verdict in the form the store keeps (the only thing it
    keeps of it: :func:`~callscope.records.answers.verdict_record`) and, for the loop and
    the export, its row (the store computes it again when read)."""
    parsed = parse_output(reply)
    mode = get_grounding(grounding)
    # the loop asks for a tool call unless the case says no call is right (gold [])
    verdict, row = score_parsed(parsed, case, mode, expect_call=case.expects_call is not False)
    return Attempt(
        attempt=n,
        messages=[dict(m) for m in messages],
        reply=reply.to_dict(),
        parsed=[c.to_dict() for c in parsed.calls],
        row=row,
        diagnosis=verdict_record(verdict, mode.name),
        latency_s=latency,
    )


def first_attempt(
    model: ChatModel, case: Case, style: Style, decoding: Decoding, grounding: str | None = None
) -> tuple[Attempt, list[dict[str, Any]], list[dict[str, Any]] | None]:
    """Attempt 1, identical in every mode: compute it once per (model, case) and share it.

    Every request carries its :class:`RequestContext` (``case_id``, ``mode`` ``"first"``,
    ``attempt`` 1), as do the later attempts of :func:`run_loop` (their mode, attempt ``n``).
    """
    several = case.meta.get("answer_format") == "calls"
    messages, tools = initial_messages(case.query, case.functions, style, several)
    context = RequestContext(case_id=case.id, mode="first", attempt=1)
    reply, err, latency = _call(model, messages, tools, decoding, context)
    if err is not None:
        return _failed(1, messages, err, latency), messages, tools
    return _scored_attempt(1, case, messages, reply, latency, grounding), messages, tools


def _failed(n: int, messages: list[dict[str, Any]], err: ModelError, latency: float) -> Attempt:
    return Attempt(
        attempt=n,
        messages=[dict(m) for m in messages],
        reply=None,
        parsed=[],
        row=None,
        diagnosis=None,
        error=str(err),
        error_kind=err.kind,
        latency_s=latency,
    )


def run_loop(
    model: ChatModel,
    case: Case,
    mode: Mode,
    *,
    first: tuple[Attempt, list[dict[str, Any]], list[dict[str, Any]] | None],
    style: Style,
    max_attempts: int = 15,
    decoding: Decoding | None = None,
    grounding: str | None = None,
    gated: GatedSettings | None = None,
) -> Outcome:
    """Continue from the shared first attempt until the answer passes or the budget is spent.
    ``grounding`` names the stage-3 mode every attempt is scored in (its corrections never
    ask to change a value that mode accepted). A gated mode (``gated``, ``gated-*``) runs with
    its :data:`~callscope.saag.gated.GATED_VARIANTS` settings unless ``gated`` overrides
    them; it may also stop at the gate, on a regression or when the model keeps repeating
    its call (module docstring). What to send, when to stop and which attempt answers is
    :func:`callscope.saag.correction.decide`'s and :func:`~callscope.saag.correction.answer_at`'s."""
    decoding = decoding or Decoding()
    policy = loop_policy(mode, max_attempts, gated)
    attempt1, messages, tools = first
    out = Outcome(case_id=case.id, mode=mode, attempts=[_copy(attempt1)])
    native = style == "native"
    messages = list(messages)
    history = [_verdict(attempt1)]
    while True:
        last = out.attempts[-1]
        decision = decide(history, policy)
        if decision.stop is not None:
            return _finish(out, decision.stop, answer_at(history, policy))
        last.feedback = decision.feedback
        said = history[-1]
        assert said is not None  # an attempt without an answer stops the loop
        messages = [
            *messages,
            assistant_turn((last.reply or {}).get("text") or "", ParseResult(said.calls), native),
            {"role": "user", "content": decision.feedback},
        ]
        n = last.attempt + 1
        context = RequestContext(case_id=case.id, mode=mode, attempt=n)
        reply, err, latency = _call(model, messages, tools, decoding, context)
        if err is not None:
            out.attempts.append(_failed(n, messages, err, latency))
        else:
            out.attempts.append(_scored_attempt(n, case, messages, reply, latency, grounding))
        history.append(_verdict(out.attempts[-1]))


def loop_policy(mode: Mode, max_attempts: int, gated: GatedSettings | None = None) -> Policy:
    """The correction policy of a loop mode: ``direct`` makes one attempt; ``binary`` and
    ``structured`` send the paper's feedback until ``max_attempts``; a gated mode sends the
    gated feedback with its :data:`~callscope.saag.gated.GATED_VARIANTS` settings (``gated``
    overrides them) and answers with its best attempt when ``best_so_far`` is on."""
    settings = gated if gated is not None and mode.startswith("gated") else gated_settings(mode)
    if settings is not None:
        return Policy("gated", max_attempts, settings, keep_best=settings.best_so_far)
    if mode == "direct":
        return Policy("structured", 1)
    return Policy("binary" if mode == "binary" else "structured", max_attempts)


def _verdict(a: Attempt) -> AnswerVerdict | None:
    """The engine's view of attempt ``a`` from what it stored (every call's diagnosis, the
    calls, the parser's error: :func:`~callscope.saag.answer.verdict_from_dict`); ``None``
    when the backend failed."""
    if a.error is not None or a.diagnosis is None:
        return None
    calls = tuple(ToolCall(**c) for c in a.parsed)
    return verdict_from_dict(a.diagnosis, calls, (a.row or {}).get("parse_error"))


def _finish(out: Outcome, stop: str, answer: int | None) -> Outcome:
    """Record why the loop stopped and, for a best-so-far loop, its answer attempt
    (``answer``: an index into ``out.attempts``)."""
    out.stop = stop
    if stop == "error":
        last = out.attempts[-1]
        out.error, out.error_kind = last.error, last.error_kind
    if answer is not None:
        out.answer_at = out.attempts[answer].attempt
    return out


def _copy(a: Attempt) -> Attempt:
    return Attempt(**{**a.__dict__, "feedback": None})
