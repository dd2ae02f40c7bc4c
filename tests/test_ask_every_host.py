"""Issue 46 item 4: a required value the user did not state gets ONE verdict, ASK, and one
correction (ask the user), in every host: ``guard_repair``, the repair proxy (``callscope
serve`` as a subprocess), the Agents SDK guardrail (a real agent run), the LiteLLM guardrail
(LiteLLM's SDK); the Inspect approver and scorer are tested through ``react()`` and
``basic_agent()`` in ``test_integration_inspect_agents.py``.

The tool: ``get_weather(city, unit)``, ``unit`` required, described "celsius or fahrenheit".
The user: "What's the weather in Paris right now?" (no unit). Before issue 46,
``unit="celsius"`` got "Do not invent values ... or omit the argument" and the omission
"required argument 'unit' is absent": two corrections, each sending the agent to the other.
Now both get the ASK correction (:data:`callscope.saag.messages.ASK`), and a prose question
back to the user ends the repair with that answer."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx  # noqa: E402
from fakeserver import FakeServer, Step, openai_reply  # noqa: E402
from proxyserve import callscope_serve  # noqa: E402

import callscope  # noqa: E402
from callscope.saag.messages import ASK  # noqa: E402

QUESTION = "What's the weather in Paris right now?"
MESSAGES = [{"role": "user", "content": QUESTION}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city."},
                    "unit": {"type": "string", "description": "celsius or fahrenheit"},
                },
                "required": ["city", "unit"],
            },
        },
    }
]
#: the one correction every host sends (worked out from the template: no keep sentence,
#: the agent is to ask, not to call again)
FIX = (
    "The user did not state a value for unit, which the tool requires. Do not guess it and do "
    "not leave it out: ask the user for it, in plain text, before calling the tool."
)
QUESTION_BACK = "Do you want the temperature in celsius or fahrenheit?"


def _call(arguments: dict, call_id: str = "call_1") -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps(arguments)},
    }


GUESSED = {"city": "Paris", "unit": "celsius"}
OMITTED = {"city": "Paris"}


@pytest.mark.parametrize("arguments", [GUESSED, OMITTED], ids=["guessed", "omitted"])
def test_guard_check_gives_ask_for_a_guess_and_for_the_omission(arguments) -> None:
    turn = callscope.guard_check(
        {"role": "assistant", "content": None, "tool_calls": [_call(arguments)]}, TOOLS, MESSAGES
    )
    [c] = turn.calls
    assert [str(k) for k in c.diagnosis.failure_kinds()] == ["ask"]
    assert c.stage == 2 and c.diagnosis.ask == ["unit"]
    assert c.reasons == (
        "ask: required argument 'unit' has no value the user stated: ask the user for it",
    )
    assert c.correction == FIX == ASK.format(params="unit")
    # a unit the user states is no ASK: left out, it is missing; given, the call passes
    stated = [{"role": "user", "content": QUESTION + " In fahrenheit please."}]
    turn = callscope.guard_check(
        {"role": "assistant", "content": None, "tool_calls": [_call(OMITTED)]}, TOOLS, stated
    )
    assert [str(k) for k in turn.calls[0].diagnosis.failure_kinds()] == ["missing"]
    given = _call({**OMITTED, "unit": "fahrenheit"})
    ok = {"role": "assistant", "content": None, "tool_calls": [given]}
    assert callscope.guard_check(ok, TOOLS, stated).passed


def test_guard_repair_sends_ask_and_keeps_the_question_to_the_user() -> None:
    sent: list[list[dict]] = []

    def chat(messages, tools):
        sent.append(messages)
        return {"role": "assistant", "content": QUESTION_BACK}

    first = {"role": "assistant", "content": None, "tool_calls": [_call(GUESSED)]}
    result = callscope.guard_repair(chat, MESSAGES, TOOLS, first=first)
    assert sent[0][-1] == {"role": "user", "content": FIX}
    assert (result.stopped, result.best_attempt, result.passed) == ("asked", 2, True)
    assert result.response == {"role": "assistant", "content": QUESTION_BACK}


def test_the_repair_proxy_sends_ask_and_returns_the_question(tmp_path) -> None:
    with FakeServer() as upstream:
        upstream.push(
            Step(body=openai_reply(None, [_call(GUESSED)])), Step(body=openai_reply(QUESTION_BACK))
        )
        with callscope_serve(upstream.url + "/v1", tmp_path / "run") as served:
            r = httpx.post(
                f"{served.url}/chat/completions",
                json={"model": "m", "messages": MESSAGES, "tools": TOOLS},
                timeout=120,
            )
        assert r.status_code == 200
        assert r.json()["choices"][0]["message"]["content"] == QUESTION_BACK
        reask = upstream.requests[1]["json"]["messages"]
        assert reask[-1] == {"role": "user", "content": FIX}


def test_the_agents_sdk_guardrail_rejects_with_ask_and_the_tool_never_runs() -> None:
    pytest.importorskip("agents")
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
    from openai import AsyncOpenAI

    from callscope.integrations.agents import guard

    ran: list[dict] = []

    @function_tool(tool_input_guardrails=[guard])
    def get_weather(city: str, unit: str) -> str:
        """Get the current weather in a city.

        Args:
            city: The city.
            unit: celsius or fahrenheit
        """
        ran.append({"city": city, "unit": unit})
        return "sunny"

    with FakeServer() as server:
        server.push(
            Step(body=openai_reply(tool_calls=[_call(GUESSED)])),
            Step(body=openai_reply(QUESTION_BACK)),
        )
        client = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        agent = Agent(
            name="weather",
            tools=[get_weather],
            model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
        )
        result = Runner.run_sync(agent, QUESTION, run_config=RunConfig(tracing_disabled=True))
        seen = server.requests[1]["json"]["messages"][-1]
    assert ran == []
    [checked] = result.tool_input_guardrail_results
    assert checked.output.behavior["type"] == "reject_content"
    assert checked.output.behavior["message"] == FIX
    assert checked.output.output_info["failure_kinds"] == ["ask"]
    assert seen["role"] == "tool" and seen["content"] == FIX
    assert result.final_output == QUESTION_BACK


def test_the_litellm_guardrail_blocks_and_annotates_with_ask() -> None:
    litellm = pytest.importorskip("litellm")
    from callscope.integrations.litellm_guardrail import CallscopeBlocked, CallscopeGuardrail

    async def go() -> None:
        mock = litellm.ModelResponse(
            choices=[
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [_call(GUESSED)],
                    },
                }
            ]
        )
        data = {"model": "gpt-4o", "messages": MESSAGES, "tools": TOOLS}
        answer = await litellm.acompletion(**data, mock_response=mock)
        note = await CallscopeGuardrail(guardrail_name="cs").async_post_call_success_hook(
            data, None, answer
        )
        verdict = note.callscope["verdict"]
        assert verdict["calls"][0]["diagnosis"]["ask"] == ["unit"]
        assert verdict["correction"] == FIX
        block = CallscopeGuardrail(callscope_mode="block", guardrail_name="cs")
        with pytest.raises(CallscopeBlocked) as err:
            await block.async_post_call_success_hook(
                data, None, await litellm.acompletion(**data, mock_response=mock)
            )
        assert err.value.detail["correction"] == FIX

    asyncio.run(go())
