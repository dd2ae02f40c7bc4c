"""Aggregation of a hand-made replay run (``replayed_run`` in conftest.py) in the paper's
lexical grounding; every expected number is worked out by hand below.

The run: 4 queries x 2 registry scales (5, 10) x 3 modes, max 3 attempts.

q1 weather Paris   S5: attempt 1 correct (all modes solved at 1).
                   S10: attempt 1 is prose (no name, stage 1); binary/structured correct at 2.
q2 book Luigi/4    attempt 1 "book_tbl" (wrong name, stage 1); binary wrong again then
                   correct at 3; structured correct at 2.
q3 book Nobu/2     query "... two people at 8pm": attempt 1 {Nobu, 2} = gold args but 2 is
                   not a number of the query (stage 3 numeric; AVEM 1/2, VHR 1/2);
                   binary {Nobu, 8} passes at 2; structured {Nobu} (stage 2 missing) then
                   {Nobu, 8} at 3. Both finals: F1 0.5 (the gold arguments were lost).
q4 weather Rome/3  attempt 1 {city, dayss} (drifted, PDS = 8/9, F1 0.5); binary correct at 2;
                   structured moves to "get_forecast" (wrong name) twice: unsolved, and the
                   gold name of attempt 1 is lost.
"""

from __future__ import annotations

import math

import pytest

from callscope.core.stats import (
    bootstrap_ci,
    bootstrap_diff_ci,
    mean_sample_std,
    mean_std,
    sample_std,
    wilson,
)
from callscope.report import aggregate as agg
from callscope.report.load import load_outcomes
from callscope.report.outcome import STAGE_LABELS, first_kinds, first_stage, is_error


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory, replayed_run) -> list[dict]:
    # the hand-worked numbers follow the paper's lexical grounding ("two" does not state 2)
    return load_outcomes(replayed_run(tmp_path_factory.mktemp("agg"), grounding="lexical"))


def _row(df, **keys):
    sub = df
    for k, v in keys.items():
        sub = sub[sub[k] == v]
    assert len(sub) == 1, keys
    return sub.iloc[0]


# --------------------------------------------------------------------------- stats


def test_wilson_known_values() -> None:
    lo, hi = wilson(1, 4)  # p=.25: centre .37247, half-width .32689
    assert lo == pytest.approx(0.04558, abs=1e-4) and hi == pytest.approx(0.69936, abs=1e-4)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    assert all(math.isnan(x) for x in wilson(0, 0))


def test_std_conventions_and_bootstrap() -> None:
    assert mean_std([0.0, 1.0]) == (0.5, 0.5)  # population std
    assert sample_std([0.0, 1.0]) == pytest.approx(math.sqrt(0.5))  # ddof=1
    assert mean_sample_std([0.25, 0.0])[1] == pytest.approx(0.125 * math.sqrt(2))
    assert math.isnan(sample_std([1.0]))
    values = [0.0, 0.0, 1.0, 1.0, 1.0]
    a = bootstrap_ci(values, seed=3)
    assert a == bootstrap_ci(values, seed=3)  # deterministic
    assert 0.0 <= a[0] < 0.6 < a[1] <= 1.0
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    lo, hi = bootstrap_diff_ci([0.0] * 20, [1.0] * 20)
    assert lo == hi == 1.0


# --------------------------------------------------------------------------- per scale


def test_run_shape(outcomes: list[dict]) -> None:
    assert len(outcomes) == 24
    assert not any(is_error(o) for o in outcomes)
    solved = {(o["case_id"], o["mode"]): o["solved_at"] for o in outcomes}
    assert solved[("q2@S5", "binary")] == 3 and solved[("q4@S5", "structured")] is None


