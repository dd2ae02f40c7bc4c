"""Reading τ²-bench (sierra-research/tau2-bench) run files: what ``tau2 run`` writes.

A path given to :func:`find_tau2_runs` may be

* a results file (``results.json`` or any ``<name>.json`` written by ``tau2 run``): one JSON
  object ``{timestamp, info, tasks, simulations[]}`` (the single-file layout);
* a run directory holding ``results.json`` and ``simulations/<simulation id>.json`` (the
  directory layout of newer τ² versions; ``results.json`` then holds the metadata and a
  ``simulation_index`` that is checked against the files);
* a file written by another harness in a shape close to τ²'s: an object with a top-level
  ``"domain"`` and ``simulations`` but no ``info``/``tasks`` (the domain is read from that
  key), or a bare JSON list of simulations (objects with a ``task_id``; read as
  ``{"simulations": [...]}``; a list of tasks is still refused as a tasks file);
* a folder of runs (e.g. τ²'s ``data/simulations/``): every ``*.json`` results file and every
  sub-folder with a ``results.json`` in it, one level deep. Files there that are not τ²
  results are reported as problems and skipped; an explicitly named file or run directory
  that is not τ² results raises :class:`Tau2FormatError` with the reason.

Tasks come from the results' own ``tasks`` list; a separate tasks file
(:func:`read_tasks_file`: a JSON list of tasks as in τ²'s
``data/tau2/domains/<domain>/tasks.json``, or ``{"tasks": [...]}``) can override them by id.
Optional fields may be missing anywhere; a simulation without usable messages is skipped and
reported in the run's ``problems``.

The agent's tools come from ``info.environment_info.tool_defs`` (:func:`tool_functions`:
τ²'s ``{name: {name, doc, params}}``; OpenAI-style ``{"type": "function", "function": ...}``
entries and lists are read too). τ² writes ``tool_defs`` only on request.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.benchmarks.tau2.stock_tools import stock_domain_of_tools
from callscope.core.jsonl import JsonLimitError, loads_bounded, read_text_bounded
from callscope.errors import DataFormatError


class Tau2FormatError(DataFormatError):
    """A file or folder is not τ²-bench results (the message says which and why)."""


@dataclass
class Tau2Run:
    """One τ² run as read: where from (``source``, ``layout`` ``"file"`` or ``"dir"``), its
    ``domain``, ``info``, embedded ``tasks``, ``simulations`` (raw dicts that passed the
    shape check), the tool schemas it exposes (``functions``, ``None`` when absent), the
    ``problems`` met while reading, and who ran it: ``agent`` and ``user`` (the agent's and
    the user simulator's model, from ``info.agent_info`` / ``info.user_info``; ``"unknown"``
    when absent). ``task_map``: the tasks its simulations are matched to, by id: the
    embedded ones, and those of a tasks file of its domain
    (:func:`callscope.benchmarks.tau2.source.read_tau2_results`)."""

    source: str
    layout: str
    domain: str
    info: dict[str, Any]
    tasks: list[dict[str, Any]]
    simulations: list[dict[str, Any]]
    functions: list[dict[str, Any]] | None
    problems: list[str] = field(default_factory=list)
    agent: str = "unknown"
    user: str = "unknown"
    task_map: dict[str, dict[str, Any]] = field(default_factory=dict)


def participant(info: Mapping[str, Any], key: str) -> str:
    """The model of ``info[key]`` (``agent_info`` / ``user_info``): its ``llm``, with the
    ``implementation`` when it is not τ²'s stock one; ``"unknown"`` when absent."""
    part = as_dict(info.get(key))
    llm = part.get("llm")
    impl = part.get("implementation")
    name = llm if isinstance(llm, str) and llm else "unknown"
    if isinstance(impl, str) and impl and impl not in ("llm_agent", "user_simulator"):
        name = f"{name} ({impl})"
    return name


def _load_json(path: Path) -> Any:
    try:
        text = read_text_bounded(path)  # whole, at most the one file limit
    except OSError as exc:
        raise Tau2FormatError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise Tau2FormatError(f"{path}: not UTF-8 text, not a τ²-bench results file") from exc
    try:
        data = loads_bounded(text)
    except json.JSONDecodeError as exc:
        raise Tau2FormatError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    except JsonLimitError as exc:  # nested too deeply, an integer over the digit limit
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise Tau2FormatError(f"{where}: cannot read ({exc})") from exc
    return data


