"""`callscope score --from-chat` on long conversations and on malformed response lines.

Scale: each turn's evidence is built in one pass over the conversation and reads at most
the last ``CONTEXT_CHARS`` characters of earlier context (so checking every turn grows with
the conversation's length, not its square), and the turns keep the conversation's message
list, not a copy each. What bounds the work is asserted (the messages each check reads, one
list shared by the turns), never seconds. Malformed lines: a batch response or a logged
pair without an assistant message is a malformed line, not an empty turn, named once.
Run through the CLI (`CliRunner`), counts worked out by hand."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from callscope.cli import app
from callscope.guard import chatlog

cli_chatlog = importlib.import_module("callscope.cli.chatlog")
check_module = importlib.import_module("callscope.guard.check")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
CITIES = ("Paris", "London", "Rome")


def _call(i: int, city: str) -> dict[str, Any]:
    args = json.dumps({"city": city})
    return {
        "role": "assistant",
        "tool_calls": [
            {
                "id": str(i),
                "type": "function",
                "function": {"name": "get_weather", "arguments": args},
            }
        ],
    }


def _long_conversation(turns: int) -> dict[str, Any]:
    """``turns`` x (the user names a city, the assistant calls get_weather(city), the tool
    answers "sunny"): 3 x ``turns`` messages, every call grounded in the message before."""
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        city = CITIES[i % 3]
        messages.append({"role": "user", "content": f"Weather in {city}?"})
        messages.append(_call(i, city))
        messages.append({"role": "tool", "tool_call_id": str(i), "content": "sunny"})
    return {"id": "long", "messages": messages, "tools": TOOLS}


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_each_check_reads_a_bounded_window_and_the_turns_share_one_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 300
    monkeypatch.setattr(chatlog, "CONTEXT_CHARS", 100, raising=False)
    read: list[int] = []  # the messages each check's evidence_of was handed
    evidence_of = check_module.evidence_of

    def counting(messages: Any) -> Any:
        read.append(len(messages))
        return evidence_of(messages)

    monkeypatch.setattr(check_module, "evidence_of", counting)
    kept: list[chatlog.ChatTurn] = []
    diagnose = cli_chatlog.diagnose_conversations

    def keeping(*args: Any, **kwargs: Any) -> list[chatlog.ChatTurn]:
        kept.extend(diagnose(*args, **kwargs))
        return kept

    monkeypatch.setattr(cli_chatlog, "diagnose_conversations", keeping)
    log = _write(tmp_path / "long.jsonl", [_long_conversation(n)])
    rows_path = tmp_path / "rows.jsonl"
    res = CliRunner().invoke(app, ["score", "--from-chat", str(log), "-o", str(rows_path)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in rows_path.read_text().splitlines()]
    assert [(r["turn"], r["stage"]) for r in rows] == [(3 * i + 1, 0) for i in range(n)]
    assert len(read) == n
    # the window: at most 100 characters of "sunny" (5) and "Weather in Paris?" (17-18)
    # messages, one of them cut, and the query: 20 + 1 + 1 messages at most (the conversation
    # before the turn, up to 899 messages, before the bound)
    assert max(read) <= 22 and sum(read) <= 22 * n
    assert all(t.source is kept[0].source for t in kept)  # one list, no copy per turn
    assert len(kept[-1].messages) == 3 * n - 2  # a turn's request is made when asked


def test_a_value_stated_before_the_window_is_not_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "I live in Paris."},
        {"role": "assistant", "content": "Noted."},
        {"role": "tool", "tool_call_id": "0", "content": "x" * 50},
        {"role": "user", "content": "And the weather at home?"},
        _call(1, "Paris"),
    ]
    log = _write(tmp_path / "log.jsonl", [{"id": "c", "messages": messages, "tools": TOOLS}])

    def stage() -> int:
        rows_path = tmp_path / "rows.jsonl"
        res = CliRunner().invoke(app, ["score", "--from-chat", str(log), "-o", str(rows_path)])
        assert res.exit_code == 0, res.output
        (row,) = [json.loads(x) for x in rows_path.read_text().splitlines() if '"call": 0' in x]
        return int(row["stage"])

    monkeypatch.setattr(chatlog, "CONTEXT_CHARS", 60)  # 50 + the end of "I live in Paris."
    assert stage() == 0
    monkeypatch.setattr(chatlog, "CONTEXT_CHARS", 55)  # "Paris." cut off: "ris."
    assert stage() == 3
    monkeypatch.setattr(chatlog, "CONTEXT_CHARS", 50)  # only the tool's answer
    assert stage() == 3


def test_a_response_without_an_assistant_message_is_a_malformed_line(tmp_path: Path) -> None:
    ask = {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS}
    batch_in = [{"custom_id": f"r{i}", "body": ask} for i in (1, 2, 3, 4)]
    batch_out = [
        {"custom_id": "r1", "response": {"status_code": 200, "body": {"choices": []}}},
        {"custom_id": "r2", "response": {"status_code": 200, "body": {"choices": ["x"]}}},
        {"custom_id": "r3", "response": ["x"]},
        {
            "custom_id": "r4",
            "response": {"status_code": 200, "body": {"choices": [{"message": _call(0, "Paris")}]}},
        },
    ]
    pairs = [
        {"request": ask, "response": "a string"},
        {"request": "x", "response": {}},
        {"id": "p3", "request": "x", "response": {}},
        {"request": ask, "response": {"status_code": 200, "body": {"id": "x"}}},
    ]
    inp = _write(tmp_path / "in.jsonl", batch_in)
    out = _write(tmp_path / "out.jsonl", batch_out)
    logged = _write(tmp_path / "pairs.jsonl", pairs)
    rows_path = tmp_path / "rows.jsonl"
    res = CliRunner().invoke(
        app,
        ["score", "--from-chat", str(inp), "--from-chat", str(out), "--from-chat", str(logged)]
        + ["-o", str(rows_path)],
    )
    assert res.exit_code == 1, res.output
    rows = [json.loads(x) for x in rows_path.read_text().splitlines()]
    assert [(r["conversation"], r["answer"], r["stage"]) for r in rows] == [("r4", "calls", 0)]
    said = " ".join(res.output.split())  # (the console wraps long lines)
    for message in [
        "pairs.jsonl:1: response is not an object (a str)",
        "pairs.jsonl:2: request has no 'messages' list",
        "pairs.jsonl:3: p3: request has no 'messages' list",
        "pairs.jsonl:4: response has no message (neither 'choices' nor a message)",
        "batch r1: response has no message ('choices' is not a non-empty list)",
        "batch r2: response has no message (the first choice has no 'message' object)",
        "batch r3: response is not an object (a list)",
    ]:
        assert message in said, message
    assert "pairs.jsonl:2: pairs.jsonl:2" not in said
    assert "1 tool calls, 7 malformed lines" in said
