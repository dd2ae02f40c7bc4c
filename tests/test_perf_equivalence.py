"""Faster code paths give exactly the results of the slower ones they replace (issue 16):
randomized equality against the reference definitions, plus hand-worked cases."""

from __future__ import annotations

import random
import re
from typing import Any

from callscope.calibration.classify.emission import _py_call_start
from callscope.parse import parse_output
from callscope.parse.literals import Rejected, check_depth
from callscope.runs.conversation import _native_assistant_message
from callscope.saag import grounding as g
from callscope.types import ModelReply, ParseResult, ToolCall

#: the call-start pattern ``classify`` used before (quadratic on long names without "(")
_OLD_CALL_START = re.compile(r"\[?\s*[A-Za-z_][\w.]*\s*\(")


def _old_search(text: str, pos: int) -> tuple[int, int] | None:
    m = _OLD_CALL_START.search(text, pos)
    return None if m is None else (m.start(), m.end())


def test_call_start_scan_matches_the_old_regex_on_random_short_inputs() -> None:
    rng = random.Random(16)
    alphabet = "ab_Z9.( [\t\n\u00e9\u0663\u2003)x"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        pos = rng.randint(0, len(text))
        assert _py_call_start(text, pos) == _old_search(text, pos), (text, pos)


def test_call_start_scan_hand_cases() -> None:
    assert _py_call_start("say [ get_x (1)", 0) == (4, 13)  # "[ get_x (" from the bracket
    assert _py_call_start("9abc(", 0) == (1, 5)  # a name cannot start with a digit
    assert _py_call_start("f(", 1) is None  # the name lies before pos
    assert _py_call_start("a" * 50_000, 0) is None  # long word, no "(": one pass


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["str", "int", "float", "bool", "none"] + (["list", "dict"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "str":
        return rng.choice(["paris", "Par", "london", "", "new york", "zq", "5 km", "Paris"])
    if kind == "int":
        return rng.choice([5, 42, 7, -3, 1000])
    if kind == "float":
        return rng.choice([5.0, 2.5, 0.1])
    if kind == "bool":
        return rng.choice([True, False])
    if kind == "none":
        return None
    items = [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "list":
        return items if rng.random() < 0.8 else tuple(items)
    return {f"k{i}": v for i, v in enumerate(items)}


def test_grounding_of_equals_exact_match_hallucination_and_worst_leaf() -> None:
    rng = random.Random(7)
    queries = ["Weather in Paris for 5 days", "no digits here, london", "42 new york 2.5", ""]
    for _ in range(5_000):
        value, query = _random_value(rng), rng.choice(queries)
        expected = (
            g.exact_match(value, query),
            g.hallucination(value, query),
            g.worst_leaf(value, query),
        )
        matched, h, leaf = g.grounding_of(value, query)
        assert (matched, h) == expected[:2], (value, query)
        if h:  # worst_leaf is read only for a value that is not grounded
            assert leaf is expected[2] or leaf == expected[2], (value, query)


def test_grounding_of_hand_cases() -> None:
    q = "book 2 rooms in Paris"
    assert g.grounding_of(["Paris", 2], q) == (True, 0.0, "Paris")
    matched, h, leaf = g.grounding_of({"a": "Paris", "b": 7}, q)
    assert (matched, h, leaf) == (False, 1.0, 7)  # 7 is not stated and the query has a digit
    assert g.grounding_of([], q) == (False, None, None)
    assert g.grounding_of(True, q) == (False, None, True)


def test_check_depth_fast_path_keeps_every_rejection() -> None:
    check_depth({"a": "x", "b": 1, "c": None, "d": True})  # flat: accepted
    for bad in ({"a": float("inf")}, {"a": [float("nan")]}):
        try:
            check_depth(bad)
        except Rejected as exc:
            assert "non-finite" in str(exc)
        else:
            raise AssertionError(bad)
    deep: Any = 1
    for _ in range(40):
        deep = [deep]
    try:
        check_depth({"a": deep})
    except Rejected as exc:
        assert "deeper than" in str(exc)
    else:
        raise AssertionError("deep value accepted")


def test_parse_fast_path_gives_the_wrapper_forms_when_markers_are_present() -> None:
    call = '{"name": "f", "arguments": {"x": 1}}'
    assert parse_output(call).form == "json"
    assert parse_output(f"<tool_call>{call}</tool_call>").form == "tool_call_tag"
    assert parse_output(f"```json\n{call}\n```").form == "fenced"
    # a JSON string that holds a tag: the tag's call wins, as before
    inner = '{"name": "f", "arguments": {"x": "<tool_call>g(a=1)</tool_call>"}}'
    parsed = parse_output(inner)
    assert parsed.form == "tool_call_tag" and parsed.first.name == "g"


def test_native_assistant_message_survives_a_huge_integer() -> None:
    huge = 10**5000  # over Python's int/str digit limit: json.dumps raises
    parsed = ParseResult(calls=(ToolCall("f", {"n": huge, "s": "ok"}),), form="native")
    reply = ModelReply(text="", tool_calls=[{"id": "c1"}])
    message, ids = _native_assistant_message(reply, parsed, 0, 0)
    assert ids == ["c1"]
    arguments = message["tool_calls"][0]["function"]["arguments"]
    assert '"s": "ok"' in arguments and hex(huge)[:20] in arguments
