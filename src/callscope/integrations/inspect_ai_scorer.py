"""callscope in Inspect AI: a scorer and an approver, registered through Inspect's
``inspect_ai`` entry point (extra ``inspect``; callscope is not on the package index: from a
checkout, ``pip install "/path/to/callscope[inspect]"``, ``docs/hosts.md``).

Inspect loads the entry point named ``callscope`` (pyproject's
``[project.entry-points.inspect_ai]``) the first time a task names one of its objects, so
an installed callscope makes them available by name to any Inspect task, its CLI and its
approval-policy files:

- scorer ``callscope/tool_calls`` (:func:`tool_calls`): every tool call of the sample's
  assistant messages through the SAAG cascade, each against the sample's tools and the user
  text before it (:func:`callscope.guard.check.check` on the conversation up to that message;
  a sample rescored from a log, ``inspect score``, has no tools of its own: each message
  is then checked against the tools its model call was offered, from the sample's events).
  The :class:`~inspect_ai.scorer.Score`'s value is ``C`` when every call passed, ``I`` when
  one failed, ``N`` when the sample made no call; its explanation names each failing call's
  stage and reasons; its metadata holds each call's verdict (stage, failure kinds, reasons,
  correction, the SAAG metrics) and the stage counts. A call of the agent's final-answer
  tool (``submit``: :data:`~callscope.integrations.verdicts.FINAL_ANSWER_TOOLS`) is the
  agent's answer, not a graded tool call. Metrics: ``accuracy`` and
  :func:`stage_mix` (the share of calls that passed and that first failed at each stage).
  The scorer is gold-free: it ignores ``Sample.target`` (the verdict is the cascade's on the
  call and the conversation, never a comparison with an expected answer).
- approver ``callscope/guard`` (:func:`guard`): before a tool runs, checks its call the same
  way; a passing call is approved, a failing one rejected with the correction as the
  explanation (which Inspect sends the model as the tool's error, so it repairs the call in
  its own loop) or escalated to the next approver of the policy. It reads what the model
  saw wherever the agent keeps it (issue 46): the tools the model call that made the call
  was offered (its ``ModelEvent``: ``react()`` keeps its tools in the agent, not in
  ``state.tools``), and the sample's whole conversation when the agent hands the approver
  less (``basic_agent`` gives only the assistant message). The final-answer tool is
  approved unchecked.

By name (``callscope/tool_calls``, ``callscope/guard``) they are found where Inspect resolves
names: ``inspect score --scorer callscope/tool_calls``, approval-policy files
(``approvers: [{name: callscope/guard}]``) and ``inspect_ai.scorer.scorer_create``. In Python,
``Task(scorer=...)`` takes a scorer object, not a name (``Task(scorer="callscope/tool_calls")``
is a ``TypeError``): call the factory, ``Task(..., scorer=tool_calls())``.

Inspect's messages and tools are read into the OpenAI form ``guard_check`` takes
(:func:`openai_messages`, :func:`openai_tools`); a tool error message (an approver's
rejection, a failed tool) is not evidence: a correction never grounds the value it asks for.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from contextlib import suppress
from typing import Any, Literal
from weakref import WeakKeyDictionary

from inspect_ai.approval import Approval, Approver, approver
from inspect_ai.event import ModelEvent
from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    NOANSWER,
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    accuracy,
    metric,
    scorer,
)
from inspect_ai.solver import TaskState
from inspect_ai.solver._task_state import sample_state
from inspect_ai.tool import Tool, ToolCall, ToolCallView, ToolDef

from callscope.guard.check import TurnVerdict, check
from callscope.guard.inputs import INLINE_CHECK_CHARS
from callscope.integrations.verdicts import (
    FINAL_ANSWER_TOOLS,
    STAGE_KEYS,
    acts_on,
    call_row,
    correction_for,
    describe,
    off_the_loop,
    stage_counts,
)
from callscope.parse.literals import json_size
from callscope.records import wire
from callscope.saag.gated import GATED_DEFAULT
from callscope.saag.groundings import get_grounding

# --------------------------------------------------------------------------- Inspect -> OpenAI


#: each tool's OpenAI form, once per tool object (reading a ``Tool`` into a ``ToolDef`` parses
#: its docstring: about as long as the cascade itself)
_SPECS: WeakKeyDictionary[Any, wire.ChatTool] = WeakKeyDictionary()


def openai_tool(tool: Tool | ToolDef) -> wire.ChatTool:
    """An Inspect tool as an OpenAI one (name, description, the JSON Schema of the
    parameters), the form Inspect's own OpenAI provider sends; kept per tool object."""
    try:
        return _SPECS[tool]
    except (KeyError, TypeError):
        pass
    td = tool if isinstance(tool, ToolDef) else ToolDef(tool)
    spec: wire.ChatTool = {
        "type": "function",
        "function": {
            "name": td.name,
            "description": td.description,
            "parameters": td.parameters.model_dump(exclude_none=True),
        },
    }
    with suppress(TypeError):  # an object that cannot be weakly referenced is not kept
        _SPECS[tool] = spec
    return spec


