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
from hostile import random_words  # noqa: E402
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


def _run(guardrail, script, question=LYON):
    """Run the weather agent on ``question`` against the scripted server; return the run
    result, the requests the server saw, the replies it gave and the calls the tool ran."""
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
        result = Runner.run_sync(agent, question, run_config=RunConfig(tracing_disabled=True))
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


def test_a_long_run_is_checked_off_the_sdks_event_loop(monkeypatch):
    """A question of 100,000 characters: the guardrail checks each call on a worker thread,
    so the SDK's event loop runs other agents meanwhile (stage 3 reads the whole run); the
    decisions are those of the short run."""
    import threading

    import callscope.integrations.agents as agents_integration
    from callscope.guard.inputs import INLINE_CHECK_CHARS

    where = []
    real = agents_integration.check

    def recording(*args, **kwargs):
        where.append(threading.current_thread() is threading.main_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(agents_integration, "check", recording)
    question = random_words(30, 100_000) + " " + LYON
    assert len(question) > INLINE_CHECK_CHARS
    result, _requests, _replies, ran = _run(guard, SCRIPT, question)
    assert ran == [{"city": "Lyon", "unit": "celsius"}]  # Marseille rejected, Lyon run
    kinds = [r.output.behavior["type"] for r in result.tool_input_guardrail_results]
    assert kinds == ["reject_content", "allow"]
    assert where == [False, False]  # both checks off the loop's thread


def test_the_structured_correction_when_not_gated():
    """``gated=False`` rejects with the SAAG paper's structured correction (guard_check's)."""
    result, requests, replies, _ = _run(callscope_guardrail(gated=False), SCRIPT)
    turn = callscope.guard_check(replies[0], requests[0]["tools"], requests[0]["messages"])
    assert requests[1]["messages"][-1]["content"] == turn.calls[0].correction
    assert result.final_output == "It is 18 degrees and sunny in Lyon."


# --------------------------------------------------------------------------- chained tools


def weather_call(city: str) -> dict:
    arguments = json.dumps({"city": city})
    return {
        "id": "w1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": arguments},
    }


def test_chained_tools_ground_the_later_call_in_the_earlier_output():
    """Issue 40 item 3: ``get_home`` answers "Tokyo", then ``get_weather(city="Tokyo")``: the
    value is stated by the earlier tool's output (as ``score`` and the proxy read a
    conversation's tool results), so with the run's ``hooks`` the guardrail lets it run.
    Without them the SDK hands the guardrail no earlier output: rejected as invented."""
    from callscope.integrations.agents import hooks

    def run(with_hooks: bool):
        ran: list[str] = []

        @function_tool(tool_input_guardrails=[guard])
        def get_home() -> str:
            """The city the user lives in."""
            ran.append("get_home")
            return "Tokyo"

        @function_tool(tool_input_guardrails=[guard])
        def get_weather(city: str) -> str:
            """Get the current weather in a city.

            Args:
                city: The city to get the weather for.
            """
            ran.append(f"get_weather({city})")
            return f"18 degrees and sunny in {city}"

        home = {"id": "h1", "type": "function", "function": {"name": "get_home", "arguments": "{}"}}
        with FakeServer() as server:
            server.push(
                Step(body=openai_reply(tool_calls=[home])),
                Step(body=openai_reply(tool_calls=[weather_call("Tokyo")])),
                Step(body=openai_reply("It is 18 degrees and sunny at home, in Tokyo.")),
            )
            client = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
            agent = Agent(
                name="weather",
                instructions="Answer weather questions with the tools.",
                tools=[get_home, get_weather],
                model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
            )
            result = Runner.run_sync(
                agent,
                "What's the weather like at my home?",
                run_config=RunConfig(tracing_disabled=True),
                **({"hooks": hooks} if with_hooks else {}),
            )
            sent = [r["json"] for r in server.requests]
        return result, ran, sent

    result, ran, sent = run(with_hooks=True)
    assert ran == ["get_home", "get_weather(Tokyo)"]
    checked = [r.output for r in result.tool_input_guardrail_results]
    assert [o.behavior["type"] for o in checked] == ["allow", "allow"]
    assert checked[1].output_info["stage"] == 0
    # the verdict is guard_check's on the request the model answered with get_weather: its
    # messages hold get_home's output as a tool message
    assert sent[1]["messages"][-1] == {"role": "tool", "tool_call_id": "h1", "content": "Tokyo"}
    reply = openai_reply(tool_calls=[weather_call("Tokyo")])
    [verdict] = callscope.guard_check(reply, sent[1]["tools"], sent[1]["messages"]).calls
    assert checked[1].output_info == {"checked": True, **call_row(verdict)}
    # without the hooks the SDK gives the guardrail only the run's input: Tokyo is invented
    result, ran, _ = run(with_hooks=False)
    first_weather = result.tool_input_guardrail_results[1].output
    assert first_weather.behavior["type"] == "reject_content"
    assert first_weather.output_info["failure_kinds"] == ["hard"]


