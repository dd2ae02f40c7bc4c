"""callscope in the OpenAI Agents SDK: a tool input guardrail (``pip install
"callscope[agents]"``).

:data:`guard` (or :func:`callscope_guardrail` for other settings) is a
:class:`agents.ToolInputGuardrail`: put it on a function tool
(``@function_tool(tool_input_guardrails=[guard])``) and before the tool runs the SDK hands it
the call; callscope checks it through the SAAG cascade against the agent's function tools and
the run's input (:func:`callscope.guard.check.check`). A passing call runs
(``ToolGuardrailFunctionOutput.allow``); a failing one does not: the guardrail answers
``reject_content`` with the correction, which the SDK sends the model as the tool's output,
so the model repairs the call in the agent's own loop. The call's verdict (stage, failure
kinds, reasons, the SAAG metrics) is the guardrail's ``output_info``, in the run result's
``tool_input_guardrail_results``.

The correction is the gated one by default (:func:`callscope.integrations.verdicts.correction_for`,
as ``guard_repair`` and ``callscope serve`` send it): a call whose only failure is a soft
drift runs. Evidence is the run's input as the SDK gives the guardrail
(``ToolContext.turn_input``: the user's messages and the tool outputs in it); tool outputs
produced earlier in the same run are not in it, nor is a rejection: a correction never
grounds the value it asks for. A tool the agent does not list among its own ``tools`` (one
from an MCP server, say) is let through unchecked, with ``output_info`` saying so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
)
from agents.tool_context import ToolContext

from callscope.guard.check import TurnVerdict, check, content_text
from callscope.integrations.verdicts import call_row, correction_for
from callscope.saag.gated import GATED_DEFAULT


def openai_tools(tools: Iterable[Any]) -> list[dict[str, Any]]:
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


def _item(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        dump = getattr(item, "model_dump", None)
        item = dump(exclude_unset=True) if callable(dump) else None
    return item if isinstance(item, dict) else None


def chat_messages(items: Sequence[Any]) -> list[dict[str, Any]]:
    """Responses-API input items (the SDK's ``TResponseInputItem``) as chat messages: the
    messages by role with their text, a ``function_call_output`` as a tool message; other
    items (the model's own calls, reasoning) carry no evidence and are left out."""
    out: list[dict[str, Any]] = []
    for raw in items:
        item = _item(raw)
        if item is None:
            continue
        kind = item.get("type")
        if kind == "function_call_output":
            out.append({"role": "tool", "content": content_text(item.get("output"))})
        elif kind in (None, "message") and isinstance(item.get("role"), str):
            out.append({"role": item["role"], "content": content_text(item.get("content"))})
    return out


def check_tool_call(
    context: ToolContext[Any], agent: Agent[Any], grounding: str | None = None
) -> TurnVerdict:
    """The verdict on the call ``context`` is about to run: the call as an assistant message
    of its own, against ``agent``'s function tools and the run's input."""
    call = {
        "id": context.tool_call_id,
        "type": "function",
        "function": {"name": context.tool_name, "arguments": context.tool_arguments},
    }
    response = {"role": "assistant", "content": "", "tool_calls": [call]}
    return check(response, openai_tools(agent.tools), chat_messages(context.turn_input), grounding)


def callscope_guardrail(
    *, gated: bool = True, grounding: str | None = None, name: str = "callscope"
) -> ToolInputGuardrail[Any]:
    """A tool input guardrail that lets passing calls run and rejects failing ones with the
    correction as the message the model sees (module docstring). ``gated=False`` sends the
    paper's structured correction on every failure; ``grounding`` names the stage-3 mode."""
    settings = GATED_DEFAULT if gated else None

    def check_input(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context, agent = data.context, data.agent
        if not any(
            isinstance(t, FunctionTool) and t.name == context.tool_name for t in agent.tools
        ):
            return ToolGuardrailFunctionOutput.allow(
                output_info={"checked": False, "reason": "not one of the agent's tools"}
            )
        turn = check_tool_call(context, agent, grounding)
        verdict = turn.calls[0]
        info = {"checked": True, **call_row(verdict)}
        fix = correction_for(verdict, settings, turn.parse_error)
        if fix is None:
            return ToolGuardrailFunctionOutput.allow(output_info=info)
        return ToolGuardrailFunctionOutput.reject_content(message=fix, output_info=info)

    return ToolInputGuardrail(guardrail_function=check_input, name=name)


#: the guardrail with the default settings (gated correction, the default grounding)
guard: ToolInputGuardrail[Any] = callscope_guardrail()
