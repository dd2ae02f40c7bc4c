"""BFCL's single-turn suite beyond one call (issue 28): every category loads, and callscope's
answer verdicts agree with BFCL's own checkers, measured on the installed BFCL data.

Counts were measured with bfcl-eval 2026.3.23 (``benchmarks/bfcl_answer_agreement.py``
prints the tables); the hand-worked answers below were worked out from the data files and
BFCL's checker code (``parallel_function_checker_no_order``, ``relevance_file_runner``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callscope.parse import parse_output
from callscope.saag.answer import diagnose_answer, score_answer
from callscope.types import Case

HAS_BFCL = importlib.util.find_spec("bfcl_eval") is not None
pytestmark = pytest.mark.skipif(
    not HAS_BFCL, reason="pip install --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0"
)


@pytest.fixture(scope="module")
def all_cases():
    from callscope.benchmarks.bfcl.single import SINGLE_TURN_CATEGORIES, load_bfcl_detailed

    return load_bfcl_detailed(SINGLE_TURN_CATEGORIES)


@pytest.fixture(scope="module")
def by_id(all_cases) -> dict[str, Case]:
    return {c.id: c for c in all_cases.cases}


# --------------------------------------------------------------------------- loading


def test_every_single_turn_category_loads(all_cases) -> None:
    assert all_cases.loaded == {
        "simple_python": 400,
        "multiple": 200,
        "live_simple": 258,
        "live_multiple": 1053,
        "parallel": 200,
        "parallel_multiple": 200,
        "live_parallel": 16,
        "live_parallel_multiple": 24,
        "irrelevance": 240,
        "live_irrelevance": 884,
        "live_relevance": 16,
    }
    # nothing dropped; 3,491 = BFCL's 3,641 non-agentic single-turn cases less simple_java
    # (100) and simple_javascript (50), which BFCL grades as Java / JavaScript
    assert all(reasons == {} for reasons in all_cases.skipped.values())
    assert len(all_cases.cases) == 3491 == len({c.id for c in all_cases.cases})


def test_default_categories_are_the_single_call_load(all_cases) -> None:
    from callscope.benchmarks.bfcl.single import load_bfcl_detailed, load_bfcl_single_detailed

    new = load_bfcl_detailed()
    old = load_bfcl_single_detailed()
    assert [c.to_dict() for c in new.cases] == [c.to_dict() for c in old.cases]
    assert new.loaded == old.loaded


def test_gold_forms_per_category(by_id) -> None:
    case = by_id["parallel_0"]
    assert case.gold == [
        {
            "name": "spotify.play",
            "arguments": {"artist": "Taylor Swift", "duration": 20},
            "acceptable": {"artist": ["Taylor Swift"], "duration": [20]},
        },
        {
            "name": "spotify.play",
            "arguments": {"artist": "Maroon 5", "duration": 15},
            "acceptable": {"artist": ["Maroon 5"], "duration": [15]},
        },
    ]
    assert case.expects_call is True and case.meta["category"] == "parallel"
    # 'permeability' is not a parameter of calculate_voltage_difference: BFCL accepts only
    # its omission, so the gold call leaves it out (first acceptable would be 0.1)
    second = by_id["parallel_multiple_12"].gold[1]
    assert second["arguments"] == {"electric_field": 5.0, "distance": 3.0, "charge": 0.0}
    assert second["acceptable"]["permeability"] == ["", 0.1]
    irrelevant = by_id["irrelevance_0"]
    assert irrelevant.gold == [] and irrelevant.expects_call is False
    assert [f["name"] for f in irrelevant.functions] == ["determine_body_mass_index"]
    relevant = by_id["live_relevance_0-0-0"]
    assert relevant.gold is None and relevant.meta["expects_call"] is True
    assert len(relevant.functions) == 3


def test_unknown_category_names_the_choices() -> None:
    from callscope.benchmarks.bfcl.single import load_bfcl_detailed

    with pytest.raises(ValueError, match="choose from simple_python, multiple, .*live_relevance"):
        load_bfcl_detailed(["simple_java"])


def test_bench_build_categories(tmp_path: Path) -> None:
    from callscope.cli import app

    out = tmp_path / "cases.jsonl"
    res = CliRunner().invoke(
        app,
        ["bench", "build", "--categories", "parallel_multiple,live_irrelevance,live_relevance"]
        + ["--n", "30", "--seed", "2", "-o", str(out)],
    )
    assert res.exit_code == 0, res.output
    assert "1100 usable queries" in res.output  # 200 + 884 + 16
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 90
    for row in rows:
        got = [f["name"] for f in row["functions"]]
        assert len(got) == row["scale"] == len(set(got))
        for gold in row.get("gold") or []:
            assert gold["name"] in got
    bad = CliRunner().invoke(
        app, ["bench", "build", "--categories", "parallel,nope", "-o", str(out)]
    )
    assert bad.exit_code == 2 and "'nope' is not a BFCL single-turn category" in bad.output


# --------------------------------------------------------------------------- hand-worked answers


def test_two_calls_one_hallucinated_value(by_id) -> None:
    from callscope.benchmarks.bfcl.single import bfcl_answer_verdict

    case = by_id["parallel_0"]  # Taylor Swift for 20 minutes and Maroon 5 for 15
    text = (
        '[spotify.play(artist="Taylor Swift", duration=20), '
        'spotify.play(artist="Coldplay", duration=15)]'
    )
    parsed = parse_output(text)
    verdict = diagnose_answer(parsed, case.functions, case.query, expect_call=True)
    # the first call passes; "Coldplay" is nowhere in the request: stage 3 on 'artist'
    assert [c.diagnosis.stage for c in verdict.checked] == [0, 3]
    assert verdict.stage == 3 and not verdict.passed
    scores = score_answer(parsed.calls, case.gold, case.functions)
    # pairs (0, 0) right and (1, 1) with 1 of 2 arguments right: P = R = 3/4
    assert scores.pairs == ((0, 0), (1, 1)) and scores.correct == (True, False)
    assert (scores.arg_precision, scores.arg_recall, scores.name_f1) == (0.75, 0.75, 1.0)
    assert not scores.solved
    valid, error = bfcl_answer_verdict(case, parsed.calls)
    assert not valid and error.startswith("parallel_function_checker_no_order:cannot_find_match")


def test_calls_in_another_order(by_id) -> None:
    from callscope.benchmarks.bfcl.single import bfcl_answer_verdict

    case = by_id["parallel_0"]
    parsed = parse_output(
        '[spotify.play(artist="Maroon 5", duration=15), '
        'spotify.play(artist="Taylor Swift", duration=20)]'
    )
    scores = score_answer(parsed.calls, case.gold, case.functions)
    assert scores.solved and scores.pairs == ((0, 1), (1, 0))
    assert bfcl_answer_verdict(case, parsed.calls) == (True, None)


def test_bfcl_greedy_order_fails_an_answer_a_matching_exists_for(by_id) -> None:
    """parallel_178: gold call 0 accepts company "Microsoft" *or* "Apple" on 2022-01-01. In
    reverse order the answer is [Apple 02-01, Apple 01-01, MS 02-01, MS 01-01]: BFCL gives
    gold 0 the first passing call (Apple 01-01), gold 1 (MS 02-01) the next, and then gold 2
    (Apple 01-01) finds only Apple 02-01 and MS 01-01: rejected. The matching gold 0 <- MS
    01-01, gold 2 <- Apple 01-01 exists, and callscope's optimal assignment finds it."""
    from callscope.benchmarks.bfcl.answer_agreement import disagreement_reason, gold_answer
    from callscope.benchmarks.bfcl.single import bfcl_answer_verdict

    case = by_id["parallel_178"]
    answer = gold_answer(case)[::-1]
    assert [(c["arguments"]["company_name"], c["arguments"]["date"]) for c in answer] == [
        ("Apple", "2022-02-01"),
        ("Apple", "2022-01-01"),
        ("Microsoft", "2022-02-01"),
        ("Microsoft", "2022-01-01"),
    ]
    valid, error = bfcl_answer_verdict(case, answer)
    assert not valid and "index [0, 3] of model output for index 2" in error
    from callscope.benchmarks.bfcl.answer_agreement import callscope_answer_solved

    assert callscope_answer_solved(case, answer)
    assert disagreement_reason(case, answer, valid) == "bfcl_greedy_order"


