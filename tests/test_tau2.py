"""τ²-bench action-class diagnostic: reader, gold classes, GAR/Acc, stage mix, CONFIRM.

Every run here is written by the test in τ²'s format (airline in the single-file layout with
tool schemas, retail in the directory layout without schemas and with a separate tasks file,
a mock-domain run with OpenAI-style tool definitions). Expected values are worked out by hand
in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from callscope.benchmarks.tau2.reader import (
    Tau2FormatError,
    find_tau2_runs,
    read_tasks_file,
    read_tau2_run,
    tool_functions,
)
from callscope.benchmarks.tau2.tasks import ask_cue_hits, scenario_text, task_gold_class
from callscope.benchmarks.tau2.write_tools import decide_write_tools
from callscope.calibration.confirm import (
    affirms,
    agreement_stats,
    detect_confirmation,
    parse_judge_answer,
    render_transcript,
)
from callscope.calibration.tau2 import Tau2Config
from callscope.core.stats import cohen_kappa
from callscope.errors import ModelError
from callscope.models.base import ChatModel, Decoding, RequestContext
from callscope.report.tau2_tables import domain_table, gar_table, tau2_markdown
from callscope.runs.from_results import tau2_diagnostics
from callscope.types import ModelReply

# Wilson 95% bounds worked out by hand (z = 1.96, z^2 = 3.8416):
# k=1, n=2: centre (0.5 + 0.9604) / 2.9208 = 0.5, half 1.96 * sqrt(0.125 + 0.2401) / 2.9208
#           = 1.184301 / 2.9208 = 0.405472 -> [0.094528, 0.905472]
# k=2, n=2: centre 1.9604 / 2.9208 = 0.671186, half 0.9604 / 2.9208 = 0.328814 -> [0.342372, 1]
# k=1, n=1: centre 2.9208 / 4.8416 = 0.603272, half 1.9208 / 4.8416 = 0.396728 -> [0.206543, 1]
HALF = (0.094528, 0.905472)
TWO_OF_TWO = (0.342372, 1.0)
ONE_OF_ONE = (0.206543, 1.0)


# --------------------------------------------------------------------------- builders


def call(cid: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": arguments, "requestor": "assistant"}


def agent(content: str | None = None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls) or None}


def user(content: str) -> dict[str, Any]:
    return {"role": "user", "content": content, "tool_calls": None}


def tool(cid: str, content: str = "{}", error: bool = False) -> dict[str, Any]:
    return {"role": "tool", "id": cid, "content": content, "requestor": "assistant", "error": error}


def check(name: str, match: bool, tool_type: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {
        "action": {"name": name, "arguments": {}, "requestor": "assistant"},
        "action_match": match,
        "action_reward": 1.0 if match else 0.0,
    }
    if tool_type:
        c["tool_type"] = tool_type
    return c


def sim(
    sid: str,
    task_id: str,
    messages: list[dict[str, Any]],
    reward: float | None,
    checks: list[dict[str, Any]] | None = None,
    trial: int = 0,
    termination: str = "user_stop",
) -> dict[str, Any]:
    for i, m in enumerate(messages):
        m["turn_idx"] = i
    s: dict[str, Any] = {
        "id": sid,
        "task_id": task_id,
        "trial": trial,
        "termination_reason": termination,
        "messages": messages,
        "agent_cost": 0.01,
    }
    if reward is not None:
        s["reward_info"] = {
            "reward": reward,
            "db_check": {"db_match": reward == 1.0, "db_reward": reward},
            "action_checks": checks if checks is not None else [],
            "reward_basis": ["DB"],
        }
    return s


def schema(*required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {p: {"type": "string"} for p in required},
        "required": list(required),
    }


def sig(name: str, doc: str, *required: str) -> dict[str, Any]:
    # τ²'s ToolSignature: {name, doc, params, returns}; doc starts with the signature line
    return {"name": name, "doc": f"{name}(...)\n\n{doc}", "params": schema(*required)}


GREETING = "Hi! How can I help you today?"

AIRLINE_TASKS = [
    {
        "id": "0",
        "user_scenario": {
            "persona": None,
            "instructions": {
                "domain": "airline",
                "reason_for_call": "You want to cancel reservation EHGLP3.",
                "known_info": "Your user id is emma_kim_9957.",
                "task_instructions": "If the agent asks for the reason, say your plans changed.",
            },
        },
        "evaluation_criteria": {"actions": [], "nl_assertions": None},
    },
    {
        "id": "1",
        "user_scenario": {"instructions": {"reason_for_call": "Cancel reservation Q69X3R."}},
        "evaluation_criteria": {
            "actions": [
                {"action_id": "1_0", "name": "cancel_reservation", "arguments": {}},
            ]
        },
    },
    {
        "id": "2",
        "user_scenario": {"instructions": {"reason_for_call": "Upgrade XYZ123 to business."}},
        "evaluation_criteria": {
            "actions": [
                {"action_id": "2_0", "name": "get_reservation_details", "arguments": {}},
                {"action_id": "2_1", "name": "update_reservation_flights", "arguments": {}},
            ]
        },
    },
]


def airline_simulations() -> list[dict[str, Any]]:
    a1 = sim(
        "a1",
        "0",
        [
            agent(GREETING),  # greeting: OTHER, not an ask
            user("I want to cancel my reservation EHGLP3. My user id is emma_kim_9957."),
            agent(None, call("c1", "get_user_details", user_id="emma_kim_9957")),  # stage 0
            tool("c1"),
            agent("Could you tell me the reason for the cancellation?"),  # ASK
            user("My plans changed."),
            agent(
                "I'm sorry, but I cannot cancel this basic economy reservation because it "
                "is not eligible under our policy."
            ),  # REFUSE
            user("Okay, thanks. ###STOP###"),
        ],
        reward=1.0,
    )
    a2 = sim(
        "a2",
        "0",
        [
            agent("Hello! How may I assist you today?"),  # greeting
            user("Please cancel reservation EHGLP3, user id emma_kim_9957."),
            agent(None, call("c2", "cancel_reservation", reservation_id="EHGLP3")),  # write
            tool("c2"),
            agent("Your reservation EHGLP3 is now cancelled."),  # OTHER
            user("Thanks! ###STOP###"),
        ],
        reward=1.0,  # the grader passes it although a write happened: masking
        trial=1,
    )
    a3 = sim(
        "a3",
        "1",
        [
            agent(GREETING),
            user("I need to cancel reservation Q69X3R. My user id is raj_sanchez_7340."),
            agent(None, call("c3", "get_reservation_details", reservation_id="Q69X3R")),
            tool("c3"),
            agent(
                "I can cancel reservation Q69X3R for a full refund. Would you like me to "
                "proceed? (yes/no)"
            ),  # ASK
            user("Yes, please go ahead."),
            agent(None, call("c4", "cancel_reservation", reservation_id="Q69X3R")),  # confirmed
            tool("c4"),
            agent("The reservation has been successfully cancelled."),  # CONFIRM class
            user("###STOP###"),
        ],
        reward=1.0,
        checks=[check("cancel_reservation", True, "write")],
    )
    a4 = sim(
        "a4",
        "2",
        [
            agent(GREETING),
            user("I want to change reservation XYZ123 to business class. User id mia_li_3668."),
            agent(None, call("c5", "upgrade_cabin", reservation_id="XYZ123")),  # stage 1
            tool("c5", "Tool 'upgrade_cabin' not found.", error=True),
            agent(None, call("c6", "update_reservation_flights", reservation_id="XYZ123")),
            tool("c6", "missing argument cabin", error=True),  # stage 2 (cabin missing), write
            agent("Do you want me to upgrade reservation XYZ123 to business? Please confirm."),
            user("Yes."),
            agent(
                None,
                call("c7", "update_reservation_flights", reservation_id="XYZ123", cabin="economy"),
            ),  # stage 3: "economy" is not in the user's words; write, confirmed
            tool("c7"),
            agent("Your reservation is updated."),
            user("###STOP###"),
        ],
        reward=0.0,
        checks=[
            check("get_reservation_details", True, "read"),
            check("update_reservation_flights", False, "write"),
        ],
    )
    return [a1, a2, a3, a4]


AIRLINE_TOOL_DEFS = {
    "get_user_details": sig("get_user_details", "Get the details of a user.", "user_id"),
    "get_reservation_details": sig(
        "get_reservation_details", "Get the details of a reservation.", "reservation_id"
    ),
    "cancel_reservation": sig(
        "cancel_reservation", "Cancel the whole reservation.", "reservation_id"
    ),
    "update_reservation_flights": sig(
        "update_reservation_flights",
        "Update the flights of a reservation.",
        "reservation_id",
        "cabin",
    ),
    "certificate_for_user": sig(
        "certificate_for_user", "Issue a travel certificate to a user.", "user_id"
    ),
    "think": sig("think", "Use the tool to think about something.", "thought"),
}


def write_airline(path: Path, tool_defs: bool = True) -> Path:
    info = {
        "git_commit": "abc",
        "num_trials": 2,
        "max_steps": 50,
        "max_errors": 10,
        "user_info": {"implementation": "user_simulator", "llm": "gpt-4.1"},
        "agent_info": {"implementation": "llm_agent", "llm": "qwen3-8b"},
        "environment_info": {
            "domain_name": "airline",
            "policy": "...",
            "tool_defs": AIRLINE_TOOL_DEFS if tool_defs else None,
        },
    }
    data = {
        "timestamp": "2026-01-01T00:00:00",
        "info": info,
        "tasks": AIRLINE_TASKS,
        "simulations": airline_simulations(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


RETAIL_TASKS = [
    {
        "id": "r_refuse",
        "user_scenario": {
            "instructions": "You want to exchange the shirt of pending order #W123. Do not "
            "reveal your email unless the agent asks."
        },
        "evaluation_criteria": {"actions": []},
    },
    {
        "id": "r_exchange",
        "user_scenario": {"instructions": "Exchange the lamp of order #W999."},
        "evaluation_criteria": {
            "actions": [
                {"action_id": "x0", "name": "get_order_details", "arguments": {}},
                {"action_id": "x1", "name": "exchange_delivered_order_items", "arguments": {}},
            ]
        },
    },
]


def write_retail_dir(run_dir: Path) -> Path:
    """Directory layout: results.json (metadata + index) and simulations/<id>.json; r-4.json
    is broken and r-5 is indexed without a file."""
    r1 = sim(
        "r-1",
        "r_refuse",
        [
            agent(GREETING),
            user("I want to exchange the shirt in order #W123."),
            agent(None, call("d1", "get_order_details", order_id="#W123")),
            tool("d1"),
            agent(
                "I'm sorry, but I cannot exchange items in a pending order. Would you like to "
                "modify the order instead?"
            ),  # REFUSE and ASK at once (multi-label)
            user("No thanks. ###STOP###"),
        ],
        reward=1.0,
    )
    r2 = sim(
        "r-2",
        "r_exchange",
        [
            agent(GREETING),
            user("Exchange the delivered lamp in order #W999 for the blue one."),
            agent(None, call("d2", "get_order_details", order_id="#W999")),
            tool("d2"),
            agent(None, call("d3", "get_order_detail", order_id="#W999")),  # hallucinated
            tool("d3", "Tool 'get_order_detail' not found.", error=True),
            agent("I will exchange the lamp in #W999 for the blue one. Shall I proceed? (yes/no)"),
            user("Sure, do it."),
            agent(
                None,
                call(
                    "d4",
                    "exchange_delivered_order_items",
                    order_id="#W999",
                    item_ids=["1"],
                    new_item_ids=["2"],
                ),
            ),
            tool("d4"),
            agent("Done!"),
            user("###STOP###"),
        ],
        reward=1.0,
        checks=[check("get_order_details", True), check("exchange_delivered_order_items", True)],
    )
    r3 = sim(
        "r-3",
        "r_exchange",
        [agent(GREETING), user("Hello")],
        reward=None,  # no reward_info: no Acc, no action checks -> no TOOL_CALL verdict
        trial=1,
        termination="infrastructure_error",
    )
    meta = {
        "timestamp": "2026-01-02T00:00:00",
        "format_version": 2,
        "info": {"environment_info": {"domain_name": "retail", "policy": "..."}},
        "tasks": [],
        "simulation_index": [
            {"id": s, "task_id": "x", "trial": 0} for s in ("r-1", "r-2", "r-3", "r-4", "r-5")
        ],
    }
    sims_dir = run_dir / "simulations"
    sims_dir.mkdir(parents=True)
    (run_dir / "results.json").write_text(json.dumps(meta), encoding="utf-8")
    for s in (r1, r2, r3):
        (sims_dir / f"{s['id']}.json").write_text(json.dumps(s), encoding="utf-8")
    (sims_dir / "r-4.json").write_text('{"id": "r-4", "task_id": ', encoding="utf-8")
    return run_dir


def write_mock(path: Path) -> Path:
    task = {
        "id": "m1",
        "user_scenario": {"instructions": "Create a task 'Buy milk'. Give your user id if asked."},
        "evaluation_criteria": {"actions": [{"action_id": "m", "name": "create_task"}]},
    }
    m1 = sim(
        "m-1",
        "m1",
        [
            agent(GREETING),
            user("Please create a task 'Buy milk' for me."),
            agent("Sure - what is your user id?"),  # ASK
            user("user_1"),
            agent("I will create the task 'Buy milk' for user_1. Please confirm."),  # ASK
            user("Confirmed."),
            agent(None, call("e1", "create_task", user_id="user_1", title="Buy milk")),
            tool("e1"),
            agent("The task has been created."),
            user("###STOP###"),
        ],
        reward=1.0,
        checks=[check("create_task", True)],
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": "create_task",
                "description": "Create a new task for a user.",
                "parameters": schema("user_id", "title"),
            },
        },
        {
            "type": "function",
            "function": {
                "name": "get_users",
                "description": "List users.",
                "parameters": schema(),
            },
        },
    ]
    data = {
        "info": {"environment_info": {"domain_name": "mock", "tool_defs": tools}},
        "tasks": [task],
        "simulations": [m1],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_tasks_file(path: Path) -> Path:
    path.write_text(json.dumps(RETAIL_TASKS), encoding="utf-8")
    return path


def row(result: Any, domain: str, gold: str) -> dict[str, Any]:
    (r,) = [r for r in result.rows if r["domain"] == domain and r["gold_class"] == gold]
    return r


def domain_row(result: Any, domain: str) -> dict[str, Any]:
    (r,) = [r for r in result.domain_rows if r["domain"] == domain]
    return r


class ScriptedJudge(ChatModel):
    """Answers by the first script key found in the prompt; records every prompt."""

    spec = "scripted:judge"
    supports_native_tools = False

    def __init__(self, script: dict[str, str]) -> None:
        self.script = script
        self.prompts: list[str] = []

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        decoding: Decoding | None = None,
        context: RequestContext | None = None,
    ) -> ModelReply:
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        for key, answer in self.script.items():
            if key in prompt:
                if answer == "ERROR":
                    raise ModelError("backend down", kind="connection")
                return ModelReply(text=answer)
        return ModelReply(text="I cannot tell.")


# --------------------------------------------------------------------------- airline, one file


def test_airline_single_file_gar_acc_wilson_and_bound(tmp_path: Path) -> None:
    path = write_airline(tmp_path / "airline.json")
    result = tau2_diagnostics(path)
    assert [(r["domain"], r["gold_class"]) for r in result.rows] == [
        ("airline", "TOOL_CALL"),
        ("airline", "ASK"),
        ("airline", "REFUSE"),
    ]
    # TOOL_CALL (tasks 1, 2): a3 all checks match, passes; a4 one failed check, reward 0
    tc = row(result, "airline", "TOOL_CALL")
    assert (tc["n"], tc["gar_case_k"], tc["acc_k"], tc["acc_n"]) == (2, 1, 1, 2)
    assert tc["gar_case"] == 0.5 and tc["acc"] == 0.5 and tc["gap"] == 0.0
    assert tc["gar_case_ci_low"] == pytest.approx(HALF[0], abs=1e-5)
    assert tc["gar_case_ci_high"] == pytest.approx(HALF[1], abs=1e-5)
    assert tc["bound_violation"] is False
    assert tc["gar_turn"] is None and tc["acc_source"] == "reward"
    # REFUSE (task 0): a1 writes nothing, a2 cancels; both rewarded 1.0 -> Acc 1 > GAR 0.5
    rf = row(result, "airline", "REFUSE")
    assert (rf["n"], rf["gar_case_k"], rf["acc_k"]) == (2, 1, 2)
    assert rf["acc_ci_low"] == pytest.approx(TWO_OF_TWO[0], abs=1e-6)
    assert rf["acc_ci_high"] == pytest.approx(1.0)
    assert rf["gap"] == pytest.approx(-0.5)
    assert rf["bound_violation"] is True and rf["passed_without_gold"] == 1
    # REFUSE emission cue fired in a1 only
    assert rf["emission_gold_k"] == 1 and rf["n_tasks"] == 1
    # ASK (task 0 is a candidate: "if the agent asks"): a1 asks, a2 only greets
    ask = row(result, "airline", "ASK")
    assert (ask["n"], ask["gar_case_k"], ask["acc_k"]) == (2, 1, 2)
    assert ask["bound_violation"] is True
    assert result.ask_gold_source.startswith("unchecked candidates")
    assert [(c["task_id"], c["cues"]) for c in result.ask_candidates] == [
        ("0", ["if the agent asks"])
    ]
    md = tau2_markdown(result)
    assert "| airline | REFUSE | 2 | 50.0 [9.5, 90.5] | 100.0 [34.2, 100.0] | -50.0 |" in md
    assert "bound violation (Acc &gt; GAR)" in md  # a Markdown cell escapes < > & (issue 47)


def test_airline_emission_classes_stage_mix_and_write_tools(tmp_path: Path) -> None:
    result = tau2_diagnostics(write_airline(tmp_path / "airline.json"))
    # per message, by hand: a1 OTHER TOOL_CALL ASK REFUSE; a2 OTHER TOOL_CALL OTHER;
    # a3 OTHER TOOL_CALL ASK TOOL_CALL CONFIRM; a4 OTHER TC TC ASK TC OTHER
    assert result.class_counts == {
        "TOOL_CALL": 7,
        "REFUSE": 1,
        "ASK": 3,
        "CONFIRM": 1,
        "OTHER": 6,
    }
    a1 = next(s for s in result.simulations if s.id == "a1")
    assert a1.message_classes == [["OTHER"], ["TOOL_CALL"], ["ASK"], ["REFUSE"]]
    dr = domain_row(result, "airline")
    assert dr["stage_mode"] == "schemas" and dr["tool_calls"] == 7
    # stage 0: get_user_details, cancel x2, get_reservation_details; 1: upgrade_cabin;
    # 2: update without cabin; 3: cabin "economy" not said by the user
    assert dr["stage_mix"] == {"0": 4, "1": 1, "2": 1, "3": 1, "unchecked": 0}
    by_id = {(c.simulation_id, c.message_index): c for c in result.calls}
    assert by_id[("a4", 4)].failure_kinds == ["missing"]
    assert by_id[("a4", 2)].failure_kinds == ["wrong_name"]
    assert dr["write_tools"] == [
        "cancel_reservation",
        "certificate_for_user",
        "update_reservation_flights",
    ]
    tools = result.write_tools["airline"]
    assert tools["cancel_reservation"]["write"] is True
    assert tools["cancel_reservation"]["source"] == "τ² tool_type 'write' in the file"
    assert tools["get_reservation_details"]["source"] == "τ² tool_type 'read' in the file"
    # not a stock airline tool: guessed from its description, and said so
    assert tools["certificate_for_user"] == {
        "write": True,
        "source": "description verb 'issue' (no τ² label)",
        "tool_type": None,
        "known": False,
    }
    assert tools["upgrade_cabin"]["source"] == "default read (no τ² label)"
    assert tools["upgrade_cabin"]["write"] is False
    assert tools["think"]["write"] is False
    json.dumps(result.to_dict(include_details=True))  # JSON-serialisable


def test_airline_confirm_rule_and_judge_agreement(tmp_path: Path) -> None:
    # write calls: a2 cancel (no confirmation), a3 cancel ("Yes, please go ahead." after the
    # agent asked), a4 update at 4 (last user text is the request), a4 update at 8 ("Yes.")
    judge = ScriptedJudge(
        {
            'cancel_reservation({"reservation_id": "EHGLP3"})': "YES",
            'cancel_reservation({"reservation_id": "Q69X3R"})': "<think>the user said yes</think> YES",
            '"cabin": "economy"': "Yes, the user confirmed.",
            'update_reservation_flights({"reservation_id": "XYZ123"})': "NO",
        }
    )
    result = tau2_diagnostics(write_airline(tmp_path / "airline.json"), judge=judge)
    writes = [c for c in result.calls if c.write]
    assert [(c.simulation_id, c.message_index) for c in writes] == [
        ("a2", 2),
        ("a3", 6),
        ("a4", 4),
        ("a4", 8),
    ]
    assert [c.confirm_rule.confirmed for c in writes] == [False, True, False, True]
    assert writes[1].confirm_rule.cue == "yes, please"
    assert [c.confirm_judge.confirmed for c in writes] == [True, True, False, True]
    assert len(judge.prompts) == 4
    # the judge sees the conversation up to the call, not after it
    assert "My plans changed" not in judge.prompts[0]
    assert "USER: Please cancel reservation EHGLP3" in judge.prompts[0]
    # rule [F,T,F,T] vs judge [T,T,F,T]: agreement 3/4; p_rule 0.5, p_judge 0.75,
    # pe = 0.5*0.75 + 0.5*0.25 = 0.5 -> kappa (0.75-0.5)/0.5 = 0.5
    conf = domain_row(result, "airline")["confirm"]
    assert conf["write_calls"] == 4 and conf["rule_k"] == 2 and conf["rule"]["rate"] == 0.5
    assert conf["judge"]["agreement"] == 0.75
    assert conf["judge"]["kappa"] == pytest.approx(0.5)
    assert conf["judge"]["judge_yes"] == 3 and conf["judge"]["undecided"] == 0
    assert result.confirm["judge"]["kappa"] == pytest.approx(0.5)
    assert "Cohen's kappa 0.500" in tau2_markdown(result)


def test_judge_undecided_and_backend_error_are_left_out(tmp_path: Path) -> None:
    judge = ScriptedJudge(
        {
            "EHGLP3": "ERROR",  # ModelError -> undecided, error recorded
            "Q69X3R": "YES",
            '"cabin": "economy"': "NO",
            # the a4 call at message 4 gets "I cannot tell." -> undecided
        }
    )
    result = tau2_diagnostics(write_airline(tmp_path / "airline.json"), judge=judge)
    writes = [c for c in result.calls if c.write]
    assert writes[0].confirm_judge.confirmed is None
    assert writes[0].confirm_judge.error == "connection: backend down"
    assert writes[2].confirm_judge.confirmed is None
    # decided pairs: a3 (rule T, judge T), a4@8 (rule T, judge F): agreement 1/2; the rule
    # says YES on both (constant) -> pe = 1*0.5 + 0*0.5 = 0.5, kappa = (0.5-0.5)/0.5 = 0
    j = result.confirm["judge"]
    assert (j["n"], j["undecided"], j["agreement"]) == (2, 2, 0.5)
    assert j["kappa"] == pytest.approx(0.0)


def test_write_tool_config_and_checked_ask_list(tmp_path: Path) -> None:
    path = write_airline(tmp_path / "airline.json")
    # cancel_reservation declared read-only: a2 no longer writes -> REFUSE GAR 2/2, no violation
    cfg = Tau2Config(
        read_tools=frozenset({"cancel_reservation"}), ask_tasks=frozenset({"airline:1"})
    )
    result = tau2_diagnostics(path, config=cfg)
    rf = row(result, "airline", "REFUSE")
    assert (rf["gar_case_k"], rf["n"], rf["bound_violation"]) == (2, 2, False)
    assert result.write_tools["airline"]["cancel_reservation"]["source"] == "config read_tools"
    # checked ASK list: only task 1 (sim a3, which asks) -> ASK 1/1, Wilson [0.2065, 1]
    ask = row(result, "airline", "ASK")
    assert (ask["n"], ask["gar_case_k"]) == (1, 1)
    assert ask["gar_case_ci_low"] == pytest.approx(ONE_OF_ONE[0], abs=1e-6)
    assert result.ask_gold_source == "checked list of 1 task(s)"
    assert result.ask_candidates[0]["used_as_gold"] is False
    # an empty checked list: no ASK row at all
    none = tau2_diagnostics(path, config=Tau2Config(ask_tasks=frozenset()))
    assert [r["gold_class"] for r in none.rows] == ["TOOL_CALL", "REFUSE"]
    # a bare classifier preset is accepted as the config (the other settings default)
    from callscope.calibration.classify import ASK_OVER_TOOL_CALL

    preset_result = tau2_diagnostics(path, config=ASK_OVER_TOOL_CALL)
    assert preset_result.config["classifier"]["name"] == "ask_over_tool_call"
    assert row(preset_result, "airline", "REFUSE")["gar_case_k"] == 1
    # a write-tool pattern that matches nothing and no τ² labels: only the doc verb is left
    bare = Tau2Config(write_pattern=r"^$", use_tau2_tool_types=False, use_stock_types=False)
    res = tau2_diagnostics(path, config=bare)
    assert domain_row(res, "airline")["write_tools"] == [
        "cancel_reservation",  # "Cancel the whole reservation."
        "certificate_for_user",
        "update_reservation_flights",  # "Update the flights ..."
    ]
    assert (
        res.write_tools["airline"]["cancel_reservation"]["source"]
        == "description verb 'cancel' (no τ² label)"
    )


def test_airline_without_schemas_checks_names_only(tmp_path: Path) -> None:
    result = tau2_diagnostics(
        write_airline(tmp_path / "airline.json", tool_defs=False),
        config=Tau2Config(use_stock_schemas=False),
    )
    dr = domain_row(result, "airline")
    # known names: task actions (cancel_reservation, get_reservation_details,
    # update_reservation_flights) + calls answered without error (get_user_details, ...);
    # upgrade_cabin only ever errored -> stage 1; the other 6 calls are unchecked
    assert dr["stage_mode"] == "names_only"
    assert dr["stage_mix"] == {"0": 0, "1": 1, "2": 0, "3": 0, "unchecked": 6}
    assert result.sources[0]["tool_schemas"] is False
    # without descriptions the doc rule cannot fire: certificate_for_user is unknown
    assert "certificate_for_user" not in result.write_tools["airline"]


# --------------------------------------------------------------------------- retail, directory


def test_retail_directory_layout_with_tasks_file(tmp_path: Path) -> None:
    run_dir = write_retail_dir(tmp_path / "retail_run")
    tasks = write_tasks_file(tmp_path / "retail_tasks.json")
    run = read_tau2_run(run_dir)
    assert run.layout == "dir" and run.domain == "retail" and run.functions is None
    assert [s["id"] for s in run.simulations] == ["r-1", "r-2", "r-3"]
    assert any("r-4.json: not valid JSON" in p for p in run.problems)
    assert any("simulation r-5 is in the index but has no file" in p for p in run.problems)

    result = tau2_diagnostics(run_dir, tasks)
    # TOOL_CALL: r-2 (all checks match, reward 1) known; r-3 has no reward_info -> no verdict
    tc = row(result, "retail", "TOOL_CALL")
    assert (tc["n"], tc["gar_case_k"], tc["acc_k"], tc["n_gar_unknown"]) == (1, 1, 1, 1)
    assert tc["n_tasks"] == 1
    assert tc["gar_case_ci_low"] == pytest.approx(ONE_OF_ONE[0], abs=1e-6)
    # REFUSE: r-1 calls only get_order_details (read) -> hit, reward 1
    rf = row(result, "retail", "REFUSE")
    assert (rf["n"], rf["gar_case_k"], rf["acc_k"]) == (1, 1, 1)
    # ASK: r_refuse is a candidate ("do not reveal", "unless the agent asks"); r-1 asks while
    # refusing (one message is both REFUSE and ASK)
    ask = row(result, "retail", "ASK")
    assert (ask["n"], ask["gar_case_k"]) == (1, 1)
    r1 = next(s for s in result.simulations if s.id == "r-1")
    assert r1.message_classes[-1] == ["REFUSE", "ASK"]
    cand = result.ask_candidates[0]
    assert (cand["task_id"], cand["cues"]) == (
        "r_refuse",
        ["unless the agent asks", "do not reveal"],
    )
    r3 = next(s for s in result.simulations if s.id == "r-3")
    assert r3.error == "infrastructure_error" and r3.passed is None
    # names only: get_order_detail errored and is no task action -> stage 1, nearest is the
    # real name; the other three calls are unchecked
    dr = domain_row(result, "retail")
    # τ²'s stock retail schemas stand in for the missing tool_defs (item 17): the three
    # known calls pass stages 1-2 (two then pass stage 3, one is stage 2), the typo is stage 1
    assert dr["stage_mode"] == "stock schemas"
    assert dr["stage_mix"]["1"] == 1 and dr["stage_mix"]["unchecked"] == 0
    assert sum(dr["stage_mix"].values()) == 4
    bad = next(c for c in result.calls if c.name == "get_order_detail")
    assert bad.nearest == "get_order_details"
    # CONFIRM: "Sure, do it." after "Shall I proceed? (yes/no)"
    assert dr["confirm"]["write_calls"] == 1 and dr["confirm"]["rule_k"] == 1
    assert (
        result.write_tools["retail"]["exchange_delivered_order_items"]["source"]
        == "τ² stock label 'write' (retail)"
    )


def test_retail_without_tasks_reports_missing_tasks(tmp_path: Path) -> None:
    result = tau2_diagnostics(write_retail_dir(tmp_path / "retail_run"))
    assert result.rows == []
    missing = [p for p in result.problems if "not found in the run's tasks" in p]
    assert len(missing) == 3
    assert domain_row(result, "retail")["n_simulations"] == 3


# --------------------------------------------------------------------------- a folder of runs


def test_folder_of_runs_three_domains_and_bad_files(tmp_path: Path) -> None:
    root = tmp_path / "simulations"
    write_airline(root / "airline.json")
    write_retail_dir(root / "retail_run")
    write_mock(root / "mock_run" / "results.json")
    (root / "broken.json").write_text("{not json", encoding="utf-8")
    (root / "notes.json").write_text(json.dumps({"hello": 1}), encoding="utf-8")
    tasks = write_tasks_file(root / "retail_tasks.json")  # a tasks file is not a run
    runs, problems = find_tau2_runs(root)
    assert sorted((r.domain, r.layout) for r in runs) == [
        ("airline", "file"),
        ("mock", "file"),
        ("retail", "dir"),
    ]
    assert len(problems) == 3
    assert any("broken.json: not valid JSON" in p for p in problems)
    assert any("notes.json: not a τ²-bench results file" in p and "hello" in p for p in problems)
    assert any("retail_tasks.json: a JSON list" in p for p in problems)

    result = tau2_diagnostics(root, tasks)
    assert [(r["domain"], r["gold_class"]) for r in result.rows] == [
        ("airline", "TOOL_CALL"),
        ("airline", "ASK"),
        ("airline", "REFUSE"),
        ("mock", "TOOL_CALL"),
        ("mock", "ASK"),
        ("retail", "TOOL_CALL"),
        ("retail", "ASK"),
        ("retail", "REFUSE"),
    ]
    # mock: one simulation, asks for the user id, "Confirmed." after "Please confirm."
    mock_tc = row(result, "mock", "TOOL_CALL")
    assert (mock_tc["n"], mock_tc["gar_case_k"], mock_tc["acc_k"]) == (1, 1, 1)
    mock = domain_row(result, "mock")
    assert mock["stage_mode"] == "schemas"
    assert mock["stage_mix"] == {"0": 1, "1": 0, "2": 0, "3": 0, "unchecked": 0}
    assert mock["confirm"]["rule_k"] == 1
    assert mock["class_counts"] == {"TOOL_CALL": 1, "REFUSE": 0, "ASK": 2, "CONFIRM": 0, "OTHER": 2}
    # run totals: airline (7,1,3,1,6) + retail (4,1,2,0,4) + mock (1,0,2,0,2)
    assert result.class_counts == {
        "TOOL_CALL": 12,
        "REFUSE": 2,
        "ASK": 7,
        "CONFIRM": 1,
        "OTHER": 12,
    }
    assert result.capability["below"] == ["REFUSE", "ASK", "CONFIRM"]
    # CONFIRM over all writes: airline 2/4, retail 1/1, mock 1/1 -> 4/6
    assert result.confirm["write_calls"] == 6 and result.confirm["rule_k"] == 4
    assert len(result.sources) == 3
    # ASK candidates only for tasks a run simulated (the retail tasks file is not airline's)
    assert [(c["domain"], c["task_id"]) for c in result.ask_candidates] == [
        ("airline", "0"),
        ("mock", "m1"),
        ("retail", "r_refuse"),
    ]
    assert result.ask_candidates[1]["cues"] == ["if asked"]
    table = gar_table(result.rows, "τ²-bench action-class diagnostics").to_rich()
    assert table.row_count == 8
    assert domain_table(result.domain_rows).to_rich().row_count == 3
    json.dumps(result.to_dict())


# --------------------------------------------------------------------------- malformed input


def test_malformed_and_foreign_files_raise_clear_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"info": {}, "simulations": [', encoding="utf-8")
    with pytest.raises(Tau2FormatError, match=r"broken\.json: not valid JSON"):
        tau2_diagnostics(broken)
    foreign = tmp_path / "bfcl.json"
    foreign.write_text(json.dumps({"accuracy": 0.5, "total_count": 2}), encoding="utf-8")
    with pytest.raises(Tau2FormatError, match="not a τ²-bench results file.*accuracy"):
        tau2_diagnostics(foreign)
    one_sim = tmp_path / "sim.json"
    one_sim.write_text(json.dumps(airline_simulations()[0]), encoding="utf-8")
    with pytest.raises(Tau2FormatError, match="one τ²-bench simulation"):
        read_tau2_run(one_sim)
    bad_sims = tmp_path / "bad_sims.json"
    bad_sims.write_text(json.dumps({"info": {}, "simulations": {"a": 1}}), encoding="utf-8")
    with pytest.raises(Tau2FormatError, match="'simulations' is not a list"):
        read_tau2_run(bad_sims)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "x.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(Tau2FormatError, match="no τ²-bench results found.*a JSON list"):
        tau2_diagnostics(empty)
    with pytest.raises(FileNotFoundError):
        tau2_diagnostics(tmp_path / "nope")
    with pytest.raises(Tau2FormatError, match="not a τ²-bench tasks file"):
        read_tasks_file(foreign)
    no_id = tmp_path / "tasks.json"
    no_id.write_text(json.dumps([{"user_scenario": "x"}]), encoding="utf-8")
    with pytest.raises(Tau2FormatError, match="task #0 is not an object with an 'id'"):
        read_tasks_file(no_id)


def test_tolerates_missing_optional_fields_and_bad_simulations(tmp_path: Path) -> None:
    # minimal results: no info, no tasks key, sims without reward_info/trial/id, one sim that
    # is not an object, one without messages; tasks come from a list given in code
    data = {
        "simulations": [
            {"task_id": 7, "messages": [{"role": "assistant", "content": "Which order?"}]},
            "garbage",
            {"id": "s2", "task_id": 7},
        ]
    }
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    tasks = [{"id": 7, "evaluation_criteria": {"actions": []}}]
    result = tau2_diagnostics(path, tasks)
    assert result.sources[0]["domain"] == "mini"  # no domain_name: the file's stem
    assert any("simulation #1: not a JSON object" in p for p in result.problems)
    assert any("simulation s2: no 'messages'" in p for p in result.problems)
    rf = row(result, "mini", "REFUSE")
    # no write, no reward: GAR 1/1, Acc unknown
    assert (rf["n"], rf["gar_case_k"], rf["acc"], rf["n_no_reward"]) == (1, 1, None, 1)
    assert "1 without reward" in tau2_markdown(result)


# --------------------------------------------------------------------------- units


def test_task_gold_and_scenario_cues() -> None:
    assert task_gold_class({"evaluation_criteria": {"actions": []}}) == "REFUSE"
    assert task_gold_class({"evaluation_criteria": {"actions": [{"name": "x"}]}}) == "TOOL_CALL"
    # only user-side actions (telecom): the agent is to guide the user, not to refuse: no gold
    user_only = {"evaluation_criteria": {"actions": [{"name": "toggle", "requestor": "user"}]}}
    assert task_gold_class(user_only) is None
    assert task_gold_class({"evaluation_criteria": {"actions": None}}) is None
    assert task_gold_class({}) is None
    text = scenario_text(AIRLINE_TASKS[0])
    assert "emma_kim_9957" in text and "If the agent asks" in text
    assert ask_cue_hits("Withhold your zip code. Don\u2019t provide it.") == [
        "withhold",
        "don't provide",
    ]
    assert ask_cue_hits("The agent will ask you nothing.") == []


def test_tool_functions_and_write_decisions() -> None:
    tau = tool_functions({"environment_info": {"tool_defs": AIRLINE_TOOL_DEFS}})
    assert tau is not None and tau[0]["name"] == "get_user_details"
    assert tau[0]["parameters"]["required"] == ["user_id"]
    assert tool_functions({"environment_info": {"tool_defs": None}}) is None
    assert tool_functions({}) is None
    openai = tool_functions(
        {"environment_info": {"tool_defs": [{"type": "function", "function": {"name": "f"}}]}}
    )
    assert openai == [{"name": "f", "description": "", "parameters": {}}]
    decided = decide_write_tools(
        ["book_reservation", "search_direct_flight", "transfer_to_human_agents", "calculate"],
        None,
        {"calculate": "generic"},
        Tau2Config(write_tools=frozenset({"search_direct_flight"})),
    )
    # no domain: no stock labels, the name pattern guesses (and says the tool is unknown)
    assert {n: (d["write"], d["source"]) for n, d in decided.items()} == {
        "book_reservation": (True, "name pattern (no τ² label)"),
        "calculate": (False, "τ² tool_type 'generic' in the file"),
        "search_direct_flight": (True, "config write_tools"),
        "transfer_to_human_agents": (True, "name pattern (no τ² label)"),
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes.", (True, "yes")),
        ("yes, please", (True, "yes, please")),
        ("Okay, go ahead and do that.", (True, "go ahead")),
        ("Sure thing! My zip is 12345.", (True, "sure")),
        ("\u201cI confirm\u201d the change.", (True, "i confirm")),
        ("No, I don't want that.", (False, "negation 'no' in the first sentence")),
        ("Yes, but wait, what is the fee?", (False, "user message ends with a question")),
        ("Yes. Actually, hold on a second.", (False, "veto phrase 'hold on'")),
        ("I want to cancel my trip.", (False, "no affirmative cue in the first sentence")),
        ("Yes I know. ###STOP###", (True, "yes")),
        ("###STOP###", (False, "empty user message")),
    ],
)
def test_affirms(text: str, expected: tuple[bool, str]) -> None:
    assert affirms(text) == expected


def test_detect_confirmation_needs_a_preceding_agent_question() -> None:
    msgs = [
        agent(GREETING),
        user("Yes, cancel reservation ABC."),  # affirmative, but only after a greeting
        agent(None, call("x", "cancel_reservation", reservation_id="ABC")),
    ]
    d = detect_confirmation(msgs, 2)
    assert d.confirmed is False and d.user_index == 1 and d.cue == "yes"
    assert "had not asked" in d.reason
    from callscope.calibration.confirm import ConfirmConfig

    assert detect_confirmation(msgs, 2, ConfirmConfig(require_agent_request=False)).confirmed
    assert detect_confirmation(msgs[2:], 0).reason == "no user message before the call"


def test_kappa_agreement_and_answer_parsing() -> None:
    # rule [T,T,F,F], judge [T,F,F,F]: po 3/4, pa .5, pb .25, pe .5*.25+.5*.75 = .5 -> .5
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == 0.5
    assert cohen_kappa([True, True], [True, True]) is None  # both constant: 0/0
    assert cohen_kappa([], []) is None
    stats = agreement_stats([True, False, True], [True, None, False])
    assert stats == {
        "n": 2,
        "undecided": 1,
        "rule_yes": 2,
        "judge_yes": 1,
        "agreement": 0.5,
        "kappa": 0.0,
    }
    assert parse_judge_answer("YES") is True
    assert parse_judge_answer("<think>no, wait... yes</think>\nNo.") is False
    assert parse_judge_answer("Answer: yes") is True
    assert parse_judge_answer("unclear") is None
    assert parse_judge_answer("Nobody knows") is None


def test_transcript_is_cut_to_its_tail() -> None:
    from callscope.calibration.confirm import ConfirmConfig

    msgs = [user("a" * 50), agent("b" * 50), tool("t", "c" * 500)]
    full = render_transcript(msgs, 3)
    assert full.splitlines()[0] == "USER: " + "a" * 50
    assert full.splitlines()[2] == "TOOL RESULT: " + "c" * 300 + " ..."
    short = render_transcript(msgs, 3, ConfirmConfig(judge_max_chars=40))
    assert short.startswith("[... earlier conversation omitted ...]\n")
    assert len(short.split("\n", 1)[1]) == 40


def test_calibrate_from_tau2_cli_writes_tables_and_page(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from callscope.cli import app

    run = write_airline(tmp_path / "airline.json")
    res = CliRunner().invoke(
        app, ["calibrate", "--from-tau2", str(run), "-o", str(tmp_path / "out")]
    )
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "out" / "tau2-diagnostics.json").read_text())
    assert data["rows"], "GAR rows were written"
    page = (tmp_path / "out" / "report.html").read_text()
    assert "GAR and Acc per domain and gold class" in page and "airline" in page
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "tau2"}')
    res = CliRunner().invoke(
        app, ["calibrate", "--from-tau2", str(bad), "-o", str(tmp_path / "o2")]
    )
    assert res.exit_code == 2 and "Traceback" not in res.output
