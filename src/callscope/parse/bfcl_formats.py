"""Answer formats no 2024 BFCL handler reads, for a model BFCL's handler map does not name.

Each is a decoder of :data:`~callscope.parse.bfcl_decode.BFCL_DECODERS` (registered there
after the handler families, so :func:`~callscope.parse.bfcl_decode.choose_decoder` tries them
last on ties): ``function_call_tag`` (granite's ``<function_call> {json}``),
``tool_call_tag`` (``<tool_call>...</tool_call>`` anywhere), ``fenced`` (Markdown code fences
holding JSON or a Python call list) and ``json_calls`` (``{"name", "arguments"}`` JSON).
"""

from __future__ import annotations

from typing import Any

from callscope.core.jsonl import loads_bounded
from callscope.parse.bfcl_syntax import (
    Irrelevant,
    WrongFormat,
    answer_text,
    arguments_of,
    json_value,
    read_bfcl_calls,
    wrap_list,
)
from callscope.parse.literals import Rejected
from callscope.types import ToolCall

# Formats no 2024 handler reads, tried (with every family of bfcl_decode) for a model the handler map
# does not name (:func:`choose_decoder`). Each reads ``{"name", "arguments"}`` objects
# (:func:`_named_calls`); each scan is a bounded ``str.find`` walk, linear in the answer.

#: the most call blocks one answer is read for (the rest are not read)
MAX_BLOCKS = 256


def _named(obj: Any) -> ToolCall:
    """One ``{"name", "arguments"}`` object (``parameters`` for ``arguments``; arguments
    given as a JSON string are read; an OpenAI ``{"function": {...}}`` is its function)."""
    if isinstance(obj, dict) and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise Rejected("call is not a {name, arguments} object")
    raw = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(raw, str):
        raw = json_value(raw)
    return ToolCall(name=obj["name"], arguments=arguments_of(raw))


def _named_calls(value: Any) -> list[ToolCall]:
    """A ``{"name", "arguments"}`` object, a list of them, or ``{"tool_calls": [...]}``."""
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    return [_named(item) for item in items[:MAX_BLOCKS]]


def function_call_tags(result: Any) -> list[ToolCall]:
    """``<function_call> {"name": ..., "arguments": {...}}`` pieces (IBM granite's
    function-calling models; BFCL's later granite handler): the text split on the tag,
    every non-blank piece one JSON call; ``no_function`` is the model declining."""
    text = answer_text(result)
    if "<function_call>" not in text:
        raise Rejected("no <function_call> tag")
    calls: list[ToolCall] = []
    for piece in text.split("<function_call>", MAX_BLOCKS)[:MAX_BLOCKS]:
        piece = piece.strip()
        if not piece:
            continue
        try:
            value = loads_bounded(piece)
        except ValueError:
            raise WrongFormat("a <function_call> piece is not JSON") from None
        if isinstance(value, dict) and value.get("name") == "no_function":
            raise Irrelevant("no_function: the model declined")
        calls.extend(_named_calls(value))
    return calls


def _between(text: str, opening: str, closing: str) -> list[str]:
    """The bodies of ``opening ... closing`` blocks, in order (a last block left open runs
    to the end of the text); at most :data:`MAX_BLOCKS`."""
    out: list[str] = []
    pos = text.find(opening)
    while pos >= 0 and len(out) < MAX_BLOCKS:
        start = pos + len(opening)
        end = text.find(closing, start)
        out.append(text[start : end if end >= 0 else len(text)])
        if end < 0:
            break
        pos = text.find(opening, end + len(closing))
    return out


def tool_call_tags(result: Any) -> list[ToolCall]:
    """``<tool_call>{json}</tool_call>`` blocks anywhere in the answer, on one line or many
    (Hermes' handler reads them only as whole lines), each one call or a list of calls."""
    blocks = _between(answer_text(result), "<tool_call>", "</tool_call>")
    if not blocks:
        raise Rejected("no <tool_call> block")
    return [c for body in blocks for c in _named_calls(json_value(body.strip()))]


def fenced(result: Any) -> list[ToolCall]:
    """Markdown code fences (```` ```json ````, ```` ```python ````, plain ```` ``` ````),
    each body JSON calls (:func:`_named_calls`) or, when not JSON, a Python call list."""
    text = answer_text(result)
    bodies = _between(text, "```", "```")
    if not bodies:
        raise Rejected("no ``` fence")
    calls: list[ToolCall] = []
    for body in bodies:
        newline = body.find("\n")
        head = body[:newline] if newline >= 0 else ""
        if head.strip().isidentifier():  # a language tag: ```json, ```python
            body = body[newline + 1 :]
        body = body.strip()
        try:
            value = loads_bounded(body)
        except ValueError:
            calls.extend(read_bfcl_calls(wrap_list(body)))
        else:
            calls.extend(_named_calls(value))
    return calls


def json_calls(result: Any) -> list[ToolCall]:
    """The answer as JSON calls (:func:`_named_calls`): stored as JSON, or text that is."""
    if isinstance(result, str):
        result = json_value(result.strip())
    return _named_calls(result)
