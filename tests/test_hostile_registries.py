"""Hostile tool specs (the registry side of a request): the cascade's work and what it keeps
stay bounded, whatever a registry holds, and ordinary verdicts do not move.

Each test names the finding it pins (a review's attack scripts): memory that grew with every
request of one text (enums kept per request), work square in a spec's size (out-of-schema
arguments against many declared names, an array of members of a long enum, a required list
repeating a name), memos bounded by count only (a tuple of numbers weighed nothing; name
tables of long names), every member of a long enum tried by every request rule, and a whole
tool name in an error message. No test asserts a time: each counts the inner work at n and
4n, or the entries kept.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from callscope.core.memo import text_cache, text_size
from callscope.errors import DataFormatError
from callscope.saag import cascade, enums, registry_names
from callscope.saag import intrinsic as metrics
from callscope.saag.ask import unstated_required, with_ask
from callscope.saag.cascade import diagnose, forget_registry
from callscope.saag.evidence import Evidence
from callscope.saag.groundings import RegistryGrounding
from callscope.saag.value_rules import enum_member
from callscope.types import Case, ToolCall


def _enum_tool(enum: list[Any], *, array: bool = False) -> list[dict[str, Any]]:
    schema: dict[str, Any] = {"type": "string", "enum": enum}
    if array:
        schema = {"type": "array", "items": schema}
    props = {"x": schema}
    return [{"name": "f", "parameters": {"type": "object", "properties": props, "required": ["x"]}}]


# ----------------------------------------------------------- 1. members kept per request


def test_the_members_a_request_states_are_kept_for_few_short_enums_only() -> None:
    """28 requests of one text with distinct 4,000-member enums, then 100 with distinct short
    ones: the text's Evidence keeps no long enum and at most MEMBER_CACHE_ENTRIES short ones
    (before: all 128, 112,000 members)."""
    text = "Please do the thing now (hostile registries, finding 1)"
    for r in range(28):
        enum = [f"r{r}m{i}" for i in range(4000)]
        functions = _enum_tool(enum)
        d = diagnose(ToolCall("f", {"x": enum[7]}), functions, text)
        assert (d.stage, d.grounded) == (0, {"x": "enum"})  # the request states no member
        forget_registry(functions)
    for r in range(100):
        functions = _enum_tool([f"short{r}", f"other{r}"])
        d = diagnose(ToolCall("f", {"x": f"short{r}"}), functions, text)
        assert d.grounded == {"x": "enum"}
        forget_registry(functions)
    kept = Evidence.of(text).member_cache
    assert 0 < len(kept) < 100 and len(kept) <= enums.MEMBER_CACHE_ENTRIES
    assert all(len(members) == 2 for _, members in kept)  # no 4,000-member enum


def test_a_stated_member_still_vetoes_another_in_a_long_enum() -> None:
    enum = [f"plan {i}" for i in range(500)] + ["basic", "premium"]
    functions = _enum_tool(enum)
    d = diagnose(ToolCall("f", {"x": "basic"}), functions, "Switch me to the premium plan")
    assert d.stage == 3 and d.hard == ["x"]  # the request names another member
    d = diagnose(ToolCall("f", {"x": "premium"}), functions, "Switch me to the premium plan")
    assert d.stage == 0 and d.grounded == {"x": "stated"}


# ------------------------------------------------- 2. out-of-schema arguments, many names


def _drift_calls(monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[int, Any]:
    calls = []
    real = metrics.drift_score
    monkeypatch.setattr(metrics, "drift_score", lambda p, a: calls.append(p) or real(p, a))
    props = {f"param_{i}": {"type": "string"} for i in range(n)}
    functions = [{"name": "f", "parameters": {"type": "object", "properties": props}}]
    call = ToolCall("f", {f"zz_{i}": "a" for i in range(n)})
    d = diagnose(call, functions, f"do it {n}")
    return len(calls), d


def test_at_most_a_fixed_number_of_unknown_arguments_are_drift_scored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """n unknown names against n declared ones: each scored name is a WRatio against every
    declared name, so n of them were n * n (4,000: 38 s). MAX_DRIFT_SCORED are scored, the
    rest are spurious."""
    for n in (100, 400):
        scored, d = _drift_calls(monkeypatch, n)
        assert scored == cascade.MAX_DRIFT_SCORED
        assert d.stage == 2 and len(d.spurious) == n and d.spr == 1.0
        assert not d.drifted and d.pds is not None


def test_a_near_miss_is_still_drifted_among_few_unknown_names() -> None:
    props = {"city": {"type": "string"}, "unit": {"type": "string"}}
    functions = [{"name": "f", "parameters": {"type": "object", "properties": props}}]
    d = diagnose(ToolCall("f", {"cty": "Paris", "colour": "red"}), functions, "Paris")
    assert d.drifted == ["cty"] and d.drift_targets == {"cty": "city"}
    assert d.spurious == ["colour"]


# ----------------------------------------------------- 3. an array of an enum's members


class _CountingList(list):  # type: ignore[type-arg]
    """A list that counts how often it is walked."""

    walks = 0

    def __iter__(self) -> Any:
        _CountingList.walks += 1
        return super().__iter__()


@pytest.mark.parametrize("leaves", [100, 400])
def test_an_enum_is_read_once_for_all_the_leaves_of_an_array(leaves: int) -> None:
    """An array of L members of an E-member enum: each leaf's membership test and stated
    members walked (weighed, hashed, copied) the whole list, L * E work (L = 4,000, E =
    40,000: 13.4 s). The list is walked a fixed number of times however many leaves."""
    enum = _CountingList(f"m{i}" for i in range(4 * leaves))
    functions = _enum_tool(enum, array=True)
    values = [f"m{i}" for i in range(leaves)]
    _CountingList.walks = 0
    d = diagnose(ToolCall("f", {"x": values}), functions, f"Please do it ({leaves})")
    assert d.stage == 0 and d.grounded == {"x": "enum"}
    assert _CountingList.walks <= 2
    d = diagnose(ToolCall("f", {"x": [*values, "zz"]}), functions, f"Please do it ({leaves})")
    assert d.stage == 3 and d.hard == ["x"]  # a leaf outside the enum


@pytest.mark.parametrize("extra", [0, 100])
def test_an_enum_index_answers_as_enum_member(extra: int) -> None:
    """Members up to form, short and long enums (past PREFILTER_MIN, strings are first
    looked up as they are), against :func:`~callscope.saag.value_rules.enum_member`."""
    members: list[Any] = [*range(2, 2 + extra), "250", "1,000", 2.5, True, None, "Celsius"]
    members += ["New-York", 10**30, float("inf"), ["a"], "x"]
    index = enums.EnumIndex(tuple(members))
    values: list[Any] = [1, 7, 7.0, 250, 250.0, 1000, 2.5, 2.6, 10**30, 1e30, float("inf")]
    values += ["250", " 250 ", "1,000", "celsius", "CELSIUS!", "new york", "m", "a", "x", "X"]
    values += [True, False, None, 101]
    for value in values:
        assert index.has(value) == enum_member(value, members), value


# --------------------------------------------------------- 4. a required list repeating


@pytest.mark.parametrize("n", [2_000, 8_000])
def test_a_repeated_required_name_is_one_parameter(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """``"required": ["unit"] * n``: each entry searched the user's text again (n * text:
    80,000 entries took 11.7 s) and the correction named the unit n times."""
    import callscope.saag.ask as ask

    words = []
    real = ask._words
    monkeypatch.setattr(ask, "_words", lambda t: words.append(t) or real(t))
    unit = {"type": "string", "description": "celsius or fahrenheit"}
    spec = {"name": "f", "parameters": {"type": "object", "properties": {"unit": unit}}}
    spec["parameters"]["required"] = ["unit"] * n
    assert unstated_required(ToolCall("f", {}), spec, "x " * n) == ["unit"]
    assert len(words) <= 3  # the text once, each option once
    d = diagnose(ToolCall("f", {}), [spec], "Weather?")
    assert d.missing == ["unit"] and d.rpr == 0.0
    d = with_ask(d, ToolCall("f", {}), [spec], "Weather?")
    assert d.ask == ["unit"] and d.missing == []


def test_required_names_keep_their_first_order_once_each() -> None:
    props = {"a": {"type": "string"}, "b": {"type": "string"}}
    spec = {"name": "f", "parameters": {"properties": props, "required": ["b", "a", "b", "a"]}}
    d = diagnose(ToolCall("f", {"a": "x"}), [spec], "x")
    assert d.missing == ["b"] and d.rpr == 0.5


def test_an_option_of_several_words_is_named_only_as_a_phrase() -> None:
    city = {"type": "string", "enum": ["new york", "los angeles"]}
    spec = {"name": "f", "parameters": {"properties": {"city": city}, "required": ["city"]}}
    call = ToolCall("f", {})
    assert unstated_required(call, spec, "Fly me to New York") == []
    assert unstated_required(call, spec, "A new hat for York") == ["city"]
    assert unstated_required(call, spec, "to Los  Angeles!") == []


# ------------------------------------------------------ 5. a tuple of numbers has a size


def test_a_tuple_of_numbers_weighs_its_length() -> None:
    assert text_size(("ab", (1, 2.5, None), (("cd",), frozenset({3})))) == 2 + 3 + 2 + 1
    assert text_size((tuple(range(60_000)),)) == 60_000


def test_calls_on_long_tuples_of_numbers_are_not_kept_as_short_ones() -> None:
    """An all-number enum of 20,000 members counted no characters: 4,096 of them (2.5 MB
    each for 60,000 members) fitted the short memo. They are long calls now, kept within
    LONG_CHARS."""

    @text_cache(4096)
    def length(members: tuple[int, ...]) -> int:
        return len(members)

    for r in range(40):
        assert length(tuple(range(r * 10**7, r * 10**7 + 20_000))) == 20_000
    assert length.cache_info().currsize == 0  # type: ignore[attr-defined]


# ------------------------------------------------------------------ 6. name tables


def _names(seed: int, count: int) -> tuple[str, ...]:
    rnd = random.Random(seed)
    return tuple(
        "".join(chr(rnd.randrange(0x4E00, 0x9FFF)) for _ in range(100)) for _ in range(count)
    )


class _Built:
    count = 0


def _counting_tables(monkeypatch: pytest.MonkeyPatch) -> type[_Built]:
    real = registry_names.NameTable

    def counted(names: tuple[str, ...]) -> Any:
        _Built.count += 1
        return real(names)

    monkeypatch.setattr(registry_names, "NameTable", counted)
    registry_names.name_table.cache_clear()
    _Built.count = 0
    return _Built


def test_name_tables_are_kept_within_their_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    """30 registries of 100 CJK names of 100 characters (10,000 characters, about 2.6 MB of
    table each): the oldest are let go once their names pass NAME_TABLE_CHARS (before: the
    last 64 kept whatever their size)."""
    built = _counting_tables(monkeypatch)
    registries = [_names(seed, 100) for seed in range(30)]
    for names in registries:
        registry_names.name_table(names)
    assert built.count == 30
    registry_names.name_table(registries[-1])  # the newest is kept
    assert built.count == 30
    registry_names.name_table(registries[0])  # the oldest was let go
    assert built.count == 31
    kept_chars = registry_names.name_table.cache_chars()  # type: ignore[attr-defined]
    assert kept_chars <= registry_names.NAME_TABLE_CHARS
    registry_names.name_table.cache_clear()


def test_a_registry_kept_does_not_keep_its_name_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registries the guard keeps (64) kept their indexes, and each index its name table
    whatever its size: 6 registries of 1,200 CJK names took a proxy from 101 to 237 MB. The
    table is the bounded memo's: a registry whose table was let go builds it again."""
    built = _counting_tables(monkeypatch)
    registries = [[{"name": name} for name in _names(200 + seed, 100)] for seed in range(30)]
    for functions in registries:
        d = diagnose(ToolCall(functions[5]["name"][:60] + "x", {}), functions, "do it")
        assert d.nearest == functions[5]["name"]
    assert built.count == 30
    d = diagnose(ToolCall(registries[0][7]["name"][:60] + "y", {}), registries[0], "do it")
    assert d.nearest == registries[0][7]["name"] and built.count == 31
    d = diagnose(ToolCall(registries[-1][7]["name"][:60] + "y", {}), registries[-1], "do it")
    assert built.count == 31  # (the newest is kept)
    for functions in registries:
        forget_registry(functions)


