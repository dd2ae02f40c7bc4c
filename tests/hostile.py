"""A deterministic generator of hostile model outputs (issue 15), shared by the property test
(``tests/test_hostile.py``, a sample) and the full count (``benchmarks/hostile.py``).

Each output is what a real model or a real file can produce and a parser must survive:
backtracking bait (fences, ``<tool_call>`` tags and call starts followed by long blank
runs), deep nesting, huge integers, lone surrogates, code-execution payloads that write a
marker file if anything ever evaluates them, huge native arguments, and random mixes of
call syntax. ``hostile_outputs(n, seed, marker)`` yields ``n`` of them, text or native
(``{"tool_calls": [...]}``), cycling over the families so every family is covered in any
sample of a few dozen.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: the registry every hostile output is scored against
FUNCTIONS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    }
]
QUERY = "What is the weather in Oslo for 3 days?"

_BLANKS = (" ", "\t", "\n", " \n", "\u3000")
_PIECES = (
    "```",
    "```json\n",
    "<tool_call>",
    "</tool_call>",
    "<functioncall>",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "'",
    '"',
    "\\",
    "get_weather(",
    'city="Oslo"',
    '"name": "get_weather"',
    '"arguments": ',
    '\'{"city": "Oslo"}\'',
    ",",
    ":",
    "=",
    "0x",
    "1e309",
    "NaN",
    "\ud800",
    "\udfff",
    "\x00",
)


def random_words(seed: int, chars: int) -> str:
    """``chars`` characters of random eight-letter words (the same for a seed): a long text
    that states none of another seed's words (the long-value tests of issue 49)."""
    rng = random.Random(seed)
    return " ".join("".join(rng.choices("abcdefghij", k=8)) for _ in range(chars // 9 + 1))[:chars]


def _payloads(marker: Path) -> list[str]:
    """Code that creates ``marker`` if anything evaluates it."""
    m = str(marker)
    return [
        f"__import__('os').system('touch {m}')",
        f"open('{m}', 'w').write('x')",
        f"__import__('pathlib').Path('{m}').touch()",
        f"(lambda: __import__('pathlib').Path('{m}').touch())()",
        f"exec(\"__import__('pathlib').Path('{m}').touch()\")",
    ]


def _backtracking(rng: random.Random, _marker: Path) -> str:
    n = rng.choice((400, 3_200, 16_000, 60_000))
    blank = rng.choice(_BLANKS)
    head = rng.choice(
        ("```", "```json", "<tool_call>x", "x", "[", "get_weather", "'", '"arguments": ')
    )
    tail = rng.choice(("a", "y", "x(", "```", "}", ""))
    return head + blank * n + tail


def _deep(rng: random.Random, _marker: Path) -> str:
    depth = rng.choice((40, 1_000, 50_000))
    opener, closer = rng.choice((("[", "]"), ('{"a": ', "}"), ("(", ")")))
    inner = opener * depth + "1" + closer * rng.choice((0, depth))
    return rng.choice(
        (
            inner,
            f"get_weather(city={inner})",
            '{"name": "get_weather", "arguments": ' + inner + "}",
            f"<tool_call>{inner}</tool_call>",
        )
    )


def _huge_int(rng: random.Random, _marker: Path) -> str:
    digits = rng.choice((4_000, 5_000, 20_000))
    hexa = "0x" + "f" * digits
    dec = "9" * digits
    return rng.choice(
        (
            f"get_weather(city='x', days={hexa})",
            f"[get_weather(city='x', days={dec})]",
            '{"name": "get_weather", "arguments": {"city": "x", "days": ' + dec + "}}",
            f"get_weather(city='x', days={hexa}j)",
            f"get_weather(city='x', days={'9' * 10}e{'9' * 8})",
        )
    )


def _surrogate(rng: random.Random, _marker: Path) -> str:
    s = rng.choice(("\ud800", "\udfff", "\udc80x", "a\ud83d"))
    return rng.choice(
        (
            f"get_weather(city='{s}')",
            '{"name": "get_weather", "arguments": {"city": "' + s + '"}}',
            '{"name": "get_weather", "arguments": {"ci' + s + 'ty": "Oslo"}}',
            f'<tool_call>{{"name": "get{s}", "arguments": {{}}}}</tool_call>',
            f"text {s} only",
        )
    )


def _execution(rng: random.Random, marker: Path) -> str:
    p = rng.choice(_payloads(marker))
    return rng.choice(
        (
            p,
            f"get_weather(city={p})",
            f"[get_weather(city='x'), {p}]",
            f"```python\n{p}\n```",
            f"<tool_call>{p}</tool_call>",
            '{"name": "get_weather", "arguments": "' + p.replace('"', '\\"') + '"}',
            f'<functioncall> {{"name": "get_weather", "arguments": \'{p}\'}}',
            f"get_weather(**{{'city': {p}}})",
            f"get_weather(city=f'{{{p}}}')",
        )
    )


def _native(rng: random.Random, marker: Path) -> Any:
    kind = rng.randrange(6)
    if kind == 0:
        args: Any = {"city": [0] * rng.choice((10_000, 1_000_000))}
    elif kind == 1:
        args = {"city": "x" * rng.choice((100_000, 10_000_000))}
    elif kind == 2:
        args = json.dumps({"city": [0] * 99_000})
    elif kind == 3:
        args = '{"city": ' + "[" * 100_000 + "]" * 100_000 + "}"
    elif kind == 4:
        args = {"city": _payloads(marker)[0], "days": 10**5000}
    else:
        args = {"ci\ud800ty": "Oslo", "days\n": 3}
    return {
        "tool_calls": [
            {"name": rng.choice(("get_weather", "get\ud800", "x" * 50_000)), "arguments": args}
        ]
    }


def _mix(rng: random.Random, marker: Path) -> str:
    parts = [rng.choice(_PIECES) for _ in range(rng.randrange(1, 40))]
    if rng.random() < 0.2:
        parts.append(rng.choice(_payloads(marker)))
    if rng.random() < 0.3:
        parts.append(rng.choice(_BLANKS) * rng.randrange(1, 5_000))
    return "".join(parts) * rng.choice((1, 1, 1, 50))


#: family name -> generator of one output from a seeded ``random.Random``
FAMILIES: dict[str, Callable[[random.Random, Path], Any]] = {
    "backtracking": _backtracking,
    "deep": _deep,
    "huge_int": _huge_int,
    "surrogate": _surrogate,
    "execution": _execution,
    "native": _native,
    "mix": _mix,
}


def hostile_outputs(n: int, seed: int, marker: Path) -> Iterator[tuple[str, Any]]:
    """``(family, output)`` for ``n`` hostile outputs, the families in turn; the same
    ``(n, seed)`` always yields the same outputs."""
    rng = random.Random(seed)
    names = list(FAMILIES)
    for i in range(n):
        family = names[i % len(names)]
        yield family, FAMILIES[family](rng, marker)
