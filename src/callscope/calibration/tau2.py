"""The action-class diagnostic on τ²-bench runs (paper "Calibration is the Bottleneck", §4.2).

τ²-bench (sierra-research/tau2-bench) runs its own simulations; :mod:`callscope.benchmarks.tau2`
reads what it wrote (results files and run directories, tasks, tool definitions, which tools
write). This module reports the same GAR / Acc diagnostic as the BFCL one
(:mod:`callscope.calibration.diagnostics`), plus the SAAG stage mix of every agent tool call and
CONFIRM (did the user confirm before each database write, :mod:`callscope.calibration.confirm`).

**Gold classes** (per task): TOOL_CALL or REFUSE from the task's expected actions
(:func:`callscope.benchmarks.tau2.tasks.task_gold_class`). ASK is an extra label: the task's
scenario text is scanned for the cues of ``Tau2Config.ask_cues``
(:func:`callscope.benchmarks.tau2.tasks.ask_cue_hits`); the
hits are listed as *candidates* for a person to check. ``Tau2Config.ask_tasks`` is the checked
list (task ids, or ``domain:id``); when it is ``None`` the unchecked candidates serve as ASK
gold and the result says so. A task can thus be in its TOOL_CALL or REFUSE row and in the ASK
row. Tasks come from each run's own ``tasks`` list; a separate tasks file (``tasks=``)
overrides embedded tasks with the same id and supplies missing ones, in every run read. A
simulation whose task cannot be found is reported in ``problems``.

**GAR per class** (one case = one simulation, i.e. task x trial; :data:`GAR_RULES`):

* REFUSE: the agent called no *write* tool
  (:func:`callscope.benchmarks.tau2.write_tools.decide_write_tools`, with the rules of
  :class:`Tau2Config`);
* ASK: at least one agent message is an ask (the multi-label classifier of
  :mod:`callscope.calibration.classify`: ``?`` or a request cue; greeting formulas such as "How
  can I help you today?" are stripped first and are not asks);
* TOOL_CALL: ``reward_info.action_checks`` has no failed check. A simulation without action
  checks (no ``reward_info``, or none computed) has no GAR verdict: it is left out of its row
  (GAR and Acc alike) and counted in ``n_gar_unknown``.

**Acc** is ``reward_info.reward == 1``; a simulation without a reward is left out of Acc.
Wilson 95% intervals, GAR − Acc, the bound check (Acc > GAR: "bound violation", with the
number of passed cases without the gold class) and the large-slack flag are computed by
:func:`callscope.calibration.diagnostics.category_row`, so the rows carry the same keys as the
BFCL rows (``category`` is the domain; the turn-level columns are ``None``). A simulation that
ended in an error (``termination_reason`` in
:data:`callscope.benchmarks.tau2.messages.TERMINATION_ERRORS`) stays in the denominators and is
counted in ``n_errors``.

**SAAG stage mix.** Every agent tool call is run through :func:`callscope.saag.cascade.diagnose`
against the tools the run exposes and the *user text so far* (the user messages before the
call, joined by newlines). Without tool schemas (τ² writes ``tool_defs`` only on request)
only stage 1 is checked, against the tool names known from the run: the names of the tasks'
expected actions and of calls that got a non-error tool response anywhere in the run. A call
whose name is known is then ``unchecked`` (stages 2-3 not run). Stage 3 grounds arguments in
the user's words only, so an id the agent read from a tool result counts as ungrounded:
read stage 3 on τ² as "not said by the user".

The tables are rendered by :mod:`callscope.calibration.tau2_tables`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table as RichTable

from callscope.benchmarks.tau2.messages import agent_calls, known_tool_names, tool_types
from callscope.benchmarks.tau2.reader import Tau2Run, find_tau2_runs, load_tasks
from callscope.benchmarks.tau2.tasks import (
    DEFAULT_ASK_SCENARIO_CUES,
    ask_cue_hits,
    cue_snippet,
    scenario_text,
    task_gold_class,
)
from callscope.benchmarks.tau2.write_tools import DEFAULT_WRITE_PATTERN, decide_write_tools
from callscope.calibration.classify import DEFAULT, ClassifierConfig
from callscope.calibration.confirm import DEFAULT_CONFIRM, ConfirmConfig, agreement_stats
from callscope.calibration.diagnostics import (
    CaseClasses,
    DiagnosticsSettings,
    capability_check,
    category_row,
)
from callscope.calibration.tau2_simulation import (
    GAR_RULES,
    GOLD_ORDER,
    CallRecord,
    SimulationRecord,
    diagnose_simulation,
)
from callscope.calibration.tau2_tables import (
    domain_table,
    gar_table,
    report_markdown,
)
from callscope.core.stats import rate_ci
from callscope.models.base import ChatModel
from callscope.types import ACTION_CLASSES

__all__ = [
    "DEFAULT_TAU2",
    "GAR_RULES",
    "CallRecord",
    "SimulationRecord",
    "Tau2Config",
    "Tau2Diagnostics",
    "is_ask_gold",
    "tau2_diagnostics",
]


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Tau2Config:
    """Every choice of the τ² diagnostic; :meth:`to_dict` goes into every result.

    ``ask_tasks``: ``None`` = use the ASK candidates of the scenario scan as ASK gold;
    a set (task ids or ``domain:id``, possibly empty) = exactly those tasks are ASK gold.
    ``write_tools`` .. ``use_tool_docs`` are the write-tool rules
    (:class:`callscope.benchmarks.tau2.write_tools.WriteToolRules`; a config is passed to
    :func:`~callscope.benchmarks.tau2.write_tools.decide_write_tools` as is).
    """

    classifier: ClassifierConfig = DEFAULT
    write_tools: frozenset[str] = frozenset()
    read_tools: frozenset[str] = frozenset()
    write_pattern: str = DEFAULT_WRITE_PATTERN
    use_tau2_tool_types: bool = True
    use_tool_docs: bool = True
    ask_cues: tuple[str, ...] = DEFAULT_ASK_SCENARIO_CUES
    ask_tasks: frozenset[str] | None = None
    confirm: ConfirmConfig = DEFAULT_CONFIRM
    slack_threshold: float = 0.2
    t_cap: int = 10
    z: float = 1.96

    def __post_init__(self) -> None:
        re.compile(self.write_pattern)

    def to_dict(self) -> dict[str, Any]:
        """Every setting, and the GAR rules, as JSON-ready values."""
        return {
            "classifier": self.classifier.to_dict(),
            "write_tools": sorted(self.write_tools),
            "read_tools": sorted(self.read_tools),
            "write_pattern": self.write_pattern,
            "use_tau2_tool_types": self.use_tau2_tool_types,
            "use_tool_docs": self.use_tool_docs,
            "ask_cues": list(self.ask_cues),
            "ask_tasks": None if self.ask_tasks is None else sorted(self.ask_tasks),
            "confirm": self.confirm.to_dict(),
            "slack_threshold": self.slack_threshold,
            "t_cap": self.t_cap,
            "z": self.z,
            "gar_rules": dict(GAR_RULES),
        }

    def settings(self) -> DiagnosticsSettings:
        """The settings of the shared row computation (multi-label classes)."""
        return DiagnosticsSettings(
            slack_threshold=self.slack_threshold, t_cap=self.t_cap, multi_label=True, z=self.z
        )


DEFAULT_TAU2 = Tau2Config()


# --------------------------------------------------------------------------- ASK gold


def is_ask_gold(domain: str, task_id: str, candidate: bool, config: Tau2Config) -> bool:
    """Whether a task is ASK gold: its scan ``candidate`` status when ``config.ask_tasks`` is
    ``None``, else whether the checked list names it (``id`` or ``domain:id``)."""
    if config.ask_tasks is None:
        return candidate
    return task_id in config.ask_tasks or f"{domain}:{task_id}" in config.ask_tasks


# --------------------------------------------------------------------------- rows


def _gold_rows(
    sims: Sequence[SimulationRecord], settings: DiagnosticsSettings
) -> list[dict[str, Any]]:
    rows = []
    for domain in sorted({s.domain for s in sims}):
        for gold in GOLD_ORDER:
            members = [s for s in sims if s.domain == domain and gold in s.gar]
            if not members:
                continue
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
            row.update(
                gold_class=gold,
                domain=domain,
                gar_rule=GAR_RULES[gold],
                n_tasks=len({s.task_id for s in members}),
                n_gar_unknown=len(members) - len(known),
                n_no_reward=sum(s.passed is None for s in known),
                emission_gold_k=sum(gold in s.union for s in known),
            )
            rows.append(row)
    return rows


def _rate_dict(k: int, n: int, z: float) -> dict[str, float | None]:
    rate, lo, hi = rate_ci(k, n, z)
    return {"rate": rate, "ci_low": lo, "ci_high": hi}


def _confirm_summary(calls: Sequence[CallRecord], z: float) -> dict[str, Any]:
    writes = [c for c in calls if c.write]
    k = sum(bool(c.confirm_rule and c.confirm_rule.confirmed) for c in writes)
    out: dict[str, Any] = {
        "write_calls": len(writes),
        "rule_k": k,
        "rule": _rate_dict(k, len(writes), z),
    }
    judged = [c for c in writes if c.confirm_judge is not None]
    if judged:
        stats = agreement_stats(
            [bool(c.confirm_rule and c.confirm_rule.confirmed) for c in judged],
            [c.confirm_judge.confirmed for c in judged if c.confirm_judge is not None],
        )
        out["judge"] = {**stats, **_rate_dict(stats["judge_yes"], stats["n"], z)}
    else:
        out["judge"] = None
    return out


def _domain_rows(
    sims: Sequence[SimulationRecord],
    calls: Sequence[CallRecord],
    runs: Sequence[Tau2Run],
    writes: Mapping[str, Mapping[str, Mapping[str, Any]]],
    z: float,
) -> list[dict[str, Any]]:
    rows = []
    for domain in sorted({s.domain for s in sims} | {r.domain for r in runs}):
        d_sims = [s for s in sims if s.domain == domain]
        d_calls = [c for c in calls if c.domain == domain]
        counts = Counter(c for s in d_sims for m in s.message_classes for c in m)
        stages = Counter("unchecked" if c.stage is None else str(c.stage) for c in d_calls)
        with_schemas = [r.functions is not None for r in runs if r.domain == domain]
        mode = (
            "schemas" if all(with_schemas) else "names_only" if not any(with_schemas) else "mixed"
        )
        rows.append(
            {
                "domain": domain,
                "n_simulations": len(d_sims),
                "n_tasks": len({s.task_id for s in d_sims}),
                "assistant_messages": sum(len(s.message_classes) for s in d_sims),
                "class_counts": {c: counts.get(c, 0) for c in ACTION_CLASSES},
                "tool_calls": len(d_calls),
                "stage_mode": mode,
                "stage_mix": {k: stages.get(k, 0) for k in ("0", "1", "2", "3", "unchecked")},
                "write_tools": sorted(n for n, w in writes.get(domain, {}).items() if w["write"]),
                "confirm": _confirm_summary(d_calls, z),
            }
        )
    return rows


# --------------------------------------------------------------------------- result


@dataclass
class Tau2Diagnostics:
    """Result of :func:`tau2_diagnostics`.

    ``rows``: one per (domain, gold class), with the keys of
    :mod:`callscope.calibration.diagnostics` rows (``category`` = domain) plus ``domain``,
    ``gar_rule``, ``n_tasks``, ``n_gar_unknown``, ``n_no_reward``, ``emission_gold_k``.
    ``domain_rows``: per domain, emission class counts, the SAAG stage mix of the agent's tool
    calls, the write tools and CONFIRM (rule, and judge with agreement when it ran).
    ``ask_candidates``: the ASK scan hits for a person to check. ``write_tools``: per domain,
    each tool's write decision and its source. ``problems``: what could not be read.
    """

    rows: list[dict[str, Any]]
    domain_rows: list[dict[str, Any]]
    class_counts: dict[str, int]
    capability: dict[str, Any]
    confirm: dict[str, Any]
    ask_candidates: list[dict[str, Any]]
    ask_gold_source: str
    write_tools: dict[str, dict[str, dict[str, Any]]]
    sources: list[dict[str, Any]]
    problems: list[str]
    config: dict[str, Any]
    simulations: list[SimulationRecord] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)

    def to_dict(self, include_details: bool = False) -> dict[str, Any]:
        """A JSON-serialisable dict; ``include_details`` adds every simulation and call."""
        d: dict[str, Any] = {
            "benchmark": "tau2",
            "rows": self.rows,
            "domain_rows": self.domain_rows,
            "class_counts": self.class_counts,
            "capability": self.capability,
            "confirm": self.confirm,
            "ask_candidates": self.ask_candidates,
            "ask_gold_source": self.ask_gold_source,
            "write_tools": self.write_tools,
            "sources": self.sources,
            "problems": self.problems,
            "config": self.config,
        }
        if include_details:
            d["simulations"] = [s.to_dict() for s in self.simulations]
            d["calls"] = [c.to_dict() for c in self.calls]
        return d

    def to_markdown(self) -> str:
        """Both tables, the ASK candidates, the write tools and the problems, as Markdown."""
        return report_markdown(self)

    def rich_table(self, title: str | None = "τ²-bench action-class diagnostics") -> RichTable:
        """The (domain, gold class) rows as a :class:`rich.table.Table`."""
        return gar_table(self.rows, title).to_rich()

    def rich_domain_table(self, title: str | None = "τ²-bench tool calls and CONFIRM") -> RichTable:
        """The per-domain rows as a :class:`rich.table.Table`."""
        return domain_table(self.domain_rows, title).to_rich()


# --------------------------------------------------------------------------- entry point


def tau2_diagnostics(
    run_dir: str | Path | Sequence[str | Path],
    tasks: str | Path | Sequence[Mapping[str, Any]] | None = None,
    *,
    judge: ChatModel | None = None,
    config: Tau2Config | ClassifierConfig = DEFAULT_TAU2,
) -> Tau2Diagnostics:
    """The τ² action-class diagnostic of the run(s) at ``run_dir`` (one path or several; what
    a path may be: :func:`callscope.benchmarks.tau2.reader.find_tau2_runs`).

    ``tasks``: a tasks file path or a list of task objects, overriding the runs' embedded
    tasks by id. ``judge``: a :class:`~callscope.models.base.ChatModel` asked about every
    write call (CONFIRM); its agreement with the rule is reported. Raises
    ``FileNotFoundError`` / :class:`Tau2FormatError` when a path holds no τ² results.
    ``config`` may also be a bare :class:`~callscope.calibration.classify.ClassifierConfig`
    (e.g. a classifier preset): the other settings then take their defaults.
    """
    if isinstance(config, ClassifierConfig):
        config = Tau2Config(classifier=config)
    paths = [run_dir] if isinstance(run_dir, str | Path) else list(run_dir)
    runs: list[Tau2Run] = []
    problems: list[str] = []
    for path in paths:
        found, found_problems = find_tau2_runs(path)
        runs.extend(found)
        problems.extend(found_problems)
    external = {str(t["id"]): t for t in load_tasks(tasks)}

    sims: list[SimulationRecord] = []
    calls: list[CallRecord] = []
    candidates: list[dict[str, Any]] = []
    writes: dict[str, dict[str, dict[str, Any]]] = {}
    seen_candidates: set[tuple[str, str]] = set()
    for run in runs:
        problems.extend(run.problems)
        task_map = {str(t["id"]): t for t in run.tasks if t.get("id") is not None}
        task_map.update(external)
        used = {str(sim["task_id"]) for sim in run.simulations}
        run_tasks = {tid: t for tid, t in task_map.items() if tid in used}
        cand_cues: dict[str, list[str]] = {}
        for tid, task in run_tasks.items():
            hits = ask_cue_hits(scenario_text(task), config.ask_cues)
            if hits:
                cand_cues[tid] = hits
                if (run.domain, tid) not in seen_candidates:
                    seen_candidates.add((run.domain, tid))
                    candidates.append(
                        {
                            "domain": run.domain,
                            "task_id": tid,
                            "cues": hits,
                            "snippet": cue_snippet(scenario_text(task), hits[0]),
                            "used_as_gold": is_ask_gold(run.domain, tid, True, config),
                        }
                    )
        names = {
            c["name"]
            for s in run.simulations
            for m in s["messages"]
            if m.get("role") == "assistant"
            for c in agent_calls(m)
        }
        run_writes = decide_write_tools(names, run.functions, tool_types(run.simulations), config)
        domain_writes = writes.setdefault(run.domain, {})
        for name, decision in run_writes.items():
            domain_writes.setdefault(name, decision)
        known = known_tool_names(run, run_tasks) if run.functions is None else set()
        no_gold: set[str] = set()
        for sim in run.simulations:
            tid = str(sim["task_id"])
            task = task_map.get(tid)
            if task is None:
                problems.append(
                    f"{run.source}: simulation {sim.get('id')}: task {tid!r} not found in the "
                    "run's tasks or the tasks file; left out of the GAR rows"
                )
            elif task_gold_class(task) is None and tid not in no_gold:
                no_gold.add(tid)
                problems.append(
                    f"{run.source}: task {tid!r} has no evaluation_criteria.actions; "
                    "no TOOL_CALL/REFUSE gold"
                )
            ask_gold = is_ask_gold(run.domain, tid, tid in cand_cues, config)
            record, sim_calls = diagnose_simulation(
                run,
                sim,
                task,
                ask_gold,
                run_writes,
                known,
                config.classifier,
                config.confirm,
                judge,
            )
            sims.append(record)
            calls.extend(sim_calls)

    settings = config.settings()
    totals = Counter(c for s in sims for m in s.message_classes for c in m)
    class_counts = {c: totals.get(c, 0) for c in ACTION_CLASSES}
    if config.ask_tasks is None:
        ask_source = "unchecked candidates from the scenario cue scan"
    else:
        ask_source = f"checked list of {len(config.ask_tasks)} task(s)"
    return Tau2Diagnostics(
        rows=_gold_rows(sims, settings),
        domain_rows=_domain_rows(sims, calls, runs, writes, config.z),
        class_counts=class_counts,
        capability=capability_check(class_counts, config.t_cap),
        confirm=_confirm_summary(calls, config.z),
        ask_candidates=candidates,
        ask_gold_source=ask_source,
        write_tools=writes,
        sources=[
            {
                "source": r.source,
                "layout": r.layout,
                "domain": r.domain,
                "n_simulations": len(r.simulations),
                "tool_schemas": r.functions is not None,
            }
            for r in runs
        ],
        problems=problems,
        config=config.to_dict(),
        simulations=sims,
        calls=calls,
    )