def test_forget_registry_drops_its_name_table(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _counting_tables(monkeypatch)
    names = _names(99, 80)
    functions = [{"name": name, "parameters": {}} for name in names]
    d = diagnose(ToolCall(names[3][:50] + "x", {}), functions, "do it")
    assert d.stage == 1 and d.nearest == names[3]
    assert built.count == 1
    registry_names.name_table(names)
    assert built.count == 1  # kept while its registry is
    forget_registry(functions)
    registry_names.name_table(names)
    assert built.count == 2  # dropped with it


# ------------------------------------------------ 7. the members of a long enum stated

_MEMBERS: list[Any] = [
    "km",
    "kilometers",
    "Miles",
    "mile",
    "Celsius",
    "F",
    "K",
    "kg",
    "pounds",
    "lb",
    "hours",
    "Eb",
    "Eb major",
    "C#",
    "Bb5",
    "2024-03-06",
    "03/06/2024",
    "March 2024",
    "2024 03",
    "6 March",
    "5",
    "05",
    "1,000",
    "1000",
    "2.5",
    "five",
    "running",
    "run",
    "runs",
    "new york",
    "York New",
    "NEW YORK",
    "x^2",
    "x**2",
    "e-mail",
    "email",
    "Paris",
    "paris france",
    "m1",
    "m 1",
    "",
    "   ",
    "São Paulo",
    "東京",
    "10 am",
    "10am",
    "3pm",
    "15 30",
    "15:30",
    "tomorrow",
    "today",
    "Monday",
    "Bob",
    "bob's",
    "to",
    "the",
    "a",
    "percent",
    "20",
    "20 F",
    "20F",
    "degrees F",
    "e flat",
    "flat",
    "E",
    "sharp",
    "plan",
    "planned",
    "plans",
    "2023",
    "23",
    "April",
    "April 23",
    "04-2022",
    "2022-07-01",
    "july",
    5,
    2.5,
    1000,
    20,
    True,
    None,
    0,
]
_REQUESTS = [
    "Convert 5 kilometers to miles",
    "Play it in E flat major, then C sharp",
    "Book for March 6, 2024 at 10 am",
    "I run every day in New York",
    "What is x**2 for five?",
    "Weather in Paris, in Celsius",
    "Send an e-mail to Bob's team",
    "Set 1,000 items, 2.5 each",
    "東京の天気",
    "nothing here",
    "Meet at 3pm tomorrow, from 15:30",
    "the temperature is 20°F, twenty percent more",
    "Plans planned since July 2022 and April 2022",
    "Running 2023 hours on April 23",
]


def _stated_both_ways(members: list[Any], request: str) -> tuple[tuple[Any, ...], ...]:
    mode = RegistryGrounding()
    full = Evidence(request)  # (fresh evidence: nothing remembered across the two)
    every = tuple(m for m in members if mode._stated_member(m, full))
    index = enums.EnumIndex(tuple(members))
    return every, index.stated(mode.disabled, Evidence(request), mode._stated_member)


@pytest.mark.parametrize("request_text", _REQUESTS)
def test_the_prefilter_finds_the_members_every_rule_finds(request_text: str) -> None:
    members = _MEMBERS + [f"zz{i}" for i in range(enums.PREFILTER_MIN)]
    every, prefiltered = _stated_both_ways(members, request_text)
    assert prefiltered == every


def test_the_prefilter_finds_them_on_random_members_of_the_requests_words() -> None:
    rnd = random.Random(7)
    for request_text in _REQUESTS:
        words = request_text.replace(",", " ").split()
        pool = [*words, *(w.lower() for w in words), *(w.upper() for w in words)]
        pool += [w + s for w in words for s in ("s", "ing", "ed")] + ["Eb", "5", "2024", "km"]
        members = list(
            dict.fromkeys(
                " ".join(rnd.choice(pool) for _ in range(rnd.randrange(1, 4))) for _ in range(400)
            )
        )
        every, prefiltered = _stated_both_ways(members, request_text)
        assert prefiltered == every, request_text


@pytest.mark.parametrize("size", [2_000, 8_000])
def test_plain_members_a_request_cannot_state_are_not_tried(
    monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """A passing answer of a 300,000-member enum took 12.6 s: every member went through
    every request rule. Members the request cannot state are not tried."""
    tried = []
    real = RegistryGrounding._stated_in
    monkeypatch.setattr(
        RegistryGrounding, "_stated_in", lambda self, v, *a: tried.append(v) or real(self, v, *a)
    )
    functions = _enum_tool([f"m{i}" for i in range(size)])
    d = diagnose(ToolCall("f", {"x": f"m{size // 2}"}), functions, f"Please do the thing {size}")
    assert d.stage == 0 and d.grounded == {"x": "enum"}
    assert len(tried) <= 4


# ------------------------------------------------------- 8. a name in an error message


def test_an_error_message_quotes_a_long_tool_name_cut() -> None:
    name = "tool_x_miss" + "q" * 1_000_000
    row = {"id": 1, "query": "q", "functions": [{"name": name, "parameters": 3}]}
    with pytest.raises(DataFormatError) as caught:
        Case.from_dict(row)
    message = str(caught.value)
    assert len(message) < 200
    assert "'tool_x_missqqq" in message and "more characters" in message


# ------------------------------------------- 9. a new registry on every row of a results file


def _row(r: int, tools: int) -> dict[str, Any]:
    """One ``score`` row whose registry is its own (``tools`` specs, names of its own), the
    request, the answer and the gold alike in every row."""
    specs = [
        {
            "name": f"t{r}_{i}",
            "description": "look something up",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
        for i in range(tools)
    ]
    call = {"name": f"t{r}_0", "arguments": {"q": "Paris"}}
    return {
        "id": str(r),
        "query": "Look up Paris",
        "functions": specs,
        "output": json.dumps(call),
        "gold": call,
    }


def _retained_after(rows: int, tools: int) -> int:
    """Bytes still allocated after ``score_row`` (what ``callscope score`` calls for each
    line) scored ``rows`` rows, each a new registry, the rows themselves let go."""
    import gc
    import tracemalloc

    from callscope.saag.score import score_row

    tracemalloc.start()
    try:
        for r in range(rows):
            out = score_row(_row(r, tools))
            assert out["stage"] == 0 and out["arg_f1"] == 1.0, out
        gc.collect()
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def test_rows_each_with_its_own_registry_are_not_all_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A results file whose every row carries a new registry: the cascade's memos kept every
    one (the index cache 4,096 lists, each verdict and extrinsic score its list: 400 rows of
    2,000 tools held 1 GB). The index cache is now their one holder, bounded in specs, so 120
    rows retain about what 30 do (before: four times as much)."""
    from callscope.saag import registry_index

    monkeypatch.setattr(registry_index, "_INDEX_CACHE_SPECS", 3_000)  # 10 registries of 300
    for cache in (registry_index._index_cache, cascade._verdicts):
        cache.clear()
    monkeypatch.setattr(registry_index, "_index_specs", 0)
    monkeypatch.setattr(cascade, "_verdict_chars", 0)
    few = _retained_after(30, 300)
    many = _retained_after(120, 300)
    assert many < 1.5 * few, (few, many)
    assert registry_index._index_specs <= 3_000


def test_unknown_arguments_past_the_cap_are_spurious_even_in_an_open_schema() -> None:
    """A schema open to more arguments (``additionalProperties``) takes an unknown name only
    once it is scored as no drift: past the 32 scored, 32 harmless extras (values the request
    states) would otherwise hide a misspelt parameter behind them (a review's finding)."""
    spec = [
        {
            "name": "f",
            "parameters": {
                "type": "object",
                "additionalProperties": True,
                "properties": {"city": {"type": "string"}, "temperature_unit": {"type": "string"}},
                "required": ["city"],
            },
        }
    ]
    query = "Weather in Paris in celsius"
    alone = diagnose(ToolCall("f", {"city": "Paris", "temperatur_unit": "celsius"}), spec, query)
    assert (alone.stage, alone.drifted) == (2, ["temperatur_unit"])
    extras = {f"zq{i}": "Paris" for i in range(cascade.MAX_DRIFT_SCORED)}
    hidden = diagnose(
        ToolCall("f", {"city": "Paris", **extras, "temperatur_unit": "celsius"}), spec, query
    )
    assert hidden.stage == 2 and hidden.spurious == ["temperatur_unit"]
    assert hidden.drifted == []  # (not scored: the 33rd unknown name)
