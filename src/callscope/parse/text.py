"""Turn what a model emitted into tool calls, without ever evaluating it.

:func:`parse_output` first takes native tool calls (an OpenAI message/``tool_calls`` list,
arguments a JSON string, or an Ollama one, arguments an object, or a ``{"name",
"arguments"}`` object; :mod:`callscope.parse.json_calls`); text goes to :func:`parse_text`,
which tries these forms in order (the first form that yields calls wins and all of its calls
are kept, in order of appearance):

* ``<tool_call>...</tool_call>`` blocks;
* Glaive's ``<functioncall> {"name": .., "arguments": '{...}'}`` (JSON inside single quotes;
  :mod:`callscope.parse.glaive`);
* fenced code blocks (```json / ```python / ```), holding JSON or Python call syntax;
* bare JSON objects or lists of objects anywhere in the text (prose around them is fine);
* Python call syntax ``f(a=1)`` or ``[f(a=1), g()]``, read with :mod:`ast` and accepted only
  when every argument is a literal (:mod:`callscope.parse.python_calls`).

A call object is ``{"name": str, "arguments"|"parameters": object | JSON string}``, optionally
wrapped as ``{"type": "function", "function": {...}}``. Text longer than
:data:`~callscope.parse.literals.MAX_INPUT_CHARS` is cut to it.
"""

from __future__ import annotations

import re
import threading
from dataclasses import replace
from typing import Any

from callscope.core.jsonl import copy_json
from callscope.parse.glaive import read_functioncall
from callscope.parse.json_calls import (
    call_from_object,
    parse_native,
    scan_json,
)
from callscope.parse.literals import (
    FENCE_HEAD,
    FENCE_MARK,
    MAX_CANDIDATES,
    MAX_INPUT_CHARS,
    Rejected,
)
from callscope.parse.no_call import (
    EMPTY_CALL_LIST,
    NO_CALL_FOUND,
    call_attempts,
    call_opening,
    read_no_call,
)
from callscope.parse.python_calls import parse_python_calls, scan_python
from callscope.types import ParseResult, ToolCall

#: the two parse errors that say nothing about what was wrong with the text
EMPTY_OUTPUT = "empty output"
#: ``parse_output`` of ``None``, and of an object with neither a call nor text: nothing answered
NO_OUTPUT = "no output"
NO_CONTENT = "object output has neither a call nor text content"
#: the parse errors of an answer that holds nothing at all (the answer is *empty*)
NOTHING_ERRORS = frozenset({EMPTY_OUTPUT, NO_OUTPUT, NO_CONTENT})
UNINFORMATIVE_ERRORS = frozenset({EMPTY_OUTPUT, NO_CALL_FOUND})

_TOOL_CALL_OPEN = "<tool_call>"
_TOOL_CALL_CLOSE = "</tool_call>"
_FUNCTIONCALL = re.compile(r"<functioncall>\s*+")


