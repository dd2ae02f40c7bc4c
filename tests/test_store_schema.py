"""The run store's schema version (``PRAGMA user_version``) and its one JSON codec."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest

from callscope.errors import CallscopeError, DataFormatError, StoreSchemaError
from callscope.records import Attempt, Outcome
from callscope.store import run_store, schema
from callscope.store.run_store import RunStore
from callscope.store.schema import SCHEMA, SCHEMA_VERSION, STORE_FILE, decode, encode


def user_version(path: Path) -> int:
    con = sqlite3.connect(path)
    try:
        return int(con.execute("PRAGMA user_version").fetchone()[0])
    finally:
        con.close()


def test_a_new_store_is_stamped(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    assert store.schema_version == SCHEMA_VERSION >= 1
    store.close()
    assert user_version(tmp_path / "run" / STORE_FILE) == SCHEMA_VERSION


def test_a_newer_store_is_refused_and_left_alone(tmp_path: Path) -> None:
    RunStore(tmp_path / "run").close()
    path = tmp_path / "run" / STORE_FILE
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(StoreSchemaError) as info:
        RunStore(tmp_path / "run")
    message = str(info.value)
    assert str(path) in message and "upgrade callscope" in message
    assert f"version {SCHEMA_VERSION + 1}" in message and f"version {SCHEMA_VERSION} " in message
    # a format error: existing `except ValueError` handlers still catch it
    assert isinstance(info.value, DataFormatError | ValueError | CallscopeError)
    assert user_version(path) == SCHEMA_VERSION + 1


def test_an_unversioned_store_is_upgraded_in_place(tmp_path: Path) -> None:
    """A store written before versioning (today's tables, ``user_version`` 0) opens, keeps
    its rows and is stamped."""
    run_dir = tmp_path / "old"
    run_dir.mkdir()
    path = run_dir / STORE_FILE
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.execute("INSERT INTO meta(key, value) VALUES ('malformed_cases', '[\"row 3: bad\"]')")
    con.execute(
        "INSERT INTO outcomes(model, case_id, mode, scale, n_attempts, solved_at, error,"
        " error_kind, final, first) VALUES ('m', 'c1', 'direct', 5, 1, 1, NULL, NULL,"
        ' \'{"id": "c1", "solved": true}\', \'null\')'
    )
    con.commit()
    con.close()
    assert user_version(path) == 0
    store = RunStore(run_dir)
    assert store.schema_version == SCHEMA_VERSION
    assert store.get_meta("malformed_cases") == ["row 3: bad"]
    [row] = list(store.outcomes())
    assert row["final"] == {"id": "c1", "solved": True} and row["first"] is None
    store.close()
    assert user_version(path) == SCHEMA_VERSION


def test_records_round_trip_through_the_codec(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    attempt = Attempt(
        attempt=1,
        messages=[{"role": "user", "content": "Météo à Oslo ?"}],
        reply=None,
        parsed=[],
        row={"id": "c1", "solved": True, "path": tmp_path},
        diagnosis=None,
    )
    store.save_outcome("m", 5, Outcome(case_id="c1", mode="direct", attempts=[attempt]))
    [row] = list(store.outcomes())
    assert row["first"] == {"id": "c1", "solved": True, "path": str(tmp_path)}
    [back] = store.attempts("m", "c1", "direct")
    assert back["messages"][0]["content"] == "Météo à Oslo ?"
    store.close()


def test_encode_and_decode() -> None:
    assert encode({"a": "é", "p": Path("x")}) == '{"a": "é", "p": "x"}'
    assert decode(encode([1, None])) == [1, None]
    assert decode(None) is None and decode("") is None


def test_json_goes_through_one_pair_of_functions() -> None:
    """``json.dumps`` / ``json.loads`` appear in the store (run_store.py and its schema.py)
    only inside encode / decode."""
    tree = ast.Module(
        body=[
            stmt
            for module in (run_store, schema)
            for stmt in ast.parse(Path(module.__file__).read_text(encoding="utf-8")).body
        ],
        type_ignores=[],
    )
    where: list[str] = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "json"
                ):
                    where.append(f"{fn.name}:{node.attr}")
    assert sorted(where) == ["decode:loads"]  # encode writes through core.jsonl.dumps_safe
    calls = {
        fn.name: {
            n.func.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef)
    }
    assert "dumps_safe" in calls["encode"]
    assert [name for name, used in calls.items() if "dumps_safe" in used] == ["encode"]
