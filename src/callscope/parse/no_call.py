"""What text without a readable call is, decided from the text alone (issue 36).

When :func:`~callscope.parse.text.parse_text` reads no call, :func:`read_no_call` says why,
in one of four ways a reader of the answer would:

* **prose**: text a person reads as words and sentences (:func:`is_prose`), with nothing
  call-shaped at its start; the parse error is
  :data:`~callscope.parse.text.NO_CALL_FOUND`, and the ``name(`` spans the text writes are
  kept as *attempts* (so that a registered name written as a call is found broken where the
  registry is known). ``f(x) = 2x``, ``see [1]`` and a Markdown link are prose.
* **structured**: text that opens as a call or as data (:func:`structured_opening`): JSON
  (``{``, ``[{``, ``[[``...), a Python call list (``[f(``), or ``name(`` with call syntax
  after it (a keyword ``k=``, a quoted literal, ``)``). The parse error is the reader's real
  reason: the JSON decoder's message and position, *cut off* when the text ends first,
  Python's own words for a call that does not parse (``'(' was never closed``), or why a
  decoded value is not a call (``'name' is a list, not a string``).
* a **reply written as JSON**: an object with no call key (:data:`CALL_KEYS`) that holds
  prose (``{"message": "I can help with that."}``, as some agents answer users), read as
  prose (:func:`json_reply`);
* **garbage**: neither (a run of digits, symbols, control characters): the parse error says
  the text has no words and no call.

``[]`` alone (blanks and a code fence allowed) is the explicit empty list of calls:
:data:`EMPTY_CALL_LIST`, read as an abstention.

Every check is one bounded left-to-right pass over at most
:data:`~callscope.parse.literals.MAX_INPUT_CHARS` characters, plus at most one JSON decode
and one Python parse of the text; prose's call attempts (:func:`call_attempts`) parse at most
:data:`~callscope.parse.literals.MAX_CANDIDATES` spans, each bounded by the text.

>>> read_no_call("I cannot help with that.", None)
'no tool call found in output'
>>> read_no_call("{{{{", None)
'invalid JSON at character 1: Expecting property name enclosed in double quotes'
>>> read_no_call('get_weather(city="Paris"', None)
"the call is cut off: not Python call syntax: '(' was never closed"
>>> read_no_call("1" * 150, None)
'not a call and not prose: 150 characters without a word (digits, symbols or control characters)'
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from callscope.parse.json_calls import invalid_json_reason
from callscope.parse.literals import (
    FENCE_HEAD,
    FENCE_MARK,
    MAX_CALL_CHARS,
    MAX_CANDIDATES,
    Rejected,
    balanced_end,
    bracket_group,
    json_raw_decode,
)
from callscope.parse.python_calls import CALL_ARGS, CALL_START, parse_python_calls

NO_CALL_FOUND = "no tool call found in output"
#: ``[]``: the model answered with an empty list of calls, i.e. no call (an abstention)
EMPTY_CALL_LIST = "an empty list of calls"
#: the parse errors of text read as an abstention (prose, or the explicit empty list)
ABSTAIN_ERRORS = frozenset({NO_CALL_FOUND, EMPTY_CALL_LIST})

#: a word: two or more letters (any script); possessive, so each character is read once
_WORD = re.compile(r"[^\W\d_]{2,}+")
#: a text is prose when letters make up at least this share of its non-blank characters
PROSE_LETTER_SHARE = 0.4
#: what may follow ``[`` for the text to open as data or a call list: ``{ [ " ' ] -`` or a
#: digit (JSON), or a name followed by ``(`` (a Python call list)
_LIST_OPENING = re.compile(r"\[[ \t\r\n]*+(?:[\{\[\"'\]\-0-9]|[A-Za-z_][\w.]*+(?:[ \t]*+\(|\Z))")
#: the whole text one name (``get_weather``, ``math.sqrt``, ``math.``, ``get``): a call cut
#: off before its parenthesis when a registered name starts with it, else a word
_BARE_NAME = re.compile(r"[A-Za-z_]\w*+(?:\.\w*+)*+")
#: the reason of a text that is one bare name: a call only if a registered name starts with
#: it (decided where the registry is known: :func:`callscope.saag.answer.no_call_kind`)
BARE_NAME = "a bare name without '(' and arguments"


def is_prose(text: str) -> bool:
    """Whether ``text`` reads as words: three words of two letters or more; or a word of two
    letters (or three letters in all) making up at least :data:`PROSE_LETTER_SHARE` of its
    non-blank characters (control characters count as non-letters). Bounded passes.

    >>> is_prose("No."), is_prose("f(x) = 2x"), is_prose("12345 678"), is_prose("ok: 1 2 3 4 5")
    (True, True, False, False)
    """
    letters = sum(1 for ch in text if ch.isalpha())
    if letters < 3 and _WORD.search(text) is None:
        return False
    if sum(1 for _ in zip(range(3), _WORD.finditer(text), strict=False)) == 3:
        return True  # three words: a sentence, whatever else it holds (a date, a number)
    visible = len(text) - sum(1 for ch in text if ch in " \t\r\n")
    return visible > 0 and letters >= PROSE_LETTER_SHARE * visible


def _unfenced(text: str) -> str:
    """``text`` without a code fence around all of it (```` ```json ... ``` ````)."""
    if text.startswith("```"):
        head = FENCE_HEAD.match(text, len(FENCE_MARK))  # the one reading of a fence's opening
        assert head is not None  # every part of the pattern may be empty
        body = text[head.end() :]
        return body[:-3].strip() if body.rstrip().endswith("```") else body.strip()
    return text


def structured_opening(text: str) -> bool:
    """Whether ``text`` (stripped) opens as data or a call: ``{``, ``<tool_call>`` or
    ``<functioncall>``; ``[`` followed by data or a name and ``(``; or ``name(`` followed by
    call syntax (:data:`CALL_ARGS`). ``[1, 2]`` opens as data; ``[1] says so``,
    ``[docs](url)``, ``f(x) = 2x`` do not.

    >>> [structured_opening(t) for t in ('{"a": 1}', '[get(a=1)', "[docs](http://x)",
    ...  "f(x) = 2x", 'get_weather(city="Paris"', "search()")]
    [True, True, False, False, True, True]
    """
    if not text:
        return False
    first = text[0]
    if first == "{" or text.startswith(("<tool_call>", "<functioncall>")):
        return True
    if first == "[":  # data, unless a closed group is followed by prose ("[1] says so")
        if _LIST_OPENING.match(text) is None:
            return False
        end = balanced_end(text, 0)
        return end < 0 or not is_prose(text[end:])
    opening = CALL_START.match(text)
    return opening is not None and CALL_ARGS.match(text, opening.end()) is not None


#: keys that make a JSON object a call attempt (OpenAI, Ollama, BFCL, Glaive, ReAct styles)
CALL_KEYS = frozenset(
    {"name", "function", "arguments", "parameters", "args", "tool", "tool_name", "tool_calls",
     "function_call", "api_name", "action_input"}
)  # fmt: skip
#: at most this many values of a JSON reply are looked at for prose (bounded)
_MAX_REPLY_VALUES = 1_000


def json_reply(value: Any) -> bool:
    """Whether a decoded JSON value is a reply written as JSON rather than a call: an object
    with no key of :data:`CALL_KEYS` at its top level, holding prose (a string of two words or
    more that :func:`is_prose` accepts) among its first :data:`_MAX_REPLY_VALUES` values
    (``{"message": "I can help with that."}``).

    >>> json_reply({"message": "I can help with that."}), json_reply({"answer": 42})
    (True, False)
    >>> json_reply({"name": "get_weather", "note": "in Paris please"})
    False
    """
    if not isinstance(value, dict) or CALL_KEYS & value.keys():
        return False
    stack: list[Any] = [value]
    seen = 0
    while stack and seen < _MAX_REPLY_VALUES:
        item = stack.pop()
        seen += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and " " in item.strip() and is_prose(item):
            return True
    return False


#: a JSON object written as a call: ``{`` (or ``[{``) whose first key is one of
#: :data:`CALL_KEYS`, quoted with ``"`` or ``'`` (``{"arguments": ..., "name": ...}``)
_CALL_OBJECT = re.compile(
    r"(?:\[[ \t\r\n]*+)?\{[ \t\r\n]*+[\"'](?:" + "|".join(sorted(CALL_KEYS)) + r")[\"'][ \t\r\n]*+:"
)


def call_opening(text: str) -> tuple[str | None, str]:
    """How stripped ``text`` opens as a call, if it does: ``("json", "")`` for a call object
    (:data:`_CALL_OBJECT`), ``("python", name)`` for ``name(`` or ``[name(`` with call syntax
    after it; ``(None, "")`` otherwise (code or data that is not written as a call).

    >>> call_opening('{"arguments": {}, "name": "f"}'), call_opening("[get(a=1)]")
    (('json', ''), ('python', 'get'))
    >>> call_opening('{"traits": [1, 2]}'), call_opening("total = 52")
    ((None, ''), (None, ''))
    """
    if _CALL_OBJECT.match(text) is not None:
        return "json", ""
    m = CALL_START.match(text)
    if m is not None and CALL_ARGS.match(text, m.end()) is not None:
        return "python", m.group().lstrip("[").rstrip("(").strip()
    return None, ""


#: a JSON object's (or a list of objects') first key, quoted with ``"``: whole (a ``:``
#: after it) or cut off by the end of the text
_FIRST_KEY = re.compile(
    r"(?:\[[ \t\r\n]*+)?\{[ \t\r\n]*+\"([^\"\\\n]{1,256}+)(?:\"[ \t\r\n]*+(:)|\Z)"
)


def written_as_call(text: str, names: Collection[str] = ()) -> bool:
    """Whether ``text`` (an answer in which no call was read) is written as a call: it opens
    with a call tag (``<tool_call>``, ``<functioncall>``), a call object or ``name(`` with call
    syntax (:func:`call_opening`), or a JSON object keyed by one of the registered ``names``
    (BFCL's ``{"get_weather": {...}}``), or it holds a call object anywhere (a call written in
    prose). Text that is none of these (a number, a JSON value with no call key, symbols)
    is an answer written as data, not a call attempt: what a live guard lets through
    (:func:`callscope.guard.check.check`). One bounded pass.

    >>> [written_as_call(t) for t in ('{"name": "get_weather"', "get_weather(city='Pa",
    ...  "42", "[2, 3, 5]", '{"answer": 42}', "Sure: {'name': 'f', 'arguments': 1}")]
    [True, True, False, False, False, True]
    >>> [written_as_call(t, ["get_weather"]) for t in ('{"get_weather": {"city": "Pa',
    ...  '{"get_wea', '{"get_time": 1}')]
    [True, True, False]
    """
    body = _unfenced(text.strip())
    if body.startswith(("<tool_call>", "<functioncall>")) or call_opening(body)[0] is not None:
        return True
    key = _FIRST_KEY.match(body)
    if key is not None:
        head = key.group(1)
        if key.group(2) is not None and head in names:
            return True
        if key.group(2) is None and any(n.startswith(head) for n in names if isinstance(n, str)):
            return True  # cut off inside the name of a registered function
    return _CALL_OBJECT.search(body) is not None


def call_object_error(text: str) -> str | None:
    """Why the first call object of ``text`` (:data:`_CALL_OBJECT`, anywhere: a call written
    inside prose) does not read; ``None`` when there is none or it reads. One search and
    one decode."""
    m = _CALL_OBJECT.search(text)
    if m is None:
        return None
    try:
        value, _ = json_raw_decode(text, m.start())
    except Rejected as exc:
        return str(exc)
    except ValueError as exc:
        return invalid_json_reason(text, m.start(), exc)
    return _not_a_call(value)


def _not_a_call(value: Any) -> str:
    """Why a decoded JSON value is not a call object (or a list of them)."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, dict):
            return f"a JSON {type(item).__name__}, not a call object"
        obj = item["function"] if isinstance(item.get("function"), dict) else item
        if "name" not in obj:
            return "a JSON object without 'name': not a call"
        if not isinstance(obj["name"], str):
            return f"the call's 'name' is a {type(obj['name']).__name__}, not a string"
        if not {"arguments", "parameters"} & obj.keys():
            keys = ", ".join(repr(k) for k in list(obj)[:8])
            return f"the call object has no 'arguments' (its keys: {keys})"
    return "JSON that is not a call"


def _structured_reason(text: str) -> str:
    """The reader's real reason for text that opens as data or a call but is not one."""
    if text[0] in "{[" and not (text[0] == "[" and CALL_START.match(text)):
        try:
            value, end = json_raw_decode(text, 0)
        except Rejected as exc:
            return str(exc)
        except ValueError as exc:
            return invalid_json_reason(text, 0, exc)
        if value == [] and not text[end:].strip():
            return EMPTY_CALL_LIST
        if json_reply(value) and not text[end:].strip():
            return NO_CALL_FOUND  # a reply written as JSON: prose in a JSON wrapper
        return _not_a_call(value)
    if text.startswith(("<tool_call>", "<functioncall>")):
        return "a call block that holds no readable call"
    open_at = text.find("(") if text[0] != "[" else 0
    try:
        parse_python_calls(text)
    except Rejected as exc:
        reason = str(exc)
    else:  # pragma: no cover - parse_text reads such text as calls before it gets here
        return "Python call syntax that holds no call"
    if open_at >= 0 and bracket_group(text, open_at)[1] == "unclosed":
        return f"the call is cut off: {reason}"
    return reason


#: why a call's parenthesis group does not close (:func:`~callscope.parse.literals.bracket_group`)
_NOT_CLOSED = {
    "unclosed": "is cut off: its parenthesis is never closed",
    "mismatched": "does not parse: a closing bracket does not match its opening one",
    "too long": f"is not closed within {MAX_CALL_CHARS:,} characters",
}


#: what a call (not a mention such as ``f()`` or a signature ``f(location, date)``) has right
#: after ``name(``: a keyword ``k=`` or a literal (quote, digit, sign, bracket)
_ARGUMENT_VALUES = re.compile(r"[ \t\r\n]*+(?:[A-Za-z_]\w*+[ \t]*+=(?!=)|[\"'0-9\[{\-])")


def call_attempts(text: str) -> tuple[tuple[str, str], ...]:
    """Every ``name(`` span of prose ``text`` written as a call (keyword or literal arguments;
    ``f()`` and ``f(x, y)`` are mentions) that does not parse, or that is cut off, with the reason:
    at most :data:`~callscope.parse.literals.MAX_CANDIDATES` spans tried. A text that is one
    word is its own attempt (:data:`BARE_NAME`: a call cut off before ``(`` when a registered
    name starts with it)."""
    if _BARE_NAME.fullmatch(text) is not None:
        return ((text, BARE_NAME),)
    out: list[tuple[str, str]] = []
    pos = 0
    for _ in range(MAX_CANDIDATES):
        m = CALL_START.search(text, pos)
        if m is None:
            break
        start = m.start()
        name = m.group().lstrip("[").rstrip("(").strip()
        open_at = text.find("(", start) if text[start] != "[" else start
        end, how = bracket_group(text, open_at)
        if end < 0:
            out.append((name, f"the call {name}( {_NOT_CLOSED[how]}"))
            pos = m.end()
            continue
        if _ARGUMENT_VALUES.match(text, m.end()) is not None:  # a call, not a mention
            try:
                parse_python_calls(text[start:end])
            except Rejected as exc:
                out.append((name, str(exc)))
        pos = end
    return tuple(out)


def read_no_call(text: str, reason: str | None) -> str:
    """The parse error of stripped ``text`` in which no call was read (module docstring).
    ``reason`` is what a reader said on the way about a call-shaped part it refused (a call
    object whose arguments are not an object, a ``<tool_call>`` block that does not read): a
    refused call is a broken call wherever it stands, prose around it or not."""
    body = _unfenced(text)
    if structured_opening(body):
        own = _structured_reason(body)
        if own in ABSTAIN_ERRORS:
            return own
        if reason and own.startswith(("a JSON", "JSON that", "a call block")):
            return reason  # the reader's own words on a call object it refused
        return own
    if reason:  # a refused call, or a block holding only the explicit empty list ``[]``
        return reason
    cut = call_object_error(body)  # a call object written in prose that does not read
    if cut is not None:
        return cut
    if is_prose(body):
        return NO_CALL_FOUND
    return _garbage(body)


def _garbage(text: str) -> str:
    return (
        f"not a call and not prose: {len(text)} characters without a word "
        "(digits, symbols or control characters)"
    )


__all__ = [
    "ABSTAIN_ERRORS",
    "BARE_NAME",
    "EMPTY_CALL_LIST",
    "NO_CALL_FOUND",
    "call_attempts",
    "call_object_error",
    "call_opening",
    "is_prose",
    "read_no_call",
    "structured_opening",
    "written_as_call",
]
