"""Registry-scale benchmark builder: nesting, gold handling, determinism, similar distractors."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from callscope.benchmarks.registry_builder import (
    benchmark_to_jsonl,
    build_registry_benchmark,
    default_pool,
    function_text,
)
from callscope.types import Case


def fn(name: str, description: str = "", params: tuple[str, ...] = ("value",)) -> dict:
    return {
        "name": name,
        "description": description or f"Does {name.replace('_', ' ')}",
        "parameters": {
            "type": "object",
            "properties": {p: {"type": "string"} for p in params},
            "required": list(params),
        },
    }


def make_cases(count: int = 6, functions_each: int = 5) -> list[Case]:
    """Case i holds functions tool_<i>_<j>; its gold is tool_<i>_0. 6 x 5 = 30 names."""
    cases = []
    for i in range(count):
        functions = [fn(f"tool_{i}_{j}") for j in range(functions_each)]
        cases.append(
            Case(
                id=f"src-{i}",
                query=f"please run tool {i}",
                functions=functions,
                gold={"name": f"tool_{i}_0", "arguments": {"value": str(i)}},
                meta={"source": "test", "row": i},
            )
        )
    return cases


def names(case: Case) -> list[str]:
    return [f["name"] for f in case.functions]


def by_source(out: list[Case]) -> dict[str, dict[int, Case]]:
    grouped: dict[str, dict[int, Case]] = {}
    for case in out:
        grouped.setdefault(case.meta["source_id"], {})[case.scale] = case
    return grouped


def test_default_pool_dedupes_by_name_first_wins() -> None:
    a1, a2, b = fn("a", "first a"), fn("a", "second a"), fn("b")
    cases = [
        Case(id="1", query="q", functions=[a1, b], gold={"name": "a"}),
        Case(id="2", query="q", functions=[a2, fn("c")], gold={"name": "c"}),
    ]
    pool = default_pool(cases)
    assert [f["name"] for f in pool] == ["a", "b", "c"]
    assert pool[0]["description"] == "first a"


def test_shape_ids_and_nested_prefixes() -> None:
    cases = make_cases()
    out = build_registry_benchmark(cases, seed=3)
    assert [c.id for c in out[:3]] == ["src-0@S5", "src-0@S10", "src-0@S15"]
    assert len(out) == 18
    for source, per_scale in by_source(out).items():
        assert sorted(per_scale) == [5, 10, 15]
        s5, s10, s15 = per_scale[5], per_scale[10], per_scale[15]
        assert [len(c.functions) for c in (s5, s10, s15)] == [5, 10, 15]
        assert s10.functions[:5] == s5.functions
        assert s15.functions[:10] == s10.functions
        gold_name = f"tool_{source.split('-')[1]}_0"
        for c in (s5, s10, s15):
            assert len(set(names(c))) == c.scale
            assert names(c).count(gold_name) == 1
            position = c.meta["gold_position"]
            assert names(c)[position] == gold_name
            assert 0 <= position < 5
            assert c.query == f"please run tool {source.split('-')[1]}"
            assert c.gold == {"name": gold_name, "arguments": {"value": source.split("-")[1]}}
            assert c.meta["source"] == "test" and c.meta["row"] == int(source.split("-")[1])
            assert c.meta["distractors"] == "uniform"


def test_scales_order_does_not_matter() -> None:
    cases = make_cases()
    assert [c.to_dict() for c in build_registry_benchmark(cases, scales=(15, 5, 10))] == [
        c.to_dict() for c in build_registry_benchmark(cases, scales=(5, 10, 15))
    ]


def test_gold_name_never_among_distractors_even_with_a_second_spec() -> None:
    gold = fn("lookup_word", "Look up a word in the dictionary", ("word",))
    impostor = fn("lookup_word", "A different spec under the gold's name", ("term",))
    others = [fn(f"other_{k}") for k in range(14)]
    case = Case(id="g", query="define gleam", functions=[gold], gold={"name": "lookup_word"})
    # the impostor and 14 others: exactly enough for S=15 once the impostor is excluded
    for seed in range(5):
        out = build_registry_benchmark([case], pool=[impostor, *others], seed=seed)
        s15 = out[-1]
        assert names(s15).count("lookup_word") == 1
        assert impostor not in s15.functions
        assert gold in s15.functions
        assert sorted(names(s15)) == sorted(["lookup_word", *(f"other_{k}" for k in range(14))])


def test_duplicate_names_in_pool_are_collapsed() -> None:
    gold = fn("g")
    pool = [fn("d", "first d"), fn("d", "second d"), *(fn(f"e{k}") for k in range(3))]
    case = Case(id="c", query="q", functions=[gold], gold={"name": "g"})
    out = build_registry_benchmark([case], pool=pool, scales=(5,), gold_position="first")
    assert sorted(names(out[0])) == ["d", "e0", "e1", "e2", "g"]
    assert [f["description"] for f in out[0].functions if f["name"] == "d"] == ["first d"]


def test_pool_too_small_names_scale_and_size() -> None:
    case = Case(id="c", query="q", functions=[fn("g")], gold={"name": "g"})
    pool = [fn(f"d{k}") for k in range(10)]
    with pytest.raises(ValueError, match=r"scale 15 .*pool of 10 functions"):
        build_registry_benchmark([case], pool=pool)
    # 10 distractors are enough for S=5 and S=10 (9 needed) but not S=15
    assert len(build_registry_benchmark([case], pool=pool, scales=(5, 10))) == 2
    pool_with_gold = [fn("g"), *pool[:3]]
    with pytest.raises(ValueError, match=r"scale 5 .*pool of 4 functions"):
        build_registry_benchmark([case], pool=pool_with_gold, scales=(5,))


def test_deterministic_bytes(tmp_path: Path) -> None:
    cases = make_cases()
    first, second, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    assert benchmark_to_jsonl(build_registry_benchmark(cases, seed=11, n=4), first) == 12
    benchmark_to_jsonl(build_registry_benchmark(copy.deepcopy(cases), seed=11, n=4), second)
    benchmark_to_jsonl(build_registry_benchmark(cases, seed=12, n=4), other)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != other.read_bytes()
    lines = first.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 12
    assert Case.from_dict(json.loads(lines[0])).scale == 5


def test_gold_position_first_and_random() -> None:
    cases = make_cases(count=30, functions_each=1)  # pool of 30 names
    first = build_registry_benchmark(cases, gold_position="first", seed=1)
    assert all(c.meta["gold_position"] == 0 for c in first)
    assert all(names(c)[0] == c.gold["name"] for c in first)
    rand = build_registry_benchmark(cases, gold_position="random", seed=1)
    positions = {c.meta["gold_position"] for c in rand}
    assert positions <= {0, 1, 2, 3, 4}
    assert len(positions) >= 3  # 30 draws from 5 slots
    for per_scale in by_source(rand).values():
        assert len({c.meta["gold_position"] for c in per_scale.values()}) == 1
        for c in per_scale.values():
            assert names(c)[c.meta["gold_position"]] == c.gold["name"]


def test_sampling_n_keeps_source_order_and_validates() -> None:
    cases = make_cases()
    out = build_registry_benchmark(cases, n=3, seed=5, scales=(5,))
    ids = [c.meta["source_id"] for c in out]
    assert len(ids) == 3 and len(set(ids)) == 3
    assert ids == sorted(ids, key=lambda s: int(s.split("-")[1]))
    with pytest.raises(ValueError, match="n=7"):
        build_registry_benchmark(cases, n=7)


def test_inputs_are_not_modified_and_outputs_are_copies() -> None:
    cases = make_cases()
    snapshot = copy.deepcopy([c.to_dict() for c in cases])
    out = build_registry_benchmark(cases)
    out[0].functions[0]["name"] = "changed"
    out[0].gold["arguments"]["value"] = "changed"
    out[0].meta["row"] = -1
    assert [c.to_dict() for c in cases] == snapshot


def test_bad_cases_raise() -> None:
    pool = [fn(f"d{k}") for k in range(20)]
    no_gold = Case(id="x", query="q", functions=[fn("a")])
    with pytest.raises(ValueError, match="no gold"):
        build_registry_benchmark([no_gold], pool=pool)
    missing = Case(id="y", query="q", functions=[fn("a")], gold={"name": "b"})
    with pytest.raises(ValueError, match="'b' is not among"):
        build_registry_benchmark([missing], pool=pool)
    ok = Case(id="z", query="q", functions=[fn("a")], gold={"name": "a"})
    with pytest.raises(ValueError, match="positive"):
        build_registry_benchmark([ok], pool=pool, scales=(0, 5))


WEATHER_FORECAST = fn(
    "get_weather_forecast", "Get the weather forecast for a location", ("location", "days")
)
SIMILAR_POOL = [
    fn("translate_text", "Translate text into another language", ("text", "target_language")),
    fn("calculate_tip", "Calculate the tip for a bill", ("bill_amount", "tip_percentage")),
    fn("get_weather_history", "Get past weather records for a location", ("location", "date")),
    fn("send_email", "Send an email to a recipient", ("recipient", "subject", "body")),
    fn("get_current_weather", "Get the current weather in a location", ("location",)),
    fn("play_music", "Play a song by name", ("song",)),
    fn("convert_currency", "Convert an amount between currencies", ("amount", "from", "to")),
    fn("get_weather_forecast", "A second spec under the gold name", ("place",)),
]


def test_similar_picks_weather_functions_first() -> None:
    case = Case(
        id="w",
        query="Will it rain in Porto this week?",
        functions=[WEATHER_FORECAST, SIMILAR_POOL[0]],
        gold={"name": "get_weather_forecast", "arguments": {"location": "Porto", "days": 7}},
    )
    out = build_registry_benchmark(
        [case],
        pool=SIMILAR_POOL,
        scales=(3, 7),
        distractors="similar",
        gold_position="first",
    )
    s3, s7 = out
    assert names(s3)[0] == "get_weather_forecast"
    assert set(names(s3)[1:]) == {"get_weather_history", "get_current_weather"}
    assert s7.functions[:3] == s3.functions
    non_weather = {
        "calculate_tip",
        "convert_currency",
        "play_music",
        "send_email",
        "translate_text",
    }
    assert len(set(names(s7)[3:])) == 4 and set(names(s7)[3:]) <= non_weather
    assert names(s7).count("get_weather_forecast") == 1
    assert s7.functions[0] is not WEATHER_FORECAST and s7.functions[0] == WEATHER_FORECAST
    assert all(c.meta["distractors"] == "similar" for c in out)


def test_similar_ties_follow_pool_order() -> None:
    gold = fn("get_weather_forecast", "Weather forecast", ("location",))
    twin_a = fn("forecast_weather_get", "Weather forecast", ("location",))
    twin_b = fn("weather_forecast_get", "Weather forecast", ("location",))
    far = fn("play_music", "Play a song", ("song",))
    # the twins have the same token set as the gold, so they tie
    assert sorted(function_text(twin_a).split()) == sorted(function_text(twin_b).split())
    case = Case(id="t", query="q", functions=[gold], gold={"name": "get_weather_forecast"})
    for pool in ([far, twin_a, twin_b], [far, twin_b, twin_a]):
        out = build_registry_benchmark(
            [case], pool=pool, scales=(3,), distractors="similar", gold_position="first"
        )
        assert names(out[0]) == ["get_weather_forecast", pool[1]["name"], pool[2]["name"]]


def test_function_text() -> None:
    assert function_text(fn("get_current_weather", "Now", ("location", "unit_system"))) == (
        "get current weather Now location unit system"
    )
    assert function_text({"name": "bare"}) == "bare"


GLAIVE = Path(__file__).resolve().parents[1].parent / "shared" / "external" / "glaive"


@pytest.mark.skipif(not GLAIVE.is_dir(), reason="shared/external/glaive absent")
def test_a_build_too_big_for_the_file_says_what_to_ask_for(tmp_path: Path) -> None:
    """Issue 45: ``bench build`` on the shipped 5-row Glaive file failed without saying that
    ``--n 3`` (and scales of at most 3) would work; each error now names it, and doing what it
    says builds the cases."""
    import subprocess

    source = f"glaive:{GLAIVE / 'chat_data.jsonl'}"
    out = str(tmp_path / "g.jsonl")

    def build(*extra: str) -> subprocess.CompletedProcess[str]:
        cmd = ["callscope", "bench", "build", "--source", source, "-o", out, *extra]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    too_many = build()
    assert too_many.returncode == 2
    assert "yields only 3" in too_many.stderr and "ask for at most 3 (--n 3)" in too_many.stderr
    too_big = build("--n", "3")
    assert too_big.returncode == 2
    assert "pick scales of at most 3 (--scales)" in too_big.stderr
    done = build("--n", "3", "--scales", "3")
    assert done.returncode == 0, done.stderr
    assert "wrote 3 cases (3 queries × scales 3)" in done.stdout + done.stderr
