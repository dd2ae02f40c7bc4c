"""Store schema 2: each message history stored once, attempts referencing it; a version 1
store (every attempt holding its whole history) is migrated in place and reads the same."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from callscope.records import Attempt, Outcome
from callscope.store.run_store import RunStore
from callscope.store.schema import SCHEMA, SCHEMA_VERSION, STORE_FILE, encode

SYSTEM = {"role": "system", "content": "You call tools. caf\u00e9"}
USER = {"role": "user", "content": "Weather in Paris?"}


def _attempt(n: int, messages: list[dict[str, Any]], **extra: Any) -> Attempt:
    return Attempt(
        attempt=n,
        messages=messages,
        reply={"text": f"reply {n}", "tool_calls": None},
        parsed=[{"name": "get_weather", "arguments": {"city": "Paris"}}],
        row={"id": "c1", "stage": 0 if n == 2 else 3, "solved": n == 2},
        diagnosis=None,
        feedback=None if n == 2 else "fix the city",
        **extra,
    )


def _outcome(mode: str) -> Outcome:
    first = [SYSTEM, USER]
    second = [
        *first,
        {"role": "assistant", "content": "reply 1"},
        {"role": "user", "content": "fix"},
    ]
    return Outcome(case_id="c1", mode=mode, attempts=[_attempt(1, first), _attempt(2, second)])


def _v1_store(path: Path, outcomes: list[tuple[str, Outcome]]) -> list[tuple]:
    """A version 1 store written with the old layout, by hand: each attempt's JSON holds its
    whole message history. Returns the attempt rows as written."""
    path.mkdir(parents=True)
    con = sqlite3.connect(path / STORE_FILE)
    con.executescript(SCHEMA)
    con.execute("PRAGMA user_version=1")
    written = []
    for model, o in outcomes:
        key = (model, o.case_id, o.mode)
        for a in o.attempts:
            row = (*key, a.attempt, encode(a.to_dict()))
            con.execute("INSERT INTO attempts VALUES (?,?,?,?,?)", row)
            written.append(row)
        con.execute(
            "INSERT INTO outcomes VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                *key,
                5,
                len(o.attempts),
                o.solved_at,
                None,
                None,
                encode(o.export_row(model, 5)),
                encode(o.attempts[0].row),
            ),
        )
    con.commit()
    con.close()
    return written


def test_a_v1_store_is_migrated_and_reads_every_attempt_and_outcome_identically(
    tmp_path: Path,
) -> None:
    huge = 10**5000  # written by the v1 codec as a hex string, the attempt flagged
    odd = _outcome("binary")
    odd.attempts[0].messages = [SYSTEM, {"role": "user", "content": "n=\ud800", "n": huge}]
    outcomes = [("m", _outcome("direct")), ("m", _outcome("structured")), ("m", odd)]
    run = tmp_path / "run"
    written = _v1_store(run, outcomes)
    con = sqlite3.connect(run / STORE_FILE)
    old_outcomes = con.execute("SELECT * FROM outcomes ORDER BY rowid").fetchall()
    con.close()

    store = RunStore(run)
    # issue 29 (item 4): version 3 stores long texts once; a v1 store migrates straight to it
    assert store.schema_version == SCHEMA_VERSION == 3
    for model, case_id, mode, attempt, data in written:
        (got,) = [a for a in store.attempts(model, case_id, mode) if a["attempt"] == attempt]
        assert got == json.loads(data)  # every field, the flags of escaped values included
        assert list(got) == list(json.loads(data))  # and the key order
    odd_first = store.attempts("m", "c1", "binary")[0]
    assert odd_first["escaped"] == ["huge_int", "surrogate"]
    assert odd_first["messages"][1]["n"] == hex(huge)
    assert odd_first["messages"][1]["content"] == "n=\ud800"
    rows = list(store.outcomes())
    assert [r["mode"] for r in rows] == ["direct", "binary", "structured"]
    store.close()

    con = sqlite3.connect(run / STORE_FILE)
    assert con.execute("SELECT * FROM outcomes ORDER BY rowid").fetchall() == old_outcomes
    # [S, U] (direct, structured), [S, U*] (binary), [S, U, A, U'] (every second attempt);
    # binary is migrated first and its second history does not extend its first: stored whole
    histories = con.execute("SELECT id, parent, data FROM histories").fetchall()
    # issue 29 (item 4): a history holding a long text (here the 4,155-character hex string
    # the v1 codec made of the huge int) is stored as {"m": messages, "$texts": [...]}
    tails = [json.loads(d) for _, _, d in histories]
    assert sorted(len(t["m"] if isinstance(t, dict) else t) for t in tails) == [2, 2, 4]
    assert sum(isinstance(t, dict) for t in tails) == 1
    assert all(parent is None for _, parent, _ in histories)
    assert all(
        json.loads(d)["messages"] is None
        for (d,) in con.execute("SELECT data FROM attempts").fetchall()
    )
    con.close()
    again = RunStore(run)  # opening a migrated store again changes nothing
    assert again.attempts("m", "c1", "direct")[1]["messages"] == _outcome("x").attempts[1].messages
    again.close()


def test_a_new_store_saves_each_history_once_and_reads_it_back(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    for mode in ("direct", "binary", "structured"):
        store.save_outcome("m", 5, _outcome(mode))
    store.save_outcome("m", 5, _outcome("direct"))  # a re-run replaces, stores nothing new
    for mode in ("direct", "binary", "structured"):
        got = store.attempts("m", "c1", mode)
        assert got == [a.to_dict() for a in _outcome(mode).attempts]
    rows = store._db.execute("SELECT id, parent, data FROM histories").fetchall()
    assert len(rows) == 2  # the first history and its extension, whatever the mode
    (first_id,) = [i for i, parent, _ in rows if parent is None]
    (tail,) = [json.loads(d) for _, parent, d in rows if parent == first_id]
    assert tail == [{"role": "assistant", "content": "reply 1"}, {"role": "user", "content": "fix"}]
    # aggregation reads attempts without their histories: everything else identical
    light = store.attempts("m", "c1", "binary", with_messages=False)
    full = store.attempts("m", "c1", "binary")
    assert [a["messages"] for a in light] == [None] * len(full)
    assert [{**a, "messages": None} for a in full] == light
    store.close()
