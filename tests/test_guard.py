"""The guard library: ``check`` (per-call verdicts, action class, evidence) and ``repair``
(k re-asks with the structured correction, keep-best). Expected stages and messages are
worked out by hand from the cascade's rules (SAAG paper, section 2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import callscope
from callscope.guard import DEFAULT_REPAIR_ATTEMPTS, check, repair
from callscope.guard.check import evidence_of, functions_of
from callscope.saag.messages import KEEP_ARGS, KEEP_NAME, MISSING, NO_NAME, NUMERIC, UNREADABLE
from callscope.types import ModelReply

SPEC = {
    "name": "book_table",
    "description": "Book a restaurant table",
    "parameters": {
        "type": "object",
        "properties": {
            "restaurant": {"type": "string"},
            "people": {"type": "integer"},
            "time": {"type": "string"},
        },
        "required": ["restaurant", "people"],
    },
}
TOOLS = [{"type": "function", "function": SPEC}]
MESSAGES = [
    {"role": "system", "content": "You book tables. The default restaurant is Chez Nous."},
    {"role": "user", "content": "Book a table at Luigi's for 4 people at 7pm"},
]


def msg(*calls: tuple[str, dict[str, Any]], content: str | None = None) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(calls)
        ],
    }


GOOD = ("book_table", {"restaurant": "Luigi's", "people": 4, "time": "7pm"})


def test_a_good_call_passes_with_its_action_class() -> None:
    v = check(msg(GOOD), TOOLS, MESSAGES)
    assert (v.action, v.checked, v.passed, v.stage, v.correction) == (
        "TOOL_CALL",
        True,
        True,
        0,
        None,
    )
    (c,) = v.calls
    assert (c.index, c.id, c.name, c.stage, c.reasons) == (0, "c0", "book_table", 0, ())
    assert v.query == "Book a table at Luigi's for 4 people at 7pm"


@pytest.mark.parametrize(
    ("call", "stage", "reasons"),
    [
        (
            ("book_tabel", GOOD[1]),
            1,
            ["wrong_name: 'book_tabel' is not in the tools (nearest: 'book_table')"],
        ),
        (
            ("book_table", {"restaurant": "Luigi's"}),
            2,
            ["missing: required argument 'people' is absent"],
        ),
        (
            ("book_table", {"restaurant": "Luigi's", "people": 4, "table_id": 9}),
            2,
            ["spurious: argument 'table_id' is not in the schema"],
        ),
        (
            ("book_table", {"restaurant": "Luigi's", "people": 6}),
            3,
            ["numeric: people=6 does not match a number the user stated"],
        ),
        (
            ("book_table", {"restaurant": "Chez Nous", "people": 4}),
            3,
            ["hard: restaurant='Chez Nous' has no grounding in the user's text"],
        ),
    ],
)
def test_each_stage_fails_with_its_reason(call: Any, stage: int, reasons: list[str]) -> None:
    v = check(msg(call), TOOLS, MESSAGES)
    assert (v.passed, v.stage, list(v.calls[0].reasons)) == (False, stage, reasons)
    assert v.correction == v.calls[0].correction  # one call: its own correction


def test_several_calls_each_get_a_verdict_and_a_labelled_correction() -> None:
    v = check(msg(GOOD, ("book_table", {"restaurant": "Luigi's"})), TOOLS, MESSAGES)
    assert [c.stage for c in v.calls] == [0, 2]
    assert (v.stage, v.reached, v.flagged, v.worst.index) == (2, 2, 1, 1)
    assert v.correction == f"Call 2 (book_table): {MISSING}"


def test_text_turns_are_classified_and_text_calls_are_checked() -> None:
    ask = check("Which restaurant would you like?", TOOLS, MESSAGES)
    assert (ask.action, ask.checked, ask.passed) == ("ASK", False, True)
    text_call = check(
        '{"name": "book_table", "arguments": {"restaurant": "Luigi\'s"}}', TOOLS, MESSAGES
    )
    assert (text_call.action, text_call.stage, text_call.calls[0].id) == ("TOOL_CALL", 2, None)
    reply = check(
        ModelReply(text="", tool_calls=[{"name": GOOD[0], "arguments": GOOD[1]}]), TOOLS, MESSAGES
    )
    completion = check({"choices": [{"message": msg(GOOD)}]}, TOOLS, MESSAGES)
    assert reply.passed and completion.passed


def test_unreadable_native_calls_are_one_stage_1_verdict() -> None:
    bad = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"function": {"name": "", "arguments": "{"}}],
    }
    v = check(bad, TOOLS, MESSAGES)
    assert (v.stage, v.calls[0].reasons, v.parse_error is not None) == (
        1,
        (
            "no_name: the call could not be read: native tool call rejected: call has no string 'name'",
        ),
        True,
    )


def test_evidence_is_the_user_text_and_tool_results_not_the_system_prompt() -> None:
    convo = [
        MESSAGES[0],
        {"role": "user", "content": "Find me an Italian place"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "content": '{"restaurant": "Trattoria Roma"}'},
        {"role": "user", "content": [{"type": "text", "text": "Book it for 2"}]},
    ]
    assert evidence_of(convo) == (
        "Book it for 2",
        ["Find me an Italian place", '{"restaurant": "Trattoria Roma"}'],
    )
    assert check(
        msg(("book_table", {"restaurant": "Trattoria Roma", "people": 2})), TOOLS, convo
    ).passed
    # "Chez Nous" is only in the system prompt: not evidence
    assert (
        check(msg(("book_table", {"restaurant": "Chez Nous", "people": 2})), TOOLS, convo).stage
        == 3
    )
    assert functions_of(
        [SPEC, {"type": "function", "function": {"description": "no name"}}, 3]
    ) == [SPEC]


def test_requests_with_the_same_tools_share_one_registry() -> None:
    """An agent sends its tools with every request, each time as new objects: the guard reads
    them as one registry (the cascade's caches, keyed by the list, then hold one copy and
    index it once), and tools that differ, or are not JSON, get their own."""
    first = functions_of(json.loads(json.dumps(TOOLS)))
    again = functions_of(json.loads(json.dumps(TOOLS)))
    assert again is first and again == functions_of(TOOLS)
    other = json.loads(json.dumps(TOOLS))
    other[0]["function"]["description"] = "another text"
    assert functions_of(other) is not first
    not_json = [{"type": "function", "function": {**SPEC, "default": object()}}]
    assert functions_of(not_json) is not functions_of(not_json)


class Scripted:
    """A chat function answering from a script, recording what it was sent."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.sent: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]], tools: Any) -> Any:
        self.sent.append(messages)
        answer = self.answers[min(len(self.sent) - 1, len(self.answers) - 1)]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_repair_re_asks_with_the_correction_until_it_passes() -> None:
    chat = Scripted(msg(("book_table", {"restaurant": "Luigi's"})), msg(GOOD))
    result = repair(chat, MESSAGES, TOOLS)
    assert (result.passed, result.repaired, result.best_attempt, result.stopped) == (
        True,
        True,
        2,
        "passed",
    )
    assert result.response == msg(GOOD)
    second = chat.sent[1]
    assert second[:2] == MESSAGES
    assert json.loads(second[2]["content"]) == {
        "name": "book_table",
        "arguments": {"restaurant": "Luigi's"},
    }
    # the gated correction: the missing argument, and the name the model already has right
    keep = KEEP_NAME.format(name="book_table")
    assert second[3] == {"role": "user", "content": f"{MISSING} {keep}"}
    assert [a.feedback for a in result.attempts] == [f"{MISSING} {keep}", None]
    paper = repair(
        Scripted(msg(("book_table", {"restaurant": "Luigi's"})), msg(GOOD)),
        MESSAGES,
        TOOLS,
        settings=None,
    )
    assert [a.feedback for a in paper.attempts] == [MISSING, None]  # the structured mode's


