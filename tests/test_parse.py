"""Independent tests of the output parser (callscope.parse) against the specification.

Every expected value below was written by hand from the spec, not copied from the parser.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callscope.parse import parse_native, parse_output, parse_python_calls, parse_text
from callscope.types import ModelReply, ParseResult, ToolCall


def calls_of(result: ParseResult) -> list[dict]:
    return [c.to_dict() for c in result.calls]


# --------------------------------------------------------------------------- accepted forms


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}',
        '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}',
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\", \\"days\\": 3}"}',
        '  \n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n',
        '```json\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n```',
        '```\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n```',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}</tool_call>',
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n'
        "</tool_call>",
        '<functioncall> {"name": "get_weather", "arguments": \'{"city": "Paris", '
        '"days": 3}\'} <|endoftext|>',
        "get_weather(city='Paris', days=3)",
        '[get_weather(city="Paris", days=3)]',
        '```python\nget_weather(city="Paris", days=3)\n```',
        '<tool_call>get_weather(city="Paris", days=3)</tool_call>',
        '{"type": "function", "function": {"name": "get_weather", '
        '"arguments": {"city": "Paris", "days": 3}}}',
    ],
)
def test_every_text_form_gives_the_same_call(text: str) -> None:
    r = parse_text(text)
    assert r.error is None
    assert calls_of(r) == [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]
    assert parse_output(text).calls == r.calls


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ('{"name": "f", "arguments": {"a": 1}}', "json"),
        ('```json\n{"name": "f", "arguments": {"a": 1}}\n```', "fenced"),
        ('<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>', "tool_call_tag"),
        ('<functioncall> {"name": "f", "arguments": \'{"a": 1}\'}', "functioncall"),
        ("f(a=1)", "python"),
    ],
)
def test_form_is_reported(text: str, form: str) -> None:
    assert parse_text(text).form == form


@pytest.mark.parametrize(
    "text",
    [
        'Sure! I will look that up.\n{"name": "f", "arguments": {"a": 1}}\nLet me know.',
        'Here you go:\n```json\n{"name": "f", "arguments": {"a": 1}}\n```\nAnything else?',
        'Thinking... <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call> done',
        "Calling it now: f(a=1). That should work.",
        "Sure (here it is): [f(a=1)]",
        'ASSISTANT: <functioncall> {"name": "f", "arguments": \'{"a": 1}\'} <|endoftext|>',
    ],
)
def test_prose_around_the_call(text: str) -> None:
    assert calls_of(parse_text(text)) == [{"name": "f", "arguments": {"a": 1}}]


def test_braces_inside_string_values_do_not_confuse_the_scanner() -> None:
    r = parse_text('Call: {"name": "f", "arguments": {"a": "}{", "b": "[x]"}} ok')
    assert calls_of(r) == [{"name": "f", "arguments": {"a": "}{", "b": "[x]"}}]


def test_name_only_object_is_a_call_without_arguments() -> None:
    assert calls_of(parse_text('{"name": "list_items"}')) == [
        {"name": "list_items", "arguments": {}}
    ]


def test_json_that_is_not_a_call_is_not_taken_for_one() -> None:
    r = parse_text('The user is {"name": "John", "age": 30}.')
    assert not r.ok
    assert r.error


# --------------------------------------------------------------------------- several calls


@pytest.mark.parametrize(
    "text",
    [
        'First {"name": "f", "arguments": {"a": 1}} then {"name": "g", "arguments": {"b": "x"}}',
        '[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {"b": "x"}}]',
        '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n'
        '<tool_call>\n{"name": "g", "arguments": {"b": "x"}}\n</tool_call>',
        "[f(a=1), g(b='x')]",
        '```json\n{"name": "f", "arguments": {"a": 1}}\n```\ntext\n'
        '```json\n{"name": "g", "arguments": {"b": "x"}}\n```',
        '<functioncall> {"name": "f", "arguments": \'{"a": 1}\'} <|endoftext|>\n\n'
        'FUNCTION RESPONSE: {"ok": true}\n\n'
        'ASSISTANT: <functioncall> {"name": "g", "arguments": \'{"b": "x"}\'} <|endoftext|>',
    ],
)
def test_several_calls_are_kept_in_order(text: str) -> None:
    r = parse_text(text)
    assert calls_of(r) == [
        {"name": "f", "arguments": {"a": 1}},
        {"name": "g", "arguments": {"b": "x"}},
    ]
    assert r.first == ToolCall("f", {"a": 1})


# --------------------------------------------------------------------------- Glaive quirks


def test_glaive_single_quoted_arguments() -> None:
    text = (
        '<functioncall> {"name": "calculate_tip", "arguments": '
        '\'{"bill_amount": 50, "tip_percentage": 15}\'} <|endoftext|>'
    )
    assert calls_of(parse_text(text)) == [
        {"name": "calculate_tip", "arguments": {"bill_amount": 50, "tip_percentage": 15}}
    ]


def test_glaive_multi_line_arguments() -> None:
    text = (
        '<functioncall> {"name": "create_note", "arguments": \'{\n'
        '    "title": "Groceries",\n'
        '    "items": ["milk", "eggs"]\n'
        "}'} <|endoftext|>"
    )
    assert calls_of(parse_text(text)) == [
        {"name": "create_note", "arguments": {"title": "Groceries", "items": ["milk", "eggs"]}}
    ]


def test_glaive_apostrophe_inside_quoted_arguments() -> None:
    text = (
        '<functioncall> {"name": "search_book", "arguments": '
        '\'{"title": "Harry\'s book"}\'} <|endoftext|>'
    )
    assert calls_of(parse_text(text)) == [
        {"name": "search_book", "arguments": {"title": "Harry's book"}}
    ]


def test_glaive_apostrophe_followed_by_a_function_response() -> None:
    text = (
        '<functioncall> {"name": "search_book", "arguments": '
        '\'{"title": "Harry\'s book"}\'}\n\nFUNCTION RESPONSE: {"found": "yes"}'
    )
    assert calls_of(parse_text(text)) == [
        {"name": "search_book", "arguments": {"title": "Harry's book"}}
    ]


def test_glaive_arguments_as_raw_object_and_missing_arguments() -> None:
    assert calls_of(
        parse_text('<functioncall> {"name": "f", "arguments": {"a": 1}} <|endoftext|>')
    ) == [{"name": "f", "arguments": {"a": 1}}]
    assert calls_of(parse_text('<functioncall> {"name": "f"} <|endoftext|>')) == [
        {"name": "f", "arguments": {}}
    ]


def test_glaive_invalid_quoted_arguments_fail_with_reason() -> None:
    r = parse_text('<functioncall> {"name": "f", "arguments": \'{"a": bad}\'}')
    assert not r.ok
    assert "arguments are not valid JSON" in (r.error or "")


# The parser and the Glaive loader read <functioncall> with one reader
# (callscope.parse.glaive); tests/test_glaive.py checks the loader on the same payloads.


@pytest.mark.parametrize(
    ("payload", "arguments"),
    [
        # an apostrophe inside a value, unescaped: it does not close the arguments
        ("""{"name": "f", "arguments": '{"a": "it's"}'}""", {"a": "it's"}),
        # the same apostrophe written \' (not a JSON escape; the corpus has it)
        ("""{"name": "f", "arguments": '{"a": "it\\'s"}'}""", {"a": "it's"}),
        # "'}" inside a value: the first candidate closing quote is not the real one
        ("""{"name": "f", "arguments": '{"a": "x'}y"}'}""", {"a": "x'}y"}),
        ("""{"name": "f", "arguments": '{"a": "it's", "b": "'}"}'}""", {"a": "it's", "b": "'}"}),
        # a "name" key inside the arguments is not the call's name
        ("""{"name": "f", "arguments": '{"name": "x's"}'}""", {"name": "x's"}),
        # raw control characters inside a string (the corpus has multi-line values)
        ("""{"name": "f", "arguments": '{"a": "two\nlines"}'}""", {"a": "two\nlines"}),
    ],
)
def test_glaive_apostrophes_and_closing_quotes_inside_values(payload: str, arguments: dict) -> None:
    for tail in ("", " <|endoftext|>", '\n\nFUNCTION RESPONSE: {"ok": "it\'s done\'}"}'):
        r = parse_text("<functioncall> " + payload + tail)
        assert r.form == "functioncall"
        assert calls_of(r) == [{"name": "f", "arguments": arguments}]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ("""{"name": "f", "arguments": '{"a": NaN, "b": "it's"}'}""", "non-finite"),
        ("""{"name": "f", "arguments": {"a": Infinity}}""", "non-finite"),
        (
            """{"name": "f", "arguments": '{"a": "it's", "b": """
            + "[" * 40
            + "1"
            + "]" * 40
            + "}'}",
            "nested deeper",
        ),
        ("""{"name": "f", "arguments": '[1, "it's"]'}""", "not a JSON object"),
        # an object that does not decode and has no single-quoted arguments is no call
        # (it used to become f() with no arguments)
        ("""{"name": "f", "arguments": {"a": bad}}""", "no single-quoted arguments"),
    ],
)
def test_glaive_payload_keeps_the_parser_limits(payload: str, reason: str) -> None:
    r = parse_text("<functioncall> " + payload)
    assert not r.ok
    assert reason in (r.error or "")


