"""`callscope demo`: a few BFCL queries chosen to show what callscope finds, in ~4 minutes.

The cases come from the same build as ``experiments/paper.toml`` (BFCL single-call, n = 30
queries sampled with seed 0, nested registries at S = 5/10/15, uniform distractors), so a
demo case is exactly the prompt the paper experiment sends; :data:`DEMO_QUERIES` picks the
queries (by BFCL id) and :data:`DEMO_SCALES` the scales. They were chosen by running the
embedded 0.5B model (greedy, 256 tokens) on that build: between them the first attempts fail
at each cascade stage, and structured feedback turns a failure into a solve (see the
module's test and the README's quick start for the run it gives).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from callscope.benchmarks.registry_builder import benchmark_to_jsonl
from callscope.benchmarks.sources import BFCL_SOURCE, build_benchmark
from callscope.core.jsonl import read_jsonl
from callscope.runs.experiment import Experiment
from callscope.types import Case, Mode

#: the paper experiment's build (experiments/paper.toml): n queries, seed, scales
BUILD_N = 30
BUILD_SEED = 0
BUILD_SCALES: tuple[int, ...] = (5, 10, 15)
#: BFCL ids of the demo's queries (each at every scale of :data:`DEMO_SCALES`)
DEMO_QUERIES: tuple[str, ...] = (
    "live_multiple_694-164-10",
    "live_multiple_871-182-8",
    "simple_python_286",
)
DEMO_SCALES: tuple[int, ...] = (5, 15)
DEMO_MODES: tuple[Mode, ...] = ("direct", "binary", "structured")
DEMO_MAX_ATTEMPTS = 3
DEMO_MAX_TOKENS = 256


def demo_cases(
    queries: Sequence[str] = DEMO_QUERIES, scales: Sequence[int] = DEMO_SCALES
) -> list[Case]:
    """The demo's cases: those of the paper experiment's build whose BFCL id is in
    ``queries``, at ``scales`` (build order). ``ValueError`` when a query is not in the build
    (another bfcl-eval version samples other queries)."""
    built = build_benchmark(BFCL_SOURCE, scales=BUILD_SCALES, n=BUILD_N, seed=BUILD_SEED)
    wanted = set(queries)
    cases = [c for c in built.cases if c.meta.get("source_id") in wanted and c.scale in scales]
    missing = wanted - {str(c.meta.get("source_id")) for c in cases}
    if missing:
        raise ValueError(
            f"the demo's BFCL queries {', '.join(sorted(missing))} are not in this bfcl-eval's "
            f"sample (n={BUILD_N}, seed={BUILD_SEED}); install the version the README names"
        )
    return cases


def demo_experiment(out: Path, model: str, max_attempts: int = DEMO_MAX_ATTEMPTS) -> Experiment:
    """The demo as an experiment writing into ``out``: its cases saved as ``out/cases.jsonl``
    (kept when a resumed demo finds the same ones there; ``ValueError`` when ``out`` holds
    another run's cases: pass a new ``-o``)."""
    cases = demo_cases()
    saved = out / "cases.jsonl"
    if saved.exists():
        old = {row.get("id") for _, row in read_jsonl(saved) if isinstance(row, dict)}
        if old != {c.id for c in cases}:
            raise ValueError(
                f"{out} holds another run's cases (an earlier demo?); remove it or pass -o NEW_DIR"
            )
    else:
        out.mkdir(parents=True, exist_ok=True)
        benchmark_to_jsonl(cases, saved)
    return Experiment(
        output=out,
        models=[model],
        modes=list(DEMO_MODES),
        max_attempts=max_attempts,
        source=None,
        cases_file=saved,
        scales=list(DEMO_SCALES),
        n=len(DEMO_QUERIES),
        max_tokens=DEMO_MAX_TOKENS,
    )
