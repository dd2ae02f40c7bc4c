"""`callscope run`: the SAAG correction loop for one model over a cases file (resumable)."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from callscope.cli.common import (
    DEFAULT_MODEL,
    ApiKeyOpt,
    BaseUrlOpt,
    CacheOpt,
    GroundingOpt,
    MaxTokensOpt,
    ModelOpt,
    NoCacheOpt,
    StyleOpt,
    TimeoutOpt,
    comma_list,
    console,
    fail,
    interruptible,
    model_options,
    print_run_summary,
    read_rows,
    run_exit_code,
    shown_path,
    style_arg,
)
from callscope.models.base import Decoding
from callscope.runs.runner import run_cases
from callscope.saag.groundings import DEFAULT_GROUNDING, get_grounding
from callscope.store.run_store import RunStore
from callscope.types import GATED_MODES, Case


def load_cases(path: Path) -> tuple[list[Case], list[str]]:
    """Cases from a JSONL file, and a message for each malformed row (which is skipped)."""
    cases: list[Case] = []
    problems: list[str] = []
    seen: set[str] = set()
    for n, row in enumerate(read_rows(path), 1):
        if "_error" in row:
            problems.append(row["_error"])
            continue
        try:
            case = Case.from_dict(row)
        except ValueError as exc:
            problems.append(f"row {n}: {exc}")
            continue
        if case.id in seen:
            problems.append(f"row {n}: duplicate id {case.id!r}")
            continue
        seen.add(case.id)
        cases.append(case)
    return cases, problems


def run(
    cases_file: Annotated[Path, typer.Argument(help="JSONL cases {id, query, functions, gold?}")],
    out: Annotated[
        Path, typer.Option("-o", "--out", help="run directory (re-run to resume)")
    ] = Path("runs/run"),
    model: ModelOpt = DEFAULT_MODEL,
    modes: Annotated[
        str,
        typer.Option(
            "--modes",
            help="comma list of direct,binary,structured,gated "
            f"(ablations: {','.join(GATED_MODES[1:])})",
        ),
    ] = "direct,binary,structured",
    max_attempts: Annotated[int, typer.Option("--max-attempts", min=1)] = 15,
    style: StyleOpt = "auto",
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="parallel requests (HTTP backends)")
    ] = 1,
    max_tokens: MaxTokensOpt = 512,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    timeout: TimeoutOpt = 120.0,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="no progress bar")] = False,
    grounding: GroundingOpt = DEFAULT_GROUNDING,
) -> None:
    """Run the SAAG correction loop for one model over a cases file (resumable).

    Exit code 1 when cases were malformed (skipped), an outcome ended in a backend error or
    the run stopped early; 2 when the file is missing or holds no usable case."""
    cases, problems = load_cases(cases_file)
    for p in problems:
        console.print(f"[yellow]skipped malformed case: {escape(p)}[/yellow]")
    if not cases:
        fail(
            f"{cases_file} holds no usable case ({len(problems)} malformed); "
            "write one JSON object {id, query, functions, gold?} per line or use `callscope bench build`"
        )
    from callscope.runs.experiment import open_model  # lazy: looked up when called

    m = open_model(
        model,
        model_options(
            base_url=base_url, api_key=api_key, timeout=timeout, cache=cache, no_cache=no_cache
        ),
    )
    store = RunStore(out)
    # closed (its writer lock released) when the run ends, also inside one process
    with closing(store), interruptible(), closing(m):
        store.lock_writer()  # one writer per run directory: a second run is refused here
        store.set_meta("malformed_cases", problems)
        summary = run_cases(
            m,
            cases,
            store,
            modes=comma_list(modes),
            max_attempts=max_attempts,
            style=style_arg(style),
            concurrency=concurrency,
            decoding=Decoding(temperature=0.0, seed=seed, max_tokens=max_tokens),
            show_progress=not quiet,
            grounding=get_grounding(grounding).name,
        )
    print_run_summary(summary)
    console.print(
        f"run directory: {shown_path(out)} (final rows: {shown_path(out / 'final.jsonl')})"
    )
    if problems:
        console.print(f"[yellow]{len(problems)} malformed case(s) skipped[/yellow]")
    raise typer.Exit(run_exit_code([summary], malformed=len(problems)))
