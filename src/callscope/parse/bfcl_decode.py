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
* A model BFCL's handler map does not name has no handler: :func:`choose_decoder` tries
  every decoder here on a sample of its answers and takes the one that reads calls from the
  most (a :class:`DecoderChoice`, with every alternative's count). Besides the 2024
  families, four formats no 2024 handler lists are tried: ``function_call_tag`` (granite's
  ``<function_call> {json}``), ``tool_call_tag`` (``<tool_call>...</tool_call>`` anywhere),
  ``fenced`` (Markdown code fences holding JSON or a Python call list) and ``json_calls``
  (``{"name", "arguments"}`` JSON).
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


# --------------------------------------------------------------------------- unlisted formats
# Formats no 2024 handler reads, tried (with every family above) for a model the handler map
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
        raw = _json(raw)
    return ToolCall(name=obj["name"], arguments=_arguments(raw))


def _named_calls(value: Any) -> list[ToolCall]:
    """A ``{"name", "arguments"}`` object, a list of them, or ``{"tool_calls": [...]}``."""
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    return [_named(item) for item in items[:MAX_BLOCKS]]


def _function_call_tags(result: Any) -> list[ToolCall]:
    """``<function_call> {"name": ..., "arguments": {...}}`` pieces (IBM granite's
    function-calling models; BFCL's later granite handler): the text split on the tag,
    every non-blank piece one JSON call; ``no_function`` is the model declining."""
    text = _text(result)
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


def _tool_call_tags(result: Any) -> list[ToolCall]:
    """``<tool_call>{json}</tool_call>`` blocks anywhere in the answer, on one line or many
    (Hermes' handler reads them only as whole lines), each one call or a list of calls."""
    blocks = _between(_text(result), "<tool_call>", "</tool_call>")
    if not blocks:
        raise Rejected("no <tool_call> block")
    return [c for body in blocks for c in _named_calls(_json(body.strip()))]


def _fenced(result: Any) -> list[ToolCall]:
    """Markdown code fences (```` ```json ````, ```` ```python ````, plain ```` ``` ````),
    each body JSON calls (:func:`_named_calls`) or, when not JSON, a Python call list."""
    text = _text(result)
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
            calls.extend(read_bfcl_calls(_wrap(body)))
        else:
            calls.extend(_named_calls(value))
    return calls


def _json_calls(result: Any) -> list[ToolCall]:
    """The answer as JSON calls (:func:`_named_calls`): stored as JSON, or text that is."""
    if isinstance(result, str):
        result = _json(result.strip())
    return _named_calls(result)


# --------------------------------------------------------------------------- choosing one

#: how many of a model's answers :func:`choose_decoder` reads with every decoder
SAMPLE_SIZE = 100


@dataclass(frozen=True, slots=True)
class DecoderChoice:
    """The decoder a model's answers are read with: ``name``; ``by`` ``"handler"`` (BFCL's
    handler map names the model) or ``"sample"`` (chosen by :func:`choose_decoder`);
    ``sample``: the answers tried; ``reads``: ``(decoder, answers it read calls from)`` for
    every decoder tried, most first (the chosen one first)."""

    name: str
    by: str = "handler"
    sample: int = 0
    reads: tuple[tuple[str, int], ...] = ()

    @property
    def undecodable(self) -> bool:
        """Chosen by sample, and even the best decoder reads calls from fewer than half of
        the sampled answers: the model's format is one no decoder knows."""
        best = self.reads[0][1] if self.reads else 0
        return self.by == "sample" and self.sample > 0 and 2 * best < self.sample

    def alternatives(self, limit: int = 3) -> str:
        """The next decoders and their reads, e.g. ``"wrap 3/100, gemma 3/100"``."""
        return ", ".join(f"{n} {k}/{self.sample}" for n, k in self.reads[1 : 1 + limit])


#: what a decoded call's name must look like for a decoder to count as reading the answer
#: (a dotted identifier, ``-`` allowed: not a fence's ```` ```json ```` line, not prose)
_FUNCTION_NAME = re.compile(r"[A-Za-z_][\w.\-]{0,255}")


def _reads(decoder: Decoder, result: Any) -> bool:
    """Whether ``decoder`` reads at least one call from ``result``, every call named as a
    function is (:data:`_FUNCTION_NAME`)."""
    try:
        calls = decoder(result)
    except Rejected:
        return False
    return bool(calls) and all(_FUNCTION_NAME.fullmatch(c.name) for c in calls)


def choose_decoder(samples: Sequence[Any], default: str) -> DecoderChoice:
    """The decoder of :data:`BFCL_DECODERS` that reads calls from the most of ``samples``
    (a model's answers); ties go to ``default`` first, then to registry order. Every decoder
    is bounded (module docstring), so this is ``len(samples)`` x decoders bounded reads.

    >>> c = choose_decoder(['<function_call> {"name": "f", "arguments": {"x": 1}}'], "wrap")
    >>> c.name, c.reads[:2], c.undecodable
    ('function_call_tag', (('function_call_tag', 1), ('wrap', 0)), False)
    >>> choose_decoder(["[f(x=1)]"], "wrap").name
    'wrap'
    """
    names = [default, *(n for n in BFCL_DECODERS.names() if n != default)]
    counts = {n: sum(_reads(BFCL_DECODERS[n], s) for s in samples) for n in names}
    order = sorted(names, key=lambda n: -counts[n])  # stable: ties keep the order above
    return DecoderChoice(order[0], "sample", len(samples), tuple((n, counts[n]) for n in order))


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
    ("function_call_tag", _function_call_tags),
    ("tool_call_tag", _tool_call_tags),
    ("fenced", _fenced),
    ("json_calls", _json_calls),
):
    BFCL_DECODERS.register(_name, _decoder)
