"""The report over answers (issue 28): answer-level and call-level rows of a run.

An answer holds 0..n calls (:mod:`callscope.saag.answer`). Three aggregates, pure functions
over :class:`~callscope.report.facts.OutcomeFacts` (the per-outcome definitions are
:func:`callscope.report.outcome.answer_of` and :func:`~callscope.report.outcome.call_stages_of`),
each with its :class:`~callscope.core.table.Table`:

* :func:`answer_summary` (table ``answers``): per (model, scale, mode), over the final
  answers: how many, what they are (calls, abstained, broken, empty, error), calls made and
  expected, missing and extra calls (sums), the answer-level name and argument precision /
  recall / F1 (means over the answers of cases with gold; a model error counts 0), answers
  solved (every gold call matched by a correct call and nothing extra, with its Wilson
  interval) and, on no-call cases, callscope's correct abstentions beside BFCL's relevance
  credit (which also credits a broken call);
* :func:`stage_mix_units` (table ``stage_mix_calls``): per (model, scale), attempt 1's stage
  mix counted over answers (as :func:`callscope.report.aggregate.failure_breakdown`: one per
  case, its earliest failing stage) beside the same mix counted over calls (each call of each
  answer once, at its own stage; an answer without a call adds no call);
* :func:`calls_by_category` (table ``calls_by_category``, figure ``calls_by_category.png``):
  per (model, mode, category), over the final answers of cases with gold: calls expected
  (sum of the gold calls) against calls made, missing and extra calls, answers solved.

Runs scored before answers were the unit have none of the rows' answer keys:
:func:`has_answers` is False and the report adds none of these tables or the figure.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import pandas as pd

from callscope.core.stats import wilson
from callscope.core.table import Table
from callscope.records import stage_segment
from callscope.report.aggregate import _group, _one_per_case, _sorted_keys
from callscope.report.facts import OutcomeFacts, Outcomeish, as_facts
from callscope.report.outcome import ALL, ANSWER_KINDS, ANSWER_METRICS, STAGE_LABELS
from callscope.report.tables import _keys, fmt_ci, fmt_num, report_table

#: the stages a call can end at (a call is never a model error)
CALL_STAGES: tuple[str, ...] = STAGE_LABELS[:4]
#: column labels of the answer-level metrics
METRIC_LABELS: dict[str, str] = {
    "name_precision": "Name P",
    "name_recall": "Name R",
    "name_f1": "Name F1",
    "arg_precision": "Arg P",
    "arg_recall": "Arg R",
    "arg_f1": "Arg F1",
}


def has_answers(outcomes: Iterable[Outcomeish]) -> bool:
    """Some outcome's final answer was scored as an answer (its row has the answer keys)."""
    return any(f.answer is not None and f.answer.kind != "error" for f in as_facts(outcomes))


def _with_pooled(
    facts: list[OutcomeFacts], outer: tuple[str, ...]
) -> list[tuple[tuple[str, ...], str, list[OutcomeFacts]]]:
    """``(outer key, scale, facts)`` per scale of each ``outer`` group, scales in order, plus
    the pooled scale ``"all"`` when a group has more than one scale."""
    out = []
    by_outer = _group(facts, outer)
    for key in _sorted_keys(by_outer, outer):
        per = _group(by_outer[key], ("scale",))
        groups = [(k[0], per[k]) for k in _sorted_keys(per, ("scale",))]
        if len(groups) > 1:
            groups.append((ALL, by_outer[key]))
        out.extend((key, scale, g) for scale, g in groups)
    return out


# --------------------------------------------------------------------------- answers


