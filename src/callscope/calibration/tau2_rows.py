"""The rows of the τ²-bench diagnostic, computed from diagnosed simulations
(:class:`~callscope.records.SimulationRecord`, :class:`~callscope.records.CallRecord`):

* :func:`gold_rows`: GAR and Acc per (group, domain, gold class [, reference path]), by
  :func:`callscope.calibration.diagnostics.category_row` (Wilson intervals, the bound check,
  the flags), with τ²'s counts (simulations without a GAR verdict or a reward, ended on
  ``max_steps``, reference paths, failed action checks by kind);
* :func:`acc_rows`: the file-level Acc (the leaderboard's pass^1) per (group, domain);
* :func:`domain_rows`: per (group, domain), emission class counts, the SAAG stage mix of the
  agent's tool calls, the write tools and CONFIRM (:func:`confirm_summary`).

Rows are grouped per agent / user simulator pair (first seen first), then by domain;
``pooled`` adds rows pooling every pair (:data:`POOLED`). The rules are stated in
:mod:`callscope.calibration.tau2`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from callscope.benchmarks.tau2.reader import Tau2Run
from callscope.calibration.confirm import agreement_stats
from callscope.calibration.diagnostics import CaseClasses, DiagnosticsSettings, category_row
from callscope.calibration.tau2_simulation import GAR_RULES, GOLD_ORDER
from callscope.core.stats import rate_ci
from callscope.records import (
    CallRecord,
    ConfirmSummary,
    RateCI,
    SimulationRecord,
    Tau2AccRow,
    Tau2DomainRow,
    WriteDecision,
)
from callscope.types import ACTION_CLASSES, TOOL_CALL

#: The group label of rows that pool every agent / user pair (``Tau2Config.pooled``).
POOLED = "pooled (all agents)"


def _partitions(
    sims: Sequence[SimulationRecord], pooled: bool
) -> list[tuple[str, str, list[SimulationRecord]]]:
    """``(group, domain, simulations)`` in group order (first seen), then domain; pooled
    partitions last when asked and there is more than one group."""
    groups = list(dict.fromkeys(s.group for s in sims))
    out = [
        (g, d, [s for s in sims if s.group == g and s.domain == d])
        for g in groups
        for d in sorted({s.domain for s in sims if s.group == g})
    ]
    if pooled and len(groups) > 1:
        out += [
            (POOLED, d, [s for s in sims if s.domain == d])
            for d in sorted({s.domain for s in sims})
        ]
    return out


def _class_row(
    group: str,
    domain: str,
    gold: str,
    members: Sequence[SimulationRecord],
    settings: DiagnosticsSettings,
    path: str | None,
) -> dict[str, Any]:
    known = [s for s in members if s.gar[gold] is not None]
    cases = [
        CaseClasses(
            id=s.id,
            category=domain,
            gold_class=gold,
            turn_classes=[s.message_classes],
            union=s.union,
            gar_case=bool(s.gar[gold]),
            due_hits=[],
            passed=s.passed,
            error=s.error,
        )
        for s in known
    ]
    row = category_row(domain, cases, settings, None)
    if row.get("acc_source") == "cases":
        row["acc_source"] = "reward"
    failures = Counter(k for s in known for k in s.check_failures if gold == TOOL_CALL)
    row.update(
        gold_class=gold,
        group=group,
        domain=domain,
        path=path,
        gar_rule=GAR_RULES[gold],
        n_tasks=len({s.task_id for s in members}),
        n_gar_unknown=len(members) - len(known),
        n_no_reward=sum(s.passed is None for s in known),
        n_max_steps=sum(s.max_steps for s in members),
        n_write_path=sum(s.path == "write" for s in members),
        n_read_path=sum(s.path == "read-only" for s in members),
        check_failures={k: failures[k] for k in ("count", "arguments", "order", "other")},
        emission_gold_k=sum(gold in s.union for s in known),
    )
    return row


def gold_rows(
    sims: Sequence[SimulationRecord], settings: DiagnosticsSettings, pooled: bool = False
) -> list[dict[str, Any]]:
    """One row per (group, domain, gold class); a TOOL_CALL row is followed by its write-path
    and read-only-path rows when the tasks have both. Excluded simulations are left out."""
    rows = []
    kept = [s for s in sims if s.excluded is None]
    for group, domain, d_sims in _partitions(kept, pooled):
        for gold in GOLD_ORDER:
            members = [s for s in d_sims if gold in s.gar]
            if not members:
                continue
            rows.append(_class_row(group, domain, gold, members, settings, None))
            paths = [p for p in ("write", "read-only") if any(s.path == p for s in members)]
            if gold == TOOL_CALL and len(paths) > 1:
                for path in paths:
                    sub = [s for s in members if s.path == path]
                    rows.append(_class_row(group, domain, gold, sub, settings, path))
    return rows


def acc_rows(
    sims: Sequence[SimulationRecord], runs: Sequence[Tau2Run], z: float, pooled: bool = False
) -> list[Tau2AccRow]:
    """The file-level Acc (the leaderboard's pass^1: share of simulations with reward 1,
    Wilson interval, over every simulation with a reward) per (group, domain), with the
    simulations that ended on ``max_steps``, in error, without reward, or were excluded."""
    rows: list[Tau2AccRow] = []
    for group, domain, members in _partitions(sims, pooled):
        rewarded = [s for s in members if s.passed is not None]
        k = sum(bool(s.passed) for s in rewarded)
        acc, lo, hi = rate_ci(k, len(rewarded), z)
        sources = sorted({s.source for s in members})
        pair = next((r for r in runs if r.source in sources), None)
        rows.append(
            Tau2AccRow(
                group=group,
                domain=domain,
                agent=pair.agent if pair and group != POOLED else None,
                user=pair.user if pair and group != POOLED else None,
                sources=sources,
                n_simulations=len(members),
                n_tasks=len({s.task_id for s in members}),
                acc_k=k,
                acc_n=len(rewarded),
                acc=acc,
                acc_ci_low=lo,
                acc_ci_high=hi,
                n_no_reward=len(members) - len(rewarded),
                n_max_steps=sum(s.max_steps for s in members),
                n_errors=sum(s.error is not None for s in members),
                n_mismatch=sum(s.mismatch is not None for s in members),
                n_excluded=sum(s.excluded is not None for s in members),
            )
        )
    return rows


def _rate(k: int, n: int, z: float) -> RateCI:
    rate, lo, hi = rate_ci(k, n, z)
    return RateCI(rate=rate, ci_low=lo, ci_high=hi)


def confirm_summary(calls: Sequence[CallRecord], z: float) -> ConfirmSummary:
    """CONFIRM over the write calls among ``calls``: the rule's confirmed share (Wilson
    interval) and, when a judge ran, its agreement with the rule over the calls it decided
    (:func:`~callscope.calibration.confirm.agreement_stats`) and its YES rate."""
    writes = [c for c in calls if c.write]
    k = sum(bool(c.confirm_rule and c.confirm_rule.confirmed) for c in writes)
    judged = [c for c in writes if c.confirm_judge is not None]
    judge: dict[str, Any] | None = None
    if judged:
        stats = agreement_stats(
            [bool(c.confirm_rule and c.confirm_rule.confirmed) for c in judged],
            [c.confirm_judge.confirmed for c in judged if c.confirm_judge is not None],
        )
        judge = {**stats, **_rate(stats["judge_yes"], stats["n"], z)}
    return ConfirmSummary(
        write_calls=len(writes), rule_k=k, rule=_rate(k, len(writes), z), judge=judge
    )


def domain_rows(
    sims: Sequence[SimulationRecord],
    calls: Sequence[CallRecord],
    modes: Mapping[str, str],
    writes: Mapping[str, Mapping[str, WriteDecision]],
    z: float,
    pooled: bool = False,
) -> list[Tau2DomainRow]:
    """Per (group, domain): emission class counts, the SAAG stage mix of the agent's calls
    (``stage_mode``: ``schemas`` = the run's own, ``stock schemas`` = τ²'s stock ones,
    ``names_only``, or ``mixed``), the write tools and CONFIRM."""
    rows: list[Tau2DomainRow] = []
    for group, domain, d_sims in _partitions(sims, pooled):
        ids = {(s.source, s.id) for s in d_sims}
        d_calls = [c for c in calls if (c.source, c.simulation_id) in ids]
        counts = Counter(c for s in d_sims for m in s.message_classes for c in m)
        stages = Counter("unchecked" if c.stage is None else str(c.stage) for c in d_calls)
        kinds = {modes.get(s.source, "names_only") for s in d_sims}
        mode = kinds.pop() if len(kinds) == 1 else "mixed"
        rows.append(
            Tau2DomainRow(
                group=group,
                domain=domain,
                n_simulations=len(d_sims),
                n_tasks=len({s.task_id for s in d_sims}),
                assistant_messages=sum(len(s.message_classes) for s in d_sims),
                class_counts={c: counts.get(c, 0) for c in ACTION_CLASSES},
                tool_calls=len(d_calls),
                stage_mode=mode,
                stage_mix={k: stages.get(k, 0) for k in ("0", "1", "2", "3", "unchecked")},
                write_tools=sorted(n for n, w in writes.get(domain, {}).items() if w["write"]),
                confirm=confirm_summary(d_calls, z),
            )
        )
    return rows
