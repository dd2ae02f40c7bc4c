"""The three findings a newcomer should read first, each with where the report shows it.

Pure functions over the outcome dicts of :func:`callscope.report.load.load_outcomes` and
the call flow of :func:`callscope.report.flow.call_flow`; ``callscope demo`` prints them after
the report is written. The three are fixed:

1. *where calls fail*: the share of attempt-1 calls that passed the cascade, and the most
   frequent stage and failure kind among the rest (the first figure, ``#overview``);
2. *a correction that works*: per feedback mode, the cases whose attempt 1 did not solve the
   case and whose final attempt did (solve = the SAAG paper's: the cascade passed with the
   gold name); the mode that fixed most, its solve rate beside direct's, and one example case
   (the case browser, filtered by the URL hash). When no mode solved one: *what the
   corrections did* instead, per mode (answers moved past a stage attempt 1 failed, and
   answers that lost something right: overcorrection), from the revisions table;
3. *how far to trust the diagnosis*: the detector audit's headline on the run's cases
   (``#audit-line``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from callscope.report.facts import OutcomeFacts, Outcomeish, as_facts
from callscope.report.flow import FIRST, NO_REPLY_STAGE, segment_label
from callscope.report.outcome import mode_sort_key
from callscope.report.revisions import KEPT_ITEMS


@dataclass(frozen=True)
class Finding:
    """One finding: a short ``title``, what the run shows (``text``) and where to look."""

    title: str
    text: str
    where: str


def where_calls_fail(flow: pd.DataFrame, report: str = "report.html") -> Finding:
    """Finding 1 from :func:`callscope.report.flow.call_flow` (pooled over models)."""
    first = flow[flow["bar"] == FIRST]
    where = f"{report}#overview: the first figure (top bar: attempt 1)"
    if first.empty:
        return Finding("Where calls fail", "no call was scored", where)
    total = int(first.groupby("model")["total"].first().sum())
    counts = first.groupby("segment", sort=False)["n"].sum()
    passed = int(counts.get("passed", 0))
    failed = counts.drop(labels=["passed"], errors="ignore")
    failed = failed[failed > 0]
    text = f"{passed} of {total} first attempts passed all three stages"
    if not failed.empty:
        top = str(failed.idxmax())
        stage = first[first["segment"] == top]["stage"].iloc[0]
        where_stopped = "no reply" if stage == NO_REPLY_STAGE else f"stage {stage}"
        text += (
            f"; the most frequent failure is {segment_label(top).split(': ', 1)[-1]} "
            f"({int(failed.max())} calls, {where_stopped})"
        )
        by_stage = first[(first["stage"].between(1, 3)) & (first["n"] > 0)]
        per = by_stage.groupby("stage")["n"].sum()
        text += " [" + ", ".join(f"stage {s}: {int(k)}" for s, k in per.items()) + "]"
    return Finding("Where calls fail", text + ".", where)


def correction_that_works(outcomes: Sequence[Outcomeish], report: str = "report.html") -> Finding:
    """Finding 2: the feedback mode that turned most unsolved first attempts into solved
    final attempts, its solve rate beside direct's, and its first such case (by id)."""
    gold = [f for f in as_facts(outcomes) if f.has_gold]
    fixed: dict[str, list[OutcomeFacts]] = {}
    rate: dict[str, tuple[int, int]] = {}
    for mode in sorted({f.mode for f in gold}, key=mode_sort_key):
        mine = [f for f in gold if f.mode == mode]
        rate[mode] = (sum(f.solved for f in mine), len(mine))
        fixed[mode] = sorted(
            (f for f in mine if f.solved and not f.first_solved),
            key=lambda f: str(f.case_id),
        )
    modes = [m for m in fixed if m != "direct" and fixed[m]]
    if not modes:
        return what_corrections_did(gold, report)
    best = max(modes, key=lambda m: (len(fixed[m]), -mode_sort_key(m)[0]))
    ex = fixed[best][0]
    stage = ex.first_stage
    kinds = ex.first_kinds
    said = ", ".join(segment_label(k).split(": ", 1)[-1] for k in kinds)
    what = stage.replace("stage", "stage ") + (f" ({said})" if said else "")
    k, n = rate[best]
    text = (
        f"{best} feedback solved {len(fixed[best])} case(s) that attempt 1 got wrong: solve "
        f"rate {k}/{n}"
    )
    if "direct" in rate:
        text += f" against direct's {rate['direct'][0]}/{rate['direct'][1]}"
    text += f"; e.g. {ex.case_id} failed at {what} and was solved at attempt {ex.solved_at}"
    hash_ = f"mode={best}&result=solved" + (f"&stage={stage[-1]}" if stage[-1].isdigit() else "")
    return Finding(
        "A correction that works",
        text + ".",
        f"{report}#{hash_}: the case browser, each attempt with its feedback",
    )


def what_corrections_did(outcomes: Sequence[Outcomeish], report: str = "report.html") -> Finding:
    """Finding 2 when no mode solved a case attempt 1 got wrong: per feedback mode, over the
    loops whose attempt 1 failed, how many answers passed a cascade stage attempt 1 had failed
    (``gained`` a stage item of :func:`callscope.report.revisions.revision_flags`) and how many
    lost something an earlier attempt had right (overcorrection,
    :func:`callscope.report.revisions.lost_any`)."""
    loops = [f for f in as_facts(outcomes) if f.mode != "direct" and not f.first_solved]
    parts = []
    for mode in sorted({f.mode for f in loops}, key=mode_sort_key):
        mine = [f for f in loops if f.mode == mode and f.revisions is not None]
        if not mine:
            continue
        deeper = sum(
            any(
                r is not None and r[1]
                for item, r in zip(KEPT_ITEMS, f.revisions, strict=True)  # type: ignore[arg-type]
                if item.startswith("stage")
            )
            for f in mine
        )
        lost = sum(f.lost_any for f in mine)
        parts.append(
            f"{mode} moved {deeper} of {len(mine)} past a stage they had failed and "
            f"lost something right in {lost}"
        )
    text = "no feedback mode solved a case that attempt 1 got wrong in this run"
    if parts:
        text += "; of the calls attempt 1 got wrong, " + "; ".join(parts)
    return Finding(
        "What the corrections did",
        text + ".",
        f"{report}#table-revisions: the revisions table (lost and gained, by stage)",
    )


def trust_the_diagnosis(audit_lines: Sequence[str], report: str = "report.html") -> Finding:
    """Finding 3: the audit headline(s) on the run's own gold cases."""
    text = "; ".join(audit_lines) if audit_lines else "the run's cases have no gold: no audit"
    return Finding(
        "How far to trust the diagnosis",
        text,
        f"{report}#overview: the line above the figure (`callscope audit` for the full table)",
    )


def findings(
    outcomes: Sequence[Outcomeish],
    flow: pd.DataFrame,
    audit_lines: Sequence[str],
    report: str = "report.html",
) -> list[Finding]:
    """The three findings in order (see the module doc)."""
    return [
        where_calls_fail(flow, report),
        correction_that_works(outcomes, report),
        trust_the_diagnosis(audit_lines, report),
    ]