def test_gated_repair_keeps_the_grounded_arguments_and_stops_on_a_regression() -> None:
    # attempt 1: stage 3, people=9 is not a number the user stated; restaurant is grounded.
    # attempt 2 drops a required argument (stage 2 ranks below stage 3): the repair stops
    # there and answers with attempt 1, without spending the remaining budget.
    wrong_number = msg(("book_table", {"restaurant": "Luigi's", "people": 9}))
    chat = Scripted(wrong_number, msg(("book_table", {"people": 4})), msg(GOOD))
    result = repair(chat, MESSAGES, TOOLS)
    assert (result.stopped, result.best_attempt, len(chat.sent)) == ("regression", 1, 2)
    assert result.response == wrong_number
    keep = (
        KEEP_NAME.format(name="book_table") + " " + KEEP_ARGS.format(args='restaurant = "Luigi\'s"')
    )
    assert result.attempts[0].feedback == f"{NUMERIC.format(params='people')} {keep}"
    # the paper's structured mode does not stop: it re-asks and the third answer passes
    paper = repair(
        Scripted(wrong_number, msg(("book_table", {"people": 4})), msg(GOOD)),
        MESSAGES,
        TOOLS,
        settings=None,
    )
    assert (paper.stopped, paper.best_attempt, paper.passed) == ("passed", 3, True)


