"""Chat-log diagnosis (``callscope score --from-chat``): conversations, OpenAI batch
input/output files paired by ``custom_id``, logged request/response pairs, malformed lines.
Stages are worked out by hand from the cascade's rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from callscope.cli import app
from callscope.guard.chatlog import (
    call_rows,
    diagnose_conversations,
    read_chat_logs,
    summarize_turns,
    write_chatlog_store,
)
from callscope.store.run_store import RunStore

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]


def _tc(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "t",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ],
    }


CONVERSATION = {
    "id": "conv-1",
    "tools": TOOLS,
    "messages": [
        {"role": "system", "content": "You are a shop assistant."},
        {"role": "user", "content": "Where is my order?"},
        {"role": "assistant", "content": "Could you tell me your order number?"},  # ASK
        {"role": "user", "content": "It is A-1234"},
        _tc("get_order", {"order_id": "A-1234"}),  # grounded: passes
        {"role": "tool", "tool_call_id": "t", "content": '{"status": "shipped"}'},
        {"role": "assistant", "content": "It has shipped."},  # OTHER
        {"role": "user", "content": "And my other one?"},
        _tc("get_order", {"order_id": "B-9999"}),  # invented: stage 3
        _tc("get_ordr", {"order_id": "A-1234"}),  # wrong name: stage 1
    ],
}
BATCH_IN = [
    {
        "custom_id": "r1",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": "m",
            "messages": [{"role": "user", "content": "order C-77"}],
            "tools": TOOLS,
        },
    },
    {
        "custom_id": "r2",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": "m",
            "messages": [{"role": "user", "content": "order D-1"}],
            "tools": TOOLS,
        },
    },
]
BATCH_OUT = [
    {
        "id": "batch_req_1",
        "custom_id": "r1",
        "response": {
            "status_code": 200,
            "body": {"model": "gpt-x", "choices": [{"message": _tc("get_order", {})}]},  # stage 2
        },
        "error": None,
    },
    {
        "id": "batch_req_2",
        "custom_id": "r2",
        "response": {"status_code": 500, "body": {}},
        "error": None,
    },
]


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_every_assistant_turn_of_a_conversation(tmp_path: Path) -> None:
    convs, errors = read_chat_logs([_write(tmp_path / "log.jsonl", [CONVERSATION])])
    assert errors == [] and [c.turns for c in convs] == [[2, 4, 6, 8, 9]]
    turns = diagnose_conversations(convs)
    assert [(t.turn, t.verdict.action, t.verdict.stage) for t in turns] == [
        (2, "ASK", 0),
        (4, "TOOL_CALL", 0),
        (6, "OTHER", 0),
        (8, "TOOL_CALL", 3),
        (9, "TOOL_CALL", 1),
    ]
    assert [r["stage"] for r in call_rows(turns)] == [None, 0, None, 3, 1]
    s = summarize_turns(turns)
    assert (s.conversations, s.turns, s.calls) == (1, 5, 3)
    assert dict(s.stages) == {0: 1, 3: 1, 1: 1}
    assert dict(s.actions) == {"ASK": 1, "TOOL_CALL": 3, "OTHER": 1}


def test_batch_files_pair_by_custom_id_and_bad_lines_are_reported(tmp_path: Path) -> None:
    out = _write(tmp_path / "out.jsonl", BATCH_OUT)
    inp = _write(tmp_path / "in.jsonl", BATCH_IN)
    pair = {
        "request": {"body": BATCH_IN[0]["body"]},
        "response": {"body": {"choices": [{"message": _tc("get_order", {"order_id": "C-77"})}]}},
    }
    extra = _write(tmp_path / "extra.jsonl", [pair, {"nothing": 1}])
    (tmp_path / "extra.jsonl").write_text(
        (tmp_path / "extra.jsonl").read_text() + "not json\n", encoding="utf-8"
    )
    convs, errors = read_chat_logs([out, inp, extra])
    turns = diagnose_conversations(convs)
    assert [(t.conversation, t.model, t.verdict.stage) for t in turns] == [
        ("extra.jsonl:1", "m", 0),
        ("r1", "gpt-x", 2),
    ]
    assert errors[0] == "extra.jsonl:2: no 'messages' list (nor a batch or request/response line)"
    assert errors[1].startswith("extra.jsonl:3: ")
    assert errors[2] == "batch r2: response status 500"
    assert len(errors) == 3
    alone, errs = read_chat_logs([out])
    assert (
        alone == []
        and errs[0] == "batch r1: response without its request (pass the input file too)"
    )


def test_score_from_chat_prints_the_mix_and_writes_a_report_store(tmp_path: Path) -> None:
    log = _write(tmp_path / "log.jsonl", [CONVERSATION])
    rows_path = tmp_path / "rows.jsonl"
    res = CliRunner().invoke(
        app,
        ["score", "--from-chat", str(log), "-o", str(rows_path), "--report", str(tmp_path / "rep")],
    )
    assert res.exit_code == 0, res.output
    assert "3 tool calls" in res.output and "conv-1" in res.output
    rows = [json.loads(x) for x in rows_path.read_text().splitlines()]
    assert [(r["turn"], r["action"], r["stage"]) for r in rows] == [
        (2, "ASK", None),
        (4, "TOOL_CALL", 0),
        (6, "OTHER", None),
        (8, "TOOL_CALL", 3),
        (9, "TOOL_CALL", 1),
    ]
    assert (tmp_path / "rep" / "report.html").is_file()
    store = RunStore(tmp_path / "rep")
    try:
        got = sorted((o["case_id"], o["final"]["stage"]) for o in store.outcomes())
    finally:
        store.close()
    assert got == [("conv-1#4", 0), ("conv-1#8", 3), ("conv-1#9", 1)]
    bad = _write(tmp_path / "bad.jsonl", [{"nothing": 1}])
    assert CliRunner().invoke(app, ["score", "--from-chat", str(bad)]).exit_code == 1
    assert CliRunner().invoke(app, ["score"]).exit_code == 2


def test_the_store_writer_skips_turns_without_calls(tmp_path: Path) -> None:
    convs, _ = read_chat_logs([_write(tmp_path / "log.jsonl", [CONVERSATION])])
    write_chatlog_store(tmp_path / "run", diagnose_conversations(convs))
    store = RunStore(tmp_path / "run")
    try:
        assert [c.id for c in store.cases()] == ["conv-1#4", "conv-1#8", "conv-1#9"]
        assert store.cases()[1].query == "And my other one?"
    finally:
        store.close()
