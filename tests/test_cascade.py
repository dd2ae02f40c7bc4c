"""Independent tests of the SAAG cascade (callscope.saag.cascade.diagnose) against the spec.

Expected values are derived by hand; where a value depends on WRatio / partial_ratio it is
computed here with rapidfuzz directly (never through callscope).
"""

from __future__ import annotations

from typing import Any

import pytest
from rapidfuzz import fuzz

from callscope.records import Diagnosis
from callscope.saag import grounding as g
from callscope.saag.cascade import diagnose as _diagnose
from callscope.saag.messages import DRIFTED, MISSING, NUMERIC, SPURIOUS, correction_message
from callscope.types import ToolCall


def diagnose(*args: Any, **kwargs: Any) -> Diagnosis:
    """The cascade in the paper's own (lexical) grounding: this file pins the paper's
    definitions (the registry-aware default is pinned in tests/test_groundings.py)."""
    return _diagnose(*args, grounding="lexical", **kwargs)


def fn(name: str, props: list[str], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{name} tool",
        "parameters": {
            "type": "object",
            "properties": {p: {"type": "string"} for p in props},
            "required": list(required or []),
        },
    }


# The SAAG paper's Figure 5 registry (one relevant function and four distractors).
REGISTRY = [
    fn("get_definition", ["word"], ["word"]),
    fn("generate_qr_code", ["text", "size"], ["text"]),
    fn(
        "convert_temperature",
        ["temperature", "from_unit", "to_unit"],
        ["temperature", "from_unit", "to_unit"],
    ),
    fn(
        "calculate_mortgage",
        ["loan_amount", "interest_rate", "loan_term"],
        ["loan_amount", "interest_rate", "loan_term"],
    ),
    fn("calculate_tip", ["bill_amount", "tip_percentage"], ["bill_amount", "tip_percentage"]),
]
TIP_Q = "What is the tip for a bill of $84.50 if I want to leave 15 percent?"
LATER_STAGE_1 = ("rpr", "pds", "spr", "avem", "qslo", "vhr")
LATER_STAGE_2 = ("avem", "qslo", "vhr")


def wr(a: str, b: str) -> float:
    return fuzz.WRatio(a, b) / 100.0


def pr(v: str, q: str) -> float:
    return fuzz.partial_ratio(v.lower(), q.lower()) / 100.0


def assert_nulls(d: Diagnosis, keys: tuple[str, ...]) -> None:
    for k in keys:
        assert getattr(d, k) is None, k


# --------------------------------------------------------------------------- Figure 1 story


def test_figure1_attempt1_hallucinated_name() -> None:
    d = diagnose(ToolCall("compute_tip", {"bill": 84.5, "percent": 15}), REGISTRY, TIP_Q)
    # trigrams of "compute_tip": com omp mpu put ute te_ e_t _ti tip. Registry names sharing
    # one: calculate_tip (te_, e_t, _ti, tip), generate_qr_code (te_), calculate_mortgage
    # (te_); not get_definition, not convert_temperature. Jaccard of single distinct tokens = 0.
    candidates = ["calculate_tip", "generate_qr_code", "calculate_mortgage"]
    scores = {c: 0.6 * wr("compute_tip", c) + 0.4 * 0.0 for c in candidates}
    assert max(scores, key=scores.__getitem__) == "calculate_tip"
    assert d.stage == 1
    assert d.fnem == 0
    assert d.ncs == pytest.approx(scores["calculate_tip"])
    assert d.ncs == pytest.approx(0.4)  # WRatio("compute_tip", "calculate_tip") = 66.67
    assert d.nearest == "calculate_tip"
    assert_nulls(d, LATER_STAGE_1)
    assert d.missing == d.drifted == d.spurious == []
    msg = correction_message(d)
    assert msg is not None
    assert '"compute_tip"' in msg and "calculate_tip" in msg


