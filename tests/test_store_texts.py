"""Store schema 3 (issue 29, item 4): every long text (a model's reply, its echo in the next
request's history) stored once, through ``callscope run`` as typed; a version 2 store opens,
is stamped 3 and reads the same; every attempt reads back exactly (a lone surrogate in a long
text included)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from callscope.records import Attempt, Outcome
from callscope.store.run_store import RunStore
from callscope.store.schema import STORE_FILE, TEXT_MIN

FUNCTION = {
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
MB = 1_000_000


def _run(tmp_path: Path, text: str) -> Path:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "query": "Weather in Oslo?", "functions": [FUNCTION]}) + "\n"
            for i in (1, 2)
        )
    )
    replay = tmp_path / "replay.jsonl"
    replay.write_text(
        "".join(json.dumps({"case_id": f"c{i}", "outputs": [text] * 3}) + "\n" for i in (1, 2))
    )
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "callscope.cli", "run", str(cases), "-m", f"replay:{replay}",
         "--modes", "direct,binary,structured,gated", "--max-attempts", "3", "-o", str(run_dir),
         "--quiet", "--no-cache"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return run_dir


def test_one_5mb_reply_for_two_cases_is_stored_once(tmp_path: Path) -> None:
    text = ("lorem ipsum dolor " * (5 * MB // 18 + 1))[: 5 * MB]
    run_dir = _run(tmp_path, text)
    size = (run_dir / STORE_FILE).stat().st_size
    with sqlite3.connect(run_dir / STORE_FILE) as db:
        (n_texts, text_bytes) = db.execute(
            "SELECT count(*), sum(length(data)) FROM texts"
        ).fetchone()
        (n_attempts,) = db.execute("SELECT count(*) FROM attempts").fetchone()
    # both cases answered the same text: stored once; 4 modes x 2 cases, 2 + 3*3 attempts each
    assert (n_texts, text_bytes) == (1, 5 * MB)
    assert n_attempts == 2 * (1 + 3 * 3)
    print(f"store: {size / MB:.1f} MB for a 5 MB reply, 2 cases, {n_attempts} attempts")
    assert size < 6 * MB  # was 50 MB: the reply in every attempt and in every history
    store = RunStore(run_dir)
    model = f"replay:{tmp_path / 'replay.jsonl'}"
    attempts = store.attempts(model, "c2", "structured")
    assert [a["reply"]["text"] == text for a in attempts] == [True] * 3
    assert attempts[2]["messages"][2]["content"] == text  # the history echoes it back
    done = subprocess.run(
        [sys.executable, "-m", "callscope.cli", "report", str(run_dir)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = (run_dir / "report.html").stat().st_size
    print(f"report.html: {page / MB:.2f} MB")
    # each attempt's text shown up to 20,000 characters (report/case_data.MAX_TEXT_SHOWN):
    # 20 attempts of 20,000 characters each fit well under 1 MB (was 40 MB)
    assert page < 1 * MB
    assert "more characters not shown" in (run_dir / "report.html").read_text(encoding="utf-8")


def test_long_texts_read_back_exactly_and_a_v2_store_is_stamped_3(tmp_path: Path) -> None:
    odd = "x" * TEXT_MIN + "\udfff" + "é"
    short = "y" * (TEXT_MIN - 1)
    outcome = Outcome(
        case_id="c1",
        mode="binary",
        attempts=[
            Attempt(
                attempt=n,
                messages=[
                    {"role": "user", "content": short},
                    {"role": "assistant", "content": odd},
                ],
                reply={"text": odd, "tool_calls": None},
                parsed=[],
                row={"id": "c1", "note": short},  # type: ignore[typeddict-unknown-key]
                diagnosis=None,
            )
            for n in (1, 2)
        ],
    )
    run = tmp_path / "run"
    store = RunStore(run)
    store.save_outcome("m", None, outcome)
    got = store.attempts("m", "c1", "binary")
    assert [a["reply"]["text"] for a in got] == [odd, odd]
    assert got[1]["messages"][1]["content"] == odd and got[1]["row"]["note"] == short
    store.close()
    with sqlite3.connect(run / STORE_FILE) as db:
        assert db.execute("SELECT count(*) FROM texts").fetchone() == (1,)
        db.execute("PRAGMA user_version=2")
    again = RunStore(run)
    assert again.schema_version == 3
    assert again.attempts("m", "c1", "binary") == got
