"""Recorded chat logs diagnosed: every tool call, every assistant turn's action class.

Input lines (JSON Lines, any mix):

- a **conversation** ``{"id"?, "model"?, "messages": [...], "tools": [...]}`` (``functions``
  is read where ``tools`` is absent): every assistant message is a turn; one with
  ``tool_calls`` (or a call in its text) is checked against the tools and the user text
  before it (:func:`callscope.guard.check.check` on the messages before the turn);
- an **OpenAI batch** line: a request ``{"custom_id", "body": {"messages", "tools"}}`` (the
  batch input file) and a response ``{"custom_id", "response": {"body": <chat.completion>}}``
  (the output file), paired by ``custom_id`` across all the files read; the response's
  message is the one turn checked (the request's own history is context, not turns);
- a **logged pair** ``{"request": {...}, "response": {...}}`` (either may wrap a ``body``).

A line that is none of these, a batch half without its other half, or a response whose
``status_code`` is not 200 is counted as malformed with its reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.core.jsonl import read_jsonl
from callscope.guard.check import TurnVerdict, check, message_of
from callscope.guard.record import GUARD_MODE, stored_verdict, verdict_row
from callscope.records import Attempt, Outcome
from callscope.records.wire import ChatCompletion, ChatMessage, ChatRequest
from callscope.saag.groundings import Grounding, get_grounding
from callscope.store.run_store import RunStore
from callscope.types import Case


@dataclass
class ChatConversation:
    """One conversation to diagnose: ``turns`` are the indices in ``messages`` of the
    assistant messages to check (all of them for a conversation line)."""

    id: str
    messages: list[ChatMessage]
    tools: list[Any]
    model: str = "chatlog"
    turns: list[int] = field(default_factory=list)


@dataclass
class ChatTurn:
    """One assistant turn of a log and the guard's verdict on it."""

    conversation: str
    turn: int
    model: str
    verdict: TurnVerdict
    messages: list[ChatMessage]
    response: ChatMessage


@dataclass
class ChatLogSummary:
    """Counts over a log: tool calls per stage, assistant turns per action class, each
    conversation's stage counts (``{conversation: Counter(stage)}``, in reading order), and
    the answers: ``answer_stages`` counts the turns with calls by the turn's earliest failing
    stage (0: every call passed), ``multi_call`` the turns with several calls, ``no_call``
    the turns without a call by what they are (``abstained``, ``empty``)."""

    conversations: int = 0
    turns: int = 0
    calls: int = 0
    malformed: int = 0
    stages: Counter[int] = field(default_factory=Counter)
    actions: Counter[str] = field(default_factory=Counter)
    per_conversation: dict[str, Counter[int]] = field(default_factory=dict)
    answer_stages: Counter[int] = field(default_factory=Counter)
    multi_call: int = 0
    no_call: Counter[str] = field(default_factory=Counter)


def _body(x: Any) -> ChatCompletion:
    if isinstance(x, dict) and isinstance(x.get("body"), dict):
        return x["body"]
    return x if isinstance(x, dict) else {}


def _assistant_turns(messages: Sequence[Any]) -> list[int]:
    return [
        i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"
    ]


def _tools(request: ChatRequest) -> list[Any]:
    tools = request.get("tools", request.get("functions"))
    return tools if isinstance(tools, list) else []


def _messages(request: ChatRequest) -> list[ChatMessage] | None:
    messages = request.get("messages")
    if isinstance(messages, list) and all(isinstance(m, dict) for m in messages):
        return messages
    return None


def _pair(cid: str, request: ChatRequest, response: Any) -> ChatConversation | str:
    """A request and its response as a one-turn conversation, or why they cannot be one."""
    messages = _messages(request)
    if messages is None:
        return f"{cid}: request has no 'messages' list"
    resp = response if isinstance(response, dict) else {}
    status = resp.get("status_code")
    if status is not None and status != 200:
        return f"{cid}: response status {status}"
    try:
        message = message_of(_body(resp))
    except TypeError:
        return f"{cid}: response has no message"
    if not isinstance(message, dict) or message.get("role", "assistant") != "assistant":
        return f"{cid}: response has no assistant message"
    model = _body(resp).get("model") or request.get("model") or "chatlog"
    return ChatConversation(cid, [*messages, message], _tools(request), str(model), [len(messages)])


def read_chat_logs(paths: Iterable[str | Path]) -> tuple[list[ChatConversation], list[str]]:
    """Every conversation in ``paths`` (see the module docstring) and the malformed lines."""
    conversations: list[ChatConversation] = []
    errors: list[str] = []
    requests: dict[str, ChatRequest] = {}
    responses: dict[str, Any] = {}
    order: list[str] = []
    for path in paths:
        for n, row in read_jsonl(path):
            where = f"{Path(path).name}:{n}"
            if isinstance(row, Exception):
                errors.append(f"{where}: {row}")
                continue
            if "custom_id" in row:
                cid = str(row["custom_id"])
                if cid not in requests and cid not in responses:
                    order.append(cid)
                if isinstance(row.get("body"), dict):
                    requests[cid] = row["body"]
                elif "response" in row:  # an output line; ``response`` is null on an error
                    responses[cid] = row["response"] or {"status_code": f"error {row.get('error')}"}
                else:
                    errors.append(f"{where}: batch line with neither 'body' nor 'response'")
                continue
            if "request" in row and "response" in row:
                got = _pair(str(row.get("id", where)), _body(row["request"]), row["response"])
                if isinstance(got, str):
                    errors.append(f"{where}: {got}")
                else:
                    conversations.append(got)
                continue
            messages = _messages(row)
            if messages is None:
                errors.append(f"{where}: no 'messages' list (nor a batch or request/response line)")
                continue
            conversations.append(
                ChatConversation(
                    str(row.get("id", where)),
                    messages,
                    _tools(row),
                    str(row.get("model") or "chatlog"),
                    _assistant_turns(messages),
                )
            )
    for cid in order:
        if cid not in requests:
            errors.append(f"batch {cid}: response without its request (pass the input file too)")
        elif cid not in responses:
            errors.append(f"batch {cid}: request without a response")
        else:
            got = _pair(cid, requests[cid], responses[cid])
            if isinstance(got, str):
                errors.append(f"batch {got}")
            else:
                conversations.append(got)
    return conversations, errors