def test_per_scale_stage_conditional_means(outcomes: list[dict]) -> None:
    ps = agg.per_scale(outcomes, n_boot=200)
    d5 = _row(ps, scale="5", mode="direct")
    # finals = first attempts: q1 pass, q2 stage 1 (FNEM 0), q3 stage 3, q4 stage 2
    assert (d5["fnem"], d5["fnem_n"]) == (0.75, 4)
    assert d5["fnem_std"] == pytest.approx(math.sqrt(0.75 * 0.25))
    assert d5["ncs_n"] == 1
    assert (d5["rpr"], d5["rpr_n"]) == (1.0, 3)
    assert (d5["pds"], d5["pds_n"]) == (pytest.approx(8 / 9), 1)
    assert (d5["spr"], d5["spr_n"]) == (0.0, 3)
    assert (d5["avem"], d5["avem_n"], d5["avem_std"]) == (0.75, 2, 0.25)
    assert (d5["vhr"], d5["vhr_n"], d5["vhr_std"]) == (0.25, 2, 0.25)
    assert d5["qslo_n"] == 0 and math.isnan(d5["qslo"])
    assert (d5["name_acc"], d5["arg_precision"], d5["arg_recall"], d5["arg_f1"]) == (
        0.75,
        0.625,
        0.625,
        0.625,
    )
    assert d5["arg_f1_n"] == 4
    assert (d5["solved"], d5["solve_n"], d5["solve_rate"]) == (1, 4, 0.25)
    assert d5["solve_lo"] == pytest.approx(0.04558, abs=1e-4)
    assert (d5["attempts_to_solve"], d5["attempts_to_solve_n"]) == (1.0, 1)

    d10 = _row(ps, scale="10", mode="direct")  # q1 has no name at S10: FNEM -1 counts 0
    assert (d10["fnem"], d10["ncs_n"], d10["rpr_n"], d10["avem_n"]) == (0.5, 1, 2, 1)
    assert (d10["name_acc"], d10["arg_f1"], d10["solve_rate"]) == (0.5, 0.375, 0.0)

    b5 = _row(ps, scale="5", mode="binary")
    assert (b5["fnem"], b5["rpr_n"], b5["avem"], b5["vhr"], b5["ncs_n"]) == (1.0, 4, 1.0, 0.0, 0)
    assert (b5["arg_precision"], b5["arg_f1"], b5["solve_rate"]) == (0.875, 0.875, 1.0)
    assert b5["attempts_to_solve"] == 2.0  # solved at 1, 3, 2, 2
    assert b5["attempts_to_solve_std"] == pytest.approx(math.sqrt(0.5))
    assert _row(ps, scale="10", mode="binary")["attempts_to_solve"] == 2.25

    s5 = _row(ps, scale="5", mode="structured")
    assert (s5["fnem"], s5["ncs_n"], s5["avem_n"]) == (0.75, 1, 3)
    assert (s5["name_acc"], s5["arg_f1"], s5["solve_rate"]) == (0.75, 0.625, 0.75)
    assert _row(ps, scale="10", mode="structured")["attempts_to_solve"] == pytest.approx(7 / 3)


def test_across_scales_uses_sample_std(outcomes: list[dict]) -> None:
    across = agg.across_scales(agg.per_scale(outcomes, n_boot=200))
    d = _row(across, mode="direct")
    assert d["n_scales"] == 2
    assert (d["solve_rate"], d["solve_rate_std"]) == (0.125, pytest.approx(0.125 * math.sqrt(2)))
    assert (d["name_acc"], d["name_acc_std"]) == (0.625, pytest.approx(0.25 / math.sqrt(2)))
    assert (d["avem"], d["avem_std"]) == (0.625, pytest.approx(0.25 / math.sqrt(2)))
    b = _row(across, mode="binary")
    assert (b["arg_f1"], b["arg_f1_std"], b["solve_rate"]) == (0.875, 0.0, 1.0)
    s = _row(across, mode="structured")
    assert s["attempts_to_solve"] == pytest.approx(13 / 6)
    assert s["attempts_to_solve_std"] == pytest.approx((1 / 3) / math.sqrt(2))


def test_headline_pools_scales(outcomes: list[dict]) -> None:
    hl = agg.headline(outcomes, n_boot=200)
    b = _row(hl, mode="binary")
    assert (b["scale"], b["n"], b["solved"], b["solve_rate"]) == ("all", 8, 8, 1.0)
    assert _row(hl, mode="direct")["solve_rate"] == 0.125
    assert _row(hl, mode="structured")["attempts_to_solve"] == pytest.approx(13 / 6)


# --------------------------------------------------------------------------- cumulative


def test_cumulative_solve(outcomes: list[dict]) -> None:
    cum = agg.cumulative_solve(outcomes, {outcomes[0]["model"]: 3})

    def rates(mode: str, scale: str) -> list[float]:
        sub = cum[(cum["mode"] == mode) & (cum["scale"] == scale)].sort_values("attempt")
        return sub["rate"].tolist()

    assert rates("binary", "5") == [0.25, 0.75, 1.0]
    assert rates("structured", "5") == [0.25, 0.5, 0.75]
    assert rates("direct", "5") == [0.25, 0.25, 0.25]
    assert rates("binary", "10") == [0.0, 0.75, 1.0]
    assert rates("structured", "10") == [0.0, 0.5, 0.75]
    assert rates("direct", "10") == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------- failures


