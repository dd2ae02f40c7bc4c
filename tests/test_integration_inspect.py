"""callscope inside Inspect AI (issue 30): a real ``inspect_ai.eval()`` of a small task with
Inspect's scripted ``mockllm`` model, the scorer and the approver chosen by name through
Inspect's registry (the ``inspect_ai`` entry point), checked against ``guard_check``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai import score as inspect_score  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import (  # noqa: E402
    ChatMessageTool,
    ModelOutput,
    ModelUsage,
    get_model,
    messages_to_openai,
)
from inspect_ai.scorer._scorer import scorer_create  # noqa: E402
from inspect_ai.solver import generate, use_tools  # noqa: E402
from inspect_ai.tool import tool  # noqa: E402

import callscope  # noqa: E402
from callscope.integrations.verdicts import correction_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RAN: list[dict[str, str]] = []  # every get_weather call that ran, in order

PARIS = "What's the weather in Paris right now? Use celsius."
LYON = "What's the weather in Lyon right now? Use celsius."


@tool
def get_weather():
    async def execute(city: str, unit: str) -> str:
        """Get the current weather in a city.

        Args:
            city: The city to get the weather for.
            unit: The temperature unit, celsius or fahrenheit.
        """
        RAN.append({"city": city, "unit": unit})
        return f"18 degrees {unit} and sunny in {city}"

    return execute


def scripted(input, tools, tool_choice, config) -> ModelOutput:  # noqa: A002 - mockllm's names
    """mockllm's script, by the sample's question and how many tool messages came back:
    Paris is asked right first time; for Lyon the model first invents Marseille, then, after
    the rejection, asks for Lyon."""
    user = next(m.text for m in input if m.role == "user")
    done = sum(1 for m in input if isinstance(m, ChatMessageTool))
    plan = (
        [("Paris", "call-paris")]
        if "Paris" in user
        else [("Marseille", "call-lyon-1"), ("Lyon", "call-lyon-2")]
    )
    if done < len(plan):
        city, call_id = plan[done]
        out = ModelOutput.for_tool_call(
            "mockllm/model",
            "get_weather",
            {"city": city, "unit": "celsius"},
            tool_call_id=call_id,
            content="",
        )
    else:
        out = ModelOutput.from_content("mockllm/model", "It is 18 degrees and sunny.")
    # the usage given, so that mockllm does not count tokens (tiktoken would download its
    # encoding)
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return out


def test_the_entry_point_makes_the_scorer_and_approver_available_by_name():
    """A fresh interpreter that never imports callscope finds both by name: Inspect loads the
    ``callscope`` entry point of the ``inspect_ai`` group on the first lookup."""
    code = (
        "import sys\n"
        "from inspect_ai.scorer._scorer import scorer_create\n"
        "from inspect_ai._util.registry import registry_info, registry_lookup\n"
        "assert 'callscope' not in sys.modules\n"
        "s = scorer_create('callscope/tool_calls')\n"
        "a = registry_lookup('approver', 'callscope/guard')\n"
        "print(registry_info(s).name, a is not None,\n"
        "      'callscope.integrations.inspect_ai_scorer' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["callscope/tool_calls", "True", "True"]


def _eval(tmp: Path, dataset: list[Sample]):
    """An ``eval()`` of the weather task on ``dataset`` with the scripted model, the scorer and
    the approver chosen by name; its one log, after checking that it succeeded."""
    policy = tmp / "approval.yaml"
    policy.write_text("approvers:\n  - name: callscope/guard\n    tools: '*'\n", encoding="utf-8")
    task = Task(
        dataset=dataset,
        solver=[use_tools(get_weather()), generate()],
        scorer=scorer_create("callscope/tool_calls"),
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
    return result


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    dataset = [Sample(input=PARIS, id="paris"), Sample(input=LYON, id="lyon")]
    return _eval(tmp_path_factory.mktemp("inspect"), dataset)


def _samples(log):
    return {s.id: s for s in log.samples}


def test_the_score_is_the_verdict_with_the_failing_stage_and_metrics(log):
    samples = _samples(log)
    paris = samples["paris"].scores["tool_calls"]
    lyon = samples["lyon"].scores["tool_calls"]
    assert paris.value == "C" and paris.metadata["stage"] == 0
    assert paris.explanation == "all 1 tool call(s) passed"
    # the invented city fails value grounding; the corrected call passes
    assert lyon.value == "I" and lyon.metadata["stage"] == 3
    assert [c["stage"] for c in lyon.metadata["calls"]] == [3, 0]
    first = lyon.metadata["calls"][0]
    assert first["arguments"] == {"city": "Marseille", "unit": "celsius"}
    assert first["failure_kinds"] == ["hard"]
    assert first["metrics"]["fnem"] == 1 and first["metrics"]["avem"] < 1
    assert lyon.explanation.startswith("get_weather: stage 3 (value grounding): hard: city=")
    assert lyon.metadata["stage_counts"] == {"passed": 1, "stage1": 0, "stage2": 0, "stage3": 1}
    # Inspect's metrics: accuracy and the stage mix over the 3 calls
    [score] = log.results.scores
    assert score.name == "tool_calls"
    metrics = {k: v.value for k, v in score.metrics.items()}
    assert metrics["accuracy"] == pytest.approx(0.5)
    assert metrics["passed"] == pytest.approx(2 / 3)
    assert metrics["stage3"] == pytest.approx(1 / 3)
    assert metrics["stage1"] == metrics["stage2"] == 0


def test_the_approver_rejects_the_invented_value_with_the_correction(log):
    """The approver's decisions, the correction the model saw as the tool's error, and the
    tool run once per sample, with the right arguments."""
    samples = _samples(log)
    decisions = {
        sid: [
            (e.call.arguments["city"], e.decision, e.approver)
            for e in s.events
            if e.event == "approval"
        ]
        for sid, s in samples.items()
    }
    assert decisions == {
        "paris": [("Paris", "approve", "callscope/guard")],
        "lyon": [
            ("Marseille", "reject", "callscope/guard"),
            ("Lyon", "approve", "callscope/guard"),
        ],
    }
    assert sorted(RAN, key=lambda r: r["city"]) == [
        {"city": "Lyon", "unit": "celsius"},
        {"city": "Paris", "unit": "celsius"},
    ]
    rejected = next(
        m for m in samples["lyon"].messages if isinstance(m, ChatMessageTool) and m.error
    )
    reject = next(e for e in samples["lyon"].events if e.event == "approval")
    assert rejected.error.type == "approval"
    assert rejected.error.message == reject.explanation
    assert "city" in reject.explanation and 'unit = "celsius"' in reject.explanation


async def _guard_checks(sample):
    """``callscope.guard_check`` on what Inspect sent and got back at each model call that
    made tool calls: its own OpenAI conversion of the request's messages (a tool *error* is
    left out: a correction is no evidence) and of the response, the tools as Inspect's OpenAI
    provider sends them (``ToolInfo.model_dump(exclude_none=True)``)."""
    out = []
    for e in sample.events:
        if e.event != "model" or not e.output.message.tool_calls:
            continue
        tools = [{"type": "function", "function": t.model_dump(exclude_none=True)} for t in e.tools]
        request = [m for m in e.input if not (isinstance(m, ChatMessageTool) and m.error)]
        messages = [dict(m) for m in await messages_to_openai(request)]
        [response] = await messages_to_openai([e.output.message])
        out.append(callscope.guard_check(dict(response), tools, messages))
    return out


def test_the_diagnosis_equals_guard_check_call_by_call(log):
    for sample in log.samples:
        turns = asyncio.run(_guard_checks(sample))
        expected = [c for t in turns for c in t.calls]
        rows = sample.scores["tool_calls"].metadata["calls"]
        assert len(rows) == len(expected) >= 1
        for row, c in zip(rows, expected, strict=True):
            assert (row["name"], row["arguments"], row["stage"]) == (c.name, c.arguments, c.stage)
            assert row["reasons"] == list(c.reasons)
            assert row["correction"] == c.correction
            assert row["failure_kinds"] == [str(k) for k in c.diagnosis.failure_kinds()]
            assert row["metrics"] == {k: getattr(c.diagnosis, k) for k in row["metrics"]}
        # the approver decided each call as guard_check's verdict says, and sent its correction
        approvals = [e for e in sample.events if e.event == "approval"]
        assert len(approvals) == len(expected)
        for a, c in zip(approvals, expected, strict=True):
            fix = correction_for(c)
            assert a.decision == ("approve" if fix is None else "reject")
            if fix is not None:
                assert a.explanation == fix
            assert json.loads(json.dumps(a.call.arguments)) == c.arguments


def test_rescoring_the_log_with_inspect_score_gives_the_same_scores(log):
    """``inspect score`` / ``inspect_ai.score`` rebuild each sample's state from the log,
    without its tools: the scorer then reads the tools each model call was offered from the
    sample's events, and scores as the live run did."""
    rescored = inspect_score(log, scorers=[scorer_create("callscope/tool_calls")], display="none")
    for sample in rescored.samples:
        live = _samples(log)[sample.id].scores["tool_calls"]
        again = sample.scores["tool_calls"]
        assert (again.value, again.explanation, again.metadata) == (
            live.value,
            live.explanation,
            live.metadata,
        )


