"""The action-class diagnostic on τ²-bench runs (paper "Calibration is the Bottleneck", §4.2).

τ²-bench (sierra-research/tau2-bench) runs its own simulations; this module reads what it
wrote and reports the same GAR / Acc diagnostic as the BFCL one
(:mod:`callscope.calibration.diagnostics`), plus the SAAG stage mix of every agent tool call and
CONFIRM (did the user confirm before each database write, :mod:`callscope.calibration.confirm`).

**Inputs** (:func:`find_tau2_runs`). A path may be

* a results file (``results.json`` or any ``<name>.json`` written by ``tau2 run``): one JSON
  object ``{timestamp, info, tasks, simulations[]}`` (the single-file layout);
* a run directory holding ``results.json`` and ``simulations/<simulation id>.json`` (the
  directory layout of newer τ² versions; ``results.json`` then holds the metadata and a
  ``simulation_index`` that is checked against the files);
* a folder of runs (e.g. τ²'s ``data/simulations/``): every ``*.json`` results file and every
  sub-folder with a ``results.json`` in it, one level deep. Files there that are not τ²
  results are reported as problems and skipped; an explicitly named file or run directory
  that is not τ² results raises :class:`Tau2FormatError` with the reason.

Tasks come from the results' own ``tasks`` list; a separate tasks file (``tasks=``, a JSON list
of tasks as in τ²'s ``data/tau2/domains/<domain>/tasks.json``, or ``{"tasks": [...]}``)
overrides embedded tasks with the same id and supplies missing ones, in every run read.
Optional fields may be missing anywhere; a simulation without usable messages, or whose task
cannot be found, is reported in ``problems``.

**Gold classes** (per task). TOOL_CALL when ``evaluation_criteria.actions`` holds an action for
the agent (``requestor`` not ``"user"``), REFUSE when it holds none (the paper:
``actions == []``); no gold when ``actions`` is absent. ASK is an extra label: a task's
scenario text (``user_scenario``: persona and instructions) is scanned for the cues of
``Tau2Config.ask_cues`` ("if the agent asks", "withhold", ...); the hits are listed as
*candidates* for a person to check. ``Tau2Config.ask_tasks`` is the checked list (task ids,
or ``domain:id``); when it is ``None`` the unchecked candidates serve as ASK gold and the
result says so. A task can thus be in its TOOL_CALL or REFUSE row and in the ASK row.

**GAR per class** (one case = one simulation, i.e. task x trial):

* REFUSE: the agent called no *write* tool;
* ASK: at least one agent message is an ask (the multi-label classifier of
  :mod:`callscope.calibration.classify`: ``?`` or a request cue; greeting formulas such as "How
  can I help you today?" are stripped first and are not asks);
* TOOL_CALL: ``reward_info.action_checks`` has no failed check. A simulation without action
  checks (no ``reward_info``, or none computed) has no GAR verdict: it is left out of its row
  (GAR and Acc alike) and counted in ``n_gar_unknown``.

**Acc** is ``reward_info.reward == 1``; a simulation without a reward is left out of Acc.
Wilson 95% intervals, GAR − Acc, the bound check (Acc > GAR: "bound violation", with the
number of passed cases without the gold class) and the large-slack flag are computed by
:mod:`callscope.calibration.diagnostics`, so the rows carry the same keys as the BFCL rows
(``category`` is the domain; the turn-level columns are ``None``). A simulation that ended in
an error (``termination_reason`` in :data:`TERMINATION_ERRORS`) stays in the denominators and
is counted in ``n_errors``.

**Write tools.** τ² results do not label tools read/write except, in newer versions, through
``action_checks[].tool_type``. A tool name is decided, first rule that applies:
``Tau2Config.read_tools`` (never write), ``Tau2Config.write_tools`` (always write), a
``tool_type`` seen in the run's action checks (``"write"`` is write; ``read``/``think``/
``generic`` are not), ``Tau2Config.write_pattern`` on the name (default: a verb prefix such as
``update_``, ``cancel_``, ``book_``, ``modify_``, ``exchange_``, ``return_``, ``send_``,
``transfer_``, see :data:`WRITE_VERBS`), and, when the run exposes tool descriptions, a
description whose first word is one of :data:`WRITE_VERBS` ("Issue a certificate ...").
Otherwise the tool is read-only. The decision and its source are reported per tool.

**SAAG stage mix.** Every agent tool call is run through :func:`callscope.saag.cascade.diagnose`
against the tools the run exposes and the *user text so far* (the user messages before the
call, joined by newlines). The tools come from ``info.environment_info.tool_defs`` (τ²'s
``{name: {name, doc, params}}``; OpenAI-style ``{"type": "function", "function": ...}``
entries and lists are read too). τ² writes ``tool_defs`` only on request; without schemas
only stage 1 is checked, against the tool names known from the run: the names of the tasks'
expected actions and of calls that got a non-error tool response anywhere in the run. A call
whose name is known is then ``unchecked`` (stages 2-3 not run). Stage 3 grounds arguments in
the user's words only, so an id the agent read from a tool result counts as ungrounded:
read stage 3 on τ² as "not said by the user".
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from callscope.calibration.classify import (
    ACTION_CLASSES,
    ASK,
    DEFAULT,
    OTHER,
    REFUSE,
    TOOL_CALL,
    ClassifierConfig,
    emission_classes,
)
from callscope.calibration.confirm import (
    DEFAULT_CONFIRM,
    ConfirmConfig,
    ConfirmDecision,
    JudgeVerdict,
    agreement_stats,
    cue_regex,
    detect_confirmation,
    judge_confirmation,
)
from callscope.calibration.diagnostics import (
    CaseClasses,
    DiagnosticsSettings,
    _category_row,
    _ci,
    _flags,
    _pct,
    _pct_ci,
    capability_check,
)
from callscope.models.base import ChatModel
from callscope.saag.cascade import diagnose
from callscope.types import ToolCall

#: Verbs whose tools change the database (name prefixes ``<verb>_`` and description openings).
WRITE_VERBS: tuple[str, ...] = (
    "update",
    "cancel",
    "book",
    "modify",
    "exchange",
    "return",
    "send",
    "transfer",
    "create",
    "delete",
    "remove",
    "add",
    "set",
    "change",
    "refund",
    "issue",
    "suspend",
    "resume",
    "enable",
    "disable",
    "refuel",
    "pay",
    "place",
    "submit",
    "reset",
    "apply",
    "assign",
    "grant",
    "revoke",
    "toggle",
)

#: Default write-tool name rule: one of :data:`WRITE_VERBS` followed by ``_`` at the start.
DEFAULT_WRITE_PATTERN = r"^(?:" + "|".join(WRITE_VERBS) + r")_"

#: Scenario phrases that suggest the agent must ask for something (ASK candidates).
DEFAULT_ASK_SCENARIO_CUES: tuple[str, ...] = (
    "if the agent asks",
    "unless the agent asks",
    "wait for the agent to ask",
    "if asked",
    "when asked",
    "only when asked",
    "unless asked",
    "withhold",
    "do not volunteer",
    "don't volunteer",
    "not volunteer",
    "do not provide",
    "don't provide",
    "do not reveal",
    "don't reveal",
    "do not mention",
    "don't mention",
    "only provide",
    "only share",
)

#: ``termination_reason`` values that mark a simulation as ended in error.
TERMINATION_ERRORS: frozenset[str] = frozenset(
    {
        "agent_error",
        "user_error",
        "too_many_errors",
        "timeout",
        "infrastructure_error",
        "context_window_exceeded",
        "unexpected_error",
    }
)

#: Row order of the gold classes (as BFCL's base, miss_param, miss_func).
GOLD_ORDER: tuple[str, ...] = (TOOL_CALL, ASK, REFUSE)

GAR_RULES: dict[str, str] = {
    TOOL_CALL: "no failed action check",
    ASK: "an ask was detected",
    REFUSE: "no write tool called",
}


class Tau2FormatError(ValueError):
    """A file or folder is not τ²-bench results (the message says which and why)."""


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Tau2Config:
    """Every choice of the τ² diagnostic; :meth:`to_dict` goes into every result.

    ``ask_tasks``: ``None`` = use the ASK candidates of the scenario scan as ASK gold;
    a set (task ids or ``domain:id``, possibly empty) = exactly those tasks are ASK gold.
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
        return DiagnosticsSettings(
            slack_threshold=self.slack_threshold, t_cap=self.t_cap, multi_label=True, z=self.z
        )


