"""Four faults a review found and left alone, each through the command a user types:

1. ``score --from-chat FILE --report DIR`` stored, for every turn, the whole conversation
   before it (quadratic in the conversation's length); a turn now stores what its check read:
   the query and the last ``CONTEXT_CHARS`` characters of earlier context, role and text;
2. ``score --from-traces``: a top-level value that is not an object (a number, a string,
   ``null``, a list of them) was skipped silently; each is now one unreadable value, said,
   and the run exits 1 as for the other unreadable spans;
3. :func:`callscope.runs.calibrate.calibrate_model`, the library call, took no writer lock:
   two processes on one output both sent every request; it now holds the lock ``calibrate
   run`` holds (two real processes, a fake server keeping the first one's request open);
4. a path with a line break, a bidi control or an escape byte, given with ``-o`` or quoted by
   an error, is printed as escapes on one line, never as a second line of its own.

Every expected value is worked out by hand from the inputs written here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeServer
from test_chatlog_scale import TOOLS
from test_run_dir_guards import HAS_BFCL, env, holding_command, write_jsonl
from typer.testing import CliRunner

from callscope.cli import app
from callscope.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from callscope.guard import chatlog
from callscope.guard.record import GUARD_MODE
from callscope.store.run_store import RunStore

#: the console script as a user types it
CALLSCOPE = [sys.executable, "-c", "import sys; from callscope.cli.main import main; main()"]


def callscope(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CALLSCOPE, *args], env=env(tmp_path), capture_output=True, text=True, timeout=300
    )


# ------------------------------------------------ 1. what a chat log's report stores


def _ask(i: int) -> str:
    return f"Weather in city {i:03d}?"  # 20 characters


def _answer(i: int) -> str:
    return f"sunny, 20 C, id {i:04d}"  # 20 characters


def _conversation(turns: int) -> dict[str, Any]:
    """``turns`` x (user asks for ``city i``, assistant calls get_weather("city i"), the tool
    answers): the assistant of turn i is message 3 i + 1, its call stated in its query."""
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        messages.append({"role": "user", "content": _ask(i)})
        args = json.dumps({"city": f"city {i:03d}"})
        call = {"id": str(i), "type": "function", "function": {"name": "get_weather"}}
        call["function"]["arguments"] = args
        messages.append({"role": "assistant", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": str(i), "content": _answer(i)})
    return {"id": "long", "messages": messages, "tools": TOOLS}


def _read(i: int) -> list[dict[str, str]]:
    """What turn i's check reads with a bound of 60 characters, by hand: the query (user i)
    and the newest 60 characters of earlier context, whole messages of 20 each: the tool
    answer of i - 2, user i - 1 and the tool answer of i - 1 (fewer at the start)."""
    earlier: list[dict[str, str]] = []
    for k in range(i):
        earlier += [{"role": "user", "content": _ask(k)}, {"role": "tool", "content": _answer(k)}]
    return [*earlier[-3:], {"role": "user", "content": _ask(i)}]


def test_a_chat_log_report_stores_what_each_turn_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 30
    assert {len(_ask(i)) for i in range(n)} == {len(_answer(i)) for i in range(n)} == {20}
    monkeypatch.setattr(chatlog, "CONTEXT_CHARS", 60)
    log = write_jsonl(tmp_path / "long.jsonl", [_conversation(n)])
    rows_path, rep = tmp_path / "rows.jsonl", tmp_path / "rep"
    res = CliRunner().invoke(
        app, ["score", "--from-chat", str(log), "-o", str(rows_path), "--report", str(rep)]
    )
    assert res.exit_code == EXIT_OK, res.output
    rows = [json.loads(x) for x in rows_path.read_text().splitlines()]
    assert [(r["turn"], r["stage"]) for r in rows] == [(3 * i + 1, 0) for i in range(n)]
    store = RunStore(rep)
    try:
        stored = {
            i: store.attempts("chatlog", f"long#{3 * i + 1}", GUARD_MODE)[0]["messages"]
            for i in range(n)
        }
        finals = {o["case_id"]: o["final"]["stage"] for o in store.outcomes()}
    finally:
        store.close()
    for i in range(n):  # (before: the 3 i + 1 messages before the turn, whole)
        assert stored[i] == _read(i), i
    # linear: at most 4 messages a turn (the whole conversation would be 3 n^2 / 2 = 1,350)
    assert sum(len(m) for m in stored.values()) == 1 + 3 + 4 * (n - 2)
    assert finals == {f"long#{3 * i + 1}": 0 for i in range(n)}  # the verdicts as they were
    page = (rep / "report.html").read_text(encoding="utf-8")
    assert _ask(n - 1) in page  # the case browser still shows each turn's query


# ------------------------------------------ 2. trace values that are not objects

TRACE = "0af7651916cd43dd8448eb211c80319c"
NO_SPAN = "neither a span, a LangSmith run nor an OTLP document"


def _span() -> dict[str, Any]:
    """One OTLP document with one GenAI chat span whose call get_weather(city="Paris") is
    stated in "Weather in Paris?" (passes)."""

    def attr(key: str, value: Any) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": json.dumps(value)}}

    user = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
    call = {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}
    span = {
        "traceId": TRACE,
        "spanId": "1111111111111111",
        "name": "chat",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            attr("gen_ai.input.messages", [user]),
            attr("gen_ai.output.messages", [{"role": "assistant", "parts": [call]}]),
            attr("gen_ai.tool.definitions", TOOLS),
        ],
    }
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def test_trace_values_that_are_not_objects_are_counted_and_said(tmp_path: Path) -> None:
    lines = [json.dumps(_span()), "42", '"a span?"', "null", "[1, {}]", "true"]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows_path = tmp_path / "rows.jsonl"
    done = callscope(tmp_path, "score", "--from-traces", str(path), "-o", str(rows_path))
    said = done.stdout + done.stderr
    assert "Traceback" not in said
    assert done.returncode == EXIT_FAILED, said  # ran; values lost (before: 0, nothing said)
    rows = [json.loads(x) for x in rows_path.read_text().splitlines()]
    assert [(r["trace"], r["name"], r["stage"]) for r in rows] == [(TRACE, "get_weather", 0)]
    expected = [
        f"mixed.jsonl:2: not an object (an int): {NO_SPAN}",
        f"mixed.jsonl:3: not an object (a str): {NO_SPAN}",
        f"mixed.jsonl:4: not an object (null): {NO_SPAN}",
        f"mixed.jsonl:5: [0]: not an object (an int): {NO_SPAN}",
        f"mixed.jsonl:6: not an object (a bool): {NO_SPAN}",
    ]
    shown = said.splitlines()
    for message in expected:
        assert message in shown, message
    # the object {} of line 5 is no span and no document: skipped, as before
    assert "1 tool calls, 5 malformed lines" in said


def test_a_trace_file_of_values_only_exits_1_naming_each(tmp_path: Path) -> None:
    path = tmp_path / "values.json"
    path.write_text('7 "x"', encoding="utf-8")  # two values on one line
    done = callscope(tmp_path, "score", "--from-traces", str(path), "-o", str(tmp_path / "r"))
    said = done.stdout + done.stderr
    assert done.returncode == EXIT_FAILED, said  # (before: exit 2, "holds no model spans")
    assert "holds no model spans" not in said
    assert f"values.json:1: not an object (an int): {NO_SPAN}" in said.splitlines()
    assert f"values.json:1: not an object (a str): {NO_SPAN}" in said.splitlines()
    assert "0 tool calls, 2 malformed lines" in said


# ------------------------------------- 3. the library's calibrate run holds the lock

LIBRARY_RUN = """
import sys
from callscope.errors import RunDirBusy
from callscope.models.base import ModelOptions
from callscope.runs.calibrate import calibrate_model, select_cases
from callscope.runs.experiment import open_model

