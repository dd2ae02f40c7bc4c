"""The action-class diagnostic on τ²-bench runs (paper "Calibration is the Bottleneck", §4.2).

τ²-bench (sierra-research/tau2-bench) runs its own simulations; :mod:`callscope.benchmarks.tau2`
reads what it wrote (results files and run directories, tasks, tool definitions, which tools
write) into :class:`~callscope.benchmarks.tau2.source.Tau2Results`. This module is the pure
computation over those records (:func:`diagnose_tau2`: no files, no rendering, the CONFIRM
judge passed in as a callable): the same GAR / Acc diagnostic as the BFCL one
(:mod:`callscope.calibration.diagnostics`), plus the SAAG stage mix of every agent tool call and
CONFIRM (did the user confirm before each database write, :mod:`callscope.calibration.confirm`).
Its records (:class:`~callscope.records.SimulationRecord`, :class:`~callscope.records.CallRecord`)
live in :mod:`callscope.records`; reading and diagnosing files is
:func:`callscope.runs.from_results.tau2_diagnostics`.

**Gold classes** (per task): TOOL_CALL or REFUSE from the task's expected actions
(:func:`callscope.benchmarks.tau2.tasks.task_gold_class`). ASK is an extra label: the task's
scenario text is scanned for the cues of ``Tau2Config.ask_cues``
(:func:`callscope.benchmarks.tau2.tasks.ask_cue_hits`); the
hits are listed as *candidates* for a person to check. ``Tau2Config.ask_tasks`` is the checked
list (task ids, or ``domain:id``); when it is ``None`` the unchecked candidates serve as ASK
gold and the result says so, except candidates whose cues occur only in scenario text shared
by the run's tasks (boilerplate: listed, not used unless ``Tau2Config.boilerplate_ask``). A
task can thus be in its TOOL_CALL or REFUSE row and in the ASK row. Tasks come from each
run's ``task_map`` (its own ``tasks`` list, and a tasks file of its domain overriding tasks
with the same id and supplying missing ones:
:func:`callscope.benchmarks.tau2.source.read_tau2_results`). A simulation whose task cannot be
found is reported in ``problems``.

**GAR per class** (one case = one simulation, i.e. task x trial; :data:`GAR_RULES`):

* REFUSE: the agent called no *write* tool
  (:func:`callscope.benchmarks.tau2.write_tools.decide_write_tools`, with the rules of
  :class:`Tau2Config`);
* ASK: at least one agent message is an ask (the multi-label classifier of
  :mod:`callscope.calibration.classify`: ``?`` or a request cue; greeting formulas such as "How
  can I help you today?" are stripped first and are not asks);
* TOOL_CALL: ``reward_info.action_checks`` has no failed check of the *agent's* actions
  (the user's, ``requestor == "user"``, are left out; a task whose actions are all the user's
  has no TOOL_CALL / REFUSE gold). A simulation without agent action checks has no GAR
  verdict: it is left out of its row (GAR and Acc alike) and counted in ``n_gar_unknown``.
  A TOOL_CALL row is split by the reference path (``write`` / ``read-only``) when both
  occur, and counts the failed checks by kind (count, arguments, order).

**Groups.** Rows are per agent / user-simulator pair (``info.agent_info.llm`` /
``user_info.llm``), one table each; ``Tau2Config.pooled`` adds pooled rows. The file-level Acc
(pass^1: reward 1 over every simulation with a reward) is reported per group and domain,
with the simulations that ended on ``max_steps``.

**Task-id consistency.** A simulation whose action checks are not its task's actions
(:func:`callscope.benchmarks.tau2.messages.task_mismatch`) makes its whole run suspect: a
warning says so and the run is left out of the per-class rows unless
``Tau2Config.allow_task_mismatch``. A tasks file of another domain is refused.

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
τ²'s stock schemas of the run's domain are used (``stage_mode`` ``stock schemas``,
:mod:`callscope.benchmarks.tau2.stock_tools`); for another domain only stage 1 is checked, against the tool names known from the run: the names of the tasks'
expected actions and of calls that got a non-error tool response anywhere in the run. A call
whose name is known is then ``unchecked`` (stages 2-3 not run). Stage 3 grounds arguments in
the user's words only, so an id the agent read from a tool result counts as ungrounded:
read stage 3 on τ² as "not said by the user".

One simulation is diagnosed by :mod:`callscope.calibration.tau2_simulation`, the rows are
computed by :mod:`callscope.calibration.tau2_rows`, and the tables
(:class:`callscope.core.table.Table`) are built by :mod:`callscope.report.tau2_tables`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from callscope.benchmarks.tau2.messages import (
    agent_calls,
    known_tool_names,
    task_mismatch,
    tool_types,
)
from callscope.benchmarks.tau2.source import Tau2Results
from callscope.benchmarks.tau2.stock_tools import stock_functions
from callscope.benchmarks.tau2.tasks import (
    DEFAULT_ASK_SCENARIO_CUES,
    boilerplate_sentences,
    classify_cue_hits,
    cue_snippet,
    scenario_text,
    task_actions,
    task_gold_class,
    user_only_actions,
)
from callscope.benchmarks.tau2.write_tools import DEFAULT_WRITE_PATTERN, decide_write_tools
from callscope.calibration.classify import DEFAULT, ClassifierConfig
from callscope.calibration.confirm import DEFAULT_CONFIRM, ConfirmConfig, ConfirmJudge
from callscope.calibration.diagnostics import DiagnosticsSettings, capability_check
from callscope.calibration.tau2_rows import acc_rows, confirm_summary, domain_rows, gold_rows
from callscope.calibration.tau2_simulation import GAR_RULES, diagnose_simulation
from callscope.records import (
    AskCandidate,
    CallRecord,
    ConfirmSummary,
    SimulationRecord,
    Tau2AccRow,
    Tau2DomainRow,
    WriteDecision,
)
from callscope.types import ACTION_CLASSES

__all__ = [
    "DEFAULT_TAU2",
    "GAR_RULES",
    "Tau2Config",
    "Tau2Diagnostics",
    "diagnose_tau2",
    "is_ask_gold",
]


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Tau2Config:
    """Every choice of the τ² diagnostic; :meth:`to_dict` goes into every result.

    ``ask_tasks``: ``None`` = use the ASK candidates of the scenario scan as ASK gold;
    a set (task ids or ``domain:id``, possibly empty) = exactly those tasks are ASK gold.
    ``write_tools`` .. ``use_stock_types`` are the write-tool rules
    (:class:`callscope.benchmarks.tau2.write_tools.WriteToolRules`; a config is passed to
    :func:`~callscope.benchmarks.tau2.write_tools.decide_write_tools` as is).
    ``use_stock_schemas``: check calls against τ²'s stock tool schemas when a run of a stock
    domain saved none. ``boilerplate_ask``: let candidates whose cues occur only in shared
    scenario boilerplate serve as ASK gold too. ``allow_task_mismatch``: compute the
    per-class rows of runs whose action checks belong to other tasks (left out otherwise).
    ``pooled``: add rows pooling every agent / user pair (one group per pair otherwise).
    """

    classifier: ClassifierConfig = DEFAULT
    write_tools: frozenset[str] = frozenset()
    read_tools: frozenset[str] = frozenset()
    write_pattern: str = DEFAULT_WRITE_PATTERN
    use_tau2_tool_types: bool = True
    use_tool_docs: bool = True
    use_stock_types: bool = True
    use_stock_schemas: bool = True
    ask_cues: tuple[str, ...] = DEFAULT_ASK_SCENARIO_CUES
    ask_tasks: frozenset[str] | None = None
    boilerplate_ask: bool = False
    allow_task_mismatch: bool = False
    pooled: bool = False
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
            "use_stock_types": self.use_stock_types,
            "use_stock_schemas": self.use_stock_schemas,
            "ask_cues": list(self.ask_cues),
            "ask_tasks": None if self.ask_tasks is None else sorted(self.ask_tasks),
            "boilerplate_ask": self.boilerplate_ask,
            "allow_task_mismatch": self.allow_task_mismatch,
            "pooled": self.pooled,
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


# --------------------------------------------------------------------------- result


@dataclass
class Tau2Diagnostics:
    """Result of :func:`diagnose_tau2`.

    ``rows``: one per (group, domain, gold class [, reference path]), with the keys of
    :mod:`callscope.calibration.diagnostics` rows (``category`` = domain) plus ``group`` (the
    agent / user simulator pair), ``domain``, ``path`` (``None``, ``write`` or
    ``read-only``), ``gar_rule``, ``n_tasks``, ``n_gar_unknown``, ``n_no_reward``,
    ``n_max_steps``, ``n_write_path`` / ``n_read_path``, ``check_failures`` (failed agent
    checks by kind), ``emission_gold_k``. ``acc_rows``: the file-level Acc (pass^1) per
    (group, domain). ``domain_rows``: per (group, domain), emission class counts, the SAAG
    stage mix of the agent's tool calls, the write tools and CONFIRM (rule, and judge with
    agreement when it ran). ``groups``: the agent / user pairs in row order.
    ``ask_candidates``: the ASK scan hits for a person to check (``boilerplate``: every cue
    only in shared scenario text). ``write_tools``: per domain, each tool's write decision
    and its source. ``warnings``: what makes numbers untrustworthy (task-id mismatches, a
    failing capability check); ``problems``: what could not be read or used; ``left_out``:
    how many simulations that were read are left out of the GAR rows (their task is not
    found: input lost, which makes ``calibrate from-tau2`` exit 1).
    """

    rows: list[dict[str, Any]]
    domain_rows: list[Tau2DomainRow]
    class_counts: dict[str, int]
    capability: dict[str, Any]
    confirm: ConfirmSummary
    ask_candidates: list[AskCandidate]
    ask_gold_source: str
    write_tools: dict[str, dict[str, WriteDecision]]
    sources: list[dict[str, Any]]
    problems: list[str]
    config: dict[str, Any]
    simulations: list[SimulationRecord] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    acc_rows: list[Tau2AccRow] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    left_out: int = 0

    def to_dict(self, include_details: bool = False) -> dict[str, Any]:
        """A JSON-serialisable dict; ``include_details`` adds every simulation and call."""
        d: dict[str, Any] = {
            "benchmark": "tau2",
            "warnings": self.warnings,
            "groups": self.groups,
            "acc_rows": self.acc_rows,
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
            "left_out": self.left_out,
            "config": self.config,
        }
        if include_details:
            d["simulations"] = [s.to_dict() for s in self.simulations]
            d["calls"] = [c.to_dict() for c in self.calls]
        return d

    def group_rows(self, group: str) -> list[dict[str, Any]]:
        """The (domain, gold class) rows of one group."""
        return [r for r in self.rows if r.get("group") == group]


# --------------------------------------------------------------------------- entry point


def diagnose_tau2(
    results: Tau2Results,
    *,
    judge: ConfirmJudge | None = None,
    config: Tau2Config | ClassifierConfig = DEFAULT_TAU2,
) -> Tau2Diagnostics:
    """The τ² action-class diagnostic of the runs read into ``results``
    (:func:`callscope.benchmarks.tau2.source.read_tau2_results`; see the module docstring).

    ``judge``: a :data:`~callscope.calibration.confirm.ConfirmJudge` asked about every write
    call (CONFIRM); its agreement with the rule is reported. ``config`` may also be a bare
    :class:`~callscope.calibration.classify.ClassifierConfig` (e.g. a classifier preset): the
    other settings then take their defaults.
    """
    if isinstance(config, ClassifierConfig):
        config = Tau2Config(classifier=config)
    runs = results.runs
    problems = list(results.problems)
    sims: list[SimulationRecord] = []
    calls: list[CallRecord] = []
    candidates: list[AskCandidate] = []
    writes: dict[str, dict[str, WriteDecision]] = {}
    modes: dict[str, str] = {}
    warnings: list[str] = []
    seen_candidates: set[tuple[str, str]] = set()
    left_out = 0
    for run in runs:
        problems.extend(run.problems)
        group = f"{run.agent} (user: {run.user})"
        task_map = run.task_map
        used = {str(sim["task_id"]) for sim in run.simulations}
        run_tasks = {tid: t for tid, t in task_map.items() if tid in used}
        boiler = boilerplate_sentences(scenario_text(t) for t in run_tasks.values())
        cand_cues: dict[str, list[str]] = {}
        for tid, task in run_tasks.items():
            text = scenario_text(task)
            specific, only_boiler = classify_cue_hits(text, config.ask_cues, boiler)
            hits = specific or only_boiler
            if not hits:
                continue
            is_boiler = not specific
            if not is_boiler or config.boilerplate_ask:
                cand_cues[tid] = hits
            if (run.domain, tid) not in seen_candidates:
                seen_candidates.add((run.domain, tid))
                candidates.append(
                    AskCandidate(
                        domain=run.domain,
                        task_id=tid,
                        cues=hits,
                        snippet=cue_snippet(text, hits[0]),
                        boilerplate=is_boiler,
                        used_as_gold=is_ask_gold(run.domain, tid, tid in cand_cues, config),
                    )
                )
        names = {
            c["name"]
            for s in run.simulations
            for m in s["messages"]
            if m.get("role") == "assistant"
            for c in agent_calls(m)
        } | {str(a.get("name")) for t in run_tasks.values() for a in task_actions(t) or []}
        stock = stock_functions(run.domain) if config.use_stock_schemas else None
        if run.functions is not None:
            modes[run.source] = "schemas"
        elif stock is not None:
            modes[run.source] = "stock schemas"
        else:
            modes[run.source] = "names_only"
        run_writes = decide_write_tools(
            names, run.functions, tool_types(run.simulations), config, run.domain
        )
        domain_writes = writes.setdefault(run.domain, {})
        for name, decision in run_writes.items():
            domain_writes.setdefault(name, decision)
        known = known_tool_names(run, run_tasks) if modes[run.source] == "names_only" else set()
        no_gold: set[str] = set()
        run_sims: list[SimulationRecord] = []
        for sim in run.simulations:
            tid = str(sim["task_id"])
            task = task_map.get(tid)
            if task is None:
                left_out += 1
                problems.append(
                    f"{run.source}: simulation {sim.get('id')}: task {tid!r} not found in the "
                    "run's tasks or the tasks file; left out of the GAR rows"
                )
            elif task_gold_class(task) is None and tid not in no_gold:
                no_gold.add(tid)
                why = (
                    "every expected action is the user's"
                    if user_only_actions(task)
                    else "it has no evaluation_criteria.actions"
                )
                problems.append(f"{run.source}: task {tid!r}: no TOOL_CALL/REFUSE gold ({why})")
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
                group=group,
                functions=stock,
            )
            record.mismatch = task_mismatch(sim, task)
            run_sims.append(record)
            calls.extend(sim_calls)
        mismatched = [r for r in run_sims if r.mismatch]
        if mismatched:
            with_checks = sum(r.action_checks is not None or r.user_checks > 0 for r in run_sims)
            first = mismatched[0]
            text = (
                f"TASK-ID MISMATCH in {run.source}: the action checks of {len(mismatched)} of "
                f"{with_checks} simulations with checks belong to another task than their "
                f"task_id (e.g. simulation {first.id}: {first.mismatch})"
            )
            if config.allow_task_mismatch:
                warnings.append(text + "; per-class rows computed anyway, as asked")
            else:
                warnings.append(
                    text + "; its per-class GAR rows are withheld (file-level Acc still "
                    "shown; --allow-task-mismatch computes them anyway)"
                )
                for r in run_sims:
                    r.excluded = "task-id mismatch in its run"
        sims.extend(run_sims)

    settings = config.settings()
    totals = Counter(c for s in sims for m in s.message_classes for c in m)
    class_counts = {c: totals.get(c, 0) for c in ACTION_CLASSES}
    if config.ask_tasks is None:
        ask_source = "unchecked candidates from the scenario cue scan" + (
            "" if config.boilerplate_ask else " (boilerplate-only candidates not used)"
        )
    else:
        ask_source = f"checked list of {len(config.ask_tasks)} task(s)"
    capability = capability_check(class_counts, config.t_cap)
    rows = gold_rows(sims, settings, config.pooled)
    return Tau2Diagnostics(
        rows=rows,
        domain_rows=domain_rows(sims, calls, modes, writes, config.z, config.pooled),
        class_counts=class_counts,
        capability=capability,
        confirm=confirm_summary(calls, config.z),
        ask_candidates=candidates,
        ask_gold_source=ask_source,
        write_tools=writes,
        sources=[
            {
                "source": r.source,
                "layout": r.layout,
                "domain": r.domain,
                "agent": r.agent,
                "user": r.user,
                "n_simulations": len(r.simulations),
                "tool_schemas": r.functions is not None,
                "stage_mode": modes.get(r.source),
            }
            for r in runs
        ],
        problems=problems,
        left_out=left_out,
        config=config.to_dict(),
        simulations=sims,
        calls=calls,
        acc_rows=acc_rows(sims, runs, config.z, config.pooled),
        groups=list(dict.fromkeys(s.group for s in sims)),
        warnings=warnings,
    )