def test_failure_breakdown(outcomes: list[dict]) -> None:
    fb = agg.failure_breakdown(outcomes)
    s5 = _row(fb, scale="5")
    assert s5["n"] == 4
    assert [s5[k] for k in STAGE_LABELS] == [0.25, 0.25, 0.25, 0.25, 0.0]
    assert (s5["wrong_name"], s5["no_name"], s5["drifted"], s5["numeric"]) == (0.25, 0, 0.25, 0.25)
    assert s5["missing"] == s5["spurious"] == s5["hard"] == s5["soft"] == 0
    s10 = _row(fb, scale="10")
    assert [s10[k] for k in STAGE_LABELS] == [0.0, 0.5, 0.25, 0.25, 0.0]
    assert (s10["no_name"], s10["wrong_name"]) == (0.25, 0.25)
    pooled = _row(fb, scale="all")
    assert pooled["n"] == 8
    assert [pooled[f"n_{k}"] for k in STAGE_LABELS] == [1, 3, 2, 2, 0]
    assert (pooled["n_wrong_name"], pooled["n_no_name"], pooled["n_numeric"]) == (2, 1, 2)


def test_first_kinds_use_the_diagnosis_lists() -> None:
    o = {"first": {"stage": 3, "fnem": 1}, "first_diagnosis": {"numeric": ["a"], "soft": ["b"]}}
    assert first_kinds(o) == ["numeric", "soft"]
    assert first_kinds({"first": {"stage": 2, "missing": ["x"], "spurious": ["y"]}}) == [
        "missing",
        "spurious",
    ]
    assert first_stage({"first": None}) == "error"


# --------------------------------------------------------------------------- overcorrection


def test_overcorrection(outcomes: list[dict]) -> None:
    oc = agg.overcorrection(outcomes, n_boot=500)
    s = _row(oc, mode="structured")
    # first attempt had the gold name: q1@S5, q3 x2, q4 x2 = 5; q4 moved to get_forecast twice
    assert (s["n"], s["name_base"], s["name_lost"], s["name_rate"]) == (8, 5, 2, 0.4)
    # gold arguments at attempt 1: q1@S5 and q3 x2; q3 ends with people=8 in both scales
    assert (s["args_base"], s["args_lost"]) == (3, 2)
    assert s["f1_delta"] == pytest.approx(1 / 8)  # (0+1-.5-.5) + (1+1-.5-.5) over 8
    assert s["f1_delta_lo"] <= s["f1_delta"] <= s["f1_delta_hi"]
    b = _row(oc, mode="binary")
    assert (b["name_lost"], b["args_lost"], b["f1_delta"]) == (0, 2, pytest.approx(3 / 8))
    d = _row(oc, mode="direct")
    assert (d["name_lost"], d["args_lost"], d["f1_delta"]) == (0, 0, 0.0)


# --------------------------------------------------------------------------- errors


def _err_outcome(first: dict | None) -> dict:
    return {
        "model": "m",
        "case_id": "e",
        "mode": "binary",
        "scale": 5,
        "n_attempts": 2,
        "solved_at": None,
        "error": "boom",
        "error_kind": "timeout",
        "has_gold": True,
        "final": {**(first or {}), "error": "boom"},
        "first": first,
    }


def test_model_errors_count_as_failures() -> None:
    first = {
        "stage": 0,
        "fnem": 1,
        "rpr": 1.0,
        "spr": 0.0,
        "avem": 1.0,
        "vhr": 0.0,
        "name_match": True,
        "arg_precision": 1.0,
        "arg_recall": 1.0,
        "arg_f1": 1.0,
    }
    ok = {
        "model": "m",
        "case_id": "k",
        "mode": "binary",
        "scale": 5,
        "n_attempts": 1,
        "solved_at": 1,
        "error": None,
        "error_kind": None,
        "has_gold": True,
        "final": dict(first),
        "first": dict(first),
    }
    rows = [ok, _err_outcome(None), _err_outcome(first)]
    g = agg.group_metrics(rows, n_boot=100)
    assert (g["n"], g["n_errors"]) == (3, 2)
    assert (g["name_acc"], g["arg_f1_n"], g["solve_rate"]) == (
        pytest.approx(1 / 3),
        3,
        pytest.approx(1 / 3),
    )
    assert (g["avem"], g["avem_n"]) == (1.0, 1)  # intrinsic: errors left out
    errs = agg.errors_by_kind(rows)
    assert errs.to_dict("records") == [
        {"model": "m", "mode": "binary", "error_kind": "timeout", "count": 2}
    ]
    assert _row(agg.overcorrection(rows, n_boot=100), mode="binary")["n"] == 1


# --------------------------------------------------------------------------- compare


def _simple(model: str, mode: str, solved: bool, f1: float, i: int) -> dict:
    final = {
        "stage": 0 if solved else 3,
        "fnem": 1,
        "name_match": True,
        "arg_precision": f1,
        "arg_recall": f1,
        "arg_f1": f1,
        "avem": 1.0,
        "vhr": 0.0,
    }
    return {
        "model": model,
        "case_id": f"c{i}",
        "mode": mode,
        "scale": 5,
        "n_attempts": 1,
        "solved_at": 1 if solved else None,
        "error": None,
        "error_kind": None,
        "has_gold": True,
        "final": final,
        "first": final,
    }