def test_gated_repair_says_why_a_native_call_could_not_be_read() -> None:
    broken = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"function": {"name": "book_table", "arguments": '{"restaurant": '}}],
    }
    result = repair(Scripted(broken, msg(GOOD)), MESSAGES, TOOLS)
    assert (result.passed, result.best_attempt) == (True, 2)
    # the arguments are read stripped: '{"restaurant":' is 14 characters, a value is due at 14
    assert result.attempts[0].feedback == UNREADABLE.format(
        reason="native tool call rejected: arguments are not valid JSON: Expecting value:"
        " line 1 column 15 (char 14)"
    )
    paper = repair(Scripted(broken, msg(GOOD)), MESSAGES, TOOLS, settings=None)
    assert paper.attempts[0].feedback == NO_NAME


def test_gated_repair_stops_when_the_model_repeats_its_call() -> None:
    invented = msg(("book_table", {"restaurant": "Chez Nous", "people": 4}))
    chat = Scripted(invented)  # the same answer to every ask
    result = repair(chat, MESSAGES, TOOLS, k=10)
    # three equal answers: the tie goes to the later one (saag.correction.best_at, issue 27)
    assert (result.stopped, len(chat.sent), result.best_attempt) == ("repeat", 3, 3)


def test_gated_repair_leaves_a_soft_drift_alone() -> None:
    # "Lugi's" is close to the user's "Luigi's" but not equal: a soft stage-3 drift only, so
    # the gate closes at once and the first answer is returned without a re-ask
    soft = msg(("book_table", {"restaurant": "Lugi's", "people": 4}))
    v = check(soft, TOOLS, MESSAGES)
    assert (v.stage, [c.diagnosis.soft for c in v.calls]) == (3, [["restaurant"]])
    chat = Scripted(soft, msg(GOOD))
    result = repair(chat, MESSAGES, TOOLS)
    assert (result.stopped, result.best_attempt, len(chat.sent)) == ("gate", 1, 1)


