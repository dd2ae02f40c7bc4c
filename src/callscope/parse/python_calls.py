"""Python call syntax, read with :mod:`ast` and never evaluated: the one reader of
``f(a=1)`` / ``[f(a=1), g()]`` in callscope.

The rule every caller shares (:func:`read_call`): a call is an ``ast.Call`` whose callee is a
plain or dotted name (``f``, ``math.sqrt``) and whose arguments are all literals
(``ast.literal_eval`` on each argument node, so ``*args`` are refused); ``**kwargs`` are
refused. Callers differ only in what they do on top:

* :func:`parse_python_calls` (model output) refuses positional arguments and converts every
  value to JSON data (:func:`~callscope.parse.literals.json_like`: tuples become lists,
  depth-capped, finite numbers only);
* :func:`read_python_calls` with ``positional=True`` accepts positional literals and keeps
  the values as ``ast.literal_eval`` returns them (the action classifier's
  ``is_python_call_list``); BFCL's gold calls use :func:`read_call` on
  :func:`parse_expression` and bind positional arguments by signature;
* :func:`scan_python` finds calls embedded in prose.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from callscope.parse.literals import MAX_CANDIDATES, Rejected, balanced_end, json_like
from callscope.types import ToolCall

#: where a call may start in prose: ``name(`` or ``[name(``, not inside a longer name. A
#: match starts only at ``[`` or at a name's first letter, and every repetition is possessive,
#: so a search reads each character a bounded number of times (linear on any input; a blank
#: run is never rescanned from each of its positions)
CALL_START = re.compile(r"(?<![\w.])(?:\[\s*+)?[A-Za-z_][\w.]*+\s*+\(")


@dataclass(frozen=True)
class CallSyntax:
    """One call as written: its (dotted) ``name``, positional ``args`` and keyword ``kwargs``
    (values already read as literals)."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


