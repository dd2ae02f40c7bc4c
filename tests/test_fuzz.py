"""Fuzz tests: random and adversarial model output through the parser, the cascade and
score_row. Properties: no exception escapes, nothing in the output is ever executed, and
the diagnosis respects the spec's invariants (ranges, stage-conditional nulls)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callscope.parse import parse_output, parse_text
from callscope.records import Diagnosis
from callscope.saag.cascade import diagnose
from callscope.saag.messages import correction_message
from callscope.saag.score import score_row
from callscope.types import ToolCall

MARKER_DIR = Path(tempfile.mkdtemp(prefix="callscope-fuzz-"))
MARKER = MARKER_DIR / "executed"

CODE = [
    f"__import__('os').system('touch {MARKER}')",
    f"open('{MARKER}', 'w')",
    f"exec(\"open('{MARKER}','w')\")",
    f"eval(\"open('{MARKER}','w')\")",
    f"__import__('pathlib').Path('{MARKER}').touch()",
    "lambda: 1",
    "(x := 1)",
    "f'{x}'",
    "os.environ",
    "x.y.z",
    "[i for i in range(10)]",
    "__builtins__",
    "globals()",
]

FRAGMENTS = [
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    '"',
    "'",
    ":",
    ",",
    "=",
    " ",
    "\n",
    "\\",
    "\\u00e9",
    '"name"',
    '"arguments"',
    '"parameters"',
    '"function"',
    '"type"',
    '"f"',
    '"get_weather"',
    '"{\\"a\\": 1}"',
    "'{\"a\": 1}'",
    "1",
    "-3",
    ".5",
    "1e400",
    "-1e400",
    "NaN",
    "Infinity",
    "-Infinity",
    "true",
    "null",
    "None",
    "True",
    "<tool_call>",
    "</tool_call>",
    "<functioncall>",
    "<|endoftext|>",
    "```json\n",
    "```python\n",
    "```",
    "f(",
    "a=",
    "g.h(",
    "Harry's",
    "\u202e",
    "\U0001f600",
    "\x00",
    "\ud7ff",
    "9" * 50,
    *CODE,
]

names = st.sampled_from(["f", "get_weather", "calc", "a", "book_table", "x" * 40, "café", ""])
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
finite_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**15), max_value=10**15)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
)
finite_values = st.recursive(
    finite_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def registries(draw: st.DrawFn) -> list[dict[str, Any]]:
    fns = []
    for name in draw(st.lists(names | st.text(max_size=12), max_size=6)):
        props = draw(st.lists(st.text(max_size=10), max_size=4))
        req = draw(st.lists(st.sampled_from(props), max_size=len(props))) if props else []
        fns.append(
            {
                "name": name,
                "parameters": {
                    "type": "object",
                    "properties": {p: {"type": "string"} for p in props},
                    "required": req,
                },
            }
        )
    return fns


@st.composite
def calls(draw: st.DrawFn, registry: list[dict[str, Any]]) -> ToolCall | None:
    if draw(st.booleans()) and registry:
        spec = draw(st.sampled_from(registry))
        keys = list(spec["parameters"]["properties"])
        name = spec["name"]
        key = st.sampled_from(keys) | st.text(max_size=8) if keys else st.text(max_size=8)
        arg_names = draw(st.lists(key, max_size=5))
    else:
        name = draw(names | st.text(max_size=12))
        arg_names = draw(st.lists(st.text(max_size=8), max_size=5))
    if draw(st.integers(0, 9)) == 0:
        return None
    return ToolCall(name, {k: draw(json_values) for k in arg_names})


adversarial_text = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
any_text = (
    st.text(max_size=300)
    | adversarial_text
    | st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
)


def check_diagnosis(d: Diagnosis) -> None:
    assert d.stage in (0, 1, 2, 3)
    assert d.fnem in (-1, 0, 1)
    for key in ("ncs", "rpr", "pds", "spr", "avem", "qslo", "vhr"):
        v = getattr(d, key)
        assert v is None or (0.0 <= v <= 1.0 and not math.isnan(v)), (key, v)
    if d.fnem != 0:
        assert d.ncs is None
    if d.stage == 1:
        assert all(getattr(d, k) is None for k in ("rpr", "pds", "spr", "avem", "qslo", "vhr"))
    if d.stage == 2:
        assert all(getattr(d, k) is None for k in ("avem", "qslo", "vhr"))
    if d.stage in (0, 3):
        assert d.rpr == 1.0 and d.spr == 0.0 and not d.drifted
    msg = correction_message(d)
    assert (msg is None) == (d.stage == 0)
    assert msg is None or isinstance(msg, str) and msg


FUZZ = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(any_text)
def test_parse_text_never_raises(text: str) -> None:
    r = parse_output(text)
    assert (r.error is None) == bool(r.calls)
    for c in r.calls:
        assert isinstance(c.name, str) and c.name
        assert isinstance(c.arguments, dict)
    assert not MARKER.exists()


@FUZZ
@given(
    st.one_of(
        json_values,
        st.lists(json_values, max_size=3),
        st.dictionaries(
            st.sampled_from(
                ["name", "arguments", "parameters", "function", "tool_calls", "content"]
            ),
            json_values,
            max_size=4,
        ),
    )
)
def test_parse_output_never_raises_on_objects(obj: Any) -> None:
    r = parse_output(obj)
    assert (r.error is None) == bool(r.calls)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True),
    args=st.dictionaries(st.text(max_size=8), finite_values, max_size=4),
    wrap=st.sampled_from(["{}", "```json\n{}\n```", "<tool_call>{}</tool_call>", "ok: {} !"]),
)
def test_valid_json_calls_round_trip(name: str, args: dict, wrap: str) -> None:
    text = wrap.replace("{}", json.dumps({"name": name, "arguments": args}))
    r = parse_text(text)
    assert r.error is None
    assert r.first == ToolCall(name, args)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), registry=registries(), query=any_text)
def test_diagnose_never_raises(data: st.DataObject, registry: list, query: str) -> None:
    call = data.draw(calls(registry))
    check_diagnosis(diagnose(call, registry, query))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    registry=registries(),
    query=any_text,
    output=any_text | json_values,
    gold=st.none()
    | st.fixed_dictionaries(
        {"name": names, "arguments": st.dictionaries(st.text(max_size=5), json_values, max_size=3)}
    )
    | st.fixed_dictionaries(
        {
            "name": names,
            "acceptable": st.dictionaries(
                st.text(max_size=5), st.lists(json_values, max_size=3), max_size=3
            ),
        }
    ),
)
def test_score_row_never_raises(registry: list, query: str, output: Any, gold: Any) -> None:
    row = {"id": "r", "query": query, "functions": registry, "output": output}
    if gold is not None:
        row["gold"] = gold
    out = score_row(row)
    json.dumps(out)
    if "error" not in out:
        assert out["stage"] in (0, 1, 2, 3, None)
        assert (out["stage"] is None) <= (out["answer"] in ("abstained", "empty"))
        assert (out["fix"] is None) == (out["stage"] in (0, None))
    assert not MARKER.exists()


@FUZZ
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=20))
def test_garbage_is_never_executed(parts: list[str]) -> None:
    text = "".join(parts)
    for t in (text, f"f(a={text})", f"[f(a=1), {text}]", f"<tool_call>{text}</tool_call>"):
        score_row({"id": 1, "query": t, "functions": [{"name": "f"}], "output": t})
    assert not MARKER.exists()


# --------------------------------------------------------------------------- hand-made list


def adversarial(marker: Path) -> list[str]:
    code = [c.replace(str(MARKER), str(marker)) for c in CODE]
    out = [
        "[" * 3000,
        "{" * 3000,
        '{"a":' * 2000,
        "(" * 3000,
        "f(" * 1000,
        "[f(a=1)" * 500,
        "x" * 3000,
        '{"name": "f", "arguments": {"a": ' + "[" * 3000 + "}}",
        "f(a=" + "[" * 3000 + ")",
        '{"name": "f", "arguments": {"a": ' + "1" * 5000 + "}}",
        "f(a=" + "1" * 5000 + ")",
        '{"name": "f", "arguments": {"a": 1e400, "b": -1e400, "c": 1e-400}}',
        "f(a=1e400, b=-1e400)",
        '{"name": "f", "arguments": {"a": NaN}}',
        '{"name": "f", "arguments": {"a": Infinity}}',
        '{"name": "f", "arguments": "',
        '{"name": "f", "arguments": {"a": "unterminated',
        '```json\n{"name": "f"',
        "<tool_call>{",
        '<functioncall> {"name": "f", "arguments": \'{"a": 1',
        "<functioncall>" * 200,
        '\u202e{"name": "f"}\u202c \U0001f600 \x00 \ufeff',
        '{"name": "\\ud800", "arguments": {"\\udfff": "\\u0000"}}',
        "f(a='\\x00\\ud800')",
        "```" * 300,
        "f(a=1, a=2)",
        "f(*args)",
        "f(**kw)",
        "f(a=b'x')",
        "f(a={1, 2})",
        "f(a=1j)",
        "f(a=...)",
        "async def f(): pass",
        "import os; os.system('true')",
        "@decorator\ndef f(): pass",
    ]
    for c in code:
        out += [c, f"f(a={c})", f"[f(a={c})]", f"```python\n{c}\n```", f"x = {c}"]
    return out


def test_adversarial_list_through_the_whole_pipeline(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    reg = [
        {"name": "f", "parameters": {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}}},
        {"name": "g", "parameters": {"type": "object", "properties": {}}},
    ]
    for text in adversarial(marker):
        r = parse_output(text)
        assert (r.error is None) == bool(r.calls)
        out = score_row({"id": 1, "query": text[:500], "functions": reg, "output": text})
        assert "error" not in out
        assert out["stage"] in (0, 1, 2, 3, None)
        for query in ("", "f 1 2 3 1e400"):
            check_diagnosis(diagnose(r.first, reg, query))
    assert not marker.exists()


def test_huge_numbers_and_infinities_in_native_objects() -> None:
    reg = [{"name": "f", "parameters": {"type": "object", "properties": {"a": {}}}}]
    for value in (10**5000, -(10**5000), float("inf"), float("nan"), 1e308, [10**5000]):
        for query in ("", "a 1 b", "9" * 5000):
            out = score_row(
                {
                    "id": 1,
                    "query": query,
                    "functions": reg,
                    "output": {"name": "f", "arguments": {"a": value}},
                    "gold": {"name": "f", "arguments": {"a": value}},
                }
            )
            assert out["stage"] in (0, 1, 2, 3)


@pytest.mark.parametrize("depth", [33, 400, 5000])
def test_deeply_nested_arguments_are_rejected_not_crashing(depth: int) -> None:
    text = '{"name": "f", "arguments": {"a": ' + "[" * depth + '"x"' + "]" * depth + "}}"
    reg = [{"name": "f", "parameters": {"type": "object", "properties": {"a": {}}}}]
    r = parse_output(text)
    assert not r.ok and r.error
    nested: Any = "x"
    for _ in range(depth):
        nested = [nested]
    python = "f(a=" + "[" * depth + "'x'" + "]" * depth + ")"
    for output in (text, {"name": "f", "arguments": {"a": nested}}, python):
        out = score_row(
            {
                "id": 1,
                "query": "x",
                "functions": reg,
                "output": output,
                "gold": {"name": "f", "arguments": {"a": nested}},
            }
        )
        assert "error" in out or out["stage"] == 1


def test_regression_diagnose_recurses_on_a_deep_call_built_directly() -> None:
    """Regression (found in review, fixed): parse_output now rejects arguments nested deeper than 32 and
    score_row catches RecursionError, but diagnose() itself (a public function, e.g. for
    calls built by other code) still raises RecursionError for a ToolCall nested ~400 deep."""
    nested: Any = "x"
    for _ in range(400):
        nested = [nested]
    reg = [{"name": "f", "parameters": {"type": "object", "properties": {"a": {}}}}]
    check_diagnosis(diagnose(ToolCall("f", {"a": nested}), reg, "x"))


@pytest.mark.parametrize("tool_calls", [1, 2.5, True])
def test_regression_non_iterable_tool_calls_raise_type_error(tool_calls: Any) -> None:
    """Regression (found in review, fixed): parse_output({"tool_calls": 1}) raises TypeError ('int' object is not
    iterable) out of parse_native instead of returning a parse failure."""
    r = parse_output({"role": "assistant", "tool_calls": tool_calls})
    assert not r.ok and r.error


HUGE_SCRIPT = textwrap.dedent(
    """
    import sys
    from callscope.parse import parse_output
    big = {
        "open_brackets": "[" * 100000,
        "open_braces": "{" * 100000,
        "word": "x" * 200000,
        "calls": "f(" * 50000,
        "digits": "1" * 100000,
        "ha": "ha" * 50000,
    }
    for label, text in big.items():
        r = parse_output(text)
        assert not r.ok
        print(label, "ok", flush=True)
    """
)


def test_regression_huge_inputs_do_not_hang() -> None:
    """Regression (found in review, fixed): the parser's scans are quadratic (a regex with `[\\w.]*` retried at
    every position, `_balanced_end` re-scanning to the end for every `f(`, a JSON decode
    attempted at every `[`), so 200,000 characters of one word take minutes. Each input
    below needs well under a second with linear scanning; the 20 s budget is a hang guard,
    not a benchmark."""
    try:
        res = subprocess.run(
            [sys.executable, "-c", HUGE_SCRIPT], capture_output=True, text=True, timeout=20
        )
    except subprocess.TimeoutExpired as exc:
        done = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else exc.stdout
        pytest.fail(f"parse_output hung on a huge input; finished before the hang: {done!r}")
    assert res.returncode == 0, res.stderr
