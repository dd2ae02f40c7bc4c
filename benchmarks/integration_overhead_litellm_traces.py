"""Overhead of the LiteLLM guardrail's post-call hook and of the traces reader versus
`callscope.guard_check` alone, side by side in one run (issue 30's goal: within 1.5x).

    LITELLM_LOCAL_MODEL_COST_MAP=True python benchmarks/integration_overhead_litellm_traces.py
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

import callscope
from callscope.guard.chatlog import diagnose_conversations
from callscope.guard.traces import read_traces
from callscope.integrations.litellm_guardrail import CallscopeGuardrail

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
N = 300


def main() -> None:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "London"})},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    response = litellm.ModelResponse(choices=[{"index": 0, "message": message}])
    data = {"model": "m", "messages": MESSAGES, "tools": TOOLS}
    g = CallscopeGuardrail(guardrail_name="callscope")
    callscope.guard_check(response.model_dump(), TOOLS, MESSAGES)  # warm

    t = time.perf_counter()
    for _ in range(N):
        callscope.guard_check(response.model_dump(), TOOLS, MESSAGES)
    base = (time.perf_counter() - t) / N

    async def hooks() -> None:
        for _ in range(N):
            await g.async_post_call_success_hook(data, None, response)

    t = time.perf_counter()
    asyncio.run(hooks())
    hook = (time.perf_counter() - t) / N

    attrs = {
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": MESSAGES[0]["content"]}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "tool_call",
                            "id": "c1",
                            "name": "get_weather",
                            "arguments": {"city": "London"},
                        }
                    ],
                }
            ]
        ),
        "gen_ai.tool.definitions": json.dumps(TOOLS),
    }
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "chat m",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span] * N}]}]}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.json"
        path.write_text(json.dumps(doc))
        t = time.perf_counter()
        convs, errors = read_traces([path])
        diagnose_conversations(convs)
        traces = (time.perf_counter() - t) / N
    assert not errors and len(convs) == N
    print(f"per checked response, {N} responses:")
    print(f"  guard_check alone        {base * 1e3:8.3f} ms  1.00x")
    print(f"  LiteLLM post-call hook   {hook * 1e3:8.3f} ms  {hook / base:.2f}x")
    print(f"  --from-traces (read+dx)  {traces * 1e3:8.3f} ms  {traces / base:.2f}x")


if __name__ == "__main__":
    main()
