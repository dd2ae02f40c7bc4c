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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

from callscope.core.jsonl import read_jsonl
from callscope.guard.check import TurnVerdict, check, message_of
from callscope.guard.record import GUARD_MODE, stored_verdict, verdict_row
from callscope.guard.trace_values import kind_of
from callscope.records import Attempt, Outcome
from callscope.records.wire import ChatCompletion, ChatMessage, ChatRequest, content_text
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
    """One assistant turn of a log and the guard's verdict on it: ``source`` is the
    conversation's message list itself (shared by its turns, never copied), the turn's
    request is its first ``turn`` messages (:attr:`messages`)."""

    conversation: str
    turn: int
    model: str
    verdict: TurnVerdict
    source: Sequence[ChatMessage]
    response: ChatMessage

    @property
    def messages(self) -> list[ChatMessage]:
        """The messages before the turn (a list made when asked: the turns of a conversation
        keep one list between them, not one copy each, which grew with the square of its
        length)."""
        return list(self.source[: self.turn])


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


def _no_message(body: dict[str, Any]) -> str:
    """Why a response body holds no assistant message, ``""`` when it holds one: a
    ``chat.completion`` whose ``choices`` is not a non-empty list whose first choice has a
    ``message`` object, or a body that is neither a completion nor a message (read before
    :func:`~callscope.guard.check.message_of`, which makes up an empty message for these)."""
    if "choices" not in body:
        if any(k in body for k in ("role", "content", "tool_calls")):
            return ""  # a message itself (a logged pair's response)
        return "neither 'choices' nor a message"
    choices = body["choices"]
    if not isinstance(choices, list) or not choices:
        return "'choices' is not a non-empty list"
    first = choices[0]
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        return "the first choice has no 'message' object"
    return ""


def _pair(cid: str, request: ChatRequest, response: Any) -> ChatConversation | str:
    """A request and its response as a one-turn conversation, or why they cannot be one."""
    messages = _messages(request)
    if messages is None:
        return f"{cid}: request has no 'messages' list"
    if not isinstance(response, dict):
        return f"{cid}: response is not an object ({kind_of(response)})"
    status = response.get("status_code")
    if status is not None and status != 200:
        return f"{cid}: response status {status}"
    missing = _no_message(_body(response))
    if missing:
        return f"{cid}: response has no message ({missing})"
    message = message_of(_body(response))
    if not isinstance(message, dict) or message.get("role", "assistant") != "assistant":
        return f"{cid}: response has no assistant message"
    model = _body(response).get("model") or request.get("model") or "chatlog"
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
                if isinstance(got, str):  # (named by the line once: by its id after it)
                    errors.append(f"{where}: {got}" if "id" in row else got)
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


#: the characters of earlier context (the user messages before the last one, the tool
#: results) a turn of a recorded conversation is checked against: the newest ones, the message
#: that straddles the bound read by its end (the last user message, the query, is read whole).
#: A live check reads its request's whole conversation; over a log, that made checking all of
#: a conversation's turns grow with the square of its length (one conversation of 10,000
#: turns: 216 s and 2 GB). This bound makes it linear; the number is measured in
#: docs/guard.md ("Recorded chat logs").
CONTEXT_CHARS = 32_768
_EVIDENCE_ROLES = ("user", "tool", "function")


def _view(
    entries: list[tuple[ChatMessage, str]], lo: int, last_user: int, chars: int
) -> list[ChatMessage]:
    """The messages of one turn's evidence: the window ``entries[lo:]`` (its oldest cut to
    what fits :data:`CONTEXT_CHARS`) and the last user message, in order."""
    view: list[ChatMessage] = [entries[last_user][0]] if 0 <= last_user < lo else []
    for k in range(lo, len(entries)):
        m, text = entries[k]
        if k == lo and k != last_user and chars > CONTEXT_CHARS:  # straddles: its end only
            keep = CONTEXT_CHARS - (chars - len(text))  # (what the newer ones leave, > 0)
            m = {"role": m.get("role"), "content": text[len(text) - keep :]}
        view.append(m)
    return view