def openai_tools(tools: Sequence[Tool | ToolDef]) -> list[wire.ChatTool]:
    """Inspect tools as OpenAI ``tools`` (:func:`openai_tool`)."""
    return [openai_tool(t) for t in tools]


def openai_call(call: ToolCall) -> wire.ChatToolCall:
    """An Inspect tool call as an OpenAI one. A call whose arguments Inspect could not parse
    keeps its parse error as the (unreadable) arguments, so the cascade reports it unread."""
    arguments: Any = call.arguments if call.parse_error is None else call.parse_error
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.function, "arguments": arguments},
    }


def openai_message(m: ChatMessage) -> wire.ChatMessage | None:
    """One Inspect message as an OpenAI one; ``None`` for a tool error (not evidence)."""
    if isinstance(m, ChatMessageAssistant):
        out: wire.ChatMessage = {"role": "assistant", "content": m.text}
        if m.tool_calls:
            out["tool_calls"] = [openai_call(c) for c in m.tool_calls]
        return out
    if isinstance(m, ChatMessageTool):
        if m.error is not None:
            return None
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text}
    if isinstance(m, ChatMessageUser | ChatMessageSystem):
        return {"role": m.role, "content": m.text}
    return None


def openai_messages(messages: Sequence[ChatMessage]) -> list[wire.ChatMessage]:
    """Inspect messages as OpenAI ones (tool errors left out: :func:`openai_message`)."""
    return [o for o in (openai_message(m) for m in messages) if o is not None]


# --------------------------------------------------------------------------- diagnosis


def recorded_tools(events: Iterable[Any]) -> dict[str | None, list[wire.ChatTool]]:
    """The tools each model call of a sample's ``events`` was offered, as OpenAI ``tools``,
    by the id of the assistant message it produced; key ``None``: the last model call's. A
    model call that returned no choice produced no message: it is passed over."""
    out: dict[str | None, list[wire.ChatTool]] = {}
    for e in events:
        if isinstance(e, ModelEvent) and e.output.choices:
            spec = [
                {"type": "function", "function": t.model_dump(exclude_none=True)} for t in e.tools
            ]
            out[None] = out[e.output.choices[0].message.id] = spec
    return out


def diagnose_messages(
    messages: Sequence[ChatMessage],
    tools: Sequence[Tool | ToolDef] | dict[str | None, list[wire.ChatTool]],
    grounding: str | None = None,
    final_answer: Collection[str] = FINAL_ANSWER_TOOLS,
) -> list[tuple[int, TurnVerdict]]:
    """``(message index, verdict)`` for every assistant message of ``messages`` that made a
    call attempt, each checked against ``tools`` and the messages before it. ``tools`` is the
    sample's tools, or :func:`recorded_tools` (each message against the tools its model call
    was offered); calls of a ``final_answer`` tool are not checked."""
    spec = openai_tools(tools) if not isinstance(tools, dict) else []
    out: list[tuple[int, TurnVerdict]] = []
    history: list[wire.ChatMessage] = []
    for i, m in enumerate(messages):
        o = openai_message(m)
        if isinstance(m, ChatMessageAssistant) and o is not None:
            if isinstance(tools, dict):
                spec = tools.get(m.id) or tools.get(None) or []
            turn = check(o, spec, history, grounding, final_answer)
            if turn.checked:
                out.append((i, turn))
        if o is not None:
            history.append(o)
    return out