def test_figure1_attempt2_drifted_and_spurious_parameters() -> None:
    call = ToolCall("calculate_tip", {"bill_amt": 84.5, "tip_percentage": 15, "currency": "USD"})
    d = diagnose(call, REGISTRY, TIP_Q)
    a_all = ["bill_amount", "tip_percentage"]
    pds_bill = max(wr("bill_amt", a) for a in a_all)  # 0.842 (bill_amount)
    pds_cur = max(wr("currency", a) for a in a_all)  # 0.36 (tip_percentage)
    assert pds_bill >= 0.8 > pds_cur
    assert d.stage == 2
    assert d.fnem == 1
    assert d.ncs is None and d.nearest is None
    assert d.rpr == pytest.approx(0.5)
    assert d.missing == ["bill_amount"]
    assert d.drifted == ["bill_amt"]
    assert d.spurious == ["currency"]
    assert d.pds == pytest.approx((pds_bill + pds_cur) / 2)
    assert d.spr == pytest.approx(1 / 3)
    assert_nulls(d, LATER_STAGE_2)
    assert correction_message(d) == f"{MISSING} {SPURIOUS} {DRIFTED}"


def test_figure1_attempt3_numeric_hallucination() -> None:
    d = diagnose(
        ToolCall("calculate_tip", {"bill_amount": 85, "tip_percentage": 15}), REGISTRY, TIP_Q
    )
    assert d.stage == 3
    assert (d.fnem, d.rpr, d.pds, d.spr) == (1, 1.0, None, 0.0)
    assert d.avem == pytest.approx(0.5)  # 15 is in Q, 85 is not (Q has 84.50)
    assert d.qslo is None  # no string arguments
    assert d.vhr == pytest.approx(0.5)  # h = [1, 0]
    assert d.numeric == ["bill_amount"]
    assert d.hard == d.soft == []
    assert correction_message(d) == NUMERIC.format(params="bill_amount")


def test_figure1_attempt4_grounded_call_passes() -> None:
    d = diagnose(
        ToolCall("calculate_tip", {"bill_amount": 84.5, "tip_percentage": 15}), REGISTRY, TIP_Q
    )
    assert d.stage == 0
    assert d.passed
    assert (d.fnem, d.ncs, d.nearest) == (1, None, None)
    assert (d.rpr, d.pds, d.spr) == (1.0, None, 0.0)
    assert (d.avem, d.qslo, d.vhr) == (1.0, None, 0.0)
    assert correction_message(d) is None


# --------------------------------------------------------------------------- stage 1


@pytest.mark.parametrize("call", [None, ToolCall("", {})])
def test_no_name_is_fnem_minus_one_with_all_metrics_null(call: ToolCall | None) -> None:
    d = diagnose(call, REGISTRY, TIP_Q)
    assert (d.stage, d.fnem, d.ncs, d.nearest) == (1, -1, None, None)
    assert_nulls(d, LATER_STAGE_1)


def test_fnem_is_case_sensitive() -> None:
    d = diagnose(ToolCall("Calculate_Tip", {}), REGISTRY, TIP_Q)
    assert d.fnem == 0
    assert d.nearest == "calculate_tip"  # shares trigrams once lower-cased


def test_ncs_zero_without_shared_trigram_even_if_wratio_is_high() -> None:
    # xyz_abc: xyz yz_ z_a _ab abc ; xy_zab: xy_ y_z _za zab -> nothing shared
    assert wr("xyz_abc", "xy_zab") > 0.7
    d = diagnose(ToolCall("xyz_abc", {}), [fn("xy_zab", [])], "q")
    assert (d.stage, d.fnem, d.ncs, d.nearest) == (1, 0, 0.0, None)


def test_ncs_zero_for_names_shorter_than_three_characters() -> None:
    d = diagnose(ToolCall("ab", {}), [fn("ab_c", []), fn("abc", [])], "q")
    assert (d.fnem, d.ncs, d.nearest) == (0, 0.0, None)


def test_ncs_zero_with_empty_registry() -> None:
    d = diagnose(ToolCall("anything", {}), [], "q")
    assert (d.stage, d.fnem, d.ncs, d.nearest) == (1, 0, 0.0, None)