DEFAULT_TAU2 = Tau2Config()


# --------------------------------------------------------------------------- reading


@dataclass
class Tau2Run:
    """One τ² run as read: where from (``source``, ``layout`` ``"file"`` or ``"dir"``), its
    ``domain``, ``info``, embedded ``tasks``, ``simulations`` (raw dicts that passed the
    shape check), the tool schemas it exposes (``functions``, ``None`` when absent) and the
    ``problems`` met while reading."""

    source: str
    layout: str
    domain: str
    info: dict[str, Any]
    tasks: list[dict[str, Any]]
    simulations: list[dict[str, Any]]
    functions: list[dict[str, Any]] | None
    problems: list[str] = field(default_factory=list)


def _load_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise Tau2FormatError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise Tau2FormatError(f"{path}: not UTF-8 text, not a τ²-bench results file") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise Tau2FormatError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc


def _check_results_object(data: Any, path: Path, dir_layout: bool) -> dict[str, Any]:
    """``data`` as a τ² results object, or :class:`Tau2FormatError` saying why not."""
    if isinstance(data, list):
        raise Tau2FormatError(
            f"{path}: a JSON list, not a τ²-bench results object "
            "(a tasks file? pass it as the tasks file instead)"
        )
    if not isinstance(data, dict):
        raise Tau2FormatError(
            f"{path}: a JSON {type(data).__name__}, not a τ²-bench results object"
        )
    if "messages" in data and "task_id" in data:
        raise Tau2FormatError(
            f"{path}: one τ²-bench simulation, not a results file; point at the run "
            "(results.json or its directory)"
        )
    sims = data.get("simulations")
    if sims is not None and not isinstance(sims, list):
        raise Tau2FormatError(f"{path}: 'simulations' is not a list")
    markers = {"info", "tasks", "simulation_index"} & set(data)
    if (sims is None and not dir_layout) or (sims is None and not markers):
        found = ", ".join(sorted(map(str, data))[:12]) or "none"
        raise Tau2FormatError(
            f"{path}: not a τ²-bench results file: expected an object with 'simulations' "
            "(or a 'simulations/' folder beside it) and 'info'/'tasks'; found keys: " + found
        )
    if "tasks" in data and not isinstance(data["tasks"], list | type(None)):
        raise Tau2FormatError(f"{path}: 'tasks' is not a list")
    return data


