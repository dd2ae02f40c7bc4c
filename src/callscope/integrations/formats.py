"""The API formats a host routes, read into (and written back from) the OpenAI chat form
:func:`callscope.guard.check.check` takes, free of any host package. An answer of the wrong
shape (``"content": 5``, a delta whose ``index`` is a list) reads as an answer without a
call, never as an exception inside the host.

LiteLLM's proxy serves the same model on ``/v1/chat/completions``, ``/v1/messages``
(Anthropic's Messages format) and ``/v1/responses`` (OpenAI's Responses format), whole and
streamed, and hands its post-call hooks each route's own objects (issue 46, measured on
litellm 1.108.7 and 1.110.2): a ``ModelResponse`` / ``ModelResponseStream`` chunks for chat;
a ``dict`` Anthropic message / its server-sent events as ``bytes`` for messages; a
``ResponsesAPIResponse`` / typed stream events (``response.completed`` carrying the whole
response) for responses. :data:`FORMATS` holds one :class:`ApiFormat` per route (a
registry, not an if-chain): how to recognise its answer, read the request's tools and
evidence, read the answer's assistant message (whole or from its chunks);
:mod:`callscope.integrations.format_writers` writes a repaired answer back in the route's
own format. The Agents SDK's run input is the
Responses format's input items (:func:`responses_messages`).

Every JSON read here comes from outside (a stream's event data) and goes through
:func:`callscope.core.jsonl.loads_bounded`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from callscope.core.jsonl import JsonLimitError, loads_bounded
from callscope.guard.check import content_text
from callscope.guard.inputs import later_choices
from callscope.records.wire import (
    AnthropicBlock,
    AnthropicMessage,
    ChatMessage,
    ChatRequest,
    ChatTool,
    ChatToolCall,
    FunctionSpec,
    JsonObject,
    ResponsesResponse,
)

#: an assistant message in the chat form: ``{"role": "assistant", "content", "tool_calls"}``
Message = ChatMessage


def as_dict(obj: Any) -> JsonObject:
    """A host object as plain data (``model_dump`` of a pydantic object; a dict as it is;
    ``{}`` for anything else)."""
    if isinstance(obj, dict):
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            out = dump()
        except (TypeError, ValueError):
            return {}
        return out if isinstance(out, dict) else {}
    return {}


def _call(call_id: Any, name: Any, arguments: Any) -> ChatToolCall:
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _items(value: Any) -> list[Any]:
    """``value`` when it is a list, else no items (an answer of the wrong shape reads as
    empty, never as an error inside the host)."""
    return value if isinstance(value, list) else []


def _message(text: str, calls: list[ChatToolCall]) -> Message:
    out: Message = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


# --------------------------------------------------------------------------- requests


def chat_tools(tools: Sequence[Any] | None) -> list[ChatTool | FunctionSpec]:
    """A request's tools in the form :func:`~callscope.guard.check.functions_of` reads:
    OpenAI chat tools and bare specs as they are, the Responses format's flat function
    tools (``{"type": "function", "name", "parameters"}``) as bare specs, Anthropic tools
    (``input_schema``) with their schema as ``parameters``; other tools are left out."""
    out: list[ChatTool | FunctionSpec] = []
    for t in tools or ():
        t = as_dict(t)
        if isinstance(t.get("function"), dict):
            out.append(t)
        elif isinstance(t.get("name"), str) and isinstance(t.get("input_schema"), dict):
            spec: FunctionSpec = {"name": t["name"], "parameters": t["input_schema"]}
            if isinstance(t.get("description"), str):
                spec["description"] = t["description"]
            out.append(spec)
        elif isinstance(t.get("name"), str) and t.get("type") in (None, "function"):
            out.append(t)
    return out


def anthropic_messages(messages: Sequence[Any] | None) -> list[ChatMessage]:
    """Anthropic ``messages`` in the chat form: a message's text blocks as its content, each
    ``tool_result`` block as a tool message (its text), an assistant's ``tool_use`` blocks
    as its calls. A chat-form message passes as it is (its ``content`` a string)."""
    out: list[ChatMessage] = []
    for m in messages or ():
        m = as_dict(m)
        role, content = m.get("role"), m.get("content")
        if not isinstance(role, str):
            continue
        if not isinstance(content, list):
            out.append(m)
            continue
        texts: list[str] = []
        calls: list[ChatToolCall] = []
        for block in content:
            block = as_dict(block)
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "tool_result":
                out.append({"role": "tool", "content": content_text(block.get("content"))})
            elif kind == "tool_use":
                calls.append(_call(block.get("id"), block.get("name"), block.get("input") or {}))
        if role == "assistant":
            out.append(_message("\n".join(texts), calls))
        elif texts:
            out.append({"role": role, "content": "\n".join(texts)})
    return out


def responses_messages(items: Any) -> list[ChatMessage]:
    """The Responses format's ``input`` (a string: one user message; a list of input items)
    in the chat form: messages by role with their text, a ``function_call_output`` as a
    tool message; other items (the model's own calls, reasoning) carry no evidence."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    out: list[ChatMessage] = []
    for raw in items if isinstance(items, list | tuple) else ():
        item = as_dict(raw)
        kind = item.get("type")
        if kind == "function_call_output":
            out.append({"role": "tool", "content": content_text(item.get("output"))})
        elif kind in (None, "message") and isinstance(item.get("role"), str):
            out.append({"role": item["role"], "content": content_text(item.get("content"))})
    return out


def request_messages(data: ChatRequest) -> list[ChatMessage]:
    """The evidence of any route's request as chat messages: ``messages`` (chat or
    Anthropic blocks) or the Responses format's ``input``."""
    if data.get("messages") is not None:
        return anthropic_messages(data.get("messages"))
    return responses_messages(data.get("input"))


# --------------------------------------------------------------------------- answers


def _anthropic_message(body: AnthropicMessage) -> Message:
    texts: list[str] = []
    calls: list[ChatToolCall] = []
    for block in _items(body.get("content")):
        block = as_dict(block)
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            calls.append(_call(block.get("id"), block.get("name"), block.get("input") or {}))
    return _message("\n".join(texts), calls)


def _responses_message(body: ResponsesResponse) -> Message:
    texts: list[str] = []
    calls: list[ChatToolCall] = []
    for item in _items(body.get("output")):
        item = as_dict(item)
        if item.get("type") == "function_call":
            calls.append(_call(item.get("call_id"), item.get("name"), item.get("arguments")))
        elif item.get("type") == "message":
            texts.append(content_text(item.get("content")))
    return _message("\n".join(t for t in texts if t), calls)


def sse_events(chunks: Sequence[Any]) -> list[tuple[str, Any]]:
    """The ``(event, data)`` pairs of a server-sent event stream given as its chunks
    (``bytes`` or ``str``, an event possibly split over chunks); data that is not JSON (or
    nested past the reader's limit) is kept as its text."""
    text = "".join(c.decode("utf-8", "replace") if isinstance(c, bytes) else str(c) for c in chunks)
    out: list[tuple[str, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event, data = "", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if not data:
            continue
        raw = "\n".join(data)
        try:
            value: Any = loads_bounded(raw)
        except (ValueError, JsonLimitError):
            value = raw
        out.append((event or (value.get("type", "") if isinstance(value, dict) else ""), value))
    return out


def anthropic_stream_message(chunks: Sequence[Any]) -> Message | None:
    """The assistant message an Anthropic event stream assembles to (its text deltas, each
    ``tool_use`` block with its ``input_json_delta`` pieces); ``None`` when it holds no
    ``message_start``."""
    events = sse_events(chunks)
    if not any(e == "message_start" for e, _ in events):
        return None
    blocks: dict[int, AnthropicBlock] = {}
    pieces: dict[int, str] = {}  # each block's ``input_json_delta`` pieces, joined
    for event, data in events:
        if not isinstance(data, dict):
            continue
        index = data.get("index")
        if not isinstance(index, int):  # a list or an object is no block's index
            continue
        if event == "content_block_start":
            blocks[index] = cast(AnthropicBlock, dict(as_dict(data.get("content_block"))))
            pieces[index] = ""
        elif event == "content_block_delta" and index in blocks:
            delta = as_dict(data.get("delta"))
            if delta.get("type") == "text_delta":
                text = blocks[index].get("text")
                text = text if isinstance(text, str) else ""
                blocks[index]["text"] = text + str(delta.get("text", ""))
            elif delta.get("type") == "input_json_delta":
                pieces[index] += str(delta.get("partial_json", ""))
    content: list[AnthropicBlock] = []
    for i, block in sorted(blocks.items()):
        if block.get("type") == "tool_use":
            raw = pieces[i]
            block["input"] = raw if raw else (block.get("input") or {})
        content.append(block)
    texts = [
        b["text"] for b in content if b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    calls = [
        _call(b.get("id"), b.get("name"), b.get("input"))
        for b in content
        if b.get("type") == "tool_use"
    ]
    return _message("\n".join(texts), calls)


def _event_type(chunk: Any) -> str:
    kind = getattr(chunk, "type", None)
    if kind is None and isinstance(chunk, dict):
        kind = chunk.get("type")
    return str(getattr(kind, "value", kind) or "")


def responses_stream_message(chunks: Sequence[Any]) -> Message | None:
    """The assistant message of a Responses event stream: its ``response.completed``
    event's whole response; else the items of its ``response.output_item.done`` events;
    ``None`` when it has neither."""
    items: list[Any] = []
    for c in chunks:
        kind = _event_type(c)
        if kind == "response.completed":
            return _responses_message(
                as_dict(getattr(c, "response", None) or as_dict(c).get("response"))
            )
        if kind == "response.output_item.done":
            items.append(getattr(c, "item", None) or as_dict(c).get("item"))
    return _responses_message({"output": items}) if items else None


@dataclass(frozen=True)
class ApiFormat:
    """One route's format (module docstring): ``whole`` tells its whole answer and
    ``chunk`` its stream's chunks; ``message`` reads a whole answer's assistant message,
    ``stream_message`` a stream's (``None``: not this format, or nothing to read)."""

    name: str
    whole: Callable[[Any], bool]
    chunk: Callable[[Any], bool]
    message: Callable[[Any], Message | None]
    stream_message: Callable[[Sequence[Any]], Message | None]
    #: the messages of the answer's other choices (``n > 1``; chat completions only), whole
    #: and streamed
    others: Callable[[Any], list[Message]] = lambda _: []
    stream_others: Callable[[Sequence[Any]], list[Message]] = lambda _: []


def _is_chat(obj: Any) -> bool:
    return hasattr(obj, "choices") or (
        isinstance(obj, dict) and isinstance(obj.get("choices"), list)
    )


def _is_anthropic(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("type") == "message" and "content" in obj


def _is_responses(obj: Any) -> bool:
    return getattr(obj, "object", None) == "response" or (
        isinstance(obj, dict) and obj.get("object") == "response"
    )


def _chat_message(obj: Any) -> Message | None:
    choices = _items(as_dict(obj).get("choices"))
    msg = as_dict(choices[0]).get("message") if choices else None
    return msg if isinstance(msg, dict) else None


def _chat_others(obj: Any) -> list[Message]:
    """The messages of a chat completion's choices after the first
    (:func:`~callscope.guard.inputs.later_choices`)."""
    return [m for _, m in later_choices(as_dict(obj))]


def _chat_stream_others(chunks: Sequence[Any]) -> list[Message]:
    """The messages a chat-completions stream assembles to for its choices after the first
    (each by its ``index``, in the order they first appear)."""
    indexes: dict[Any, None] = {}
    for chunk in chunks:
        for c in _items(as_dict(chunk).get("choices")):
            index = as_dict(c).get("index", 0)
            if index != 0 and type(index) is int:
                indexes[index] = None
    found = (chat_stream_message(chunks, i) for i in indexes)
    return [m for m in found if m is not None]


def chat_stream_message(chunks: Sequence[Any], index: int = 0) -> Message | None:
    """The assistant message a chat-completions stream assembles to, as the ``openai`` SDK
    assembles it for its user: the choice ``index``'s (the first's) ``content`` pieces joined; each tool call
    gathered by its ``index`` (its position in the delta when it has none), its ``id`` as
    first given, its ``name`` and ``arguments`` pieces joined. ``None`` when no chunk has
    that choice. (LiteLLM's ``stream_chunk_builder`` drops a call whose first delta has no
    ``id``, which the client still receives: the guard then let it through unchecked.)

    >>> chat_stream_message([
    ...     {"choices": [{"index": 0, "delta": {"tool_calls": [
    ...         {"index": 0, "function": {"name": "get_", "arguments": '{"city": '}}]}}]},
    ...     {"choices": [{"index": 0, "delta": {"tool_calls": [
    ...         {"index": 0, "function": {"name": "weather", "arguments": '"Paris"}'}}]}}]},
    ... ])["tool_calls"][0]["function"]
    {'name': 'get_weather', 'arguments': '{"city": "Paris"}'}
    """
    seen = False
    text: list[str] = []
    calls: dict[Any, dict[str, Any]] = {}
    for chunk in chunks:
        choice = next(
            (
                as_dict(c)
                for c in _items(as_dict(chunk).get("choices"))
                if as_dict(c).get("index", 0) == index
            ),
            None,
        )
        if choice is None:
            continue
        seen = True
        delta = as_dict(choice.get("delta"))
        if isinstance(delta.get("content"), str):
            text.append(delta["content"])
        for position, piece in enumerate(_items(delta.get("tool_calls"))):
            piece = as_dict(piece)
            index = piece.get("index")
            key = index if type(index) is int else ("position", position)
            call = calls.setdefault(key, {"id": None, "name": "", "arguments": ""})
            if call["id"] is None and piece.get("id") is not None:
                call["id"] = piece["id"]
            function = as_dict(piece.get("function"))
            for part in ("name", "arguments"):
                if isinstance(function.get(part), str):
                    call[part] += function[part]
    if not seen:
        return None
    found = [_call(c["id"], c["name"], c["arguments"]) for c in calls.values()]
    return _message("".join(text), found)


#: the formats of the routes, by name (module docstring)
FORMATS: dict[str, ApiFormat] = {
    f.name: f
    for f in (
        ApiFormat(
            "chat",
            _is_chat,
            _is_chat,
            _chat_message,
            chat_stream_message,
            _chat_others,
            _chat_stream_others,
        ),
        ApiFormat(
            "messages",
            _is_anthropic,
            lambda c: isinstance(c, bytes | str),
            lambda obj: _anthropic_message(as_dict(obj)),
            anthropic_stream_message,
        ),
        ApiFormat(
            "responses",
            _is_responses,
            lambda c: _event_type(c).startswith("response."),
            lambda obj: _responses_message(as_dict(obj)),
            responses_stream_message,
        ),
    )
}


def format_of(response: Any) -> ApiFormat | None:
    """The format of a whole answer (``None``: none of :data:`FORMATS`)."""
    return next((f for f in FORMATS.values() if f.whole(response)), None)


def stream_format_of(chunks: Sequence[Any]) -> ApiFormat | None:
    """The format of a stream, by its first chunk."""
    if not chunks:
        return None
    return next((f for f in FORMATS.values() if f.chunk(chunks[0])), None)
