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
  (``{"name", "arguments"}`` JSON), read by :mod:`callscope.parse.bfcl_formats`.
* This module owns the decoders' registry, the 2024 handler families and the choice of a
  decoder by sample; the syntaxes they read through (Python call lists, JSON shapes) and
  BFCL's outcomes are :mod:`callscope.parse.bfcl_syntax`'s.
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

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from callscope.core.jsonl import loads_bounded
from callscope.core.registry import Registry
from callscope.parse.bfcl_formats import (  # noqa: F401 (importable from here)
    MAX_BLOCKS,
    fenced,
    function_call_tags,
    json_calls,
    tool_call_tags,
)
from callscope.parse.bfcl_syntax import (  # noqa: F401 (importable from here)
    EVALUATED_BY_BFCL,
    BadArguments,
    Irrelevant,
    WrongFormat,
    answer_text,
    arguments_of,
    json_value,
    name_value_list,
    read_bfcl_calls,
    wrap_list,
)
from callscope.parse.literals import Rejected
from callscope.types import ToolCall

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


# --------------------------------------------------------------------------- the families


def _fc_json(result: Any) -> list[ToolCall]:
    return name_value_list(result, json_args=True)


def _fc_object(result: Any) -> list[ToolCall]:
    return name_value_list(result, json_args=False)


def _openai_prompt(result: Any) -> list[ToolCall]:
    return read_bfcl_calls(answer_text(result))


def _claude_prompt(result: Any) -> list[ToolCall]:
    text = answer_text(result)
    if not text:
        raise Rejected("empty answer")  # BFCL indexes func[0]
    if text[0] == " ":
        text = text[1:]
    return read_bfcl_calls(wrap_list(text))


def _wrap_prompt(result: Any) -> list[ToolCall]:
    return read_bfcl_calls(wrap_list(answer_text(result)))


def _mistral_prompt(result: Any) -> list[ToolCall]:
    return read_bfcl_calls(wrap_list(answer_text(result).replace("\\_", "_")))


def _llama(result: Any) -> list[ToolCall]:
    return read_bfcl_calls(wrap_list(answer_text(result).replace("\n", "")))


def _gorilla(result: Any) -> list[ToolCall]:
    return read_bfcl_calls("[" + answer_text(result) + "]")


def _nexus(result: Any) -> list[ToolCall]:
    text = answer_text(result)
    if text.endswith(";"):
        text = text[:-1]
    text = text.replace(";", ",")
    calls = read_bfcl_calls("[" + text + "]")
    if "out_of_domain" in text:
        raise Irrelevant("out_of_domain: the model declined")
    return calls


def _arctic(result: Any) -> list[ToolCall]:
    text = wrap_list(answer_text(result).replace("\n", ""), " ")
    if text.startswith("['"):
        text = text.replace("['", "[").replace("', '", ", ").replace("','", ", ")
    if text.endswith("']"):
        text = text.replace("']", "]")
    return read_bfcl_calls(text)


_QUOTED = re.compile(r"'([^']*)'")


def _databricks(result: Any) -> list[ToolCall]:
    text = answer_text(result)
    func = _QUOTED.sub(r"\1", text).replace("\n    ", "")
    func = wrap_list(func)
    if func.startswith("['"):
        func = func.replace("['", "[")
    try:
        return read_bfcl_calls(func)
    except Rejected:
        return read_bfcl_calls(text)


_BRACKETED = re.compile(r"\[[^\]]*\]")


def _deepseek(result: Any) -> list[ToolCall]:
    parts = answer_text(result).split("```")
    if len(parts) < 2:
        raise Rejected("no ``` block")
    match = _BRACKETED.search(parts[1])
    if match is None:
        raise Rejected("no [...] in the ``` block")
    return read_bfcl_calls(match.group(0))


def _gemma(result: Any) -> list[ToolCall]:
    text = answer_text(result)
    start, end = text.find("["), text.rfind("]")  # BFCL: re.search(r"\[(.*)\]", DOTALL)
    if start < 0 or end < start:
        raise Rejected("no [...] in the answer")
    return read_bfcl_calls(text[start : end + 1])


def _gemini(result: Any) -> list[ToolCall]:
    if not isinstance(result, list):
        result = [result]
    return name_value_list(result, json_args=True)


def _hermes(result: Any) -> list[ToolCall]:
    calls: list[ToolCall] = []
    inside = False
    for line in answer_text(result).split("\n"):
        if line == "<tool_call>":
            inside = True
        elif line == "</tool_call>":
            inside = False
        else:
            if inside:
                obj = json_value(line.replace("'", '"'))
                if not isinstance(obj, dict) or "name" not in obj or "arguments" not in obj:
                    raise Rejected("tool_call line is not {name, arguments}")
                arguments = arguments_of(obj["arguments"])
                calls.append(ToolCall(name=str(obj["name"]), arguments=arguments))
            inside = False
    return calls


def _glm(result: Any) -> list[ToolCall]:
    lines = answer_text(result).split("\n")
    if len(lines) == 1:
        raise WrongFormat("one line: not a call")
    return [ToolCall(name=lines[0], arguments=arguments_of(json_value(lines[1])))]


def _xlam(result: Any) -> list[ToolCall]:
    try:
        data = loads_bounded(answer_text(result))
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
            arguments = arguments_of(item.get("arguments", {}))
            calls.append(ToolCall(name=str(item.get("name", "")), arguments=arguments))
    return calls


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
    ("function_call_tag", function_call_tags),
    ("tool_call_tag", tool_call_tags),
    ("fenced", fenced),
    ("json_calls", json_calls),
):
    BFCL_DECODERS.register(_name, _decoder)