def tool_call_blocks(text: str) -> list[str]:
    """The inside (stripped) of every ``<tool_call>`` block, in order; a block runs to the
    next ``</tool_call>`` or to the end of the text. One left-to-right pass (``str.find``):
    linear time on any input."""
    blocks: list[str] = []
    pos = 0
    while True:
        start = text.find(_TOOL_CALL_OPEN, pos)
        if start < 0:
            return blocks
        body = start + len(_TOOL_CALL_OPEN)
        close = text.find(_TOOL_CALL_CLOSE, body)
        end = len(text) if close < 0 else close
        blocks.append(text[body:end].strip())
        if close < 0:
            return blocks
        pos = close + len(_TOOL_CALL_CLOSE)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every closed fenced block: `````` ``` ``````, optional blanks, an
    optional language tag (``[A-Za-z0-9_+-]``), optional blanks, an optional newline, the body
    up to the next `````` ``` ``````. Linear time: the opening line is read by a possessive
    pattern, the closing fence by ``str.find``, and a fence that never closes ends the scan
    (no later one can close either)."""
    blocks: list[tuple[str, str]] = []
    pos = 0
    while True:
        start = text.find(FENCE_MARK, pos)
        if start < 0:
            return blocks
        head = FENCE_HEAD.match(text, start + len(FENCE_MARK))
        assert head is not None  # every part of the pattern may be empty
        close = text.find(FENCE_MARK, head.end())
        if close < 0:
            return blocks
        blocks.append((head.group(1), text[head.end() : close]))
        pos = close + len(FENCE_MARK)


def _json_or_python(body: str) -> tuple[list[ToolCall], str | None]:
    """The calls in a ``<tool_call>`` block or a fence: JSON ones, else the whole body as
    Python call syntax; ``[]`` is the explicit empty list of calls."""
    if body.strip() == "[]":
        return [], EMPTY_CALL_LIST
    found, err = scan_json(body)
    if not found:
        try:
            found = parse_python_calls(body)
        except Rejected as exc:
            err = err or str(exc)
    return found, err


#: parsed texts kept for when the same text comes again (a leaderboard's models answering a
#: case alike: 44% of the 47,373 text answers of the 2024-08 BFCL leaderboard repeat another
#: answer's text; a case set scored again; a correction loop). A text is kept on its second
#: sight (the first costs one hash in a set: a results file read once keeps nothing), every
#: hit returns its own copy (new calls, arguments copied), oldest out first. Bounded: at most
#: this many texts, each of at most ``_PARSE_MEMO_MAX_CHARS`` characters and
#: ``_PARSE_MEMO_CHARS`` in all; 0 keeps none
PARSE_MEMO_SIZE = 16384
_PARSE_MEMO_MAX_CHARS = 2048
_PARSE_MEMO_CHARS = 2_000_000
_parsed: dict[str, ParseResult] = {}
_parsed_chars = 0
#: hashes of the texts seen once (cleared when it holds four times the memo's texts)
_sighted: set[int] = set()
_parsed_lock = threading.Lock()


def parse_text(text: str) -> ParseResult:
    """Parse raw model text. Returns the calls of the first form that matches (a text parsed
    before: a copy of what it gave then, :data:`PARSE_MEMO_SIZE`)."""
    if type(text) is not str or len(text) > _PARSE_MEMO_MAX_CHARS or not PARSE_MEMO_SIZE:
        return _parse_text(text)
    kept = _parsed.get(text)
    if kept is not None:
        return _copy(kept)
    key = hash(text)
    if key not in _sighted:  # first sight: nothing kept
        if len(_sighted) >= 4 * PARSE_MEMO_SIZE:
            _sighted.clear()
        _sighted.add(key)
        return _parse_text(text)
    result = _parse_text(text)
    _keep(text, result)
    return _copy(result)


def _keep(text: str, result: ParseResult) -> None:
    """Put ``result`` in the memo; the oldest texts out while it holds too many."""
    global _parsed_chars
    with _parsed_lock:
        if text in _parsed:
            return
        _parsed[text] = result
        _parsed_chars += len(text)
        while len(_parsed) > PARSE_MEMO_SIZE or _parsed_chars > _PARSE_MEMO_CHARS:
            oldest = next(iter(_parsed))
            del _parsed[oldest]
            _parsed_chars -= len(oldest)


def _copy(result: ParseResult) -> ParseResult:
    """``result`` with calls of its own (each call's arguments copied): what the caller
    changes never reaches the memo."""
    if not result.calls:
        return result  # nothing in it can be changed (tuples and strings)
    calls = tuple(ToolCall(c.name, copy_json(c.arguments)) for c in result.calls)
    return ParseResult(calls, result.error, result.form, result.unreadable, result.attempts)


def _parse_text(text: str) -> ParseResult:
    """:func:`parse_text` itself (no memo)."""
    if not isinstance(text, str):
        return ParseResult(error=f"output is {type(text).__name__}, not text")
    if len(text) > MAX_INPUT_CHARS:
        text = text[:MAX_INPUT_CHARS]
    stripped = text.strip()
    if not stripped:
        return ParseResult(error=EMPTY_OUTPUT)
    last_error: str | None = None
    if (
        FENCE_MARK not in stripped
        and _TOOL_CALL_OPEN not in stripped
        and "<functioncall>" not in stripped
    ):
        # no wrapper can match (each needs its marker): straight to the JSON scan, the same
        # result as running the three wrapper scans first
        return _bare(stripped, last_error)

    tag_calls: list[ToolCall] = []
    for block in tool_call_blocks(stripped):
        found, err = _json_or_python(block)
        tag_calls.extend(found)
        last_error = err or last_error
    if tag_calls:
        return ParseResult(calls=tuple(tag_calls), form="tool_call_tag")

    fc_calls: list[ToolCall] = []
    parts = _FUNCTIONCALL.split(stripped)
    for seg in parts[1:]:
        seg = seg.split("<|endoftext|>")[0]  # the split removed every <functioncall> tag
        try:
            fc_calls.append(call_from_object(read_functioncall(seg, max_candidates=MAX_CANDIDATES)))
        except ValueError as exc:
            last_error = f"functioncall: {exc}"
    if fc_calls:
        return ParseResult(calls=tuple(fc_calls), form="functioncall")

    fenced: list[ToolCall] = []
    attempts: list[tuple[str, str]] = []
    for _language, body in fenced_blocks(stripped):
        found, err = _json_or_python(body)
        fenced.extend(found)
        if err:  # code in a fence is a call attempt only when it is written as a call
            kind, name = call_opening(body.strip())
            if kind == "json" or err == EMPTY_CALL_LIST:
                last_error = err
            elif kind == "python" and len(attempts) < MAX_CANDIDATES:  # bounded, as prose's
                attempts.append((name, err))  # broken only if it names a registered function
    if fenced:
        return ParseResult(calls=tuple(fenced), form="fenced")
    result = _bare(stripped, last_error)
    if attempts and result.error == NO_CALL_FOUND:
        return replace(result, attempts=(*attempts, *result.attempts))
    return result


def _bare(stripped: str, last_error: str | None) -> ParseResult:
    """The calls of text that holds no wrapper with calls: bare JSON, else Python syntax;
    without a call, what the text is instead (:func:`~callscope.parse.no_call.read_no_call`:
    prose, a broken call with the reader's reason, or garbage)."""
    broken: list[tuple[int, str]] = []
    found, err = scan_json(stripped, broken)
    if found:
        return ParseResult(tuple(found), None, "json", unreadable=tuple(broken))
    last_error = err or last_error
    try:
        return ParseResult(calls=tuple(parse_python_calls(stripped)), form="python")
    except Rejected:
        pass
    broken.clear()
    found, _ = scan_python(stripped, broken)
    if found:
        return ParseResult(calls=tuple(found), form="python", unreadable=tuple(broken))
    error = read_no_call(stripped, last_error)
    if error == NO_CALL_FOUND:
        return ParseResult(error=error, attempts=call_attempts(stripped))
    return ParseResult(error=error)


def parse_output(output: Any) -> ParseResult:
    """Parse any emission: raw text, a ``{"name","arguments"}`` object, a list of call objects,
    an OpenAI/Ollama assistant message (``{"content", "tool_calls"}``), or a
    :class:`~callscope.types.ModelReply`. Native tool calls take precedence over text.
    """
    try:
        if type(output) is str:  # the common case first: a str has no tool_calls
            return parse_text(output)
        if output is None:
            return ParseResult(error=NO_OUTPUT)
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
            return ParseResult(error=NO_CONTENT)
        return ParseResult(error=f"unsupported output type {type(output).__name__}")
    except (Rejected, MemoryError) as exc:  # defensive: never escape
        return ParseResult(error=f"unparseable output: {type(exc).__name__}: {exc}")
