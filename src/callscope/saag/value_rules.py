"""The registry grounding mode's value rules (:class:`callscope.saag.groundings.RegistryGrounding`),
pure functions over a value, the request's words and numbers and the schema: enum membership up to
form, a number stated by the request or claimed by another argument, numbers the request writes
in words before a parameter's name, and the scalar leaves of a value with their schemas."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from callscope.core.memo import text_cache
from callscope.core.text import occurrences
from callscope.saag import grounding as g
from callscope.saag import normalise as n


def numbers_claimed(arguments: Mapping[str, Any], skip: str) -> list[int | float]:
    out: list[int | float] = []
    for p, v in arguments.items():
        if p != skip and g.is_number(v):
            out.append(v)
    return out


def number_stated(value: int | float, numbers: Iterable[int | float]) -> bool:
    if isinstance(numbers, g.NumberIndex):
        return numbers.contains(value)
    return any(g.numbers_equal(value, x) for x in numbers)


#: :func:`counted_numbers` reads at most this many request words, and this many occurrences of the
#: parameter's name words (a bounded number of number-word reads per value)
MAX_COUNTED_WORDS = 4000
MAX_COUNTED_HITS = 16
_NAME_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
#: words of parameter names that name no thing ("number_of_adults" counts adults)
_NAME_STOP = frozenset(
    {"num", "number", "the", "and", "for", "per", "count", "total", "max", "min"}
)


def counted_numbers(param: str, words: str) -> tuple[int | float, ...]:
    """The numbers the request writes in words just before a word of ``param``'s name
    ("four adults" for ``number_of_adults``, "three hotel rooms" for ``number_of_rooms``):
    up to three words before each occurrence, read by
    :func:`~callscope.saag.normalise.number_evidence`."""
    names = {n.stem(w.lower()) for w in _NAME_PARTS.findall(param[:64]) if len(w) >= 3}
    names -= _NAME_STOP
    if not names:
        return ()
    tokens = words.split()[:MAX_COUNTED_WORDS]
    out: list[int | float] = []
    hits = 0
    for i, w in enumerate(tokens):
        if i and n.stem(w) in names:
            out += n.number_evidence(" ".join(tokens[max(0, i - 3) : i]))
            hits += 1
            if hits == MAX_COUNTED_HITS:
                break
    return tuple(out)


def enum_member(value: Any, enum: Iterable[Any]) -> bool:
    """``value`` is a member of ``enum`` up to form (case and punctuation of a string, a
    number written as a string): what the registry mode reads as "in the enum". A string is
    looked up in the enum's index (:func:`_enum_strings`), not compared member by member."""
    if type(value) is str and isinstance(enum, tuple | list):
        try:
            words, others = _enum_strings(tuple(enum))
        except TypeError:  # an unhashable member (a list or an object in the enum)
            return any(equal_values(value, m) for m in enum)
        return n.norm_words(value) in words or any(value == m for m in others)
    return any(equal_values(value, m) for m in enum)


@text_cache(4096)
def _enum_strings(enum: tuple[Any, ...]) -> tuple[frozenset[str], tuple[Any, ...]]:
    """What a string can equal in ``enum`` (:func:`equal_values`): the word forms of its
    string members, and its members that are neither strings nor numbers (compared with
    ``==``; a string never equals a number there). Once per distinct enum."""
    words = frozenset(n.norm_words(m) for m in enum if isinstance(m, str))
    others = tuple(m for m in enum if not isinstance(m, str) and not g.is_number(m))
    return words, others


def outside_enum(value: Any, schema: dict[str, Any] | None) -> tuple[Any, ...]:
    """The parameter's enum when its ``schema`` has one and the scalar ``value`` is not a
    member of it (:func:`enum_member`), else ``()``: the registry itself rules the value out,
    which the guard's reason and the audit's false-alarm reason name instead of "no
    grounding" (issue 45).

    >>> outside_enum("kelvin", {"type": "string", "enum": ["celsius", "fahrenheit"]})
    ('celsius', 'fahrenheit')
    >>> outside_enum("Celsius", {"enum": ["celsius", "fahrenheit"]}), outside_enum("x", None)
    ((), ())
    """
    enum = n.schema_enum(schema)
    if enum and isinstance(value, str | int | float) and not enum_member(value, enum):
        return enum
    return ()


def named_in_word(value: Any, words: str) -> bool:
    """The request's words (:func:`~callscope.saag.normalise.norm_words`) hold the one-word
    string ``value`` (4 or more characters) as the start of a longer word it is at least half
    of: "postgres" in "postgresql", not "all" in "allocate". For enum members only: the enum
    rules out every other reading."""
    if not isinstance(value, str):
        return False
    v = n.norm_words(value).strip()
    if len(v) < 4 or " " in v:
        return False
    # the first ``(?<!\S)v(\S*)`` of ``words`` by string search: no pattern compiled per value
    # (each occurrence in turn, in linear time however often ``v`` occurs)
    i = next((j for j in occurrences(words, v) if j == 0 or words[j - 1].isspace()), -1)
    if i < 0:
        return False
    end = i + len(v)
    rest = words[end : end + len(v) + 1]  # the word's rest must be 1..len(v) characters
    if not rest or rest[0].isspace():
        return False
    return len(rest) <= len(v) or any(c.isspace() for c in rest)


def equal_values(a: Any, b: Any) -> bool:
    if g.is_number(a) and g.is_number(b):
        return g.numbers_equal(a, b)
    if isinstance(a, str) and isinstance(b, str):
        return n.norm_words(a) == n.norm_words(b)
    if g.is_number(a) and isinstance(b, str):
        num = n.parse_number_string(b)
        return num is not None and g.numbers_equal(a, num)
    return a == b


def schema_leaves(
    value: Any, schema: dict[str, Any] | None
) -> Iterable[tuple[Any, dict[str, Any] | None]]:
    """Scalar leaves of ``value`` with the schema that describes each (``items`` of arrays,
    with the array's description when the items have none; ``properties`` of objects),
    iteratively (no recursion limit)."""
    stack: list[tuple[Any, dict[str, Any] | None]] = [(value, schema)]
    while stack:
        v, s = stack.pop()
        if isinstance(v, list | tuple):
            items = s.get("items") if isinstance(s, dict) else None
            sub = items if isinstance(items, dict) else None
            if sub is not None and "description" not in sub and isinstance(s, dict):
                desc = s.get("description")  # the array's description tells its items
                if isinstance(desc, str):
                    sub = {**sub, "description": desc}
            stack.extend((x, sub) for x in reversed(v))
        elif isinstance(v, dict):
            props = s.get("properties") if isinstance(s, dict) else None
            props = props if isinstance(props, dict) else {}
            stack.extend((x, props.get(k)) for k, x in reversed(list(v.items())))
        else:
            yield v, s
