"""The guard's ASK verdict (issue 46): a required value the user did not state is asked for.

A tool whose required parameter offers a closed set of choices (``unit``: "celsius or
fahrenheit", or an ``enum``) cannot be called for "What's the weather in Paris?" without a
guess: the user named no unit. Inventing one is a hard drift and leaving it out a missing
argument, and each of the paper's corrections (SAAG Table 4: "do not invent values ... or
omit the argument"; "include all parameters") sends the agent to the other: a dead end. The
right action is the calibration paper's ASK (ask the user for the missing value).

:func:`with_ask` is the one rule, applied by the guard (:func:`callscope.guard.check.check`,
so by every integration, the proxy and ``guard_repair`` alike) to the cascade's verdict on a
live call; the cascade itself, and with it every stored and benchmark verdict, is unchanged.
A required parameter without a schema ``default`` is *unstated* when its schema offers a
closed set of choices (:func:`callscope.saag.normalise.descriptions.described_options`) and
the user's text (the query and the context: earlier user messages, tool results) names none
of them; the call then fails with :attr:`~callscope.records.FailureKind.ASK` for it when it
left the parameter out (instead of ``missing``) or gave it a value stage 3 did not ground
(instead of ``hard``, ``numeric`` or ``soft``). ASK is a stage-2 kind (the call cannot be
completed from the request, like a missing argument): a stage-3 verdict with an ASK becomes
a stage-2 one, its stage-3 lists and metrics cleared (the stage is not reached). Its
correction is :data:`callscope.saag.messages.ASK`, the one message every integration sends:
ask the user, do not guess, do not leave it out. An open parameter (a city, a date) is not
judged here: a value the request does not ground stays ``hard``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from callscope.records import Diagnosis
from callscope.saag.cascade import find_spec, schema_params, spec_properties
from callscope.saag.normalise.descriptions import described_options
from callscope.types import ToolCall

#: the user's text read for stated choices (its first characters, query first)
MAX_EVIDENCE_CHARS = 200_000
_WORD = re.compile(r"\w++")


def _words(text: str) -> str:
    return " " + " ".join(_WORD.findall(text.lower())) + " "


def unstated_required(
    call: ToolCall, spec: dict[str, Any], query: str, context: Sequence[str] = ()
) -> list[str]:
    """The required parameters of ``spec`` (no ``default``) whose schema offers a closed set
    of choices none of which the user's text (``query`` and ``context``) names, in schema
    order (module docstring). ``call`` is not read: whether it gave a value does not change
    what the user stated.

    >>> spec = {"name": "w", "parameters": {"type": "object", "required": ["city", "unit"],
    ...     "properties": {"city": {"type": "string"},
    ...                    "unit": {"type": "string", "description": "celsius or fahrenheit"}}}}
    >>> unstated_required(ToolCall("w", {"city": "Paris"}), spec, "Weather in Paris?")
    ['unit']
    >>> unstated_required(ToolCall("w", {}), spec, "Weather in Paris, in Celsius?")
    []
    """
    required = schema_params(spec)[0]  # (each name once: the one reading of ``required``)
    if not required:
        return []
    props = spec_properties(spec)
    words: frozenset[str] | None = None
    text = ""
    out: list[str] = []
    for p in required:
        schema = props.get(p)
        if not isinstance(schema, dict) or "default" in schema:
            continue
        options = described_options(schema)
        if not options:
            continue
        if words is None:
            text = _words("\n".join([query, *context])[:MAX_EVIDENCE_CHARS])
            words = frozenset(text.split())  # one pass over the text, however many options
        if not any(_named(o, text, words) for o in options):
            out.append(p)
    return out


def _named(option: str, text: str, words: frozenset[str]) -> bool:
    """The user's ``text`` (:func:`_words`) names ``option``: a one-word option is looked up
    in the text's ``words``; a longer one is searched for only when each of its words is
    one of them."""
    if not option.strip():
        return False
    phrase = _words(option)
    tokens = phrase.split()
    if len(tokens) == 1:
        return tokens[0] in words
    if not tokens:  # (no word at all: "  " is in a text of no words only)
        return not words
    return all(t in words for t in tokens) and phrase in text


def with_ask(
    d: Diagnosis,
    call: ToolCall | None,
    functions: Sequence[dict[str, Any]],
    query: str,
    context: Sequence[str] = (),
) -> Diagnosis:
    """``d`` with the ASK rule applied (module docstring): each unstated required parameter
    the call left out or gave an ungrounded value moves to ``ask``; a stage-3 verdict with
    an ASK becomes stage 2. ``d`` itself when nothing moves (a pass, a stage-1 failure, a
    call whose failures are all about stated or open parameters).

    >>> spec = {"name": "w", "parameters": {"type": "object", "required": ["unit"],
    ...     "properties": {"unit": {"type": "string", "description": "celsius or fahrenheit"}}}}
    >>> d = Diagnosis(stage=3, fnem=1, hard=["unit"], avem=0.0)
    >>> a = with_ask(d, ToolCall("w", {"unit": "celsius"}), [spec], "Weather in Paris?")
    >>> a.stage, a.ask, a.hard, a.avem
    (2, ['unit'], [], None)
    """
    if d.stage not in (2, 3) or call is None:
        return d
    flagged = set(d.missing) if d.stage == 2 else {*d.numeric, *d.hard, *d.soft}
    if not flagged:
        return d
    spec = find_spec(functions, call.name)
    if spec is None:
        return d
    asked = [p for p in unstated_required(call, spec, query, context) if p in flagged]
    if not asked:
        return d
    if d.stage == 2:
        return replace(d, missing=[p for p in d.missing if p not in asked], ask=asked)
    return replace(
        d,
        stage=2,
        ask=asked,
        numeric=[],
        hard=[],
        soft=[],
        avem=None,
        qslo=None,
        vhr=None,
        grounded={},
        evidence={},
    )
