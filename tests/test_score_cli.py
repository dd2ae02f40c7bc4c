"""Independent tests of ``callscope score IN.jsonl [-o OUT.jsonl]`` and score_row/summarize."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from callscope.saag.score import score_row, summarize

BASE_KEYS = {
    "id",
    "stage",
    "fnem",
    "ncs",
    "rpr",
    "pds",
    "spr",
    "avem",
    "qslo",
    "vhr",
    "nearest",
    "missing",
    "drifted",
    "spurious",
    "fix",
    "parse_error",
    "grounding",
    "grounded",
    # issue 28: the answer is the unit (what it is, and each call's verdict by position)
    "answer",
    "calls",
}
GOLD_KEYS = {"name_match", "arg_precision", "arg_recall", "arg_f1", "solved"} | {
    # issue 28: the answer's extrinsic metrics over its matched calls
    "calls_made",
    "calls_expected",
    "missing_calls",
    "extra_calls",
    "name_precision",
    "name_recall",
    "name_f1",
    "answer_arg_precision",
    "answer_arg_recall",
    "answer_arg_f1",
    "answer_solved",
    "matched",
}

TIP = [
    {
        "name": "calculate_tip",
        "parameters": {
            "type": "object",
            "properties": {"bill_amount": {"type": "number"}, "tip_percentage": {"type": "number"}},
            "required": ["bill_amount", "tip_percentage"],
        },
    },
    {
        "name": "get_definition",
        "parameters": {
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        },
    },
]
Q = "What is the tip for a bill of $84.50 if I want to leave 15 percent?"
GOLD = {"name": "calculate_tip", "arguments": {"bill_amount": 84.5, "tip_percentage": 15}}


def good_rows() -> list[dict[str, Any]]:
    return [
        {  # passes everything, with gold
            "id": "pass",
            "query": Q,
            "functions": TIP,
            "output": '<tool_call>{"name": "calculate_tip", "arguments": '
            '{"bill_amount": 84.5, "tip_percentage": 15}}</tool_call>',
            "gold": GOLD,
        },
        {  # wrong name, object output, no gold
            "id": 7,
            "query": Q,
            "functions": TIP,
            "output": {"name": "compute_tip", "arguments": {"bill_amount": 84.5}},
        },
        {  # unparseable text, with gold
            "id": "noparse",
            "query": Q,
            "functions": TIP,
            "output": "I am not sure what to do.",
            "gold": GOLD,
        },
        {  # numeric hallucination, passes name; gold with other values
            "id": "num",
            "query": Q,
            "functions": TIP,
            "output": '{"name": "calculate_tip", "arguments": {"bill_amount": 85, '
            '"tip_percentage": 15}}',
            "gold": GOLD,
        },
    ]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("callscope")
    cmd = [exe] if exe else [sys.executable, "-m", "callscope.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120)


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def read_out(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


# --------------------------------------------------------------------------- score_row


def test_score_row_values_for_good_rows() -> None:
    out = [score_row(r) for r in good_rows()]
    passed, wrong, noparse, num = out
    assert set(passed) == BASE_KEYS | GOLD_KEYS
    assert (passed["stage"], passed["fnem"], passed["avem"], passed["vhr"]) == (0, 1, 1.0, 0.0)
    assert passed["fix"] is None and passed["parse_error"] is None
    assert (passed["name_match"], passed["arg_f1"], passed["solved"]) == (True, 1.0, True)

    assert set(wrong) == BASE_KEYS
    assert wrong["id"] == 7
    assert (wrong["stage"], wrong["fnem"], wrong["nearest"]) == (1, 0, "calculate_tip")
    assert wrong["rpr"] is None and wrong["fix"].startswith('Function name "compute_tip"')

    assert (noparse["stage"], noparse["fnem"], noparse["ncs"]) == (1, -1, None)
    assert isinstance(noparse["parse_error"], str) and noparse["parse_error"]
    assert (noparse["name_match"], noparse["arg_precision"], noparse["solved"]) == (
        False,
        0.0,
        False,
    )

    assert (num["stage"], num["avem"], num["vhr"]) == (3, 0.5, 0.5)
    assert (num["name_match"], num["arg_precision"], num["solved"]) == (True, 0.5, False)


def test_solved_needs_a_full_pass_and_the_gold_name_only() -> None:
    row = good_rows()[0]
    other_values = {"name": "calculate_tip", "arguments": {"bill_amount": 1, "tip_percentage": 2}}
    out = score_row({**row, "gold": other_values})
    assert out["stage"] == 0 and out["arg_f1"] == 0.0 and out["solved"] is True
    out = score_row({**row, "gold": {"name": "get_definition", "arguments": {}}})
    assert out["stage"] == 0 and out["solved"] is False


def test_score_diagnoses_every_call_of_an_answer() -> None:
    """Issue 28: every call is diagnosed (this test pinned the old blind spot: only the first
    call was). ``word='x'`` is stated nowhere in the request, so the second call fails
    stage 3 whichever its position; against the one gold call the tip call is matched in
    either order, and the extra call keeps the answer from being solved."""
    row = {
        **good_rows()[0],
        "output": "[calculate_tip(bill_amount=84.5, tip_percentage=15), get_definition(word='x')]",
    }
    out = score_row(row)
    assert out["stage"] == 3 and [c["stage"] for c in out["calls"]] == [0, 3]
    assert [c["name"] for c in out["calls"]] == ["calculate_tip", "get_definition"]
    assert out["fix"].startswith("Call 2 (get_definition): ")
    assert (out["calls_made"], out["calls_expected"], out["extra_calls"]) == (2, 1, 1)
    assert out["matched"] == [[0, 0]] and out["answer_solved"] is False
    assert out["name_match"] is True and out["solved"] is False  # the answer did not pass
    row["output"] = "[get_definition(word='x'), calculate_tip(bill_amount=84.5, tip_percentage=15)]"
    out = score_row(row)
    assert out["stage"] == 3 and [c["stage"] for c in out["calls"]] == [3, 0]
    assert out["matched"] == [[1, 0]] and out["name_match"] is True


@pytest.mark.parametrize(
    "row",
    [
        {"id": 1, "functions": TIP, "output": "x"},  # no query
        {"id": 2, "query": 5, "functions": TIP, "output": "x"},
        {"id": 3, "query": "q", "functions": {"name": "f"}, "output": "x"},
        {"id": 4, "query": "q", "functions": [{"noname": 1}], "output": "x"},
        {"id": 5, "query": "q", "functions": TIP},  # no output
        {"id": 6, "query": "q", "functions": TIP, "output": "x", "gold": "calculate_tip"},
        {"query": "q", "functions": TIP, "output": "x"},  # no id
    ],
)
def test_malformed_rows_give_an_error_row(row: dict[str, Any]) -> None:
    out = score_row(row)
    assert set(out) == {"id", "error"}
    assert out["id"] == row.get("id")
    assert isinstance(out["error"], str) and out["error"]


def test_summarize_counts_and_means() -> None:
    rows = [score_row(r) for r in good_rows()] + [{"id": "bad", "error": "x"}]
    s = summarize(rows)
    assert (s.rows, s.errors) == (5, 1)
    assert dict(s.stages) == {0: 1, 1: 2, 3: 1}
    # FNEM's mean is the rate of FNEM = 1: the unparsed row's -1 counts as 0, never as -1
    assert s.counts["fnem"] == 4 and s.means["fnem"] == pytest.approx((1 + 0 + 0 + 1) / 4)
    assert s.counts["vhr"] == 2 and s.means["vhr"] == pytest.approx(0.25)
    assert s.counts["solved"] == 3 and s.means["solved"] == pytest.approx(1 / 3)


# --------------------------------------------------------------------------- the CLI


def test_cli_good_and_malformed_rows(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in good_rows()]
    lines.insert(1, "{not json")  # line 2
    lines.append("")  # blank lines are skipped
    lines.append(json.dumps({"id": "nq", "functions": TIP, "output": "x"}))
    lines.append(
        json.dumps({"id": "nf", "query": "q", "functions": "calculate_tip", "output": "x"})
    )
    lines.append("[1, 2, 3]")
    lines.append(json.dumps({"id": "last", "query": Q, "functions": TIP, "output": None}))
    inp = write_lines(tmp_path / "in.jsonl", lines)
    outp = tmp_path / "out.jsonl"
    res = cli("score", str(inp), "-o", str(outp))
    assert res.returncode != 0, res.stderr
    out = read_out(outp)
    assert len(out) == 9
    assert [r["id"] for r in out if "error" not in r] == ["pass", 7, "noparse", "num", "last"]
    errors = [r for r in out if "error" in r]
    assert len(errors) == 4
    assert [r["id"] for r in errors[1:3]] == ["nq", "nf"]
    for r in errors:
        assert set(r) == {"id", "error"} and r["error"]
    by_id = {r["id"]: r for r in out if "error" not in r}
    assert set(by_id["pass"]) == BASE_KEYS | GOLD_KEYS
    assert set(by_id[7]) == BASE_KEYS
    assert set(by_id["last"]) == BASE_KEYS
    # no output and no gold: an empty answer, neither a stage-1 failure (issue 28) nor a
    # pass (issue 36): stage null
    assert (by_id["last"]["answer"], by_id["last"]["stage"], by_id["last"]["fnem"]) == (
        "empty",
        None,
        None,
    )
    assert by_id["pass"]["solved"] is True
    assert "callscope score" in res.stdout + res.stderr  # summary table printed


def test_cli_exit_zero_and_stdout_when_all_rows_are_good(tmp_path: Path) -> None:
    inp = write_lines(tmp_path / "in.jsonl", [json.dumps(r) for r in good_rows()])
    res = cli("score", str(inp))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert [r["id"] for r in rows] == ["pass", 7, "noparse", "num"]
    assert [r["stage"] for r in rows] == [0, 1, 1, 3]
    summary = res.stderr
    assert "callscope score" in summary and "passed all" in summary
    for metric in ("FNEM", "AVEM", "VHR", "arg_f1", "solved"):
        assert metric in summary


def test_cli_survives_deeply_nested_arguments(tmp_path: Path) -> None:
    """Arguments nested 500 deep once raised RecursionError out of score_row and killed the
    CLI (fixed in 5855e75); every row must still come out."""
    deep = '{"name": "calculate_tip", "arguments": {"bill_amount": ' + "[" * 500 + "1"
    deep += "]" * 500 + ', "tip_percentage": 15}}'
    rows = [good_rows()[0], {"id": "deep", "query": Q, "functions": TIP, "output": deep}]
    inp = write_lines(tmp_path / "in.jsonl", [json.dumps(r) for r in rows])
    outp = tmp_path / "out.jsonl"
    res = cli("score", str(inp), "-o", str(outp))
    assert "Traceback" not in res.stderr
    assert outp.exists() and len(read_out(outp)) == 2


def test_cli_accepts_a_utf8_bom(tmp_path: Path) -> None:
    """A byte-order mark at the start of the file is not a malformed row."""
    inp = tmp_path / "in.jsonl"
    inp.write_text("\ufeff" + json.dumps(good_rows()[0]) + "\n", encoding="utf-8")
    res = cli("score", str(inp))
    assert res.returncode == 0, res.stderr


def test_a_schema_open_to_more_arguments_takes_them(tmp_path: Path) -> None:
    """``callscope score`` on a tool whose parameter schema says ``additionalProperties``:
    an argument outside ``properties`` is not spurious (stage 2 passes) and is grounded like
    any other in stage 3 (Rome stated passes, Tokyo unstated is hard); a near miss of a
    declared name is still drifted; the same call against the schema without the keyword
    is spurious, as the SAAG rule says (each row was stage 2, spurious, before)."""
    q = "Find flights from Paris to Rome."

    def row(rid: str, extra: Any, args: dict[str, str]) -> str:
        params: dict[str, Any] = {"type": "object", "properties": {"origin": {"type": "string"}}}
        if extra is not None:
            params["additionalProperties"] = extra
        fn = [{"name": "search", "parameters": params}]
        output = json.dumps({"name": "search", "arguments": args})
        return json.dumps({"id": rid, "query": q, "functions": fn, "output": output})

    rows = [
        row("open", True, {"origin": "Paris", "destination": "Rome"}),
        row("typed", {"type": "string"}, {"origin": "Paris", "destination": "Rome"}),
        row("unstated", True, {"origin": "Paris", "destination": "Tokyo"}),
        row("near miss", True, {"origni": "Paris"}),
        row("closed", None, {"origin": "Paris", "destination": "Rome"}),
    ]
    out_path = tmp_path / "out.jsonl"
    result = cli("score", str(write_lines(tmp_path / "in.jsonl", rows)), "-o", str(out_path))
    assert result.returncode == 0, result.stderr
    got = {r["id"]: (r["stage"], r["spurious"], r["drifted"]) for r in read_out(out_path)}
    assert got == {
        "open": (0, [], []),
        "typed": (0, [], []),
        "unstated": (3, [], []),
        "near miss": (2, [], ["origni"]),
        "closed": (2, ["destination"], []),
    }
