"""Hostile input (issue 15): never a hang by construction, a crash, an execution or a lost row.

A sample of ``tests/hostile.py``'s generator goes through parse + score + the store codec;
the full 100,000 with timings is ``benchmarks/hostile.py``. The other tests pin each fix with
values worked out by hand.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import FAMILIES, FUNCTIONS, QUERY, hostile_outputs

from callscope.core.jsonl import ESCAPED_KEY, dumps_safe, read_jsonl, write_jsonl
from callscope.errors import DataFormatError
from callscope.models.base import ChatModel
from callscope.models.cache import CachedModel
from callscope.parse import parse_output, parse_text
from callscope.parse.literals import MAX_NATIVE_CHARS
from callscope.parse.text import fenced_blocks, tool_call_blocks
from callscope.records import Attempt, Outcome
from callscope.report.aggregate import group_metrics, order_free
from callscope.saag.score import score_row
from callscope.store.run_store import RunStore
from callscope.types import Case, ModelReply

# ------------------------------------------------------------------ the generator, sampled


def test_a_sample_of_hostile_outputs_never_crashes_executes_or_fails_to_write(tmp_path):
    marker = tmp_path / "INJECTED"
    seen: dict[str, int] = {}
    for i, (family, output) in enumerate(hostile_outputs(350, seed=15, marker=marker)):
        seen[family] = seen.get(family, 0) + 1
        row = score_row({"id": f"h{i}", "query": QUERY, "functions": FUNCTIONS, "output": output})
        assert row["id"] == f"h{i}"
        text = dumps_safe(row)
        text.encode("utf-8")  # always writable
        back = json.loads(text)
        assert {k: v for k, v in back.items() if k != ESCAPED_KEY} == json.loads(
            json.dumps({k: v for k, v in row.items()})
        )
    assert seen == {name: 50 for name in FAMILIES}
    assert not marker.exists()


def test_the_generator_is_deterministic(tmp_path):
    a = list(hostile_outputs(14, seed=3, marker=tmp_path / "m"))
    b = list(hostile_outputs(14, seed=3, marker=tmp_path / "m"))
    assert a == b


# ------------------------------------------------------------------ item 1: linear readers


@pytest.mark.parametrize(
    ("text", "blocks"),
    [
        ("<tool_call> a </tool_call>x<tool_call>b", ["a", "b"]),
        ("<tool_call>\n{}\n</tool_call></tool_call>", ["{}"]),
        ("no tags", []),
        ("<tool_call>x" + " " * 5 + "y", ["x     y"]),
    ],
)
def test_tool_call_blocks(text, blocks):
    assert tool_call_blocks(text) == blocks


@pytest.mark.parametrize(
    ("text", "blocks"),
    [
        ("```json\n{}\n```", [("json", "{}\n")]),
        ("``` python  f()```", [("python", "f()")]),
        ("```a``` ```b```", [("a", ""), ("b", "")]),  # a word after the backticks is the tag
        ("````x````", [("", "`x")]),
        ("```" + " " * 9 + "x", []),
        ("``` never closed", []),
    ],
)
def test_fenced_blocks_read_as_the_old_pattern_did(text, blocks):
    old = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)```", re.S)
    assert [(m.group(1), m.group(2)) for m in old.finditer(text)] == blocks
    assert fenced_blocks(text) == blocks


def test_the_linear_readers_agree_with_the_old_patterns_on_random_text():
    """Differential check on 3,000 short random texts (short, so the old backtracking
    patterns are fast): same blocks, same order."""
    import random

    old_fence = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)```", re.S)
    old_tag = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
    rng = random.Random(7)
    alphabet = ["`", "```", " ", "\t", "\n", "a", "py", "-", "<tool_call>", "</tool_call>", "x"]
    for _ in range(3_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 25))).strip()
        assert fenced_blocks(text) == [(m.group(1), m.group(2)) for m in old_fence.finditer(text)]
        assert tool_call_blocks(text) == [m.group(1) for m in old_tag.finditer(text)]


def test_call_start_after_blank_runs_still_finds_calls():
    assert parse_text("[   get_weather(city='Oslo')]").calls[0].arguments == {"city": "Oslo"}
    assert parse_text("see   get_weather(city='Oslo') now").calls[0].name == "get_weather"
    long = "[" + " " * 50_000 + "a"
    # a bracket opening a value that is not one: a broken call, its reason past the blank run
    assert parse_text(long).error == "invalid JSON at character 50001: Expecting value"


def test_broken_json_reasons_stay_linear_on_hostile_text():
    """The reason for JSON that does not decode reads one opening; blank runs between
    openings are each crossed once (a quadratic scan would take minutes here)."""
    reasons = {
        "[ " * 200_000: "the JSON is nested too deeply to read",
        "{" + " " * 400_000: "the JSON call starting at character 0 is cut off: "
        "the text ends before the call is closed",
        "[ {  " * 100_000: "invalid JSON at character 5: "
        "Expecting property name enclosed in double quotes",
    }
    for text, reason in reasons.items():
        assert parse_text(text).error == reason
    cut = '{"name": "f", "arguments": {"a": "' + "x" * 400_000
    assert "cut off" in (parse_text(cut).error or "")


def test_occurrences_lists_every_overlapping_place_also_past_the_find_steps(monkeypatch):
    import random

    import callscope.core.text as text_module
    from callscope.core.text import occurrences

    # "aba" in "abab...ab" (400 characters): at every even position up to 396, 199 places,
    # past the 64 found by str.find
    assert list(occurrences("ab" * 200, "aba")) == list(range(0, 397, 2))
    assert list(occurrences("x" * 100, "xx", 90)) == list(range(90, 99))
    # the scan alone (no str.find step, or one), against every position tried in turn
    rng = random.Random(49)
    for by_find in (0, 1):
        monkeypatch.setattr(text_module, "OCCURRENCES_BY_FIND", by_find)
        assert list(occurrences("ab" * 200, "aba")) == list(range(0, 397, 2))
        for _ in range(3_000):
            text = "".join(rng.choice("ab x") for _ in range(rng.randrange(0, 30)))
            needle = "".join(rng.choice("ab x") for _ in range(rng.randrange(1, 5)))
            every = [i for i in range(len(text)) if text.startswith(needle, i)]
            assert list(occurrences(text, needle)) == every


def test_a_long_value_inside_a_long_run_of_its_period_is_judged_in_linear_time():
    """A 100,000-character value occurs 900,001 times inside a 1,000,000-character word of
    the request, never at word boundaries: each occurrence is tested, in one linear scan
    (``str.find`` from each occurrence compared the whole value again: about 3.4 minutes)."""
    from callscope.saag.grounding import string_in_query
    from callscope.saag.value_rules import named_in_word

    value, run = "x" * 100_000, "x" * 1_000_000
    assert not string_in_query(value, "Weather in " + run + "?")
    assert string_in_query(value, "Weather in " + run + " or " + value + "?")
    assert not named_in_word(value, "weather in a" + run)  # never at a word's start
    assert named_in_word(value, "weather in a" + run + " " + value + "x")
    # `callscope score` on such a row: tests/test_cli_hostile.py


def test_partial_ratio_is_exact_under_its_work_bound_and_zero_over_it():
    from rapidfuzz import fuzz

    from callscope.saag.grounding import MAX_RATIO_WORK, partial_ratio

    # 256 characters in a text of 1,000,000: 256 * 256 * 1,000,000 is the bound itself
    assert MAX_RATIO_WORK == 256 * 256 * 1_000_000
    value = "ab" * 127 + "yz"  # 256 characters, not in the text
    text = "ab " * 333_333 + "x"  # 1,000,000 characters
    assert len(value) == 256 and len(text) == 1_000_000
    assert partial_ratio(value, text) == fuzz.partial_ratio(value, text)
    # one character more is over it: not aligned, 0 (h = 1, a hard drift)
    assert partial_ratio(value + "a", text) == 0.0
    # a shorter string of 64 characters is always aligned (one bit-parallel pass)
    assert partial_ratio("ab" * 32, text + "ab" * 10**6) == 100.0


# ------------------------------------------------------------------ item 2: native size cap


def test_native_arguments_are_capped():
    big = {"tool_calls": [{"name": "f", "arguments": {"a": [0] * 1_000_000}}]}
    r = parse_output(big)
    assert not r.ok and f"larger than {MAX_NATIVE_CHARS}" in (r.error or "")
    huge_text = {"tool_calls": [{"name": "f", "arguments": json.dumps({"a": "x" * 10**6})}]}
    assert not parse_output(huge_text).ok
    # just under the cap: 199,000 characters of string is accepted
    ok = {"tool_calls": [{"name": "f", "arguments": {"a": "x" * 199_000}}]}
    assert parse_output(ok).calls[0].arguments["a"] == "x" * 199_000


# ------------------------------------------------------------------ items 4, 5: writing


def test_dumps_safe_keeps_plain_rows_and_escapes_with_a_flag():
    assert dumps_safe({"a": "é", "b": 1}) == '{"a": "é", "b": 1}'
    assert dumps_safe({"a": "\ud800"}) == '{"a": "\\ud800", "escaped": ["surrogate"]}'
    big = 16**5000 - 1  # 5,000 hex digits "f"
    assert json.loads(dumps_safe({"n": [big]})) == {
        "n": ["0x" + "f" * 5000],
        "escaped": ["huge_int"],
    }


def test_the_store_keeps_surrogates_and_huge_ints(tmp_path):
    store = RunStore(tmp_path / "run")
    cid = "case\ud800"
    store.add_cases([Case(id=cid, query="q\udfff", functions=[{"name": "f"}])])
    reply = {"text": "f(a='x', b=0x" + "f" * 4000 + ")\ud800", "tool_calls": None}
    attempt = Attempt(1, [{"role": "user", "content": "q\udfff"}], reply, [], None, None)
    attempt.parsed = [{"name": "f", "arguments": {"a": "x", "b": 16**4000 - 1}}]
    outcome = Outcome(case_id=cid, mode="direct", attempts=[attempt], error="bad \ud800")
    store.save_outcome("m\ud800", None, outcome)
    assert store.done("m\ud800", include_errors=True) == {(cid, "direct")}
    (o,) = store.outcomes()
    assert (o["case_id"], o["model"], o["error"]) == (cid, "m\ud800", "bad \ud800")
    (a,) = store.attempts("m\ud800", cid, "direct")
    assert a["reply"]["text"] == reply["text"]
    assert a["parsed"][0]["arguments"]["b"] == "0x" + "f" * 4000
    assert a[ESCAPED_KEY] == ["huge_int", "surrogate"]
    assert store.cases()[0].query == "q\udfff"
    path = store.export_jsonl()
    assert json.loads(path.read_text(encoding="utf-8"))["id"] == cid
    store.close()


def test_write_jsonl_and_read_jsonl_with_hostile_lines(tmp_path):
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, [{"id": "\ud800"}, {"n": 10**5000}])
    rows = [r for _, r in read_jsonl(path)]
    assert rows[0] == {"id": "\ud800", ESCAPED_KEY: ["surrogate"]}
    assert rows[1]["n"].startswith("0x") and rows[1][ESCAPED_KEY] == ["huge_int"]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"a": 1}\n{"b": "\xff"}\n\n{"c": ' + b"1" * 5000 + b'}\n{"d": "\\ud800"}\n')
    got = list(read_jsonl(bad))
    assert [n for n, _ in got] == [1, 2, 4, 5]
    assert got[0][1] == {"a": 1} and got[3][1] == {"d": "\ud800"}
    assert str(got[1][1]) == "line 2 is not valid UTF-8 (byte 0xff at column 8)"
    assert str(got[2][1]).startswith("line 4: Exceeds the limit (4300 digits)")


# ------------------------------------------------------------------ item 6: malformed rows

F = [{"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}]
BASE = {"id": "r", "query": "q", "functions": F, "output": '{"name": "f", "arguments": {}}'}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"scale": [1]}, "'scale' must be an integer, got list"),
        ({"scale": {"a": 1}}, "'scale' must be an integer, got dict"),
        ({"scale": 2.5}, "'scale' must be an integer, got 2.5"),
        ({"gold": {"name": "f", "acceptable": {"a": 5}}}, "value of 'a' must be a list"),
        ({"gold": {"name": "f", "acceptable": [1]}}, "'gold.acceptable' must be an object"),
        ({"gold": {"name": "f", "arguments": "abc"}}, "'gold.arguments' must be an object"),
        ({"gold": {"name": "f", "arguments": 5}}, "'gold.arguments' must be an object"),
        ({"functions": [{"name": "f", "parameters": [1]}]}, "'parameters' of function 'f'"),
        ({"id": 10**5000}, "'id' cannot be read as text"),
    ],
)
def test_each_malformed_row_is_one_error_row(change, reason):
    row = {**BASE, **change}
    with pytest.raises(DataFormatError, match=re.escape(reason)):
        Case.from_dict(row)
    out = score_row(row)
    assert reason in out["error"]
    dumps_safe(out).encode("utf-8")  # the huge id comes back as hex text


def test_well_formed_rows_still_read():
    case = Case.from_dict({**BASE, "scale": "5", "gold": {"name": "f", "acceptable": {"a": []}}})
    assert case.scale == 5
    assert Case.from_dict({**BASE, "scale": 10.0}).scale == 10


# ------------------------------------------------------------------ item 8: order-free CIs


def test_bootstrap_intervals_do_not_depend_on_row_order():
    rows = [
        {"model": "m", "case_id": f"c{i}", "mode": "direct", "error": None, "has_gold": True,
         "solved_at": None, "final": {"name_match": True, "arg_f1": (i * 37 % 11) / 10,
                                      "arg_precision": 1.0, "arg_recall": 1.0}}
        for i in range(30)
    ]  # fmt: skip
    a = group_metrics(rows, n_boot=300)
    b = group_metrics(rows[::-1], n_boot=300)
    assert (a["arg_f1_lo"], a["arg_f1_hi"]) == (b["arg_f1_lo"], b["arg_f1_hi"])
    assert order_free([3.0, math.nan, 1.0])[:2] == [1.0, 3.0]


# ------------------------------------------------------------------ item 9: cache key order


class _Once(ChatModel):
    spec = "once:test"

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages, tools=None, decoding=None, context=None) -> ModelReply:
        self.calls += 1
        return ModelReply(
            text="\ud800", tool_calls=[{"name": "f", "arguments": {"zeta": 1, "alpha": 2}}]
        )


def test_a_cache_hit_keeps_argument_order_and_surrogates(tmp_path):
    inner = _Once()
    cache = CachedModel(inner, tmp_path / "c.sqlite")
    msgs = [{"role": "user", "content": "hi \udc80"}]
    first = cache.chat(msgs)
    hit = cache.chat(msgs)
    assert inner.calls == 1 and hit.cached
    assert list(hit.tool_calls[0]["arguments"]) == ["zeta", "alpha"]
    assert hit.text == first.text == "\ud800"
    cache.close()
    with sqlite3.connect(tmp_path / "c.sqlite") as con:
        (n,) = con.execute("SELECT COUNT(*) FROM responses").fetchone()
    assert n == 1


def test_glaive_rows_that_cannot_be_read_are_counted_with_their_line(tmp_path):
    from callscope.benchmarks.glaive import load_glaive

    ext = Path(__file__).resolve().parents[2] / "shared" / "external" / "glaive"
    if not (ext / "chat_data.jsonl").is_file():
        pytest.skip("shared/external/glaive is absent")
    lines = (ext / "chat_data.jsonl").read_bytes().splitlines()
    path = tmp_path / "g.jsonl"
    path.write_bytes(b"\n".join([lines[4], b'{"system": "\xff", "chat": "x"}', lines[2]]) + b"\n")
    g = load_glaive(path)
    assert (g.total, len(g.cases), g.dropped["malformed_row"]) == (3, 2, 1)
    assert g.problems == ["line 2 is not valid UTF-8 (byte 0xff at column 13)"]


def test_a_dotted_name_deeper_than_the_stack_is_read_or_refused_never_raised():
    """``ast`` parses ``a.b.b...(x=1)`` thousands of attributes deep; the callee's name is read
    by a loop, so the parser answers instead of raising RecursionError."""
    deep = "a" + ".b" * 1000 + "(x=1)"
    r = parse_output(deep)
    assert [c.name for c in r.calls] == ["a" + ".b" * 1000]
    assert r.calls[0].arguments == {"x": 1}
    prose = parse_output("Sure: a" + ".b" * 3000 + "(x=1) done")
    assert not prose.calls and prose.error  # refused with a reason, not raised


def test_a_dotted_name_is_read_the_same_whatever_the_recursion_limit():
    """A host package may raise the recursion limit (after the integration tests it stood at
    3,000 in the same process, and the test above then failed): the same text must still
    read the same."""
    text = "Sure: a" + ".b" * 3000 + "(x=1) done"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    try:
        prose = parse_output(text)
        read = parse_output("a" + ".b" * 1000 + "(x=1)")
    finally:
        sys.setrecursionlimit(limit)
    assert not prose.calls and prose.error
    assert [c.name for c in read.calls] == ["a" + ".b" * 1000]


def test_a_cut_off_call_is_one_broken_entry_whatever_it_holds():
    """The rest of the text after a cut-off call is inside it: a call or a ``"name"`` key
    nested in its arguments is no call of its own and no second broken one."""
    py = parse_output("get(a=1) then f(b=[g(c=1), h(d=")
    assert [c.name for c in py.calls] == ["get"]
    assert py.unreadable == ((1, "the call f( is cut off"),)
    listed = parse_output("[f(a=1), g(b=[1, 2], c=k(d=")
    assert [c.name for c in listed.calls] == ["f"]
    assert listed.unreadable == ((1, "the call g( is cut off"),)
    js = parse_output(
        '[{"name":"a","arguments":{}}, {"name":"create_user","arguments":{"user":{"name":"Bob","age": '
    )
    assert [c.name for c in js.calls] == ["a"] and [p for p, _ in js.unreadable] == [1]
    assert "is cut off" in js.unreadable[0][1]
    # a nested object with a "name" key inside a cut-off call is not read as a call
    nested = parse_output('{"name":"create_user","arguments":{"user":{"name":"Bob"}, "note": ')
    assert not nested.calls and "cut off" in (nested.error or "")


def test_more_calls_than_the_parser_reads_is_said_not_judged_in_part(tmp_path: Path) -> None:
    """An answer of 10,000 valid calls (a JSON list past the 200,000-character input cap) was
    judged on the calls the scan reached, silently; the calls read are judged and one broken
    entry after them says that the rest was not read, so the answer fails stage 1 with that
    reason through ``callscope score``."""
    call = {"name": "get_weather", "arguments": {"city": "Paris"}}
    fn = {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    rows = [
        {"id": i, "query": "Weather in Paris", "functions": [fn], "output": json.dumps([call] * n)}
        for i, n in (("many", 10_000), ("hundred", 100))
    ]
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    res = subprocess.run(
        [sys.executable, "-c", "from callscope.cli.main import main; main()", "score", str(src),
         "-o", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    many, hundred = (json.loads(line) for line in out.read_text(encoding="utf-8").splitlines())
    assert many["stage"] == 1 and len(many["calls"]) == 64
    assert [c["stage"] for c in many["calls"][:63]] == [0] * 63
    assert "more calls than the parser reads" in many["calls"][63]["parse_error"]
    # a list that fits is read whole: 100 calls, every one judged, no broken entry
    assert hundred["stage"] == 0 and len(hundred["calls"]) == 100


def test_a_case_id_with_a_lone_surrogate_is_audited_and_reported(tmp_path: Path) -> None:
    """The audit seeds each case's perturbations with its id; an id holding a lone surrogate
    (a data file may) made ``random.Random`` raise UnicodeEncodeError, so ``callscope audit``
    and ``callscope report`` (which audits the run's gold cases) failed on it."""
    fn = {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    gold = {"name": "get_weather", "arguments": {"city": "Paris"}}
    rows = [
        {"id": f"c{i}\ud800", "query": "Weather in Paris", "functions": [fn], "gold": gold}
        for i in range(3)
    ]
    src = tmp_path / "cases.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = subprocess.run(
        [sys.executable, "-c", "from callscope.cli.main import main; main()", "audit", str(src),
         "-o", str(tmp_path / "audit")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    written = json.loads((tmp_path / "audit" / "audit.json").read_text(encoding="utf-8"))
    assert written["audits"][0]["summary"][0]["n"] == 3  # every case audited


def test_a_closed_call_too_long_to_read_is_not_called_cut_off():
    """A call that closes, but past the scan's 20,000-character bound or with a bracket of
    the wrong kind, was reported "cut off" (the text did not end there); only text that
    ends inside the call is."""
    long_closed = parse_output('get_weather(city="Paris", days=0b' + "1" * 20_000 + ")")
    assert long_closed.error == "integer literal too long (more than 4300 digits)"
    cut = parse_output('get_weather(city="Paris", days=0b' + "1" * 100)
    assert cut.error is not None and cut.error.startswith("the call is cut off")
    mismatched = parse_output('see get_weather(city="P"] ok')
    assert mismatched.attempts == (
        ("get_weather", "the call get_weather( does not parse: a closing bracket does not "
         "match its opening one"),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("odd", "plain"),
    [
        ("ſeptember 5", "September 5"),  # a long s folds to s
        ("Kept on June 5", "Kept on June 5"),  # a Kelvin sign folds to k (not a month)
        ("the 5th of ſeptember 2024", "the 5th of September 2024"),
        ("since ſeptember 2024", "since September 2024"),
    ],
)
def test_letters_that_only_fold_to_a_month_never_raise(odd: str, plain: str) -> None:
    """Stage 3's date patterns match case-insensitively, so they also read letters that only
    fold to a month's name; the month table once raised KeyError on them (a crash of the
    check, the proxy's ``guard_error``). They are read as the plain spelling is."""
    from callscope.guard.check import check
    from callscope.saag.normalise.dates import date_evidence, month_year_evidence

    assert date_evidence(odd) == date_evidence(plain)
    assert month_year_evidence(odd) == month_year_evidence(plain)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "book",
                "parameters": {
                    "type": "object",
                    "properties": {"date": {"type": "string"}},
                    "required": ["date"],
                },
            },
        }
    ]
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": "book", "arguments": '{"date": "2024-09-05"}'},
    }
    answer = {"role": "assistant", "content": None, "tool_calls": [call]}
    odd_verdict = check(answer, tools, [{"role": "user", "content": f"Book it for {odd}"}])
    plain_verdict = check(answer, tools, [{"role": "user", "content": f"Book it for {plain}"}])
    assert odd_verdict.stage == plain_verdict.stage
