"""BFCL's own answer decoders, re-written without ``eval``: a stored BFCL answer read as the
harness's handler for that model read it.

BFCL's harness stores each model's raw answer (``result``) and decodes it at evaluation time
with the model's handler (``decode_ast``). The decoders of the 2024-08 leaderboard
(gorilla repository, commit ``de8307b``, ``berkeley-function-call-leaderboard/model_handler``)
differ per model family; :data:`BFCL_DECODERS` holds one entry per family, each a function
``result -> list[ToolCall]`` raising :class:`~callscope.parse.literals.Rejected` where BFCL's
decoder raised (its ``ast_decoder:decoder_failed``), :class:`WrongFormat` where BFCL's decoder
returned something that is not a list of ``{name: arguments}``
(``ast_decoder:decoder_wrong_output_format``; a Python call without keyword arguments is
one: BFCL reads it as its source text), :class:`BadArguments` where BFCL decoded a call
whose arguments are not an object, and :class:`Irrelevant` for Raven's ``out_of_domain``.

What is the same as BFCL and what is not:

* Python call syntax is read by :func:`read_bfcl_calls`, BFCL's ``ast_parse`` +
  ``resolve_ast_by_type``: ``ast.parse(text, mode="eval")`` of the text *as given* (a leading
  blank is an ``IndentationError`` there too), a list (or tuple) whose every element is a
  call; keyword arguments only (positional ones are dropped, as BFCL drops them); a bare name
  is its identifier as a string; a call without keywords is its source text; a call with
  keywords is ``{name: {arguments}}``; a subscript is its source text; ``-x`` negates a
  constant. BFCL ``eval``\\ s an arithmetic expression (``BinOp``) and a ``lambda``: callscope
  never does, so such an answer is refused here (:data:`EVALUATED_BY_BFCL`), and the
  agreement table counts it as its own class.
* JSON (function-calling models' ``{name: "json args"}``, Hermes' ``<tool_call>`` lines,
  xLAM's ``{"tool_calls": [...]}``, GLM's ``name\\n{json}``) is read with the bounded JSON
  reader (:func:`~callscope.parse.literals.json_loads`).
* Everything is bounded as the rest of :mod:`callscope.parse`: the text is cut to
  :data:`~callscope.parse.literals.MAX_INPUT_CHARS`, values deeper than
  :data:`~callscope.parse.literals.MAX_ARGUMENT_DEPTH` are refused, and the only patterns
  are BFCL's own simple ones, each linear (no nested quantifier).

>>> [c.name for c in read_bfcl_calls("[math.factorial(number=5), f(x=a)]")]
['math.factorial', 'f']
>>> read_bfcl_calls("[f(x=a)]")[0].arguments
{'x': 'a'}
>>> decode_bfcl("gorilla", "f(x=2 * 3)")
Traceback (most recent call last):
...
callscope.parse.literals.Rejected: arithmetic expression (BFCL evaluates it; callscope does not)
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable
from typing import Any

from callscope.core.jsonl import loads_bounded
from callscope.core.registry import Registry
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


Decoder = Callable[[Any], list[ToolCall]]

#: BFCL's decoder families of the 2024-08 leaderboard: name -> decoder (module docstring)
BFCL_DECODERS: Registry[Decoder] = Registry(
    "BFCL decoder", entry_point_group="callscope.bfcl_decoders"
)


def decode_bfcl(decoder: str, result: Any) -> list[ToolCall]:
    """``result`` (a stored BFCL answer) read by the named decoder of :data:`BFCL_DECODERS`;
    raises :class:`Rejected` (or its :class:`WrongFormat` / :class:`Irrelevant`) as BFCL's
    decoder failed."""
    return BFCL_DECODERS.get(decoder)(result)


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


def _wrap(text: str, pad: str = "") -> str:
    """BFCL's ``[`` / ``]`` wrapping: added at each end that does not already have it."""
    if not text.startswith("["):
        text = "[" + pad + text
    if not text.endswith("]"):
        text = text + pad + "]"
    return text


def _text(result: Any) -> str:
    if not isinstance(result, str):
        raise Rejected(f"answer is {type(result).__name__}, not text")
    return result


# --------------------------------------------------------------------------- JSON shapes


def _json(text: str) -> Any:
    try:
        return loads_bounded(text)
    except ValueError as exc:
        raise Rejected(f"invalid JSON: {exc}") from None