# --------------------------------------------------------------------------- Python syntax


def test_python_literals_of_every_json_kind() -> None:
    r = parse_text("f(a=-1, b=2.5, c='x', d=True, e=None, g=[1, 'y'], h={'k': [False]})")
    assert calls_of(r) == [
        {
            "name": "f",
            "arguments": {
                "a": -1,
                "b": 2.5,
                "c": "x",
                "d": True,
                "e": None,
                "g": [1, "y"],
                "h": {"k": [False]},
            },
        }
    ]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("math.sqrt(x=4)", "math.sqrt"),
        ("[weather.api.current(city='Oslo')]", "weather.api.current"),
    ],
)
def test_dotted_python_names(text: str, name: str) -> None:
    assert [c.name for c in parse_text(text).calls] == [name]


def test_parse_python_calls_directly() -> None:
    assert parse_python_calls("[f(a=1), g()]") == [ToolCall("f", {"a": 1}), ToolCall("g", {})]
    with pytest.raises(ValueError):
        parse_python_calls("f(a=x)")


@pytest.mark.parametrize(
    "text",
    [
        "f(a=x)",
        "f(a=1+2)",
        "f(a=lambda: 1)",
        "f(a=(y := 1))",
        "f(a=f'{x}')",
        "f(a=os.environ)",
    ],
)
def test_non_literal_python_arguments_rejected_with_reason(text: str) -> None:
    r = parse_text(text)
    assert not r.ok
    assert r.error and "literal" in r.error


