"""What an answer without a readable call is (issue 36), through the real commands.

The verdicts expected here were worked out by hand from the rule stated in
:mod:`callscope.parse.no_call`: prose is ``abstained``, call syntax or data the parser refuses
is ``broken`` with the reader's own reason, garbage is ``broken``, nothing is ``empty``; a
broken answer fails stage 1 whatever the gold, an abstention's stage depends on what the case
expects (``--expect-call``), and an unreadable call beside readable ones is judged at its
position while the readable ones are judged too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeServer, Step, openai_reply

from callscope.parse import parse_output
from callscope.saag.answer import diagnose_answer, no_call_kind

WEATHER = {
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
DEFINE = {
    "name": "get_definition",
    "description": "A word's definition",
    "parameters": {
        "type": "object",
        "properties": {"word": {"type": "string"}},
        "required": ["word"],
    },
}
FUNCTIONS = [WEATHER, DEFINE]
QUERY = "What's the weather in Paris, and what does 'cat' mean?"

#: the issue's table: output -> (answer, stage, words the parse error must hold)
TABLE: list[tuple[str, str, int | None, str]] = [
    ("I cannot help with that.", "abstained", None, "no tool call found"),
    ("{" * 20, "broken", 1, "invalid JSON at character 1"),
    ("[" * 400, "broken", 1, "cut off"),
    ('{"name": ["get_definition"], "arguments": []}', "broken", 1, "'name' is a list"),
    ("7" * 150, "broken", 1, "not a call and not prose"),
    ("", "empty", None, "empty output"),
    ('get_weather(city="Paris"', "broken", 1, "'(' was never closed"),
]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from callscope.cli.main import main; main()", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=120)


def score_file(tmp_path: Path, outputs: list[Any], *options: str) -> list[dict[str, Any]]:
    rows = [
        {"id": i, "query": QUERY, "functions": FUNCTIONS, "output": out}
        for i, out in enumerate(outputs)
    ]
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = cli("score", str(src), "-o", str(tmp_path / "out.jsonl"), *options, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_the_issue_table_through_callscope_score(tmp_path: Path) -> None:
    rows = score_file(tmp_path, [out for out, *_ in TABLE])
    for row, (out, answer, stage, words) in zip(rows, TABLE, strict=True):
        assert (row["answer"], row["stage"]) == (answer, stage), out[:30]
        assert words in row["parse_error"], (out[:30], row["parse_error"])
        # a broken answer's fix is the parser's reason, not "No function name found"
        if answer == "broken":
            assert row["fix"].startswith("Your call could not be read") and words in row["fix"]
        # nothing undefined is averaged: the no-call rows carry no metric at all
        if stage is None:
            assert all(row[m] is None for m in ("fnem", "ncs", "rpr", "avem", "vhr"))


def test_expect_call_decides_only_what_an_abstention_is(tmp_path: Path) -> None:
    outputs = [out for out, *_ in TABLE]
    yes = score_file(tmp_path, outputs, "--expect-call", "yes")
    no = score_file(tmp_path, outputs, "--expect-call", "no")
    # abstained and empty: stage 1 when a call is expected (the paper's setting), 0 when not
    assert [r["stage"] for r in yes] == [1, 1, 1, 1, 1, 1, 1]
    assert [r["stage"] for r in no] == [0, 1, 1, 1, 1, 0, 1]
    # the broken ones are broken either way, with the same reason
    assert [r["parse_error"] for r in yes] == [r["parse_error"] for r in no]


def test_the_summary_counts_no_call_apart_and_never_averages_a_sentinel(tmp_path: Path) -> None:
    rows = [
        {"id": i, "query": QUERY, "functions": FUNCTIONS, "output": out}
        for i, out in enumerate([out for out, *_ in TABLE])
    ]
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = cli("score", str(src), "-o", str(tmp_path / "o.jsonl"), cwd=tmp_path)
    text = " ".join(res.stderr.split())
    assert "1 registry │ 5" in text  # the five broken answers
    assert "no call: abstained (no verdict) │ 1" in text
    assert "no call: empty (no verdict) │ 1" in text
    assert "passed all │ 0" in text
    # FNEM's mean is the rate of FNEM = 1: 0 over the five broken rows, never -1
    assert "FNEM │ 0.000 │ 5" in text and "-1" not in text


@pytest.mark.parametrize(
    "text",
    [
        "The derivative is f(x) = 2x.",
        "See [1] for the details.",
        "[Here is the documentation](https://example.org/weather) for that API.",
        "No.",
        "The time is 2024-08-09 08:57:06.",
        "The function get_weather() needs a city: get_weather(location, date).",
        '{"message": "I can help with that, which city do you mean?"}',
        "```python\n[]\n```\nNone of the functions fits the request.",
    ],
)
def test_prose_with_brackets_is_an_abstention(text: str) -> None:
    assert no_call_kind(parse_output(text), ["get_weather", "get_definition"]) == "abstained"


@pytest.mark.parametrize(
    "text",
    [
        "Sure! get_weather(city='Paris",  # a registered name written as a call, cut off
        "I will call get_weather(city=Paris) now.",  # a registered name, a value not a literal
        "get_wea",  # a registered name cut off before its parenthesis
        "<tool_call>\n{\"arguments\": {'city': 'Paris'}, \"name\": 'get_weather'}\n</tool_call>",
        '[{"name": "get_weather", "params": {"city": "Paris"}}]',
        "\x01\x02\x03\x04\x05\x06",
    ],
)
def test_call_shaped_text_and_garbage_are_broken(text: str) -> None:
    assert no_call_kind(parse_output(text), ["get_weather", "get_definition"]) == "broken"


@pytest.mark.parametrize(
    "gold",
    [
        '{"name": "get_weather", "arguments": {"city": "San Francisco, CA"}}',
        'get_weather(city="San Francisco, CA")',
        '[get_weather(city="Paris"), get_definition(word="cat")]',
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_definition", "arguments": {"word": "cat"}}]',
    ],
)
def test_no_cut_of_a_call_is_ever_an_abstention(gold: str) -> None:
    for cut in range(1, len(gold)):
        verdict = diagnose_answer(parse_output(gold[:cut]), FUNCTIONS, QUERY)
        if verdict.no_call is None:  # the cut still holds a whole call (of two)
            assert verdict.checked[0].call is not None
            continue
        assert (verdict.no_call, verdict.stage) == ("broken", 1), gold[:cut]


TWO_CALLS_ONE_BAD = [
    {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    },
    {
        "id": "call_2",
        "type": "function",
        "function": {"name": "get_definition", "arguments": "{word: cat}"},
    },
]


def test_a_native_answer_with_one_invalid_call_judges_the_other(tmp_path: Path) -> None:
    [row] = score_file(tmp_path, [{"tool_calls": TWO_CALLS_ONE_BAD}])
    assert (row["answer"], row["stage"]) == ("calls", 1)
    first, second = row["calls"]
    assert (first["position"], first["name"], first["stage"]) == (0, "get_weather", 0)
    assert (second["position"], second["name"], second["stage"]) == (1, None, 1)
    assert "arguments are not valid JSON" in second["parse_error"]
    # the correction names the unreadable call and keeps the good one
    assert row["fix"].startswith("Call 2 (unnamed): Your call could not be read")
    assert "Call 1 (get_weather) passed: keep it" in row["fix"]


@pytest.mark.parametrize(
    ("style", "reply"),
    [
        ("native", openai_reply(None, TWO_CALLS_ONE_BAD)),
        (
            "prompt",
            openai_reply('[get_weather(city="Paris"), get_definition(word="ca'),
        ),
    ],
)
def test_callscope_run_judges_the_readable_call_beside_a_broken_one(
    tmp_path: Path, style: str, reply: dict[str, Any]
) -> None:
    case = {
        "id": "two",
        "query": QUERY,
        "functions": FUNCTIONS,
        "gold": [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "get_definition", "arguments": {"word": "cat"}},
        ],
    }
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    with FakeServer() as srv:
        srv.push(Step(body=reply))
        res = cli(
            "run", str(cases), "-o", str(tmp_path / "run"), "-m", "openai:m",
            "--base-url", srv.url + "/v1", "--modes", "structured", "--max-attempts", "1",
            "--style", style, cwd=tmp_path,
        )  # fmt: skip
    assert res.returncode == 0, res.stderr
    from callscope.store.run_store import RunStore  # lazy: only after the run wrote it

    store = RunStore(tmp_path / "run")
    try:
        [outcome] = list(store.outcomes())
        [attempt] = store.attempts(outcome["model"], "two", "structured", with_messages=False)
    finally:
        store.close()
    calls = attempt["diagnosis"]["answer_calls"]
    assert [(c["stage"], c["fnem"]) for c in calls] == [(0, 1), (1, -1)]
    assert outcome["final"]["stage"] == 1


def test_callscope_serve_judges_each_native_call_by_position(tmp_path: Path) -> None:
    openai = pytest.importorskip("openai")
    from proxyserve import callscope_serve  # lazy: the proxy's test helper

    with FakeServer() as srv:
        # the first answer and the re-ask both hold the bad second call: unrepaired
        srv.push(*(Step(body=openai_reply(None, TWO_CALLS_ONE_BAD)) for _ in range(3)))
        with callscope_serve(srv.url + "/v1", tmp_path / "serve", "--attempts", "1") as s:
            client = openai.OpenAI(base_url=s.url, api_key="k", max_retries=0, timeout=30)
            raw = client.chat.completions.with_raw_response.create(
                model="m",
                messages=[{"role": "user", "content": QUERY}],
                tools=[{"type": "function", "function": f} for f in FUNCTIONS],
            )
    assert raw.headers["x-callscope-guard-calls"] == "0,1"
    body = json.loads(raw.text)
    first, second = body["callscope"]["calls"]
    assert (first["name"], first["stage"]) == ("get_weather", 0)
    assert (second["name"], second["stage"]) == (None, 1)
    assert "could not be read" in second["reasons"][0]


def _as_version_2(run: Path, old_row: dict[str, Any], loop: bool = True) -> None:
    """Make ``run``'s one outcome read as a cascade version 2 store recorded it: the model's
    configuration says version 2 and attempt 1's row (and the outcome's first and final rows)
    hold ``old_row``'s verdict, solved at attempt 1. ``loop=False``: no configuration at all,
    as the guard and chat logs record outcomes. That code stored each attempt's row and a
    version-2 verdict beside it, and the outcome's rows: they are written back as this
    code reads them, then edited."""
    import sqlite3  # lazy: only these tests edit a store by hand

    from callscope.store.run_store import RunStore

    store = RunStore(run)
    try:
        [outcome] = store.outcomes()
        [read] = store.attempts(outcome["model"], outcome["case_id"], outcome["mode"])
    finally:
        store.close()
    db = sqlite3.connect(run / "store.sqlite")
    try:
        [(key, config)] = db.execute("SELECT key, value FROM meta WHERE key LIKE 'config:%'")
        db.execute(
            "UPDATE meta SET value=? WHERE key=?",
            (json.dumps({**json.loads(config), "cascade": 2}), key),
        )
        if not loop:
            db.execute("DELETE FROM meta WHERE key=?", (key,))
        [(data,)] = db.execute("SELECT data FROM attempts")
        attempt = json.loads(data)
        attempt["row"] = {**read["row"], **old_row}
        attempt["diagnosis"] = read["diagnosis"]
        db.execute("UPDATE attempts SET data=?", (json.dumps(attempt),))
        db.execute(
            "UPDATE outcomes SET final=?, first=?, solved_at=1",
            (
                json.dumps({**outcome["final"], **old_row, "solved_at": 1}),
                json.dumps(attempt["row"]),
            ),
        )
        db.commit()
    finally:
        db.close()


@pytest.mark.parametrize(
    ("reply", "old", "new", "loop"),
    [
        # version 2 read call-shaped garbage as an abstention: on a case whose gold is [] that
        # passed; today it is a broken call attempt, stage 1, not solved
        ("{" * 20, "abstained", ("broken", 1, False), True),
        # prose stays an abstention: nothing to re-derive
        ("Why did the cat sit on the computer?", "abstained", None, True),
        # no loop configuration (the guard's and chat logs' records): their own rule, kept
        ("{" * 20, "abstained", None, False),
    ],
)
def test_an_old_store_is_re_derived_and_the_report_says_which_rows(
    tmp_path: Path, reply: str, old: str, new: tuple[str, int, bool] | None, loop: bool
) -> None:
    case = {"id": "joke", "query": "Tell me a joke about cats", "functions": FUNCTIONS, "gold": []}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    with FakeServer() as srv:
        srv.push(Step(body=openai_reply(reply)))
        res = cli(
            "run", str(cases), "-o", str(tmp_path / "run"), "-m", "openai:m",
            "--base-url", srv.url + "/v1", "--modes", "direct", "--max-attempts", "1",
            "--style", "prompt", "--no-cache", cwd=tmp_path,
        )  # fmt: skip
    assert res.returncode == 0, res.stderr
    old_row = {
        "answer": old, "stage": 0, "solved": True, "answer_solved": True,
        "parse_error": "no tool call found in output", "calls": [],
    }  # fmt: skip
    _as_version_2(tmp_path / "run", old_row, loop)
    res = cli("report", str(tmp_path / "run"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    from callscope.report.load import load_outcomes  # lazy: after the store was edited

    [outcome] = load_outcomes(tmp_path / "run")
    final = outcome["final"]
    if new is None:
        assert 'id="rederived-line"' not in page
        assert (final["answer"], final["stage"], outcome["solved_at"]) == ("abstained", 0, 1)
        return
    assert 'id="rederived-line"' in page
    assert "1 outcome(s) re-derived: scored with cascade version 2" in page
    assert "openai:m/joke/direct" in page
    assert (final["answer"], final["stage"], final["solved"]) == new
    assert outcome["solved_at"] is None and outcome["rederived"] is True
    assert "invalid JSON at character 1" in final["parse_error"]


@pytest.mark.parametrize(
    ("content", "stage", "error"),
    [
        # a list of content parts (some OpenAI-compatible servers): its text is the answer
        ([{"type": "text", "text": '{"name": "get_weather", "arguments": {"city": "Paris"}}'}],
         0, None),
        # content that is no text at all: a malformed reply, not an empty answer
        (5, None, "malformed"),
    ],
)  # fmt: skip
def test_callscope_run_reads_a_reply_whose_content_is_a_list_of_parts(
    tmp_path: Path, content: Any, stage: int | None, error: str | None
) -> None:
    """``callscope run`` against a server answering ``content`` as a list of parts reads
    their text (the correct call, stage 0), and one answering a number records a malformed
    reply and exits 1; both were scored as the model's "empty output" (stage 1), a correct
    answer counted a failure."""
    case = {"id": "parts", "query": "What is the weather in Paris?", "functions": FUNCTIONS,
            "gold": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}  # fmt: skip
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    reply = openai_reply("x")
    reply["choices"][0]["message"]["content"] = content
    with FakeServer() as srv:
        srv.push(*(Step(body=reply) for _ in range(4)))
        res = cli(
            "run", str(cases), "-o", str(tmp_path / "run"), "-m", "openai:m",
            "--base-url", srv.url + "/v1", "--modes", "direct", "--max-attempts", "1",
            "--style", "prompt", "--no-cache", cwd=tmp_path,
        )  # fmt: skip
    from callscope.store.run_store import RunStore  # lazy: only after the run wrote it

    store = RunStore(tmp_path / "run")
    try:
        [outcome] = list(store.outcomes())
    finally:
        store.close()
    if error is None:
        assert res.returncode == 0, res.stderr
        assert outcome["final"]["stage"] == stage and outcome["final"]["parse_error"] is None
    else:
        assert res.returncode == 1, res.stderr
        assert outcome["error_kind"] == error
        assert "has a int 'content', not text" in outcome["error"]