def answer_summary(outcomes: Iterable[Outcomeish]) -> pd.DataFrame:
    """One row per (model, scale, mode), plus a pooled ``scale == "all"`` row per (model,
    mode) over several scales, of the outcomes whose final answer has answer facts.

    Columns: ``n``; ``n_<kind>`` per :data:`~callscope.report.outcome.ANSWER_KINDS`;
    ``gold_n`` (answers of cases with gold), ``calls_made``, ``calls_expected``,
    ``missing_calls``, ``extra_calls`` (sums; expected, missing and extra over ``gold_n``,
    calls made over all ``n``); per answer-level metric its mean over ``gold_n``;
    ``solved``, ``solve_rate``, ``solve_lo``, ``solve_hi`` (Wilson 95%) over ``gold_n``;
    ``nocall_n`` (answers of no-call cases, a model error included), ``nocall_correct``
    (clean abstentions among them: callscope's solve), ``bfcl_credited`` (BFCL's relevance
    credit: no call decoded, a broken call included)."""
    facts = [f for f in as_facts(outcomes) if f.answer is not None]
    rows = []
    for (model, mode), scale, g in _with_pooled(facts, ("model", "mode")):
        kinds = Counter(f.answer.kind for f in g)
        gold = [f.answer for f in g if f.answer.calls_expected is not None]
        nocall = [a for a in gold if a.calls_expected == 0]
        solved = sum(bool(a.solved) for a in gold)
        lo, hi = wilson(solved, len(gold))
        row: dict[str, Any] = {"model": model, "scale": scale, "mode": mode, "n": len(g)}
        row.update({f"n_{k}": kinds[k] for k in ANSWER_KINDS})
        row.update(
            gold_n=len(gold),
            calls_made=sum(f.answer.calls_made for f in g),
            calls_expected=sum(a.calls_expected for a in gold),
            missing_calls=sum(a.missing or 0 for a in gold),
            extra_calls=sum(a.extra or 0 for a in gold),
        )
        for name, _ in ANSWER_METRICS:
            vals = [getattr(a, name) or 0.0 for a in gold]
            row[name] = sum(vals) / len(vals) if vals else math.nan
        row.update(
            solved=solved,
            solve_rate=solved / len(gold) if gold else math.nan,
            solve_lo=lo,
            solve_hi=hi,
            nocall_n=len(nocall),
            nocall_correct=sum(bool(a.solved) for a in nocall),
            bfcl_credited=sum(bool(a.bfcl_credit) for a in nocall),
        )
        rows.append(row)
    return pd.DataFrame(rows)


def answer_table(df: pd.DataFrame) -> Table:
    """The ``answers`` table of :func:`answer_summary`."""
    disp = _keys(df, ("model", "scale", "mode", "n"))
    if not df.empty:
        for k in ANSWER_KINDS:
            disp[k] = [int(v) for v in df[f"n_{k}"]]
        disp["calls made"] = [int(v) for v in df["calls_made"]]
        disp["calls expected"] = [int(v) for v in df["calls_expected"]]
        disp["missing"] = [int(v) for v in df["missing_calls"]]
        disp["extra"] = [int(v) for v in df["extra_calls"]]
        for name, _ in ANSWER_METRICS:
            disp[METRIC_LABELS[name]] = [fmt_num(v) for v in df[name]]
        disp["answers solved"] = [
            f"{int(r['solved'])}/{int(r['gold_n'])} = "
            f"{fmt_ci(r['solve_rate'], r['solve_lo'], r['solve_hi'])}"
            for _, r in df.iterrows()
        ]
        disp["no-call cases: right / BFCL credit"] = [
            f"{int(r['nocall_correct'])} / {int(r['bfcl_credited'])} of {int(r['nocall_n'])}"
            if r["nocall_n"]
            else "-"
            for _, r in df.iterrows()
        ]
    caption = (
        "Answers of the final attempt (an answer holds 0..n calls). What they are (counts): "
        "calls, abstained (prose, nothing call-shaped), broken (call-shaped text that does "
        "not parse), empty, or a model error (error). Calls made over every answer; calls expected, "
        "missing (expected beyond made) and extra (made beyond expected), the name and "
        "argument precision / recall / F1 (model calls matched one-to-one to gold calls, in "
        "any order, by an optimal assignment) and answers solved (every gold call matched by "
        "a correct call, nothing extra; Wilson 95%) over the answers of cases with gold; a "
        "model error counts as no call with every metric 0. On no-call cases: answers that "
        "are right (a clean abstention: callscope) beside those BFCL's relevance checker credits (any "
        "answer where no call decodes, a broken call included). Scale 'all' pools the scales."
    )
    return report_table("answers", "Answers", caption, df, disp)


# --------------------------------------------------------------------------- stage mix


