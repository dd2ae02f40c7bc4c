"""`callscope score --from-traces` on trace files with malformed spans: each bad span (or
entry of an OTLP document that is not a span) is one unreadable span with its reason, the
other spans are scored, the rows are written, exit 1; a span id read twice is scored once.
Run as a user types it (a subprocess), every count and message worked out by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

#: the console script as a user types it (the installed `callscope`)
CALLSCOPE = [
    sys.executable,
    "-c",
    "import sys; from callscope.cli.main import main; sys.exit(main())",
]
TRACE = "0af7651916cd43dd8448eb211c80319c"
TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]


def _attr(key: Any, value: Any) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value} if isinstance(value, str) else value}


def _genai(span: str, **replace: Any) -> dict[str, Any]:
    """A GenAI chat span (semconv 1.37) whose call `get_weather(city="Paris")` is grounded
    in the user's "Weather in Paris?"; ``replace`` swaps attributes by key."""
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "tool_call",
                            "id": "c1",
                            "name": "get_weather",
                            "arguments": {"city": "Paris"},
                        }
                    ],
                }
            ]
        ),
        "gen_ai.tool.definitions": json.dumps(TOOLS),
    }
    attrs.update(replace)
    return {
        "traceId": TRACE,
        "spanId": span,
        "name": "chat",
        "attributes": [_attr(k, v) for k, v in attrs.items()],
    }


def _score(tmp_path: Path, name: str, text: str) -> tuple[int, list[dict[str, Any]], str]:
    """Exit code, rows written and what was said, of `score --from-traces FILE -o rows`."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    rows = tmp_path / "rows.jsonl"
    proc = subprocess.run(
        [*CALLSCOPE, "score", "--from-traces", str(path), "-o", str(rows)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "400"},
    )
    said = proc.stdout + proc.stderr
    assert "Traceback" not in said, said
    got = [json.loads(x) for x in rows.read_text().splitlines()] if rows.exists() else []
    return proc.returncode, got, said


def test_each_bad_span_of_an_otlp_document_is_one_unreadable_span(tmp_path: Path) -> None:
    oi_output = "llm.output_messages.\u00b2.message"
    spans: list[Any] = [
        _genai("1111111111111111"),  # the one valid span: passes
        "x",  # not a span
        {
            "traceId": TRACE,
            "spanId": "2222222222222222",
            "attributes": [_attr("a", {"arrayValue": [1, 2]})],
        },
        _genai(
            "3333333333333333",
            **{"gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": 7}])},
        ),
        _genai("4444444444444444", **{"gen_ai.input.messages": "5"}),
        {
            "traceId": TRACE,
            "spanId": "5555555555555555",
            "attributes": [_attr(["k"], "v")],
        },
        {
            "traceId": TRACE,
            "spanId": "6666666666666666",
            "attributes": [_attr(f"{oi_output}.role", "assistant")],
        },
        {
            "traceId": TRACE,
            "spanId": "7777777777777777",
            "attributes": [_attr("llm.output_messages." + "9" * 5000 + ".message.role", "x")],
        },
    ]
    doc = {
        "resourceSpans": [
            {"scopeSpans": [{"spans": spans}]},
            "x",  # not a resource
            {"scopeSpans": [{"spans": {"a": 1}}]},  # spans not a list
        ]
    }
    code, rows, said = _score(tmp_path, "mixed.json", json.dumps(doc))
    assert code == 1
    assert [(r["trace"], r["span"], r["name"], r["stage"]) for r in rows] == [
        (TRACE, "1111111111111111", "get_weather", 0)
    ]
    where = f"mixed.json: trace {TRACE} span"
    expected = [
        "mixed.json:1: resourceSpans[0].scopeSpans[0].spans[1]: not an object (a str)",
        f"{where} 2222222222222222: unreadable span: attribute 'a': arrayValue is not an "
        "object with 'values' (a list)",
        f"{where} 3333333333333333: unreadable span: gen_ai.output.messages[0].parts is not "
        "a list (an int)",
        f"{where} 4444444444444444: unreadable span: gen_ai.input.messages is not a JSON "
        "list of messages (an int)",
        f"{where} 5555555555555555: unreadable span: attributes[0]: the key is not a string "
        "(a list)",
        f"{where} 6666666666666666: unreadable span: attribute llm.output_messages.\u00b2: "
        "the index '\u00b2' is not a number of at most 9 ASCII digits",
        f"{where} 7777777777777777: unreadable span: attribute llm.output_messages."
        + "9" * 20
        + "... (5,000 characters): the index '"
        + "9" * 20
        + "... (5,000 characters)' is not a number of at most 9 ASCII digits",
        "mixed.json:1: resourceSpans[1]: not an object (a str)",
        "mixed.json:1: resourceSpans[2].scopeSpans[0].spans: not a list (an object)",
    ]
    lines = said.splitlines()
    for message in expected:
        assert message in lines, message
    assert "1 tool calls, 9 malformed lines" in said


def test_each_bad_langsmith_run_is_one_unreadable_span(tmp_path: Path) -> None:
    ask = {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS}
    call = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    runs = [
        {"id": "r1", "run_type": "llm", "inputs": ask, "outputs": {"choices": [{"message": call}]}},
        {
            "id": "r2",
            "run_type": "llm",
            "inputs": ask,
            "outputs": {"message": {"kwargs": {"type": "ai", "tool_calls": ["args"]}}},
        },
        {"id": "r3", "run_type": "llm", "input": 5, "inputs": 5, "outputs": {}},
        {"id": "r4", "run_type": "llm", "inputs": ask, "outputs": {"choices": ["x"]}},
        {"id": "r5", "run_type": "llm", "inputs": ask, "outputs": {}, "extra": [1]},
        {"run_type": "llm", "inputs": {"messages": "hello"}, "outputs": {}},  # no ids
    ]
    text = "".join(json.dumps(r) + "\n" for r in runs)
    code, rows, said = _score(tmp_path, "runs.jsonl", text)
    assert code == 1
    assert [(r["trace"], r["convention"], r["stage"]) for r in rows] == [("r1", "langsmith", 0)]
    lines = said.splitlines()
    for message in [
        "runs.jsonl: trace r2 span r2: unreadable span: outputs.message.kwargs.tool_calls[0] "
        "is not an object (a str)",
        "runs.jsonl: trace r3 span r3: unreadable span: inputs is not an object (an int)",
        "runs.jsonl: trace r4 span r4: unreadable span: outputs.choices[0] is not an object "
        "(a str)",
        "runs.jsonl: trace r5 span r5: unreadable span: extra is not an object (a list)",
        "runs.jsonl:6: a span without ids: unreadable span: inputs.messages is not a list (a str)",
    ]:
        assert message in lines, message
    assert "1 tool calls, 5 malformed lines" in said


def test_a_repeated_span_id_is_scored_once_and_said(tmp_path: Path) -> None:
    span = _genai("1111111111111111")
    other = _genai("2222222222222222")
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span, other, span]}]}]}
    again = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}  # a second line
    code, rows, said = _score(tmp_path, "dup.jsonl", json.dumps(doc) + "\n" + json.dumps(again))
    assert code == 1
    assert [r["span"] for r in rows] == ["1111111111111111", "2222222222222222"]
    assert (
        f"dup.jsonl: 2 span(s) repeat a span id already read (e.g. trace {TRACE} span "
        "1111111111111111); dropped, the first of each kept"
    ) in said.splitlines()
    assert "2 tool calls, 1 malformed lines" in said
