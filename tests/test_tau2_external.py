"""The τ² diagnostic on real τ²-bench results files (../shared/external/tau2; skipped when
absent). Pinned values were counted from the files with plain ``json`` (see each test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from callscope.calibration.tau2 import Tau2Config
from callscope.runs.from_results import tau2_diagnostics

EXTERNAL = Path(__file__).resolve().parents[2] / "shared" / "external" / "tau2"
pytestmark = pytest.mark.skipif(not EXTERNAL.is_dir(), reason="no ../shared/external/tau2")

#: τ²'s WRITE tools of the agent side (the @is_tool(ToolType.WRITE) decorators of tools.py)
WRITES = {
    "airline": {
        "book_reservation",
        "cancel_reservation",
        "send_certificate",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
    },
    "telecom": {
        "suspend_line",
        "resume_line",
        "send_payment_request",
        "enable_roaming",
        "disable_roaming",
        "refuel_data",
    },
}


def _load(name: str) -> dict[str, Any]:
    return json.loads((EXTERNAL / name).read_text(encoding="utf-8"))


def _by_hand(data: dict[str, Any], domain: str) -> dict[str, tuple[int, int, int]]:
    """(n, GAR k, Acc k) per gold class, counted straight from the JSON."""
    tasks = {str(t["id"]): t for t in data["tasks"]}
    out = {"TOOL_CALL": [0, 0, 0], "REFUSE": [0, 0, 0]}
    for s in data["simulations"]:
        acts = tasks[str(s["task_id"])]["evaluation_criteria"]["actions"] or []
        mine = [a for a in acts if a.get("requestor") != "user"]
        ok = s["reward_info"]["reward"] == 1
        if mine:
            checks = [
                c
                for c in s["reward_info"].get("action_checks") or []
                if c["action"].get("requestor") != "user"
            ]
            if checks:
                r = out["TOOL_CALL"]
                r[0], r[1], r[2] = (
                    r[0] + 1,
                    r[1] + all(c["action_match"] for c in checks),
                    r[2] + ok,
                )
        elif not acts:
            wrote = any(
                c["name"] in WRITES[domain]
                for m in s["messages"]
                if m["role"] == "assistant"
                for c in m.get("tool_calls") or []
            )
            r = out["REFUSE"]
            r[0], r[1], r[2] = r[0] + 1, r[1] + (not wrote), r[2] + ok
    return {k: tuple(v) for k, v in out.items() if v[0]}


def _rows(result) -> dict[str, tuple[int, int, int]]:
    return {
        r["gold_class"]: (r["n"], r["gar_case_k"], r["acc_k"])
        for r in result.rows
        if r["gold_class"] in ("TOOL_CALL", "REFUSE") and r.get("path") is None
    }


def test_grok3_airline() -> None:
    name = "blakeelias_grok3_airline.json"
    result = tau2_diagnostics(EXTERNAL / name)
    # 20 simulations, 11 with reward 1; one ended on max_steps
    acc = result.acc_rows[0]
    assert (acc["n_simulations"], acc["acc_k"], acc["acc_n"], acc["n_max_steps"]) == (20, 11, 20, 1)
    assert result.groups == ["xai/grok-3 (user: xai/grok-3)"]
    assert (
        _rows(result)
        == _by_hand(_load(name), "airline")
        == {
            "TOOL_CALL": (17, 8, 9),
            "REFUSE": (2, 2, 2),  # refused and transferred: GAR 1 (was 0 when transfer was a write)
        }
    )
    refuse = next(r for r in result.rows if r["gold_class"] == "REFUSE")
    assert refuse["bound_violation"] is False
    assert result.write_tools["airline"]["transfer_to_human_agents"]["write"] is False
    assert result.warnings == []
    assert result.domain_rows[0]["stage_mode"] == "stock schemas"
    assert result.domain_rows[0]["stage_mix"]["unchecked"] == 0


def test_grok3_telecom_agent_actions_only_and_boilerplate_ask() -> None:
    name = "blakeelias_grok3_telecom.json"
    result = tau2_diagnostics(EXTERNAL / name)
    assert (result.acc_rows[0]["acc_k"], result.acc_rows[0]["acc_n"]) == (4, 5)
    # the user's failed toggle_data_saver_mode no longer fails the agent: GAR 3/3, Acc 2/3
    assert _rows(result) == _by_hand(_load(name), "telecom") == {"TOOL_CALL": (3, 3, 2)}
    # 2 tasks whose actions are all the user's: no REFUSE gold
    assert sum("every expected action is the user's" in p for p in result.problems) == 2
    # every task hits the boilerplate "If the agent asks what the status bar shows"
    assert len(result.ask_candidates) == 5
    assert all(c["boilerplate"] and not c["used_as_gold"] for c in result.ask_candidates)
    assert not any(r["gold_class"] == "ASK" for r in result.rows)


def test_toolorchestra_airline_task_id_mismatch() -> None:
    name = "sierra_toolorchestra_airline.json"
    data = _load(name)
    tasks = {str(t["id"]): t for t in data["tasks"]}
    foreign = 0
    for s in data["simulations"]:
        ids = {a["action_id"] for a in tasks[str(s["task_id"])]["evaluation_criteria"]["actions"]}
        checks = s["reward_info"].get("action_checks") or []
        foreign += bool(checks) and not {c["action"]["action_id"] for c in checks} <= ids
    assert foreign == 43
    result = tau2_diagnostics(EXTERNAL / name)
    assert len(result.warnings) == 1 and "43 of 43 simulations" in result.warnings[0]
    assert result.rows == []
    acc = result.acc_rows[0]
    assert (acc["acc_k"], acc["acc_n"], acc["n_mismatch"]) == (28, 50, 43)  # leaderboard 56.0
    forced = tau2_diagnostics(EXTERNAL / name, config=Tau2Config(allow_task_mismatch=True))
    assert forced.rows and "computed anyway" in forced.warnings[0]


def test_gpt41mini_retail_file_tool_types() -> None:
    result = tau2_diagnostics(EXTERNAL / "yoheinakajima_gpt41mini_retail.json")
    assert _rows(result) == {"TOOL_CALL": (1, 1, 1)}
    decision = result.write_tools["retail"]["exchange_delivered_order_items"]
    assert decision == {
        "write": True,
        "source": "τ² tool_type 'write' in the file",
        "tool_type": "write",
        "known": True,
    }
