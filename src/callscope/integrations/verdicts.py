"""What every host integration shares, free of any host package: the correction a failing call
gets, and a call's verdict as plain JSON data.

A host hands callscope one call at a time (an Inspect approver, an Agents SDK tool guardrail)
or a whole conversation (an Inspect scorer); either way the verdict is
:func:`callscope.guard.check.check`'s, so what an integration says equals ``guard_check`` on
the same messages. :func:`correction_for` picks the message a failing call is answered with:
by default the gated mode's (:func:`callscope.saag.messages.gated_message` with
:data:`~callscope.saag.gated.GATED_DEFAULT`, as ``guard_repair`` and ``callscope serve``
send it): only confident failures are corrected, and the message names what of the call was
already right. A call whose only failure is a soft drift closes the gate: it gets no
correction and is let through. ``settings=None`` sends the SAAG paper's structured correction
on every failure.

Every integration acts on one rule, :func:`acts_on` (issue 40): a turn is rejected, blocked or
re-asked exactly when it has a correction to send (:func:`turn_correction`, the message
``guard_repair`` would send). With the gated settings a soft drift alone is let through
everywhere (the Inspect approver, the Agents SDK guardrail, LiteLLM's ``repair`` and
``block``); what is soft is the cascade's (:func:`callscope.saag.grounding.soft_drift`: a slip
in a stated value, never a value naming another entity of the same kind).

Two rules every integration shares through :func:`callscope.guard.check.check` (issue 46):

- a final-answer tool is not a tool call: the tool a host's agent ends its run with carries
  the agent's answer, not values the user must have stated; the calls named in
  :data:`FINAL_ANSWER_TOOLS` (Inspect's ``basic_agent`` and ``react``: ``submit``, their
  default; pass ``final_answer=`` for an agent configured with another name) are neither
  graded nor gated (:func:`callscope.guard.check.split_final`);
- a required value the user did not state gets the ASK verdict
  (:attr:`callscope.records.FailureKind.ASK`, :func:`callscope.saag.ask.with_ask`), whose
  one correction tells the agent to ask the user, in the approver, the guardrails, the
  proxy and ``guard_repair`` alike.

And one rule of where a check runs (:func:`off_the_loop`): a host that checks in its event
loop (LiteLLM's hooks, the Agents SDK's guardrails, Inspect's approver and scorer) has a
check of a request and answer over :data:`~callscope.guard.inputs.INLINE_CHECK_CHARS`
characters together run on a thread (:func:`callscope.guard.inputs.checks_inline`, the
proxy's rule too), because stage 3 reads the whole conversation for each of the answer's
values and the host's other work would wait as long.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import anyio.to_thread

from callscope.guard.check import CallVerdict, TurnVerdict
from callscope.guard.inputs import checks_inline
from callscope.guard.repair import repair_policy
from callscope.records import STAGES
from callscope.saag.correction import feedback
from callscope.saag.gated import GATED_DEFAULT, GatedSettings, confident_kinds
from callscope.saag.messages import gated_message
from callscope.types import ToolCall

T = TypeVar("T")


async def off_the_loop(
    request_chars: int, answer_chars: int, fn: Callable[..., T], *args: Any
) -> T:
    """``fn(*args)``, here when the check it makes is short enough for an event loop
    (:func:`~callscope.guard.inputs.checks_inline` of the request's and the answer's
    characters: :func:`~callscope.guard.inputs.conversation_chars`,
    :func:`~callscope.guard.inputs.answer_chars`), else on one of anyio's worker threads
    (asyncio and trio hosts alike), in this context."""
    if checks_inline(request_chars, answer_chars):
        return fn(*args)
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    return await anyio.to_thread.run_sync(call)


#: the final-answer tools of the hosts' own agents: Inspect's ``basic_agent(submit_name=)`` and
#: ``react(submit=AgentSubmit(name=))`` both default to ``submit``
FINAL_ANSWER_TOOLS: frozenset[str] = frozenset({"submit"})

#: the stage mix's keys, by stage (0 = passed), as the report names them
STAGE_KEYS: tuple[str, ...] = ("passed", "stage1", "stage2", "stage3")
#: what each stage checks, for explanations
#: what each failing stage checks, from the one stage vocabulary (``records.STAGES``)
STAGE_NAMES: dict[int, str] = {s.number: s.what for s in STAGES if s.number}
#: the SAAG metrics a call's diagnosis carries (stage-conditional: ``None`` past its stage)
METRICS: tuple[str, ...] = ("fnem", "ncs", "rpr", "pds", "spr", "avem", "qslo", "vhr")


def correction_for(
    verdict: CallVerdict,
    settings: GatedSettings | None = GATED_DEFAULT,
    parse_error: str | None = None,
) -> str | None:
    """The correction a call is answered with, or ``None`` when it passes: it passed the
    cascade, or (gated, ``settings.confident_only``) only a soft drift is left. ``settings``
    ``None`` gives the paper's structured correction (:attr:`CallVerdict.correction`);
    ``parse_error`` is the turn's, for a call that could not be read."""
    if verdict.passed:
        return None
    if settings is None:
        return verdict.correction
    call = ToolCall(verdict.name, verdict.arguments) if verdict.name else None
    return gated_message(verdict.diagnosis, call, settings, parse_error=parse_error)