#: a lone surrogate (UTF-16 half), which Python's parser cannot read as source
_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_expression(text: str) -> ast.expr:
    """The whole of ``text`` (stripped) as one Python expression node; raises
    :class:`~callscope.parse.literals.Rejected` when it is not one. A lone surrogate (which a
    model can emit, and which the parser cannot read as source) is read as its ``\\uXXXX``
    escape, so inside a string literal it is the same character again."""
    if _SURROGATE.search(text) is not None:
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    try:
        with warnings.catch_warnings():  # model text: its invalid escapes are not our warnings
            warnings.simplefilter("ignore")
            tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:  # Python's own words: "'(' was never closed", ...
        raise Rejected(f"not Python call syntax: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise Rejected(f"not Python call syntax: {type(exc).__name__}") from None
    return tree.body


def call_nodes(text: str) -> list[ast.expr]:
    """The elements of ``text`` read as ``x`` or ``[x, y]`` / ``(x, y)`` (not yet checked to
    be calls); raises ``Rejected`` for an empty list."""
    body = parse_expression(text)
    nodes = list(body.elts) if isinstance(body, ast.List | ast.Tuple) else [body]
    if not nodes:
        raise Rejected("empty call list")
    return nodes


def literal(node: ast.AST) -> Any:
    """``ast.literal_eval`` of one argument node; ``Rejected`` when it is not a literal."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError) as exc:
        raise Rejected(f"argument is not a literal: {type(exc).__name__}") from None


#: a dotted name of more parts is refused: ``ast`` reads deeper chains or not depending on
#: the host's recursion limit (up to 2,974 parts at Python's default 1,000; deeper where a
#: package raised it), so without a bound of its own the same text would be a call in one
#: process and prose in another
MAX_NAME_PARTS = 2048


def dotted_name(node: ast.AST) -> str:
    """``f`` or ``a.b.f`` for a ``Name`` / chain of ``Attribute`` nodes; ``Rejected`` else
    (also for more than :data:`MAX_NAME_PARTS` parts). A loop, not a recursion: ``ast``
    parses chains far deeper than the interpreter's stack."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        if len(parts) >= MAX_NAME_PARTS:
            raise Rejected(f"a dotted name of more than {MAX_NAME_PARTS} parts")
        node = node.value
    if not isinstance(node, ast.Name):
        raise Rejected("called object is not a plain (dotted) name")
    parts.append(node.id)
    return ".".join(reversed(parts))


def _same(value: Any) -> Any:
    return value


def read_call(
    node: ast.AST, *, positional: bool, convert: Callable[[Any], Any] = _same
) -> CallSyntax:
    """One call node as :class:`CallSyntax` (the module's rule); ``convert`` is applied to
    each literal value. Checks, in order: a call; positional arguments allowed; each
    positional argument, then each keyword (no ``**``), a literal; the callee a dotted name."""
    if not isinstance(node, ast.Call):
        raise Rejected("not a call")
    if node.args and not positional:
        raise Rejected("positional arguments are not accepted; use name=value")
    args: list[Any] = []
    for arg in node.args:  # a ``*x`` argument is not a literal
        args.append(convert(literal(arg)))
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise Rejected("**kwargs are not accepted")
        kwargs[kw.arg] = convert(literal(kw.value))
    return CallSyntax(name=dotted_name(node.func), args=tuple(args), kwargs=kwargs)


def read_python_calls(text: str, *, positional: bool = True) -> list[CallSyntax]:
    """Every call of ``f(...)`` or ``[f(...), g(...)]`` as the whole of ``text``, values as
    ``ast.literal_eval`` gives them. Raises ``ValueError``."""
    return [read_call(n, positional=positional) for n in call_nodes(text)]


def parse_python_calls(text: str) -> list[ToolCall]:
    """``f(a=1)`` or ``[f(a=1), g()]`` as the whole of ``text``; keyword literals only, as
    JSON data. Never evaluates. Raises ``ValueError``."""
    return [
        ToolCall(name=c.name, arguments=c.kwargs)
        for c in (read_call(n, positional=False, convert=json_like) for n in call_nodes(text))
    ]


#: call syntax right after ``name(``: ``)``, the end of the text (cut off there), a keyword
#: ``k=`` (not ``==``), a quoted literal
CALL_ARGS = re.compile(r"[ \t\r\n]*+(?:\)|\Z|[A-Za-z_]\w*+[ \t]*+=(?!=)|[\"'])")


def scan_python(
    text: str, broken: list[tuple[int, str]] | None = None
) -> tuple[list[ToolCall], str | None]:
    """Python call syntax embedded in prose: ``[f(a=1)]`` lists, or ``f(k=v)`` with keywords
    (a bare ``f()`` in prose is not taken for a call). Returns the calls in order and the last
    rejection reason; at most ``MAX_CANDIDATES`` starts are tried. ``broken``, when given,
    receives ``(position, reason)`` of every ``name(`` written with call syntax
    (:data:`CALL_ARGS`) that is cut off or refused after a call was read (``[f(a=1),
    g(b=``); ``position`` counts the calls and broken calls before it."""
    calls: list[ToolCall] = []
    error: str | None = None
    pos = 0
    for _ in range(MAX_CANDIDATES):
        m = CALL_START.search(text, pos)
        if not m:
            break
        start = m.start()
        first_open = text.find("(", start) if text[start] != "[" else start
        end = balanced_end(text, first_open)
        attempt = broken is not None and bool(calls) and CALL_ARGS.match(text, m.end())
        if end < 0:
            if attempt:
                name = m.group().lstrip("[").rstrip("(").strip()
                broken.append((len(calls) + len(broken), f"the call {name}( is cut off"))
                break  # the rest of the text is inside the cut-off call: no call of its own
            # an unclosed list may still hold whole calls: read on from its first name
            pos = start + 1 if text[start] == "[" else m.end()
            continue
        segment = text[start:end]
        try:
            found = parse_python_calls(segment)
        except Rejected as exc:
            error = str(exc)
            if attempt:
                broken.append((len(calls) + len(broken), error))
            pos = m.end()
            continue
        is_list = segment.lstrip().startswith("[")
        if is_list or any(c.arguments for c in found):
            calls.extend(found)
        pos = end
    return calls, error
