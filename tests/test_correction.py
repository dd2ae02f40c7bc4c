"""The correction engine (:mod:`callscope.saag.correction`) on hand-worked verdict sequences:
which attempt is kept on a tie, each stop reason and the order they are checked in, the
feedback of each mode, answers of several calls and of none. No model, no parsing: every
diagnosis is written out by hand."""

from __future__ import annotations

from dataclasses import asdict, replace

import pytest

from callscope.records import Diagnosis
from callscope.saag.correction import (
    PASSED_DEPTH,
    AnswerVerdict,
    CheckedCall,
    Decision,
    Policy,
    answer_at,
    answer_rank,
    best_at,
    decide,
    feedback,
    repeats,
)
from callscope.saag.gated import GATED_DEFAULT
from callscope.saag.messages import (
    BINARY_FEEDBACK,
    HARD,
    KEEP_NAME,
    MISSING,
    NO_NAME,
    SOFT,
    UNREADABLE,
)
from callscope.types import ToolCall

NAME = "get_weather"


def answer(d: Diagnosis, **arguments: object) -> AnswerVerdict:
    """An answer of one call with the diagnosis ``d``."""
    call = ToolCall(NAME, dict(arguments))
    return AnswerVerdict(checked=(CheckedCall(call, d),), calls=(call,))


PASS = Diagnosis(stage=0, fnem=1, predicted=NAME)
#: stage 3, one hard value (rank (3, -1)); two answers with different values tie
HARD_1 = Diagnosis(stage=3, fnem=1, hard=["unit"], predicted=NAME)
#: stage 3, a soft drift only: the gate is closed
SOFT_1 = Diagnosis(stage=3, fnem=1, soft=["city"], predicted=NAME)
#: stage 2, one missing argument (rank (2, -1))
MISSING_1 = Diagnosis(stage=2, fnem=1, missing=["city"], predicted=NAME)
#: stage 1, no call could be read (rank (1, -1))
NO_CALL = Diagnosis(stage=1, fnem=-1)

GATED = Policy("gated", 15, GATED_DEFAULT, keep_best=True)
#: gated without the regression stop: the best is kept past a worse revision
GATED_GO_ON = Policy("gated", 15, replace(GATED_DEFAULT, stop_on_regression=False), True)
STRUCTURED = Policy("structured", 15)


def test_ranks_and_the_tie_between_attempts_1_and_3_keeps_attempt_3() -> None:
    a1, a2, a3 = answer(HARD_1, unit="kelvin"), answer(MISSING_1), answer(HARD_1, unit="rankine")
    assert [answer_rank(v) for v in (a1, a2, a3)] == [(3, -1), (2, -1), (3, -1)]
    assert answer_rank(answer(PASS)) == (PASSED_DEPTH, 0) and answer_rank(None) == (0, 0)
    history = [a1, a2, a3]
    # attempt 2 is worse than 1, attempt 3 ties with 1: the later one is kept (index 2)
    assert best_at(history) == 2
    assert answer_at(history, GATED_GO_ON) == 2
    assert answer_at(history, STRUCTURED) is None  # no keep-best: the answer is the last
    # with the regression stop on, attempt 2 had already ended the loop, answering attempt 1
    assert decide(history[:2], GATED) == Decision("regression")
    assert answer_at(history[:2], GATED) == 0


def test_a_regression_stops_only_the_gated_loop_that_asks_for_it() -> None:
    history = [answer(HARD_1, unit="kelvin"), answer(MISSING_1)]
    assert decide(history, GATED).stop == "regression"
    assert decide(history, GATED_GO_ON) == Decision(
        feedback=f"{MISSING} {KEEP_NAME.format(name=NAME)}"
    )
    assert decide(history, STRUCTURED) == Decision(feedback=MISSING)
    # a tie is not a regression
    tie = [answer(HARD_1, unit="kelvin"), answer(HARD_1, unit="rankine")]
    assert decide(tie, GATED).stop is None


