"""The emission view: what the action classifier sees of one emission (does it call a tool,
what is its prose), for every emission shape callscope and BFCL record.

The calls themselves are read by :mod:`callscope.parse` (:func:`~callscope.parse.parse_text`,
:func:`~callscope.parse.read_python_calls`, :func:`~callscope.parse.balanced_end`,
:func:`~callscope.parse.literals.json_raw_decode`); this module adds only what classifying
needs beyond a parse, which is why it does not go through
:func:`~callscope.parse.parse_output`: it keeps the prose beside the calls (the cues are
matched on it, call syntax removed), counts a native call with a string name even when its
arguments are malformed, reads BFCL's ``{tool_name: arguments}`` form, counts *intended* Python
call lists whose arguments are not literals (:func:`intended_call_spans`) and positional ones
(:func:`is_python_call_list`), removes regurgitated function documentation
(:func:`strip_documentation`) and cuts a hallucinated user turn (:func:`cut_user_turn`).
Every scan is linear or bounded (:data:`~callscope.parse.literals.MAX_CANDIDATES` openings).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from callscope.calibration.classify.config import ClassifierConfig
from callscope.core.text import strip_think
from callscope.parse import MAX_INPUT_CHARS, balanced_end, parse_text, read_python_calls
from callscope.parse.literals import MAX_CANDIDATES, json_loads, json_raw_decode

# a Python call list opening at the start of the text or of a line: an intended call
_INTENDED_CALL = re.compile(r"(?m)^[ \t]*\[[ \t]*[A-Za-z_][\w.]*[ \t]*\(")
# a line that starts a user turn the model wrote itself ("\nuser\n", "<|im_start|>user")
_USER_TURN = re.compile(
    r"\n[ \t]*(?:<\|im_start\|>[ \t]*)?(?:user|human)[ \t]*:?[ \t]*(?=\n|$)", re.I
)
# JSON-schema keys that only function documentation carries together
_SCHEMA_DESCRIPTION = re.compile(r'"description"[ \t]*:')
_SCHEMA_SHAPE = re.compile(r'"properties"[ \t]*:[ \t]*\{|"type"[ \t]*:[ \t]*"(?:dict|object)"')
# one line of pretty-printed JSON: a member, a bare string/number/literal element, brackets
_JSON_LINE = re.compile(
    r'[ \t]*(?:"(?:[^"\\\n]|\\.)*"[ \t]*:.*|"(?:[^"\\\n]|\\.)*"[ \t]*,?'
    r"|[\[\]{}]+[ \t]*,?|-?[\d.eE+-]+[ \t]*,?|(?:true|false|null)[ \t]*,?)[ \t]*"
)

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>.*?(?:</tool_call>|$)", re.S)
_FUNCTIONCALL_BLOCK = re.compile(r"<functioncall>.*?(?:<\|endoftext\|>|$)", re.S)
_FENCE_BLOCK = re.compile(r"```.*?(?:```|$)", re.S)
_IDENT_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _py_call_start(text: str, pos: int) -> tuple[int, int] | None:
    """``(start, end)`` of the leftmost match at or after ``pos`` of
    ``\\[?\\s*[A-Za-z_][\\w.]*\\s*\\(`` (an optional ``[``, blanks, a name, blanks, ``(``), or
    ``None``. Linear time: each ``(`` is found by ``str.find`` and the text before it is read
    backwards at most to the previous ``(`` (a regex search retries the name at every start
    position: quadratic on a long word with no ``(``). ``\\s`` and ``\\w`` as :mod:`re` reads
    them (``str.isspace``; ``str.isalnum`` or ``_``)."""
    while True:
        paren = text.find("(", pos)
        if paren < 0:
            return None
        j = paren
        while j > pos and text[j - 1].isspace():
            j -= 1
        name_end = j
        while j > pos and (text[j - 1].isalnum() or text[j - 1] in "_."):
            j -= 1
        # the name starts at its first ASCII letter or underscore
        k = j
        while k < name_end and text[k] not in _IDENT_FIRST:
            k += 1
        if k == name_end:
            pos = paren + 1
            continue
        if k > j:
            return k, paren + 1  # a word character before the name: nothing to its left
        start = k
        while start > pos and text[start - 1].isspace():
            start -= 1
        if start > pos and text[start - 1] == "[":
            start -= 1
        return start, paren + 1


_NATIVE_KEYS = frozenset({"name", "function", "arguments", "parameters", "type", "id"})
#: the keys of a chat message object (``{"role", "content", "tool_calls"}``)
MESSAGE_KEYS = frozenset({"content", "text", "tool_calls", "role"})


@dataclass
class EmissionView:
    """What the classifier sees of one emission: whether it calls a tool, and its prose."""

    has_call: bool = False
    prose: list[str] = field(default_factory=list)
    #: nothing was emitted: no call and no non-blank text (``None``, ``""``, ``[]``, ...)
    blank: bool = True

    def merge(self, other: EmissionView) -> None:
        self.has_call = self.has_call or other.has_call
        self.prose.extend(other.prose)
        self.blank = self.blank and other.blank


def _native_item_is_call(item: Any) -> bool:
    """A native tool-call object with a non-empty string name (OpenAI, Ollama or bare)."""
    if not isinstance(item, dict):
        return False
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name = item.get("name")
    return isinstance(name, str) and bool(name.strip())


def _is_bfcl_call(item: Any) -> bool:
    """BFCL's API-model form ``{tool_name: arguments}`` (arguments a JSON string or object)."""
    if not isinstance(item, dict) or len(item) != 1:
        return False
    ((key, value),) = item.items()
    return (
        isinstance(key, str)
        and bool(key.strip())
        and key not in _NATIVE_KEYS | MESSAGE_KEYS
        and isinstance(value, dict | str)
    )


def _strip_json_calls(text: str) -> str:
    """``text`` without the JSON values in it that parse as calls."""
    out: list[str] = []
    i = last = 0
    while i < len(text):
        if text[i] not in "{[":
            i += 1
            continue
        try:
            value, end = json_raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        if parse_text(json.dumps(value)).ok:
            out.append(text[last:i])
            i = last = end
        else:
            i += 1
    out.append(text[last:])
    return "".join(out)


def _strip_python_calls(text: str) -> str:
    """``text`` without the Python call expressions in it that parse as calls."""
    out: list[str] = []
    pos = last = 0
    while True:
        m = _py_call_start(text, pos)
        if m is None:
            break
        start = m[0] + (len(text[m[0] : m[1]]) - len(text[m[0] : m[1]].lstrip()))
        opener = start if text[start] == "[" else text.find("(", start)
        end = balanced_end(text, opener)
        if end > 0 and parse_text(text[start:end]).ok:
            out.append(text[last:start])
            pos = last = end
        else:
            pos = m[1]
    out.append(text[last:])
    return "".join(out)


def _prose_without_calls(text: str) -> str:
    """The prose of a text emission that parses as calls: call syntax removed."""
    for block in (_TOOL_CALL_BLOCK, _FUNCTIONCALL_BLOCK, _FENCE_BLOCK):
        text = block.sub(" ", text)
    return _strip_python_calls(_strip_json_calls(text))


def is_python_call_list(text: str) -> bool:
    """Whether the whole of ``text`` is ``f(...)`` or ``[f(...), g(...)]`` with literal
    arguments, positional ones included (``[sort('a.txt')]``: BFCL's gold and its decoder use
    them; :func:`callscope.parse.parse_text` does not accept them). Read by
    :func:`callscope.parse.read_python_calls` (:mod:`ast`, never evaluated)."""
    stripped = text.strip()
    if not stripped or len(stripped) > MAX_INPUT_CHARS:
        return False
    try:
        read_python_calls(stripped, positional=True)
    except ValueError:
        return False
    return True


def cut_user_turn(text: str) -> str:
    """``text`` up to the first line that opens a user turn the model wrote itself (a line
    ``user``, ``User:``, ``human`` or ``<|im_start|>user`` after some text): what follows is
    the model imagining the user, not its own action."""
    m = _USER_TURN.search(text)
    return text[: m.start()] if m else text


def is_documentation(value: Any) -> bool:
    """Whether a decoded JSON value describes functions instead of calling one: an object
    (or a non-empty list of objects) with a string ``name``, a ``description`` and a
    ``parameters`` object but no ``arguments`` (OpenAI's ``{"type": "function", "function":
    {...}}`` wrapper included)."""
    items = value if isinstance(value, list) else [value]
    if not items:
        return False
    for item in items:
        if not isinstance(item, dict):
            return False
        if item.get("type") == "function" and isinstance(item.get("function"), dict):
            item = item["function"]
        if not (
            isinstance(item.get("name"), str)
            and "description" in item
            and isinstance(item.get("parameters"), dict)
            and "arguments" not in item
        ):
            return False
    return True


def _odd_quotes(line: str) -> bool:
    return (line.count('"') - line.count('\\"')) % 2 == 1


def _documentation_line(line: str) -> bool:
    """A whole line of JSON that is function documentation (one-line schemas)."""
    stripped = line.strip().rstrip(",")
    if stripped[:1] not in ("{", "["):
        return False
    try:
        return is_documentation(json_loads(stripped))
    except ValueError:
        return False


def strip_documentation(text: str) -> str:
    """``text`` without regurgitated function documentation.

    Applies only to text that carries a JSON ``"description":`` key and a schema shape
    (``"properties": {`` or ``"type": "dict"``/``"object"``): then every line of
    pretty-printed JSON (members, bare strings and literals, brackets), every line that is a
    whole JSON documentation value (:func:`is_documentation`), and a first or last line that
    is a fragment of a string cut at the emission's edge (an odd number of ``"``) are removed.
    One pass over the lines."""
    if not (_SCHEMA_DESCRIPTION.search(text) and _SCHEMA_SHAPE.search(text)):
        return text
    lines = text.split("\n")
    last = len(lines) - 1
    keep = [
        line
        for i, line in enumerate(lines)
        if not (
            _JSON_LINE.fullmatch(line)
            or _documentation_line(line)
            or (i in (0, last) and _odd_quotes(line))
        )
    ]
    return "\n".join(keep)


def intended_call_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each Python call list that opens at the start of the text or of a
    line (``[name(``), to its closing bracket, or to the end of the text when it never closes
    (cut off mid-argument); at most ``MAX_CANDIDATES`` openings are tried. Its arguments need not be literals: the model meant a call. The
    first call's parentheses must be followed by ``,`` or ``]`` (or be cut off): ``[f(x).g()]``
    is an expression, not a call list."""
    spans: list[tuple[int, int]] = []
    pos = tries = 0
    while tries < MAX_CANDIDATES and (m := _INTENDED_CALL.search(text, pos)) is not None:
        tries += 1
        start = text.index("[", m.start())
        paren_end = balanced_end(text, m.end() - 1)
        after = text[paren_end:].lstrip()[:1] if paren_end > 0 else ""
        if paren_end > 0 and after not in ("", ",", "]"):
            pos = m.end()
            continue
        end = balanced_end(text, start)
        if end < 0:
            spans.append((start, len(text)))
            break
        spans.append((start, end))
        pos = end
    return spans


def _view_text(text: str, config: ClassifierConfig) -> EmissionView:
    blank = not text.strip()
    if config.strip_think:
        text = strip_think(text)
    if config.cut_user_turns:
        text = cut_user_turn(text)
    text = strip_documentation(text)
    spans = intended_call_spans(text)
    if spans:
        pieces, last = [], 0
        for start, end in spans:
            pieces.append(text[last:start])
            last = end
        pieces.append(text[last:])
        text = " ".join(pieces)
    if parse_text(text).ok:
        return EmissionView(has_call=True, prose=[_prose_without_calls(text)], blank=False)
    if is_python_call_list(text):
        return EmissionView(has_call=True, blank=False)
    return EmissionView(has_call=bool(spans), prose=[text], blank=blank and not spans)


def holds_native_call(calls: Any) -> bool:
    """A message's ``tool_calls`` holds a call (an OpenAI / Ollama item or a BFCL one): the
    emission is then a ``TOOL_CALL`` whatever its prose says under the default priority."""
    return isinstance(calls, list) and any(
        _native_item_is_call(c) or _is_bfcl_call(c) for c in calls
    )


def view_emission(emission: Any, config: ClassifierConfig) -> EmissionView:
    """Read any supported emission shape into an :class:`EmissionView`.

    Shapes: ``None`` (nothing emitted); text; a message object ``{"content"|"text",
    "tool_calls"}``; a :class:`~callscope.types.ModelReply`; a single call object
    (``{"name", "arguments"}`` or BFCL's ``{tool_name: arguments}``); a list of any of these
    (BFCL API models save ``[{tool_name: arguments}, ...]``; a list of Python call strings
    ``["f(a=1)", ...]`` is read element by element). Raises ``TypeError`` on other types.
    ``config`` supplies ``strip_think`` and ``cut_user_turns``.
    """
    if emission is None:
        return EmissionView()
    if isinstance(emission, str):
        return _view_text(emission, config)
    if hasattr(emission, "tool_calls") and hasattr(emission, "text"):  # ModelReply
        return view_emission({"content": emission.text, "tool_calls": emission.tool_calls}, config)
    if isinstance(emission, list | tuple):
        view = EmissionView()
        for item in emission:
            view.merge(view_emission(item, config))
        return view
    if isinstance(emission, dict):
        if _native_item_is_call(emission) or _is_bfcl_call(emission):
            return EmissionView(has_call=True, blank=False)
        view = EmissionView()
        if holds_native_call(emission.get("tool_calls")):
            view.has_call = True
            view.blank = False
        content = emission.get("content", emission.get("text"))
        if isinstance(content, str):
            view.merge(_view_text(content, config))
        elif isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    view.merge(_view_text(part["text"], config))
                elif isinstance(part, str):
                    view.merge(_view_text(part, config))
        elif content is not None:
            raise TypeError(f"message content of type {type(content).__name__}")
        elif not set(emission) & MESSAGE_KEYS:
            raise TypeError("object emission is neither a message nor a call")
        return view
    raise TypeError(f"unsupported emission type {type(emission).__name__}")