def turn_correction(
    turn: TurnVerdict, settings: GatedSettings | None = GATED_DEFAULT
) -> str | None:
    """The correction a whole response is answered with (each failing call named by
    position when it made several, as :func:`callscope.guard_repair` sends it), or ``None``
    when nothing is to be corrected: every call passed, or (gated) only soft drifts are
    left."""
    if turn.passed:
        return None
    return feedback(turn.answer, repair_policy(0, settings))


def acts_on(turn: TurnVerdict, settings: GatedSettings | None = GATED_DEFAULT) -> bool:
    """Whether an integration acts on the response (rejects, blocks or re-asks it): it has a
    correction to send (:func:`turn_correction`). The one rule of every integration."""
    return turn_correction(turn, settings) is not None


def call_row(verdict: CallVerdict) -> dict[str, Any]:
    """One call's verdict as plain JSON: position, id, name, arguments, stage, failure kinds,
    ``confident`` (a failure the gated correction acts on: every stage-1 and stage-2 kind, a
    numeric or hard drift; ``False`` for a pass or a soft drift alone), reasons, the
    structured correction and the SAAG metrics of its diagnosis."""
    d = verdict.diagnosis
    return {
        "index": verdict.index,
        "id": verdict.id,
        "name": verdict.name,
        "arguments": verdict.arguments,
        "stage": verdict.stage,
        "failure_kinds": [str(k) for k in d.failure_kinds()],
        "confident": bool(confident_kinds(d)),
        "reasons": list(verdict.reasons),
        "correction": verdict.correction,
        "metrics": {m: getattr(d, m) for m in METRICS},
    }


def describe(verdict: CallVerdict) -> str:
    """One line for a call: ``get_weather: passed`` or ``get_weather: stage 3 (value
    grounding): hard: city='Paris' has no grounding in the user's text``."""
    name = verdict.name or "(no name)"
    if verdict.passed:
        return f"{name}: passed"
    head = f"{name}: stage {verdict.stage} ({STAGE_NAMES.get(verdict.stage, '?')})"
    return f"{head}: {'; '.join(verdict.reasons)}" if verdict.reasons else head


def stage_counts(turns: Iterable[TurnVerdict]) -> dict[str, int]:
    """How many calls of ``turns`` passed, and how many first failed at each stage."""
    counts = dict.fromkeys(STAGE_KEYS, 0)
    for turn in turns:
        for c in turn.calls:
            counts[STAGE_KEYS[c.stage]] += 1
    return counts
