"""One τ²-bench simulation diagnosed: the classes of the agent's messages, the SAAG stage of
every agent tool call, CONFIRM before every write, and GAR per gold class.

The GAR rules (:data:`GAR_RULES`, calibration paper §4.2, as read by
:mod:`callscope.calibration.tau2`): REFUSE = the agent called no write tool; ASK = at least
one agent message is an ask (multi-label classifier); TOOL_CALL = no failed action check of
the *agent's* actions (checks of the user's actions, ``action.requestor == "user"``, are left
out; ``None``, no verdict, when the simulation has no agent action checks). Acc is
``reward == 1``. A TOOL_CALL task's reference path is ``write`` when one of its expected agent
actions is a write tool, else ``read-only``; a failed simulation's failed checks are sorted by
kind (:func:`callscope.benchmarks.tau2.messages.failed_check_kinds`).

SAAG stage of a call: :func:`callscope.saag.cascade.diagnose` against the run's tool schemas
(else τ²'s stock schemas of its domain) and the user text so far; without any schemas, stage 1
only against the tool names known from the run, a known name then being ``unchecked`` (stage
``None``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callscope.benchmarks.tau2.messages import (
    TERMINATION_ERRORS,
    action_check_counts,
    agent_calls,
    call_arguments,
    failed_check_kinds,
    reward_of,
)
from callscope.benchmarks.tau2.reader import Tau2Run
from callscope.benchmarks.tau2.tasks import task_actions, task_gold_class
from callscope.calibration.classify import ClassifierConfig, emission_classes
from callscope.calibration.confirm import ConfirmConfig, ConfirmJudge, detect_confirmation
from callscope.records import CallRecord, SimulationRecord, WriteDecision
from callscope.saag.cascade import diagnose
from callscope.types import ACTION_CLASSES, ASK, OTHER, REFUSE, TOOL_CALL, ToolCall

#: Row order of the gold classes (as BFCL's base, miss_param, miss_func).
GOLD_ORDER: tuple[str, ...] = (TOOL_CALL, ASK, REFUSE)

GAR_RULES: dict[str, str] = {
    TOOL_CALL: "no failed action check of the agent's actions",
    ASK: "an ask was detected",
    REFUSE: "no write tool called",
}


# --------------------------------------------------------------------------- per simulation


def message_classes_of(message: Mapping[str, Any], config: ClassifierConfig) -> list[str]:
    """Every class whose cues fire on an agent message (multi-label; its text and its agent
    tool calls); OTHER for a shape the classifier does not read."""
    emission = {
        "content": message.get("content") if isinstance(message.get("content"), str) else None,
        "tool_calls": [
            {"name": c["name"], "arguments": c.get("arguments")} for c in agent_calls(message)
        ],
    }
    try:
        fired = emission_classes(emission, config)
    except TypeError:
        fired = {OTHER}
    return [c for c in ACTION_CLASSES if c in fired]


def _stage(
    call: ToolCall,
    functions: list[dict[str, Any]] | None,
    known: set[str],
    query: str,
    observed: list[str] | None = None,
) -> tuple[int | None, list[str], str | None]:
    """``(stage, failure kinds, nearest name)`` of a call (see the module docstring); the
    outputs of earlier tool calls (``observed``) are the grounding context."""
    context = observed or ()
    if functions is not None:
        d = diagnose(call, functions, query, context=context)
        return d.stage, d.failure_kinds(), d.nearest
    if call.name in known:
        return None, [], None
    d = diagnose(call, [{"name": n} for n in sorted(known)], query, context=context)
    return d.stage, d.failure_kinds(), d.nearest


def _writes(writes: Mapping[str, WriteDecision], name: str) -> bool:
    """Whether the run's write decisions say tool ``name`` writes (unknown names do not)."""
    decision = writes.get(name)
    return decision is not None and decision["write"]


