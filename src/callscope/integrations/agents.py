"""callscope in the OpenAI Agents SDK: a tool input guardrail (extra ``agents``; callscope is
not on the package index: from a checkout, ``pip install "/path/to/callscope[agents]"``,
``docs/hosts.md``).

:data:`guard` (or :func:`callscope_guardrail` for other settings) is a
:class:`agents.ToolInputGuardrail`: put it on a function tool
(``@function_tool(tool_input_guardrails=[guard])``) and before the tool runs the SDK hands it
the call; callscope checks it through the SAAG cascade against the agent's function tools and
the run's evidence (:func:`callscope.guard.check.check`). A call the gate lets through runs
(``ToolGuardrailFunctionOutput.allow``); one it acts on does not
(:func:`callscope.integrations.verdicts.acts_on`, the rule of every integration): the
guardrail answers ``reject_content`` with the correction, which the SDK sends the model as
the tool's output, so the model repairs the call in the agent's own loop. The call's verdict
(stage, failure kinds, reasons, the SAAG metrics) is the guardrail's ``output_info``, in the
run result's ``tool_input_guardrail_results``.

The correction is the gated one by default (:func:`callscope.integrations.verdicts.correction_for`,
as ``guard_repair`` and ``callscope serve`` send it): a call whose only failure is a soft
drift runs. Evidence is the run's input as the SDK gives the guardrail
(``ToolContext.turn_input``: the user's messages and the tool outputs in it) and the outputs
of the tools that ran earlier in the same run, as ``score`` and the proxy read a
conversation's tool results: the SDK does not hand those to a guardrail, so pass
:data:`hooks` (a :class:`agents.RunHooks` that records each tool's output) to the run::

    Runner.run(agent, "What's the weather at home?", hooks=hooks)

(with hooks of your own, call :func:`record_tool_output` from their ``on_tool_end``). Then
``get_home`` answering "Tokyo" grounds ``get_weather(city="Tokyo")``. A rejected call never
runs, so a correction is never evidence for the value it asks for. A tool the agent does not
list among its own ``tools`` (one from an MCP server, say) is let through unchecked, with
``output_info`` saying so.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    RunContextWrapper,
    RunHooks,
    Tool,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
)
from agents.tool_context import ToolContext

from callscope.guard.check import TurnVerdict, check, content_text
from callscope.guard.inputs import conversation_chars
from callscope.integrations.formats import responses_messages
from callscope.integrations.verdicts import acts_on, call_row, correction_for, off_the_loop
from callscope.records.wire import ChatMessage, ChatTool
from callscope.saag.gated import GATED_DEFAULT
from callscope.saag.groundings import get_grounding

#: at most this many tool outputs of one run are kept as evidence (the latest ones), each cut
#: to :data:`MAX_OUTPUT_CHARS` characters
MAX_RUN_OUTPUTS = 256
MAX_OUTPUT_CHARS = 100_000

#: the tool outputs of each live run, by the identity of its ``Usage`` (the one object every
#: context of a run shares, the guardrail's and the hooks' alike); an entry goes with its run
_RUN_OUTPUTS: dict[int, list[str]] = {}


def openai_tools(tools: Iterable[Any]) -> list[ChatTool]:
    """The agent's function tools as OpenAI ``tools`` (name, description, the JSON Schema
    the SDK sends the model); other kinds of tool are left out."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.params_json_schema,
            },
        }
        for t in tools
        if isinstance(t, FunctionTool)
    ]


def chat_messages(items: Sequence[Any]) -> list[ChatMessage]:
    """Responses-API input items (the SDK's ``TResponseInputItem``) as chat messages
    (:func:`callscope.integrations.formats.responses_messages`, the one reader of the
    Responses format): the messages by role with their text, a ``function_call_output`` as a
    tool message; other items (the model's own calls, reasoning) carry no evidence."""
    return responses_messages(list(items))


def _outputs_of(context: RunContextWrapper[Any], create: bool = False) -> list[str] | None:
    """The list of tool outputs recorded for ``context``'s run (``None``: none, or a context
    without a run's ``Usage``)."""
    usage = getattr(context, "usage", None)
    if usage is None:
        return None
    key = id(usage)
    found = _RUN_OUTPUTS.get(key)
    if found is None and create:
        try:
            weakref.finalize(usage, _RUN_OUTPUTS.pop, key, None)
        except TypeError:  # an object that cannot be weakly referenced: nothing kept
            return None
        found = _RUN_OUTPUTS[key] = []
    return found


