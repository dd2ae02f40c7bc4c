"""Overhead of the LiteLLM guardrail's post-call hook and of the traces reader versus
`callscope.guard_check` alone, side by side in one run (issue 30's goal: within 1.5x).

The hook and ``guard_check`` (on the response's ``model_dump()``, what a user of the SDK would
pass it) are timed interleaved, one of each per round, over ``--n`` rounds after 50 warm-up
rounds: the medians are compared. The traces reader is a batch (a file of ``--n`` spans read
and diagnosed): it is timed five times, each beside ``--n`` ``guard_check`` calls on distinct
copies of the response, tools and messages with every verdict kept (as the reader keeps its
conversations' verdicts; calling it again and again on the same objects, or dropping each
verdict, would time a cheaper job than any log's), and the medians of the five are compared.
The objects alive before the batches (LiteLLM imported: ~390,000) are frozen out of the
garbage collector first (``gc.freeze``): a full collection over them takes ~0.2 s, and where
one falls (in the reader's batch or in ``guard_check``'s) would otherwise decide the ratio;
``callscope score --from-traces`` does not import LiteLLM. ``--no-freeze`` shows it.

    LITELLM_LOCAL_MODEL_COST_MAP=True python benchmarks/integration_overhead_litellm_traces.py
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import os
import statistics
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="rounds (and spans per traces file)")
    ap.add_argument("--no-freeze", action="store_true", help="leave the collector as it is")
    opts = ap.parse_args()
    n = opts.n
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "London"})},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    response = litellm.ModelResponse(choices=[{"index": 0, "message": message}])
    data = {"model": "m", "messages": MESSAGES, "tools": TOOLS}
    g = CallscopeGuardrail(guardrail_name="callscope")

    async def rounds() -> tuple[list[float], list[float]]:
        base: list[float] = []
        hook: list[float] = []
        for i in range(n + 50):
            t0 = time.perf_counter()
            callscope.guard_check(response.model_dump(), TOOLS, MESSAGES)
            t1 = time.perf_counter()
            await g.async_post_call_success_hook(data, None, response)
            t2 = time.perf_counter()
            if i >= 50:
                base.append(t1 - t0)
                hook.append(t2 - t1)
        return base, hook

    base_times, hook_times = asyncio.run(rounds())
    base, hook = statistics.median(base_times), statistics.median(hook_times)

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
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span] * n}]}]}
    dumped = response.model_dump()
    loops: list[float] = []
    reads: list[float] = []
    alive = len(gc.get_objects())
    if not opts.no_freeze:
        gc.collect()
        gc.freeze()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.json"
        path.write_text(json.dumps(doc))
        for _ in range(5):
            inputs = [copy.deepcopy((dumped, TOOLS, MESSAGES)) for _ in range(n)]
            t0 = time.perf_counter()
            kept = [callscope.guard_check(*args) for args in inputs]
            t1 = time.perf_counter()
            del kept, inputs
            convs, errors = read_traces([path])
            diagnose_conversations(convs)
            t2 = time.perf_counter()
            loops.append((t1 - t0) / n)
            reads.append((t2 - t1) / n)
    assert not errors and len(convs) == n
    loop, traces = statistics.median(loops), statistics.median(reads)
    print(f"per checked response, medians ({n} interleaved rounds; traces: 5 files of {n})")
    frozen = "not frozen" if opts.no_freeze else "frozen before the batches"
    print(f"  ({alive:,} objects tracked by the collector, {frozen})")
    print(f"  guard_check alone        {base * 1e3:8.3f} ms  1.00x")
    print(f"  LiteLLM post-call hook   {hook * 1e3:8.3f} ms  {hook / base:.2f}x")
    print(f"  guard_check, batch kept {loop * 1e3:8.3f} ms  1.00x")
    print(f"  --from-traces (read+dx)  {traces * 1e3:8.3f} ms  {traces / loop:.2f}x")


if __name__ == "__main__":
    main()
