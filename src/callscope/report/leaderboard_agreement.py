"""The leaderboard's agreement tables (:mod:`callscope.report.leaderboard`): BFCL's installed
checker on callscope's decoding against the verdicts BFCL committed, and every class of
disagreement between them."""

from __future__ import annotations

from collections import Counter

from callscope.core.table import Table
from callscope.report.leaderboard_rows import (
    _ranked,
    _rate,
    decoded_results,
    kept_rows,
    left_out_cases,
)
from callscope.runs.leaderboard import DECODE
from callscope.runs.leaderboard_tree import LeaderboardRun


def agreement_table(run: LeaderboardRun) -> Table:
    """BFCL's installed checker on callscope's decoding vs the committed verdicts."""
    evaluated = DECODE.index("evaluated")
    rows = []
    for r, k in _ranked(run):
        ran = k[k["scored"] & (k["checker"] >= 0)]
        dec = ran[ran["decode"] != evaluated]
        agree = int((dec["checker"].astype(bool) == dec["bfcl_ok"]).sum())
        all_agree = int((ran["checker"].astype(bool) == ran["bfcl_ok"]).sum())
        rows.append(
            [
                r.model,
                len(dec),
                _rate(agree, len(dec)),
                len(dec) - agree,
                _rate(all_agree, len(ran)),
            ]
        )
    return Table(
        ["model", "decodable", "agreement % [95% CI]", "disagreements", "all answers %"],
        rows,
        title="Agreement with BFCL's committed verdicts",
        caption=(
            "BFCL's installed checker (bfcl-eval "
            f"{run.bfcl_version}) on callscope's decoding, against the verdicts BFCL committed "
            "in 2024. 'decodable': answers callscope's decoder reads as BFCL's did (all but "
            "those BFCL read by evaluating arithmetic); 'all answers' includes those."
        ),
        note="Wilson 95% intervals; the cases left out for drift are not counted.",
        name="agreement",
        align="lrrrr",
    )


def disagreement_classes(run: LeaderboardRun) -> list[tuple[str, int, str]]:
    """``(class, count, example)`` of every disagreement between the installed checker on
    callscope's decoding and the committed verdict, most frequent first."""
    out = left_out_cases(run)
    counts: Counter[str] = Counter()
    example: dict[str, str] = {}
    for r in decoded_results(run):
        k = kept_rows(r, out)
        k = k[k["scored"] & (k["checker"] >= 0)]
        for x in k[k["checker"].astype(bool) != k["bfcl_ok"]]:
            then = run.error_types[x["err"]] if x["err"] >= 0 else "accepted"
            now = run.error_types[x["checker_err"]] if x["checker_err"] >= 0 else "accepted"
            if DECODE[x["decode"]] == "evaluated":
                name = f"BFCL evaluated arithmetic (2024: {then}; callscope: not decoded)"
            else:
                name = f"checker 2024 -> {run.bfcl_version}: {then} -> {now}"
            counts[name] += 1
            example.setdefault(name, f"{r.model} / {run.case_ids[x['case']]}")
    return [(name, n, example[name]) for name, n in counts.most_common()]


def disagreements_table(run: LeaderboardRun) -> Table:
    rows = [[name, n, ex] for name, n, ex in disagreement_classes(run)]
    return Table(
        ["class", "answers", "example (model / case)"],
        rows,
        title="Every disagreement class",
        caption=(
            "Where the installed checker on callscope's decoding and BFCL's 2024 verdict "
            "differ, by class: checker version drift (same decoded answer, another verdict) "
            "and answers BFCL read by evaluating arithmetic."
        ),
        name="disagreements",
        align="lrl",
        empty="No disagreement.",
    )