def diagnose_simulation(
    run: Tau2Run,
    sim: Mapping[str, Any],
    task: Mapping[str, Any] | None,
    ask_gold: bool,
    writes: Mapping[str, WriteDecision],
    known: set[str],
    classifier: ClassifierConfig,
    confirm: ConfirmConfig,
    judge: ConfirmJudge | None,
    group: str = "",
    functions: list[dict[str, Any]] | None = None,
) -> tuple[SimulationRecord, list[CallRecord]]:
    """Diagnose one simulation of ``run``: the classes of every agent message, the SAAG stage
    of every agent tool call (against ``run.functions``, else the ``known`` tool names), the
    CONFIRM verdicts of every write call (``writes``: the run's write decisions; the rule,
    and ``judge``, a :data:`~callscope.calibration.confirm.ConfirmJudge`, when given), and GAR per gold class by :data:`GAR_RULES` (the task's
    TOOL_CALL / REFUSE gold, and ASK when ``ask_gold``). ``task`` is ``None`` when the
    simulation's task is unknown: no TOOL_CALL / REFUSE verdict then. ``group``: the label
    of the agent / user simulator pair the rows group by. ``functions``: the tool schemas to
    check calls against when the run has none (τ²'s stock schemas)."""
    schemas = run.functions if run.functions is not None else functions
    messages: list[dict[str, Any]] = sim["messages"]
    sim_id = str(sim.get("id") or f"{sim['task_id']}#{sim.get('trial')}")
    task_id = str(sim["task_id"])
    user_texts: list[str] = []
    observed: list[str] = []
    message_classes: list[list[str]] = []
    calls: list[CallRecord] = []
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "user" and isinstance(msg.get("content"), str) and msg["content"].strip():
            user_texts.append(msg["content"])
            continue
        if role == "tool" and isinstance(msg.get("content"), str):
            observed.append(msg["content"][:20000])
            continue
        if role != "assistant":
            continue
        message_classes.append(message_classes_of(msg, classifier))
        query = "\n".join(user_texts)
        for call in agent_calls(msg):
            args = call_arguments(call.get("arguments"))
            stage, kinds, nearest = _stage(
                ToolCall(call["name"], args), schemas, known, query, observed
            )
            is_write = _writes(writes, call["name"])
            rec = CallRecord(
                domain=run.domain,
                simulation_id=sim_id,
                task_id=task_id,
                message_index=i,
                name=call["name"],
                arguments=args,
                write=is_write,
                stage=stage,
                failure_kinds=kinds,
                nearest=nearest,
                source=run.source,
            )
            if is_write:
                rec.confirm_rule = detect_confirmation(messages, i, confirm, classifier)
                if judge is not None:
                    rec.confirm_judge = judge(
                        messages, i, {"name": call["name"], "arguments": args}
                    )
            calls.append(rec)

    union = {c for classes in message_classes for c in classes}
    write_calls = sum(c.write for c in calls)
    n_checks, n_failed = action_check_counts(sim)
    n_all, _ = action_check_counts(sim, agent_only=False)
    reward = reward_of(sim)
    gold = task_gold_class(task) if task is not None else None
    path = None
    if gold == TOOL_CALL and task is not None:
        names = {str(a.get("name")) for a in task_actions(task) or []}
        path = "write" if any(_writes(writes, n) for n in names) else "read-only"
    gar: dict[str, bool | None] = {}
    if gold == REFUSE:
        gar[REFUSE] = write_calls == 0
    elif gold == TOOL_CALL:
        gar[TOOL_CALL] = None if n_failed is None else n_failed == 0
    if ask_gold:
        gar[ASK] = ASK in union
    reason = sim.get("termination_reason")
    reason = str(reason) if reason is not None else None
    trial = sim.get("trial")
    record = SimulationRecord(
        domain=run.domain,
        source=run.source,
        id=sim_id,
        task_id=task_id,
        trial=trial if isinstance(trial, int) and not isinstance(trial, bool) else None,
        gold_class=gold,
        ask_gold=ask_gold,
        reward=reward,
        passed=None if reward is None else abs(reward - 1.0) < 1e-9,
        termination_reason=reason,
        error=reason if reason in TERMINATION_ERRORS else None,
        message_classes=message_classes,
        union=[c for c in ACTION_CLASSES if c in union],
        write_calls=write_calls,
        action_checks=n_checks,
        failed_action_checks=n_failed,
        gar=gar,
        group=group,
        path=path,
        check_failures=failed_check_kinds(sim, task) if gold == TOOL_CALL else [],
        user_checks=(n_all or 0) - (n_checks or 0),
    )
    return record, calls
