"""The records that cross callscope's layers: one package, one owner per record type.

Every stage hands the next typed records, never loose dicts: the cascade's verdict on one call
(:class:`Diagnosis`, with its :class:`FailureKind`\\ s), a ``score`` row (:class:`ScoreRow`),
the correction loop's :class:`Outcome` and :class:`Attempt`\\ s as the run store keeps them,
and a multi-turn conversation (:class:`Trajectory` of :class:`TurnRecord` /
:class:`StepRecord` / :class:`ExecResult`) with the :class:`CaseRecord` the action-class
diagnostics read. The store reads and writes these; the report reads them back and never
re-runs the cascade.

Records hold data and the properties derived from it only; the metrics that compute them live
in ``callscope.saag`` (cascade) and ``callscope.calibration`` (GAR), the readers that build them
from files in ``callscope.benchmarks``.

Split by what the records are about, all importable from here (``from callscope.records import
Diagnosis``): :mod:`~callscope.records.verdicts` (stages, failure kinds, one call's verdict, a
``score`` row), :mod:`~callscope.records.answers` (an answer's verdict: its calls and their
diagnoses, its stored form), :mod:`~callscope.records.runs` (the loop's attempts and outcomes, multi-turn
conversations), :mod:`~callscope.records.tau2` (τ²-bench), :mod:`~callscope.records.wire` (the
wire shapes: OpenAI chat, Anthropic Messages, OpenAI Responses, as ``TypedDict``\\ s).
"""

from callscope.records.answers import *  # noqa: F403
from callscope.records.answers import __all__ as _answers
from callscope.records.runs import *  # noqa: F403
from callscope.records.runs import __all__ as _runs
from callscope.records.tau2 import *  # noqa: F403
from callscope.records.tau2 import __all__ as _tau2
from callscope.records.verdicts import *  # noqa: F403
from callscope.records.verdicts import __all__ as _verdicts
from callscope.records.wire import *  # noqa: F403
from callscope.records.wire import __all__ as _wire

__all__ = [*_verdicts, *_answers, *_runs, *_tau2, *_wire]