def evidence_views(
    messages: Sequence[Any], turns: Iterable[int]
) -> Iterator[tuple[int, list[ChatMessage]]]:
    """``(turn, view)`` for each of ``turns`` in ascending order: the messages a check of the
    turn reads, so that :func:`~callscope.guard.inputs.evidence_of` of the view is the
    turn's query (the last user message before it, whole) and its context (the earlier user
    messages and tool results, in order, their last :data:`CONTEXT_CHARS` characters).

    One pass over the conversation: each message's text is read once, the window moves
    forward as messages come, and a view holds at most the window's messages (not a copy of
    the conversation before the turn), so the work over all turns grows with the
    conversation's length times the bound, not with its square."""
    entries: list[tuple[ChatMessage, str]] = []  # the messages with evidence, and their text
    last_user = -1  # the newest user message in ``entries``
    lo = 0  # the window's oldest entry
    chars = 0  # the characters of ``entries[lo:]``, the last user message's left out
    read = 0  # the messages read
    for t in sorted(turns):
        while read < min(t, len(messages)):
            m = messages[read]
            read += 1
            role = m.get("role") if isinstance(m, dict) else None
            text = content_text(m.get("content")) if role in _EVIDENCE_ROLES else ""
            if not text:
                continue
            if role == "user":  # the new query; the one before becomes context (if in view)
                if last_user >= lo:
                    chars += len(entries[last_user][1])
                last_user = len(entries)
            else:
                chars += len(text)
            entries.append((m, text))
            while lo < len(entries):  # drop the oldest while the rest still fill the bound
                size = 0 if lo == last_user else len(entries[lo][1])
                if chars - size < CONTEXT_CHARS:
                    break
                chars -= size
                lo += 1
        yield t, _view(entries, lo, last_user, chars)


def diagnose_conversations(
    conversations: Iterable[ChatConversation], grounding: str | Grounding | None = None
) -> list[ChatTurn]:
    """The guard's verdict on every assistant turn, in log order: each turn checked against
    its evidence view (:func:`evidence_views`: the last user message and the last
    :data:`CONTEXT_CHARS` characters of earlier context), built in one pass over the
    conversation."""
    out: list[ChatTurn] = []
    for conv in conversations:
        for i, view in evidence_views(conv.messages, conv.turns):
            response = conv.messages[i]
            verdict = check(response, conv.tools, view, grounding)
            out.append(ChatTurn(conv.id, i, conv.model, verdict, conv.messages, response))
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


def read_view(view: Iterable[ChatMessage]) -> list[ChatMessage]:
    """The messages of an evidence view (:func:`evidence_views`) as the check read them:
    each one's role and text, nothing else (what a turn of a log stores as its request: a
    ``tool_call_id``, a message's other keys and the parts of a content list that are not
    text are not evidence)."""
    return [{"role": m.get("role"), "content": content_text(m.get("content"))} for m in view]


def checked_views(turns: Iterable[ChatTurn]) -> Iterator[tuple[ChatTurn, list[ChatMessage]]]:
    """Each turn with calls and the messages its check read (:func:`read_view` of its
    evidence view, built again in one pass over its conversation: the turns of one
    conversation follow each other and share its message list), one turn at a time, in
    ascending turn order within a conversation."""
    checked = (t for t in turns if t.verdict.calls)
    for _, run in groupby(checked, key=lambda t: id(t.source)):
        ordered = sorted(run, key=lambda t: t.turn)
        views = evidence_views(ordered[0].source, [t.turn for t in ordered])
        for t, (_, view) in zip(ordered, views, strict=True):
            yield t, read_view(view)


def write_chatlog_store(
    run_dir: str | Path, turns: Sequence[ChatTurn], grounding: str | None = None
) -> Path:
    """The checked turns of a log as a run store (one case and outcome per turn with calls,
    :mod:`callscope.guard.record`), for ``callscope report``. A turn's attempt stores as
    its request what its check read (:func:`checked_views`: the query and at most
    :data:`CONTEXT_CHARS` characters of earlier context, each message's role and text), not
    the conversation before it: that grew with the square of the conversation's length
    (one conversation of 2,000 turns: 552 MB, of 4,000: 2.2 GB; now 149 and 340 MB)."""
    name = get_grounding(grounding).name
    store = RunStore(run_dir)
    try:
        store.set_meta("guard:source", "chatlog")
        for model in sorted({t.model for t in turns}):
            store.set_meta(f"config:{model}", {"source": "chatlog", "max_attempts": 1})
        for t, read in checked_views(turns):
            case_id = f"{t.conversation}#{t.turn}"
            case = Case(
                id=case_id,
                query=t.verdict.query,
                functions=t.verdict.functions,
                meta={"conversation": t.conversation, "turn": t.turn},
            )
            attempt = Attempt(
                attempt=1,
                messages=read,
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
    "checked_views",
    "diagnose_conversations",
    "evidence_views",
    "read_chat_logs",
    "read_view",
    "summarize_turns",
    "write_chatlog_store",
]
