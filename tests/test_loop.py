"""The correction loop and the runner, driven by a scripted model (deterministic)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scripted import Scripted

from callscope.errors import ModelError
from callscope.models.base import Decoding
from callscope.runs.loop import first_attempt, run_loop
from callscope.runs.runner import run_cases
from callscope.saag.messages import BINARY_FEEDBACK, MISSING, NO_NAME
from callscope.store.run_store import RunStore
from callscope.types import Case

TIP = {
    "name": "calculate_tip",
    "description": "Calculate the tip amount",
    "parameters": {
        "type": "object",
        "properties": {"bill_amount": {"type": "number"}, "tip_percentage": {"type": "number"}},
        "required": ["bill_amount", "tip_percentage"],
    },
}
QUERY = "What is a 15% tip on a bill of 84.50?"
GOOD = '{"name": "calculate_tip", "arguments": {"bill_amount": 84.5, "tip_percentage": 15}}'
MISSING_ARG = '{"name": "calculate_tip", "arguments": {"bill_amount": 84.5}}'


def case(cid: str = "c1", gold: dict[str, Any] | None = None) -> Case:
    return Case(
        id=cid,
        query=QUERY,
        functions=[TIP],
        gold=gold
        or {"name": "calculate_tip", "arguments": {"bill_amount": 84.5, "tip_percentage": 15}},
    )


def scripted(script: dict[str, list[Any]]) -> Scripted:
    """Per case, the reply to attempt k (the last one again past the end); prompt mode."""
    return Scripted(script, repeat_last=True, native=False, max_concurrency=4)


def run(model: Scripted, mode: str, max_attempts: int = 15, c: Case | None = None):
    c = c or case()
    first = first_attempt(model, c, "prompt", Decoding())
    return run_loop(model, c, mode, first=first, style="prompt", max_attempts=max_attempts)


def test_direct_makes_exactly_one_attempt_even_when_it_fails() -> None:
    model = scripted({"c1": ["no idea", GOOD]})
    out = run(model, "direct")
    assert len(out.attempts) == 1
    assert out.attempts[0].row["stage"] == 1
    assert out.solved_at is None
    assert out.export_row("m", None)["attempts"] == 1


def test_binary_appends_reply_and_a_plain_no() -> None:
    model = scripted({"c1": ["no idea", MISSING_ARG, GOOD]})
    out = run(model, "binary")
    assert [a.row["stage"] for a in out.attempts] == [1, 2, 0]
    assert out.solved_at == 3
    last_request = out.attempts[2].messages
    assert [m["role"] for m in last_request] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert last_request[2]["content"] == "no idea"
    assert last_request[3]["content"] == BINARY_FEEDBACK == "No"
    assert last_request[5]["content"] == "No"
    assert [a.feedback for a in out.attempts] == ["No", "No", None]


def test_structured_sends_the_cascade_correction_and_stops_at_first_pass() -> None:
    model = scripted({"c1": ["no idea", MISSING_ARG, GOOD, GOOD]})
    out = run(model, "structured")
    assert [a.feedback for a in out.attempts] == [NO_NAME, MISSING, None]
    assert out.attempts[2].messages[-1]["content"] == MISSING
    assert out.final_row["solved"] is True and out.solved_at == 3


def test_budget_is_respected() -> None:
    model = scripted({"c1": ["no idea"]})
    out = run(model, "structured", max_attempts=4)
    assert len(out.attempts) == 4
    assert out.solved_at is None
    assert out.attempts[-1].feedback is None


def test_gold_is_never_used_inside_the_loop() -> None:
    """Two different golds: identical requests and feedback, only extrinsic metrics differ."""
    script = {
        "c1": [
            '{"name": "calculate_tip", "arguments": {"bill_amount": 84.5, "tip_percentage": 20}}',
            GOOD,
        ]
    }
    a = run(
        scripted(script),
        "structured",
        c=case(
            gold={"name": "calculate_tip", "arguments": {"bill_amount": 1, "tip_percentage": 2}}
        ),
    )
    b = run(scripted(script), "structured", c=case(gold={"name": "other", "arguments": {}}))
    assert [x.messages for x in a.attempts] == [x.messages for x in b.attempts]
    assert [x.feedback for x in a.attempts] == [x.feedback for x in b.attempts]
    assert "20" not in a.attempts[0].feedback.replace("tip_percentage", "")
    assert a.final_row["arg_f1"] == 0.0 and b.final_row["name_match"] is False


def test_model_error_is_recorded_not_raised() -> None:
    model = scripted({"c1": [MISSING_ARG, ModelError("server said 500", kind="http_5xx")]})
    out = run(model, "structured")
    assert out.error == "server said 500" and out.error_kind == "http_5xx"
    assert len(out.attempts) == 2 and out.attempts[1].row is None
    row = out.export_row("m", 5)
    assert row["error_kind"] == "http_5xx" and row["stage"] == 2  # last scored attempt kept


def test_runner_shares_first_attempt_across_modes_and_resumes(tmp_path) -> None:
    cases = [Case(id=f"c{i}", query=f"{QUERY} #c{i}", functions=[TIP]) for i in range(3)]
    script = {f"c{i}": ["no idea", GOOD] for i in range(3)}
    model = scripted(script)
    store = RunStore(tmp_path / "run")
    summary = run_cases(model, cases, store, max_attempts=3, show_progress=False)
    # per case: 1 shared first attempt + 1 binary, 1 structured and 1 gated retry
    assert len(model.requests) == 3 * 4
    assert summary.ran == 12 and summary.skipped == 0
    assert summary.solve_rate == dict.fromkeys(("direct", "binary", "structured", "gated"), 0.0)
    assert summary.mean_attempts == {"direct": 1.0, "binary": 2.0, "structured": 2.0, "gated": 2.0}
    again = run_cases(model, cases, store, max_attempts=3, show_progress=False)
    assert again.ran == 0 and again.skipped == 12 and len(model.requests) == 12
    rows = [
        json.loads(line) for line in (tmp_path / "run" / "final.jsonl").read_text().splitlines()
    ]
    assert sorted((r["id"], r["mode"]) for r in rows) == sorted(
        (f"c{i}", m) for i in range(3) for m in ("direct", "binary", "structured", "gated")
    )
    assert all({"attempts", "mode", "solved_at", "stage", "fnem"} <= set(r) for r in rows)


def test_runner_refuses_to_mix_configurations(tmp_path) -> None:
    store = RunStore(tmp_path / "run")
    model = scripted({"c1": [GOOD]})
    run_cases(model, [case()], store, max_attempts=3, show_progress=False)
    with pytest.raises(ValueError, match="max_attempts"):
        run_cases(model, [case()], store, max_attempts=5, show_progress=False)


def test_runner_refuses_outcomes_scored_by_another_cascade_version(tmp_path) -> None:
    from callscope.saag.cascade import CASCADE_VERSION

    store = RunStore(tmp_path / "run")
    model = scripted({"c1": [GOOD], "c2": [GOOD]})
    run_cases(model, [case()], store, max_attempts=3, show_progress=False)
    key = f"config:{model.spec}"
    assert store.get_meta(key)["cascade"] == CASCADE_VERSION
    # a directory from before versions were recorded holds version-1 verdicts
    legacy = {k: v for k, v in store.get_meta(key).items() if k != "cascade"}
    store.set_meta(key, legacy)
    with pytest.raises(ValueError, match=r"different cascade \(cascade=1\).*new output directory"):
        run_cases(model, [case(), case("c2")], store, max_attempts=3, show_progress=False)
    assert store.done(model.spec) == {
        ("c1", m) for m in ("direct", "binary", "structured", "gated")
    }
    store.set_meta(key, {**legacy, "cascade": CASCADE_VERSION})
    again = run_cases(model, [case(), case("c2")], store, max_attempts=3, show_progress=False)
    assert again.ran == 4 and again.skipped == 4  # the same version resumes


def test_runner_stops_when_backend_is_unreachable(tmp_path) -> None:
    cases = [Case(id=f"c{i}", query=f"{QUERY} #c{i}", functions=[TIP]) for i in range(8)]
    down = ModelError("openai backend cannot reach http://127.0.0.1:9", kind="connection")
    model = scripted({f"c{i}": [down] for i in range(8)})
    model.max_concurrency = 1
    store = RunStore(tmp_path / "run")
    summary = run_cases(model, cases, store, modes=["direct"], show_progress=False)
    assert summary.aborted and "cannot reach" in summary.aborted
    assert summary.ran == 5 and summary.errors["connection"] == 5
    # errored outcomes are retried on the next run
    model.script = {f"c{i}": [GOOD] for i in range(8)}
    again = run_cases(model, cases, store, modes=["direct"], show_progress=False)
    assert again.ran == 8 and not again.errors
    assert len(list(store.outcomes())) == 8
