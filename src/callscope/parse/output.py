"""Turn what a model emitted into tool calls, without ever evaluating it.

Accepted forms (tried in this order; the first form that yields calls wins and all of
its calls are kept, in order of appearance):

* native tool calls: an OpenAI message/``tool_calls`` list (arguments a JSON string) or an
  Ollama one (arguments an object), or a ``{"name", "arguments"}`` object;
* ``<tool_call>...</tool_call>`` blocks;
* Glaive's ``<functioncall> {"name": .., "arguments": '{...}'}`` (JSON inside single quotes);
* fenced code blocks (```json / ```python / ```), holding JSON or Python call syntax;
* bare JSON objects or lists of objects anywhere in the text (prose around them is fine);
* Python call syntax ``f(a=1)`` or ``[f(a=1), g()]``, read with :mod:`ast` and accepted only
  when every argument is a literal (``ast.literal_eval`` on the node).

A call object is ``{"name": str, "arguments"|"parameters": object | JSON string}``, optionally
wrapped as ``{"type": "function", "function": {...}}``.
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from collections.abc import Iterable
from typing import Any

from callscope.types import ParseResult, ToolCall

MAX_INPUT_CHARS = 200_000
#: arguments nested deeper than this are rejected (no real tool takes them, and metrics
#: recurse over values)
MAX_ARGUMENT_DEPTH = 32

_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FUNCTIONCALL = re.compile(r"<functioncall>\s*", re.S)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)```", re.S)
_PY_CALL_START = re.compile(r"(?<![\w.])\[?\s*[A-Za-z_][\w.]*\s*\(")
#: at most this many candidate positions are tried per scan, so garbage (long repetition
#: loops are common in small models) costs linear time
MAX_CANDIDATES = 64


class _Reject(ValueError):
    """A candidate looked like a call but is not acceptable (reason in the message)."""


def _reject_constant(name: str) -> Any:
    raise _Reject(f"non-finite number {name} in JSON")


def _json_loads(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant)


def _json_raw_decode(text: str, start: int) -> tuple[Any, int]:
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    return decoder.raw_decode(text, start)


# --------------------------------------------------------------------------- call objects


def _coerce_arguments(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, str):
        stripped = raw.strip()
        if not stripped:
            return {}
        try:
            raw = _json_loads(stripped)
        except (ValueError, RecursionError) as exc:
            raise _Reject(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise _Reject(f"arguments must be an object, got {type(raw).__name__}")
    _check_depth(raw)
    return raw


def _check_depth(value: Any) -> None:
    """Reject containers nested deeper than ``MAX_ARGUMENT_DEPTH`` and non-finite numbers
    (iteratively: no recursion, so any input is safe)."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            raise _Reject(f"arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels")
        if isinstance(v, float) and not math.isfinite(v):
            raise _Reject("non-finite number in arguments")
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)