def _simulation_problem(sim: Any) -> str | None:
    if not isinstance(sim, dict):
        return "not a JSON object"
    if sim.get("task_id") is None:
        return "no 'task_id'"
    messages = sim.get("messages")
    if messages is None:
        if sim.get("ticks") is not None:
            return "no 'messages' (full-duplex runs that store only ticks are not supported)"
        return "no 'messages'"
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return "'messages' is not a list of objects"
    return None


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _norm_function(key: str | None, spec: Any) -> dict[str, Any] | None:
    """One tool definition as ``{name, description, parameters}``, or ``None``."""
    if not isinstance(spec, dict):
        return None
    if isinstance(spec.get("function"), dict):
        spec = spec["function"]
    name = spec.get("name") or key
    if not isinstance(name, str) or not name:
        return None
    description = spec.get("description")
    if not isinstance(description, str):
        description = spec.get("doc") if isinstance(spec.get("doc"), str) else ""
    params = spec.get("parameters", spec.get("params"))
    return {"name": name, "description": description, "parameters": _dict(params)}


def tool_functions(info: Any) -> list[dict[str, Any]] | None:
    """The agent tools a run exposes, from ``info.environment_info.tool_defs`` (τ²'s
    ``{name: {name, doc, params, returns}}``, OpenAI-style entries, or a list), as
    ``[{name, description, parameters}]``; ``None`` when the run has no tool definitions."""
    env = _dict(_dict(info).get("environment_info"))
    defs = env.get("tool_defs")
    if defs is None:
        defs = env.get("tools")
    items: Iterable[tuple[str | None, Any]]
    if isinstance(defs, dict):
        items = defs.items()
    elif isinstance(defs, list):
        items = ((None, d) for d in defs)
    else:
        return None
    funcs = [f for k, v in items if (f := _norm_function(k, v)) is not None]
    return funcs or None


def _domain_of(info: dict[str, Any], tasks: Sequence[Any], fallback: str) -> str:
    name = _dict(info.get("environment_info")).get("domain_name")
    if isinstance(name, str) and name:
        return name
    for task in tasks:
        instr = _dict(_dict(_dict(task).get("user_scenario")).get("instructions"))
        if isinstance(instr.get("domain"), str) and instr["domain"]:
            return instr["domain"]
    return fallback


def _read_dir_simulations(sims_dir: Path, index: Any, problems: list[str]) -> list[dict[str, Any]]:
    sims: list[dict[str, Any]] = []
    stems: set[str] = set()
    for sim_file in sorted(sims_dir.glob("*.json")):
        stems.add(sim_file.stem)
        try:
            sims.append(_load_json(sim_file))
        except Tau2FormatError as exc:
            problems.append(f"{exc}; simulation skipped")
    if isinstance(index, list):
        indexed = {str(e.get("id")) for e in index if isinstance(e, dict) and "id" in e}
        for missing in sorted(indexed - stems):
            problems.append(f"{sims_dir}: simulation {missing} is in the index but has no file")
        for extra in sorted(stems - indexed):
            problems.append(f"{sims_dir}: {extra}.json is not in results.json's index")
    return sims