def test_the_repeat_stop_waits_for_repeat_patience_revisions() -> None:
    same = answer(HARD_1, unit="kelvin")
    # patience 2: one repeat goes on, a second one stops; the answer is the latest of the tie
    assert decide([same, same], GATED).stop is None
    assert decide([same, same, same], GATED) == Decision("repeat")
    assert answer_at([same, same, same], GATED) == 2
    one = Policy("gated", 15, replace(GATED_DEFAULT, repeat_patience=1), keep_best=True)
    assert decide([same, same], one).stop == "repeat"
    never = Policy("gated", 15, replace(GATED_DEFAULT, repeat_patience=0), keep_best=True)
    assert decide([same] * 5, never).stop is None
    assert decide([same] * 5, STRUCTURED).stop is None  # the paper's modes never stop for it
    # a change between the repeats resets the count; a failed attempt is not an answer
    other = answer(HARD_1, unit="rankine")
    assert decide([same, other, same], GATED).stop is None
    assert repeats([1, 2, 2, 2], 2) and not repeats([2, 2], 2) and not repeats([2, 2], 0)


def test_the_gate_closes_on_a_soft_drift_only() -> None:
    soft = [answer(SOFT_1, city="San Francisco, CA")]
    assert decide(soft, GATED) == Decision("gate")
    assert answer_at(soft, GATED) == 0
    ungated = Policy("gated", 15, replace(GATED_DEFAULT, confident_only=False), keep_best=True)
    assert decide(soft, ungated).feedback == f"{SOFT.format(params='city')} " + KEEP_NAME.format(
        name=NAME
    )
    assert decide(soft, STRUCTURED).feedback == SOFT.format(params="city")


def test_the_budget_counts_every_attempt_and_comes_before_the_repeat_stop() -> None:
    same = answer(HARD_1, unit="kelvin")
    three = Policy("gated", 3, GATED_DEFAULT, keep_best=True)
    assert decide([same, same], three).stop is None
    assert decide([same, same, same], three).stop == "budget"  # also a repeat: budget first
    direct = Policy("structured", 1)
    assert decide([answer(MISSING_1)], direct).stop == "budget"


def test_an_attempt_without_an_answer_stops_with_the_best_answer_kept() -> None:
    history = [answer(HARD_1, unit="kelvin"), None]
    assert decide(history, GATED) == Decision("error")
    assert answer_at(history, GATED) == 0
    assert decide([None], GATED) == Decision("error") and answer_at([None], GATED) is None
    with pytest.raises(ValueError, match="at least one attempt"):
        decide([], GATED)


def test_a_pass_stops_and_is_the_answer() -> None:
    history = [answer(MISSING_1), answer(PASS, city="Paris")]
    assert decide(history, GATED) == Decision("passed")
    assert answer_at(history, GATED) == 1


def test_the_deadline_is_asked_only_when_nothing_else_stops() -> None:
    asked: list[int] = []

    def late() -> bool:
        asked.append(1)
        return True

    assert decide([answer(PASS)], GATED, out_of_time=late).stop == "passed" and not asked
    assert decide([answer(HARD_1, unit="k")], GATED, out_of_time=late).stop == "deadline"
    assert asked == [1]


def test_feedback_of_each_mode() -> None:
    hard = answer(HARD_1, unit="kelvin")
    assert feedback(hard, Policy("binary", 15)) == BINARY_FEEDBACK
    assert feedback(hard, STRUCTURED) == HARD.format(params="unit")
    assert feedback(hard, GATED) == f"{HARD.format(params='unit')} {KEEP_NAME.format(name=NAME)}"
    # no call read: the gated loop quotes the parser's reason, the paper's says no name
    cut = AnswerVerdict(checked=(CheckedCall(None, NO_CALL),), parse_error="cut off at 9")
    assert feedback(cut, GATED) == UNREADABLE.format(reason="cut off at 9")
    assert feedback(cut, STRUCTURED) == NO_NAME