def test_repair_keeps_the_best_and_stops_at_k() -> None:
    # stage 1, stage 3 with two flagged values, stage 3 with one, stage 2: the third is best
    chat = Scripted(
        msg(("book", GOOD[1])),
        msg(("book_table", {"restaurant": "Chez Nous", "people": 9})),
        msg(("book_table", {"restaurant": "Chez Nous", "people": 4})),
        msg(("book_table", {"people": 4})),
    )
    result = repair(chat, MESSAGES, TOOLS, settings=None)
    assert len(chat.sent) == 1 + DEFAULT_REPAIR_ATTEMPTS == 4
    assert (result.passed, result.best_attempt, result.stopped) == (False, 3, "budget")
    assert [a.verdict.stage for a in result.attempts] == [1, 3, 3, 2]
    assert [a.verdict.flagged for a in result.attempts] == [1, 2, 1, 1]
    # gated (the default): the fourth answer ranks below the third, so it ends on a regression
    gated = repair(Scripted(*chat.answers), MESSAGES, TOOLS)
    assert (gated.best_attempt, gated.stopped, len(gated.attempts)) == (3, "regression", 4)
    one = repair(Scripted(msg(("book", GOOD[1])), msg(GOOD)), MESSAGES, TOOLS, k=0)
    assert (one.best_attempt, one.stopped, len(one.attempts)) == (1, "budget", 1)


def test_the_correction_is_never_evidence() -> None:
    # the invented value is in the re-asked conversation (the model's own turn): still flagged
    invented = msg(("book_table", {"restaurant": "Chez Nous", "people": 4}))
    result = repair(Scripted(invented), MESSAGES, TOOLS, k=2)
    assert [a.verdict.stage for a in result.attempts] == [3, 3, 3]
    assert result.best_attempt == 3  # ties go to the later attempt (issue 27: one rule)


def test_repair_ends_on_errors_deadlines_and_non_calls() -> None:
    failing = msg(("book", GOOD[1]))
    err = repair(Scripted(failing, RuntimeError("upstream down")), MESSAGES, TOOLS)
    assert (err.stopped, err.best_attempt, err.attempts[-1].error) == ("error", 1, "upstream down")
    ticks = [0.0, 0.0, 5.0, 5.0]  # first ask; one re-ask starts at 5 < 10; then 20 >= 10
    late = repair(
        Scripted(failing),
        MESSAGES,
        TOOLS,
        deadline=10.0,
        clock=lambda: ticks.pop(0) if ticks else 20.0,
    )
    assert (late.stopped, len(late.attempts)) == ("deadline", 2)
    text = repair(Scripted("Which restaurant?"), MESSAGES, TOOLS)
    assert (text.stopped, text.passed, len(text.attempts)) == ("no_call", True, 1)
    given = repair(Scripted(msg(GOOD)), MESSAGES, TOOLS, first=failing)
    assert (given.best_attempt, given.response) == (2, msg(GOOD))
    with pytest.raises(ValueError, match="k must be"):
        repair(Scripted(failing), MESSAGES, TOOLS, k=-1)


def test_the_guard_is_public() -> None:
    assert callscope.guard_check is check and callscope.guard_repair is repair