def _is_simulation_list(data: Any) -> bool:
    """A bare JSON list whose every item is an object with a ``task_id`` (simulations as
    another harness writes them), not a list of tasks (which have an ``id`` and no
    ``task_id``)."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(x, dict) and "task_id" in x for x in data)
    )


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


def as_dict(x: Any) -> dict[str, Any]:
    """``x`` when it is a dict, else ``{}`` (optional τ² fields may hold anything)."""
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
    return {"name": name, "description": description, "parameters": as_dict(params)}


def tool_functions(info: Any) -> list[dict[str, Any]] | None:
    """The agent tools a run exposes, from ``info.environment_info.tool_defs`` (τ²'s
    ``{name: {name, doc, params, returns}}``, OpenAI-style entries, or a list), as
    ``[{name, description, parameters}]``; ``None`` when the run has no tool definitions."""
    env = as_dict(as_dict(info).get("environment_info"))
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


def _called_tools(sims: Sequence[dict[str, Any]]) -> set[str]:
    """The names of every tool call in the simulations' messages."""
    names: set[str] = set()
    for sim in sims:
        for m in sim.get("messages") or []:
            calls = m.get("tool_calls") if isinstance(m, dict) else None
            for c in calls if isinstance(calls, list) else []:
                if isinstance(c, dict) and isinstance(c.get("name"), str):
                    names.add(c["name"])
    return names


def _domain_of(
    info: dict[str, Any],
    tasks: Sequence[Any],
    fallback: str,
    top: Any = None,
    sims: Sequence[dict[str, Any]] = (),
) -> str:
    """The run's domain: τ²'s ``info.environment_info.domain_name``, else a top-level
    ``"domain"`` string (``top``: another harness's results), else the tasks' scenario
    domain, else the stock τ² domain whose tools include every tool the simulations call
    (a bare list of simulations names no domain), else ``fallback`` (the file or folder
    name)."""
    name = as_dict(info.get("environment_info")).get("domain_name")
    if isinstance(name, str) and name:
        return name
    if isinstance(top, str) and top:
        return top
    for task in tasks:
        instr = as_dict(as_dict(as_dict(task).get("user_scenario")).get("instructions"))
        if isinstance(instr.get("domain"), str) and instr["domain"]:
            return instr["domain"]
    return stock_domain_of_tools(_called_tools(sims)) or fallback


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


def valid_reward(value: Any) -> float | None:
    """A simulation's ``reward_info.reward`` as a float when it is a finite number in
    ``[0, 1]`` (τ²'s rewards: 1 passed, partial credit between); ``None`` for anything else
    (missing, a string, a boolean, NaN, an infinity, a number out of range)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an integer too large for a float
            return None
        if math.isfinite(number) and 0.0 <= number <= 1.0:
            return number
    return None


def _check_rewards(sims: Sequence[Mapping[str, Any]], path: Path, problems: list[str]) -> None:
    """Say, once per file, the simulations whose reward is present but not a number in
    ``[0, 1]``: they are read as having no reward (left out of Acc)."""
    bad = []
    for sim in sims:
        reward = as_dict(sim.get("reward_info")).get("reward")
        if reward is not None and valid_reward(reward) is None:
            bad.append(f"{sim.get('id')}: {str(reward)[:40]!r}")
    if bad:
        problems.append(
            f"{path}: {len(bad)} simulations have a reward that is not a number in [0, 1] "
            f"(e.g. simulation {bad[0]}); read as no reward, left out of Acc"
        )


def _first_of_each_id(
    sims: list[dict[str, Any]], path: Path, problems: list[str]
) -> list[dict[str, Any]]:
    """``sims`` with each simulation ``id`` once (the first kept); the repeats are dropped
    and said once per file. Simulations without an id are all kept."""
    seen: set[str] = set()
    kept: list[dict[str, Any]] = []
    repeated: list[str] = []
    for sim in sims:
        sid = sim.get("id")
        if sid is not None:
            key = str(sid)
            if key in seen:
                repeated.append(key)
                continue
            seen.add(key)
        kept.append(sim)
    if repeated:
        problems.append(
            f"{path}: {len(repeated)} simulations repeat an id already read (e.g. "
            f"{repeated[0]}); dropped, the first of each kept"
        )
    return kept


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
    if _is_simulation_list(raw):
        raw = {"simulations": raw}
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
    info = as_dict(data.get("info"))
    tasks = [t for t in data.get("tasks") or [] if isinstance(t, dict)]
    sims: list[dict[str, Any]] = []
    for i, sim in enumerate(raw_sims):
        why = _simulation_problem(sim)
        if why:
            sid = sim.get("id", f"#{i}") if isinstance(sim, dict) else f"#{i}"
            problems.append(f"{meta_path}: simulation {sid}: {why}; skipped")
        else:
            sims.append(sim)
    sims = _first_of_each_id(sims, meta_path, problems)
    _check_rewards(sims, meta_path, problems)
    source = str(p if p.is_dir() else meta_path)
    fallback = (p if p.is_dir() else meta_path.parent if p.name == "results.json" else p).stem
    return Tau2Run(
        source=source,
        layout="dir" if dir_layout else "file",
        domain=_domain_of(info, tasks, fallback or "unknown", data.get("domain"), sims),
        info=info,
        tasks=tasks,
        simulations=sims,
        functions=tool_functions(info),
        problems=problems,
        agent=participant(info, "agent_info"),
        user=participant(info, "user_info"),
        task_map={str(t["id"]): t for t in tasks if t.get("id") is not None},
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


def load_tasks(tasks: str | Path | Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Tasks given as a tasks file path (:func:`read_tasks_file`) or as task objects (each
    with an ``id``); ``[]`` for ``None``. Raises :class:`Tau2FormatError` on a bad task."""
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