def test_an_answer_of_several_calls_or_of_none() -> None:
    ok, bad = ToolCall(NAME, {"city": "Paris"}), ToolCall(NAME, {"unit": "celsius"})
    two = AnswerVerdict(
        checked=(CheckedCall(ok, PASS), CheckedCall(bad, MISSING_1)), calls=(ok, bad)
    )
    # the worst call sets the depth, flags add up, each failing call's message is labelled
    assert (two.depth, two.flagged, two.passed) == (2, 1, False)
    # issue 28 item 6: the correction also asks to keep the call that passed (this test
    # pinned the failing call's message alone before)
    assert feedback(two, STRUCTURED) == (
        f"Call 2 ({NAME}): {MISSING} Call 1 ({NAME}) passed: keep it in your answer."
    )
    # no call checked: it does not pass, ranks lowest, and is told no name was found
    none = AnswerVerdict()
    assert (none.passed, answer_rank(none)) == (False, (0, 0))
    assert feedback(none, GATED) == NO_NAME
    assert decide([answer(HARD_1, unit="kelvin"), none], GATED).stop == "regression"


def test_policy_needs_settings_exactly_for_gated_feedback() -> None:
    with pytest.raises(ValueError):
        Policy("gated", 3)
    with pytest.raises(ValueError):
        Policy("structured", 3, GATED_DEFAULT)


def test_several_calls_keep_the_passing_ones_and_rank_as_whole_answers() -> None:
    """Issue 28 item 6 on hand-written verdicts: the failing calls are named by position, the
    passing ones are to be kept (gated: exactly as they are), a call left out by the gate is
    neither corrected nor called right, and the best answer is a whole answer."""
    paris, berlin = ToolCall(NAME, {"city": "Paris"}), ToolCall(NAME, {"city": "Berlin"})
    kelvin, other = ToolCall(NAME, {"unit": "kelvin"}), ToolCall("get_time", {"city": "Rome"})
    three = AnswerVerdict(
        checked=(
            CheckedCall(paris, PASS),
            CheckedCall(berlin, SOFT_1),
            CheckedCall(kelvin, HARD_1),
            CheckedCall(other, replace(PASS, predicted="get_time")),
        ),
        calls=(paris, berlin, kelvin, other),
    )
    # rank: the worst call's depth (3), flags summed (soft 1 + hard 1)
    assert answer_rank(three) == (3, -2)
    assert feedback(three, STRUCTURED) == (
        f"Call 2 ({NAME}): {SOFT.format(params='city')} Call 3 ({NAME}): "
        f"{HARD.format(params='unit')} Call 1 ({NAME}) and Call 4 (get_time) passed: keep them "
        "in your answer."
    )
    # gated: the soft drift is not confident (call 2 left out of both sentences); call 3's
    # name is kept (it has no grounded argument to keep)
    assert feedback(three, GATED) == (
        f"Call 3 ({NAME}): {HARD.format(params='unit')} {KEEP_NAME.format(name=NAME)} "
        f"Call 1 ({NAME}) and Call 4 (get_time) passed: keep them exactly as they are."
    )
    nokeep = Policy("gated", 15, replace(GATED_DEFAULT, keep_right=False), keep_best=True)
    assert feedback(three, nokeep) == (
        f"Call 3 ({NAME}): {HARD.format(params='unit')} "
        f"Call 1 ({NAME}) and Call 4 (get_time) passed: keep them in your answer."
    )
    assert feedback(three, Policy("binary", 15)) == BINARY_FEEDBACK
    # only soft drifts fail: the gate is closed, nothing is sent (no keep sentence alone)
    soft_only = AnswerVerdict(
        checked=(CheckedCall(paris, PASS), CheckedCall(berlin, SOFT_1)), calls=(paris, berlin)
    )
    assert feedback(soft_only, GATED) is None and decide([soft_only], GATED).stop == "gate"
    # whole answers: [pass, hard] and [hard, pass] tie (3, -1): the later is kept; an answer
    # with both calls failing ranks below either, so a gated loop stops on it
    a1 = AnswerVerdict(
        checked=(CheckedCall(paris, PASS), CheckedCall(kelvin, HARD_1)), calls=(paris, kelvin)
    )
    a2 = AnswerVerdict(
        checked=(CheckedCall(kelvin, HARD_1), CheckedCall(paris, PASS)), calls=(kelvin, paris)
    )
    a3 = AnswerVerdict(
        checked=(CheckedCall(kelvin, HARD_1), CheckedCall(kelvin, HARD_1)), calls=(kelvin, kelvin)
    )
    assert [answer_rank(v) for v in (a1, a2, a3)] == [(3, -1), (3, -1), (3, -2)]
    assert decide([a1, a2], GATED).stop is None and best_at([a1, a2]) == 1
    assert decide([a1, a2, a3], GATED).stop == "regression"
    assert answer_at([a1, a2, a3], GATED) == 1
    # a passing answer of fewer calls outranks them: the cascade has no gold to miss a call by
    assert answer_rank(answer(PASS, city="Paris")) > answer_rank(a1)