def _json_like(value: Any, depth: int = 0) -> Any:
    """A Python literal as JSON data: tuples become lists; sets, bytes, complex numbers,
    ``...`` and non-string keys are rejected."""
    if depth > MAX_ARGUMENT_DEPTH:
        raise _Reject(f"arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Reject("non-finite number in arguments")
        return value
    if isinstance(value, list | tuple):
        return [_json_like(v, depth + 1) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise _Reject("argument object keys must be strings")
        return {k: _json_like(v, depth + 1) for k, v in value.items()}
    raise _Reject(f"argument of type {type(value).__name__} is not JSON data")


def call_from_object(obj: Any) -> ToolCall:
    """Read one call object (bare, OpenAI- or Ollama-style). Raises ``ValueError``."""
    if not isinstance(obj, dict):
        raise _Reject("call is not an object")
    if isinstance(obj.get("function"), dict):  # {"type": "function", "function": {...}}
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _Reject("call has no string 'name'")
    raw_args = obj["arguments"] if "arguments" in obj else obj.get("parameters")
    return ToolCall(name=name.strip(), arguments=_coerce_arguments(raw_args))


def _looks_like_call(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    return isinstance(obj.get("name"), str) and (
        "arguments" in obj or "parameters" in obj or set(obj) <= {"name", "type", "id"}
    )


def _calls_from_json_value(value: Any) -> list[ToolCall]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(_looks_like_call(it) for it in items):
        return []
    return [call_from_object(it) for it in items]


# --------------------------------------------------------------------------- native


def parse_native(tool_calls: Iterable[Any]) -> ParseResult:
    """Parse a backend's native ``tool_calls`` list (OpenAI or Ollama conventions)."""
    if not isinstance(tool_calls, list | tuple):
        return ParseResult(error="native tool_calls is not a list", form="native")
    calls: list[ToolCall] = []
    try:
        for tc in tool_calls:
            calls.append(call_from_object(tc))
    except _Reject as exc:
        return ParseResult(error=f"native tool call rejected: {exc}", form="native")
    if not calls:
        return ParseResult(error="empty native tool_calls list", form="native")
    return ParseResult(calls=tuple(calls), form="native")


# --------------------------------------------------------------------------- text forms


def _scan_json(text: str) -> tuple[list[ToolCall], str | None]:
    """Every JSON object/list in ``text`` that is a call (or list of calls)."""
    calls: list[ToolCall] = []
    error: str | None = None
    i, n = 0, len(text)
    tries = 0
    while i < n and tries < MAX_CANDIDATES:
        j = min((k for k in (text.find("{", i), text.find("[", i)) if k >= 0), default=-1)
        if j < 0:
            break
        tries += 1
        try:
            value, end = _json_raw_decode(text, j)
        except _Reject as exc:
            error = str(exc)
            i = j + 1
            continue
        except (ValueError, RecursionError):
            i = j + 1
            continue
        try:
            found = _calls_from_json_value(value)
        except _Reject as exc:
            error = str(exc)
            found = []
        if found:
            calls.extend(found)
            i = end
        else:
            i = j + 1 if isinstance(value, list) else end
    return calls, error


def _glaive_call(segment: str) -> ToolCall:
    """Glaive's ``{"name": "f", "arguments": '{...}'}``; arguments may hold a bare apostrophe."""
    stripped = segment.strip()
    try:
        value, _ = _json_raw_decode(stripped, 0)
        return call_from_object(value)
    except _Reject:
        raise
    except (ValueError, RecursionError):
        pass
    name_m = re.search(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"', stripped)
    if not name_m:
        raise _Reject("functioncall has no name")
    name = _json_loads(f'"{name_m.group(1)}"')
    args_m = re.search(r'"arguments"\s*:\s*\'', stripped)
    if not args_m:
        return call_from_object({"name": name})
    body = stripped[args_m.end() :]
    # the closing quote is the last ' followed only by spaces and the object's closing brace
    close = re.search(r"'\s*\}\s*$", body) or re.search(r"'\s*\}", body)
    if not close:
        raise _Reject("functioncall arguments are not closed")
    return call_from_object({"name": name, "arguments": body[: close.start()]})


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError) as exc:
        raise _Reject(f"argument is not a literal: {type(exc).__name__}") from None


def _dotted_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted_name(node.value)}.{node.attr}"
    raise _Reject("called object is not a plain (dotted) name")


def _python_call(node: ast.AST) -> ToolCall:
    if not isinstance(node, ast.Call):
        raise _Reject("not a call")
    if node.args:
        raise _Reject("positional arguments are not accepted; use name=value")
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise _Reject("**kwargs are not accepted")
        args[kw.arg] = _json_like(_literal(kw.value))
    return ToolCall(name=_dotted_name(node.func), arguments=args)


def parse_python_calls(text: str) -> list[ToolCall]:
    """``f(a=1)`` or ``[f(a=1), g()]`` as the whole of ``text``; literals only. Never evaluates."""
    try:
        with warnings.catch_warnings():  # model text: its invalid escapes are not our warnings
            warnings.simplefilter("ignore")
            tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise _Reject(f"not Python call syntax: {type(exc).__name__}") from None
    body = tree.body
    nodes = body.elts if isinstance(body, ast.List | ast.Tuple) else [body]
    if not nodes:
        raise _Reject("empty call list")
    return [_python_call(n) for n in nodes]


#: a call written in prose is at most this long (bounds the bracket matching)
MAX_CALL_CHARS = 20_000


def balanced_end(text: str, start: int) -> int:
    """Index after the bracket group that starts at ``text[start]`` (quotes respected), or
    -1 when it does not close within ``MAX_CALL_CHARS``."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack: list[str] = []
    quote: str | None = None
    i = start
    stop = min(len(text), start + MAX_CALL_CHARS)
    while i < stop:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return i + 1
        i += 1
    return -1


def _scan_python(text: str) -> tuple[list[ToolCall], str | None]:
    """Python call syntax embedded in prose: ``[f(a=1)]`` lists, or ``f(k=v)`` with keywords."""
    calls: list[ToolCall] = []
    error: str | None = None
    pos = 0
    for _ in range(MAX_CANDIDATES):
        m = _PY_CALL_START.search(text, pos)
        if not m:
            break
        start = m.start()
        first_open = text.find("(", start) if text[start] != "[" else start
        end = balanced_end(text, first_open)
        if end < 0:
            pos = m.end()
            continue
        segment = text[start:end]
        try:
            found = parse_python_calls(segment)
        except _Reject as exc:
            error = str(exc)
            pos = m.end()
            continue
        is_list = segment.lstrip().startswith("[")
        if is_list or any(c.arguments for c in found):
            calls.extend(found)
        pos = end
    return calls, error


def parse_text(text: str) -> ParseResult:
    """Parse raw model text. Returns the calls of the first form that matches."""
    if not isinstance(text, str):
        return ParseResult(error=f"output is {type(text).__name__}, not text")
    if len(text) > MAX_INPUT_CHARS:
        text = text[:MAX_INPUT_CHARS]
    stripped = text.strip()
    if not stripped:
        return ParseResult(error="empty output")
    last_error: str | None = None

    tag_calls: list[ToolCall] = []
    for m in _TOOL_CALL_TAG.finditer(stripped):
        found, err = _scan_json(m.group(1))
        if not found:
            try:
                found = parse_python_calls(m.group(1))
            except _Reject as exc:
                err = err or str(exc)
        tag_calls.extend(found)
        last_error = err or last_error
    if tag_calls:
        return ParseResult(calls=tuple(tag_calls), form="tool_call_tag")

    fc_calls: list[ToolCall] = []
    parts = _FUNCTIONCALL.split(stripped)
    for seg in parts[1:]:
        seg = seg.split("<|endoftext|>")[0].split("<functioncall>")[0]
        end = balanced_end(seg, seg.find("{")) if "{" in seg else -1
        try:
            fc_calls.append(_glaive_call(seg[: end if end > 0 else len(seg)]))
        except (_Reject, ValueError, RecursionError) as exc:
            last_error = f"functioncall: {exc}"
    if fc_calls:
        return ParseResult(calls=tuple(fc_calls), form="functioncall")

    fenced: list[ToolCall] = []
    for m in _FENCE.finditer(stripped):
        body = m.group(2)
        found, err = _scan_json(body)
        if not found:
            try:
                found = parse_python_calls(body)
            except _Reject as exc:
                err = err or str(exc)
        fenced.extend(found)
        last_error = err or last_error
    if fenced:
        return ParseResult(calls=tuple(fenced), form="fenced")

    found, err = _scan_json(stripped)
    if found:
        return ParseResult(calls=tuple(found), form="json")
    last_error = err or last_error

    try:
        return ParseResult(calls=tuple(parse_python_calls(stripped)), form="python")
    except _Reject as exc:
        whole_error = str(exc)
    found, err = _scan_python(stripped)
    if found:
        return ParseResult(calls=tuple(found), form="python")
    if _PY_CALL_START.match(stripped):
        last_error = whole_error  # the text is one call: its own reason is the useful one
    last_error = last_error or err
    return ParseResult(error=last_error or "no tool call found in output")


def parse_output(output: Any) -> ParseResult:
    """Parse any emission: raw text, a ``{"name","arguments"}`` object, a list of call objects,
    an OpenAI/Ollama assistant message (``{"content", "tool_calls"}``), or a
    :class:`~callscope.types.ModelReply`. Native tool calls take precedence over text.
    """
    try:
        if output is None:
            return ParseResult(error="no output")
        if hasattr(output, "tool_calls") and hasattr(output, "text"):  # ModelReply
            if output.tool_calls:
                return parse_native(output.tool_calls)
            return parse_text(output.text)
        if isinstance(output, str):
            return parse_text(output)
        if isinstance(output, list):
            return parse_native(output)
        if isinstance(output, dict):
            if output.get("tool_calls"):
                return parse_native(output["tool_calls"])
            if "name" in output or isinstance(output.get("function"), dict):
                return parse_native([output])
            content = output.get("content", output.get("text"))
            if isinstance(content, str):
                return parse_text(content)
            return ParseResult(error="object output has neither a call nor text content")
        return ParseResult(error=f"unsupported output type {type(output).__name__}")
    except (_Reject, RecursionError, MemoryError) as exc:  # defensive: never escape
        return ParseResult(error=f"unparseable output: {type(exc).__name__}: {exc}")
