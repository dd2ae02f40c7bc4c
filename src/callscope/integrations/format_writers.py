"""Answers written back in a route's own format (issue 46): a repaired chat-form assistant
message as an Anthropic message (:func:`anthropic_body`) or its event stream
(:func:`anthropic_stream`), as the Responses format's output items
(:func:`responses_output`), and an Anthropic stream annotated in place
(:func:`annotate_anthropic_stream`). The reading side, and the registry of formats, is
:mod:`callscope.integrations.formats`.
"""

from __future__ import annotations

import json
from typing import Any

from callscope.core.jsonl import JsonLimitError, loads_bounded
from callscope.guard.check import content_text
from callscope.integrations.formats import Message, as_dict, sse_events
from callscope.records.wire import (
    AnthropicBlock,
    AnthropicMessage,
    CallscopeNote,
    JsonObject,
    ResponsesItem,
)


def anthropic_body(message: Message, like: JsonObject | None = None) -> AnthropicMessage:
    """A chat-form assistant message as an Anthropic message (text block, ``tool_use``
    blocks with their arguments as ``input``), keeping ``like``'s id, model and usage."""
    like = like or {}
    content: list[AnthropicBlock] = []
    if message.get("content"):
        content.append({"type": "text", "text": content_text(message.get("content"))})
    for c in message.get("tool_calls") or ():
        fn = as_dict(c).get("function") or {}
        try:
            args = loads_bounded(fn.get("arguments") or "{}")
        except (ValueError, JsonLimitError, TypeError):
            args = {}
        content.append(
            {"type": "tool_use", "id": as_dict(c).get("id"), "name": fn.get("name"), "input": args}
        )
    calls = any(b["type"] == "tool_use" for b in content)
    return {
        "id": like.get("id") or "msg_callscope",
        "type": "message",
        "role": "assistant",
        "model": like.get("model"),
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": like.get("usage") or {"input_tokens": 0, "output_tokens": 0},
    }


def _sse(event: str, data: JsonObject) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def anthropic_stream(body: AnthropicMessage, note: CallscopeNote | None = None) -> list[bytes]:
    """An Anthropic message as its event stream (``message_start``, one start / delta / stop
    per content block, ``message_delta`` with the stop reason and ``note`` as its
    ``callscope`` field, ``message_stop``)."""
    start = {**body, "content": [], "stop_reason": None}
    out = [_sse("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(body.get("content") or ()):
        if block.get("type") == "tool_use":
            head = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input"))}
        else:
            head = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block.get("text", "")}
        out.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": head},
            )
        )
        out.append(
            _sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
        )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    end: JsonObject = {
        "type": "message_delta",
        "delta": {"stop_reason": body.get("stop_reason"), "stop_sequence": None},
        "usage": {"output_tokens": as_dict(body.get("usage")).get("output_tokens", 0)},
    }
    if note is not None:
        end["callscope"] = note
    out.append(_sse("message_delta", end))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


def annotate_anthropic_stream(chunks: list[Any], note: CallscopeNote) -> list[Any]:
    """``chunks`` of an Anthropic event stream with ``note`` as the ``callscope`` field of
    its ``message_delta`` event (the one with the stop reason); unchanged when it has none."""
    for i in range(len(chunks) - 1, -1, -1):
        events = sse_events([chunks[i]])
        if len(events) == 1 and events[0][0] == "message_delta" and isinstance(events[0][1], dict):
            data = {**events[0][1], "callscope": note}
            encoded = _sse("message_delta", data)
            chunks[i] = encoded if isinstance(chunks[i], bytes) else encoded.decode()
            break
    return chunks


def responses_output(message: Message) -> list[ResponsesItem]:
    """A chat-form assistant message as the Responses format's output items (a ``message``
    with its text, a ``function_call`` per call)."""
    items: list[ResponsesItem] = []
    if message.get("content"):
        items.append(
            {
                "type": "message",
                "id": "msg_callscope",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {
                        "type": "output_text",
                        "text": content_text(message.get("content")),
                        "annotations": [],
                    }
                ],
            }
        )
    for i, c in enumerate(message.get("tool_calls") or ()):
        c = as_dict(c)
        fn = as_dict(c.get("function"))
        items.append(
            {
                "type": "function_call",
                "id": f"fc_callscope_{i}",
                "call_id": c.get("id") or f"call_callscope_{i}",
                "name": fn.get("name"),
                "arguments": fn.get("arguments") if isinstance(fn.get("arguments"), str) else "{}",
                "status": "completed",
            }
        )
    return items
