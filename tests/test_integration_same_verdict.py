"""Issue 40 item 2: every surface gives the same verdict on the same call, and acts on it by
one rule.

The user asks about Paris. Two calls of ``get_weather``:

* ``city="Berlin"`` names another city. The paper's PartialRatio alone called it a *soft*
  drift here (0.667 on the window "her in", above the 0.6 boundary), so the Inspect approver,
  the Agents SDK guardrail and LiteLLM's ``repair`` let it through while ``block`` refused
  it. It is a *hard* drift (``saag.grounding.soft_drift``: "berlin" is no word of the text,
  nor a near spelling of one), and every surface now rejects, blocks or re-asks it.
* ``city="Pariss"`` is a slip in the stated "Paris" (``fuzz.ratio`` 91): a soft drift, which
  every surface lets through (the gated rule, ``integrations.verdicts.acts_on``), while
  ``score`` and the annotations still report it as a stage-3 failure.

Each surface is driven through its host's own API: ``callscope score`` as a subprocess, a
real ``inspect_ai.eval`` with ``mockllm``, a real Agents SDK run against a scripted
OpenAI-compatible server, LiteLLM's SDK responses through the guardrail's hook."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network for the cost map

QUERY = "What's the weather in Paris right now?"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city."}},
                "required": ["city"],
            },
        },
    }
]
#: value -> (the failure kinds every surface reports, whether every surface acts on it)
EXPECTED = {"Berlin": (["hard"], True), "Pariss": (["soft"], False)}
CALLSCOPE = [
    sys.executable,
    "-c",
    "import sys; from callscope.cli.main import main; sys.exit(main())",
]


def _call(city: str) -> dict:
    return {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }


def test_score_cli(tmp_path: Path) -> None:
    rows = tmp_path / "in.jsonl"
    rows.write_text(
        "".join(
            json.dumps(
                {
                    "id": city,
                    "query": QUERY,
                    "functions": [TOOLS[0]["function"]],
                    "output": json.dumps({"name": "get_weather", "arguments": {"city": city}}),
                }
            )
            + "\n"
            for city in EXPECTED
        )
    )
    out = tmp_path / "out.jsonl"
    proc = subprocess.run(
        [*CALLSCOPE, "score", str(rows), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    got = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    for city, (kinds, _) in EXPECTED.items():
        assert got[city]["stage"] == 3
        assert got[city]["calls"][0]["kinds"] == kinds


def test_inspect_approver(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    from callscope.integrations.inspect_ai_scorer import tool_calls

    @tool
    def get_weather():
        async def execute(city: str) -> str:
            """Get the current weather in a city.

            Args:
                city: The city.
            """
            return f"18 degrees in {city}"

        return execute

    def scripted(input, tools, tool_choice, config) -> ModelOutput:  # noqa: A002
        done = sum(1 for m in input if m.role == "tool")
        case = next(m.text for m in input if m.role == "user").rsplit(" ", 1)[-1]
        city = list(EXPECTED)[int(case.strip("#")) - 1]
        if done:
            out = ModelOutput.from_content("mockllm/model", "Done.")
        else:
            out = ModelOutput.for_tool_call(
                "mockllm/model", "get_weather", {"city": city}, tool_call_id="c1", content=""
            )
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return out

    from inspect_ai.approval import ApprovalPolicy

    from callscope.integrations.inspect_ai_scorer import guard

    # the sample's input ends with its case number: the scripted model's city by position
    dataset = [Sample(input=f"{QUERY} #{i}", id=city) for i, city in enumerate(EXPECTED, 1)]
    # the README's Python form: Task(scorer=tool_calls()), ApprovalPolicy(guard(), "*")
    task = Task(dataset=dataset, solver=[use_tools(get_weather()), generate()], scorer=tool_calls())
    [log] = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=scripted),
        approval=[ApprovalPolicy(guard(), "*")],
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    for sample in log.samples:
        kinds, acts = EXPECTED[sample.id]
        [approval] = [e for e in sample.events if e.event == "approval"]
        assert approval.decision == ("reject" if acts else "approve")
        score = sample.scores["tool_calls"]
        assert score.value == "I"  # the scorer reports the failure either way
        assert score.metadata["calls"][0]["failure_kinds"] == kinds
        assert score.metadata["calls"][0]["confident"] is acts


def test_agents_guardrail() -> None:
    pytest.importorskip("agents")
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
    from openai import AsyncOpenAI

    sys.path.insert(0, str(Path(__file__).parent))
    from fakeserver import FakeServer, Step, openai_reply

    from callscope.integrations.agents import guard

    for city, (kinds, acts) in EXPECTED.items():

        @function_tool(tool_input_guardrails=[guard])
        def get_weather(city: str) -> str:
            """Get the current weather in a city.

            Args:
                city: The city.
            """
            return f"18 degrees in {city}"

        with FakeServer() as server:
            server.push(
                Step(body=openai_reply(tool_calls=[_call(city)])),
                Step(body=openai_reply("Done.")),
            )
            client = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
            agent = Agent(
                name="weather",
                tools=[get_weather],
                model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
            )
            result = Runner.run_sync(agent, QUERY, run_config=RunConfig(tracing_disabled=True))
        [res] = result.tool_input_guardrail_results
        assert res.output.behavior["type"] == ("reject_content" if acts else "allow")
        assert res.output.output_info["failure_kinds"] == kinds


def test_litellm_block_and_repair(monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = pytest.importorskip("litellm")
    from callscope.integrations.litellm_guardrail import CallscopeBlocked, CallscopeGuardrail

    messages = [{"role": "user", "content": QUERY}]

    def mock(city: str) -> object:
        return litellm.ModelResponse(
            choices=[
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": None, "tool_calls": [_call(city)]},
                }
            ]
        )

    async def completion(city: str) -> object:
        return await litellm.acompletion(
            model="gpt-4o", messages=messages, tools=TOOLS, mock_response=mock(city)
        )

    data = {"model": "gpt-4o", "messages": messages, "tools": TOOLS}

    async def go() -> None:
        block = CallscopeGuardrail(callscope_mode="block", guardrail_name="callscope")
        repair = CallscopeGuardrail(callscope_mode="repair", guardrail_name="callscope")
        asked: list[int] = []

        async def reask(data: dict, in_proxy: bool = False) -> object:
            asked.append(1)
            return await completion("Paris")

        monkeypatch.setattr(repair, "_reask", reask)
        for city, (kinds, acts) in EXPECTED.items():
            resp = await completion(city)
            if acts:
                with pytest.raises(CallscopeBlocked) as e:
                    await block.async_post_call_success_hook(data, None, resp)
                verdict = e.value.verdict.to_dict()
            else:
                out = await block.async_post_call_success_hook(data, None, resp)
                verdict = out.callscope["verdict"]
            assert [str(k) for k in (verdict["calls"][0]["diagnosis"][kinds[0]])] == ["city"]
            asked.clear()
            out = await repair.async_post_call_success_hook(data, None, await completion(city))
            assert bool(asked) is acts
            if acts:
                assert out.callscope["repair"]["repaired"]
            else:  # let through as it came, annotated
                assert out.callscope["verdict"]["stage"] == 3

    asyncio.run(go())
