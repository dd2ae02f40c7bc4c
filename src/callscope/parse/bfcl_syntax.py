"""The syntaxes BFCL's decoders read a stored answer in, re-written without ``eval``, and
BFCL's outcomes for an answer that does not read as calls.

:func:`read_bfcl_calls` is BFCL's ``ast_parse`` + ``resolve_ast_by_type`` for a Python call list
(the rules: :mod:`callscope.parse.bfcl_decode`'s docstring); :func:`json_value`,
:func:`arguments_of` and :func:`name_value_list` read the JSON shapes. :class:`WrongFormat`,
:class:`BadArguments` and :class:`Irrelevant` are the :class:`~callscope.parse.literals.Rejected`
outcomes BFCL tells apart. Every decoder (:mod:`callscope.parse.bfcl_decode`, the handler
families; :mod:`callscope.parse.bfcl_formats`, the formats no handler lists) reads through
these.
"""

from __future__ import annotations

import ast
import warnings
from typing import Any

from callscope.core.jsonl import loads_bounded
from callscope.parse.literals import MAX_ARGUMENT_DEPTH, MAX_INPUT_CHARS, Rejected, json_like
from callscope.types import ToolCall

#: the reason of an answer BFCL's decoder would have read by evaluating model text
EVALUATED_BY_BFCL = "arithmetic expression (BFCL evaluates it; callscope does not)"


class WrongFormat(Rejected):
    """The decoder returned, but not a list of calls (BFCL's
    ``ast_decoder:decoder_wrong_output_format``; for relevance cases BFCL counts it as no
    call)."""


class BadArguments(Rejected):
    """BFCL decoded a call whose arguments are not an object (e.g. ``{"f": "20"}``, the
    JSON ``20``): BFCL counts it as a call (a relevance case rejects it), callscope cannot
    read its arguments."""


class Irrelevant(Rejected):
    """The model said the request is out of its functions' domain in its own words (Raven's
    ``out_of_domain(...)``, which BFCL's Nexus handler turns into the string
    ``"irrelevant"``): no call."""


# --------------------------------------------------------------------------- Python syntax


def _parse(text: str) -> ast.expr:
    """``ast.parse(text, mode="eval")`` on the text as BFCL passes it (not stripped)."""
    if len(text) > MAX_INPUT_CHARS:
        raise Rejected(f"answer longer than {MAX_INPUT_CHARS} characters")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeError) as exc:
        raise Rejected(f"invalid syntax: {type(exc).__name__}") from None


def _dotted(node: ast.AST) -> str:
    """BFCL's ``resolve_ast_call`` name: attribute parts joined by dots (a callee that is not a
    name chain loses its head, as in BFCL)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _call(node: ast.Call, depth: int) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise Rejected("**kwargs in a call")
        arguments[kw.arg] = _value(kw.value, depth + 1)
    return {_dotted(node.func): arguments}


def _unparse(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (ValueError, RecursionError) as exc:  # pragma: no cover - ast.parse produced it
        raise Rejected(f"cannot unparse: {type(exc).__name__}") from None


def _value(node: ast.AST, depth: int) -> Any:
    """BFCL's ``resolve_ast_by_type`` without ``eval`` (module docstring)."""
    if depth > MAX_ARGUMENT_DEPTH:
        raise Rejected(f"argument nested deeper than {MAX_ARGUMENT_DEPTH}")
    if isinstance(node, ast.Constant):
        if node.value is Ellipsis:
            return "..."
        if isinstance(node.value, bytes | complex):
            raise Rejected(f"unsupported constant {type(node.value).__name__}")
        return json_like(node.value)
    if isinstance(node, ast.UnaryOp):
        operand = node.operand
        if not isinstance(operand, ast.Constant) or not isinstance(operand.value, int | float):
            raise Rejected("unary operator on a non-number")
        return json_like(-operand.value)  # BFCL negates whatever the operator
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(v, depth + 1) for v in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise Rejected("** in a dict")
            key = _value(k, depth + 1)
            if not isinstance(key, str | int | float | bool) and key is not None:
                raise Rejected("dict key is not a scalar")
            out[key if isinstance(key, str) else str(key)] = _value(v, depth + 1)
        return out
    if isinstance(node, ast.BinOp | ast.Lambda):
        raise Rejected(EVALUATED_BY_BFCL)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _unparse(node) if not node.keywords else _call(node, depth)
    if isinstance(node, ast.Subscript):
        return f"{_unparse(node.value)}[{_unparse(node.slice)}]"
    raise Rejected(f"unsupported expression {type(node).__name__}")


def read_bfcl_calls(text: str) -> list[ToolCall]:
    """BFCL's ``ast_parse`` (2024-08) on ``text`` as given: a list or tuple of calls, each
    read as ``resolve_ast_by_type`` reads it (module docstring). Raises :class:`Rejected`
    where BFCL's raises (a bare call that is not in a list included)."""
    body = _parse(text)
    if not isinstance(body, ast.List | ast.Tuple):
        raise Rejected("not a list of calls")
    calls: list[ToolCall] = []
    as_text = False
    for elem in body.elts:
        if not isinstance(elem, ast.Call):
            raise Rejected("list element is not a call")
        if not elem.keywords:  # BFCL reads a call without keywords as its source text
            as_text = True
            continue
        ((name, arguments),) = _call(elem, 1).items()
        calls.append(ToolCall(name=name, arguments=arguments))
    if as_text:
        raise WrongFormat("a call without keyword arguments")
    return calls


def wrap_list(text: str, pad: str = "") -> str:
    """BFCL's ``[`` / ``]`` wrapping: added at each end that does not already have it."""
    if not text.startswith("["):
        text = "[" + pad + text
    if not text.endswith("]"):
        text = text + pad + "]"
    return text


def answer_text(result: Any) -> str:
    if not isinstance(result, str):
        raise Rejected(f"answer is {type(result).__name__}, not text")
    return result


# --------------------------------------------------------------------------- JSON shapes


def json_value(text: str) -> Any:
    try:
        return loads_bounded(text)
    except ValueError as exc:
        raise Rejected(f"invalid JSON: {exc}") from None


def arguments_of(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadArguments("arguments are not an object")
    return value


def name_value_list(result: Any, *, json_args: bool) -> list[ToolCall]:
    """``[{name: arguments}]``: BFCL's function-calling decoders (arguments a JSON string
    for OpenAI, Claude, Mistral, Gemini, Yi; an object for Cohere)."""
    if isinstance(result, dict):
        result = [result]
    if not isinstance(result, list):
        raise Rejected(f"answer is {type(result).__name__}, not a list of calls")
    calls: list[ToolCall] = []
    for item in result:
        if not isinstance(item, dict) or not item:
            raise Rejected("call is not a {name: arguments} object")
        name = next(iter(item))
        raw = item[name]
        if json_args:
            if not isinstance(raw, str):
                raise Rejected("arguments are not a JSON string")
            raw = json_value(raw)
        calls.append(ToolCall(name=str(name), arguments=arguments_of(raw)))
    return calls