def _output_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    text = content_text(result)
    if text:
        return text
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


def record_tool_output(context: RunContextWrapper[Any], result: Any) -> None:
    """Keep ``result``, a tool's output in the run of ``context``, as evidence for the calls
    the guardrail checks later in that run (what :data:`hooks` does on ``on_tool_end``)."""
    outputs = _outputs_of(context, create=True)
    if outputs is None:
        return
    outputs.append(_output_text(result)[:MAX_OUTPUT_CHARS])
    del outputs[:-MAX_RUN_OUTPUTS]


class CallscopeHooks(RunHooks[Any]):
    """Run hooks that record every tool's output for the guardrail
    (:func:`record_tool_output`); pass them as ``Runner.run(..., hooks=...)``."""

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: Any
    ) -> None:
        record_tool_output(context, result)


#: the run hooks to pass with a guarded agent (module docstring)
hooks = CallscopeHooks()


def run_messages(context: ToolContext[Any]) -> list[ChatMessage]:
    """The evidence of a call about to run, as chat messages: the run's input
    (``turn_input``), then, as tool messages, the outputs the run's tools gave earlier
    (recorded by :data:`hooks`)."""
    messages = chat_messages(context.turn_input)
    for text in _outputs_of(context) or ():
        messages.append({"role": "tool", "content": text})
    return messages


def check_tool_call(
    context: ToolContext[Any],
    agent: Agent[Any],
    grounding: str | None = None,
    messages: list[ChatMessage] | None = None,
) -> TurnVerdict:
    """The verdict on the call ``context`` is about to run: the call as an assistant message
    of its own, against ``agent``'s function tools and the run's evidence
    (:func:`run_messages`; ``messages``, when already read)."""
    call = {
        "id": context.tool_call_id,
        "type": "function",
        "function": {"name": context.tool_name, "arguments": context.tool_arguments},
    }
    response = {"role": "assistant", "content": "", "tool_calls": [call]}
    evidence = run_messages(context) if messages is None else messages
    return check(response, openai_tools(namespace_tools(context, agent)), evidence, grounding)


def namespace_tools(context: ToolContext[Any], agent: Agent[Any]) -> list[FunctionTool]:
    """The agent's function tools in the namespace of the call ``context`` is about to run
    (``tool_namespace()``: two tools of one name in two namespaces are two tools; the call
    is checked against its own); all of those without a namespace for a call without one.
    The SDK keeps a tool's namespace on ``_tool_namespace`` (agents 0.25)."""
    namespace = getattr(context, "tool_namespace", None)
    return [
        t
        for t in agent.tools
        if isinstance(t, FunctionTool) and getattr(t, "_tool_namespace", None) == namespace
    ]


def callscope_guardrail(
    *, gated: bool = True, grounding: str | None = None, name: str = "callscope"
) -> ToolInputGuardrail[Any]:
    """A tool input guardrail that lets passing calls run and rejects failing ones with the
    correction as the message the model sees (module docstring). ``gated=False`` sends the
    paper's structured correction on every failure; ``grounding`` names the stage-3 mode."""
    settings = GATED_DEFAULT if gated else None
    get_grounding(grounding)  # an unknown mode: ConfigError here, not at the first tool call

    async def check_input(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context, agent = data.context, data.agent
        if not any(t.name == context.tool_name for t in namespace_tools(context, agent)):
            return ToolGuardrailFunctionOutput.allow(
                output_info={"checked": False, "reason": "not one of the agent's tools"}
            )
        messages = run_messages(context)  # a long run's: checked on a thread
        turn = await off_the_loop(
            conversation_chars(messages),
            len(context.tool_name) + len(context.tool_arguments or ""),
            check_tool_call,
            context,
            agent,
            grounding,
            messages,
        )
        if not turn.calls:  # over callscope's own reading limit: runs, unchecked
            return ToolGuardrailFunctionOutput.allow(
                output_info={"checked": False, "reason": turn.unchecked}
            )
        verdict = turn.calls[0]
        info = {"checked": True, **call_row(verdict)}
        fix = correction_for(verdict, settings, turn.parse_error)
        if fix is None or not acts_on(turn, settings):
            return ToolGuardrailFunctionOutput.allow(output_info=info)
        return ToolGuardrailFunctionOutput.reject_content(message=fix, output_info=info)

    return ToolInputGuardrail(guardrail_function=check_input, name=name)


#: the guardrail with the default settings (gated correction, the default grounding)
guard: ToolInputGuardrail[Any] = callscope_guardrail()
