"""What ``callscope calibrate``'s results jobs (``from-bfcl``, ``from-tau2``, ``leaderboard``:
:mod:`callscope.cli.calibrate_jobs`) count as input lost, and their exit code.

The contract is every command's (:mod:`callscope.cli.common`, ``docs/reference/cli.md``):
**2** when nothing could be read (one line saying what, :func:`~callscope.cli.common.fail`);
**1** when something was read but a file, a category or lines of the input were lost (the
report is written first, then :func:`exit_if_lost`, through
:func:`~callscope.cli.common.run_exit_code`, the rule of ``run`` and ``score``: malformed
input is a failed run); **0** otherwise. What counts as lost is read from the fields the
readers fill, never from their wording:

* BFCL multi-turn (:func:`bfcl_lost`): a result file read that gave no case, every problem
  that names a line of a file read (``path:line: ...``) and the lines the reader counts as
  left out (its ``left_out``, where it has one); a category with no result file at all is
  not one (a tree of some categories is a normal tree), nor a turn saved as one string (read
  as one emission);
* τ²-bench (:func:`tau2_lost`): the reader's problems (files and simulations it skipped), not
  the diagnostic's notes (a task whose every expected action is the user's);
* BFCL single-turn trees (:func:`leaderboard_lost`): each model's problems (lines skipped,
  files that cannot be read) and lines left out but those answering a case the installed
  BFCL lacks (``not_installed``, a version difference like the drift left out).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from callscope.cli.common import console, fail, run_exit_code

if TYPE_CHECKING:
    from callscope.benchmarks.bfcl.results import BfclRun
    from callscope.benchmarks.tau2.source import Tau2Results
    from callscope.runs.leaderboard_tree import LeaderboardRun


def exit_if_lost(lost: int) -> None:
    """End the job with exit 1 (:func:`~callscope.cli.common.run_exit_code`) when ``lost``
    (a count of losses, not necessarily of distinct lines) is not 0, saying so in one line
    after the problems printed and written to the report."""
    code = run_exit_code([], malformed=lost)
    if code:
        console.print(
            f"not all of the input was read (the problems above and in the report): exit {code}",
            style="yellow",
            markup=False,
        )
        raise typer.Exit(code)


def bfcl_lost(run: BfclRun) -> int:
    """The input a BFCL multi-turn read lost: each result file read that gave no case (a
    JSON array, UTF-16, gzip without ``.gz``, an empty file) and each problem naming a line of
    a file read (a line skipped, a duplicate id, an id the ground truth lacks), and the
    lines counted in the run's ``left_out`` (a line may be in both: only whether any input
    was lost decides the exit code)."""
    from callscope.benchmarks.bfcl.results import find_bfcl_files  # lazy: with its pipeline

    read = {r.category for r in run.records}
    empty = [f for p in run.files for f in find_bfcl_files(p) if f.category not in read]
    names = [f"{p}:" for p in run.files]
    lines = [
        p
        for p in run.problems
        if any(p.startswith(n) and p[len(n) :].split(":", 1)[0].isdigit() for n in names)
    ]
    return len(empty) + len(lines) + sum(run.left_out.values())


def tau2_lost(read: Tau2Results, results: Path, left_out: int = 0) -> int:
    """The input a τ²-bench read lost: the reader's problems (:class:`Tau2Results` and each
    run's) and the simulations the diagnostic left out (``left_out``: their task not found).
    Exit 2 (:func:`~callscope.cli.common.fail`) when no simulation was read."""
    if not any(run.simulations for run in read.runs):
        fail(f"{results}: no τ²-bench simulation read (its 'simulations' list is empty)")
    return len(read.problems) + sum(len(run.problems) for run in read.runs) + left_out


def leaderboard_lost(run: LeaderboardRun, tree: Path) -> int:
    """The input a BFCL single-turn read lost: every model's problems and lines left out but
    ``not_installed`` ones. Exit 2 (:func:`~callscope.cli.common.fail`, naming the first
    problem) when no answer was read."""
    problems = [p for r in run.results for p in r.problems]
    if not any(len(r.rows) for r in run.results):
        first = f": {problems[0]}" if problems else ""
        fail(f"{tree}: no answer read{first}")
    left = sum(n for r in run.results for k, n in r.left_out.items() if k != "not_installed")
    return len(problems) + left
