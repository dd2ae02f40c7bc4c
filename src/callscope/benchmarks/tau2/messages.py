"""What a τ²-bench simulation records: the agent's tool calls and their tool responses, the
reward, the action checks and how the simulation ended.

A simulation is ``{id, task_id, trial, messages[], reward_info, termination_reason, ...}``;
messages have a ``role`` (``user``, ``assistant``, ``tool``), ``content`` and, for the agent,
``tool_calls`` (``{id, name, arguments, requestor}``); the tool messages that follow an
assistant message answer its calls (matched by ``id``, else by position), with ``error``
set when the call failed. ``reward_info`` holds ``reward`` (1 = task passed) and
``action_checks`` (per expected action: ``action``, ``action_match``, ``tool_type`` in newer
τ² versions). Checks of actions the *user* performs (``action.requestor == "user"``, telecom's
device toggles) are not the agent's: :func:`action_check_counts` leaves them out by default.

:func:`task_mismatch` checks that a simulation's action checks belong to its task (action
ids, else names and arguments); :func:`failed_check_kinds` says why the agent's failed checks
failed (``count``: the tool was called fewer times than the task expects it; ``arguments``:
called often enough, but never with the expected arguments; ``order``: every expected action
has a matching call, but not in the reference order; ``other``: none of these).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from callscope.benchmarks.tau2.reader import Tau2Run, as_dict, valid_reward
from callscope.benchmarks.tau2.tasks import all_task_actions, task_actions
from callscope.core.jsonl import loads_bounded

#: ``termination_reason`` values that mark a simulation as ended in error.
TERMINATION_ERRORS: frozenset[str] = frozenset(
    {
        "agent_error",
        "user_error",
        "too_many_errors",
        "timeout",
        "infrastructure_error",
        "context_window_exceeded",
        "unexpected_error",
    }
)


def call_arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments as a dict: the dict itself, or a JSON object string decoded;
    ``{}`` for anything else."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = loads_bounded(raw)
        except ValueError:  # not JSON, nested too deeply, an integer over the digit limit
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def agent_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The agent's tool calls in ``message`` (``requestor`` not ``"user"``), each with a
    non-empty ``name``; OpenAI-shaped calls (``{"function": {...}}``) are flattened."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return []
    out = []
    for call in calls:
        if not isinstance(call, dict) or call.get("requestor") == "user":
            continue
        if isinstance(call.get("function"), dict):  # OpenAI shape, tolerated
            call = {**call, **call["function"]}
        if isinstance(call.get("name"), str) and call["name"]:
            out.append(call)
    return out


def tool_responses(messages: Sequence[Mapping[str, Any]], index: int) -> list[Mapping[str, Any]]:
    """The tool messages that answer the calls of ``messages[index]`` (in call order)."""
    out = []
    for msg in messages[index + 1 :]:
        if msg.get("role") != "tool":
            break
        out.append(msg)
    return out


def call_errors(messages: Sequence[Mapping[str, Any]], index: int) -> dict[int, bool | None]:
    """Per call of ``messages[index]``: whether its tool response was an error (``None`` =
    no response found). Matched by ``id``, else by position."""
    calls = agent_calls(messages[index])
    responses = tool_responses(messages, index)
    by_id = {r.get("id"): r for r in responses if r.get("id") is not None}
    out: dict[int, bool | None] = {}
    for k, call in enumerate(calls):
        resp = by_id.get(call.get("id")) if call.get("id") is not None else None
        if resp is None and k < len(responses):
            resp = responses[k]
        out[k] = None if resp is None else bool(resp.get("error"))
    return out


def reward_of(sim: Mapping[str, Any]) -> float | None:
    """``reward_info.reward`` of a simulation as a float; ``None`` when there is none or it
    is not a finite number in ``[0, 1]`` (:func:`~callscope.benchmarks.tau2.reader.
    valid_reward`: NaN, an infinity, 2.0 or -1.0 are no reward, not a failure)."""
    return valid_reward(as_dict(sim.get("reward_info")).get("reward"))


def action_checks(sim: Mapping[str, Any], agent_only: bool = True) -> list[dict[str, Any]]:
    """``reward_info.action_checks`` of a simulation (objects only); with ``agent_only`` the
    checks of the user's actions (``action.requestor == "user"``) are left out."""
    checks = as_dict(sim.get("reward_info")).get("action_checks")
    if not isinstance(checks, list):
        return []
    out = [c for c in checks if isinstance(c, dict)]
    if agent_only:
        out = [c for c in out if as_dict(c.get("action")).get("requestor") != "user"]
    return out


def action_check_counts(
    sim: Mapping[str, Any], agent_only: bool = True
) -> tuple[int | None, int | None]:
    """``(checks, failed)`` of ``reward_info.action_checks`` (a check fails unless its
    ``action_match`` is true; with ``agent_only``, the agent's checks only);
    ``(None, None)`` when the simulation has no such checks."""
    checks = action_checks(sim, agent_only)
    if not checks:
        return None, None
    failed = sum(c.get("action_match") is not True for c in checks)
    return len(checks), failed


