"""The CLI under attack (issue 39 items 8, 9, 12 and the ``--from-traces DIR`` exit code),
through the real ``callscope`` command in a subprocess: inputs that never end, JSON nested
too deep to read, and names carrying terminal escape sequences. Each run is bounded in time
and in memory (an address-space limit), so a regression fails instead of filling the
machine."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import random_words

CALLSCOPE = [sys.executable, "-c", "from callscope.cli.main import main; main()"]
MEMORY_LIMIT = 3 * 1024**3  # the address space a command may take (a run needs < 1 GiB)
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
ESCAPE = "\x1b]0;pwn\x07"  # retitles a terminal window; BEL ends it


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def callscope(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*CALLSCOPE, *args],
        capture_output=True,
        timeout=timeout,
        preexec_fn=_limit_memory,
        env={**os.environ, "COLUMNS": "200"},
    )


# --------------------------------------------------------------------------- item 8


@pytest.mark.parametrize(
    "how", [["score"], ["score", "--from-chat"], ["score", "--from-traces"]], ids=" ".join
)
def test_a_device_that_never_ends_is_refused_in_one_line(how: list[str]) -> None:
    r = callscope(*how, "/dev/zero", timeout=30)
    err = r.stderr.decode()
    assert r.returncode == 2, err[-500:]
    assert "/dev/zero is not a regular file" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_an_endless_line_in_a_regular_file_is_that_lines_error_in_bounded_memory(
    tmp_path: Path,
) -> None:
    """100 MiB without a newline (a sparse file: no disk used) between two good rows: read in
    pieces and dropped past 64 Mi characters, under the 3 GiB address-space limit (before:
    the whole line held as one string, a ``MemoryError``). 100 MiB, not the 2 GiB it once
    was: a file over the readers' one bound, 512 MiB, is refused whole (issue 47 point 12,
    ``test_attack_round3``)."""
    functions = [t["function"] for t in TOOLS]
    row = {"id": "r", "query": "order A-1", "functions": functions, "output": "no call"}
    rows = tmp_path / "rows.jsonl"
    with rows.open("wb") as fh:
        fh.write(json.dumps(row).encode() + b"\n")
        fh.truncate(fh.tell() + 100 * 1024**2)
        fh.seek(0, os.SEEK_END)
        fh.write(b"\n" + json.dumps(row).encode() + b"\n")
    r = callscope("score", str(rows), "-o", str(tmp_path / "out.jsonl"), timeout=120)
    err = r.stderr.decode()
    assert r.returncode == 1, err[-2000:]  # ran; one row malformed
    assert "line 2 is over 67108864 characters" in err
    assert "Traceback" not in err and "MemoryError" not in err
    out = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(out) == 3 and "error" in out[1] and "error" not in out[0]


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)  # no writer: opening it to read would block forever
    for how in (["score"], ["score", "--from-chat"], ["score", "--from-traces"]):
        r = callscope(*how, str(fifo), timeout=30)
        assert r.returncode == 2, (how, r.stderr[-500:])
        assert b"is not a regular file" in r.stderr


# --------------------------------------------------------------------------- item 9 + also


def test_traces_nested_100000_deep_are_an_unreadable_file_not_a_traceback(
    tmp_path: Path,
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    attr = tmp_path / "attr.json"  # a span attribute holding JSON text nested as deep
    span = {
        "traceId": "t1",
        "spanId": "s1",
        "name": "chat",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": "[" * 100_000}},
        ],
    }
    attr.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    r = callscope("score", "--from-traces", str(deep), "-o", str(tmp_path / "rows.jsonl"))
    err = r.stderr.decode()
    assert r.returncode == 1, err[-2000:]  # ran; one file unreadable
    assert "deep.json" in err and "nested deeper than 100 levels" in err
    assert "Traceback" not in err
    r = callscope("score", "--from-traces", str(attr), "-o", str(tmp_path / "rows.jsonl"))
    assert "Traceback" not in r.stderr.decode() and r.returncode in (0, 1, 2)


def test_a_folder_given_as_traces_exits_2_as_score_does(tmp_path: Path) -> None:
    plain = callscope("score", str(tmp_path))
    traces = callscope("score", "--from-traces", str(tmp_path))
    chat = callscope("score", "--from-chat", str(tmp_path))
    assert (plain.returncode, traces.returncode, chat.returncode) == (2, 2, 2)
    assert f"{tmp_path} is a folder; pass a file".encode() in traces.stderr


# --------------------------------------------------------------------------- item 12


def test_escape_bytes_in_a_model_name_never_reach_the_terminal_or_the_files(
    tmp_path: Path,
) -> None:
    def tc(order: str) -> dict:
        fn = {"name": "get_order", "arguments": json.dumps({"order_id": order})}
        return {"role": "assistant", "content": None, "tool_calls": [{"id": "t", "function": fn}]}

    conversation = {
        "id": "conv" + ESCAPE,
        "model": "model" + ESCAPE,
        "tools": TOOLS,
        "messages": [
            {"role": "user", "content": "Where is order A-1234?"},
            tc("A-1234"),
            {"role": "tool", "tool_call_id": "t", "content": "shipped"},
            {"role": "user", "content": "And the other one?"},
            tc("B-9999"),
        ],
    }
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(conversation) + "\n")
    rep = tmp_path / "rep"
    scored = callscope("score", "--from-chat", str(log), "--report", str(rep), timeout=300)
    assert scored.returncode == 0, scored.stderr[-2000:]
    report = callscope("report", str(rep), timeout=300)
    assert report.returncode == 0, report.stderr[-2000:]
    written = [p for p in rep.rglob("*") if p.suffix in (".md", ".csv", ".tex", ".html", ".txt")]
    assert any(p.suffix == ".csv" for p in written) and (rep / "report.html") in written
    assert b"\\x1b]0;pwn\\x07" in (rep / "report.html").read_bytes()  # shown, escaped
    tex = b"".join(p.read_bytes() for p in written if p.suffix == ".tex")
    assert b"\\textbackslash{}x1b" in tex  # LaTeX quotes the escape's backslash its own way
    for out in (scored.stdout, scored.stderr, report.stdout, report.stderr):
        assert b"\x1b" not in out and b"\x07" not in out
    for path in written:
        data = path.read_bytes()
        assert b"\x1b" not in data and b"\x07" not in data, path


# --------------------------------------------------------------------------- issue 49


def test_a_long_value_inside_a_long_run_of_its_period_is_scored_in_seconds(tmp_path) -> None:
    """A model's 100,000-character value that occurs 900,001 times inside one 1,000,000-
    character word of the request (never at word boundaries) is scored, and so is the next
    row: each occurrence is tested in one linear scan (``str.find`` from each occurrence
    compared the whole value again: about 3.4 minutes for this row)."""
    tools = [{"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}}, "required": ["city"]}}]  # fmt: skip
    value, run = "x" * 100_000, "x" * 1_000_000
    rows = tmp_path / "rows.jsonl"
    with rows.open("w", encoding="utf-8") as fh:
        for rid, query in (("long-run", f"Weather in {run}?"), ("oslo", "Weather in Oslo?")):
            city = value if rid == "long-run" else "Oslo"
            output = json.dumps({"name": "get_weather", "arguments": {"city": city}})
            fh.write(json.dumps({"id": rid, "query": query, "functions": tools,
                                 "output": output}) + "\n")  # fmt: skip
    out = tmp_path / "scored.jsonl"
    r = callscope("score", str(rows), "-o", str(out), timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-500:]
    scored = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    # the value is no word of the request, nor a slip of one: a hard drift; Oslo is stated
    assert [(s["id"], s["stage"], s["calls"][0]["kinds"]) for s in scored] == [
        ("long-run", 3, ["hard"]),
        ("oslo", 0, []),
    ]


def test_a_long_argument_in_a_long_conversation_is_scored_in_seconds(tmp_path) -> None:
    """A 16,000-character argument the request does not state, in a 160,000-character
    request: rapidfuzz's PartialRatio of the two took minutes (23 s at 10,000 in 100,000);
    over ``MAX_RATIO_WORK`` it is not aligned (PartialRatio 0: h = 1, a hard drift)."""
    tools = [{"name": "write_file", "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"]}}]  # fmt: skip
    content, query = random_words(49, 16_000), "Write it to out.txt. " + random_words(50, 160_000)
    output = json.dumps(
        {"name": "write_file", "arguments": {"path": "out.txt", "content": content}}
    )
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "long", "query": query, "functions": tools,
                                "output": output}) + "\n", encoding="utf-8")  # fmt: skip
    out = tmp_path / "scored.jsonl"
    r = callscope("score", str(rows), "-o", str(out), timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-500:]
    scored = json.loads(out.read_text(encoding="utf-8"))
    # the path is stated (h 0), the content not (h 1): VHR 0.5; its PartialRatio 0: QSLO 0
    assert (scored["stage"], scored["calls"][0]["kinds"], scored["vhr"], scored["qslo"]) == (
        3, ["hard"], 0.5, 0.0,
    )  # fmt: skip
