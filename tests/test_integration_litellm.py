"""The LiteLLM guardrail through LiteLLM's own SDK: real ``litellm.acompletion`` responses
with ``mock_response`` tool calls, checked by the guardrail's post-call hook in each mode;
the verdict equals ``callscope.guard_check`` on the same messages."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network for the cost map
litellm = pytest.importorskip("litellm")
import callscope  # noqa: E402
from callscope.integrations.litellm_guardrail import (  # noqa: E402
    CallscopeBlocked,
    CallscopeGuardrail,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def _mock(city: str) -> object:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }
    return litellm.ModelResponse(
        choices=[
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
            }
        ]
    )


async def _completion(city: str) -> object:
    return await litellm.acompletion(
        model="gpt-4o", messages=MESSAGES, tools=TOOLS, mock_response=_mock(city)
    )


def _data() -> dict:
    return {"model": "gpt-4o", "messages": MESSAGES, "tools": TOOLS}


def test_annotate_equals_guard_check() -> None:
    async def go() -> None:
        g = CallscopeGuardrail(guardrail_name="callscope", event_hook="post_call")
        for city, stage in (("Paris", 0), ("London", 3)):
            resp = await _completion(city)
            out = await g.async_post_call_success_hook(_data(), None, resp)
            want = callscope.guard_check(resp.model_dump(), TOOLS, MESSAGES)
            got = out.callscope["verdict"]
            assert [(c["name"], c["stage"], c["reasons"]) for c in got["calls"]] == [
                (c.name, c.stage, list(c.reasons)) for c in want.calls
            ]
            assert got["calls"][0]["stage"] == stage

    asyncio.run(go())


def test_block_refuses_a_failing_call() -> None:
    async def go() -> None:
        g = CallscopeGuardrail(callscope_mode="block", guardrail_name="callscope")
        ok = await g.async_post_call_success_hook(_data(), None, await _completion("Paris"))
        assert ok.callscope["verdict"]["passed"]
        bad = await _completion("London")
        try:
            await g.async_post_call_success_hook(_data(), None, bad)
        except CallscopeBlocked as e:
            assert "London" in str(e)
        except Exception as e:  # the proxy's HTTPException where fastapi is installed
            assert getattr(e, "status_code", None) == 400
        else:
            raise AssertionError("not blocked")

    asyncio.run(go())


def test_repair_reasks_through_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[list[dict]] = []

    async def go() -> None:
        g = CallscopeGuardrail(callscope_mode="repair", guardrail_name="callscope")

        async def reask(data: dict) -> object:  # the real SDK call, its mock answering Paris
            asked.append(data["messages"])
            return await litellm.acompletion(
                model=data["model"],
                messages=data["messages"],
                tools=data["tools"],
                mock_response=_mock("Paris"),
            )

        monkeypatch.setattr(g, "_reask", reask)
        out = await g.async_post_call_success_hook(_data(), None, await _completion("London"))
        assert out.callscope["repair"]["repaired"]
        assert json.loads(out.choices[0].message.tool_calls[0].function.arguments) == {
            "city": "Paris"
        }

    asyncio.run(go())
    assert (
        len(asked) == 1
        and asked[0][-1]["role"] == "user"
        and "no grounding" in asked[0][-1]["content"]
    )