@pytest.mark.parametrize(
    "template",
    [
        "f(a=open('{m}', 'w'))",
        "f(a=__import__('os').system('touch {m}'))",
        "[f(a=__import__('pathlib').Path('{m}').touch())]",
    ],
)
def test_regression_non_literal_call_argument_reason_names_the_inner_call(
    template: str, tmp_path: Path
) -> None:
    """Regression (found in review, fixed): the reason names the inner call ("positional arguments are not
    accepted") instead of saying the argument is not a literal."""
    marker = tmp_path / "pwned"
    r = parse_text(template.format(m=marker))
    assert not r.ok
    assert not marker.exists()
    assert r.error and "literal" in r.error


def test_code_in_output_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payloads = [
        f"f(a=__import__('os').system('echo pwned > {marker}'))",
        f"__import__('os').system('touch {marker}')",
        f"[f(a=1), __import__('os').system('touch {marker}')]",
        f"```python\nimport os; os.system('touch {marker}')\n```",
        f"<tool_call>open('{marker}', 'w').write('x')</tool_call>",
        f'{{"name": "f", "arguments": "__import__(\'os\').system(\'touch {marker}\')"}}',
        f"f(a=exec(\"open('{marker}','w')\"))",
        f"f(a=eval(\"open('{marker}','w')\"))",
    ]
    for p in payloads:
        parse_output(p)
    assert not marker.exists()


def test_positional_and_star_arguments_rejected() -> None:
    assert not parse_text("f(1)").ok
    assert not parse_text("f(**{'a': 1})").ok


@pytest.mark.parametrize(
    "text", ["f(a={1, 2})", "f(a=b'x')", "f(a=1j)", "f(a=...)", "f(a={(1, 2): 3})"]
)
def test_regression_python_literals_that_are_not_json_are_accepted(text: str) -> None:
    """Regression (found in review, fixed): ast.literal_eval also yields sets, bytes, complex numbers, Ellipsis and
    tuple keys, which ToolCall promises never to hold and json.dumps cannot write. Expected:
    rejected with a reason, or converted to JSON-like values."""
    r = parse_text(text)
    if r.ok:
        json.dumps(r.first.to_dict())  # raises TypeError for non-JSON values
    else:
        assert r.error


# --------------------------------------------------------------------------- native


def test_native_openai_string_arguments() -> None:
    msg = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "f", "arguments": '{"a": 1, "b": "x"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
        ],
    }
    r = parse_output(msg)
    assert r.form == "native"
    assert calls_of(r) == [
        {"name": "f", "arguments": {"a": 1, "b": "x"}},
        {"name": "g", "arguments": {}},
    ]
    assert calls_of(parse_output(msg["tool_calls"])) == calls_of(r)
    assert calls_of(parse_native(msg["tool_calls"])) == calls_of(r)