def test_clean_abstention_on_an_irrelevance_case(by_id) -> None:
    from callscope.benchmarks.bfcl.relevance_agreement import (
        ABSTENTION_TEXT,
        bfcl_relevance_verdict,
        callscope_relevance_verdict,
    )

    case = by_id["irrelevance_0"]  # a triangle's area, only a BMI function offered
    parsed = parse_output(ABSTENTION_TEXT)
    verdict = diagnose_answer(parsed, case.functions, case.query, expect_call=False)
    assert verdict.no_call == "abstained" and verdict.passed and verdict.stage == 0
    scores = score_answer(parsed.calls, case.gold, case.functions, verdict.no_call)
    assert scores.solved and scores.bfcl_credit is True and scores.extra == 0
    assert callscope_relevance_verdict(case, ABSTENTION_TEXT) == ("abstained", True)
    assert bfcl_relevance_verdict(ABSTENTION_TEXT, "irrelevance") == (False, True)


def test_broken_call_on_an_irrelevance_case(by_id) -> None:
    """A call cut inside its arguments: BFCL's decoder fails, so its relevance checker
    credits the answer as no call; callscope counts a broken call, not solved."""
    from callscope.benchmarks.bfcl.relevance_agreement import (
        bfcl_relevance_verdict,
        callscope_relevance_verdict,
        relevance_answers,
    )

    case = by_id["irrelevance_0"]
    text = relevance_answers(case)["broken_call"]
    # the call text cut after half of its argument list "weight=1.5, height=1.5)" (11 of 23)
    assert text == "[determine_body_mass_index(weight=1.5,"
    parsed = parse_output(text)
    verdict = diagnose_answer(parsed, case.functions, case.query, expect_call=False)
    assert verdict.no_call == "broken" and not verdict.passed and verdict.stage == 1
    scores = score_answer(parsed.calls, case.gold, case.functions, verdict.no_call)
    assert not scores.solved and scores.bfcl_credit is True
    assert callscope_relevance_verdict(case, text) == ("broken", False)
    assert bfcl_relevance_verdict(text, "irrelevance") == (False, True)
    # a whole call is made: neither credits it; on live_relevance both do
    call = relevance_answers(case)["call"]
    assert call == "[determine_body_mass_index(weight=1.5, height=1.5)]"
    assert bfcl_relevance_verdict(call, "irrelevance") == (True, False)
    assert callscope_relevance_verdict(case, call) == ("calls", False)
    assert bfcl_relevance_verdict(call, "live_relevance") == (True, True)


