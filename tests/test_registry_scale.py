"""Stage 1 at registry scale: the indexed NCS and spec lookup give exactly what the
straightforward definitions give (same floats, same argmax, first on ties)."""

from __future__ import annotations

import random

import pytest
from rapidfuzz import fuzz

from callscope.saag.cascade import diagnose, find_spec, nearest_candidate
from callscope.types import ToolCall


def reference_ncs(name: str, registry: list[str]) -> tuple[float, str | None]:
    """SAAG Eq. 2 scored name by name in registry order (the definition, no index):
    candidates share a lowercased trigram; 0.6 WRatio/100 + 0.4 Jaccard of lowercased
    whitespace tokens; the first strict maximum wins."""

    def grams(s: str) -> set[str]:
        s = s.lower()
        return {s[i : i + 3] for i in range(len(s) - 2)}

    def jaccard(a: str, b: str) -> float:
        ta, tb = set(a.lower().split()), set(b.lower().split())
        return len(ta & tb) / len(ta | tb) if ta | tb else 0.0

    g = grams(name)
    best, best_name = 0.0, None
    for cand in registry:
        if not g & grams(cand):
            continue
        score = 0.6 * fuzz.WRatio(name, cand) / 100.0 + 0.4 * jaccard(name, cand)
        if best_name is None or score > best:
            best, best_name = score, cand
    return best, best_name


def reference_find_spec(functions: list[dict], name: object) -> dict | None:
    for spec in functions:
        if spec.get("name") == name:
            return spec
    return None


PARTS = ["get", "set", "weather", "Weather", "stock", "price", "flight", "book", "tip", "a", "ab"]


def random_name(rng: random.Random) -> str:
    """Names that collide on purpose: shared parts, case variants, spaces, duplicates."""
    k = rng.randint(1, 3)
    sep = rng.choice(["_", "_", " ", "", "."])
    name = sep.join(rng.choice(PARTS) for _ in range(k))
    if rng.random() < 0.1:
        name = name.upper()
    if rng.random() < 0.05:
        name += "é"
    return name


def mutate(name: str, rng: random.Random) -> str:
    """A misspelling: drop, swap or insert a character, or change case."""
    if not name:
        return "xyz"
    i = rng.randrange(len(name))
    op = rng.randrange(4)
    if op == 0:
        return name[:i] + name[i + 1 :]
    if op == 1 and i + 1 < len(name):
        return name[:i] + name[i + 1] + name[i] + name[i + 2 :]
    if op == 2:
        return name[:i] + rng.choice("aeiou_ ") + name[i:]
    return name.swapcase()


@pytest.mark.parametrize("seed", range(6))
def test_indexed_ncs_equals_definition_on_random_registries(seed: int) -> None:
    rng = random.Random(seed)
    registry = [random_name(rng) for _ in range(rng.choice([0, 3, 40, 400]))]
    queries = [mutate(rng.choice(registry), rng) for _ in range(60)] if registry else []
    queries += [random_name(rng) for _ in range(20)] + ["ab", "", "zzzz", "GET weather"]
    ties = 0
    for q in queries:
        got = nearest_candidate(q, registry)
        want = reference_ncs(q, registry)
        assert got == want, q  # exact floats and the same argmax
        if want[1] is not None and registry.count(want[1]) > 1:
            ties += 1
    if len(registry) >= 40:
        assert ties > 0  # duplicate names present: the first-on-ties rule is exercised


def test_indexed_ncs_picks_first_of_equal_scores() -> None:
    # "get_weathr" vs "get_weather" and "get_weathers": WRatio 95.24 and 90.91; equal
    # names at positions 1 and 3 must give position 1 (the same string either way), and a
    # case variant scored equal must not win over the earlier name
    registry = ["get_weathers", "get_weather", "zzz", "get_weather", "GET_WEATHER"]
    assert nearest_candidate("get_weathr", registry) == reference_ncs("get_weathr", registry)
    assert nearest_candidate("get_weathr", registry)[1] == "get_weather"
    # identical scores for different names: first in registry order wins
    twins = ["abcx", "abcy"]
    assert fuzz.WRatio("abcz", "abcx") == fuzz.WRatio("abcz", "abcy")
    assert nearest_candidate("abcz", twins)[1] == "abcx"
    assert nearest_candidate("abcz", twins[::-1])[1] == "abcy"


def test_index_follows_appends_to_the_same_list() -> None:
    registry = ["book_flight"]
    assert nearest_candidate("get_weathr", registry) == reference_ncs("get_weathr", registry)
    registry.append("get_weather")  # same list object, new length: re-indexed
    assert nearest_candidate("get_weathr", registry)[1] == "get_weather"
    functions = [{"name": "a_fn"}]
    assert find_spec(functions, "b_fn") is None
    functions.append({"name": "b_fn"})
    assert find_spec(functions, "b_fn") == {"name": "b_fn"}


def test_find_spec_first_match_and_non_string_names() -> None:
    functions = [{"name": "f", "v": 1}, {"name": 5}, {"name": "f", "v": 2}, {"x": 1}]
    for name in ("f", "g", 5, None, "None"):
        assert find_spec(functions, name) is reference_find_spec(functions, name)
    assert find_spec(functions, "f") == {"name": "f", "v": 1}
    assert find_spec(tuple(functions), "f") is functions[0]
    assert find_spec(iter(functions), "f") is functions[0]  # any iterable still works


def test_diagnose_stage1_at_ten_thousand_functions_matches_definition() -> None:
    rng = random.Random(7)
    names = list(dict.fromkeys(f"{random_name(rng)}_{i}" for i in range(10_000)))
    functions = [{"name": n, "parameters": {"type": "object", "properties": {}}} for n in names]
    for q in [mutate(rng.choice(names), rng) for _ in range(15)] + ["weather"]:
        d = diagnose(ToolCall(q, {}), functions, "query")
        if q in names:
            assert (d.stage, d.fnem) == (0, 1)
            continue
        assert (d.stage, d.fnem) == (1, 0)
        assert (d.ncs, d.nearest) == reference_ncs(q, names)
    hit = diagnose(ToolCall(names[9_999], {}), functions, "query")
    assert (hit.stage, hit.fnem, hit.ncs) == (0, 1, None)
