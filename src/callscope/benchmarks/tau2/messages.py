"""What a τ²-bench simulation records: the agent's tool calls and their tool responses, the
reward, the action checks and how the simulation ended.

A simulation is ``{id, task_id, trial, messages[], reward_info, termination_reason, ...}``;
messages have a ``role`` (``user``, ``assistant``, ``tool``), ``content`` and, for the agent,
``tool_calls`` (``{id, name, arguments, requestor}``); the tool messages that follow an
assistant message answer its calls (matched by ``id``, else by position), with ``error``
set when the call failed. ``reward_info`` holds ``reward`` (1 = task passed) and
``action_checks`` (per expected action: ``action``, ``action_match``, ``tool_type`` in newer
τ² versions).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from callscope.benchmarks.tau2.reader import Tau2Run, as_dict
from callscope.benchmarks.tau2.tasks import task_actions

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
            parsed = json.loads(raw)
        except json.JSONDecodeError:
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
    """``reward_info.reward`` of a simulation as a float; ``None`` when there is none."""
    reward = as_dict(sim.get("reward_info")).get("reward")
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        return float(reward)
    return None


def action_check_counts(sim: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """``(checks, failed)`` of ``reward_info.action_checks`` (a check fails unless its
    ``action_match`` is true); ``(None, None)`` when the simulation has no action checks."""
    checks = as_dict(sim.get("reward_info")).get("action_checks")
    if not isinstance(checks, list) or not checks:
        return None, None
    failed = sum(not (isinstance(c, dict) and c.get("action_match") is True) for c in checks)
    return len(checks), failed


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
