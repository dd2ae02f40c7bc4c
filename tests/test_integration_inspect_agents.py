"""callscope inside Inspect's own agents (issue 46): ``react()`` and ``basic_agent()`` run by a
real ``inspect_ai.eval()`` on Inspect's scripted ``mockllm`` model, with the approver on every
tool (``tools: '*'``, as the README shows) and the scorer.

- react() keeps its tools in the agent, not in the sample's ``state.tools``: the approver
  reads the tools the model was offered (the model call's own event), so ``get_home`` is a
  registered tool, not "not found in registry";
- basic_agent() hands the approver only the assistant message as history: the approver reads
  the sample's conversation, so "Paris" in the question grounds ``city="Paris"``;
- the final-answer tool (``submit``) is not a tool call whose values the user must state: it
  is neither rejected by the approver nor graded by the scorer;
- a required unit the user did not state gets the ASK verdict and its correction
  (:data:`callscope.saag.messages.ASK`), and the call does not run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.agent import react  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.scorer._scorer import scorer_create  # noqa: E402
from inspect_ai.solver import basic_agent  # noqa: E402
from inspect_ai.tool import tool  # noqa: E402

from callscope.saag.messages import ASK  # noqa: E402

RAN: list[tuple[str, dict[str, str]]] = []  # every tool that ran, in order (one run)

HOME = "What's the weather at home right now? Use celsius."
PARIS = "What's the weather in Paris right now? Use celsius."
NO_UNIT = "What's the weather in Paris right now?"
ANSWER = "It is sunny and 18 degrees celsius."


@tool
def get_home():
    async def execute() -> str:
        """Get the city the user lives in."""
        RAN.append(("get_home", {}))
        return "Paris"

    return execute


@tool
def get_weather():
    async def execute(city: str, unit: str) -> str:
        """Get the current weather in a city.

        Args:
            city: The city to get the weather for.
            unit: celsius or fahrenheit
        """
        RAN.append(("get_weather", {"city": city, "unit": unit}))
        return f"sunny, 18 degrees {unit} in {city}"

    return execute


def _out(name: str | None, args: dict | None = None, text: str = "") -> ModelOutput:
    if name is None:
        out = ModelOutput.from_content("mockllm/model", text)
    else:
        out = ModelOutput.for_tool_call("mockllm/model", name, args or {}, content=text)
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return out


def scripted(input, tools, tool_choice, config) -> ModelOutput:  # noqa: A002 - mockllm's names
    """The model's plan by the question, one step per tool message come back: home asks
    ``get_home`` then the weather there; Paris asks the weather; the question without a unit
    first guesses celsius and, once told to ask, submits the question to the user."""
    user = next(m.text for m in input if m.role == "user")
    done = sum(1 for m in input if isinstance(m, ChatMessageTool))
    rejected = any(isinstance(m, ChatMessageTool) and m.error for m in input)
    if user == HOME:
        plan = [("get_home", {}), ("get_weather", {"city": "Paris", "unit": "celsius"})]
    elif user == PARIS:
        plan = [("get_weather", {"city": "Paris", "unit": "celsius"})]
    else:
        plan = [("get_weather", {"city": "Paris", "unit": "celsius"})]
        if rejected:
            return _out("submit", {"answer": "Celsius or fahrenheit?"})
    if done < len(plan):
        return _out(*plan[done])
    return _out("submit", {"answer": ANSWER})


def _eval(tmp: Path, solver, samples):
    policy = tmp / "approval.yaml"
    policy.write_text("approvers:\n  - name: callscope/guard\n    tools: '*'\n", encoding="utf-8")
    task = Task(
        dataset=samples,
        solver=solver,
        scorer=scorer_create("callscope/tool_calls"),
        message_limit=20,
    )
    RAN.clear()
    [result] = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=scripted),
        approval=str(policy),
        log_dir=str(tmp / "logs"),
        display="none",
    )
    assert result.status == "success", result.error
    return {s.id: s for s in result.samples}


def _approvals(sample):
    return [(e.call.function, e.decision) for e in sample.events if e.event == "approval"]


@pytest.fixture(scope="module")
def react_run(tmp_path_factory):
    samples = _eval(
        tmp_path_factory.mktemp("react"),
        react(tools=[get_home(), get_weather()]),
        [Sample(input=HOME, id="home"), Sample(input=NO_UNIT, id="no_unit")],
    )
    return samples, list(RAN)


@pytest.fixture(scope="module")
def basic_run(tmp_path_factory):
    samples = _eval(
        tmp_path_factory.mktemp("basic"),
        basic_agent(tools=[get_weather()]),
        [Sample(input=PARIS, id="paris"), Sample(input=NO_UNIT, id="no_unit")],
    )
    return samples, list(RAN)


def test_react_tools_are_read_from_the_agent_and_each_call_runs(react_run):
    samples, ran = react_run
    home = samples["home"]
    assert _approvals(home) == [
        ("get_home", "approve"),
        ("get_weather", "approve"),
        ("submit", "approve"),
    ]
    assert ("get_weather", {"city": "Paris", "unit": "celsius"}) in ran
    assert ("get_home", {}) in ran
    score = home.scores["tool_calls"]
    assert score.value == "C"
    # submit is the agent's answer, not a graded call
    assert [c["name"] for c in score.metadata["calls"]] == ["get_home", "get_weather"]
    assert home.output.completion.endswith(ANSWER)


def test_basic_agent_reads_the_question_and_does_not_grade_submit(basic_run):
    samples, ran = basic_run
    paris = samples["paris"]
    assert _approvals(paris) == [("get_weather", "approve"), ("submit", "approve")]
    assert ("get_weather", {"city": "Paris", "unit": "celsius"}) in ran
    score = paris.scores["tool_calls"]
    assert score.value == "C", score.explanation
    assert [c["name"] for c in score.metadata["calls"]] == ["get_weather"]
    assert score.explanation == "all 1 tool call(s) passed"


@pytest.mark.parametrize("run", ["react_run", "basic_run"])
def test_an_unstated_required_unit_is_asked_for(run, request):
    samples, ran = request.getfixturevalue(run)
    sample = samples["no_unit"]
    approvals = [e for e in sample.events if e.event == "approval"]
    assert [(e.call.function, e.decision) for e in approvals] == [
        ("get_weather", "reject"),
        ("submit", "approve"),
    ]
    fix = approvals[0].explanation
    assert fix.startswith(ASK.format(params="unit"))
    assert approvals[0].metadata["callscope"]["failure_kinds"] == ["ask"]
    # the guessed unit never ran: its tool message is the rejection
    [result] = [
        m for m in sample.messages if isinstance(m, ChatMessageTool) and m.function == "get_weather"
    ]
    assert result.error is not None and result.error.message == fix
    score = sample.scores["tool_calls"]
    assert score.value == "I"
    assert score.metadata["calls"][0]["failure_kinds"] == ["ask"]
