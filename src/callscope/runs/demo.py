"""`callscope demo`: a few BFCL cases chosen to show what callscope finds, in a few minutes.

The cases come from the same build as ``experiments/paper.toml`` (BFCL single-call, n = 30
queries sampled with seed 0, nested registries at S = 5/10/15, uniform distractors), so a
demo case is exactly the prompt the paper experiment sends; :data:`DEMO_CASES` names them
(``<BFCL id>@S<scale>``). They were chosen from a run of the embedded 0.5B model (greedy,
256 tokens, direct / structured / gated, 3 attempts) on all 90 cases of that build
(``experiments/results/demo-search.toml``): no correction solved a case there, so the demo
shows what the corrections do instead. Between them the first attempts pass, and fail at
each cascade stage; structured feedback moves a stage-2 failure on to stage 3 in one case
and drops a correct name in another (overcorrection), while gated feedback moves a stage-1
failure to stage 3 and never loses what was right.
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
#: the demo's cases (``<BFCL id>@S<scale>``), and what the 0.5B did on each in the search run:
DEMO_CASES: tuple[str, ...] = (
    "live_simple_47-20-0@S5",  # passes at attempt 1
    "live_multiple_336-133-0@S5",  # stage 1; structured reaches stage 2, gated stage 3
    "live_multiple_118-45-3@S5",  # stage 2; structured reaches stage 3, gated stays at 2
    "live_multiple_3-2-0@S15",  # stage 2; structured loses the name (stage 1), gated keeps it
    "live_multiple_871-182-8@S15",  # stage 1 at S = 15; gated reaches stage 2
    "live_multiple_1005-234-0@S5",  # stage 3 (a value with no grounding)
)
DEMO_MODES: tuple[Mode, ...] = ("direct", "structured", "gated")
DEMO_MAX_ATTEMPTS = 3
DEMO_MAX_TOKENS = 256


def demo_cases(wanted: Sequence[str] = DEMO_CASES) -> list[Case]:
    """The demo's cases: those of the paper experiment's build whose id is in ``wanted``
    (build order). ``ValueError`` when one is not in the build (another bfcl-eval version
    samples other queries)."""
    built = build_benchmark(BFCL_SOURCE, scales=BUILD_SCALES, n=BUILD_N, seed=BUILD_SEED)
    cases = [c for c in built.cases if c.id in set(wanted)]
    missing = set(wanted) - {c.id for c in cases}
    if missing:
        raise ValueError(
            f"the demo's BFCL cases {', '.join(sorted(missing))} are not in this bfcl-eval's "
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
        scales=sorted({c.scale for c in cases}),
        n=len(cases),
        max_tokens=DEMO_MAX_TOKENS,
    )
