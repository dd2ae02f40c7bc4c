"""Templated, deterministic correction messages (SAAG paper, Appendix D, Table 4).

Every message is built from the registry, the model's own prediction and the cascade's
metrics only: nothing here ever sees the ground truth.
"""

from __future__ import annotations

import json
from typing import Any

from callscope.parse.text import UNINFORMATIVE_ERRORS
from callscope.records import Diagnosis, FailureKind
from callscope.saag.gated import GATED_DEFAULT, GatedSettings, confident_kinds
from callscope.types import ToolCall

BINARY_FEEDBACK = "No"

NO_NAME = (
    "No function name found. Please return only the agent invocation in the exact JSON "
    "format specified in the registry."
)
WRONG_NAME = (
    'Function name "{predicted}" not found in registry. Please check the system prompt for '
    "the correct function names and respond with only the agent invocation in the exact JSON "
    "format specified."
)
NEAREST_HINT = ' The closest registered name is "{nearest}".'
#: the template of each failure kind of stages 2-3 (SAAG Table 4), in the order the kinds are
#: listed; ``{params}`` names the flagged parameters. Each is its kind's entry
#: (:attr:`callscope.records.FailureKind.template`)
TEMPLATES: dict[FailureKind, str] = {k: k.template for k in FailureKind if k.template}
MISSING = TEMPLATES[FailureKind.MISSING]
SPURIOUS = TEMPLATES[FailureKind.SPURIOUS]
DRIFTED = TEMPLATES[FailureKind.DRIFTED]
NUMERIC = TEMPLATES[FailureKind.NUMERIC]
HARD = TEMPLATES[FailureKind.HARD]
SOFT = TEMPLATES[FailureKind.SOFT]
#: the guard's ASK (issue 46, :func:`callscope.saag.ask.with_ask`): a required value the user
#: did not state is asked for, never invented and never left out
ASK = TEMPLATES[FailureKind.ASK]


def correction_message(d: Diagnosis, soft: bool = True) -> str | None:
    """The fix psi_k for the failing stage, or ``None`` when the call passed. ``soft=False``
    leaves out the kinds the gate does not correct (:attr:`FailureKind.corrects`: a soft
    drift; the gated mode corrects confident kinds only)."""
    if d.stage == 0:
        return None
    if d.stage == 1:
        if d.fnem == -1:
            return NO_NAME
        msg = WRONG_NAME.format(predicted=d.predicted)
        if d.nearest is not None and (d.ncs or 0) > 0:
            msg += NEAREST_HINT.format(nearest=d.nearest)
        return msg
    parts = [
        TEMPLATES[kind].format(params=", ".join(names))
        for kind in FailureKind.of_stage(d.stage)
        if (names := getattr(d, kind.value)) and (soft or kind.corrects)
    ]
    return " ".join(parts)


# --------------------------------------------------------------------------- gated (issue 17)

UNREADABLE = (
    "Your call could not be read: {reason}. Please return only the complete agent "
    "invocation, as valid JSON in the exact format specified in the registry."
)
#: the longest parser reason a correction quotes (longer ones are cut, with "...")
MAX_REASON_CHARS = 200
KEEP_NAME = 'The function name "{name}" is right: keep it.'
KEEP_ARGS = "These arguments are right: keep them unchanged: {args}."
#: the longest rendering of one kept argument value (longer ones are shown cut, with "...")
MAX_KEPT_VALUE_CHARS = 120


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = str(value)
    if len(text) > MAX_KEPT_VALUE_CHARS:
        text = text[: MAX_KEPT_VALUE_CHARS - 3] + "..."
    return text


def _evidence(note: str) -> str:
    """An evidence line as a correction shows it (capped like a kept value)."""
    return note if len(note) <= MAX_KEPT_VALUE_CHARS else note[: MAX_KEPT_VALUE_CHARS - 3] + "..."


