"""One entry point for building a registry-scale benchmark from a named source."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from callscope.benchmarks.registry_builder import build_registry_benchmark
from callscope.types import Case

BFCL_SOURCE = "bfcl"
GLAIVE_PREFIX = "glaive:"


@dataclass
class BuiltBenchmark:
    cases: list[Case]
    source_cases: int
    dropped: Counter[str] = field(default_factory=Counter)


def load_source(source: str, *, allow_download: bool = False) -> tuple[list[Case], Counter[str]]:
    """Single-call source cases: ``bfcl`` (the installed bfcl-eval data, offline) or
    ``glaive:PATH`` / ``glaive:hf:glaiveai/glaive-function-calling-v2`` (download only with
    ``allow_download``)."""
    if source == BFCL_SOURCE:
        from callscope.benchmarks.bfcl.single import load_bfcl_single_detailed

        load = load_bfcl_single_detailed()
        dropped = Counter(
            {
                f"{cat}:{why}": k
                for cat, reasons in load.skipped.items()
                for why, k in reasons.items()
            }
        )
        return list(load.cases), dropped
    if source.startswith(GLAIVE_PREFIX):
        from callscope.benchmarks.glaive import load_glaive

        g = load_glaive(source[len(GLAIVE_PREFIX) :], allow_hub=allow_download)
        return g.cases, Counter(g.dropped)
    raise ValueError(f"unknown benchmark source {source!r}: use 'bfcl' or 'glaive:PATH'")


def build_benchmark(
    source: str,
    *,
    scales: Sequence[int] = (5, 10, 15),
    n: int | None = 300,
    seed: int = 0,
    distractors: str = "uniform",
    gold_position: str = "random",
    allow_download: bool = False,
) -> BuiltBenchmark:
    """Source cases → one case per (query, scale) with nested registries."""
    cases, dropped = load_source(source, allow_download=allow_download)
    if n is not None and n > len(cases):
        raise ValueError(f"asked for n={n} queries but {source} yields only {len(cases)}")
    built = build_registry_benchmark(
        cases, scales=scales, n=n, seed=seed,
        distractors=distractors, gold_position=gold_position,  # type: ignore[arg-type]
    )  # fmt: skip
    return BuiltBenchmark(cases=built, source_cases=len(cases), dropped=dropped)