def test_compare_outcomes() -> None:
    from callscope.report.compare import compare_outcomes, comparison_table

    a = [_simple("m-a", "binary", False, 0.0, i) for i in range(20)]
    b = [_simple("m-b", "binary", True, 1.0, i) for i in range(20)]
    df = compare_outcomes(a, b, n_boot=200)
    solve = df[df["metric"] == "solve rate"].iloc[0]
    assert solve["model"] == "m-a vs m-b"  # one model per run: matched on mode
    assert (solve["a"], solve["b"], solve["diff"]) == (0.0, 1.0, 1.0)
    assert (solve["diff_lo"], solve["diff_hi"]) == (1.0, 1.0)
    assert solve["a_hi"] == pytest.approx(wilson(0, 20)[1])
    assert not solve["overlap"] and "difference CI excludes 0" in solve["note"]
    same = compare_outcomes(a, a, n_boot=200)
    assert (same["diff"] == 0).all() and same["note"].str.startswith("intervals overlap").all()
    assert len(comparison_table(df).rows) == len(df) == 5


def test_compare_of_runs_with_no_case_in_common_tests_no_difference() -> None:
    """Issue 45: two runs over different cases measure different things; ``compare`` used to
    say "difference CI excludes 0" for them."""
    from callscope.report.compare import NO_SHARED_CASE, compare_outcomes

    a = [_simple("m-a", "binary", False, 0.0, i) for i in range(20)]
    b = [_simple("m-b", "binary", True, 1.0, i) for i in range(20, 40)]  # c20..c39
    df = compare_outcomes(a, b, n_boot=200)
    assert (df["note"] == NO_SHARED_CASE).all()
    assert df["diff_lo"].isna().all() and df["diff_hi"].isna().all()
    solve = df[df["metric"] == "solve rate"].iloc[0]
    assert (solve["a"], solve["b"]) == (0.0, 1.0)  # each run's own figure is still there
    assert "excludes 0" not in " ".join(df["note"])


def test_compare_gives_each_figure_the_interval_of_the_report() -> None:
    """Issue 45: a name accuracy of 2/3 had one interval in the report (bootstrap) and another
    in ``compare`` (Wilson). Both now read :func:`aggregate.metric_interval`."""
    from callscope.report.compare import compare_outcomes

    a = [_simple("m", "binary", i != 2, 1.0, i) for i in range(3)]
    a[2]["final"] = a[2]["first"] = {**a[2]["final"], "name_match": False}
    report = agg.group_metrics(a, n_boot=200)
    row = compare_outcomes(a, a, n_boot=200)
    name = row[row["metric"] == "name acc"].iloc[0]
    assert name["a"] == pytest.approx(2 / 3) == report["name_acc"]
    assert (name["a_lo"], name["a_hi"]) == (report["name_acc_lo"], report["name_acc_hi"])
    solve = row[row["metric"] == "solve rate"].iloc[0]
    assert (solve["a_lo"], solve["a_hi"]) == pytest.approx(wilson(2, 3))
    assert (report["solve_lo"], report["solve_hi"]) == pytest.approx(wilson(2, 3))


def test_compare_runs_same_run(outcomes: list[dict], tmp_path_factory, replayed_run) -> None:
    from callscope.report.compare import compare_runs

    run_dir = replayed_run(tmp_path_factory.mktemp("cmp"), grounding="lexical")
    df = compare_runs(run_dir, run_dir, n_boot=200)
    assert len(df) == 3 * 5  # three modes x five headline metrics, matched on (model, mode)
    row = df[(df["mode"] == "direct") & (df["metric"] == "solve rate")].iloc[0]
    assert (row["a"], row["b"], row["diff"], row["n_a"]) == (0.125, 0.125, 0.0, 8)


def test_a_guard_only_kind_has_columns_only_when_a_case_shows_it() -> None:
    """ASK is the guard's (issue 46): a SAAG run's report keeps the columns it had before the
    kind existed (issue 48's byte-for-byte store test); a guard run that asked shows it."""
    plain = [_simple("m", "gated", False, 0.0, i) for i in range(2)]
    assert "ask" not in agg.failure_breakdown(plain).columns
    asked = _simple("m", "gated", False, 0.0, 2)
    asked["first"] = asked["final"] = {**asked["first"], "stage": 2, "ask": ["unit"]}
    row = agg.failure_breakdown([*plain, asked]).iloc[0]
    assert (row["n_ask"], row["ask"]) == (1, pytest.approx(1 / 3))
    assert row["n_stage2"] == 1