def test_a_long_sample_is_checked_off_inspects_event_loop(tmp_path, monkeypatch):
    """A question of 100,000 characters: the approver's checks and the scorer's run on worker
    threads, so Inspect's event loop runs other samples meanwhile (stage 3 reads the whole
    conversation); the decisions are those of the short sample."""
    import threading

    from hostile import random_words

    import callscope.integrations.inspect_ai_scorer as inspect_integration

    off_loop: list[bool] = []
    real = inspect_integration.check

    def recording(*args, **kwargs):
        off_loop.append(threading.current_thread() is not threading.main_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(inspect_integration, "check", recording)
    question = random_words(31, 100_000) + " " + LYON
    _eval(tmp_path, [Sample(input=question, id="long")])
    assert RAN == [{"city": "Lyon", "unit": "celsius"}]  # Marseille rejected, Lyon run
    assert len(off_loop) >= 4 and all(off_loop)  # the approver's checks and the scorer's


def test_a_model_call_that_returned_no_choice_is_passed_over_by_the_scorer(tmp_path):
    """With no tools in the state (an agent that keeps its own, ``inspect score`` of a log),
    the scorer reads each model call's tools from the sample's events; a model call that
    returned no choice (a provider's filtered reply) produced no message, and is passed over.
    It failed the sample with an IndexError before."""
    from inspect_ai.solver import solver

    outputs = [
        ModelOutput(model="mockllm/model", choices=[]),
        ModelOutput.for_tool_call(
            "mockllm/model", "get_weather", {"city": "Paris", "unit": "celsius"}, content=""
        ),
    ]
    for out in outputs:
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)

    @solver
    def two_model_calls():
        async def solve(state, generate):
            model = get_model()
            await model.generate(state.messages, tools=[get_weather()])
            second = await model.generate(state.messages, tools=[get_weather()])
            state.messages.append(second.message)
            return state

        return solve

    task = Task(
        dataset=[Sample(input=PARIS, id="paris")],
        solver=[two_model_calls()],
        scorer=scorer_create("callscope/tool_calls"),
    )
    [result] = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert result.status == "success", result.error
    [sample] = result.samples
    assert sample.error is None
    score = sample.scores["tool_calls"]
    assert (score.value, score.metadata["stage"]) == ("C", 0)
    assert score.metadata["calls"][0]["arguments"] == {"city": "Paris", "unit": "celsius"}


def test_an_unknown_grounding_is_refused_when_the_task_is_made():
    """The scorer and the approver with ``grounding="bogus"`` raise ConfigError when made,
    before any sample runs (the samples failed one by one before, the scorer's after the
    tool had run)."""
    from callscope.errors import ConfigError
    from callscope.integrations.inspect_ai_scorer import guard, tool_calls

    for make in (tool_calls, guard):
        with pytest.raises(ConfigError, match="unknown grounding 'bogus'"):
            make(grounding="bogus")
