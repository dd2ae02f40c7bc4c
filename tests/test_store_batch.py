"""Many writes in one commit (the proxy's store writer): each write stays atomic on its own,
and one bad record never takes the rest of its batch with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from callscope.guard import record
from callscope.guard.record import StoreWriter
from callscope.guard.repair import repair
from callscope.records import Attempt, Outcome
from callscope.store.run_store import RunStore

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
MESSAGES = [{"role": "user", "content": "What's the weather in Paris?"}]


def outcome(case_id: str, n: int) -> Outcome:
    attempts = [Attempt(i + 1, [], None, [], {"id": case_id}, None) for i in range(n)]
    return Outcome(case_id=case_id, mode="direct", attempts=attempts)


def test_a_failed_write_inside_a_batch_undoes_only_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RunStore(tmp_path / "run")
    store.save_outcome("m", None, outcome("bad", 2))
    real = store._attempt_rows

    def rows(o: Outcome) -> Any:
        if o.case_id == "bad":  # fails after its DELETE of the earlier attempts ran
            raise RuntimeError("disk says no")
        return real(o)

    monkeypatch.setattr(store, "_attempt_rows", rows)
    with store.batch():
        store.save_outcome("m", None, outcome("good", 1))
        with pytest.raises(RuntimeError):
            store.save_outcome("m", None, outcome("bad", 3))
        store.save_outcome("m", None, outcome("later", 1))
    store.close()

    reopened = RunStore(tmp_path / "run")
    counts = dict(
        reopened._db.execute("SELECT case_id, COUNT(*) FROM attempts GROUP BY case_id").fetchall()
    )
    assert counts == {"bad": 2, "good": 1, "later": 1}
    reopened.close()


def _passing_repair() -> Any:
    call = {
        "id": "c0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
    }
    answer = {
        "choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]
    }
    return repair(lambda *_: answer, MESSAGES, TOOLS, first=answer)


def test_the_writer_keeps_every_good_record_of_a_batch_and_counts_the_bad_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = record.guard_records

    def records(case_id: str, *args: Any, **kw: Any) -> Any:
        if case_id == "r-3":
            raise ValueError("a value no reader foresaw")
        return real(case_id, *args, **kw)

    monkeypatch.setattr(record, "guard_records", records)
    writer = StoreWriter(tmp_path / "run", {"source": "proxy"})
    result = _passing_repair()
    for i in range(1, 7):
        writer.submit("m", f"r-{i}", result, None, {"decision": "passed"})
        writer.count("passed")
    writer.close()

    store = RunStore(tmp_path / "run")
    assert sorted(c.id for c in store.cases()) == ["r-1", "r-2", "r-4", "r-5", "r-6"]
    assert store.get_meta("guard:decisions") == {"passed": 6, "store_error": 1}
    assert store.get_meta("config:m") == {"source": "proxy", "model": "m"}
    store.close()
