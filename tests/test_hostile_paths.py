"""Hostile input through every real path (issue 29, items 1-6): ``callscope run`` (both
styles, every loop mode; the ``replay:`` backend and a real local OpenAI-compatible server),
``score``, ``score --from-chat`` and ``report``, each started as a user starts it (a
subprocess), bounded in time. Payload classes: integers too long for Python's int/str
conversion, lone surrogates, 10,000-deep nesting, megabytes of text, terminal escapes.

Each must end in an outcome or in one clear line with the right exit code, and leave a
report that builds. Expected values are worked out from the rules, not read back: a call
whose literal has more than 4,300 digits is a parse failure (so every attempt fails, and
no mode solves the case); a reply nested 10,000 deep is a ``malformed`` backend error (exit
1, an outcome stored with that error); a bad replay row is exit 2 naming file and line.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakeserver import FakeServer, Step, openai_reply

MODES = "direct,binary,structured,gated"
FUNCTION = {
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
}
QUERY = "What is the weather in Oslo for 3 days?"
GOOD = "get_weather(city='Oslo', days=3)"
BIG_OCT = "0o" + "7" * 5000  # 5,000 octal digits: about 4,516 decimal digits
BIG_HEX = "0x" + "f" * 5000
#: every way a Python-style call is found in text, each with a 5,000-digit literal
HUGE_INT_OUTPUTS = {
    "bare": f"get_weather(city='Oslo', days={BIG_OCT})",
    "list": f"[get_weather(city='Oslo', days={BIG_HEX})]",
    "fenced": f"```python\nget_weather(city='Oslo', days={BIG_OCT})\n```",
    "tool_call": f"<tool_call>get_weather(city='Oslo', days={BIG_HEX})</tool_call>",
    "prose": f"I will call get_weather(city='Oslo', days={BIG_OCT}) for you.",
}
SURROGATE = "\udfff"
TIMEOUT = 120


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``callscope ARGS`` in a fresh interpreter, as typed (bounded in time)."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "callscope.cli", *args],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=TIMEOUT,
        env=env,
        cwd=cwd,
    )


def write_lines(path: Path, rows: list[Any]) -> Path:
    """Rows as JSON lines, ASCII-escaped (so a lone surrogate is written as its escape)."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def cases_file(tmp_path: Path, ids: tuple[str, ...] = ("c1",)) -> Path:
    rows = [
        {
            "id": cid,
            "query": QUERY,
            "functions": [FUNCTION],
            "gold": {"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}},
        }
        for cid in ids
    ]
    return write_lines(tmp_path / "cases.jsonl", rows)


def replay_file(tmp_path: Path, output: Any, name: str = "replay.jsonl") -> Path:
    return write_lines(tmp_path / name, [{"case_id": "c1", "outputs": [output] * 3}])


def stored_outcomes(run_dir: Path) -> list[tuple[str, int | None, str | None]]:
    with sqlite3.connect(run_dir / "store.sqlite") as db:
        rows = db.execute("SELECT mode, solved_at, error_kind FROM outcomes ORDER BY mode")
        return [(m, s, e) for m, s, e in rows]


def assert_report_builds(run_dir: Path) -> str:
    done = cli("report", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert not (run_dir / "report.html.tmp").exists()
    return (run_dir / "report.html").read_text(encoding="utf-8")


# ---------------------------------------------------------------- item 1: huge integers


@pytest.mark.parametrize("where", sorted(HUGE_INT_OUTPUTS))
@pytest.mark.parametrize("style", ["native", "prompt"])
def test_a_5000_digit_literal_is_a_parse_failure_in_every_mode(
    tmp_path: Path, where: str, style: str
) -> None:
    """The call cannot be carried as JSON, so the parser rejects it (as it rejects a
    5,000-digit decimal): each of the 4 modes ends unsolved after its 2 attempts, no error."""
    run_dir = tmp_path / "run"
    replay = replay_file(tmp_path, HUGE_INT_OUTPUTS[where])
    done = cli(
        "run", str(cases_file(tmp_path)), "-m", f"replay:{replay}", "--style", style,
        "--modes", MODES, "--max-attempts", "2", "-o", str(run_dir), "--quiet", "--no-cache",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert stored_outcomes(run_dir) == [
        ("binary", None, None),
        ("direct", None, None),
        ("gated", None, None),
        ("structured", None, None),
    ]
    final = [json.loads(line) for line in (run_dir / "final.jsonl").read_text().splitlines()]
    assert {r["mode"] for r in final} == set(MODES.split(","))
    assert all("4300 digits" in (r.get("parse_error") or "") for r in final), final[0]
    assert_report_builds(run_dir)


def test_score_from_chat_with_a_huge_literal_scores_the_row(tmp_path: Path) -> None:
    log = write_lines(
        tmp_path / "chat.jsonl",
        [
            {
                "id": "conv-1",
                "tools": [{"type": "function", "function": FUNCTION}],
                "messages": [
                    {"role": "user", "content": QUERY},
                    {"role": "assistant", "content": HUGE_INT_OUTPUTS["fenced"]},
                    {"role": "user", "content": QUERY},
                    {"role": "assistant", "content": GOOD},
                ],
            }
        ],
    )
    out = tmp_path / "rows.jsonl"
    done = cli("score", "--from-chat", str(log), "-o", str(out), "--report", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # the good call is scored (passes all stages); the huge literal is not a call at all
    assert [r["stage"] for r in rows if r.get("name")] == [0]
    assert (tmp_path / "r" / "report.html").is_file()


# ---------------------------------------------------------------- item 2: lone surrogates


@pytest.mark.parametrize("style", ["native", "prompt"])
def test_a_lone_surrogate_runs_and_the_report_builds(tmp_path: Path, style: str) -> None:
    run_dir = tmp_path / "run"
    output = f"get_weather(city='Oslo{SURROGATE}', days=3)"
    replay = replay_file(tmp_path, output)
    done = cli(
        "run", str(cases_file(tmp_path)), "-m", f"replay:{replay}", "--style", style,
        "--modes", MODES, "--max-attempts", "2", "-o", str(run_dir), "--quiet", "--no-cache",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(stored_outcomes(run_dir)) == 4
    page = assert_report_builds(run_dir)
    assert "Oslo\\udfff" in page  # the surrogate shown as its escape, never dropped


def test_openai_backend_sends_a_lone_surrogate_back_in_every_loop_mode(tmp_path: Path) -> None:
    """The conversation holding the model's surrogate is sent again (attempt 2): it goes as
    its JSON escape and the server reads it back as the same character."""
    run_dir = tmp_path / "run"
    bad = openai_reply(f"get_weather(city='Oslo{SURROGATE}', days=3)")
    with FakeServer() as server:
        server.push(*[Step(body=bad) for _ in range(8)])
        done = cli(
            "run", str(cases_file(tmp_path)), "-m", "openai:m", "--base-url",
            f"{server.url}/v1", "--api-key", "k", "--style", "prompt", "--modes", MODES,
            "--max-attempts", "2", "-o", str(run_dir), "--quiet", "--no-cache",
        )  # fmt: skip
        sent = [r["json"] for r in server.requests]
    assert done.returncode == 0, done.stderr
    assert len(stored_outcomes(run_dir)) == 4
    again = [r for r in sent if r and len(r["messages"]) > 2]
    assert again, "no attempt 2 was sent"
    assert all(SURROGATE in m["content"] for r in again for m in r["messages"][2:3])
    assert_report_builds(run_dir)


# ---------------------------------------------------------------- item 3: deep server replies


def test_a_reply_nested_10000_deep_is_a_malformed_reply_not_a_crash(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    deep = '{"choices": [{"message": {"content": "x", "extra": ' + "[" * 10_000 + "]" * 10_000
    deep += "}}]}"
    with FakeServer() as server:
        server.push(*[Step(body=deep) for _ in range(20)])
        done = cli(
            "run", str(cases_file(tmp_path)), "-m", "openai:m", "--base-url",
            f"{server.url}/v1", "--api-key", "k", "--modes", "direct", "-o", str(run_dir),
            "--quiet", "--no-cache",
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert stored_outcomes(run_dir) == [("direct", None, "malformed")]
    assert_report_builds(run_dir)


# ---------------------------------------------------------------- item 5: bad replay files


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (
            {"case_id": "c1", "output": {"tool_calls": [{"name": "f", "arguments": "DEEP"}]}},
            "nested deeper than 100 levels",
        ),
        ({"case_id": "c1", "output": {"text": GOOD, "latency_s": "slow"}}, "'latency_s'"),
        ({"case_id": "c1", "attempt": "two", "output": GOOD}, "'attempt'"),
    ],
)
def test_a_bad_replay_row_is_one_line_naming_file_and_line(
    tmp_path: Path, row: dict[str, Any], words: str
) -> None:
    replay = tmp_path / "replay.jsonl"
    text = json.dumps(row).replace('"DEEP"', "[" * 10_000 + "]" * 10_000)
    replay.write_text(json.dumps({"case_id": "c0", "output": GOOD}) + "\n" + text + "\n")
    done = cli(
        "run", str(cases_file(tmp_path)), "-m", f"replay:{replay}", "--modes", MODES,
        "-o", str(tmp_path / "run"), "--quiet", "--no-cache",
    )  # fmt: skip
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"{replay}:2:" in done.stderr and words in done.stderr


# ---------------------------------------------------------------- item 6: terminal escapes


def test_ids_from_data_files_never_reach_the_terminal_as_escapes(tmp_path: Path) -> None:
    evil = "conv\x1b]0;owned\x07\x1b[2J\x9b1m"
    log = write_lines(
        tmp_path / "chat.jsonl",
        [
            {
                "id": evil,
                "tools": [{"type": "function", "function": FUNCTION}],
                "messages": [
                    {"role": "user", "content": QUERY},
                    {"role": "assistant", "content": GOOD},
                ],
            },
            "not an object \x1b[2J",
        ],
    )
    done = cli("score", "--from-chat", str(log), "-o", str(tmp_path / "rows.jsonl"))
    assert done.returncode == 1  # one malformed line
    printed = done.stdout + done.stderr
    assert "\x1b" not in printed and "\x9b" not in printed and "\x07" not in printed
    assert "conv\\x1b]0;owned\\x07\\x1b[2J\\x9b1m" in printed

    rows = [{"id": f"row\x1b[2J{i}", "query": QUERY, "functions": [FUNCTION], "output": GOOD}
            for i in range(2)]  # fmt: skip
    rows.append({"id": "bad\x1b]0;x\x07", "query": 5})
    done = cli("score", str(write_lines(tmp_path / "rows.jsonl", rows)))
    printed = done.stdout + done.stderr
    assert done.returncode == 1
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    # stdout is JSON rows: the escape character is written as JSON's \\u001b
    assert "\x1b" not in printed


# ---------------------------------------------------------------- score and chat logs


DEEP = "[" * 10_000 + "]" * 10_000


def test_score_with_every_payload_class(tmp_path: Path) -> None:
    """One malformed line (nested 10,000 deep: exit 1, named by its number), every other row
    scored: 3 MB of prose with the call (the text beyond the parser's 200,000-character cap is
    not read, so the call at its end is not found: an answer of no call), a 5,000-digit literal (a parse
    failure: stage 1), a lone surrogate inside the city (read: the call parses), native
    arguments nested 10,000 deep (rejected: stage 1)."""
    rows = [
        '{"id": "deep", "query": "q", "functions": [], "output": ' + DEEP + "}",
        json.dumps(
            {"id": "mb", "query": QUERY, "functions": [FUNCTION], "output": "x" * 3_000_000 + GOOD}
        ),
        json.dumps({"id": "oct", "query": QUERY, "functions": [FUNCTION],
                    "output": HUGE_INT_OUTPUTS["bare"]}),
        json.dumps({"id": "sur", "query": QUERY, "functions": [FUNCTION],
                    "output": f"get_weather(city='Oslo{SURROGATE}', days=3)"}),
        json.dumps({"id": "nat", "query": QUERY, "functions": [FUNCTION],
                    "output": {"tool_calls": [{"name": "get_weather", "arguments": "DEEP"}]}})
        .replace('"DEEP"', json.dumps(DEEP)),
    ]  # fmt: skip
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = cli("score", str(src), "-o", str(out))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "line 1" in done.stderr
    got = {r["id"]: r for r in map(json.loads, out.read_text().splitlines()) if r.get("id")}
    assert set(got) == {1, "mb", "oct", "sur", "nat"}  # the malformed line: an error row
    assert "nested too deeply" in got[1]["error"]
    assert (got["mb"]["answer"], got["mb"]["parse_error"]) == (
        "abstained",
        "no tool call found in output",
    )
    assert (got["oct"]["stage"], got["nat"]["stage"]) == (1, 1)
    assert "4300 digits" in got["oct"]["parse_error"]
    assert got["sur"]["parse_error"] is None


def test_score_from_chat_with_every_payload_class(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": FUNCTION}]
    lines = [
        json.dumps({"id": "mb", "tools": tools, "messages": [
            {"role": "user", "content": QUERY},
            {"role": "assistant", "content": "x" * 3_000_000},
        ]}),
        '{"id": "deep", "messages": ' + DEEP + "}",
        json.dumps({"id": "sur", "tools": tools, "messages": [
            {"role": "user", "content": QUERY + SURROGATE},
            {"role": "assistant", "content": f"get_weather(city='Oslo{SURROGATE}')"},
        ]}),
        json.dumps({"id": "int", "tools": tools, "messages": [
            {"role": "user", "content": QUERY},
            {"role": "assistant", "content": HUGE_INT_OUTPUTS["list"]},
        ]}),
    ]  # fmt: skip
    log = tmp_path / "chat.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, rep = tmp_path / "rows.jsonl", tmp_path / "rep"
    done = cli("score", "--from-chat", str(log), "-o", str(out), "--report", str(rep))
    assert done.returncode == 1, done.stderr  # the one line nested too deeply
    assert "Traceback" not in done.stderr and "chat.jsonl:2" in done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["conversation"] for r in rows} >= {"sur"}
    assert (rep / "report.html").is_file() and not (rep / "report.html.tmp").exists()
