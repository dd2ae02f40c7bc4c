"""BFCL's multi-turn categories as a :class:`~callscope.benchmarks.protocol.MultiTurnBenchmark`.

A thin adapter over the existing functions: cases from
:func:`~callscope.benchmarks.bfcl.multi_turn.load_multi_turn`, tools at a turn from
:meth:`MTCase.functions_at`, a fresh :class:`~callscope.benchmarks.bfcl.env.SafeEnv` per run,
BFCL's own checker through :func:`~callscope.benchmarks.bfcl.grade.grade`, and the gold action
class, due turns, display order and short names of the category table
(:mod:`callscope.benchmarks.bfcl.categories`).
Registers itself as the ``bfcl`` benchmark of :data:`callscope.benchmarks.protocol.BENCHMARKS`
(which imports this module on first use).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from callscope.benchmarks.bfcl import categories as table
from callscope.benchmarks.bfcl.categories import full_category
from callscope.benchmarks.bfcl.env import SafeEnv
from callscope.benchmarks.bfcl.grade import Verdict, grade
from callscope.benchmarks.bfcl.multi_turn import MULTI_TURN_CATEGORIES, MTCase, load_multi_turn
from callscope.benchmarks.protocol import register_benchmark
from callscope.records import Trajectory


@dataclass(frozen=True)
class BFCLMultiTurn:
    """BFCL multi-turn (base, long_context, miss_param, miss_func) from the installed
    ``bfcl-eval``; ``language_hint`` keeps BFCL's Python hint on every tool description."""

    name: str = "bfcl"
    categories: tuple[str, ...] = MULTI_TURN_CATEGORIES
    language_hint: bool = True

    def cases(self, categories: Sequence[str] | None = None) -> list[MTCase]:
        """The cases of ``categories`` (full or short names, e.g. ``miss_param``; all by
        default) in BFCL's file order."""
        wanted = tuple(full_category(c) for c in categories) if categories else self.categories
        return load_multi_turn(wanted, language_hint=self.language_hint)

    def tools_at(self, case: MTCase, turn: int) -> list[dict[str, Any]]:
        return case.functions_at(turn)

    def environment(self, case: MTCase) -> SafeEnv:
        return SafeEnv(case)

    def grade(self, case: MTCase, trajectory: Trajectory) -> Verdict:
        return grade(case, trajectory)

    def gold_class(self, case: MTCase) -> str:
        return case.gold_class

    def due_turns(self, case: MTCase) -> list[int]:
        return case.due_turns()

    # the category table (:class:`~callscope.benchmarks.protocol.CategoryTable`)
    def category_key(self, category: str) -> tuple[int, str]:
        """BFCL's display order (base, miss_param, miss_func, long_context), then others."""
        return table.category_key(category)

    def short_category(self, category: str) -> str:
        return table.short_category(category)

    def category_gold_class(self, category: str) -> str:
        return table.gold_class(category)


register_benchmark("bfcl", BFCLMultiTurn)
