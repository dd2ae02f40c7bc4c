"""Results sources: another tool's own result files read into records, one registry of them.

A results source turns the files a benchmark's own harness wrote into the records callscope's
diagnostics read, without running a model. It is any object with

* ``name``: its registry key (``bfcl``, ``tau2``, ``bfcl-single``);
* ``title``: what it reads, in words (help text and messages);
* ``diagnostic``: which diagnostic reads what ``read`` returns: ``cases`` for a
  :class:`CaseResults` (:class:`~callscope.records.CaseRecord`\\ s, GAR beside Acc by
  :func:`callscope.calibration.diagnostics.compute_diagnostics`), ``tau2`` for τ²-bench
  simulations (:func:`callscope.calibration.tau2.diagnose_tau2`), ``answers`` for BFCL's
  single-turn answers (``bfcl-single``: a list of
  :class:`~callscope.benchmarks.bfcl.single_results.SingleTurnModel`, diagnosed by
  :func:`callscope.runs.leaderboard.diagnose_model`);
* ``detect(path) -> bool``: whether ``path`` holds its files;
* ``read(path, **options)``: the records (options are the source's own, e.g. BFCL's
  ``scores`` and ``model``, τ²'s ``tasks``); problems are collected, not raised, except
  when nothing at ``path`` is the source's files.

:data:`RESULTS_SOURCES` holds them (:class:`~callscope.core.registry.Registry`; another
package adds one through the entry-point group ``callscope.results_sources``), and
:func:`callscope.runs.from_results.calibrate_from_results` drives any of them by name. A
results-file benchmark whose records are :class:`~callscope.records.CaseRecord`\\ s is one
package with such a class and one :func:`register_results_source` line below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from callscope.benchmarks.bfcl.results import BFCL_RESULTS
from callscope.benchmarks.bfcl.single_results import BFCL_SINGLE_RESULTS
from callscope.benchmarks.tau2.source import TAU2_RESULTS
from callscope.core.registry import Registry
from callscope.records import CaseRecord


@runtime_checkable
class ResultsSource(Protocol):
    """A benchmark's own result files as records (see the module docstring)."""

    name: str
    title: str
    diagnostic: str

    def detect(self, path: Path) -> bool: ...

    def read(self, path: Path, **options: Any) -> Any: ...


class CaseResults(Protocol):
    """What a ``cases`` source reads: the case records, the problems met, the benchmark's own
    Acc counts per category where its files state them (``{category: (correct, total)}``,
    e.g. BFCL's score headers), what was read in one line (``found``) and as JSON-ready
    facts (``describe``: model, files, versions...)."""

    records: list[CaseRecord]
    problems: list[str]

    def header_acc(self) -> dict[str, tuple[int, int]]: ...

    def found(self) -> str: ...

    def describe(self) -> dict[str, Any]: ...


RESULTS_SOURCES: Registry[ResultsSource] = Registry(
    "results source", entry_point_group="callscope.results_sources"
)


def register_results_source(source: ResultsSource) -> ResultsSource:
    """Add ``source`` to :data:`RESULTS_SOURCES` under its ``name``; returns it."""
    return RESULTS_SOURCES.register(source.name, source)


def detect_results_source(path: str | Path) -> ResultsSource | None:
    """The first registered source (registration order) whose files are at ``path``;
    ``None`` when none is."""
    p = Path(path)
    return next((s for s in RESULTS_SOURCES.values() if s.detect(p)), None)


register_results_source(BFCL_RESULTS)
register_results_source(TAU2_RESULTS)
register_results_source(BFCL_SINGLE_RESULTS)