def test_a_call_over_callscopes_reading_limit_runs_unchecked_and_is_not_blamed():
    """A call whose arguments are larger than callscope reads (200,000 characters) runs,
    marked unchecked: callscope's limit is not the model's error. Before, the guardrail
    rejected it with "Your call could not be read", and a model repeating its valid call
    looped until the run's turn limit."""
    city = "Lyon " + "x" * 210_000  # over the limit, whatever the value
    big = {
        "id": "call_big",
        "type": "function",
        "function": {
            "name": "get_weather",
            "arguments": json.dumps({"city": city, "unit": "celsius"}),
        },
    }
    result, _requests, _replies, ran = _run(guard, [([big], ""), (None, "Done.")])
    assert ran == [{"city": city, "unit": "celsius"}]
    [res] = result.tool_input_guardrail_results
    assert res.output.behavior["type"] == "allow"
    info = res.output.output_info
    assert info["checked"] is False and "larger than callscope reads" in info["reason"]
    assert result.final_output == "Done."


def test_an_unknown_grounding_is_refused_when_the_guardrail_is_made():
    """``callscope_guardrail(grounding="bogus")`` raises ConfigError where it is written, not
    at the run's first tool call (the run crashed there with a UserError before)."""
    from callscope.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown grounding 'bogus'"):
        callscope_guardrail(grounding="bogus")


def test_tools_of_one_name_in_two_namespaces_are_checked_against_their_own():
    """``tool_namespace()`` lets two tools share a name; the call the model makes in the
    ``billing`` namespace is checked against ``billing``'s ``lookup(invoice_id)``, passes
    and runs. It was checked against the first ``lookup`` (``crm``'s, ``customer_name``) and
    rejected as missing ``customer_name`` with a spurious ``invoice_id``. The model is a
    scripted ``agents.Model``, the SDK's own interface for a model."""
    from agents import ModelResponse, Usage, tool_namespace
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall

    ran = []

    @function_tool(name_override="lookup", tool_input_guardrails=[guard])
    def crm_lookup(customer_name: str) -> str:
        """Look up a customer by name."""
        ran.append(("crm", customer_name))
        return "customer found"

    @function_tool(name_override="lookup", tool_input_guardrails=[guard])
    def billing_lookup(invoice_id: str) -> str:
        """Look up an invoice by id."""
        ran.append(("billing", invoice_id))
        return "invoice found"

    call = ResponseFunctionToolCall(
        type="function_call",
        call_id="c1",
        id="fc1",
        name="lookup",
        arguments=json.dumps({"invoice_id": "INV-42"}),
    )
    call.namespace = "billing"

    class Scripted(Model):
        def __init__(self) -> None:
            self.turns = [[call]]

        async def get_response(self, *args, **kwargs):
            from openai.types.responses import ResponseOutputMessage, ResponseOutputText

            done = ResponseOutputMessage(
                id="m", type="message", role="assistant", status="completed",
                content=[ResponseOutputText(type="output_text", text="Done.", annotations=[])],
            )  # fmt: skip
            return ModelResponse(
                output=self.turns.pop(0) if self.turns else [done],
                usage=Usage(),
                response_id=None,
            )

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    tools = tool_namespace(
        name="crm", description="CRM tools", tools=[crm_lookup]
    ) + tool_namespace(name="billing", description="Billing tools", tools=[billing_lookup])
    agent = Agent(name="a", tools=tools, model=Scripted())
    result = Runner.run_sync(
        agent, "Look up invoice INV-42", run_config=RunConfig(tracing_disabled=True)
    )
    assert ran == [("billing", "INV-42")]
    [res] = result.tool_input_guardrail_results
    assert res.output.behavior["type"] == "allow"
    assert res.output.output_info["stage"] == 0
