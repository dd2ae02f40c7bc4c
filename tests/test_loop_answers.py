"""The correction loop over answers (issue 28 item 6), driven by scripted models: a correction
names each failing call by position and name and asks to keep the calls that passed (gated:
exactly as they are); the gated loop keeps its best whole answer; the gold (its calls, their
number) never changes a message; a no-call case (gold ``[]``); the runner, the experiment and
the exported rows with cases of several gold calls and no-call cases.

The expected messages are written out from the templates of :mod:`callscope.saag.messages`
(the SAAG paper's Table 4 texts, the gated mode's, issue 28's keep sentences); the verdicts of
the fixtures are checked first (``test_the_fixtures_fail_where_the_tests_say``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from scripted import Scripted

from callscope.models.base import Decoding
from callscope.parse import parse_output
from callscope.records import Outcome
from callscope.runs.experiment import Experiment, run_experiment
from callscope.runs.loop import first_attempt, run_loop
from callscope.runs.runner import run_cases
from callscope.saag.answer import diagnose_answer
from callscope.saag.gated import GATED_DEFAULT, GatedSettings
from callscope.saag.messages import (
    BINARY_FEEDBACK,
    HARD,
    KEEP_ARGS,
    KEEP_NAME,
    MISSING,
    NO_NAME,
    UNREADABLE,
)
from callscope.store.run_store import RunStore
from callscope.types import MODES, Case

WEATHER = {
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}
QUERY = "What is the weather in Paris and in London, in celsius?"
JOKE = "Tell me a joke about cats"


def call(**arguments: Any) -> dict[str, Any]:
    return {"name": "get_weather", "arguments": arguments}


def answer(*calls: dict[str, Any]) -> str:
    """The text of an answer: one call as a JSON object, several as a JSON list."""
    return json.dumps(calls[0] if len(calls) == 1 else list(calls))


PARIS = call(city="Paris", unit="celsius")
LONDON = call(city="London", unit="celsius")
#: stage 3: "kelvin" has no grounding in the query (a hard value); the city is stated
PARIS_K = call(city="Paris", unit="kelvin")
LONDON_K = call(city="London", unit="kelvin")
#: stage 2: the required city is missing
NO_CITY = call(unit="celsius")

TWO_OK = answer(PARIS, LONDON)
SECOND_HARD = answer(PARIS, LONDON_K)
FIRST_HARD = answer(PARIS_K, LONDON)
BOTH_HARD = answer(PARIS_K, LONDON_K)
FIRST_MISSING = answer(NO_CITY, LONDON)
PROSE = "Why did the cat sit on the laptop? To keep an eye on the mouse."
BROKEN = '{"name": "get_weather", "arguments": {"city": '

HARD_UNIT = HARD.format(params="unit")
NAME_KEPT = KEEP_NAME.format(name="get_weather")


def case(gold: Any = (PARIS, LONDON), cid: str = "p1", query: str = QUERY) -> Case:
    if isinstance(gold, tuple):
        gold = list(gold)
    return Case(id=cid, query=query, functions=[WEATHER], gold=gold, scale=5)


def run(
    script: list[Any],
    mode: str,
    c: Case | None = None,
    max_attempts: int = 5,
    gated: GatedSettings | None = None,
) -> tuple[Outcome, Scripted]:
    c = c or case()
    model = Scripted({c.id: script}, repeat_last=True, native=False)
    first = first_attempt(model, c, "prompt", Decoding())
    out = run_loop(
        model, c, mode, first=first, style="prompt", max_attempts=max_attempts, gated=gated
    )
    return out, model


def test_the_fixtures_fail_where_the_tests_say() -> None:
    def stages(text: str, query: str = QUERY, expect: bool = True) -> list[tuple[Any, ...]]:
        v = diagnose_answer(parse_output(text), [WEATHER], query, expect_call=expect)
        return [(c.diagnosis.stage, c.diagnosis.hard, c.diagnosis.missing) for c in v.checked]

    assert stages(TWO_OK) == [(0, [], []), (0, [], [])]
    assert stages(SECOND_HARD) == [(0, [], []), (3, ["unit"], [])]
    assert stages(FIRST_HARD) == [(3, ["unit"], []), (0, [], [])]
    assert stages(BOTH_HARD) == [(3, ["unit"], []), (3, ["unit"], [])]
    assert stages(FIRST_MISSING) == [(2, [], ["city"]), (0, [], [])]
    # on the joke request: prose is a clean abstention, a weather call has no grounded city
    assert stages(PROSE, JOKE, expect=False) == []
    assert stages(answer(call(city="Paris")), JOKE, expect=False) == [(3, ["city"], [])]
    assert stages(BROKEN, JOKE, expect=False) == [(1, [], [])]


# --------------------------------------------------------------------------- several calls


def test_a_failing_second_call_is_named_and_the_first_kept() -> None:
    out, model = run([SECOND_HARD, TWO_OK], "structured")
    expected = (
        f"Call 2 (get_weather): {HARD_UNIT} Call 1 (get_weather) passed: keep it in your answer."
    )
    assert out.attempts[0].feedback == expected
    # the feedback is the last user turn of the second request, after the model's own answer
    assert model.messages[1][-2] == {"role": "assistant", "content": SECOND_HARD}
    assert model.messages[1][-1] == {"role": "user", "content": expected}
    assert (out.stop, out.solved_at, len(out.attempts)) == ("passed", 2, 2)
    row = out.export_row("m", 5)
    assert (row["calls_made"], row["calls_expected"], row["answer_solved"]) == (2, 2, True)
    assert row["matched"] == [[0, 0], [1, 1]] and row["stage"] == 0


def test_the_first_call_failing_keeps_the_second_and_binary_still_says_no() -> None:
    out, _ = run([FIRST_MISSING, TWO_OK], "structured")
    assert out.attempts[0].feedback == (
        f"Call 1 (get_weather): {MISSING} Call 2 (get_weather) passed: keep it in your answer."
    )
    # every call failing: each named, nothing to keep
    out, _ = run([BOTH_HARD, TWO_OK], "structured")
    assert out.attempts[0].feedback == (
        f"Call 1 (get_weather): {HARD_UNIT} Call 2 (get_weather): {HARD_UNIT}"
    )
    # the paper's binary mode says only "No", whatever the answer
    out, _ = run([SECOND_HARD, TWO_OK], "binary")
    assert out.attempts[0].feedback == BINARY_FEEDBACK == "No"


def test_gated_keeps_the_passing_call_exactly_as_it_is() -> None:
    out, model = run([SECOND_HARD, TWO_OK], "gated")
    expected = (
        f"Call 2 (get_weather): {HARD_UNIT} {NAME_KEPT} "
        f"{KEEP_ARGS.format(args='city = ' + json.dumps('London'))} "
        "Call 1 (get_weather) passed: keep it exactly as it is."
    )
    assert out.attempts[0].feedback == expected
    assert model.messages[1][-1]["content"] == expected
    assert out.stop == "passed" and out.answer_at == 2
    # the "keep what is right" ablation: the failing call's fix alone, and the plain keep
    out, _ = run([SECOND_HARD, TWO_OK], "gated-nokeep")
    assert out.attempts[0].feedback == (
        f"Call 2 (get_weather): {HARD_UNIT} Call 1 (get_weather) passed: keep it in your answer."
    )


def test_gated_answers_with_its_best_whole_answer() -> None:
    # attempt ranks (worst call's depth, -flags over the answer): 1 (3, -1), 2 (3, -1),
    # 3 (3, -2), 4 (2, -1). Each of attempts 1 and 2 has one passing call, in another
    # position: no attempt passes as a whole, and calls are never mixed across attempts.
    script = [SECOND_HARD, FIRST_HARD, BOTH_HARD, FIRST_MISSING]
    out, _ = run(script, "gated")  # the regression stop: attempt 3 ranks below 2
    assert (out.stop, len(out.attempts), out.answer_at) == ("regression", 3, 2)
    go_on = replace(GATED_DEFAULT, stop_on_regression=False)
    out, _ = run(script, "gated", max_attempts=4, gated=go_on)
    assert (out.stop, len(out.attempts), out.answer_at) == ("budget", 4, 2)
    row = out.final_row
    assert [c["stage"] for c in row["calls"]] == [3, 0]  # attempt 2's answer, whole
    assert (row["stage"], row["answer_solved"], row["solved"]) == (3, False, False)
    assert out.attempts[1].feedback == (
        f"Call 1 (get_weather): {HARD_UNIT} {NAME_KEPT} "
        f"{KEEP_ARGS.format(args='city = ' + json.dumps('Paris'))} "
        "Call 2 (get_weather) passed: keep it exactly as it is."
    )
    # without best-so-far the answer is the last attempt
    out, _ = run(script, "gated-nobest", max_attempts=4)
    assert (out.stop, out.answer_at, out.final_row["stage"]) == ("budget", None, 2)


def test_the_gold_never_changes_a_message() -> None:
    """Golds of 0 (none given), 1, 2 and 3 calls, right and wrong: the same requests, feedback,
    stops and answers; only the extrinsic metrics, computed afterwards, differ."""
    golds: list[Any] = [
        None,
        LONDON,
        [LONDON],
        [PARIS, LONDON],
        [LONDON, PARIS, call(city="Rome", unit="celsius")],
        [{"name": "get_forecast", "arguments": {"days": 3}}] * 2,
    ]
    scripts = {
        "several": [BOTH_HARD, FIRST_MISSING, SECOND_HARD, TWO_OK],
        "one": [answer(LONDON_K), answer(NO_CITY), answer(LONDON)],
        "none": [PROSE, BROKEN, SECOND_HARD, TWO_OK],
    }
    for name, script in scripts.items():
        for mode in ("binary", "structured", "gated", "gated-nobest"):
            outs = [run(script, mode, case(g, cid=name))[0] for g in golds]
            seen = {
                json.dumps(
                    [
                        [(a.messages, a.feedback) for a in o.attempts],
                        o.stop,
                        o.answer_at,
                    ]
                )
                for o in outs
            }
            assert len(seen) == 1, (name, mode)
            text = seen.pop()
            assert "Rome" not in text and "forecast" not in text
            expected = [o.final_row.get("calls_expected") for o in outs]
            assert expected == [None, 1, 1, 2, 3, 2]


def test_a_single_call_answer_keeps_the_papers_messages() -> None:
    """One call in the answer: the paper's Table 4 text and the gated one, byte for byte,
    whether the gold is one call, a list of one call, or several calls."""
    for gold in (LONDON, [LONDON], [PARIS, LONDON]):
        c = case(gold)
        out, _ = run([answer(LONDON_K), answer(NO_CITY), answer(LONDON)], "structured", c)
        assert [a.feedback for a in out.attempts] == [HARD_UNIT, MISSING, None]
        out, _ = run([answer(LONDON_K), answer(LONDON)], "gated", c)
        assert out.attempts[0].feedback == (
            f"{HARD_UNIT} {NAME_KEPT} {KEEP_ARGS.format(args='city = ' + json.dumps('London'))}"
        )
        out, _ = run(["no idea", answer(LONDON)], "structured", c)
        assert out.attempts[0].feedback == NO_NAME


# --------------------------------------------------------------------------- no-call case


def no_call_case(cid: str = "irr") -> Case:
    return case([], cid=cid, query=JOKE)


@pytest.mark.parametrize("mode", ["direct", "binary", "structured", "gated"])
def test_a_clean_abstention_on_a_no_call_case_passes_and_stops(mode: str) -> None:
    out, model = run([PROSE, TWO_OK], mode, no_call_case())
    assert len(model.requests) == 1 and len(out.attempts) == 1
    assert (out.stop, out.solved_at, out.attempts[0].feedback) == ("passed", 1, None)
    row = out.export_row("m", 5)
    assert (row["answer"], row["stage"], row["calls"], row["fnem"]) == ("abstained", 0, [], None)
    assert (row["calls_made"], row["calls_expected"], row["extra_calls"]) == (0, 0, 0)
    assert (row["answer_solved"], row["solved"], row["bfcl_credit"]) == (True, True, True)


def test_a_call_on_a_no_call_case_is_diagnosed_like_any_call() -> None:
    made = answer(call(city="Paris"))
    out, model = run([made, PROSE], "structured", no_call_case())
    # the paper's message for that call, as on a case that expects one (same request)
    expects, _ = run([made, PROSE], "structured", case(LONDON, cid="irr", query=JOKE))
    assert out.attempts[0].feedback == expects.attempts[0].feedback == HARD.format(params="city")
    first = out.attempts[0].row
    assert (first["stage"], first["answer"], first["calls_made"], first["extra_calls"]) == (
        3,
        "calls",
        1,
        1,
    )
    assert (first["answer_solved"], first["bfcl_credit"], first["solved"]) == (False, False, False)
    # the revision abstains: passed, and solved at attempt 2
    assert (out.stop, out.solved_at, out.final_row["answer"]) == ("passed", 2, "abstained")
    assert len(model.requests) == 2


def test_a_broken_call_on_a_no_call_case_gets_the_parsers_reason() -> None:
    reason = parse_output(BROKEN).error
    assert reason == (
        "the JSON call starting at character 0 is cut off: the text ends before the call is closed"
    )
    out, _ = run([BROKEN, PROSE], "gated", no_call_case())
    assert out.attempts[0].feedback == UNREADABLE.format(reason=reason)
    row = out.attempts[0].row
    assert (row["answer"], row["stage"], row["fnem"], row["parse_error"]) == (
        "broken",
        1,
        -1,
        reason,
    )
    # a broken call is not a clean abstention: not solved, though BFCL's relevance checker
    # credits it (nothing decodes)
    assert (row["answer_solved"], row["solved"], row["bfcl_credit"]) == (False, False, True)
    assert (out.stop, out.solved_at) == ("passed", 2)
    # the paper's structured mode: its stage-1 message, as for any unreadable answer
    out, _ = run([BROKEN, PROSE], "structured", no_call_case())
    assert out.attempts[0].feedback == NO_NAME


def test_a_no_call_case_decides_only_what_prose_is() -> None:
    """The one thing a no-call case changes inside the loop: a prose answer passes there and
    is a stage-1 failure where a call is expected; calls and broken calls get the same
    messages either way."""
    for script in ([BROKEN, SECOND_HARD, TWO_OK], [SECOND_HARD, BOTH_HARD, TWO_OK]):
        for mode in ("structured", "gated"):
            a, _ = run(script, mode, case([], cid="x", query=JOKE))
            b, _ = run(script, mode, case([PARIS], cid="x", query=JOKE))
            assert [x.feedback for x in a.attempts] == [x.feedback for x in b.attempts]
    a, _ = run([PROSE, TWO_OK], "structured", case([], cid="x", query=JOKE))
    b, _ = run([PROSE, TWO_OK], "structured", case([PARIS], cid="x", query=JOKE))
    assert (a.stop, len(a.attempts)) == ("passed", 1)
    assert b.attempts[0].feedback == NO_NAME and b.attempts[0].row["stage"] == 1


# --------------------------------------------------------------------------- runner, experiment


def mixed_cases() -> tuple[list[Case], dict[str, list[str]]]:
    """Five cases (gold of two calls in another order than the answer's, a no-call case
    answered three ways, one gold call) and each one's scripted replies by attempt."""
    cases = [
        case([LONDON, PARIS], cid="par"),
        case([], cid="irr", query=JOKE),
        case([], cid="irr-call", query=JOKE),
        case([], cid="irr-broken", query=JOKE),
        case(LONDON, cid="one"),
    ]
    script = {
        "par": [SECOND_HARD, TWO_OK],
        "irr": [PROSE],
        "irr-call": [answer(call(city="Paris")), PROSE],
        "irr-broken": [BROKEN],
        "one": [answer(LONDON_K), answer(LONDON)],
    }
    return cases, script