def read_tau2_run(path: str | Path) -> Tau2Run:
    """Read one τ² run: a results file, or a run directory with ``results.json`` (and
    ``simulations/``). Raises :class:`Tau2FormatError` when it is not τ² results."""
    p = Path(path)
    if p.is_dir():
        meta_path = p / "results.json"
        if not meta_path.is_file():
            raise Tau2FormatError(f"{p}: no results.json, not a τ²-bench run directory")
    else:
        meta_path = p
    sims_dir = meta_path.parent / "simulations"
    raw = _load_json(meta_path)
    embedded = isinstance(raw, dict) and isinstance(raw.get("simulations"), list)
    dir_layout = sims_dir.is_dir() and not (embedded and raw["simulations"])
    data = _check_results_object(raw, meta_path, dir_layout)
    problems: list[str] = []
    if dir_layout:
        raw_sims: list[Any] = _read_dir_simulations(
            sims_dir, data.get("simulation_index"), problems
        )
    else:
        raw_sims = list(data.get("simulations") or [])
    info = _dict(data.get("info"))
    tasks = [t for t in data.get("tasks") or [] if isinstance(t, dict)]
    sims: list[dict[str, Any]] = []
    for i, sim in enumerate(raw_sims):
        why = _simulation_problem(sim)
        if why:
            sid = sim.get("id", f"#{i}") if isinstance(sim, dict) else f"#{i}"
            problems.append(f"{meta_path}: simulation {sid}: {why}; skipped")
        else:
            sims.append(sim)
    source = str(p if p.is_dir() else meta_path)
    fallback = (p if p.is_dir() else meta_path.parent if p.name == "results.json" else p).stem
    return Tau2Run(
        source=source,
        layout="dir" if dir_layout else "file",
        domain=_domain_of(info, tasks, fallback or "unknown"),
        info=info,
        tasks=tasks,
        simulations=sims,
        functions=tool_functions(info),
        problems=problems,
    )


def find_tau2_runs(path: str | Path) -> tuple[list[Tau2Run], list[str]]:
    """The τ² runs at ``path`` (a run, or a folder of runs; see the module docstring) and the
    problems met with files that are not τ² results. Raises ``FileNotFoundError`` for a
    missing path and :class:`Tau2FormatError` when nothing there is τ² results."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or directory")
    if p.is_file() or (p / "results.json").is_file():
        return [read_tau2_run(p)], []
    runs: list[Tau2Run] = []
    problems: list[str] = []
    for child in sorted(p.iterdir()):
        if not (child.is_file() and child.suffix == ".json") and not (
            child.is_dir() and (child / "results.json").is_file()
        ):
            continue
        try:
            runs.append(read_tau2_run(child))
        except Tau2FormatError as exc:
            problems.append(f"{exc}; skipped")
    if not runs:
        detail = ("; " + "; ".join(problems)) if problems else ""
        raise Tau2FormatError(
            f"{p}: no τ²-bench results found (looked for a results file, results.json with "
            f"simulations/, and run folders one level down){detail}"
        )
    return runs, problems


def read_tasks_file(path: str | Path) -> list[dict[str, Any]]:
    """A τ² tasks file: a JSON list of task objects (each with an ``id``), or an object
    with a ``tasks`` list. Raises :class:`Tau2FormatError` otherwise."""
    p = Path(path)
    data = _load_json(p)
    if isinstance(data, dict) and isinstance(data.get("tasks"), list):
        data = data["tasks"]
    if not isinstance(data, list):
        raise Tau2FormatError(f"{p}: not a τ²-bench tasks file (expected a JSON list of tasks)")
    for i, task in enumerate(data):
        if not isinstance(task, dict) or task.get("id") is None:
            raise Tau2FormatError(f"{p}: task #{i} is not an object with an 'id'")
    return data


# --------------------------------------------------------------------------- tasks


def task_actions(task: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The task's expected agent actions (``requestor`` not ``"user"``); ``None`` when the
    task has no ``evaluation_criteria.actions``."""
    actions = _dict(task.get("evaluation_criteria")).get("actions")
    if not isinstance(actions, list):
        return None
    return [a for a in actions if isinstance(a, dict) and a.get("requestor") != "user"]


def task_gold_class(task: Mapping[str, Any]) -> str | None:
    """TOOL_CALL when the task expects agent actions, REFUSE when it expects none, ``None``
    when its evaluation criteria say nothing about actions."""
    actions = task_actions(task)
    if actions is None:
        return None
    return TOOL_CALL if actions else REFUSE


def scenario_text(task: Mapping[str, Any]) -> str:
    """The text of ``user_scenario``: persona and instructions (structured instructions
    joined field by field, the ``domain`` field left out), or the scenario itself when it is
    a string."""
    scenario = task.get("user_scenario")
    if isinstance(scenario, str):
        return scenario
    scenario = _dict(scenario)
    parts: list[str] = []
    if isinstance(scenario.get("persona"), str):
        parts.append(scenario["persona"])
    instr = scenario.get("instructions")
    if isinstance(instr, str):
        parts.append(instr)
    elif isinstance(instr, dict):
        for key, value in instr.items():
            if key != "domain" and isinstance(value, str):
                parts.append(value)
    return "\n".join(parts)