def _arguments(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadArguments("arguments are not an object")
    return value


def _name_value_list(result: Any, *, json_args: bool) -> list[ToolCall]:
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
            raw = _json(raw)
        calls.append(ToolCall(name=str(name), arguments=_arguments(raw)))
    return calls


# --------------------------------------------------------------------------- the families


def _fc_json(result: Any) -> list[ToolCall]:
    return _name_value_list(result, json_args=True)


def _fc_object(result: Any) -> list[ToolCall]:
    return _name_value_list(result, json_args=False)


def _openai_prompt(result: Any) -> list[ToolCall]:
    return read_bfcl_calls(_text(result))


def _claude_prompt(result: Any) -> list[ToolCall]:
    text = _text(result)
    if not text:
        raise Rejected("empty answer")  # BFCL indexes func[0]
    if text[0] == " ":
        text = text[1:]
    return read_bfcl_calls(_wrap(text))


def _wrap_prompt(result: Any) -> list[ToolCall]:
    return read_bfcl_calls(_wrap(_text(result)))


def _mistral_prompt(result: Any) -> list[ToolCall]:
    return read_bfcl_calls(_wrap(_text(result).replace("\\_", "_")))


def _llama(result: Any) -> list[ToolCall]:
    return read_bfcl_calls(_wrap(_text(result).replace("\n", "")))


def _gorilla(result: Any) -> list[ToolCall]:
    return read_bfcl_calls("[" + _text(result) + "]")


def _nexus(result: Any) -> list[ToolCall]:
    text = _text(result)
    if text.endswith(";"):
        text = text[:-1]
    text = text.replace(";", ",")
    calls = read_bfcl_calls("[" + text + "]")
    if "out_of_domain" in text:
        raise Irrelevant("out_of_domain: the model declined")
    return calls


def _arctic(result: Any) -> list[ToolCall]:
    text = _wrap(_text(result).replace("\n", ""), " ")
    if text.startswith("['"):
        text = text.replace("['", "[").replace("', '", ", ").replace("','", ", ")
    if text.endswith("']"):
        text = text.replace("']", "]")
    return read_bfcl_calls(text)


_QUOTED = re.compile(r"'([^']*)'")


def _databricks(result: Any) -> list[ToolCall]:
    text = _text(result)
    func = _QUOTED.sub(r"\1", text).replace("\n    ", "")
    func = _wrap(func)
    if func.startswith("['"):
        func = func.replace("['", "[")
    try:
        return read_bfcl_calls(func)
    except Rejected:
        return read_bfcl_calls(text)


_BRACKETED = re.compile(r"\[[^\]]*\]")


def _deepseek(result: Any) -> list[ToolCall]:
    parts = _text(result).split("```")
    if len(parts) < 2:
        raise Rejected("no ``` block")
    match = _BRACKETED.search(parts[1])
    if match is None:
        raise Rejected("no [...] in the ``` block")
    return read_bfcl_calls(match.group(0))


def _gemma(result: Any) -> list[ToolCall]:
    text = _text(result)
    start, end = text.find("["), text.rfind("]")  # BFCL: re.search(r"\[(.*)\]", DOTALL)
    if start < 0 or end < start:
        raise Rejected("no [...] in the answer")
    return read_bfcl_calls(text[start : end + 1])


def _gemini(result: Any) -> list[ToolCall]:
    if not isinstance(result, list):
        result = [result]
    return _name_value_list(result, json_args=True)


def _hermes(result: Any) -> list[ToolCall]:
    calls: list[ToolCall] = []
    inside = False
    for line in _text(result).split("\n"):
        if line == "<tool_call>":
            inside = True
        elif line == "</tool_call>":
            inside = False
        else:
            if inside:
                obj = _json(line.replace("'", '"'))
                if not isinstance(obj, dict) or "name" not in obj or "arguments" not in obj:
                    raise Rejected("tool_call line is not {name, arguments}")
                arguments = _arguments(obj["arguments"])
                calls.append(ToolCall(name=str(obj["name"]), arguments=arguments))
            inside = False
    return calls


def _glm(result: Any) -> list[ToolCall]:
    lines = _text(result).split("\n")
    if len(lines) == 1:
        raise WrongFormat("one line: not a call")
    return [ToolCall(name=lines[0], arguments=_arguments(_json(lines[1])))]


def _xlam(result: Any) -> list[ToolCall]:
    try:
        data = loads_bounded(_text(result))
    except ValueError:
        raise WrongFormat("not JSON: BFCL keeps the text") from None
    if isinstance(data, dict):
        items = data.get("tool_calls", [])
    elif isinstance(data, list):
        items = data
    else:
        raise Rejected("JSON that is neither a list nor an object")
    if not isinstance(items, list):
        raise Rejected("tool_calls is not a list")
    calls: list[ToolCall] = []
    for item in items:
        if isinstance(item, dict):
            arguments = _arguments(item.get("arguments", {}))
            calls.append(ToolCall(name=str(item.get("name", "")), arguments=arguments))
    return calls


for _name, _decoder in (
    ("fc_json", _fc_json),
    ("fc_object", _fc_object),
    ("openai_prompt", _openai_prompt),
    ("claude_prompt", _claude_prompt),
    ("wrap", _wrap_prompt),
    ("mistral_prompt", _mistral_prompt),
    ("llama", _llama),
    ("gorilla", _gorilla),
    ("nexus", _nexus),
    ("arctic", _arctic),
    ("databricks", _databricks),
    ("deepseek", _deepseek),
    ("gemma", _gemma),
    ("gemini", _gemini),
    ("hermes", _hermes),
    ("glm", _glm),
    ("xlam", _xlam),
):
    BFCL_DECODERS.register(_name, _decoder)