def score_of(turns: Sequence[tuple[int, TurnVerdict]]) -> Score:
    """The sample's :class:`Score` from its checked turns (module docstring)."""
    verdicts = [t for _, t in turns]
    calls = [c for t in verdicts for c in t.calls]
    counts = stage_counts(verdicts)
    rows = [{"message": i, **call_row(c)} for i, t in turns for c in t.calls]
    failing = [c for c in calls if not c.passed]
    if not calls:
        value, explanation = NOANSWER, "no tool call"
    elif failing:
        value = INCORRECT
        explanation = "\n".join(describe(c) for c in failing)
    else:
        value = CORRECT
        explanation = f"all {len(calls)} tool call(s) passed"
    stage = min((c.stage for c in failing), default=0)
    return Score(
        value=value,
        answer="; ".join(f"{c.name or '?'}({c.arguments})" for c in calls) or None,
        explanation=explanation,
        metadata={"stage": stage, "stage_counts": counts, "calls": rows},
    )


@metric
def stage_mix() -> Metric:
    """The stage mix over every checked call of the scored samples: the share that passed
    (``passed``) and that first failed at stage 1, 2 or 3 (``stage1``...), calls pooled."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        totals = dict.fromkeys(STAGE_KEYS, 0)
        for s in scores:
            counts = (s.score.metadata or {}).get("stage_counts") or {}
            for k in STAGE_KEYS:
                totals[k] += int(counts.get(k, 0))
        n = sum(totals.values())
        return {k: (totals[k] / n if n else 0.0) for k in STAGE_KEYS}

    return compute


@scorer(metrics=[accuracy(), stage_mix()])
def tool_calls(grounding: str | None = None, final_answer: Sequence[str] | None = None) -> Scorer:
    """Score a sample by the SAAG cascade's verdict on every tool call it made (module
    docstring). ``grounding`` names the stage-3 mode (``lexical`` or ``registry``, the
    default); ``final_answer`` the agent's final-answer tools, not graded (default
    :data:`~callscope.integrations.verdicts.FINAL_ANSWER_TOOLS`)."""
    final = FINAL_ANSWER_TOOLS if final_answer is None else frozenset(final_answer)
    get_grounding(grounding)  # an unknown mode: ConfigError when the task is made

    async def score(state: TaskState, target: Target) -> Score:
        # a state rebuilt from a log (``inspect score``), or an agent that keeps its tools
        # itself (``react()``), has no sample tools: read the ones each model call was
        # offered from the sample's events
        tools = state.tools or recorded_tools(transcript().events)
        chars, calls = _chars(state.messages)  # a long sample: checked on a thread
        turns = await off_the_loop(
            chars, calls, diagnose_messages, state.messages, tools, grounding, final
        )
        return score_of(turns)

    return score


# --------------------------------------------------------------------------- approver


def check_call(
    message: str,
    call: ToolCall,
    history: Sequence[ChatMessage],
    tools: Sequence[Tool | ToolDef] | list[wire.ChatTool],
    grounding: str | None = None,
    final_answer: Collection[str] = FINAL_ANSWER_TOOLS,
) -> TurnVerdict:
    """The verdict on one call about to run: the call as an assistant message of its own
    (with the model's ``message`` text), against ``tools`` (Inspect tools, or OpenAI ones)
    and the ``history`` before it (a trailing assistant message, the one that made the
    call, is not part of the request). A call of a ``final_answer`` tool is not checked."""
    before = list(history)
    while before and isinstance(before[-1], ChatMessageAssistant):
        before.pop()
    response = {"role": "assistant", "content": message, "tool_calls": [openai_call(call)]}
    spec = [t for t in tools if isinstance(t, dict)] or openai_tools(
        [t for t in tools if not isinstance(t, dict)]
    )
    return check(response, spec, openai_messages(before), grounding, final_answer)


def offered_tools(call: ToolCall, events: Sequence[Any]) -> list[wire.ChatTool] | None:
    """The tools (OpenAI form) the model call that made ``call`` was offered: the latest
    :class:`ModelEvent` whose output carries a call of that id (else the latest one);
    ``None`` when no model call was recorded. Read from the end: the call's own model event
    is the latest but for the approvals after it."""
    latest: ModelEvent | None = None
    found: ModelEvent | None = None
    for e in reversed(events):
        if isinstance(e, ModelEvent):
            latest = latest or e
            calls = (e.output.message.tool_calls or ()) if e.output.choices else ()
            if any(c.id == call.id for c in calls):
                found = e
                break
    chosen = found or latest
    if chosen is None:
        return None
    return [{"type": "function", "function": t.model_dump(exclude_none=True)} for t in chosen.tools]


def _chars(messages: Sequence[ChatMessage]) -> tuple[int, int]:
    """``(the characters of Inspect messages' texts, of their tool calls)``, read from them
    as they are (what :func:`~callscope.guard.inputs.conversation_chars` and
    :func:`~callscope.guard.inputs.answer_chars` count of the OpenAI form): whether a
    check goes off the event loop (:func:`~callscope.integrations.verdicts.off_the_loop`)."""
    calls = sum(
        _call_chars(c)
        for m in messages
        if isinstance(m, ChatMessageAssistant)
        for c in m.tool_calls or ()
    )
    return sum(len(m.text) for m in messages), calls


def _call_chars(call: ToolCall) -> int:
    """A call's name and arguments, in characters (its arguments by their JSON size, bounded)."""
    return len(call.function) + json_size(call.arguments, INLINE_CHECK_CHARS)


def _conversation(history: Sequence[ChatMessage], state: TaskState) -> Sequence[ChatMessage]:
    """The evidence of a call: the ``history`` the agent handed the approver when it holds
    the request (a user or tool message), else the sample's conversation (``basic_agent``
    hands only the assistant message that made the call)."""
    if any(isinstance(m, ChatMessageUser | ChatMessageTool) for m in history):
        return history
    return state.messages


@approver(name="guard")
def guard(
    on_fail: Literal["reject", "escalate", "terminate"] = "reject",
    on_pass: Literal["approve", "escalate"] = "approve",
    gated: bool = True,
    grounding: str | None = None,
    final_answer: list[str] | None = None,
) -> Approver:
    """Approve a tool call that passes the SAAG cascade; ``on_fail`` (``reject``, default:
    the correction is the explanation Inspect shows the model) a failing one. ``gated``
    (default) sends the gated correction and lets a call whose only failure is a soft drift
    through; ``False`` sends the paper's structured correction on every failure. A call
    outside a sample (no tools to check it against) is escalated. ``final_answer`` names
    the agent's final-answer tools, approved unchecked (default
    :data:`~callscope.integrations.verdicts.FINAL_ANSWER_TOOLS`)."""
    settings = GATED_DEFAULT if gated else None
    final = FINAL_ANSWER_TOOLS if final_answer is None else frozenset(final_answer)
    get_grounding(grounding)  # an unknown mode: ConfigError when the task is made

    async def approve(
        message: str, call: ToolCall, view: ToolCallView, history: list[ChatMessage]
    ) -> Approval:
        state = sample_state()
        if state is None:
            return Approval(decision="escalate", explanation="callscope: no sample tools")
        if call.function in final:
            return Approval(
                decision=on_pass,
                explanation=f"{call.function}: the agent's final answer, not checked",
                metadata={"callscope": {"final_answer": call.function}},
            )
        tools = offered_tools(call, transcript().events) or state.tools
        conversation = _conversation(history, state)
        chars, _ = _chars(conversation)  # a long one: checked on a thread
        turn = await off_the_loop(
            chars,
            len(message) + _call_chars(call),
            check_call,
            message,
            call,
            conversation,
            tools,
            grounding,
            final,
        )
        if not turn.calls:  # over callscope's own reading limit: runs, unchecked
            return Approval(
                decision=on_pass,
                explanation=f"{call.function}: {turn.unchecked}",
                metadata={"callscope": {"unchecked": turn.unchecked}},
            )
        verdict = turn.calls[0]
        fix = correction_for(verdict, settings, turn.parse_error)
        meta = {"callscope": call_row(verdict)}
        if fix is None or not acts_on(turn, settings):
            return Approval(decision=on_pass, explanation=describe(verdict), metadata=meta)
        return Approval(decision=on_fail, explanation=fix, metadata=meta)

    return approve
