"""JSON call objects: one call object, native ``tool_calls`` lists, and JSON calls in text.

A call object is ``{"name": str, "arguments"|"parameters": object | JSON string}``, optionally
wrapped as ``{"type": "function", "function": {...}}`` (OpenAI); Ollama gives ``arguments``
as an object, OpenAI as a JSON string. The name is stripped and must not be empty; the
arguments must be a JSON object (``None`` or an empty string mean ``{}``), nested at most
:data:`~callscope.parse.literals.MAX_ARGUMENT_DEPTH` deep, with finite numbers only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from callscope.core.jsonl import TooDeep
from callscope.parse.literals import (
    MAX_CANDIDATES,
    MAX_NATIVE_CHARS,
    Rejected,
    check_depth,
    json_loads,
    json_raw_decode,
    json_size,
)
from callscope.types import ParseResult, ToolCall


def coerce_arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments (an object, a JSON string of one, or ``None``) as a checked dict."""
    if type(raw) is dict:  # the common case first (the same checks as below)
        check_depth(raw)
        return raw
    if raw is None:
        return {}
    if isinstance(raw, str):
        stripped = raw.strip()
        if not stripped:
            return {}
        try:
            raw = json_loads(stripped)
        except ValueError as exc:
            raise Rejected(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise Rejected(f"arguments must be an object, got {type(raw).__name__}")
    check_depth(raw)
    return raw


def call_from_object(obj: Any) -> ToolCall:
    """Read one call object (bare, OpenAI- or Ollama-style). Raises ``ValueError``."""
    if not isinstance(obj, dict):
        raise Rejected("call is not an object")
    function = obj.get("function")
    if isinstance(function, dict):  # {"type": "function", "function": {...}}
        obj = function
    name = obj.get("name")
    stripped = name.strip() if isinstance(name, str) else ""
    if not stripped:
        raise Rejected("call has no string 'name'")
    raw_args = obj["arguments"] if "arguments" in obj else obj.get("parameters")
    return ToolCall(stripped, coerce_arguments(raw_args))


def _looks_like_call(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    return isinstance(obj.get("name"), str) and (
        "arguments" in obj or "parameters" in obj or set(obj) <= {"name", "type", "id"}
    )


def _calls_from_json_value(value: Any) -> list[ToolCall]:
    if type(value) is dict:  # one object: the common case, the same test as below
        inner = value.get("tool_calls")
        if isinstance(inner, list) and inner and len(value) == 1:  # {"tool_calls": [...]}
            return _calls_from_json_value(inner)
        return [call_from_object(value)] if _looks_like_call(value) else []
    items = value if isinstance(value, list) else [value]
    if not items or not all(_looks_like_call(it) for it in items):
        return []
    return [call_from_object(it) for it in items]


def parse_native(tool_calls: Iterable[Any]) -> ParseResult:
    """Parse a backend's native ``tool_calls`` list (OpenAI or Ollama conventions): one
    result per position, a call that cannot be read (arguments that are not JSON, no name)
    listed in ``unreadable`` with its position and reason while the others are read.

    The list as a whole (names and arguments, JSON strings or objects) must be at most
    :data:`~callscope.parse.literals.MAX_NATIVE_CHARS` large (:func:`json_size`); a larger
    one is rejected before any of it is decoded or checked."""
    if not isinstance(tool_calls, list | tuple):
        return ParseResult(error="native tool_calls is not a list", form="native")
    if json_size(tool_calls, MAX_NATIVE_CHARS) > MAX_NATIVE_CHARS:
        return ParseResult(
            error=f"native tool calls rejected: larger than {MAX_NATIVE_CHARS} characters",
            form="native",
        )
    calls: list[ToolCall] = []
    unreadable: list[tuple[int, str]] = []
    for position, tc in enumerate(tool_calls):
        try:
            calls.append(call_from_object(tc))
        except Rejected as exc:  # this call is broken; the others are still read and judged
            unreadable.append((position, f"native tool call rejected: {exc}"))
    if not calls and not unreadable:
        return ParseResult(error="empty native tool_calls list", form="native")
    return ParseResult(
        calls=tuple(calls),
        error=None if calls else unreadable[0][1],
        form="native",
        unreadable=tuple(unreadable),
    )


def invalid_json_reason(text: str, start: int, exc: ValueError) -> str:
    """Why the JSON that starts at ``start`` of ``text`` does not decode: *cut off* when the
    decoder ran into the end of the text or an unterminated string (the output stopped
    mid-call: at the token limit, or the model ended it there), else the decoder's message
    and position."""
    if isinstance(exc, TooDeep):
        return "the JSON is nested too deeply to read"
    if _cut_off(text, exc):
        return (
            f"the JSON call starting at character {start} is cut off: the text ends "
            "before the call is closed"
        )
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON at character {exc.pos}: {exc.msg}"
    return f"invalid JSON: {exc}"


def _cut_off(text: str, exc: ValueError) -> bool:
    """The decoder ran into the end of the text or an unterminated string: the output stopped
    mid-value."""
    return isinstance(exc, json.JSONDecodeError) and (
        exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
    )


#: a JSON call object's opening: ``{"name":``
_CALL_OBJECT_START = re.compile(r"\{[ \t\r\n]*+\"name\"[ \t\r\n]*+:")
#: the broken entry of an answer with more JSON values than the scan tries (``MAX_CANDIDATES``)
TOO_MANY_VALUES = (
    f"more calls than the parser reads: at most {MAX_CANDIDATES} JSON values are tried"
)


def scan_json(
    text: str, broken: list[tuple[int, str]] | None = None
) -> tuple[list[ToolCall], str | None]:
    """Every JSON object/list in ``text`` that is a call (or a list of calls), in order, and
    the last rejection reason met. At most ``MAX_CANDIDATES`` start positions are decoded.
    ``broken``, when given, receives ``(position, reason)`` of every call object opening
    (``{"name":``) that does not decode or is refused, outside the calls read (a call cut off
    or garbled beside readable ones); ``position`` counts the calls and broken calls before
    it."""
    calls: list[ToolCall] = []
    error: str | None = None
    i, n = 0, len(text)
    tries = 0
    find = text.find
    while i < n and tries < MAX_CANDIDATES:
        brace, bracket = find("{", i), find("[", i)  # the first of the two that occurs
        j = bracket if brace < 0 or 0 <= bracket < brace else brace
        if j < 0:
            break
        tries += 1
        try:
            value, end = json_raw_decode(text, j)
        except Rejected as exc:
            error = str(exc)
            if broken is not None and _CALL_OBJECT_START.match(text, j):
                broken.append((len(calls) + len(broken), error))
            i = j + 1
            continue
        except ValueError as exc:
            if broken is not None and _CALL_OBJECT_START.match(text, j):
                broken.append((len(calls) + len(broken), invalid_json_reason(text, j, exc)))
                if _cut_off(text, exc):
                    break  # the rest of the text is inside the cut-off call: no call of its own
            i = j + 1
            continue
        try:
            found = _calls_from_json_value(value)
        except Rejected as exc:
            error = str(exc)
            if broken is not None and _CALL_OBJECT_START.match(text, j):
                broken.append((len(calls) + len(broken), error))
            found = []
        if found:
            calls.extend(found)
            i = end
        else:
            i = j + 1 if isinstance(value, list) else end
    if (
        tries >= MAX_CANDIDATES
        and broken is not None
        and calls
        and _CALL_OBJECT_START.search(text, i)
    ):
        # the answer holds more calls than the scan tries: say so rather than judge a part
        broken.append((len(calls) + len(broken), f"{TOO_MANY_VALUES} (past character {i:,})"))
    return calls, error