def _action_key(action: Mapping[str, Any]) -> tuple[str, str]:
    args = action.get("arguments") or {}
    return str(action.get("name")), json.dumps(args, sort_keys=True, default=str)


def task_mismatch(sim: Mapping[str, Any], task: Mapping[str, Any] | None) -> str | None:
    """Why the simulation's action checks do not belong to ``task`` (``None`` when they do,
    when there are no checks, or when the task is unknown). Compared by ``action_id`` when
    the checks and the task both have ids, else by action name and arguments."""
    checks = action_checks(sim, agent_only=False)
    if not checks or task is None:
        return None
    expected = all_task_actions(task) or []
    actions = [as_dict(c.get("action")) for c in checks]
    ids = [a.get("action_id") for a in actions]
    task_ids = {a.get("action_id") for a in expected}
    if all(isinstance(i, str) for i in ids) and None not in task_ids:
        foreign = [i for i in ids if i not in task_ids]
        if foreign:
            return (
                f"action checks {', '.join(map(str, foreign[:4]))}"
                + (" ..." if len(foreign) > 4 else "")
                + f" are not actions of task {sim.get('task_id')!r}"
                + f" (its actions: {', '.join(sorted(map(str, task_ids))) or 'none'})"
            )
        return None
    keys = {_action_key(a) for a in expected}
    foreign_names = [a.get("name") for a in actions if _action_key(a) not in keys]
    if foreign_names:
        return (
            f"action checks of {', '.join(map(str, foreign_names[:4]))} do not match the "
            f"expected actions of task {sim.get('task_id')!r}"
        )
    return None


def _matches(call: tuple[str, dict[str, Any]], action: Mapping[str, Any]) -> bool:
    name, args = call
    if name != action.get("name"):
        return False
    want = as_dict(action.get("arguments"))
    keys = action.get("compare_args")
    keys = list(want) if not isinstance(keys, list) else keys
    return all(k in args and args[k] == want.get(k) for k in keys)


def simulation_calls(sim: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The agent's tool calls of a simulation in order, as ``(name, arguments)``."""
    return [
        (c["name"], call_arguments(c.get("arguments")))
        for m in sim.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "assistant"
        for c in agent_calls(m)
    ]


def failed_check_kinds(sim: Mapping[str, Any], task: Mapping[str, Any] | None) -> list[str]:
    """Why the simulation's agent action checks failed, one kind per failed check
    (``count`` / ``arguments`` / ``other``, see the module docstring), plus ``order`` once
    when the simulation failed (a failed check or a reward below 1), every expected agent
    action has a matching call, and the first matching calls are out of reference order.
    ``[]`` when nothing failed or the task is unknown."""
    if task is None:
        return []
    expected = task_actions(task) or []
    calls = simulation_calls(sim)
    n_expected = Counter(str(a.get("name")) for a in expected)
    n_called = Counter(name for name, _ in calls)
    kinds: list[str] = []
    for check in action_checks(sim):
        if check.get("action_match") is True:
            continue
        action = as_dict(check.get("action"))
        name = str(action.get("name"))
        if n_called[name] < max(1, n_expected[name]):
            kinds.append("count")
        elif not any(_matches(c, action) for c in calls):
            kinds.append("arguments")
        else:
            kinds.append("other")
    reward = reward_of(sim)
    if expected and (kinds or (reward is not None and reward < 1)):
        firsts = [next((i for i, c in enumerate(calls) if _matches(c, a)), None) for a in expected]
        if None not in firsts and firsts != sorted(firsts):  # type: ignore[type-var]
            kinds.append("order")
    return kinds


def tool_types(sims: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Tool name -> τ²'s ``tool_type`` (lower-cased) from the simulations' action checks
    (the first label seen wins)."""
    types: dict[str, str] = {}
    for sim in sims:
        for check in as_dict(sim.get("reward_info")).get("action_checks") or []:
            if not isinstance(check, dict):
                continue
            name = as_dict(check.get("action")).get("name")
            kind = check.get("tool_type")
            if isinstance(name, str) and isinstance(kind, str):
                types.setdefault(name, kind.lower())
    return types


def known_tool_names(run: Tau2Run, tasks: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Tool names the run shows to exist: expected actions of its tasks, and calls that got
    a non-error tool response."""
    names = {
        a["name"]
        for t in tasks.values()
        for a in (task_actions(t) or [])
        if isinstance(a.get("name"), str)
    }
    for sim in run.simulations:
        msgs = sim["messages"]
        for i, msg in enumerate(msgs):
            if msg.get("role") != "assistant":
                continue
            errors = call_errors(msgs, i)
            for k, call in enumerate(agent_calls(msg)):
                if errors.get(k) is False:
                    names.add(call["name"])
    return names
