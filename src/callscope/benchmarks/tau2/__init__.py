"""τ²-bench (sierra-research/tau2-bench): what callscope knows of its files and formats.

τ²-bench runs its own simulations; callscope only reads what ``tau2 run`` wrote:

* :mod:`~callscope.benchmarks.tau2.reader`: results files and run directories
  (:func:`find_tau2_runs`, :func:`read_tau2_run`, :class:`Tau2Run`), tasks files and the
  tool definitions a run exposes; :class:`Tau2FormatError` for what is not τ² results;
* :mod:`~callscope.benchmarks.tau2.tasks`: a task's expected actions, its TOOL_CALL /
  REFUSE gold class and its user scenario text;
* :mod:`~callscope.benchmarks.tau2.messages`: a simulation's agent calls, tool responses,
  reward and action checks;
* :mod:`~callscope.benchmarks.tau2.write_tools`: which tools write to the database;
* :mod:`~callscope.benchmarks.tau2.stock_tools`: τ²'s tool labels and schemas of its stock
  domains;
* :mod:`~callscope.benchmarks.tau2.source`: runs and a tasks file read together
  (:func:`read_tau2_results`, each run's tasks by id), and τ² as a results source
  (:data:`~callscope.benchmarks.tau2.source.TAU2_RESULTS`).

The action-class diagnostic on these records (GAR / Acc, stage mix, CONFIRM) is
:func:`callscope.calibration.tau2.diagnose_tau2`; its tables are
:mod:`callscope.report.tau2_tables`.
"""

from callscope.benchmarks.tau2.reader import (
    Tau2FormatError,
    Tau2Run,
    find_tau2_runs,
    read_tasks_file,
    read_tau2_run,
    tool_functions,
)
from callscope.benchmarks.tau2.tasks import scenario_text, task_actions, task_gold_class
from callscope.benchmarks.tau2.write_tools import WRITE_VERBS, decide_write_tools

__all__ = [
    "WRITE_VERBS",
    "Tau2FormatError",
    "Tau2Run",
    "decide_write_tools",
    "find_tau2_runs",
    "read_tasks_file",
    "read_tau2_run",
    "scenario_text",
    "task_actions",
    "task_gold_class",
    "tool_functions",
]
