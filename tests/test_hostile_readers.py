"""Hostile results files through every results reader (issue 41, item 2), each through the
command a user types (a subprocess), except ``case_records``, which no command reads.

Three payloads, each what a real file can hold: a value nested 100,000 deep (``json`` alone
raises ``RecursionError`` on it), an integer of 5,000 digits (over Python's 4,300-digit
int/str limit) and a lone surrogate (``"\\ud800"``, valid JSON). The first two are refused by
the one reader (:func:`callscope.core.jsonl.loads_bounded`) and must end in one line naming
``file:line`` (exit 2 where the whole file is unreadable, else a recorded bad row); the
surrogate is read like any text. The expected lines are counted from the files as written
here, not read back from callscope.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from callscope.benchmarks.case_records import read_case_records
from tests.test_tau2 import write_airline

DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "7" * 5_000
#: a JSON string holding a lone surrogate (the escape as a file has it)
SURROGATE = '"Oslo \\ud800"'
TOO_DEEP = "JSON nested deeper than 100 levels"
TOO_LONG = "Exceeds the limit (4300 digits)"
TIMEOUT = 180
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``callscope ARGS`` in a fresh interpreter, wide enough that no line wraps."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "2000"}
    return subprocess.run(
        [sys.executable, "-m", "callscope.cli", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        check=False,
    )


def lines_file(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def assert_no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, done.stderr


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The only non-blank line on stderr (a user error is one line)."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


# ------------------------------------------------------------------ classify: emission rows


def test_classify_records_each_unreadable_row_with_its_line(tmp_path: Path) -> None:
    src = lines_file(
        tmp_path / "em.jsonl",
        [
            json.dumps({"id": "ok", "emission": "Which city do you mean?"}),
            '{"id": "deep", "emission": ' + DEEP + "}",
            '{"id": "huge", "emission": ' + HUGE + "}",
            '{"id": "sur", "emission": ' + SURROGATE + "}",
        ],
    )
    out = tmp_path / "out.jsonl"
    done = cli("classify", str(src), "-o", str(out))
    assert_no_traceback(done)
    assert done.returncode == 1  # malformed rows: exit 1 (architecture.md, exit codes)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r.get("line") for r in rows if "error" in r] == [2, 3]
    assert TOO_DEEP in rows[1]["error"] and TOO_LONG in rows[2]["error"]
    assert (rows[0]["class"], rows[3]["id"], rows[3]["class"]) == ("ASK", "sur", "OTHER")


# ------------------------------------------------------------------ case records (library)


def test_case_records_name_file_and_line_of_each_unreadable_row(tmp_path: Path) -> None:
    good = {"id": "p1", "category": "base", "turn_emissions": [["[cd(folder='a')]"]]}
    path = lines_file(
        tmp_path / "cases.jsonl",
        [
            json.dumps(good),
            '{"id": "deep", "category": "base", "turn_emissions": ' + DEEP + "}",
            '{"id": "huge", "category": "base", "turn_emissions": [[' + HUGE + "]]}",
            json.dumps(good | {"id": "sur"}).replace("cd(folder='a')", "\\ud800"),
        ],
    )
    records, problems = read_case_records(path)
    assert [r.id for r in records] == ["p1", "sur"]
    assert records[1].turn_emissions == [["[\ud800]"]]
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:2", f"{path}:3"]
    assert TOO_DEEP in problems[0] and TOO_LONG in problems[1]


# ------------------------------------------------------------------ BFCL result trees


def test_calibrate_from_bfcl_records_unreadable_result_lines(tmp_path: Path) -> None:
    pytest.importorskip("bfcl_eval")
    results = tmp_path / "result"
    path = lines_file(
        results / "org_m-FC" / "multi_turn" / "BFCL_v4_multi_turn_base_result.json",
        [
            json.dumps({"id": "multi_turn_base_0", "result": [["[cd(folder='document')]"]]}),
            '{"id": "multi_turn_base_1", "result": ' + DEEP + "}",
            '{"id": "multi_turn_base_2", "result": [[' + HUGE + "]]}",
            '{"id": "multi_turn_base_3", "result": [[' + SURROGATE + "]]}",
        ],
    )
    out = tmp_path / "out"
    done = cli("calibrate", "from-bfcl", str(results), "-o", str(out))
    assert_no_traceback(done)
    # the file was read, its bad lines recorded, and the run exits 1: input was lost
    assert done.returncode == 1, done.stderr
    data = json.loads((out / "calibration-from-bfcl.json").read_text(encoding="utf-8"))
    problems = data["source"]["problems"]
    assert problems[:2] == [
        f"{path}:2: malformed line skipped ({TOO_DEEP})",
        f"{path}:3: malformed line skipped ({TOO_LONG} for integer string conversion: value "
        "has 5000 digits; use sys.set_int_max_str_digits() to increase the limit)",
    ]
    assert f"{path}:2: malformed line skipped" in done.stderr
    assert sum(r["n"] for r in data["rows"]) == 2  # base_0 and the surrogate's base_3


# ------------------------------------------------------------------ tau2-bench results


def _tau2_file(tmp_path: Path, payload: str) -> tuple[Path, int]:
    """An airline results file (pretty-printed) with ``payload`` as one user message's
    content, and the line the payload is on."""
    plain = write_airline(tmp_path / "plain.json")
    data = json.loads(plain.read_text(encoding="utf-8"))
    data["simulations"][0]["messages"][0]["content"] = "PAYLOAD"
    text = json.dumps(data, indent=1)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if '"PAYLOAD"' in t)
    path = tmp_path / "results.json"
    path.write_text(text.replace('"PAYLOAD"', payload), encoding="utf-8")
    return path, line


@pytest.mark.parametrize(
    ("payload", "words"), [(DEEP, TOO_DEEP), (HUGE, TOO_LONG)], ids=["deep", "huge_int"]
)
def test_calibrate_from_tau2_unreadable_file_is_one_line_naming_file_and_line(
    tmp_path: Path, payload: str, words: str
) -> None:
    path, line = _tau2_file(tmp_path, payload)
    done = cli("calibrate", "from-tau2", str(path), "-o", str(tmp_path / "out"))
    assert_no_traceback(done)
    assert done.returncode == 2
    assert one_line(done).startswith(f"error: {path}:{line}: cannot read ({words}")


def test_calibrate_from_tau2_reads_a_lone_surrogate(tmp_path: Path) -> None:
    path, _ = _tau2_file(tmp_path, SURROGATE)
    out = tmp_path / "out"
    done = cli("calibrate", "from-tau2", str(path), "-o", str(out))
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    plain = cli(
        "calibrate", "from-tau2", str(write_airline(tmp_path / "p.json")), "-o", str(tmp_path / "p")
    )
    ours = json.loads((out / "tau2-diagnostics.json").read_text(encoding="utf-8"))
    theirs = json.loads((tmp_path / "p" / "tau2-diagnostics.json").read_text(encoding="utf-8"))
    assert plain.returncode == 0 and ours["rows"] == theirs["rows"]  # a user message's text


# ------------------------------------------------------------------ chat logs


def test_score_from_chat_names_file_and_line_of_each_unreadable_line(tmp_path: Path) -> None:
    def conv(cid: str, content: Any) -> dict[str, Any]:
        return {
            "id": cid,
            "tools": TOOLS,
            "messages": [
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": content},
            ],
        }

    log = lines_file(
        tmp_path / "chat.jsonl",
        [
            json.dumps(conv("ok", "get_weather(city='Oslo')")),
            json.dumps(conv("deep", "DEEP")).replace('"DEEP"', DEEP),
            json.dumps(conv("huge", "HUGE")).replace('"HUGE"', HUGE),
            json.dumps(conv("sur", "get_weather(city='SUR')")).replace("SUR", "Oslo \\ud800"),
        ],
    )
    out = tmp_path / "rows.jsonl"
    done = cli("score", "--from-chat", str(log), "-o", str(out))
    assert_no_traceback(done)
    assert done.returncode == 1
    bad = [line for line in done.stderr.splitlines() if "chat.jsonl:" in line]
    assert len(bad) == 2
    assert "chat.jsonl:2:" in bad[0] and "nested too deeply" in bad[0]
    assert "chat.jsonl:3:" in bad[1] and TOO_LONG in bad[1]
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["conversation"] for r in rows} == {"ok", "sur"}


# ------------------------------------------------------------------ traces


@pytest.mark.parametrize(
    ("payload", "words"), [(DEEP, TOO_DEEP), (HUGE, TOO_LONG)], ids=["deep", "huge_int"]
)
def test_score_from_traces_names_file_and_line_of_an_unreadable_value(
    tmp_path: Path, payload: str, words: str
) -> None:
    run = {
        "run_type": "llm",
        "id": "r1",
        "trace_id": "t1",
        "inputs": {"messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": TOOLS},
        "outputs": {"choices": [{"message": {"role": "assistant", "content": "PAYLOAD"}}]},
    }
    spans = lines_file(
        tmp_path / "runs.jsonl",
        [json.dumps(run), json.dumps(run | {"id": "r2"}).replace('"PAYLOAD"', payload)],
    )
    done = cli("score", "--from-traces", str(spans), "-o", str(tmp_path / "rows.jsonl"))
    assert_no_traceback(done)
    assert done.returncode == 1
    assert any(line.startswith("runs.jsonl:2: " + words) for line in done.stderr.splitlines())


def test_score_from_traces_reads_a_lone_surrogate(tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather"}}
    call["function"]["arguments"] = json.dumps({"city": "Oslo \ud800"})
    run = {
        "run_type": "llm",
        "id": "r1",
        "trace_id": "t1",
        "inputs": {"messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": TOOLS},
        "outputs": {"choices": [{"message": {"role": "assistant", "tool_calls": [call]}}]},
    }
    spans = lines_file(tmp_path / "runs.jsonl", [json.dumps(run)])
    out = tmp_path / "rows.jsonl"
    done = cli("score", "--from-traces", str(spans), "-o", str(out))
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert row["conversation"] == "t1" and row["name"] == "get_weather"


# ------------------------------------------------------------------ replay files


@pytest.mark.parametrize(
    ("payload", "words"), [(DEEP, TOO_DEEP), (HUGE, TOO_LONG)], ids=["deep", "huge_int"]
)
def test_run_replay_unreadable_row_is_one_line_naming_file_and_line(
    tmp_path: Path, payload: str, words: str
) -> None:
    cases = lines_file(
        tmp_path / "cases.jsonl",
        [
            json.dumps(
                {"id": "c1", "query": "Weather in Oslo?", "functions": [TOOLS[0]["function"]]}
            )
        ],
    )
    replay = lines_file(
        tmp_path / "replay.jsonl",
        [
            json.dumps({"case_id": "c0", "output": "get_weather(city='Oslo')"}),
            '{"case_id": "c1", "output": ' + payload + "}",
        ],
    )
    done = cli(
        "run", str(cases), "-m", f"replay:{replay}", "--modes", "direct",
        "-o", str(tmp_path / "run"), "--quiet", "--no-cache",
    )  # fmt: skip
    assert_no_traceback(done)
    assert done.returncode == 2
    line = one_line(done)
    assert f"{replay}:2:" in line and words in line


def test_run_replay_reads_a_lone_surrogate(tmp_path: Path) -> None:
    cases = lines_file(
        tmp_path / "cases.jsonl",
        [
            json.dumps(
                {"id": "c1", "query": "Weather in Oslo?", "functions": [TOOLS[0]["function"]]}
            )
        ],
    )
    replay = lines_file(
        tmp_path / "replay.jsonl",
        ['{"case_id": "c1", "output": "get_weather(city=\'Oslo \\ud800\')"}'],
    )
    done = cli(
        "run", str(cases), "-m", f"replay:{replay}", "--modes", "direct",
        "-o", str(tmp_path / "run"), "--quiet", "--no-cache",
    )  # fmt: skip
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
