"""What the Inspect AI and OpenAI Agents SDK integrations cost per checked response, against
``callscope.guard_check`` alone (issue 30, goal: within 1.5x).

One run, side by side and interleaved (each round times every contender once on the same
case, so machine noise falls on all of them alike), on two responses of one ``get_weather``
call: one that passes and one whose city is invented (stage 3). For each response:

- ``guard_check``: ``callscope.guard_check(response, tools, messages)`` on the OpenAI-form
  request, built once beforehand (the baseline: what the integrations all call);
- Inspect scorer: the registered ``callscope/tool_calls`` scorer awaited on a real
  ``TaskState`` (Inspect messages and the ``@tool``'s ``Tool``, read into the OpenAI form
  each time, then the ``Score`` with its metadata);
- Inspect approver: the registered ``callscope/guard`` approver awaited on the call, with the
  sample's ``TaskState`` current (``set_sample_state``), as Inspect calls it before the tool;
- Agents guardrail: ``guard.run(ToolInputGuardrailData(...))``, the SDK's own entry point of a
  tool input guardrail, on a real ``ToolContext`` and ``Agent``.

Each contender's per-response time is the median over ``--n`` rounds; the ratio is that
median over ``guard_check``'s. The async contenders are awaited inside one running event
loop (the loop's own cost is not counted: Inspect and the SDK already run one).

    python benchmarks/integration_overhead_inspect_agents.py [--n 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from agents import Agent, ToolInputGuardrailData, function_tool
from agents.tool_context import ToolContext
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelName
from inspect_ai.scorer import Target
from inspect_ai.scorer._scorer import scorer_create
from inspect_ai.solver import TaskState
from inspect_ai.solver._task_state import set_sample_state
from inspect_ai.tool import ToolCall, ToolCallView, tool

import callscope
from callscope.integrations.agents import guard as agents_guard
from callscope.integrations.inspect_ai_scorer import guard as inspect_guard

QUESTION = "What's the weather in Lyon right now? Use celsius."
DESCRIPTION = "Get the current weather in a city."
PARAMS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city to get the weather for."},
        "unit": {"type": "string", "description": "The temperature unit, celsius or fahrenheit."},
    },
    "required": ["city", "unit"],
}


@tool
def get_weather():
    async def execute(city: str, unit: str) -> str:
        """Get the current weather in a city.

        Args:
            city: The city to get the weather for.
            unit: The temperature unit, celsius or fahrenheit.
        """
        return f"18 degrees {unit} in {city}"

    return execute


@function_tool(name_override="get_weather")
def sdk_get_weather(city: str, unit: str) -> str:
    """Get the current weather in a city.

    Args:
        city: The city to get the weather for.
        unit: The temperature unit, celsius or fahrenheit.
    """
    return f"18 degrees {unit} in {city}"


def contenders(city: str) -> dict[str, Callable[[], Awaitable[Any] | Any]]:
    """The four ways of checking the response that calls get_weather(city, celsius)."""
    args = {"city": city, "unit": "celsius"}
    # guard_check's own input, built once
    tools = [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": DESCRIPTION, "parameters": PARAMS},
        }
    ]
    messages = [{"role": "user", "content": QUESTION}]
    response = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps(args)},
            }
        ],
    }
    # Inspect: a TaskState after the model's call
    call = ToolCall(id="c1", function="get_weather", arguments=args)
    user = ChatMessageUser(content=QUESTION)
    state = TaskState(
        ModelName("mockllm/model"),
        "s1",
        1,
        QUESTION,
        [user, ChatMessageAssistant(content="", tool_calls=[call])],
    )
    state.tools = [get_weather()]
    scorer = scorer_create("callscope/tool_calls")
    approve = inspect_guard()
    view = ToolCallView()
    target = Target("")
    # the Agents SDK: the guardrail's input as the SDK builds it
    agent = Agent(name="weather", tools=[sdk_get_weather])
    context = ToolContext(
        context=None,
        tool_name="get_weather",
        tool_call_id="c1",
        tool_arguments=json.dumps(args),
        turn_input=[{"role": "user", "content": QUESTION}],
        agent=agent,
    )
    data = ToolInputGuardrailData(context=context, agent=agent)

    async def approver_call() -> Any:
        set_sample_state(state)
        return await approve("", call, view, [user])

    return {
        "guard_check": lambda: callscope.guard_check(response, tools, messages),
        "Inspect scorer": lambda: scorer(state, target),
        "Inspect approver": approver_call,
        "Agents guardrail": lambda: agents_guard.run(data),
    }


async def measure(n: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for label, city in (("passing call", "Lyon"), ("invented city (stage 3)", "Marseille")):
        fns = contenders(city)
        times: dict[str, list[float]] = {k: [] for k in fns}
        for i in range(n + 50):  # the first 50 rounds warm up
            for name, fn in fns.items():
                t0 = time.perf_counter()
                r = fn()
                if asyncio.iscoroutine(r):
                    r = await r
                dt = time.perf_counter() - t0
                if i >= 50:
                    times[name].append(dt)
        out[label] = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="timed rounds per response")
    n = ap.parse_args().n
    results = asyncio.run(measure(n))
    print(f"median ms per checked response over {n} interleaved rounds")
    for label, row in results.items():
        base = row["guard_check"]
        print(f"\n{label}")
        for name, ms in row.items():
            print(f"  {name:18s} {ms:7.3f} ms   {ms / base:5.2f}x guard_check")


if __name__ == "__main__":
    main()