def test_answers_without_a_call_rank_and_stop_by_what_they_are() -> None:
    """A clean abstention (no call expected) passes and ranks as a pass; a broken call, or
    prose where a call is expected, is a stage-1 failure of rank (1, -1)."""
    clean = AnswerVerdict(parse_error="no tool call found in output", no_call="abstained")
    empty = AnswerVerdict(parse_error="empty output", no_call="empty")
    broken = AnswerVerdict(
        checked=(CheckedCall(None, NO_CALL),), parse_error="cut off at 9", no_call="broken"
    )
    prose = AnswerVerdict(
        checked=(CheckedCall(None, NO_CALL),),
        parse_error="no tool call found in output",
        no_call="abstained",
    )
    for v in (clean, empty):
        assert (v.passed, v.stage, answer_rank(v)) == (True, 0, (PASSED_DEPTH, 0))
        assert decide([v], GATED) == decide([v], STRUCTURED) == Decision("passed")
    for v in (broken, prose):
        assert (v.passed, v.stage, answer_rank(v)) == (False, 1, (1, -1))
    assert feedback(broken, GATED) == UNREADABLE.format(reason="cut off at 9")
    assert feedback(broken, STRUCTURED) == feedback(prose, STRUCTURED) == NO_NAME
    # prose says nothing specific: the gated loop falls back to the paper's message
    assert feedback(prose, GATED) == NO_NAME
    # a call that fails, then an abstention: the abstention passes and is the answer
    assert decide([answer(HARD_1, unit="kelvin"), clean], GATED) == Decision("passed")
    assert answer_at([answer(HARD_1, unit="kelvin"), clean], GATED) == 1
    # a broken call after a stage-3 failure is a regression; after another broken call a tie
    assert decide([answer(HARD_1, unit="kelvin"), broken], GATED).stop == "regression"
    assert decide([broken, broken], GATED).stop is None


def test_a_diagnosis_as_data_is_every_field_copied() -> None:
    """``to_dict`` is what the store, the guard and every integration keep: each field,
    the lists and dicts fresh copies (a reader editing them leaves the verdict alone)."""
    d = Diagnosis(
        stage=3,
        fnem=1,
        rpr=1.0,
        avem=0.5,
        hard=["city"],
        soft=["unit"],
        drift_targets={"tz": "timezone"},
        grounded={"unit": "enum"},
        predicted="get_weather",
        grounding="registry",
    )
    out = d.to_dict()
    expected = asdict(d)
    del expected["ask"]  # the guard's ASK (issue 46) is written only when it is set
    assert out == expected and list(out) == list(expected)
    asked = Diagnosis(stage=2, fnem=1, ask=["unit"])
    assert asked.to_dict() == asdict(asked)
    out["hard"].append("date")
    out["grounded"]["date"] = "stated"
    assert d.hard == ["city"] and d.grounded == {"unit": "enum"}
    assert Diagnosis.from_dict(out).hard == ["city", "date"]