def test_ncs_jaccard_over_lowercased_whitespace_tokens() -> None:
    reg = [fn("get_weather", []), fn("get weather now", [])]
    d = diagnose(ToolCall("Get Weather", {}), reg, "q")
    s_underscore = 0.6 * wr("Get Weather", "get_weather") + 0.4 * 0.0
    s_spaced = 0.6 * wr("Get Weather", "get weather now") + 0.4 * (2 / 3)
    assert s_spaced > s_underscore  # the Jaccard term decides the argmax here
    assert d.ncs == pytest.approx(s_spaced)
    assert d.nearest == "get weather now"


# --------------------------------------------------------------------------- stage 2


def test_rpr_is_one_when_nothing_is_required() -> None:
    d = diagnose(ToolCall("search", {}), [fn("search", ["q", "limit"])], "find cats")
    assert (d.rpr, d.pds, d.spr) == (1.0, None, 0.0)
    assert d.stage == 0
    assert (d.avem, d.qslo, d.vhr) == (None, None, None)  # P empty


def test_pds_zero_when_schema_has_no_parameters() -> None:
    d = diagnose(ToolCall("ping", {"host": "a"}), [{"name": "ping"}], "ping a")
    assert d.stage == 2
    assert (d.rpr, d.pds, d.spr) == (1.0, 0.0, 1.0)
    assert d.spurious == ["host"] and d.drifted == []
    assert correction_message(d) == SPURIOUS


def test_drifted_becomes_spurious_when_nearest_is_already_present() -> None:
    call = ToolCall("calculate_tip", {"bill_amount": 84.5, "bill_amt": 84.5, "tip_percentage": 15})
    d = diagnose(call, REGISTRY, TIP_Q)
    assert d.stage == 2
    assert d.drifted == [] and d.spurious == ["bill_amt"]
    assert d.rpr == 1.0
    assert d.pds == pytest.approx(wr("bill_amt", "bill_amount"))
    assert d.spr == pytest.approx(1 / 3)


def test_drift_alone_stops_the_cascade_at_stage_2() -> None:
    reg = [fn("book_table", ["restaurant", "party_size", "time"], ["restaurant"])]
    q = "book a table at Luigi's for 4 people"
    d = diagnose(ToolCall("book_table", {"restaurant": "Luigi", "party_sz": 4}), reg, q)
    pds = max(wr("party_sz", a) for a in ["restaurant", "party_size", "time"])
    assert pds >= 0.8
    assert (d.stage, d.rpr, d.spr) == (2, 1.0, 0.0)  # formally passes, drift still stops
    assert d.drifted == ["party_sz"] and d.spurious == [] and d.missing == []
    assert d.pds == pytest.approx(pds)
    assert_nulls(d, LATER_STAGE_2)
    assert correction_message(d) == DRIFTED


def test_spr_zero_when_p_is_empty() -> None:
    d = diagnose(ToolCall("get_definition", {}), REGISTRY, "define serendipity")
    assert (d.stage, d.rpr, d.pds, d.spr) == (2, 0.0, None, 0.0)
    assert d.missing == ["word"]
    assert correction_message(d) == MISSING


# --------------------------------------------------------------------------- stage 3 helpers


ONE = [fn("f", ["v"])]


def one(value: Any, query: str) -> Diagnosis:
    d = diagnose(ToolCall("f", {"v": value}), ONE, query)
    assert d.fnem == 1 and d.rpr == 1.0 and d.spr == 0.0  # reaches stage 3
    return d