url, out = sys.argv[1], sys.argv[2]
options = ModelOptions(base_url=url + "/v1", api_key="x", timeout=200, use_cache=False)
model = open_model("openai:a", options)
try:
    calibrate_model(model, out, select_cases(["base"], 1), show_progress=False)
except RunDirBusy as exc:
    print(f"busy: {exc}", file=sys.stderr)
    sys.exit(3)
"""
BUSY = "is being written by another callscope process"


def _library(tmp_path: Path, url: str, out: Path) -> list[str]:
    return [sys.executable, "-c", LIBRARY_RUN, url, str(out)]


@pytest.mark.skipif(not HAS_BFCL, reason="calibrate needs bfcl-eval's cases")
def test_two_processes_calibrating_one_output_through_the_library(tmp_path: Path) -> None:
    out = tmp_path / "cal"
    with FakeServer() as srv, holding_command(srv, tmp_path, _library(tmp_path, srv.url, out)):
        second = subprocess.run(
            _library(tmp_path, srv.url, out),
            env=env(tmp_path),
            capture_output=True,
            text=True,
            timeout=300,
        )
        command = callscope(
            tmp_path, "calibrate", "run", "-m", "openai:a", "--base-url", f"{srv.url}/v1",
            "--categories", "base", "--n", "1", "--no-cache", "--quiet", "-o", str(out),
        )  # fmt: skip
        sent = len(srv.requests)
    assert sent == 1  # neither the second process nor the command sent a request
    assert second.returncode == 3, second.stderr[-3000:]  # RunDirBusy, raised by the library
    assert f"busy: {out} {BUSY}" in second.stderr
    assert command.returncode == EXIT_USAGE, command.stderr[-3000:]  # the same lock
    errors = [line for line in command.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and BUSY in errors[0] and str(out) in errors[0]


# ------------------------------------------- 4. user paths printed as one line

#: a path part with a line break that would print a forged error line, a right-to-left
#: override, an escape sequence and rich markup
HOSTILE = "x\nerror: forged\u202etxt.exe\x1b[2J[/b]"
SHOWN = "x\\x0aerror: forged\\u202etxt.exe\\x1b[2J[/b]"


def _error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


def test_a_missing_input_with_a_line_break_is_one_error_line(tmp_path: Path) -> None:
    missing = tmp_path / (HOSTILE + ".jsonl")
    done = callscope(tmp_path, "score", str(missing))
    assert done.returncode == EXIT_USAGE, done.stderr
    shown = f"error: {tmp_path}/{SHOWN}.jsonl: no such file or directory; check the path"
    assert _error_lines(done.stderr) == [shown]
    assert "\u202e" not in done.stderr and "\x1b" not in done.stderr


def _cases_and_replay(tmp_path: Path) -> tuple[Path, Path]:
    weather = TOOLS[0]["function"]
    case = {"id": "c1", "query": "Weather in Paris?", "functions": [weather]}
    cases = write_jsonl(tmp_path / "cases.jsonl", [case])
    output = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"case_id": "c1", "outputs": [output]}])
    return cases, replay


def test_an_output_folder_with_a_line_break_is_printed_on_one_line(tmp_path: Path) -> None:
    cases, replay = _cases_and_replay(tmp_path)
    out = tmp_path / HOSTILE
    done = callscope(
        tmp_path, "run", str(cases), "-m", f"replay:{replay}", "--quiet", "-o", str(out)
    )
    assert done.returncode == EXIT_OK, done.stderr
    folder = f"{tmp_path}/{SHOWN}"
    assert f"run directory: {folder} (final rows: {folder}/final.jsonl)" in done.stderr
    assert _error_lines(done.stderr) == []  # (before: "error: forged..." on a line of its own)
    assert (out / "final.jsonl").is_file()  # the path itself is the one given


def test_an_output_file_where_a_folder_goes_is_one_error_line(tmp_path: Path) -> None:
    cases, replay = _cases_and_replay(tmp_path)
    out = tmp_path / HOSTILE.replace("/", "|")  # one file, not a folder in a folder
    out.write_text("", encoding="utf-8")
    done = callscope(
        tmp_path, "run", str(cases), "-m", f"replay:{replay}", "--quiet", "-o", str(out)
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    shown = SHOWN.replace("/", "|")
    assert _error_lines(done.stderr) == [
        f"error: {tmp_path}/{shown}: exists and is not a folder; pass a new folder or an "
        "existing run directory (-o)"
    ]


def test_classify_says_where_it_wrote_on_one_line(tmp_path: Path) -> None:
    rows = write_jsonl(tmp_path / "em.jsonl", [{"id": "e1", "emission": "hello"}])
    out = tmp_path / (HOSTILE.replace("/", "|") + ".jsonl")
    done = callscope(tmp_path, "classify", str(rows), "-o", str(out))
    assert done.returncode == EXIT_OK, done.stderr
    assert f"wrote {tmp_path}/{SHOWN.replace('/', '|')}.jsonl" in done.stderr.splitlines()
    assert out.is_file()


EXTERNAL_BFCL = Path(__file__).resolve().parents[2] / "shared" / "external" / "bfcl"


@pytest.mark.skipif(
    not EXTERNAL_BFCL.is_dir() or not HAS_BFCL, reason="BFCL files or bfcl-eval absent"
)
def test_a_panel_of_bfcl_results_says_where_it_wrote_on_one_line(tmp_path: Path) -> None:
    """``calibrate --from-bfcl`` over two models' published results (a panel) names its files
    and its page on one line (a review found this line printing the page's path raw)."""
    out = tmp_path / HOSTILE.replace("/", "|")
    done = callscope(tmp_path, "calibrate", "--from-bfcl", str(EXTERNAL_BFCL), "-o", str(out))
    assert done.returncode == EXIT_OK, done.stderr
    both = done.stdout + done.stderr
    assert _error_lines(both) == []  # (before: "error: forged..." on a line of its own)
    shown = f"{tmp_path}/{SHOWN.replace('/', '|')}"
    assert any(
        line.startswith(f"wrote {shown}/panel-baseline.md")
        and line.endswith(f"{shown}/report.html")
        for line in both.splitlines()
    ), both[-2000:]
    assert (out / "report.html").is_file()


def test_a_nested_hold_closed_after_its_outer_one_leaves_no_lock_claimed(tmp_path: Path) -> None:
    """Holds closed out of order (an outer ``hold_run_dir`` before the one nested in it, as an
    ``ExitStack`` or two generators may close them): the nested exit must not claim again the
    lock the outer exit gave back, or every later hold of this thread would go on without a
    lock while another process writes (a review's finding). Here another process then holds
    the directory, and this thread's next hold is refused."""
    from callscope.errors import RunDirBusy
    from callscope.runs.run_dir_lock import hold_run_dir

    run_dir = tmp_path / "run"
    outer, inner = hold_run_dir(run_dir), hold_run_dir(run_dir)
    outer.__enter__()
    inner.__enter__()
    outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from callscope.store.writer_lock import writer_lock\n"
            f"with writer_lock({str(run_dir)!r}):\n"
            "    print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirBusy), hold_run_dir(run_dir):
            pass
    finally:
        holder.kill()
        holder.wait()
