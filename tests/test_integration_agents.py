"""callscope inside the OpenAI Agents SDK (issue 30): a real agent run against a scripted
OpenAI-compatible server on 127.0.0.1, with callscope's tool input guardrail on the tool.

The server answers first with a call that invents the city, then with the corrected call,
then with text. The guardrail rejects the first call with callscope's correction, which the
SDK sends the model as the tool's output; the second call passes and the tool runs once, with
the right arguments. Each call's verdict equals ``guard_check`` on what the SDK sent the
server and what it got back."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
)
from fakeserver import FakeServer, Step, openai_reply  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

import callscope  # noqa: E402
from callscope.integrations.agents import callscope_guardrail, guard  # noqa: E402
from callscope.integrations.verdicts import call_row, correction_for  # noqa: E402

LYON = "What's the weather in Lyon right now? Use celsius."


def _call(call_id: str, city: str) -> dict:
    arguments = json.dumps({"city": city, "unit": "celsius"})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": arguments},
    }


def _run(guardrail, script):
    """Run the weather agent on ``LYON`` against the scripted server; return the run result,
    the requests the server saw, the replies it gave and the calls the tool ran."""
    ran: list[dict[str, str]] = []

    @function_tool(tool_input_guardrails=[guardrail])
    def get_weather(city: str, unit: str) -> str:
        """Get the current weather in a city.

        Args:
            city: The city to get the weather for.
            unit: The temperature unit, celsius or fahrenheit.
        """
        ran.append({"city": city, "unit": unit})
        return f"18 degrees {unit} and sunny in {city}"

    replies = [
        openai_reply(tool_calls=calls) if calls else openai_reply(text) for calls, text in script
    ]
    with FakeServer() as server:
        server.push(*(Step(body=r) for r in replies))
        client = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        agent = Agent(
            name="weather",
            instructions="Answer weather questions with the get_weather tool.",
            tools=[get_weather],
            model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
        )
        result = Runner.run_sync(agent, LYON, run_config=RunConfig(tracing_disabled=True))
        requests = [r["json"] for r in server.requests]
    return result, requests, replies, ran


SCRIPT = [
    ([_call("call_1", "Marseille")], ""),
    ([_call("call_2", "Lyon")], ""),
    (None, "It is 18 degrees and sunny in Lyon."),
]


@pytest.fixture(scope="module")
def run():
    return _run(guard, SCRIPT)


def _evidence(messages: list[dict]) -> list[dict]:
    """A request's messages less the tool outputs that are guardrail rejections (a
    correction is no evidence)."""
    rejected = {"call_1"}
    return [m for m in messages if not (m["role"] == "tool" and m["tool_call_id"] in rejected)]


def test_the_invented_value_is_rejected_with_the_correction_and_repaired(run):
    result, requests, replies, ran = run
    assert len(requests) == 3
    assert ran == [{"city": "Lyon", "unit": "celsius"}]
    assert result.final_output == "It is 18 degrees and sunny in Lyon."
    first, second = result.tool_input_guardrail_results
    assert first.output.behavior["type"] == "reject_content"
    assert first.output.output_info["stage"] == 3
    assert first.output.output_info["failure_kinds"] == ["hard"]
    assert second.output.behavior["type"] == "allow"
    assert second.output.output_info["stage"] == 0
    # what the model saw in its second request: callscope's correction as the tool's output
    seen = requests[1]["messages"][-1]
    assert seen["role"] == "tool" and seen["tool_call_id"] == "call_1"
    assert seen["content"] == first.output.behavior["message"]
    assert "city" in seen["content"] and "get_weather" in seen["content"]


def test_each_verdict_equals_guard_check_on_what_the_sdk_sent(run):
    result, requests, replies, ran = run
    results = result.tool_input_guardrail_results
    assert len(results) == 2
    for res, request, reply in zip(results, requests[:2], replies[:2], strict=True):
        turn = callscope.guard_check(reply, request["tools"], _evidence(request["messages"]))
        [verdict] = turn.calls
        assert res.output.output_info == {"checked": True, **call_row(verdict)}
        fix = correction_for(verdict)
        if fix is None:
            assert res.output.behavior["type"] == "allow"
        else:
            assert res.output.behavior == {"type": "reject_content", "message": fix}


def test_the_structured_correction_when_not_gated():
    """``gated=False`` rejects with the SAAG paper's structured correction (guard_check's)."""
    result, requests, replies, _ = _run(callscope_guardrail(gated=False), SCRIPT)
    turn = callscope.guard_check(replies[0], requests[0]["tools"], requests[0]["messages"])
    assert requests[1]["messages"][-1]["content"] == turn.calls[0].correction
    assert result.final_output == "It is 18 degrees and sunny in Lyon."
