"""What a multi-turn benchmark provides, and the registry of those callscope knows.

A multi-turn benchmark (:class:`MultiTurnBenchmark`) is anything with: its cases, the tools
available at a turn of a case, a fresh environment per run of a case (the simulator the
model's calls execute in), a grader of a finished trajectory, and per case the gold action
class (the one its category rewards, e.g. ``TOOL_CALL``, ``ASK`` or ``REFUSE`` of
:mod:`callscope.types`; "Calibration is the Bottleneck" §3.1) and the turns at which that class
is due (what Gold Action Recall looks at, §3.2). The check is
structural (``typing.Protocol``): an implementation need not import this module.

:data:`BENCHMARKS` (a :class:`~callscope.core.registry.Registry`) maps a name to a factory of
the benchmark; :func:`get_benchmark` builds one by name (``ConfigError`` listing the registered
names otherwise). Adding a benchmark is one package with a class satisfying the protocol that
registers itself with one :func:`register_benchmark` line (as
:mod:`callscope.benchmarks.bfcl.benchmark` does), named in :data:`BUILTIN_BENCHMARKS` when it
is callscope's own; another installed package adds one with an entry point in the
``callscope.benchmarks`` group whose object is the factory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from callscope.core.registry import Registry
from callscope.records import ExecResult, Trajectory
from callscope.types import ToolCall


@runtime_checkable
class MultiTurnCase(Protocol):
    """What the conversation driver (:func:`callscope.runs.conversation.run_conversation`) reads
    of a case: ``id``, ``category``, the user messages per turn, every tool spec
    (``functions``), the specs available at a turn, and ``missed_function`` (turn -> names of
    held-out tools re-injected at that turn; ``{}`` for a benchmark without them)."""

    id: str
    category: str
    turns: list[list[dict[str, Any]]]
    functions: list[dict[str, Any]]
    missed_function: dict[int, list[str]]

    def functions_at(self, turn: int) -> list[dict[str, Any]]: ...


@runtime_checkable
class Environment(Protocol):
    """A fresh environment of one run of one case. ``log`` holds every result so far, in
    order (the probes' observed state)."""

    log: list[ExecResult]

    def execute(
        self, calls: list[ToolCall] | tuple[ToolCall, ...], available: set[str] | frozenset[str]
    ) -> list[ExecResult]:
        """Run ``calls`` in order (only names in ``available`` may run); one result each."""
        ...

    def state(self) -> dict[str, Any]:
        """The environment's observable state (what a state-based grader compares)."""
        ...


@runtime_checkable
class Graded(Protocol):
    """A grader's verdict: ``passed`` plus a JSON-ready form for the run store."""

    passed: bool

    def to_dict(self) -> dict[str, Any]: ...


CaseT = TypeVar("CaseT")


@runtime_checkable
class MultiTurnBenchmark(Protocol[CaseT]):
    """A multi-turn benchmark (see the module doc)."""

    #: the registry name
    name: str
    #: every category, in the benchmark's order
    categories: tuple[str, ...]

    def cases(self, categories: Sequence[str] | None = None) -> list[CaseT]:
        """The cases of ``categories`` (all by default), in the benchmark's order."""
        ...

    def tools_at(self, case: CaseT, turn: int) -> list[dict[str, Any]]:
        """JSON-schema specs of the tools available at ``turn`` (0-based)."""
        ...

    def environment(self, case: CaseT) -> Environment:
        """A fresh environment for one run of ``case`` (never shared between runs)."""
        ...

    def grade(self, case: CaseT, trajectory: Trajectory) -> Graded:
        """The verdict on a finished run of ``case``; never raises on model behaviour."""
        ...

    def gold_class(self, case: CaseT) -> str:
        """The action class ``case``'s category rewards."""
        ...

    def due_turns(self, case: CaseT) -> list[int]:
        """The turns of ``case`` at which its gold class is due."""
        ...


@runtime_checkable
class CategoryTable(Protocol):
    """What a benchmark may also say about its category *names*, for the tables of
    :mod:`callscope.calibration` and the readers of stored records (optional: without it,
    :func:`category_key`, :func:`short_category` and :func:`category_gold_class` fall back on
    :attr:`MultiTurnBenchmark.categories`)."""

    def category_key(self, category: str) -> tuple[int, str]:
        """Sort key of ``category`` (any spelling the benchmark uses) in display order."""
        ...

    def short_category(self, category: str) -> str:
        """The name tables show for ``category`` (BFCL: ``multi_turn_base`` -> ``base``)."""
        ...

    def category_gold_class(self, category: str) -> str:
        """The action class ``category`` rewards; ``ValueError`` for a name it does not know."""
        ...


def category_key(benchmark: MultiTurnBenchmark[Any], category: str) -> tuple[int, str]:
    """Sort key of ``category`` in ``benchmark``'s display order: its
    :meth:`CategoryTable.category_key`, else the position in ``benchmark.categories`` (names
    it does not list after them), then the name."""
    if isinstance(benchmark, CategoryTable):
        return benchmark.category_key(category)
    known = tuple(benchmark.categories)
    return (known.index(category) if category in known else len(known)), category


def short_category(benchmark: MultiTurnBenchmark[Any], category: str) -> str:
    """The display name of ``category``: :meth:`CategoryTable.short_category`, else the name."""
    if isinstance(benchmark, CategoryTable):
        return benchmark.short_category(category)
    return category


def category_gold_class(benchmark: MultiTurnBenchmark[Any], category: str) -> str:
    """The gold action class of ``category``: :meth:`CategoryTable.category_gold_class`;
    ``ValueError`` when the benchmark has no such table or does not know the name."""
    if isinstance(benchmark, CategoryTable):
        return benchmark.category_gold_class(category)
    raise ValueError(
        f"no gold action class known for category {category!r}: benchmark "
        f"{benchmark.name!r} has no category table"
    )


#: the modules of callscope's own benchmarks, each registering itself on import (imported the
#: first time :data:`BENCHMARKS` is used, so a lookup finds them without importing them first)
BUILTIN_BENCHMARKS: tuple[str, ...] = ("callscope.benchmarks.bfcl.benchmark",)

#: name -> factory of the benchmark, in registration order (plugins: the
#: ``callscope.benchmarks`` entry points)
BENCHMARKS: Registry[Callable[[], MultiTurnBenchmark[Any]]] = Registry(
    "multi-turn benchmark",
    builtin_modules=BUILTIN_BENCHMARKS,
    entry_point_group="callscope.benchmarks",
    unknown="unknown {what} {name!r}; registered: {choices}",
)


def register_benchmark(name: str, factory: Callable[[], MultiTurnBenchmark[Any]]) -> None:
    """Add (or replace) the benchmark called ``name`` (``ConfigError`` for an empty name or
    one holding ``:``)."""
    BENCHMARKS.register(name, factory)


def benchmark_names() -> tuple[str, ...]:
    """The registered names, in registration order."""
    return tuple(BENCHMARKS)


#: the benchmark used when none is named
DEFAULT_BENCHMARK = "bfcl"


def benchmark_or_default(benchmark: MultiTurnBenchmark[Any] | None) -> MultiTurnBenchmark[Any]:
    """``benchmark``, or a new instance of :data:`DEFAULT_BENCHMARK` when it is ``None``."""
    return benchmark if benchmark is not None else get_benchmark(DEFAULT_BENCHMARK)


def get_benchmark(name: str) -> MultiTurnBenchmark[Any]:
    """A new instance of the benchmark called ``name``; ``ConfigError`` listing the
    registered names otherwise."""
    return BENCHMARKS[name]()
