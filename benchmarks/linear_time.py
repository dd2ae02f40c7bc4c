"""A detector of scans that are not linear: each probe's CPU time at ``n`` and at ``4 n``
characters of a hostile shape, and their ratio (about 4 for a linear scan, 16 for a
quadratic one).

The probes are what a peer controls: an argument value, the request, both (the value a
tenth of the request, and equal to it), a parameter's description (alone and with the
request), an enum of many members, a default, a number argument beside a long request (the
request's numbers are read), the parser on model text, the action classifier, and the guard
(``guard.check`` of a call against a long conversation and of a long answer text, and a
repair with its correction and re-check). The shapes
are runs of what the rules look for: letters, digits and their separators, number words,
dates, times, units, percentages, places, codes, commas, ``key:value`` pairs, templates,
URLs, distinct words, accents, brackets, quotes, the call syntaxes. The verdict cache is off
and each request is new, so every probe is a first reading.

A line ends with ``<<<`` where the time at ``4 n`` is over 50 ms and the ratio over 7, or
the time over 1 s: worth a look at larger sizes (``--n``). Found with it: text2num's reading
of number words (``number_beside_query`` / ``which_one``: ratio 9.5, 181 ms at 80,000
characters; 3.7 and 38 ms since ``saag.normalise.numbers.TEXT2NUM_PIECE``).

    python benchmarks/linear_time.py [--n 20000] [--probes query_long,parse]
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Callable
from typing import Any

from callscope.calibration.classify import CLASSIFIER_PRESETS, classify_emission
from callscope.guard.check import check
from callscope.guard.repair import repair
from callscope.parse import parse_output
from callscope.saag import cascade
from callscope.types import ToolCall

Shape = Callable[[int], str]

#: hostile texts of about ``n`` characters
SHAPES: dict[str, Shape] = {
    "a": lambda n: "a" * n,
    "ab": lambda n: "ab" * (n // 2),
    "a_space": lambda n: "a " * (n // 2),
    "digits": lambda n: "1" * n,
    "digits_space": lambda n: "1 " * (n // 2),
    "digits_comma": lambda n: "1," * (n // 2),
    "digits_dot": lambda n: "1." * (n // 2),
    "number_words": lambda n: "twenty five " * (n // 12),
    "which_one": lambda n: "which one? " * (n // 11),
    "dates": lambda n: "2024-01-01 " * (n // 11),
    "dates_words": lambda n: "January 1, 2024 " * (n // 16),
    "times": lambda n: "3pm 11:30 " * (n // 10),
    "units": lambda n: "3 km " * (n // 5),
    "percent": lambda n: "40% 1/2 " * (n // 8),
    "places": lambda n: "San Francisco " * (n // 14),
    "codes": lambda n: "CAD USD LAX " * (n // 12),
    "commas": lambda n: ", " * (n // 2),
    "key_value": lambda n: "key:value " * (n // 10),
    "braces": lambda n: "{x}" * (n // 3),
    "url": lambda n: "http://a/" * (n // 9),
    "words": lambda n: " ".join(f"w{i}" for i in range(n // 6)),
    "camel": lambda n: "fooBar" * (n // 6),
    "accent": lambda n: "e\u0301" * (n // 2),
    "brackets": lambda n: "([" * (n // 2),
    "quotes": lambda n: "\"'" * (n // 2),
    "backslash": lambda n: "\\" * n,
    "hyphen": lambda n: "a-" * (n // 2),
    "dollars": lambda n: "$1 " * (n // 3),
    "described": lambda n: "1 for Bangkok, " * (n // 15),
    "user_lines": lambda n: "user\n" * (n // 5),
    "think": lambda n: "<think>" * (n // 7),
    "tool_call": lambda n: "<tool_call>" * (n // 11),
    "fence": lambda n: "```json\n" * (n // 8),
    "python_call": lambda n: "[f(a=1)," * (n // 8),
    "json_name": lambda n: '{"name":' * (n // 8),
}


def _functions(
    desc: str = "The city, e.g. 'City, State'", enum: list[str] | None = None, default: Any = None
) -> list[dict[str, Any]]:
    x: dict[str, Any] = {"type": "string", "description": desc}
    if enum:
        x["enum"] = enum
    if default is not None:
        x["default"] = default
    y = {"type": "integer", "description": "count"}
    params = {"type": "object", "properties": {"x": x, "y": y}, "required": ["x"]}
    return [{"name": "f", "description": "d", "parameters": params}]


_fresh = itertools.count()


def _cpu(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    """The CPU seconds of ``fn(*args, **kwargs)``."""
    t0 = time.process_time()
    fn(*args, **kwargs)
    return time.process_time() - t0


def _diagnose(value: Any, query: str, functions: list[dict[str, Any]], args: Any = None) -> float:
    call = ToolCall("f", args if args is not None else {"x": value})
    query += f" #{next(_fresh)}"  # a request never seen
    return _cpu(cascade.diagnose, call, functions, query)


def _classify(text: str) -> None:
    for preset in ("default", "paper"):
        classify_emission(text, CLASSIFIER_PRESETS[preset])


def _in_a_call(text: str) -> str:
    return json.dumps([{"name": "f", "arguments": {"x": text}}])


#: a registry for the guard's probes: a description with an example, a format and a default
_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "book",
            "description": "Book. Example: 1 for Bangkok. Format 'City, State'. Defaults to 2.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "e.g. 'Berkeley, CA'"},
                    "n": {"type": "integer", "default": 2},
                    "when": {"type": "string", "description": "date YYYY-MM-DD"},
                },
                "required": ["city", "when"],
            },
        },
    }
]


def _answer(text: str | None = None) -> dict[str, Any]:
    """An answer whose call reaches stage 3 and fails it (nothing of it is in the probes)."""
    arguments = json.dumps({"city": "Lyon, FR", "n": 5, "when": "2024-03-05"})
    call = {"id": "c", "function": {"name": "book", "arguments": arguments}}
    return {"role": "assistant", "content": text, "tool_calls": [call]}


def _guard(text: str) -> float:
    """``guard.check`` of a call against a conversation of ``text``, an answer, and ``text``
    again as the last user turn's context."""
    text += f" #{next(_fresh)}"
    messages = [
        {"role": "user", "content": text},
        {"role": "assistant", "content": text[: len(text) // 2]},
        {"role": "user", "content": "book it"},
    ]
    return _cpu(check, _answer(), _TOOLS, messages)


def _guard_text(text: str) -> float:
    """``guard.check`` of an answer whose text is ``text`` (its calls are read from it)."""
    answer = {"role": "assistant", "content": text + f" #{next(_fresh)}"}
    return _cpu(check, answer, _TOOLS, [{"role": "user", "content": "book Lyon"}])


def _repair(text: str) -> float:
    """One repair (check, correction, one re-ask answered alike, check) of that call."""
    messages = [{"role": "user", "content": text + f" #{next(_fresh)}"}]
    return _cpu(repair, lambda _convo, _tools: _answer(), messages, _TOOLS, k=1)


#: probe name -> (shape, n) -> CPU seconds
PROBES: dict[str, Callable[[Shape, int], float]] = {
    "value_long": lambda s, n: _diagnose(s(n), "Weather in Paris please", _functions()),
    "query_long": lambda s, n: _diagnose("Paris", s(n), _functions()),
    "both_long": lambda s, n: _diagnose(s(n // 10), s(n), _functions()),
    "both_equal": lambda s, n: _diagnose(s(n), s(n), _functions()),
    "description_long": lambda s, n: _diagnose(s(200), s(2000), _functions(desc=s(n))),
    "description_query_long": lambda s, n: _diagnose(s(200), s(n), _functions(desc=s(n))),
    "enum_long": lambda s, n: _diagnose(
        s(50), s(2000), _functions(enum=[s(50) + str(i) for i in range(n // 50)])
    ),
    "default_long": lambda s, n: _diagnose(s(n // 10), s(n), _functions(default=s(n // 10))),
    "number_beside_query": lambda s, n: _diagnose(None, s(n), _functions(), {"x": "a", "y": 123}),
    "parse": lambda s, n: _cpu(parse_output, s(n)),
    "parse_in_a_call": lambda s, n: _cpu(parse_output, _in_a_call(s(n))),
    "classify": lambda s, n: _cpu(_classify, s(n)),
    "guard_conversation": lambda s, n: _guard(s(n)),
    "guard_answer_text": lambda s, n: _guard_text(s(n)),
    "guard_repair": lambda s, n: _repair(s(n)),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--probes", default="", help="comma-separated names (default: all)")
    args = ap.parse_args()
    cascade.VERDICT_CACHE_SIZE = 0
    names = [p for p in args.probes.split(",") if p] or list(PROBES)
    flagged = []
    print(f"{'probe':24s} {'shape':14s} {'n':>10s} {'4 n':>10s} {'ratio':>6s}")
    for name in names:
        probe = PROBES[name]
        for shape_name, shape in SHAPES.items():
            probe(shape, 2000)  # the tables a shape needs, loaded
            t1, t4 = probe(shape, args.n), probe(shape, 4 * args.n)
            ratio = t4 / max(t1, 1e-4)
            mark = " <<<" if (t4 > 0.05 and ratio > 7) or t4 > 1.0 else ""
            if mark:
                flagged.append(f"{name} / {shape_name}")
            print(
                f"{name:24s} {shape_name:14s} {t1 * 1e3:8.1f}ms {t4 * 1e3:8.1f}ms "
                f"{ratio:6.1f}{mark}",
                flush=True,
            )
    print("flagged:", ", ".join(flagged) or "none")


if __name__ == "__main__":
    main()