def already_right(d: Diagnosis, call: ToolCall | None) -> str:
    """What of the model's own ``call`` already passed the cascade, as a sentence or ``""``:
    the name once stage 1 passed; at a stage-3 failure also the arguments stage 3 grounded
    (``d.grounded``), each with the model's own value, and for a value grounded through a
    library its evidence (``d.evidence``: "'Canadian Dollar' → CAD by ..."), so the model
    sees why it is kept. Never reads the gold."""
    if call is None or d.stage in (0, 1) or d.predicted is None:
        return ""
    if d.ask and not (d.missing or d.spurious or d.drifted):
        return ""  # the agent is to ask the user, not to call again: nothing to keep
    parts = [KEEP_NAME.format(name=d.predicted)]
    if d.stage == 3:
        kept = [k for k in call.arguments if k in d.grounded]
        if kept:
            shown = ", ".join(
                f"{k} = {_shown(call.arguments[k])}"
                + (f" ({_evidence(d.evidence[k])})" if k in d.evidence else "")
                for k in kept
            )
            parts.append(KEEP_ARGS.format(args=shown))
    return " ".join(parts)


def unreadable_message(parse_error: str | None) -> str | None:
    """The correction for an answer from which no call was read, giving the parser's
    ``parse_error``; ``None`` when the parser had nothing specific to say (no call-like
    text at all: :data:`~callscope.parse.text.UNINFORMATIVE_ERRORS`)."""
    if not parse_error or parse_error in UNINFORMATIVE_ERRORS:
        return None
    reason = " ".join(parse_error.split()).rstrip(".")
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 3] + "..."
    return UNREADABLE.format(reason=reason)


def gated_message(
    d: Diagnosis,
    call: ToolCall | None,
    settings: GatedSettings = GATED_DEFAULT,
    parse_error: str | None = None,
) -> str | None:
    """The gated mode's feedback for diagnosis ``d`` of the model's ``call``, or ``None`` when
    no correction is sent: the call passed, or (``settings.confident_only``) only a soft
    drift is left (:func:`callscope.saag.gated.confident_kinds`). The correction is the
    paper's template (:func:`correction_message`) restricted to the confident kinds, followed
    (``settings.keep_right``) by :func:`already_right`; for an answer with no readable call
    (``settings.explain_parse``) it is :func:`unreadable_message` of the parser's
    ``parse_error`` where that says something specific."""
    if d.stage == 0:
        return None
    if settings.explain_parse and d.stage == 1 and d.fnem == -1:
        unreadable = unreadable_message(parse_error)
        if unreadable is not None:
            return unreadable
    if settings.confident_only and not confident_kinds(d):
        return None
    fix = correction_message(d, soft=not settings.confident_only) or ""
    if settings.keep_right:
        keep = already_right(d, call)
        if keep:
            fix = f"{fix} {keep}"
    return fix


# --------------------------------------------------------------------------- answers (issue 28)

#: how a correction names one call of an answer of several calls: its position in the
#: answer (1-based) and the name the model gave it (:data:`UNNAMED` when it gave none)
CALL_LABEL = "Call {position} ({name})"
UNNAMED = "unnamed"
#: the paper's structured mode, to an answer of several calls some of which passed: keep them
KEEP_PASSED = "{calls} passed: keep {pronoun} in your answer."
#: the gated mode's (``keep_right``): keep the calls that passed exactly as they are
KEEP_PASSED_AS_IS = "{calls} passed: keep {pronoun} exactly as {pronoun_is}."


def call_label(position: int, call: ToolCall | None) -> str:
    """How a correction names the call at 0-based ``position`` of an answer: its 1-based
    position and the model's own name for it (never the gold's): ``Call 2 (get_weather)``
    for the second call, ``Call 1 (unnamed)`` for a call without a name."""
    return CALL_LABEL.format(position=position + 1, name=(call.name if call else None) or UNNAMED)


def keep_passed(labels: list[str], as_is: bool = False) -> str:
    """The sentence asking the model to keep the calls of its answer that passed, named by
    ``labels`` (:func:`call_label`, in answer order): :data:`KEEP_PASSED`, or with ``as_is``
    the gated mode's :data:`KEEP_PASSED_AS_IS`. Built from the model's own answer only: it
    says nothing of how many calls the gold has. ``Call 1 (f) passed: keep it in your
    answer.``; ``Call 1 (f), Call 2 (g) and Call 4 (f) passed: keep them exactly as they
    are.``"""
    if not labels:
        raise ValueError("keep_passed needs at least one call")
    calls = labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"
    one = len(labels) == 1
    if as_is:
        return KEEP_PASSED_AS_IS.format(
            calls=calls, pronoun="it" if one else "them", pronoun_is="it is" if one else "they are"
        )
    return KEEP_PASSED.format(calls=calls, pronoun="it" if one else "them")