def test_the_docs_guard_example_runs() -> None:
    """docs/guard.md's example (the README's until issue 45), as a script: the verdict."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "guard.md").read_text(encoding="utf-8")
    start = text.index("## In your code")
    code = re.search(r"\$ python - <<'PY'\n(.*?)\nPY\n", text[start:], re.S).group(1)
    assert len(code.strip().splitlines()) == 5
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert out.startswith("TOOL_CALL 3 (\"hard: city='London' has no grounding")


def test_a_value_outside_the_parameters_enum_is_named_as_such() -> None:
    """Issue 45: ``unit='kelvin'`` for an enum of celsius and fahrenheit read "has no grounding
    in the user's text"; the reason now names the values the schema allows. A value merely
    unstated keeps the grounding reason."""
    from callscope import guard_check

    unit = {"type": "string", "enum": ["celsius", "fahrenheit"]}
    params = {"type": "object", "properties": {"city": {"type": "string"}, "unit": unit}}
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": params}}]

    def reasons(args: str) -> tuple[str, ...]:
        call = {"id": "c1", "type": "function"}
        call["function"] = {"name": "get_weather", "arguments": args}
        answer = {"role": "assistant", "content": None, "tool_calls": [call]}
        asked = [{"role": "user", "content": "Weather in Paris in celsius?"}]
        return guard_check(answer, tools, asked).calls[0].reasons

    assert reasons('{"city": "Paris", "unit": "kelvin"}') == (
        "hard: unit='kelvin' is not one of the values its schema allows ('celsius', 'fahrenheit')",
    )
    assert reasons('{"city": "Berlin", "unit": "celsius"}') == (
        "hard: city='Berlin' has no grounding in the user's text",
    )


@pytest.mark.parametrize("answer", [None, ["x"], object()])
def test_a_re_ask_whose_answer_cannot_be_read_ends_the_repair_with_the_best(answer: Any) -> None:
    """A chat function whose re-ask returns ``None``, a list or an object that is no message
    ends the repair as a failing re-ask does (``stopped="error"``, the first answer kept);
    the TypeError escaped ``guard_repair`` before and the first answer was lost."""
    failing = msg(("book", GOOD[1]))
    result = callscope.guard_repair(Scripted(failing, answer), MESSAGES, TOOLS)
    assert (result.stopped, result.best_attempt, result.response) == ("error", 1, failing)
    assert "unsupported response type" in result.attempts[-1].error


def test_a_chat_function_editing_its_messages_does_not_change_the_evidence() -> None:
    """A chat function that rewrites the user's message in place (Luigi's -> Mario's) and
    answers Mario's: the answer is checked against what the user said, Luigi's (stage 3);
    the edit reached the evidence before (the messages were shared) and the call passed."""

    def rewriting(messages: list[dict[str, Any]], tools: Any) -> Any:
        messages[-1]["content"] = "Book a table at Mario's for 4 people at 7pm"
        return msg(("book_table", {"restaurant": "Mario's", "people": 4, "time": "7pm"}))

    result = callscope.guard_repair(rewriting, MESSAGES, TOOLS, k=0)
    assert result.verdict.stage == 3 and result.verdict.calls[0].diagnosis.hard == ["restaurant"]
    assert MESSAGES[-1]["content"] == "Book a table at Luigi's for 4 people at 7pm"


def test_sdk_objects_and_anthropic_tools_are_read_other_formats_refused() -> None:
    """What a user's agent holds: the ``openai`` SDK's ``ChatCompletion`` and message
    objects and LiteLLM's ``ModelResponse`` are read (by ``model_dump()``: the same verdict
    as their dicts; a TypeError before); Anthropic tools (``input_schema``) are a registry
    (a right call read as stage 2, spurious, and a call without its required arguments
    passed before); an Anthropic message or a Responses object is refused, not read as a
    turn without calls (a London call passed unchecked before)."""
    openai_types = pytest.importorskip("openai.types.chat")
    litellm = pytest.importorskip("litellm")
    good, bad = msg(GOOD), msg(("book_table", {"restaurant": "Chez Nous", "people": 4}))
    for answer, stage in ((good, 0), (bad, 3)):
        completion = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                      "choices": [{"index": 0, "finish_reason": "tool_calls", "message": answer}]}  # fmt: skip
        objects = [
            openai_types.ChatCompletion.model_validate(completion),
            openai_types.ChatCompletionMessage.model_validate(answer),
            litellm.ModelResponse(**completion),
        ]
        for obj in objects:
            assert check(obj, TOOLS, MESSAGES).stage == stage, type(obj).__name__
    anthropic_tools = [{"name": SPEC["name"], "input_schema": SPEC["parameters"]}]
    assert check(good, anthropic_tools, MESSAGES).stage == 0
    missing = msg(("book_table", {"restaurant": "Luigi's"}))
    assert check(missing, anthropic_tools, MESSAGES).calls[0].diagnosis.missing == ["people"]
    tool_use = {"type": "tool_use", "id": "t", "name": "book_table", "input": GOOD[1]}
    anthropic_message = {"id": "m", "type": "message", "role": "assistant", "content": [tool_use]}
    responses = {"id": "r", "object": "response", "output": [{"type": "function_call"}]}
    for other in (anthropic_message, responses):
        with pytest.raises(TypeError, match="format_of"):
            check(other, TOOLS, MESSAGES)