def stage_mix_units(outcomes: Iterable[Outcomeish]) -> pd.DataFrame:
    """Attempt 1's stage mix per (model, scale), plus a pooled ``"all"`` row over several
    scales, counted two ways: ``unit == "answers"`` (one per case, attempt 1 being shared by
    the modes: its earliest failing stage, ``passed`` for an answer whose every call passed
    or a clean abstention, ``error`` for no reply: the shares of
    :func:`callscope.report.aggregate.failure_breakdown`) and ``unit == "calls"`` (each call
    of each such answer once, at its own stage; ``n`` calls; no ``error``). Columns: ``n``,
    per stage label its share and ``n_<label>``. Cases whose attempt 1 was scored before
    answers were the unit (no ``calls`` list) are left out of both rows."""
    cases = [
        f
        for f in _one_per_case(as_facts(outcomes))
        if f.first_calls is not None or f.first_stage == "error"
    ]
    rows = []
    for (model,), scale, g in _with_pooled(cases, ("model",)):
        answers = Counter(f.first_stage for f in g)
        calls = Counter(stage_segment(s) for f in g for s in f.first_calls or ())
        for unit, counts, labels in (
            ("answers", answers, STAGE_LABELS),
            ("calls", calls, CALL_STAGES),
        ):
            n = sum(counts.values()) if unit == "calls" else len(g)
            row: dict[str, Any] = {"model": model, "scale": scale, "unit": unit, "n": n}
            for s in STAGE_LABELS:
                inside = s in labels
                row[s] = counts[s] / n if inside and n else math.nan
                row[f"n_{s}"] = counts[s] if inside else math.nan
            rows.append(row)
    return pd.DataFrame(rows)


def stage_mix_units_table(df: pd.DataFrame) -> Table:
    """The ``stage_mix_calls`` table of :func:`stage_mix_units`."""
    disp = _keys(df, ("model", "scale", "unit", "n"))
    for s in STAGE_LABELS:
        disp[s] = [
            "-" if math.isnan(r[f"n_{s}"]) else f"{fmt_num(r[s])} ({int(r[f'n_{s}'])})"
            for _, r in df.iterrows()
        ]
    caption = (
        "Attempt 1's stage mix (shared by all modes) over answers and over calls: share "
        "(count) of answers that passed (every call passed, or a clean abstention), failed "
        "first at stage 1, 2 or 3 (the earliest stage any of their calls failed at; an answer "
        "without a call where one was expected fails stage 1), or got no reply; and of their "
        "calls, each counted once at the stage that stopped it. Scale 'all' pools the scales."
    )
    return report_table(
        "stage_mix_calls", "Stage mix over answers and over calls", caption, df, disp
    )


# --------------------------------------------------------------------------- categories


def calls_by_category(outcomes: Iterable[Outcomeish]) -> pd.DataFrame:
    """One row per (model, mode, category) (categories in name order), over the final
    answers of cases with gold: ``n`` answers, ``calls_expected`` (their gold calls),
    ``calls_made``, ``missing_calls``, ``extra_calls`` (sums), ``solved`` (answers solved)."""
    facts = [
        f
        for f in as_facts(outcomes)
        if f.answer is not None and f.answer.calls_expected is not None
    ]
    groups = _group(facts, ("model", "mode", "category"))
    rows = []
    for key in _sorted_keys(groups, ("model", "mode", "category")):
        answers = [f.answer for f in groups[key]]
        rows.append(
            {
                "model": key[0],
                "mode": key[1],
                "category": key[2],
                "n": len(answers),
                "calls_expected": sum(a.calls_expected for a in answers),
                "calls_made": sum(a.calls_made for a in answers),
                "missing_calls": sum(a.missing or 0 for a in answers),
                "extra_calls": sum(a.extra or 0 for a in answers),
                "solved": sum(bool(a.solved) for a in answers),
            }
        )
    return pd.DataFrame(rows)


def calls_by_category_table(df: pd.DataFrame) -> Table:
    """The ``calls_by_category`` table of :func:`calls_by_category`."""
    disp = _keys(df, ("model", "mode", "category", "n"))
    for col, label in (
        ("calls_expected", "calls expected"),
        ("calls_made", "calls made"),
        ("missing_calls", "missing"),
        ("extra_calls", "extra"),
        ("solved", "answers solved"),
    ):
        disp[label] = [int(v) for v in df[col]] if not df.empty else []
    caption = (
        "Calls made against calls expected per case category (the BFCL category a case was "
        "built from, its meta 'category'; '-' for cases without one), over the final answers "
        "of cases with gold: the sums of gold calls, of the answers' calls, of missing and "
        "extra calls, and the answers solved."
    )
    return report_table("calls_by_category", "Calls per category", caption, df, disp)


def answer_tables(outcomes: Iterable[Outcomeish]) -> tuple[list[Table], pd.DataFrame]:
    """The three tables of this module in report order and the :func:`calls_by_category`
    frame (for its figure); ``([], empty frame)`` for a run without answer facts
    (:func:`has_answers`)."""
    facts = as_facts(outcomes)
    if not has_answers(facts):
        return [], pd.DataFrame()
    by_cat = calls_by_category(facts)
    tables = [
        answer_table(answer_summary(facts)),
        stage_mix_units_table(stage_mix_units(facts)),
        calls_by_category_table(by_cat),
    ]
    return tables, by_cat
