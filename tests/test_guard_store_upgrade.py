"""The guard's run store keeps each checked turn's verdict once, as the SAAG loop's does
(issue 48): ``tests/fixtures/store_guard`` is the store ``callscope serve`` wrote for
``tests/guard_run.py``'s scenarios with the code before (a score row beside a version-2
verdict for each attempt), with the tables its ``callscope report`` wrote (how it was made:
``tests/fixtures/make_store_guard.py``). This code reads that store with the same tables,
byte for byte; and the store ``callscope serve`` writes now holds each attempt's verdict in
version 3 with the turn's action class and no row, and reports the same tables."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("openai")

from guard_run import SCENARIOS, write_guard_run  # noqa: E402

from callscope.store.run_store import RunStore  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "store_guard"


def _report(run_dir: Path) -> dict[str, bytes]:
    """The table files ``callscope report`` (a subprocess) writes for ``run_dir`` that the
    fixture keeps (CSV and Markdown), by name."""
    res = subprocess.run(
        ["callscope", "report", str(run_dir)], capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr
    names = sorted(p.name for p in (FIXTURE / "expected_tables").iterdir())
    assert names and set(names) <= {p.name for p in (run_dir / "tables").iterdir()}
    return {name: (run_dir / "tables" / name).read_bytes() for name in names}


def _expected() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((FIXTURE / "expected_tables").iterdir())}


def test_an_older_guard_store_reports_the_same_tables(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(FIXTURE / "run", run_dir)
    db = sqlite3.connect(run_dir / "store.sqlite")
    stored = [json.loads(d) for (d,) in db.execute("SELECT data FROM attempts")]
    db.close()
    assert stored and all("row" in a and "version" not in a["diagnosis"] for a in stored)
    got = _report(run_dir)
    assert [n for n, table in _expected().items() if got[n] != table] == []


def test_a_guard_store_keeps_the_verdict_once_and_reports_the_same(tmp_path: Path) -> None:
    run_dir = write_guard_run(tmp_path / "run")
    db = sqlite3.connect(run_dir / "store.sqlite")
    stored = [json.loads(d) for (d,) in db.execute("SELECT data FROM attempts")]
    outcomes = db.execute("SELECT final, first FROM outcomes").fetchall()
    db.close()
    # good 1, missing 2, never 4, invented 2, wrong_name 2 asks (tests/test_proxy.py's model)
    assert len(stored) == 11 and len(outcomes) == len(SCENARIOS)
    assert all("row" not in a for a in stored)
    assert {a["diagnosis"]["version"] for a in stored} == {3}
    assert {a["action"] for a in stored} == {"TOOL_CALL"}
    assert all(json.loads(first) is None for _, first in outcomes)
    assert all("stage" not in json.loads(final) for final, _ in outcomes)
    # read, each attempt's row is the guard's: the answer's with its action and stages
    store = RunStore(run_dir)
    try:
        (never,) = [o for o in store.outcomes() if o["model"] == "never"]
        rows = [a["row"] for a in store.attempts("never", never["case_id"], "gated")]
    finally:
        store.close()
    assert [r["stage"] for r in rows] == [1, 2, 3, 1]
    assert [r["stages"] for r in rows] == [[1], [2], [3], [1]]
    assert {r["action"] for r in rows} == {"TOOL_CALL"}
    assert rows[1]["missing"] == ["city"]
    got = _report(run_dir)
    assert [n for n, table in _expected().items() if got[n] != table] == []


def _response(message: dict[str, object]) -> dict[str, object]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", **message}}]}


def test_a_turn_answered_in_prose_is_stored_once_and_read_as_unchecked(tmp_path: Path) -> None:
    """A re-ask the model answers in prose (asking the user) keeps its verdict once too; read,
    its row says nothing was checked (``stage`` ``None``, the answer ``abstained``, the
    guard's ``ASK``) and it has no diagnosis, as the row stored beside it said before."""
    from test_proxy import TOOLS

    from callscope.guard.check import check
    from callscope.guard.record import guard_records
    from callscope.guard.repair import RepairAttempt, RepairResult

    messages = [{"role": "user", "content": "What's the weather in Paris in celsius?"}]
    call = {"name": "get_weather", "arguments": json.dumps({"unit": "celsius"})}
    first = _response({"content": None, "tool_calls": [{"id": "c1", "function": call}]})
    prose = _response({"content": "Which city do you mean exactly?"})
    v1, v2 = check(first, TOOLS, messages), check(prose, TOOLS, messages)
    result = RepairResult(
        prose,
        v2,
        2,
        "asked",
        [
            RepairAttempt(1, messages, first, v1, feedback="fix"),
            RepairAttempt(2, messages, prose, v2),
        ],
    )
    case, outcome = guard_records("req-1", result)
    store = RunStore(tmp_path / "run")
    try:
        store.add_cases([case])
        store.save_outcome("m", None, outcome)
        read = store.attempts("m", "req-1", "gated")
        (final,) = list(store.outcomes())
    finally:
        store.close()
    db = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    stored = [json.loads(d) for (d,) in db.execute("SELECT data FROM attempts ORDER BY attempt")]
    db.close()
    assert [("row" in a, a["diagnosis"]["version"], a["action"]) for a in stored] == [
        (False, 3, "TOOL_CALL"),
        (False, 3, "ASK"),
    ]
    assert read[1]["row"] == {
        "id": "req-1",
        "stage": None,
        "answer": "abstained",
        "action": "ASK",
        "stages": [],
    }
    assert read[1]["diagnosis"] is None
    assert (read[0]["row"]["stage"], read[0]["row"]["missing"]) == (2, ["city"])
    assert [a["row"] for a in read] == [a.row for a in outcome.attempts]
    assert final["first"] == read[0]["row"] and final["final"]["stage"] is None