def diagnose_conversations(
    conversations: Iterable[ChatConversation], grounding: str | Grounding | None = None
) -> list[ChatTurn]:
    """The guard's verdict on every assistant turn, in log order."""
    out: list[ChatTurn] = []
    for conv in conversations:
        for i in conv.turns:
            before = conv.messages[:i]
            response = conv.messages[i]
            out.append(
                ChatTurn(
                    conv.id,
                    i,
                    conv.model,
                    check(response, conv.tools, before, grounding),
                    before,
                    response,
                )
            )
    return out


def call_rows(turns: Iterable[ChatTurn]) -> list[dict[str, Any]]:
    """One output row per assistant turn without calls and per tool call: conversation,
    turn (message index), action class, ``answer`` (``calls``, or what a turn without a call
    is: ``abstained``, ``empty``; ``broken`` for a call attempt that could not be read) and
    ``answer_stage`` (the turn's earliest failing stage over its calls; ``None`` without a
    call); for a call, its position in the turn (``call``, 0-based), name, ``arguments``
    (as read; ``{}`` for a call that could not be read), own ``stage``,
    reasons and correction, and ``repeated`` when it repeats an earlier call of the turn
    (same name and arguments)."""
    rows: list[dict[str, Any]] = []
    for t in turns:
        v = t.verdict
        base = {
            "conversation": t.conversation,
            "turn": t.turn,
            "action": v.action,
            "answer": v.no_call or "calls",
            "answer_stage": v.stage if v.calls else None,
        }
        if not v.calls:
            rows.append({**base, "call": None, "stage": None})
            continue
        again = set(v.repeated)
        for c in v.calls:
            rows.append(
                {
                    **base,
                    "call": c.index,
                    "name": c.name,
                    "arguments": c.arguments,
                    "stage": c.stage,
                    "reasons": list(c.reasons),
                    "correction": c.correction,
                    **({"repeated": True} if c.index in again else {}),
                }
            )
    return rows


def summarize_turns(turns: Sequence[ChatTurn], malformed: int = 0) -> ChatLogSummary:
    """Stage mix over all calls, action mix over all turns, stage mix per conversation, and
    the answers' stage mix (each turn with calls at its earliest failing stage)."""
    s = ChatLogSummary(turns=len(turns), malformed=malformed)
    for t in turns:
        s.actions[t.verdict.action] += 1
        if t.verdict.calls:
            s.answer_stages[t.verdict.stage] += 1
            s.multi_call += len(t.verdict.calls) > 1
        else:
            s.no_call[t.verdict.no_call or "abstained"] += 1
        per = s.per_conversation.setdefault(t.conversation, Counter())
        for c in t.verdict.calls:
            s.stages[c.stage] += 1
            per[c.stage] += 1
            s.calls += 1
    s.conversations = len(s.per_conversation)
    return s


def write_chatlog_store(
    run_dir: str | Path, turns: Sequence[ChatTurn], grounding: str | None = None
) -> Path:
    """The checked turns of a log as a run store (one case and outcome per turn with calls,
    :mod:`callscope.guard.record`), for ``callscope report``."""
    name = get_grounding(grounding).name
    store = RunStore(run_dir)
    try:
        store.set_meta("guard:source", "chatlog")
        for model in sorted({t.model for t in turns}):
            store.set_meta(f"config:{model}", {"source": "chatlog", "max_attempts": 1})
        for t in turns:
            if not t.verdict.calls:
                continue
            case_id = f"{t.conversation}#{t.turn}"
            case = Case(
                id=case_id,
                query=t.verdict.query,
                functions=t.verdict.functions,
                meta={"conversation": t.conversation, "turn": t.turn},
            )
            attempt = Attempt(
                attempt=1,
                messages=t.messages,
                reply={"text": t.verdict.content, "tool_calls": t.response.get("tool_calls")},
                parsed=[c.to_dict() for c in t.verdict.tool_calls],
                row=verdict_row(case, t.verdict, name),
                diagnosis=stored_verdict(t.verdict, name),
                action=t.verdict.action,
            )
            store.add_cases([case])
            store.save_outcome(t.model, None, Outcome(case_id, GUARD_MODE, [attempt]))
    finally:
        store.close()
    return Path(run_dir)


__all__ = [
    "ChatConversation",
    "ChatLogSummary",
    "ChatTurn",
    "call_rows",
    "diagnose_conversations",
    "read_chat_logs",
    "summarize_turns",
    "write_chatlog_store",
]
