"""Issue 14, τ²-bench items 10-18, on hand-made minimal τ² results files (values by hand)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from callscope.benchmarks.tau2.messages import failed_check_kinds, task_mismatch
from callscope.benchmarks.tau2.reader import Tau2FormatError
from callscope.benchmarks.tau2.stock_tools import stock_functions, stock_tool_type
from callscope.benchmarks.tau2.tasks import boilerplate_sentences, classify_cue_hits
from callscope.benchmarks.tau2.write_tools import WRITE_VERBS, decide_write_tools
from callscope.calibration.tau2 import Tau2Config
from callscope.calibration.tau2_rows import POOLED
from callscope.report.tau2_tables import tau2_markdown
from callscope.runs.from_results import tau2_diagnostics


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def agent(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "tool_calls": list(calls) or None}


def call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": args, "requestor": "assistant"}


def tool(cid: str, content: str = "{}", error: bool = False) -> dict[str, Any]:
    return {"role": "tool", "id": cid, "content": content, "requestor": "assistant", "error": error}


def act(aid: str, name: str, requestor: str = "assistant", **args: Any) -> dict[str, Any]:
    return {"action_id": aid, "name": name, "arguments": args, "requestor": requestor}


def chk(action: dict[str, Any], match: bool) -> dict[str, Any]:
    return {"action": action, "action_match": match, "action_reward": float(match)}


def task(
    tid: str, actions: list[dict[str, Any]] | None, scenario: str = "", domain: str = "airline"
):
    return {
        "id": tid,
        "user_scenario": {"instructions": {"domain": domain, "task_instructions": scenario}},
        "evaluation_criteria": {"actions": actions},
    }


def sim(
    sid: str, tid: str, messages: list[dict[str, Any]], reward: float, checks=None, end="user_stop"
):
    return {
        "id": sid,
        "task_id": tid,
        "trial": 0,
        "messages": messages,
        "termination_reason": end,
        "reward_info": {"reward": reward, "action_checks": checks},
    }


def write_run(path: Path, domain: str, tasks, sims, agent_llm: str = "m-a") -> Path:
    info = {
        "environment_info": {"domain_name": domain, "tool_defs": None},
        "agent_info": {"implementation": "llm_agent", "llm": agent_llm},
        "user_info": {"implementation": "user_simulator", "llm": "u-1"},
    }
    path.write_text(json.dumps({"info": info, "tasks": tasks, "simulations": sims}))
    return path


def row(result, gold: str, path: str | None = None, group: str | None = None) -> dict[str, Any]:
    return next(
        r
        for r in result.rows
        if r["gold_class"] == gold
        and r.get("path") == path
        and (group is None or r["group"] == group)
    )


# --------------------------------------------------------------------------- item 10


def test_item10_stock_tool_types_transfer_is_not_a_write(tmp_path: Path) -> None:
    # REFUSE task: the agent refuses and transfers (τ² labels the transfer GENERIC), reward 1
    msgs = [
        user("Cancel my flight, I am user_1."),
        agent("I cannot cancel it.", call("c1", "transfer_to_human_agents", summary="x")),
        tool("c1"),
    ]
    p = write_run(tmp_path / "a.json", "airline", [task("0", [])], [sim("s0", "0", msgs, 1.0)])
    result = tau2_diagnostics(p)
    rf = row(result, "REFUSE")
    assert (rf["gar_case_k"], rf["n"], rf["bound_violation"]) == (1, 1, False)
    decision = result.write_tools["airline"]["transfer_to_human_agents"]
    assert decision["write"] is False and decision["source"] == "τ² stock label 'generic' (airline)"
    # the name pattern alone still says write: only a tool τ² does not label is guessed
    guessed = decide_write_tools(["transfer_funds"], None, {}, Tau2Config(), "airline")
    assert guessed["transfer_funds"]["source"] == "name pattern (no τ² label)"
    assert guessed["transfer_funds"]["known"] is False
    # the file's own tool_type wins over the stock label
    own = decide_write_tools(["calculate"], None, {"calculate": "write"}, Tau2Config(), "airline")
    assert own["calculate"]["write"] is True


def test_item10_stock_table_against_tau2_labels() -> None:
    # the labels of τ²'s tools.py (counted by hand from the @is_tool decorators)
    assert stock_tool_type("airline", "book_reservation") == "write"
    assert stock_tool_type("airline", "transfer_to_human_agents") == "generic"
    assert stock_tool_type("retail", "calculate") == "generic"
    assert stock_tool_type("telecom", "toggle_data_saver_mode") == "write"  # a user tool
    assert stock_tool_type("telecom", "toggle_data_saver_mode", side="agent") is None
    assert stock_tool_type("mock", "x") is None
    # the name pattern labels every WRITE tool of the agent sides right, and 3 GENERIC
    # transfer_to_human_agents tools wrong (the bug): measured here, not assumed
    import re

    pat = re.compile(r"^(?:" + "|".join(WRITE_VERBS) + r")_")
    wrong = [
        (d, f["name"])
        for d in ("airline", "retail", "telecom")
        for f in stock_functions(d) or []
        if bool(pat.search(f["name"])) != (stock_tool_type(d, f["name"]) == "write")
    ]
    assert wrong == [
        ("airline", "transfer_to_human_agents"),
        ("retail", "transfer_to_human_agents"),
        ("telecom", "transfer_to_human_agents"),
    ]


# --------------------------------------------------------------------------- item 11


def _mismatch_run(tmp_path: Path) -> Path:
    tasks = [task("1", [act("1_0", "cancel_reservation", reservation_id="R1")])]
    msgs = [user("Cancel R1"), agent(None, call("c1", "cancel_reservation", reservation_id="R1"))]
    # the check belongs to task 9, not to task 1
    checks = [chk(act("9_0", "book_reservation"), False)]
    return write_run(tmp_path / "m.json", "airline", tasks, [sim("s1", "1", msgs, 1.0, checks)])


def test_item11_task_id_mismatch_is_reported_and_rows_withheld(tmp_path: Path) -> None:
    p = _mismatch_run(tmp_path)
    result = tau2_diagnostics(p)
    assert len(result.warnings) == 1 and "TASK-ID MISMATCH" in result.warnings[0]
    assert "1 of 1 simulations" in result.warnings[0]
    assert result.rows == []
    assert result.acc_rows[0]["acc_k"] == 1 and result.acc_rows[0]["n_mismatch"] == 1
    allowed = tau2_diagnostics(p, config=Tau2Config(allow_task_mismatch=True))
    assert row(allowed, "TOOL_CALL")["n"] == 1
    # matching ids: no mismatch
    good = sim("s", "1", [], 1.0, [chk(act("1_0", "cancel_reservation"), True)])
    assert task_mismatch(good, task("1", [act("1_0", "cancel_reservation")])) is None


def test_item11_tasks_file_of_another_domain_is_refused(tmp_path: Path) -> None:
    p = _mismatch_run(tmp_path)
    other = tmp_path / "tasks.json"
    other.write_text(json.dumps([task("1", [act("1_0", "get_order_details")], domain="retail")]))
    with pytest.raises(Tau2FormatError, match="domain retail, not airline"):
        tau2_diagnostics(p, other)


# --------------------------------------------------------------------------- item 12


def test_item12_user_actions_do_not_count(tmp_path: Path) -> None:
    toggle, refuel = act("t0", "toggle_data", "user"), act("r1", "refuel_data", gb_amount=2.0)
    tasks = [
        task("mixed", [toggle, refuel], domain="telecom"),
        task("user_only", [act("a0", "toggle_airplane_mode", "user")], domain="telecom"),
    ]
    m = [user("fix my data"), agent(None, call("c1", "refuel_data", gb_amount=2.0)), tool("c1")]
    sims = [
        # the user's toggle failed, the agent's refuel matched: agent GAR 1
        sim("s1", "mixed", m, 0.0, [chk(toggle, False), chk(refuel, True)]),
        sim("s2", "user_only", [user("hi"), agent("Turn airplane mode off.")], 1.0),
    ]
    result = tau2_diagnostics(write_run(tmp_path / "t.json", "telecom", tasks, sims))
    tc = row(result, "TOOL_CALL")
    assert (tc["gar_case_k"], tc["n"]) == (1, 1)
    assert [r["gold_class"] for r in result.rows] == ["TOOL_CALL"]  # no REFUSE row
    assert any(
        "'user_only'" in p and "every expected action is the user's" in p for p in result.problems
    )
    s1 = next(s for s in result.simulations if s.id == "s1")
    assert (s1.action_checks, s1.failed_action_checks, s1.user_checks) == (1, 0, 1)


# --------------------------------------------------------------------------- items 13, 14


def test_item13_14_groups_per_agent_and_file_acc(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    tasks = [task("1", [act("1_0", "get_user_details", user_id="u1")])]
    good = [user("I am u1"), agent(None, call("c", "get_user_details", user_id="u1")), tool("c")]
    a_sims = [
        sim("a1", "1", good, 1.0, [chk(act("1_0", "get_user_details"), True)]),
        sim("a2", "1", good, 1.0, None),  # no checks: out of the TOOL_CALL row, in file Acc
    ]
    b_sims = [sim("b1", "1", good, 0.0, [chk(act("1_0", "get_user_details"), False)], "max_steps")]
    write_run(folder / "a.json", "airline", tasks, a_sims, agent_llm="model-A")
    write_run(folder / "b.json", "airline", tasks, b_sims, agent_llm="model-B")
    result = tau2_diagnostics(folder)
    assert result.groups == ["model-A (user: u-1)", "model-B (user: u-1)"]
    ra = row(result, "TOOL_CALL", group="model-A (user: u-1)")
    rb = row(result, "TOOL_CALL", group="model-B (user: u-1)")
    assert (ra["n"], ra["gar_case_k"], ra["n_gar_unknown"]) == (1, 1, 1)
    assert (rb["n"], rb["gar_case_k"], rb["n_max_steps"]) == (1, 0, 1)
    acc = {r["group"]: r for r in result.acc_rows}
    assert (acc["model-A (user: u-1)"]["acc_k"], acc["model-A (user: u-1)"]["acc_n"]) == (2, 2)
    assert acc["model-B (user: u-1)"]["n_max_steps"] == 1
    md = tau2_markdown(result)
    assert "**GAR and Acc: model-A (user: u-1)**" in md and "1 ended on max_steps" in md
    assert POOLED not in {r["group"] for r in result.rows}
    pooled = tau2_diagnostics(folder, config=Tau2Config(pooled=True))
    assert row(pooled, "TOOL_CALL", group=POOLED)["n"] == 2


# --------------------------------------------------------------------------- item 15


def test_item15_write_and_read_only_paths_and_failure_kinds(tmp_path: Path) -> None:
    tasks = [
        task("w", [act("w0", "cancel_reservation", reservation_id="R1")]),
        task("r", [act("r0", "get_user_details", user_id="u1")]),
    ]
    wrong_args = [
        user("cancel R1"),
        agent(None, call("c", "cancel_reservation", reservation_id="R2")),
    ]
    read = [user("I am u1"), agent(None, call("c", "get_user_details", user_id="u1")), tool("c")]
    sims = [
        sim(
            "sw",
            "w",
            wrong_args,
            0.0,
            [chk(act("w0", "cancel_reservation", reservation_id="R1"), False)],
        ),
        sim("sr", "r", read, 1.0, [chk(act("r0", "get_user_details"), True)]),
    ]
    result = tau2_diagnostics(write_run(tmp_path / "p.json", "airline", tasks, sims))
    assert [(r["gold_class"], r["path"]) for r in result.rows] == [
        ("TOOL_CALL", None),
        ("TOOL_CALL", "write"),
        ("TOOL_CALL", "read-only"),
    ]
    assert row(result, "TOOL_CALL", "write")["gar_case_k"] == 0
    assert row(result, "TOOL_CALL", "read-only")["gar_case_k"] == 1
    assert row(result, "TOOL_CALL")["check_failures"]["arguments"] == 1
    # count: never called; order: both matched but in the other order
    two = task("t", [act("a", "get_user_details", user_id="u"), act("b", "cancel_reservation")])
    none = sim("x", "t", [], 0.0, [chk(act("a", "get_user_details"), False)])
    assert failed_check_kinds(none, two) == ["count"]
    swapped = [
        agent(None, call("1", "cancel_reservation"), call("2", "get_user_details", user_id="u"))
    ]
    assert failed_check_kinds(sim("y", "t", swapped, 0.0, []), two) == ["order"]


# --------------------------------------------------------------------------- item 16


def test_item16_boilerplate_ask_candidates() -> None:
    shared = "If the agent asks what colour the sky is, say blue."
    texts = [f"Task {i}. {shared}" for i in range(3)] + ["If the agent asks, you are Ann."]
    boiler = boilerplate_sentences(texts)
    assert boiler == {"if the agent asks what colour the sky is, say blue."}
    assert classify_cue_hits(texts[0], boilerplate=boiler) == ([], ["if the agent asks"])
    assert classify_cue_hits(texts[3], boilerplate=boiler) == (["if the agent asks"], [])
    # telecom's stock boilerplate is known even in a one-task run
    tele = "For example: If the agent asks what the status bar shows, always ground your response on the results of the tool."
    assert classify_cue_hits(tele) == ([], ["if the agent asks"])


def test_item16_cli_write_read_and_ask_options(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from callscope.cli import app

    scen = "If the agent asks, your id is u1."
    tasks = [task("0", [], scenario=scen)]
    msgs = [user("hello"), agent("What is your id?", call("c", "get_user_details", user_id="u1"))]
    p = write_run(tmp_path / "c.json", "airline", tasks, [sim("s", "0", msgs, 1.0)])
    out = tmp_path / "out"
    args = ["calibrate", "--from-tau2", str(p), "-o", str(out)]
    res = CliRunner().invoke(
        app, [*args, "--write-tools", "get_user_details", "--ask-tasks", "none"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads((out / "tau2-diagnostics.json").read_text())
    assert data["write_tools"]["airline"]["get_user_details"]["source"] == "config write_tools"
    assert [r["gold_class"] for r in data["rows"]] == ["REFUSE"]  # no ASK gold: checked list empty
    assert data["rows"][0]["gar_case_k"] == 0  # the declared write breaks the refusal
    res = CliRunner().invoke(app, [*args, "--read-tools", "get_user_details", "--ask-tasks", "0"])
    data = json.loads((out / "tau2-diagnostics.json").read_text())
    assert {r["gold_class"]: r["gar_case_k"] for r in data["rows"]} == {"ASK": 1, "REFUSE": 1}


# --------------------------------------------------------------------------- item 17


def test_item17_stock_schemas_when_the_file_has_none(tmp_path: Path) -> None:
    tasks = [task("1", [act("1_0", "get_user_details", user_id="u1")])]
    msgs = [
        user("I am u1"),
        agent(None, call("c1", "get_user_details", user_id="u1")),  # stage 0
        tool("c1"),
        agent(None, call("c2", "get_reservation_details")),  # reservation_id missing: stage 2
        tool("c2", error=True),
    ]
    p = write_run(tmp_path / "s.json", "airline", tasks, [sim("s", "1", msgs, 1.0)])
    result = tau2_diagnostics(p)
    dr = result.domain_rows[0]
    assert dr["stage_mode"] == "stock schemas"
    assert dr["stage_mix"] == {"0": 1, "1": 0, "2": 1, "3": 0, "unchecked": 0}
    assert "(stock schemas)" in tau2_markdown(result)


# --------------------------------------------------------------------------- item 18


def test_item18_report_page(tmp_path: Path) -> None:
    from callscope.report.html import build_diagnostic_page
    from callscope.report.tau2_tables import tau2_page
    from callscope.runs.from_results import calibrate_from_tau2

    # REFUSE task where the agent wrote and still got reward 1: a bound violation
    scen = "If the agent asks, say <b>R1</b>."
    msgs = [user("cancel R1"), agent(None, call("c", "cancel_reservation", reservation_id="R1"))]
    sims = [sim("s", "0", msgs, 1.0), sim("s2", "gone", msgs, 0.0)]  # "gone": a problem
    p = write_run(tmp_path / "h.json", "airline", [task("0", [], scen)], sims)
    done = calibrate_from_tau2(p, tmp_path / "out")
    content = tau2_page(done.diagnostics, p)
    page = build_diagnostic_page(
        tmp_path / "out",
        content.title,
        content.tables,
        warnings=content.warnings,
        lists=content.lists,
    ).read_text()
    assert page.count(f"<h1>{content.title}</h1>") == 1 and "<h2>" not in page
    # two bound violations (Acc 1 > GAR 0): REFUSE (a write) and ASK (no ask), both red
    assert page.count('<tr class="row-red">') == 2
    assert "File-level Acc (pass^1)" in page
    for heading in ("ASK candidates", "Write-tool decisions", "Problems"):
        assert f"<h3>{heading}" in page
    assert "<b>R1</b>" not in page and "&lt;b&gt;R1&lt;/b&gt;" in page