def test_native_ollama_object_arguments() -> None:
    msg = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1, "b": ["x"]}}}],
    }
    assert calls_of(parse_output(msg)) == [{"name": "f", "arguments": {"a": 1, "b": ["x"]}}]
    assert calls_of(parse_output(msg["tool_calls"])) == [
        {"name": "f", "arguments": {"a": 1, "b": ["x"]}}
    ]


def test_native_plain_call_object_and_model_reply() -> None:
    assert calls_of(parse_output({"name": "f", "arguments": {"a": 1}})) == [
        {"name": "f", "arguments": {"a": 1}}
    ]
    reply = ModelReply(text="ignored", tool_calls=[{"name": "g", "arguments": '{"b": 2}'}])
    assert calls_of(parse_output(reply)) == [{"name": "g", "arguments": {"b": 2}}]
    assert calls_of(parse_output(ModelReply(text="f(a=1)"))) == [
        {"name": "f", "arguments": {"a": 1}}
    ]


def test_message_without_tool_calls_falls_back_to_content() -> None:
    msg = {"role": "assistant", "content": 'ok {"name": "f", "arguments": {}}', "tool_calls": []}
    assert calls_of(parse_output(msg)) == [{"name": "f", "arguments": {}}]


@pytest.mark.parametrize(
    "output",
    [
        {"name": "f", "arguments": '{"a": 1'},
        [{"type": "function", "function": {"name": "f", "arguments": "{bad"}}],
        {"tool_calls": [{"function": {"name": "f", "arguments": "not json"}}]},
        '{"name": "f", "arguments": "{bad json"}',
    ],
)
def test_invalid_json_string_arguments_fail_with_reason(output: object) -> None:
    r = parse_output(output)
    assert not r.ok
    assert r.calls == ()
    assert "arguments are not valid JSON" in (r.error or "")


def test_arguments_that_are_not_an_object_fail_with_reason() -> None:
    r = parse_output({"name": "f", "arguments": "[1, 2]"})
    assert not r.ok
    assert "object" in (r.error or "")


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    "output",
    ["", "   ", "I cannot help with that.", None, 42, {"foo": 1}, [], '{"name": ""}'],
)
def test_no_call_gives_an_error_and_no_calls(output: object) -> None:
    r = parse_output(output)
    assert r.calls == ()
    assert r.first is None
    assert isinstance(r.error, str) and r.error


def test_non_finite_json_constants_rejected() -> None:
    for text in (
        '{"name": "f", "arguments": {"x": NaN}}',
        '{"name": "f", "arguments": {"x": Infinity}}',
        '{"name": "f", "arguments": {"x": -Infinity}}',
    ):
        r = parse_text(text)
        assert not r.ok
        assert "non-finite" in (r.error or "")


# ------------------------------------------------------------- why JSON-looking text is no call


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # the 0.5B's own outputs (the issue-17 comparison): stopped before the closing braces
        (
            '{"name": "Music_3_PlayMedia", "arguments": {"track": "Shape of You", "album": "x"}',
            "the JSON call starting at character 0 is cut off: the text ends before the call"
            " is closed",
        ),
        # ... and cut inside a string at the token limit
        (
            'Sure. {"name": "Movies_3_FindMovies", "arguments": {"cast": "James Gray, Jackson, Ja',
            "the JSON call starting at character 6 is cut off",
        ),
        # an unquoted key: the decoder's message at the key's position (counted by hand: 44)
        (
            '{"name": "calculate_average", "arguments": {numbers: [12, 15]}}',
            "invalid JSON at character 44: Expecting property name enclosed in double quotes",
        ),
        # a list whose call object is never closed: after its comma a key is due, not "]"
        (
            '[{"name": "f", "arguments": {"a": 1},]',
            "invalid JSON at character 37: Expecting property name enclosed in double quotes",
        ),
    ],
)
def test_json_that_does_not_decode_says_why(text: str, reason: str) -> None:
    r = parse_text(text)
    assert r.calls == ()
    assert (r.error or "").startswith(reason)


@pytest.mark.parametrize(
    "text",
    [
        "I can't do {that} for you.",  # braces in prose are not JSON written as a call
        "Let me check the weather first.",
        "The derivative is f(x) = 2x, see [1] and [the docs](https://example.org).",
    ],
)
def test_text_without_broken_json_is_just_no_call(text: str) -> None:
    assert parse_text(text).error == "no tool call found in output"


def test_a_call_after_broken_json_is_still_found() -> None:
    r = parse_text('{"name": "f", "arguments": {x: 1}} then {"name": "g", "arguments": {}}')
    assert [c.name for c in r.calls] == ["g"] and r.error is None