def em(value: Any, query: str) -> bool:
    d = one(value, query)
    assert d.avem in (0.0, 1.0)
    assert g.exact_match(value, query) is (d.avem == 1.0)
    return d.avem == 1.0


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("query", "value", "expected"),
    [
        ("The bill was 84.50 dollars", 84.5, True),
        ("The bill was 84.50 dollars", 84.50, True),
        ("The bill was 84.50 dollars", 84, False),
        ("The bill was 84.50 dollars", 50, False),
        ("a 1,000 dollar loan", 1000, True),
        ("a 1,000 dollar loan", 1, False),
        ("a 1,000 dollar loan", 0, False),
        ("a loan of 1,000,000.25", 1000000.25, True),
        ("it is -3 degrees", -3, True),
        ("it is -3 degrees", 3, False),
        ("it was (-2) today", -2, True),
        ("add .5 cups", 0.5, True),
        ("final score 5-3", -3, False),
        ("final score 5-3", 3, True),
        ("final score 5-3", 5, True),
        ("order 1000000 units", 1000000.0005, True),  # |diff| = 5e-4 <= 1e-9 * 1e6
        ("order 1000000 units", 1000000.002, False),  # |diff| = 2e-3 > 1e-3
        ("order 1000000 units", 1000000, True),
        ("order 1000000 units", 1e6, True),
        ("total 0.3", 0.1 + 0.2, True),
    ],
)
def test_number_exact_match(query: str, value: float, expected: bool) -> None:
    assert em(value, query) is expected


def test_regression_int_values_get_no_relative_tolerance() -> None:
    """Regression (found in review, fixed): spec says numbers equal within 1e-9 relative; two ints are compared
    exactly, so 10**12 vs token 10**12 + 1 (relative diff 1e-12) fails while the same
    value as a float matches."""
    assert em(1000000000000.0, "id 1000000000001")
    assert em(1000000000000, "id 1000000000001")


@pytest.mark.parametrize("value", [float("inf"), float("-inf")])
def test_regression_infinite_number_matches_every_number_token(value: float) -> None:
    """Regression (found in review, fixed): inf passes `abs(inf - x) <= 1e-9 * inf`, so a value of 1e400 (which
    JSON and Python both read as inf) counts as grounded in any query with a number."""
    assert not em(value, "The bill was 84.50 dollars")


def test_number_wrong_with_digit_in_query_is_h_one() -> None:
    d = one(7, "buy 5 apples")
    assert (d.stage, d.avem, d.qslo, d.vhr) == (3, 0.0, None, 1.0)
    assert d.numeric == ["v"]


def test_number_assumed_when_query_has_no_digit() -> None:
    d = one(5, "buy five apples")
    assert (d.stage, d.avem, d.qslo, d.vhr) == (0, 0.0, None, None)


# --------------------------------------------------------------------------- strings


@pytest.mark.parametrize(
    ("query", "value", "expected"),
    [
        ("my cat, Tom, is ill", "cat", True),
        ("please concatenate the files", "cat", False),
        ("cats are great", "cat", False),
        ("Fly to PARIS.", "  Paris ", True),
        ("I live in New York City", "new york", True),
        ("I live in New York City", "york c", False),
        ("send it to bob@example.com now", "bob@example.com", True),
        ("anything at all", "", False),
        ("anything at all", "   ", False),
        ("café au lait", "café", True),
        ("cafés", "café", False),
    ],
)
def test_string_exact_match_at_word_boundaries(query: str, value: str, expected: bool) -> None:
    assert em(value, query) is expected


def test_substring_without_boundary_is_not_em_but_partial_ratio_is_100() -> None:
    q = "please concatenate the files"
    d = one("cat", q)
    assert pr("cat", q) == 1.0
    # h = 1 - partial_ratio/100 = 0, so stage 3 passes even though AVEM = 0
    assert (d.stage, d.avem, d.qslo, d.vhr) == (0, 0.0, 1.0, 0.0)


def test_empty_string_is_hard_drift() -> None:
    q = "anything at all"
    d = one("", q)
    assert pr("", q) == 0.0
    assert (d.stage, d.avem, d.qslo, d.vhr) == (3, 0.0, 0.0, 1.0)
    assert d.hard == ["v"]


def test_soft_drift_at_partial_ratio_60_and_hard_below() -> None:
    q = "book a table at luigi's for 4 people at 7pm"
    assert pr("7:00 pm", q) == pytest.approx(0.60)  # boundary: not < 60 -> soft
    d = one("7:00 pm", q)
    assert (d.stage, d.soft, d.hard) == (3, ["v"], [])
    assert d.vhr == pytest.approx(1 - pr("7:00 pm", q))
    assert pr("Luigi Pizzeria", q) < 0.6
    d = one("Luigi Pizzeria", q)
    assert (d.stage, d.soft, d.hard) == (3, [], ["v"])


