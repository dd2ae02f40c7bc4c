"""The wire shapes callscope reads and writes, as ``TypedDict``\\ s (one owner, issue 48).

The OpenAI chat form every check reads (:class:`ChatMessage`, :class:`ChatToolCall`,
:class:`ChatTool`, :class:`ChatRequest`, :class:`ChatCompletion`), the Anthropic Messages format
(:class:`AnthropicBlock`, :class:`AnthropicMessage`) and the OpenAI Responses format
(:class:`ResponsesItem`, :class:`ResponsesResponse`) that :mod:`callscope.integrations.formats`
reads into the chat form and writes back, the ``callscope`` annotation an integration adds (:class:`CallscopeNote`) and
the call rows the guard reports (:class:`CallRow`).

They are ``TypedDict``\\ s, not dataclasses: the values stay the plain JSON objects the hosts
and servers exchange (nothing is converted, nothing changes at run time); the types name the
fields the code reads. Every field is optional (``total=False``): a value read from outside
may lack any of them, and the code reads them with ``.get``. :data:`JsonObject` is the one
alias for a value that truly is arbitrary JSON (a JSON Schema, a call's arguments, a host's
extra fields).
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "AnthropicBlock",
    "AnthropicMessage",
    "CallRow",
    "ChatChoice",
    "ChatCompletion",
    "ChatMessage",
    "ChatRequest",
    "ChatTool",
    "ChatToolCall",
    "FunctionCall",
    "FunctionSpec",
    "JsonObject",
    "CallscopeNote",
    "ResponsesItem",
    "ResponsesResponse",
    "content_text",
]

#: a JSON object whose keys are not known in advance (a JSON Schema, a call's arguments)
JsonObject = dict[str, Any]


class FunctionCall(TypedDict, total=False):
    """A chat tool call's ``function``: the name and the arguments as a JSON string (a
    legacy ``function_call`` has the same shape)."""

    name: Any
    arguments: Any


class ChatToolCall(TypedDict, total=False):
    """One entry of an assistant message's ``tool_calls`` (``index`` in a stream's delta)."""

    index: int
    id: Any
    type: str
    function: FunctionCall


class ChatMessage(TypedDict, total=False):
    """A chat-form message: ``role``, ``content`` (a string, ``None`` or content parts), an
    assistant's ``tool_calls`` (or legacy ``function_call``), a tool message's
    ``tool_call_id``."""

    role: str
    content: Any
    tool_calls: list[ChatToolCall]
    function_call: FunctionCall
    tool_call_id: str
    name: str


class FunctionSpec(TypedDict, total=False):
    """A function's spec as the registry reads it: ``name``, ``description``, the JSON
    Schema of its ``parameters``."""

    name: str
    description: str
    parameters: JsonObject


class ChatTool(TypedDict, total=False):
    """An OpenAI chat tool (``{"type": "function", "function": spec}``); a bare
    :class:`FunctionSpec` is accepted where tools are read."""

    type: str
    function: FunctionSpec


class ChatRequest(TypedDict, total=False):
    """A request of any route as the guard reads it: chat ``messages`` (or Anthropic
    ``messages`` of content blocks), the Responses format's ``input``, ``tools`` and the
    legacy ``functions``, Anthropic's ``system``."""

    model: str
    messages: list[ChatMessage]
    input: Any
    system: Any
    instructions: Any
    tools: list[Any]
    functions: list[FunctionSpec]
    stream: bool


class ChatChoice(TypedDict, total=False):
    """One choice of a chat completion."""

    index: int
    message: ChatMessage
    finish_reason: str | None


class ChatCompletion(TypedDict, total=False):
    """A whole chat completion (``choices[0].message`` is the answer)."""

    id: str
    object: str
    model: str
    choices: list[ChatChoice]
    usage: JsonObject


class AnthropicBlock(TypedDict, total=False):
    """An Anthropic content block: ``text``; ``tool_use`` (``id``, ``name``, ``input``);
    ``tool_result`` (its ``content``)."""

    type: str
    text: str
    id: Any
    name: Any
    input: Any
    content: Any


class AnthropicMessage(TypedDict, total=False):
    """A whole Anthropic Messages answer."""

    id: str
    type: str
    role: str
    model: Any
    content: list[AnthropicBlock]
    stop_reason: str | None
    stop_sequence: str | None
    usage: JsonObject


class ResponsesItem(TypedDict, total=False):
    """An OpenAI Responses item: a ``message`` (``role``, ``content``), a ``function_call``
    (``call_id``, ``name``, ``arguments``), a ``function_call_output`` (``output``)."""

    type: str
    id: str
    role: str
    status: str
    content: Any
    call_id: Any
    name: Any
    arguments: Any
    output: Any


class ResponsesResponse(TypedDict, total=False):
    """A whole OpenAI Responses answer (its ``output`` items are the answer)."""

    id: str
    object: str
    model: Any
    status: str
    output: list[ResponsesItem]


class CallscopeNote(TypedDict, total=False):
    """The ``callscope`` field a host integration puts on an answer: the verdict, a
    repair's record, and ``error`` when a re-ask failed or the check itself did (the answer
    then goes through as it came); ``choices``: the verdicts of an answer's other choices
    (``n > 1``), in order."""

    verdict: JsonObject
    repair: JsonObject
    error: str
    choices: list[JsonObject]


class CallRow(TypedDict):
    """Each call of a checked answer by position, as the guard reports it (the proxy's extra
    field, the guardrail's note)."""

    position: int
    name: str | None
    stage: int | None
    reasons: list[str]


def content_text(content: Any) -> str:
    r"""The text of a chat message's ``content``: a string, or the text parts of a list of
    content parts (``[{"type": "text", "text": ...}, ...]``, as OpenAI-compatible servers and
    hosts write it), joined by newlines; ``""`` for anything else. The one reader of a
    message's text (the guard's evidence, the model backends' replies).

    >>> content_text([{"type": "text", "text": "a"}, {"type": "image_url"}, "b"]), content_text(5)
    ('a\nb', '')
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p["text"] if isinstance(p, dict) and isinstance(p.get("text"), str) else p
            for p in content
        ]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""
