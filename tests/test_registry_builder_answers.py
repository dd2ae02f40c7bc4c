"""Registry scales for answers of several calls or none (issue 28): every gold function kept
(multi-call), the case's own functions plus distractors (no-call), every own function kept
(any call right); nesting and determinism as for one call."""

from __future__ import annotations

import pytest

from callscope.benchmarks.registry_builder import build_registry_benchmark, kept_functions
from callscope.types import Case


def fn(name: str) -> dict:
    return {
        "name": name,
        "description": f"Does {name}",
        "parameters": {"type": "object", "properties": {"v": {"type": "string"}}},
    }


POOL = [fn(f"pool_{i}") for i in range(20)]


def names(case: Case) -> list[str]:
    return [f["name"] for f in case.functions]


def multi_call_case() -> Case:
    # gold names a, b, a: two distinct gold functions; c is the case's own non-gold function
    gold = [
        {"name": "a", "arguments": {"v": "1"}},
        {"name": "b", "arguments": {"v": "2"}},
        {"name": "a", "arguments": {"v": "3"}},
    ]
    return Case(id="m", query="q", functions=[fn("c"), fn("b"), fn("a")], gold=gold)


def test_kept_functions_by_gold_form() -> None:
    kept, rest = kept_functions(multi_call_case(), 5)
    assert [f["name"] for f in kept] == ["a", "b"] and rest == []  # gold order, distinct
    own = [fn(f"own_{i}") for i in range(7)]
    kept, rest = kept_functions(Case(id="n", query="q", functions=own, gold=[]), 5)
    assert [f["name"] for f in kept] == [f"own_{i}" for i in range(5)]
    assert [f["name"] for f in rest] == ["own_5", "own_6"]
    relevance = Case(id="r", query="q", functions=own[:3], gold=None, meta={"expects_call": True})
    kept, rest = kept_functions(relevance, 5)
    assert [f["name"] for f in kept] == ["own_0", "own_1", "own_2"] and rest == []
    too_many = Case(id="r6", query="q", functions=own[:6], gold=None, meta={"expects_call": True})
    with pytest.raises(ValueError, match="keeps 6 functions, more than the smallest scale 5"):
        kept_functions(too_many, 5)
    with pytest.raises(ValueError, match="no gold call"):
        kept_functions(Case(id="x", query="q", functions=own, gold=None), 5)
    undocumented = Case(id="u", query="q", functions=[fn("a")], gold=[{"name": "zz"}])
    with pytest.raises(ValueError, match="gold function 'zz' is not among"):
        kept_functions(undocumented, 5)


def test_multi_call_case_keeps_every_gold_function_and_nests() -> None:
    out = build_registry_benchmark([multi_call_case()], POOL, scales=(5, 10, 15), seed=1)
    by_scale = {c.scale: c for c in out}
    for scale, case in by_scale.items():
        got = names(case)
        assert len(got) == scale == len(set(got))
        pos = case.meta["gold_position"]
        assert got[pos : pos + 2] == ["a", "b"]  # the kept block, in gold order
        assert "c" not in got  # the non-gold own function is not kept (as for one call)
        assert case.gold == multi_call_case().gold
        assert case.meta["kept_functions"] == 2
        assert 0 <= pos <= 3  # drawn in [0, smallest - kept]
    five, ten, fifteen = (names(by_scale[s]) for s in (5, 10, 15))
    assert five == [n for n in ten if n in five] and set(five) < set(ten) < set(fifteen)
    again = build_registry_benchmark([multi_call_case()], POOL, scales=(5, 10, 15), seed=1)
    assert [c.to_dict() for c in again] == [c.to_dict() for c in out]


def test_no_call_case_keeps_own_functions_first() -> None:
    own = [fn(f"own_{i}") for i in range(7)]
    case = Case(id="n", query="q", functions=own, gold=[])
    out = build_registry_benchmark([case], POOL, scales=(5, 10, 15), gold_position="first")
    by_scale = {c.scale: names(c) for c in out}
    # S=5: the first five own functions; S=10: then own_5, own_6 and three distractors
    assert by_scale[5] == [f"own_{i}" for i in range(5)]
    assert by_scale[10][:7] == [f"own_{i}" for i in range(7)]
    assert all(n.startswith("pool_") for n in by_scale[10][7:])
    assert by_scale[15][:10] == by_scale[10] and len(set(by_scale[15])) == 15
    assert all(c.gold == [] and c.meta["kept_functions"] == 5 for c in out)


def test_no_call_case_without_functions_gets_distractors_only() -> None:
    case = Case(id="z", query="q", functions=[], gold=[])
    out = build_registry_benchmark([case], POOL, scales=(5,))
    (only,) = out
    assert len(names(only)) == 5 and all(n.startswith("pool_") for n in names(only))
    assert only.meta["kept_functions"] == 0 and 0 <= only.meta["gold_position"] <= 5


def test_pool_names_of_kept_functions_are_never_drawn() -> None:
    # the pool carries a spec under the gold names and under an own function's name
    pool = [fn("a"), fn("own_6"), *POOL[:13]]
    case = multi_call_case()
    own = Case(id="n", query="q", functions=[fn(f"own_{i}") for i in range(7)], gold=[])
    out = build_registry_benchmark([case, own], pool, scales=(5, 15), seed=3)
    for c in out:
        got = names(c)
        assert len(got) == len(set(got)) == c.scale
    with pytest.raises(ValueError, match="pool of 3 functions holds only 2 not named 'a', 'b'"):
        build_registry_benchmark([case], [fn("a"), fn("p"), fn("q")], scales=(5,))
