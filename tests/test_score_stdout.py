"""``callscope score`` with no ``-o`` writes its rows to the terminal: a tool name, a query or
a value holding a C1 control (``\\x9b`` starts an escape sequence on many terminals), a
bidirectional override or a line separator reaches it as a JSON ``\\uXXXX`` escape, never
raw; the rows are the same JSON values as the ``-o`` file's. Through the command a user
types (a subprocess), for rows read from a file and for ``--from-chat``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: the console script as a user types it
CALLSCOPE = [sys.executable, "-c", "import sys; from callscope.cli.main import main; main()"]
#: what a terminal acts on or reorders (the C1 CSI, a right-to-left override, an isolate, the
#: line separator), none of which JSON escapes by itself
HOSTILE = "\x9b31m\u202etxt.exe\u2066\u2028"


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "NO_COLOR": "1", "COLUMNS": "2000"}
    return subprocess.run([*CALLSCOPE, *args], env=env, capture_output=True, timeout=300)


def _rows(tmp_path: Path) -> Path:
    name = f"get{HOSTILE}"
    tool = {"name": name, "parameters": {"type": "object", "properties": {"city": {}}}}
    rows = [
        {
            "id": f"r{HOSTILE}",
            "query": f"weather in Paris {HOSTILE}",
            "functions": [tool],
            "output": json.dumps({"name": name, "arguments": {"city": f"Paris{HOSTILE}"}}),
        },
        {  # a misspelled name: the nearest one is quoted in the reasons and the fix
            "id": "r2",
            "query": "weather in Paris",
            "functions": [tool],
            "output": json.dumps({"name": "get", "arguments": {"city": "Paris"}}),
        },
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _no_raw(out: bytes) -> None:
    text = out.decode("utf-8")
    for ch in HOSTILE:
        if not ch.isascii() or ch == "\x9b":
            assert ch not in text, f"raw U+{ord(ch):04X} on stdout"


def test_score_rows_to_stdout_carry_no_raw_terminal_controls(tmp_path: Path) -> None:
    rows = _rows(tmp_path)
    shown = _run(tmp_path, "score", str(rows))
    filed = _run(tmp_path, "score", str(rows), "-o", str(tmp_path / "scored.jsonl"))
    assert shown.returncode == filed.returncode == 0, shown.stderr
    _no_raw(shown.stdout)
    on_screen = [json.loads(line) for line in shown.stdout.decode().split("\n") if line]
    in_file = [
        json.loads(line)
        for line in (tmp_path / "scored.jsonl").read_text("utf-8").split("\n")
        if line
    ]
    assert on_screen == in_file
    assert on_screen[0]["id"] == f"r{HOSTILE}"  # the same value, escaped only in its text
    assert on_screen[1]["stage"] == 1  # the misspelled name fails stage 1, its fix names it
    # the file keeps UTF-8 as written (a writer of data, not of a terminal)
    assert "\u202e" in (tmp_path / "scored.jsonl").read_text("utf-8")


def test_score_from_chat_to_stdout_carries_no_raw_terminal_controls(tmp_path: Path) -> None:
    name = f"get{HOSTILE.rstrip()}"  # (a call's name is read stripped of white space)
    tool = {"type": "function", "function": {"name": name, "parameters": {}}}
    call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}
    line = {
        "request": {"messages": [{"role": "user", "content": f"hi {HOSTILE}"}], "tools": [tool]},
        "response": {"choices": [{"message": {"role": "assistant", "tool_calls": [call]}}]},
    }
    log = tmp_path / "chat.jsonl"
    log.write_text(json.dumps(line) + "\n", encoding="utf-8")
    shown = _run(tmp_path, "score", "--from-chat", str(log))
    assert shown.returncode == 0, shown.stderr
    _no_raw(shown.stdout)
    rows = [json.loads(x) for x in shown.stdout.decode().split("\n") if x.startswith("{")]
    assert len(rows) == 1 and rows[0]["stage"] == 0
