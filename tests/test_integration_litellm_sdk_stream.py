"""Issue 46 item 3: the SDK path ``litellm.acompletion(stream=True)`` through the README's hook
(``await guardrail.async_post_call_success_hook(data, None, response)``), against a scripted
OpenAI-compatible upstream on 127.0.0.1 that streams the call's arguments in pieces.

Before issue 46 the hook returned the stream unchecked (block let every chunk of "Berlin"
through). Now the stream is held and checked: block raises :class:`CallscopeBlocked` before
any chunk; annotate returns the chunks as a :class:`GuardedStream` carrying the verdict;
repair re-asks (``litellm.acompletion`` with the caller's parameters) and streams the
repaired call."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip("litellm")

sys.path.insert(0, str(Path(__file__).parent))
from scripted_routes import WEATHER_MESSAGES, WEATHER_TOOLS, RouteModel  # noqa: E402

from callscope.integrations.litellm_guardrail import (  # noqa: E402
    CallscopeBlocked,
    CallscopeGuardrail,
)

TOOLS, MESSAGES = WEATHER_TOOLS, WEATHER_MESSAGES


async def _city(stream) -> str | None:
    args = ""
    async for chunk in stream:
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or ():
                args += tc.function.arguments or ""
    return json.loads(args)["city"] if args else None


def _run(mode: str, *cities: str):
    async def go():
        with RouteModel() as upstream:
            upstream.push(*cities)
            data = {
                "model": "openai/scripted",
                "messages": MESSAGES,
                "tools": TOOLS,
                "api_base": f"{upstream.url}/v1",
                "api_key": "x",
            }
            g = CallscopeGuardrail(callscope_mode=mode, guardrail_name="callscope")
            response = await litellm.acompletion(**data, stream=True)
            try:
                out = await g.async_post_call_success_hook(data, None, response)
            except CallscopeBlocked as err:
                return err, upstream.requests
            return (await _city(out), out.callscope), upstream.requests

    return asyncio.run(go())


def test_block_raises_before_any_chunk() -> None:
    err, _ = _run("block", "Berlin")
    assert isinstance(err, CallscopeBlocked)
    assert "The values for city have no grounding" in err.detail["correction"]
    (city, note), _ = _run("block", "Paris")
    assert city == "Paris" and note["verdict"]["passed"]


def test_annotate_streams_the_chunks_with_the_verdict() -> None:
    (city, note), requests = _run("annotate", "Berlin")
    assert city == "Berlin"
    assert note["verdict"]["calls"][0]["diagnosis"]["hard"] == ["city"]
    assert len(requests) == 1 and requests[0]["json"]["stream"] is True


def test_repair_reasks_with_the_callers_parameters_and_streams_the_repair() -> None:
    (city, note), requests = _run("repair", "Berlin", "Paris")
    assert city == "Paris"
    assert note["repair"]["repaired"] and note["verdict"]["passed"]
    reask = requests[1]["json"]
    assert not reask.get("stream")
    assert "no grounding" in reask["messages"][-1]["content"]
