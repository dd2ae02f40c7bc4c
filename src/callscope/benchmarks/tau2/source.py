"""τ²-bench's results as a results source: run files and a tasks file read into the records
the τ² diagnostic (:func:`callscope.calibration.tau2.diagnose_tau2`) works on.

:func:`read_tau2_results` reads every run at the given paths
(:func:`~callscope.benchmarks.tau2.reader.find_tau2_runs`) and a tasks file when one is given,
and sets each run's ``task_map``: its embedded tasks, overridden by id by the tasks file's in
every run the file belongs to. A tasks file belongs to a run unless it is of another domain
(by its tasks' ``instructions.domain``, else by their action names against τ²'s stock tools)
or shares no task id with the run's simulations; such a run keeps its own tasks and the
problem is listed. A tasks file that belongs to no run is refused
(:class:`~callscope.benchmarks.tau2.reader.Tau2FormatError`).

:data:`TAU2_RESULTS` is the :class:`~callscope.benchmarks.results_source.ResultsSource`
(``tau2``) registered in :data:`callscope.benchmarks.results_source.RESULTS_SOURCES`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.benchmarks.tau2.reader import Tau2FormatError, Tau2Run, find_tau2_runs, load_tasks
from callscope.benchmarks.tau2.stock_tools import stock_domain_of_tools
from callscope.benchmarks.tau2.tasks import task_actions, task_domain

TasksArg = str | Path | Sequence[Mapping[str, Any]] | None


@dataclass
class Tau2Results:
    """What :func:`read_tau2_results` read: the runs (each with its ``task_map``) and the
    problems met with files that are not τ² results or a tasks file that was not used (each
    run's own reading problems stay in its ``problems``)."""

    runs: list[Tau2Run]
    problems: list[str] = field(default_factory=list)


def tasks_mismatch(run: Tau2Run, external: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Why a tasks file does not belong to ``run`` (``None`` when it does): another domain
    (by the tasks' ``instructions.domain``, else by their action names against τ²'s stock
    tools), or no task id shared with the run's simulations."""
    domains = {d for t in external.values() if (d := task_domain(t))}
    if not domains:
        names = {str(a.get("name")) for t in external.values() for a in task_actions(t) or []}
        stock = stock_domain_of_tools(names)
        domains = {stock} if stock else set()
    if domains and run.domain not in domains:
        return f"the tasks file is of domain {', '.join(sorted(domains))}, not {run.domain}"
    used = {str(sim["task_id"]) for sim in run.simulations}
    if used and not used & set(external):
        return "the tasks file shares no task id with its simulations"
    return None


def read_tau2_results(
    paths: str | Path | Sequence[str | Path], tasks: TasksArg = None
) -> Tau2Results:
    """The τ² runs at ``paths`` (one path or several; what a path may be:
    :func:`~callscope.benchmarks.tau2.reader.find_tau2_runs`) with their tasks (``tasks``: a
    tasks file path or task objects; see the module docstring). Raises
    ``FileNotFoundError`` / :class:`Tau2FormatError` when a path holds no τ² results, and
    :class:`Tau2FormatError` when the tasks belong to no run."""
    listed = [paths] if isinstance(paths, str | Path) else list(paths)
    runs: list[Tau2Run] = []
    problems: list[str] = []
    for path in listed:
        found, found_problems = find_tau2_runs(path)
        runs.extend(found)
        problems.extend(found_problems)
    external = {str(t["id"]): t for t in load_tasks(tasks)}
    foreign = {r.source: why for r in runs if external and (why := tasks_mismatch(r, external))}
    if external and len(foreign) == len(runs):
        raise Tau2FormatError(
            "refusing the tasks file: " + "; ".join(f"{src}: {why}" for src, why in foreign.items())
        )
    for src, why in foreign.items():
        problems.append(f"{src}: tasks file not used ({why})")
    for run in runs:
        if run.source not in foreign:
            run.task_map.update(external)
    return Tau2Results(runs=runs, problems=problems)


@dataclass(frozen=True)
class Tau2ResultsSource:
    """τ²-bench results files, run directories and folders of runs, as a results source
    (read option: ``tasks``, a tasks file or task objects)."""

    name: str = "tau2"
    title: str = "τ²-bench results"
    diagnostic: str = "tau2"

    def detect(self, path: Path) -> bool:
        """Whether ``path`` holds τ² results (:func:`find_tau2_runs` finds a run there)."""
        try:
            find_tau2_runs(path)
        except (OSError, Tau2FormatError):
            return False
        return True

    def read(self, path: Path, *, tasks: TasksArg = None) -> Tau2Results:
        """:func:`read_tau2_results` of ``path`` with ``tasks``."""
        return read_tau2_results(path, tasks)


TAU2_RESULTS = Tau2ResultsSource()