# --------------------------------------------------------------------------- measured agreement


def test_parallel_agreement_counts(all_cases) -> None:
    from callscope.benchmarks.bfcl.answer_agreement import answer_agreement_report
    from callscope.benchmarks.bfcl.single import PARALLEL_CATEGORIES

    cases = [c for c in all_cases.cases if c.meta["category"] in PARALLEL_CATEGORIES]
    report = answer_agreement_report(cases)
    assert report["data_defects"] == []
    assert (report["total"], report["agree"], report["disagree"]) == (2536, 2535, 1)
    assert report["agree"] / report["total"] >= 0.999
    assert {
        k: (r["total"], r["bfcl_valid"], r["score_valid"]) for k, r in report["by_kind"].items()
    } == {
        "gold": (440, 440, 440),
        "call_dropped": (440, 0, 0),
        "call_duplicated": (440, 0, 0),
        "extra_call": (41, 0, 0),
        "value_changed": (439, 0, 0),
        "calls_reordered": (440, 439, 440),
        "values_swapped": (296, 118, 118),
    }
    assert report["skipped"] == {"extra_call": 399, "value_changed": 1, "values_swapped": 144}
    assert {c: r["cases"] for c, r in report["by_category"].items()} == {
        "parallel": 200,
        "parallel_multiple": 200,
        "live_parallel": 16,
        "live_parallel_multiple": 24,
    }
    (only,) = report["disagreements"]
    assert (only["id"], only["kind"], only["reason"]) == (
        "parallel_178",
        "calls_reordered",
        "bfcl_greedy_order",
    )
    assert (only["bfcl_valid"], only["score_valid"]) == (False, True)


def test_relevance_agreement_counts(all_cases) -> None:
    from callscope.benchmarks.bfcl.relevance_agreement import relevance_agreement_report

    cases = [
        c
        for c in all_cases.cases
        if c.meta["category"] in ("irrelevance", "live_irrelevance", "live_relevance")
    ]
    report = relevance_agreement_report(cases)
    tables = report["by_category"]
    for category, n, with_functions in (
        ("irrelevance", 240, 240),
        ("live_irrelevance", 884, 880),  # 4 entries offer no function
        ("live_relevance", 16, 16),
    ):
        t = tables[category]
        assert t["abstained"] == {
            "total": n, "not_decoded": n, "abstained": n, "not_decoded_agree": n
        }  # fmt: skip
        for kind in ("empty", "empty_list"):
            assert t[kind] == {"total": n, "decoded": n, "agree": n}
        for kind in ("call", "two_calls"):
            assert t[kind]["decoded"] == t[kind]["agree"] == with_functions
        # where BFCL cannot decode a broken call, callscope says broken
        assert t["broken_call"]["not_decoded"] == t["broken_call"]["broken"] == with_functions
        # BFCL's prompt decoder reads Python call syntax only; callscope reads the JSON call
        assert t["json_call"]["callscope_calls"] == with_functions
    # irrelevance: agreement wherever BFCL decodes (the unclosed call too: BFCL closes it)
    for category in ("irrelevance", "live_irrelevance"):
        assert sum(r.get("disagree", 0) for r in tables[category].values()) == 0
        assert tables[category]["broken_call"].get("not_decoded_agree", 0) == 0
    # live_relevance: BFCL appends the missing ']' of the unclosed call; callscope reads the
    # whole call inside the unclosed list too (issue 36: a cut-off list keeps its whole calls)
    assert tables["live_relevance"]["unclosed_call"] == {"total": 16, "decoded": 16, "agree": 16}
    assert tables["live_relevance"]["broken_call"]["not_decoded_agree"] == 16
    reasons: dict[tuple[str, str], int] = {}
    for d in report["disagreements"]:
        key = (d["category"], d["reason"].split(":")[0])
        reasons[key] = reasons.get(key, 0) + 1
    assert reasons == {
        ("irrelevance", "bfcl_credits_undecoded_text"): 240,
        ("irrelevance", "bfcl_prompt_decoder_reads_python_syntax_only"): 240,
        ("live_irrelevance", "bfcl_credits_undecoded_text"): 880,
        ("live_irrelevance", "bfcl_prompt_decoder_reads_python_syntax_only"): 880,
        ("live_relevance", "bfcl_prompt_decoder_reads_python_syntax_only"): 16,
    }
