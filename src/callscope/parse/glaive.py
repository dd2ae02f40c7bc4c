"""Glaive's ``<functioncall>`` payload: the one reader, shared by the model-output parser
(:func:`callscope.parse.parse_text`) and the corpus loader (:mod:`callscope.benchmarks.glaive`).

Glaive function-calling v2 (``glaiveai/glaive-function-calling-v2``, the SAAG benchmark
source, SAAG paper section 3 and App. C) writes a call as
``<functioncall> {"name": "f", "arguments": '{"a": 1}'}``: a JSON object whose ``arguments``
is a JSON object *inside single quotes*, which is not JSON. :func:`read_functioncall` reads
the text after the tag as follows:

1. The payload starts at the first ``{``; text after the call object is ignored.
2. If the payload decodes as JSON (``json.JSONDecoder(strict=False)``: raw control
   characters such as newlines are allowed inside strings, as the corpus has them), that is
   the call object. Its ``arguments`` may be an object, missing, or a JSON string.
3. Otherwise its ``arguments`` must be single-quoted: ``"arguments": '...'``. The closing quote
   is the first ``'`` followed by optional whitespace and ``}`` for which both the inside
   parses as arguments and the rest of the object (the quoted part replaced by ``null``)
   decodes. So an apostrophe inside a value (``'{"t": "Mo's"}'``), even one followed by
   ``}`` (``'{"t": "x'}y"}'``), does not end the arguments early.
4. An arguments string (quoted either way) is stripped; empty means ``{}``; otherwise it
   must decode to a JSON object, read again with ``\\'`` unescaped to ``'`` when it does not
   decode as written (``\\'`` is not a JSON escape but the corpus has it).

The result is the call object as JSON data, with ``arguments`` decoded. Callers apply their
own call-object rules on top: the parser's :func:`~callscope.parse.call_from_object` (name
stripped, ``parameters`` alias, depth and finite-number checks) and the loader's gold-call
rule. Every failure is a ``ValueError``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from callscope.core.jsonl import JsonLimitError, TooDeep, loads_bounded, raw_decode_bounded
from callscope.parse.literals import Rejected

#: possessive repetitions: each match attempt reads a blank run once (linear time)
_QUOTED_ARGS = re.compile(r"\"arguments\"\s*+:\s*+'")
_CLOSING_QUOTE = re.compile(r"'(?=\s*+\})")
_DECODER = json.JSONDecoder(strict=False)


def _loads_arguments(text: str) -> dict[str, Any]:
    """An arguments string (the inside of the quotes) as an object (rule 4)."""
    stripped = text.strip()
    if not stripped:
        return {}
    try:
        try:
            value = loads_bounded(stripped, decoder=_DECODER)
        except json.JSONDecodeError:
            value = loads_bounded(stripped.replace("\\'", "'"), decoder=_DECODER)
    except TooDeep:
        raise Rejected("arguments are nested too deeply to decode") from None
    except ValueError as exc:
        raise Rejected(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise Rejected("arguments are not a JSON object")
    return value


def read_functioncall(text: str, *, max_candidates: int | None = None) -> dict[str, Any]:
    """The call object after a ``<functioncall>`` tag, ``arguments`` decoded (module rules).

    ``max_candidates`` bounds how many closing quotes are tried (the parser passes
    :data:`~callscope.parse.literals.MAX_CANDIDATES` so that model output costs linear time;
    the corpus loader reads without a bound). Raises ``ValueError`` when no reading works.
    """
    start = text.find("{")
    if start < 0:
        raise Rejected("no JSON object after <functioncall>")
    try:
        obj, _ = raw_decode_bounded(text, start, decoder=_DECODER)
    except json.JSONDecodeError:
        return _read_quoted(text, start, max_candidates)
    except JsonLimitError as exc:  # nested too deeply, an integer over the digit limit
        raise Rejected(f"call cannot be decoded: {exc}") from None
    arguments = obj.get("arguments")
    if isinstance(arguments, str):
        return {**obj, "arguments": _loads_arguments(arguments)}
    return obj


def _read_quoted(text: str, start: int, max_candidates: int | None) -> dict[str, Any]:
    match = _QUOTED_ARGS.search(text, start)
    if match is None:
        raise Rejected("call is not JSON and has no single-quoted arguments")
    open_quote = match.end() - 1
    last_error = "single-quoted arguments are never closed"
    for tried, close in enumerate(_CLOSING_QUOTE.finditer(text, open_quote + 1)):
        if max_candidates is not None and tried >= max_candidates:
            last_error = f"no closing quote among the first {max_candidates} candidates"
            break
        inner = text[open_quote + 1 : close.start()]
        rebuilt = text[start:open_quote] + "null" + text[close.start() + 1 :]
        try:
            arguments = _loads_arguments(inner)
            obj, _ = raw_decode_bounded(rebuilt, 0, decoder=_DECODER)
        except ValueError as exc:
            last_error = str(exc) or type(exc).__name__
            continue
        return {**obj, "arguments": arguments}
    raise Rejected(f"single-quoted arguments do not parse: {last_error}")