# --------------------------------------------------------------------------- bool/null/containers


@pytest.mark.parametrize("value", [True, False, None, [], {}, [True, None, []], {"a": None}])
def test_assumed_values_never_match_and_are_excluded(value: Any) -> None:
    d = one(value, "true false null none 1 2 [] {}")
    assert (d.stage, d.avem, d.qslo, d.vhr) == (0, 0.0, None, None)


@pytest.mark.parametrize(
    ("value", "query", "expected"),
    [
        (["Paris", "Rome"], "Paris and Rome", True),
        (["Paris", "Lyon"], "Paris and Rome", False),
        ({"city": "Paris", "nights": 3}, "3 nights in Paris", True),
        ({"city": "Paris", "nights": 4}, "3 nights in Paris", False),
        ([["Paris"], {"x": "Rome", "y": [2]}], "Paris, Rome, 2 people", True),
        (["Paris", True], "Paris", False),
        ([[]], "anything", False),
    ],
)
def test_container_exact_match(value: Any, query: str, expected: bool) -> None:
    assert em(value, query) is expected


def test_container_h_is_max_over_non_assumed_leaves() -> None:
    d = one(["Paris", True, None, []], "Paris")  # only "Paris" counts, h = 0
    assert (d.stage, d.avem, d.qslo, d.vhr) == (0, 0.0, None, 0.0)
    q = "Paris trip"
    d = one(["Paris", ["Lyon"]], q)
    assert d.vhr == pytest.approx(1 - pr("Lyon", q))
    assert d.qslo is None  # a list is not a top-level string
    assert d.stage == 3
    assert d.hard == ["v"]  # worst leaf "Lyon": partial_ratio 25 < 60


def test_container_of_numbers_without_digit_in_query_is_assumed() -> None:
    d = one([1, 2], "one and two")
    assert (d.stage, d.avem, d.vhr) == (0, 0.0, None)


def test_container_worst_leaf_class_numeric() -> None:
    d = one({"city": "Paris", "nights": 4}, "3 nights in Paris")
    assert (d.stage, d.vhr, d.numeric, d.hard, d.soft) == (3, 1.0, ["v"], [], [])


# --------------------------------------------------------------------------- mixed arguments


def test_qslo_only_over_top_level_non_em_strings_and_vhr_mean() -> None:
    q = "Paris, 3 nights"
    reg = [fn("plan", ["a", "b", "c", "d", "e"])]
    args = {"a": "Paris", "b": "Lyon", "c": ["Rome"], "d": 7, "e": True}
    d = diagnose(ToolCall("plan", args), reg, q)
    h = [0.0, 1 - pr("Lyon", q), 1 - pr("Rome", q), 1.0]  # e is assumed
    assert d.stage == 3
    assert d.avem == pytest.approx(1 / 5)
    assert d.qslo == pytest.approx(pr("Lyon", q))
    assert d.vhr == pytest.approx(sum(h) / 4)
    assert pr("Lyon", q) < 0.6 and pr("Rome", q) < 0.6
    assert d.hard == ["b", "c"] and d.numeric == ["d"] and d.soft == []


def test_stage_3_pass_with_strings_and_numbers() -> None:
    q = "Convert 100 degrees from Celsius to Fahrenheit"
    call = ToolCall(
        "convert_temperature", {"temperature": 100, "from_unit": "celsius", "to_unit": "Fahrenheit"}
    )
    d = diagnose(call, REGISTRY, q)
    assert (d.stage, d.avem, d.qslo, d.vhr) == (0, 1.0, None, 0.0)


def test_diagnosis_to_dict_has_the_metric_keys() -> None:
    d = diagnose(None, REGISTRY, TIP_Q).to_dict()
    for k in (
        "stage",
        "fnem",
        "ncs",
        "nearest",
        "rpr",
        "pds",
        "spr",
        "avem",
        "qslo",
        "vhr",
        "missing",
        "drifted",
        "spurious",
    ):
        assert k in d
