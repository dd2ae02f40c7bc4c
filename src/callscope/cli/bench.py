"""`callscope bench`: build benchmarks (the cases files `run` reads)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from callscope.cli.common import EXIT_FAILED, EXIT_OK, console, fail, handle_errors, one_line

bench_app = typer.Typer(no_args_is_help=True, help="Build benchmarks (cases files for `run`).")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


@bench_app.command("build")
@handle_errors
def bench_build(
    source: Annotated[
        str,
        typer.Option(
            "--source", help="bfcl | glaive:PATH | glaive:hf:glaiveai/glaive-function-calling-v2"
        ),
    ] = "bfcl",
    categories: Annotated[
        str,
        typer.Option(
            "--categories",
            help="BFCL single-turn categories, comma-separated, as BFCL's data files name them: "
            "simple_python, multiple, live_simple, live_multiple, parallel, parallel_multiple, "
            "live_parallel, live_parallel_multiple, irrelevance, live_irrelevance, "
            "live_relevance (default: the first four)",
        ),
    ] = "",
    scales: Annotated[str, typer.Option("--scales", help="registry sizes")] = "5,10,15",
    n: Annotated[
        int, typer.Option("--n", help="number of queries (each appears once per scale)")
    ] = 300,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    distractors: Annotated[
        str, typer.Option("--distractors", help="uniform (paper) | similar (confusable)")
    ] = "uniform",
    gold_first: Annotated[
        bool, typer.Option("--gold-first", help="put the gold function first (paper Fig. 5)")
    ] = False,
    allow_download: Annotated[
        bool, typer.Option("--allow-download", help="allow fetching hf: sources")
    ] = False,
    output: Annotated[Path, typer.Option("-o", "--output")] = Path("cases.jsonl"),
) -> None:
    """Build a registry-scale benchmark: each query with S = 5/10/15 nested registries."""
    from callscope.benchmarks.registry_builder import benchmark_to_jsonl  # lazy: numpy
    from callscope.benchmarks.sources import build_benchmark, split_categories  # lazy: numpy

    try:
        built = build_benchmark(
            source,
            scales=_ints(scales),
            n=n,
            seed=seed,
            distractors=distractors,
            gold_position="first" if gold_first else "random",
            allow_download=allow_download,
            categories=split_categories(categories) or None,
        )
    except (ValueError, FileNotFoundError, ImportError) as exc:
        fail(str(exc))
    count = benchmark_to_jsonl(built.cases, output)
    what = "single-call queries" if not categories else f"queries of {categories}"
    console.print(
        f"{one_line(source)}: {built.source_cases} usable {what}; wrote {count} cases ({n} queries × scales {scales}) to {one_line(str(output))}",
        markup=False,
    )
    for category, k in sorted(built.per_category.items()):
        if categories:
            console.print(f"  {category}: {k} usable queries", markup=False)
    for reason, k in sorted(built.dropped.items()):
        console.print(f"  dropped {reason}: {k}", markup=False)
    # exit 1 when rows could not be read at all (bad JSON, not an object); filtering drops
    # (no call, several calls, a schema off) are the benchmark's definition, not errors
    unreadable = sum(k for r, k in built.dropped.items() if r.split(":")[-1] == "malformed_row")
    raise typer.Exit(EXIT_FAILED if unreadable else EXIT_OK)