def ask_cue_hits(text: str, cues: Sequence[str] = DEFAULT_ASK_SCENARIO_CUES) -> list[str]:
    """The cues of ``cues`` found in ``text`` (lower-cased, curly quotes normalised, word
    boundaries), in cue order."""
    norm = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    return [c for c in cues if c and (pat := cue_regex((c,))) is not None and pat.search(norm)]


def _snippet(text: str, cue: str, width: int = 80) -> str:
    norm = text.replace("\u2019", "'").lower()
    pat = cue_regex((cue,))
    m = pat.search(norm) if pat else None
    if not m:
        return ""
    start, end = max(0, m.start() - width), min(len(text), m.end() + width)
    return (
        ("..." if start else "")
        + " ".join(text[start:end].split())
        + ("..." if end < len(text) else "")
    )


# --------------------------------------------------------------------------- write tools


def _doc_verb(name: str, doc: str) -> str | None:
    """The first word of the description that is not the tool's own signature line."""
    for line in doc.splitlines():
        line = line.strip()
        if not line or line.startswith(name):
            continue
        m = re.match(r"[A-Za-z]+", line)
        return m.group(0).lower() if m else None
    return None


def decide_write_tools(
    names: Iterable[str],
    functions: Sequence[Mapping[str, Any]] | None,
    tau2_types: Mapping[str, str],
    config: Tau2Config = DEFAULT_TAU2,
) -> dict[str, dict[str, Any]]:
    """``{name: {"write": bool, "source": why}}`` for every name (see the module docstring
    for the order of the rules)."""
    docs = {f["name"]: f.get("description") or "" for f in functions or []}
    pattern = re.compile(config.write_pattern, re.I)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(set(names) | set(docs)):
        if name in config.read_tools:
            out[name] = {"write": False, "source": "config read_tools"}
        elif name in config.write_tools:
            out[name] = {"write": True, "source": "config write_tools"}
        elif config.use_tau2_tool_types and name in tau2_types:
            kind = tau2_types[name]
            out[name] = {"write": kind == "write", "source": f"τ² tool_type {kind!r}"}
        elif pattern.search(name):
            out[name] = {"write": True, "source": "name pattern"}
        elif config.use_tool_docs and (verb := _doc_verb(name, docs.get(name, ""))) in set(
            WRITE_VERBS
        ):
            out[name] = {"write": True, "source": f"description verb {verb!r}"}
        else:
            out[name] = {"write": False, "source": "default (read)"}
    return out


# --------------------------------------------------------------------------- per simulation


@dataclass
class CallRecord:
    """One agent tool call: where it is, whether it writes, its SAAG stage (``None`` =
    unchecked: no schemas and a known name), and for writes the CONFIRM verdicts."""

    domain: str
    simulation_id: str
    task_id: str
    message_index: int
    name: str
    arguments: dict[str, Any]
    write: bool
    stage: int | None
    failure_kinds: list[str] = field(default_factory=list)
    nearest: str | None = None
    confirm_rule: ConfirmDecision | None = None
    confirm_judge: JudgeVerdict | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["confirm_rule"] = self.confirm_rule.to_dict() if self.confirm_rule else None
        d["confirm_judge"] = self.confirm_judge.to_dict() if self.confirm_judge else None
        return d


@dataclass
class SimulationRecord:
    """One simulation as diagnosed: gold classes, per-message classes, GAR per gold class
    (``None`` = no verdict), Acc, and counts."""

    domain: str
    source: str
    id: str
    task_id: str
    trial: int | None
    gold_class: str | None
    ask_gold: bool
    reward: float | None
    passed: bool | None
    termination_reason: str | None
    error: str | None
    message_classes: list[list[str]]
    union: list[str]
    write_calls: int
    action_checks: int | None
    failed_action_checks: int | None
    gar: dict[str, bool | None]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _agent_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return []
    out = []
    for call in calls:
        if not isinstance(call, dict) or call.get("requestor") == "user":
            continue
        if isinstance(call.get("function"), dict):  # OpenAI shape, tolerated
            call = {**call, **call["function"]}
        if isinstance(call.get("name"), str) and call["name"]:
            out.append(call)
    return out


def _tool_responses(messages: Sequence[Mapping[str, Any]], index: int) -> list[Mapping[str, Any]]:
    """The tool messages that answer the calls of ``messages[index]`` (in call order)."""
    out = []
    for msg in messages[index + 1 :]:
        if msg.get("role") != "tool":
            break
        out.append(msg)
    return out


def _call_errors(messages: Sequence[Mapping[str, Any]], index: int) -> dict[int, bool | None]:
    """Per call of ``messages[index]``: whether its tool response was an error (``None`` =
    no response found). Matched by ``id``, else by position."""
    calls = _agent_calls(messages[index])
    responses = _tool_responses(messages, index)
    by_id = {r.get("id"): r for r in responses if r.get("id") is not None}
    out: dict[int, bool | None] = {}
    for k, call in enumerate(calls):
        resp = by_id.get(call.get("id")) if call.get("id") is not None else None
        if resp is None and k < len(responses):
            resp = responses[k]
        out[k] = None if resp is None else bool(resp.get("error"))
    return out


