"""The parser's limits and value checks, shared by every reader in :mod:`callscope.parse`.

* Input caps: :data:`MAX_INPUT_CHARS` (text beyond it is ignored), :data:`MAX_CALL_CHARS` (a
  call written in prose is at most this long), :data:`MAX_CANDIDATES` (positions tried per
  scan, so that garbage costs linear time).
* :data:`MAX_NATIVE_CHARS`: native tool calls larger than this (:func:`json_size`) are
  rejected, as text beyond :data:`MAX_INPUT_CHARS` is ignored.
* :data:`MAX_ARGUMENT_DEPTH`: arguments nested deeper than this are rejected. It is the one
  nesting rule on call arguments (JSON text itself is read by the one bounded reader,
  :mod:`callscope.core.jsonl`, whose limit :data:`~callscope.core.jsonl.MAX_JSON_DEPTH` bounds
  every document; this rule is tighter, on the values a call carries): the SAAG cascade (:mod:`callscope.saag.cascade`) and the BFCL
  executor (:mod:`callscope.benchmarks.bfcl.env`) use it too, so a call the parser accepts is
  never refused for depth further on.
* JSON data: arguments are JSON data, i.e. ``None``, ``bool``, ``int``, finite ``float``,
  ``str``, lists and objects with string keys. :func:`check_depth` checks decoded JSON,
  :func:`json_like` converts a Python literal (tuples become lists, anything else non-JSON is
  rejected). An integer that Python cannot write as decimal text (over
  ``sys.get_int_max_str_digits()`` digits: a 5,000-digit ``0o``/``0x``/``0b`` literal reads
  fine but no request, store or report could carry it) is rejected here, where parsed values
  enter, as JSON text and decimal literals already are by their readers: one rule, so a
  parsed call is always a value every later step can write.
* :func:`balanced_end` / :func:`bracket_group`: the end of a bracket group, quotes respected
  (and, when it does not close, why).

Every rejection is a :class:`Rejected` (a ``ValueError`` subclass). ``parse_text`` and
``parse_output`` turn it into a :class:`~callscope.types.ParseResult` error; the lower-level
readers the package exports (``parse_python_calls``, ``read_call``, ``read_python_calls``,
``parse_expression``, ``read_functioncall``) raise it.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from callscope.core.jsonl import loads_bounded, raw_decode_bounded

MAX_INPUT_CHARS = 200_000
#: arguments nested deeper than this are rejected (no real tool takes them, and metrics
#: recurse over values); a value directly under ``arguments`` is at depth 1
MAX_ARGUMENT_DEPTH = 32
#: at most this many candidate positions are tried per scan, so garbage (long repetition
#: loops are common in small models) costs linear time
MAX_CANDIDATES = 64
#: a call written in prose is at most this long (bounds the bracket matching)
MAX_CALL_CHARS = 20_000
#: native tool calls (a backend's ``tool_calls``: names plus arguments, as JSON text or as
#: decoded objects) are at most this large, measured by :func:`json_size`; the same bound as
#: text, so that no reply costs more downstream than the longest text the parser reads
MAX_NATIVE_CHARS = MAX_INPUT_CHARS


class Rejected(ValueError):
    """A candidate looked like a call but is not acceptable (reason in the message).

    Internal to :mod:`callscope.parse` and its direct users; catch ``ValueError``."""


def _reject_constant(name: str) -> Any:
    raise Rejected(f"non-finite number {name} in JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different (after unescaping: ``"city"`` and
    ``"\\u0063ity"`` are one key), else :class:`Rejected`: readers disagree on which of two
    values a duplicate key means (Python keeps the last, others the first), so such JSON is
    ambiguous and is not a call's arguments (issue 47 point 5)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise Rejected(f"duplicate key {duplicate[:80]!r} in JSON (ambiguous)")
    return value


#: the parser's JSON decoder: the standard one, refusing ``NaN`` / ``Infinity`` and an object
#: with a key twice
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys)


def json_loads(text: str) -> Any:
    """``json.loads`` that rejects ``NaN``/``Infinity`` (not JSON, and not finite): the one
    reader of outside JSON (:func:`callscope.core.jsonl.loads_bounded`) with this module's
    decoder, so deep nesting is a ``ValueError``, never a ``RecursionError``."""
    return loads_bounded(text, decoder=_DECODER)


def json_raw_decode(text: str, start: int) -> tuple[Any, int]:
    """``JSONDecoder.raw_decode`` from ``start`` (trailing text allowed), rejecting
    ``NaN``/``Infinity``: :func:`callscope.core.jsonl.raw_decode_bounded` with this module's
    decoder (the same value, end and errors as ``raw_decode``; nesting over
    :data:`~callscope.core.jsonl.MAX_JSON_DEPTH` a ``ValueError``)."""
    return raw_decode_bounded(text, start, decoder=_DECODER)


#: value types that need no depth or finiteness check (exact types: a subclass goes the long way)
_FLAT = frozenset({str, int, bool, type(None)})


def check_depth(value: Any) -> None:
    """Reject containers nested deeper than ``MAX_ARGUMENT_DEPTH`` and non-finite numbers
    (iteratively: no recursion, so any input is safe)."""
    if type(value) is dict and _FLAT.issuperset(map(type, value.values())):
        return  # the common case: an object of strings, ints, bools and nulls only
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            raise Rejected(f"arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels")
        if isinstance(v, float) and not math.isfinite(v):
            raise Rejected("non-finite number in arguments")
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)


def json_size(value: Any, limit: int) -> int:
    """About how many characters ``value`` takes as compact JSON text (strings and keys by
    length plus quotes, numbers by digit count, one separator per item), counted
    iteratively and stopping as soon as the count exceeds ``limit`` (so a huge value costs
    at most ``limit`` steps; the result is then some number above ``limit``)."""
    total = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v) + 3  # quotes and a separator
        elif isinstance(v, bool) or v is None:
            total += 5
        elif isinstance(v, int):  # digits from the bit length: no str() of a huge int
            total += v.bit_length() * 3 // 10 + 2
        elif isinstance(v, float):
            total += 25
        elif isinstance(v, dict):
            total += 2
            for k, x in v.items():
                stack.append(k)
                stack.append(x)
                if total + len(stack) > limit:
                    break
        elif isinstance(v, list | tuple):
            total += 2
            for x in v:
                stack.append(x)
                if total + len(stack) > limit:
                    break
        else:
            total += 25
        if total > limit or total + len(stack) > limit:
            return max(total, limit + 1)
    return total


#: an int of at most this many bits always has few enough decimal digits to be written
_SAFE_INT_BITS = 4000


def check_int(value: int) -> int:
    """``value`` when it can be written as decimal text, else :class:`Rejected` (over
    Python's int/str digit limit; only ints of more than 4,000 bits are converted to check).

    >>> check_int(0x10)
    16
    >>> check_int(int("7" * 5000, 8))
    Traceback (most recent call last):
    ...
    callscope.parse.literals.Rejected: integer literal too long (more than 4300 digits)
    """
    if value.bit_length() > _SAFE_INT_BITS:
        try:
            str(value)
        except ValueError:
            limit = sys.get_int_max_str_digits()
            raise Rejected(f"integer literal too long (more than {limit} digits)") from None
    return value


def json_like(value: Any, depth: int = 0) -> Any:
    """A Python literal as JSON data: tuples become lists; sets, bytes, complex numbers,
    ``...``, non-string keys and integers over the digit limit (:func:`check_int`) are
    rejected."""
    if depth > MAX_ARGUMENT_DEPTH:
        raise Rejected(f"arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels")
    if isinstance(value, int) and not isinstance(value, bool):
        return check_int(value)
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Rejected("non-finite number in arguments")
        return value
    if isinstance(value, list | tuple):
        return [json_like(v, depth + 1) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise Rejected("argument object keys must be strings")
        return {k: json_like(v, depth + 1) for k, v in value.items()}
    raise Rejected(f"argument of type {type(value).__name__} is not JSON data")


def balanced_end(text: str, start: int) -> int:
    """Index after the bracket group that starts at ``text[start]`` (quotes respected), or
    -1 when it does not close within ``MAX_CALL_CHARS`` (:func:`bracket_group` says why)."""
    return bracket_group(text, start)[0]


def bracket_group(text: str, start: int) -> tuple[int, str]:
    """The bracket group that starts at ``text[start]`` (quotes respected): ``(end, "closed")``
    with the index after it, else ``(-1, why)``: ``"unclosed"`` (the text ends first: cut
    off), ``"mismatched"`` (a closing bracket of another kind) or ``"too long"`` (not closed
    within ``MAX_CALL_CHARS``). One pass over at most ``MAX_CALL_CHARS`` characters.

    >>> bracket_group("f(a=[1, ')'])", 1), bracket_group("f(a=1", 1), bracket_group("f(a]", 1)
    ((13, 'closed'), (-1, 'unclosed'), (-1, 'mismatched'))
    """
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
                return -1, "mismatched"
            if not stack:
                return i + 1, "closed"
        i += 1
    return -1, "unclosed" if stop == len(text) else "too long"


#: a Markdown code fence (the parser's fenced blocks, and a fence around a whole answer)
FENCE_MARK = "```"
#: a fence's opening line after the backticks: blanks, a language tag, blanks, a newline;
#: possessive, so each character is read once
FENCE_HEAD = re.compile(r"[ \t]*+([A-Za-z0-9_+-]*+)[ \t]*+\n?")