def check_rows(rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    """The exported rows of :func:`mixed_cases`, worked out by hand."""
    d = rows["par", "direct"]
    # gold [London, Paris]: the answer's Paris (position 0) matches gold 1; 3 of 4 values right
    assert (d["matched"], d["answer_arg_precision"], d["answer_arg_recall"]) == (
        [[0, 1], [1, 0]],
        0.75,
        0.75,
    )
    assert (d["calls_made"], d["calls_expected"], d["missing_calls"], d["extra_calls"]) == (
        2,
        2,
        0,
        0,
    )
    assert (d["stage"], d["answer_solved"], d["solved"], d["stop"], d["attempts"]) == (
        3,
        False,
        False,
        "budget",
        1,
    )
    assert [c["stage"] for c in d["calls"]] == [0, 3]
    for mode in ("binary", "structured", "gated"):
        r = rows["par", mode]
        assert (r["answer_solved"], r["solved_at"], r["attempts"], r["stop"]) == (
            True,
            2,
            2,
            "passed",
        )
    for mode in MODES:
        r = rows["irr", mode]
        assert (r["answer"], r["stage"], r["answer_solved"], r["bfcl_credit"]) == (
            "abstained",
            0,
            True,
            True,
        )
        assert (r["attempts"], r["solved_at"]) == (1, 1)
        b = rows["irr-broken", mode]
        assert (b["answer"], b["stage"], b["answer_solved"], b["bfcl_credit"]) == (
            "broken",
            1,
            False,
            True,
        )
        assert b["solved_at"] is None and b["attempts"] == (1 if mode == "direct" else 3)
    c = rows["irr-call", "direct"]
    assert (c["calls_made"], c["extra_calls"], c["bfcl_credit"], c["answer_solved"]) == (
        1,
        1,
        False,
        False,
    )
    assert rows["irr-call", "gated"]["answer"] == "abstained"
    assert rows["one", "structured"]["solved_at"] == 2 and rows["one", "direct"]["stage"] == 3


def test_the_runner_runs_several_call_and_no_call_cases_resumably(tmp_path: Path) -> None:
    cases, script = mixed_cases()
    model = Scripted(script, repeat_last=True, native=False)
    store = RunStore(tmp_path / "run")
    summary = run_cases(model, cases, store, max_attempts=3, show_progress=False)
    # requests: par 1 + 3 retries; irr 1; irr-call 1 + 3; irr-broken 1 + 2 per loop mode
    # (budget 3; in gated the budget comes before the repeat stop); one 1 + 3
    assert len(model.requests) == 4 + 1 + 4 + 7 + 4
    assert summary.ran == 20 and summary.skipped == 0 and not summary.errors
    assert summary.solve_rate == {"direct": 0.2, "binary": 0.8, "structured": 0.8, "gated": 0.8}
    assert summary.mean_attempts == dict(direct=1.0, binary=2.0, structured=2.0, gated=2.0)
    again = run_cases(model, cases, store, max_attempts=3, show_progress=False)
    assert again.ran == 0 and again.skipped == 20 and len(model.requests) == 20
    lines = (tmp_path / "run" / "final.jsonl").read_text().splitlines()
    rows = {(r["id"], r["mode"]): r for r in map(json.loads, lines)}
    assert len(rows) == 20
    check_rows(rows)
    # the store keeps the gold as given: a list of calls, or [] for no call
    assert [c.gold for c in store.cases()] == [c.gold for c in cases]
    store.close()


def test_an_experiment_of_several_call_and_no_call_cases_runs_and_resumes(tmp_path: Path) -> None:
    cases, script = mixed_cases()
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c.to_dict()) + "\n" for c in cases))
    # each case's replies by attempt, the last repeated to the budget (replay has no default)
    replay = tmp_path / "replay.jsonl"
    replay.write_text(
        "".join(
            json.dumps({"case_id": cid, "outputs": (out + [out[-1]] * 3)[:3]}) + "\n"
            for cid, out in script.items()
        )
    )
    (tmp_path / "exp.toml").write_text(
        f'output = "out"\nmodels = ["replay:{replay}"]\nmax_attempts = 3\n'
        '[benchmark]\ncases = "cases.jsonl"\n[run]\nuse_cache = false\n'
    )
    [first] = run_experiment(Experiment.load(tmp_path / "exp.toml"), show_progress=False)
    assert first.ran == 20 and not first.errors
    assert first.solve_rate == {"direct": 0.2, "binary": 0.8, "structured": 0.8, "gated": 0.8}
    [again] = run_experiment(Experiment.load(tmp_path / "exp.toml"), show_progress=False)
    assert again.ran == 0 and again.skipped == 20
    lines = (tmp_path / "out" / "final.jsonl").read_text().splitlines()
    check_rows({(r["id"], r["mode"]): r for r in map(json.loads, lines)})