def _reward(sim: Mapping[str, Any]) -> float | None:
    reward = _dict(sim.get("reward_info")).get("reward")
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        return float(reward)
    return None


def _action_check_counts(sim: Mapping[str, Any]) -> tuple[int | None, int | None]:
    checks = _dict(sim.get("reward_info")).get("action_checks")
    if not isinstance(checks, list) or not checks:
        return None, None
    failed = sum(not (isinstance(c, dict) and c.get("action_match") is True) for c in checks)
    return len(checks), failed


def _tau2_tool_types(sims: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    types: dict[str, str] = {}
    for sim in sims:
        for check in _dict(sim.get("reward_info")).get("action_checks") or []:
            if not isinstance(check, dict):
                continue
            name = _dict(check.get("action")).get("name")
            kind = check.get("tool_type")
            if isinstance(name, str) and isinstance(kind, str):
                types.setdefault(name, kind.lower())
    return types


def _known_names(run: Tau2Run, tasks: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Tool names the run shows to exist: expected actions of its tasks, and calls that got
    a non-error tool response."""
    names = {
        a["name"]
        for t in tasks.values()
        for a in (task_actions(t) or [])
        if isinstance(a.get("name"), str)
    }
    for sim in run.simulations:
        msgs = sim["messages"]
        for i, msg in enumerate(msgs):
            if msg.get("role") != "assistant":
                continue
            errors = _call_errors(msgs, i)
            for k, call in enumerate(_agent_calls(msg)):
                if errors.get(k) is False:
                    names.add(call["name"])
    return names


def _message_classes(message: Mapping[str, Any], config: ClassifierConfig) -> list[str]:
    emission = {
        "content": message.get("content") if isinstance(message.get("content"), str) else None,
        "tool_calls": [
            {"name": c["name"], "arguments": c.get("arguments")} for c in _agent_calls(message)
        ],
    }
    try:
        fired = emission_classes(emission, config)
    except TypeError:
        fired = {OTHER}
    return [c for c in ACTION_CLASSES if c in fired]


def _is_ask_gold(domain: str, task_id: str, candidate: bool, config: Tau2Config) -> bool:
    if config.ask_tasks is None:
        return candidate
    return task_id in config.ask_tasks or f"{domain}:{task_id}" in config.ask_tasks


def _stage(
    call: ToolCall,
    functions: list[dict[str, Any]] | None,
    known: set[str],
    query: str,
) -> tuple[int | None, list[str], str | None]:
    if functions is not None:
        d = diagnose(call, functions, query)
        return d.stage, d.failure_kinds(), d.nearest
    if call.name in known:
        return None, [], None
    d = diagnose(call, [{"name": n} for n in sorted(known)], query)
    return d.stage, d.failure_kinds(), d.nearest


def _diagnose_simulation(
    run: Tau2Run,
    sim: Mapping[str, Any],
    task: Mapping[str, Any] | None,
    ask_gold: bool,
    writes: Mapping[str, Mapping[str, Any]],
    known: set[str],
    config: Tau2Config,
    judge: ChatModel | None,
) -> tuple[SimulationRecord, list[CallRecord]]:
    messages: list[dict[str, Any]] = sim["messages"]
    sim_id = str(sim.get("id") or f"{sim['task_id']}#{sim.get('trial')}")
    task_id = str(sim["task_id"])
    user_texts: list[str] = []
    message_classes: list[list[str]] = []
    calls: list[CallRecord] = []
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "user" and isinstance(msg.get("content"), str) and msg["content"].strip():
            user_texts.append(msg["content"])
            continue
        if role != "assistant":
            continue
        message_classes.append(_message_classes(msg, config.classifier))
        query = "\n".join(user_texts)
        for call in _agent_calls(msg):
            args = _arguments(call.get("arguments"))
            stage, kinds, nearest = _stage(
                ToolCall(call["name"], args), run.functions, known, query
            )
            is_write = bool(writes.get(call["name"], {}).get("write"))
            rec = CallRecord(
                domain=run.domain,
                simulation_id=sim_id,
                task_id=task_id,
                message_index=i,
                name=call["name"],
                arguments=args,
                write=is_write,
                stage=stage,
                failure_kinds=kinds,
                nearest=nearest,
            )
            if is_write:
                rec.confirm_rule = detect_confirmation(
                    messages, i, config.confirm, config.classifier
                )
                if judge is not None:
                    rec.confirm_judge = judge_confirmation(
                        judge,
                        messages,
                        i,
                        {"name": call["name"], "arguments": args},
                        config.confirm,
                    )
            calls.append(rec)

    union = {c for classes in message_classes for c in classes}
    write_calls = sum(c.write for c in calls)
    n_checks, n_failed = _action_check_counts(sim)
    reward = _reward(sim)
    gold = task_gold_class(task) if task is not None else None
    gar: dict[str, bool | None] = {}
    if gold == REFUSE:
        gar[REFUSE] = write_calls == 0
    elif gold == TOOL_CALL:
        gar[TOOL_CALL] = None if n_failed is None else n_failed == 0
    if ask_gold:
        gar[ASK] = ASK in union
    reason = sim.get("termination_reason")
    reason = str(reason) if reason is not None else None
    trial = sim.get("trial")
    record = SimulationRecord(
        domain=run.domain,
        source=run.source,
        id=sim_id,
        task_id=task_id,
        trial=trial if isinstance(trial, int) and not isinstance(trial, bool) else None,
        gold_class=gold,
        ask_gold=ask_gold,
        reward=reward,
        passed=None if reward is None else abs(reward - 1.0) < 1e-9,
        termination_reason=reason,
        error=reason if reason in TERMINATION_ERRORS else None,
        message_classes=message_classes,
        union=[c for c in ACTION_CLASSES if c in union],
        write_calls=write_calls,
        action_checks=n_checks,
        failed_action_checks=n_failed,
        gar=gar,
    )
    return record, calls


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
            row = _category_row(domain, cases, settings, None)
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


def _rate_ci(k: int, n: int, z: float) -> dict[str, float | None]:
    lo, hi = _ci(k, n, z)
    return {"rate": k / n if n else None, "ci_low": lo, "ci_high": hi}


def _confirm_summary(calls: Sequence[CallRecord], z: float) -> dict[str, Any]:
    writes = [c for c in calls if c.write]
    k = sum(bool(c.confirm_rule and c.confirm_rule.confirmed) for c in writes)
    out: dict[str, Any] = {
        "write_calls": len(writes),
        "rule_k": k,
        "rule": _rate_ci(k, len(writes), z),
    }
    judged = [c for c in writes if c.confirm_judge is not None]
    if judged:
        stats = agreement_stats(
            [bool(c.confirm_rule and c.confirm_rule.confirmed) for c in judged],
            [c.confirm_judge.confirmed for c in judged if c.confirm_judge is not None],
        )
        out["judge"] = {**stats, **_rate_ci(stats["judge_yes"], stats["n"], z)}
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
        parts = [
            "### τ²-bench action-class diagnostic\n",
            gar_markdown(self.rows),
            "\nGAR rules: "
            + "; ".join(f"{k} = {v}" for k, v in GAR_RULES.items())
            + f". ASK gold: {self.ask_gold_source}. Acc = reward == 1.\n",
            "\n" + domain_markdown(self.domain_rows),
        ]
        if self.confirm.get("judge"):
            j = self.confirm["judge"]
            parts.append(
                f"\nCONFIRM rule vs judge over {j['n']} write calls: agreement "
                f"{_pct(j['agreement'])}%, Cohen's kappa "
                f"{'n/a' if j['kappa'] is None else format(j['kappa'], '.3f')}"
                f" ({j['undecided']} undecided by the judge).\n"
            )
        if self.ask_candidates:
            parts.append("\n**ASK candidates** (check these by reading the scenario):\n")
            for c in self.ask_candidates:
                parts.append(
                    f"- {c['domain']} task {c['task_id']}: cues {', '.join(c['cues'])}"
                    f" — “{c['snippet']}”" + ("" if c["used_as_gold"] else " (not used)") + "\n"
                )
        writes = [
            f"{d}: "
            + (", ".join(f"{n} ({w['source']})" for n, w in tools.items() if w["write"]) or "none")
            for d, tools in self.write_tools.items()
        ]
        if writes:
            parts.append("\n**Write tools**: " + "; ".join(writes) + "\n")
        if self.problems:
            parts.append("\n**Problems**:\n" + "".join(f"- {p}\n" for p in self.problems))
        return "".join(parts)

    def rich_table(self, title: str | None = "τ²-bench action-class diagnostics"):
        """The (domain, gold class) rows as a :class:`rich.table.Table`."""
        return _rich(
            _GAR_COLUMNS,
            [_gar_cells(r) for r in self.rows],
            title,
            [bool(r.get("bound_violation")) for r in self.rows],
        )

    def rich_domain_table(self, title: str | None = "τ²-bench tool calls and CONFIRM"):
        """The per-domain rows as a :class:`rich.table.Table`."""
        return _rich(
            _DOMAIN_COLUMNS,
            [_domain_cells(r) for r in self.domain_rows],
            title,
            [False] * len(self.domain_rows),
        )


# --------------------------------------------------------------------------- rendering

_GAR_COLUMNS = ("Domain", "Gold", "n", "GAR % [95% CI]", "Acc % [95% CI]", "GAR−Acc pp", "Flags")
_DOMAIN_COLUMNS = (
    "Domain",
    "sims",
    "tool calls",
    "stage 0/1/2/3/unchecked",
    "write calls",
    "CONFIRM rule % [95% CI]",
    "CONFIRM judge %",
    "agreement % / kappa",
)


def _gar_cells(row: Mapping[str, Any]) -> list[str]:
    gap = row.get("gap")
    flags = [f for f in [_flags(row)] if f]
    if row.get("n_gar_unknown"):
        flags.append(f"{row['n_gar_unknown']} without GAR verdict")
    if row.get("n_no_reward"):
        flags.append(f"{row['n_no_reward']} without reward")
    return [
        str(row["domain"]),
        str(row["gold_class"]),
        str(row["n"]),
        _pct_ci(row.get("gar_case"), row.get("gar_case_ci_low"), row.get("gar_case_ci_high")),
        _pct_ci(row.get("acc"), row.get("acc_ci_low"), row.get("acc_ci_high")),
        "n/a" if gap is None else f"{100 * gap:+.1f}",
        "; ".join(flags),
    ]


def _domain_cells(row: Mapping[str, Any]) -> list[str]:
    mix = row["stage_mix"]
    conf = row["confirm"]
    rule = conf["rule"]
    judge = conf.get("judge")
    if judge:
        kappa = "n/a" if judge["kappa"] is None else f"{judge['kappa']:.2f}"
        judge_cell = _pct(judge["rate"])
        agree = f"{_pct(judge['agreement'])} / {kappa}"
    else:
        judge_cell = agree = "not run"
    return [
        str(row["domain"]),
        str(row["n_simulations"]),
        str(row["tool_calls"]) + ("" if row["stage_mode"] == "schemas" else " (names only)"),
        "/".join(str(mix[k]) for k in ("0", "1", "2", "3", "unchecked")),
        str(conf["write_calls"]),
        _pct_ci(rule["rate"], rule["ci_low"], rule["ci_high"]),
        judge_cell,
        agree,
    ]


def _md_table(columns: Sequence[str], cells: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in cells:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines) + "\n"


def gar_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The (domain, gold class) rows as a Markdown table."""
    return _md_table(_GAR_COLUMNS, [_gar_cells(r) for r in rows])


def domain_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The per-domain rows (stage mix, CONFIRM) as a Markdown table."""
    return _md_table(_DOMAIN_COLUMNS, [_domain_cells(r) for r in rows])


def _rich(
    columns: Sequence[str], cells: Sequence[Sequence[str]], title: str | None, red: Sequence[bool]
):
    from rich.table import Table

    table = Table(title=title)
    for col in columns:
        table.add_column(col, justify="right" if col in ("n", "sims") else "left")
    for row, bad in zip(cells, red, strict=True):
        table.add_row(*row, style="red" if bad else None)
    return table


# --------------------------------------------------------------------------- entry point


def _load_tasks(tasks: str | Path | Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    if tasks is None:
        return []
    if isinstance(tasks, str | Path):
        return read_tasks_file(tasks)
    out = []
    for i, task in enumerate(tasks):
        if not isinstance(task, Mapping) or task.get("id") is None:
            raise Tau2FormatError(f"task #{i} is not an object with an 'id'")
        out.append(dict(task))
    return out


def tau2_diagnostics(
    run_dir: str | Path | Sequence[str | Path],
    tasks: str | Path | Sequence[Mapping[str, Any]] | None = None,
    *,
    judge: ChatModel | None = None,
    config: Tau2Config | ClassifierConfig = DEFAULT_TAU2,
) -> Tau2Diagnostics:
    """The τ² action-class diagnostic of the run(s) at ``run_dir`` (one path or several; see
    the module docstring for what a path may be).

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
    external = {str(t["id"]): t for t in _load_tasks(tasks)}

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
                            "snippet": _snippet(scenario_text(task), hits[0]),
                            "used_as_gold": _is_ask_gold(run.domain, tid, True, config),
                        }
                    )
        names = {
            c["name"]
            for s in run.simulations
            for m in s["messages"]
            if m.get("role") == "assistant"
            for c in _agent_calls(m)
        }
        run_writes = decide_write_tools(
            names, run.functions, _tau2_tool_types(run.simulations), config
        )
        domain_writes = writes.setdefault(run.domain, {})
        for name, decision in run_writes.items():
            domain_writes.setdefault(name, decision)
        known = _known_names(run, run_tasks) if run.functions is None else set()
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
            ask_gold = _is_ask_gold(run.domain, tid, tid in cand_cues, config)
            record, sim_calls = _diagnose_simulation(
                run, sim, task, ask_gold, run_writes, known, config, judge
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
