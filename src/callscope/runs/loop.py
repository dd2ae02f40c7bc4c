"""The SAAG correction loop (paper section 2.4): direct, binary ("No") and structured feedback,
and callscope's gated feedback (:mod:`callscope.saag.gated`, issue 17).

The ground truth is never used inside the loop: an attempt stops the loop when it passes all
three cascade stages; gold is only read afterwards, for the extrinsic metrics.

Why a loop stopped is recorded on its :class:`Outcome` (``stop``): ``passed`` (all three
stages), ``budget`` (``max_attempts`` spent; direct mode's budget is 1), ``error`` (the
backend failed), and in the gated modes ``gate`` (only a soft drift was left: nothing
confident to correct), ``regression`` (a revision ranked below the best attempt so far,
:func:`callscope.saag.gated.attempt_rank`) and ``repeat`` (the last ``repeat_patience``
revisions repeated the call before them, :func:`callscope.saag.gated.repeats`). A gated loop with ``best_so_far`` answers with its
best attempt (``Outcome.answer_at``; ties go to the later attempt).
"""

from __future__ import annotations

import time
from typing import Any

from callscope.errors import ModelError
from callscope.models.base import ChatModel, Decoding, RequestContext
from callscope.models.prompting import assistant_turn, initial_messages
from callscope.parse import parse_output
from callscope.records import Attempt, Outcome
from callscope.saag.gated import (
    GatedSettings,
    attempt_rank,
    diagnosis_from_dict,
    gated_settings,
    repeats,
)
from callscope.saag.messages import BINARY_FEEDBACK, gated_message
from callscope.saag.score import score_parsed
from callscope.types import Case, Mode, ModelReply, ParseResult, Style


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
    parsed = parse_output(reply)
    diagnosis, row = score_parsed(parsed, case, grounding)
    return Attempt(
        attempt=n,
        messages=[dict(m) for m in messages],
        reply=reply.to_dict(),
        parsed=[c.to_dict() for c in parsed.calls],
        row=row,
        diagnosis=diagnosis.to_dict(),
        latency_s=latency,
    )


def first_attempt(
    model: ChatModel, case: Case, style: Style, decoding: Decoding, grounding: str | None = None
) -> tuple[Attempt, list[dict[str, Any]], list[dict[str, Any]] | None]:
    """Attempt 1, identical in every mode: compute it once per (model, case) and share it.

    Every request carries its :class:`RequestContext` (``case_id``, ``mode`` ``"first"``,
    ``attempt`` 1), as do the later attempts of :func:`run_loop` (their mode, attempt ``n``).
    """
    messages, tools = initial_messages(case.query, case.functions, style)
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
    """Continue from the shared first attempt until the call passes or the budget is spent.
    ``grounding`` names the stage-3 mode every attempt is scored in (its corrections never
    ask to change a value that mode accepted). A gated mode (``gated``, ``gated-*``) runs with
    its :data:`~callscope.saag.gated.GATED_VARIANTS` settings unless ``gated`` overrides
    them; it may also stop at the gate, on a regression or when the model keeps repeating
    its call (module docstring)."""
    decoding = decoding or Decoding()
    settings = gated if gated is not None and mode.startswith("gated") else gated_settings(mode)
    attempt1, messages, tools = first
    out = Outcome(case_id=case.id, mode=mode, attempts=[_copy(attempt1)])
    limit = 1 if mode == "direct" else max_attempts
    native = style == "native"
    messages = list(messages)
    best: Attempt | None = None
    while True:
        last = out.attempts[-1]
        if last.error is not None:
            out.error, out.error_kind = last.error, last.error_kind
            return _finish(out, "error", best, settings)
        if settings is not None:
            if best is not None and settings.stop_on_regression and _rank(last) < _rank(best):
                return _finish(out, "regression", best, settings)
            if best is None or _rank(last) >= _rank(best):
                best = last
        if last.row is not None and last.row["stage"] == 0:
            return _finish(out, "passed", best, settings)
        if last.attempt >= limit:
            return _finish(out, "budget", best, settings)
        if settings is not None and repeats(
            [a.parsed for a in out.attempts if a.error is None], settings.repeat_patience
        ):
            return _finish(out, "repeat", best, settings)
        reply_text = (last.reply or {}).get("text") or ""
        parsed = parse_output(ModelReply.from_dict(last.reply or {}))
        if settings is not None:
            feedback = _gated_feedback(last, parsed, settings)
            if feedback is None:
                return _finish(out, "gate", best, settings)
        else:
            feedback = BINARY_FEEDBACK if mode == "binary" else last.row["fix"]
        last.feedback = feedback
        messages = [
            *messages,
            assistant_turn(reply_text, parsed, native),
            {"role": "user", "content": feedback},
        ]
        n = last.attempt + 1
        context = RequestContext(case_id=case.id, mode=mode, attempt=n)
        reply, err, latency = _call(model, messages, tools, decoding, context)
        if err is not None:
            out.attempts.append(_failed(n, messages, err, latency))
        else:
            out.attempts.append(_scored_attempt(n, case, messages, reply, latency, grounding))


def _rank(a: Attempt) -> tuple[int, int]:
    return attempt_rank(a.diagnosis)


def _gated_feedback(a: Attempt, parsed: ParseResult, settings: GatedSettings) -> str | None:
    """The gated message for attempt ``a``, whose answer parsed as ``parsed`` (``None``: the
    gate is closed)."""
    if a.diagnosis is None:
        return None
    return gated_message(diagnosis_from_dict(a.diagnosis), parsed.first, settings, parsed.error)


def _finish(
    out: Outcome, stop: str, best: Attempt | None, settings: GatedSettings | None
) -> Outcome:
    """Record why the loop stopped and, for a best-so-far gated loop, its answer attempt."""
    out.stop = stop
    if settings is not None and settings.best_so_far and best is not None:
        out.answer_at = best.attempt
    return out


def _copy(a: Attempt) -> Attempt:
    return Attempt(**{**a.__dict__, "feedback": None})
