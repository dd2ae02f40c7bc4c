"""`callscope calibrate`: the action-class diagnostic (GAR beside Acc) in one of three
pipelines: run a model on BFCL multi-turn (:func:`callscope.runs.calibrate.calibrate_model`),
or read BFCL's (:func:`callscope.runs.from_results.calibrate_from_bfcl`) or τ²-bench's
(:func:`callscope.runs.from_results.calibrate_from_tau2`) own results. This module parses
the options, calls one of them, prints what it returned and renders the HTML page."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from callscope.benchmarks.bfcl.categories import FILE_ORDER
from callscope.benchmarks.protocol import benchmark_names, get_benchmark
from callscope.calibration.classify import ClassifierConfig, preset, preset_names
from callscope.calibration.probes import probe_help
from callscope.cli.common import (
    DEFAULT_MODEL,
    EXIT_FAILED,
    ApiKeyOpt,
    BaseUrlOpt,
    CacheOpt,
    MaxTokensOpt,
    ModelOpt,
    NoCacheOpt,
    StyleOpt,
    TimeoutOpt,
    comma_list,
    console,
    fail,
    interruptible,
    open_model,
    print_stopped_early,
    style_arg,
    write_report,
)
from callscope.models.base import ChatModel, Decoding

if TYPE_CHECKING:
    from callscope.calibration.tau2 import Tau2Config


def calibrate(
    model: ModelOpt = DEFAULT_MODEL,
    out: Annotated[
        Path, typer.Option("-o", "--out", help="run directory (re-run to resume)")
    ] = Path("runs/calibrate"),
    categories: Annotated[str, typer.Option("--categories", help=",".join(FILE_ORDER))] = ",".join(
        FILE_ORDER
    ),
    benchmark: Annotated[
        str,
        typer.Option("--benchmark", help="multi-turn benchmark: " + " | ".join(benchmark_names())),
    ] = "bfcl",
    n: Annotated[
        int | None,
        typer.Option("--n", help="cases per category (first N in BFCL order; all if omitted)"),
    ] = None,
    probe: Annotated[
        str | None,
        typer.Option(
            "--probe",
            help=probe_help(),
        ),
    ] = None,
    style: StyleOpt = "auto",
    max_steps: Annotated[int, typer.Option("--max-steps")] = 20,
    max_tokens: MaxTokensOpt = 512,
    preset_name: Annotated[
        str,
        typer.Option(
            "--classifier", "--preset", help="classifier preset: " + " | ".join(preset_names())
        ),
    ] = "default",
    from_bfcl: Annotated[
        Path | None, typer.Option("--from-bfcl", help="BFCL result tree from `bfcl generate`")
    ] = None,
    scores: Annotated[
        Path | None, typer.Option("--scores", help="BFCL score tree from `bfcl evaluate`")
    ] = None,
    bfcl_model: Annotated[
        str | None, typer.Option("--bfcl-model", help="model folder inside the BFCL trees")
    ] = None,
    from_tau2: Annotated[
        Path | None, typer.Option("--from-tau2", help="a tau2-bench results.json or run directory")
    ] = None,
    tasks: Annotated[
        Path | None, typer.Option("--tasks", help="tau2 tasks file (when results lack tasks)")
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge", help="tau2 CONFIRM: also ask this model (any backend) and report agreement"
        ),
    ] = None,
    write_tools: Annotated[
        str | None, typer.Option("--write-tools", help="tau2: comma list of tools that write")
    ] = None,
    read_tools: Annotated[
        str | None, typer.Option("--read-tools", help="tau2: comma list of tools that never write")
    ] = None,
    ask_tasks: Annotated[
        str | None,
        typer.Option(
            "--ask-tasks",
            help="tau2: checked ASK task list (ids or domain:id, comma separated; 'none' = no "
            "ASK gold); default: the scenario cue candidates",
        ),
    ] = None,
    allow_task_mismatch: Annotated[
        bool,
        typer.Option(
            "--allow-task-mismatch",
            help="tau2: compute per-class rows even when action checks belong to other tasks",
        ),
    ] = False,
    pooled: Annotated[
        bool, typer.Option("--pooled", help="tau2: also pool every agent / user pair")
    ] = False,
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    timeout: TimeoutOpt = 120.0,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="cases run at once (HTTP backends)")
    ] = 1,
    quiet: Annotated[bool, typer.Option("--quiet")] = False,
) -> None:
    """Action-class diagnostic (GAR beside Acc) on BFCL multi-turn: run a model, or read
    BFCL's or tau2-bench's own results."""
    try:
        config = preset(preset_name)
    except ValueError as exc:
        fail(str(exc))
    if from_tau2 is not None:
        judge_model = None
        if judge:
            judge_model = open_model(
                judge,
                base_url=base_url,
                api_key=api_key,
                timeout=timeout,
                cache=cache,
                no_cache=no_cache,
            )
        from callscope.calibration.tau2 import Tau2Config  # lazy: with its pipeline

        settings = Tau2Config(
            write_tools=frozenset(comma_list(write_tools or "")),
            read_tools=frozenset(comma_list(read_tools or "")),
            ask_tasks=None
            if ask_tasks is None
            else frozenset(t for t in comma_list(ask_tasks) if t.lower() != "none"),
            allow_task_mismatch=allow_task_mismatch,
            pooled=pooled,
        )
        _from_tau2(from_tau2, out, tasks, judge_model, config, settings)
    elif from_bfcl is not None:
        _from_bfcl(from_bfcl, out, scores, bfcl_model, config)
    else:
        _model_run(
            model,
            out,
            comma_list(categories),
            n,
            benchmark=benchmark,
            probe=probe,
            style=style_arg(style),
            max_steps=max_steps,
            decoding=Decoding(max_tokens=max_tokens),
            preset_name=preset_name,
            quiet=quiet,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            cache=cache,
            no_cache=no_cache,
            concurrency=concurrency,
        )


def _from_tau2(
    results: Path,
    out: Path,
    tasks: Path | None,
    judge: ChatModel | None,
    config: ClassifierConfig,
    settings: Tau2Config | None = None,
) -> None:
    from callscope.benchmarks.tau2.reader import Tau2FormatError  # lazy: with its pipeline
    from callscope.report.html import build_diagnostic_page  # lazy: pandas + matplotlib
    from callscope.runs.from_results import calibrate_from_tau2  # lazy: numpy

    try:
        done = calibrate_from_tau2(
            results, out, tasks=tasks, judge=judge, config=config, settings=settings
        )
    except (Tau2FormatError, FileNotFoundError) as exc:
        fail(str(exc))
    for w in done.page.warnings:
        console.print(w, style="bold red", markup=False)
    Console().print(done.diagnostics.rich_acc_table())
    for table in done.diagnostics.rich_tables():
        Console().print(table)
    Console().print(done.diagnostics.rich_domain_table())
    for heading, items in done.page.lists:
        console.print(f"{heading}: {len(items)} (listed in the report)", markup=False)
    page = build_diagnostic_page(
        out,
        done.page.title,
        done.page.tables,
        notes=done.page.notes,
        warnings=done.page.warnings,
        lists=done.page.lists,
    )
    console.print(f"wrote {done.written[0]}, .json and {page}")


def _from_bfcl(
    results: Path, out: Path, scores: Path | None, model: str | None, config: ClassifierConfig
) -> None:
    from callscope.calibration.diagnostics import rich_table  # lazy: numpy
    from callscope.report.html import build_diagnostic_page  # lazy: pandas + matplotlib
    from callscope.runs.from_results import calibrate_from_bfcl  # lazy: numpy

    try:
        done = calibrate_from_bfcl(results, out, scores=scores, model=model, config=config)
    except FileNotFoundError as exc:
        fail(str(exc))
    for w in done.page.warnings:  # the failed capability check first
        console.print(w, style="bold red", markup=False)
    title = f"BFCL results of {done.run.model} (classifier: {config.name})"
    Console().print(rich_table(done.diagnostics.rows, title=title))
    for n in done.page.notes:
        console.print(n, markup=False)
    for p in done.run.problems:
        console.print(p, style="yellow", markup=False)
    page = build_diagnostic_page(
        out,
        done.page.title,
        done.page.tables,
        notes=done.page.notes,
        warnings=done.page.warnings,
        lists=done.page.lists,
    )
    console.print(f"wrote {done.written[0]}, .json and {page}")


def _model_run(
    spec: str,
    out: Path,
    categories: list[str],
    n: int | None,
    *,
    benchmark: str,
    probe: str | None,
    style: str | None,
    max_steps: int,
    decoding: Decoding,
    preset_name: str,
    quiet: bool,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    cache: Path | None,
    no_cache: bool,
    concurrency: int = 1,
) -> None:
    from callscope.calibration.diagnostics import rich_table  # lazy: numpy
    from callscope.runs.calibrate import BASELINE, calibrate_model, select_cases  # lazy: numpy

    try:
        bench = get_benchmark(benchmark)
    except ValueError as exc:
        fail(str(exc))
    cases = select_cases(categories, n, bench)
    m = open_model(
        spec, base_url=base_url, api_key=api_key, timeout=timeout, cache=cache, no_cache=no_cache
    )
    with interruptible(), closing(m):
        done = calibrate_model(
            m,
            out,
            cases,
            probe=probe,
            style=style,
            max_steps=max_steps,
            decoding=decoding,
            preset_name=preset_name,
            show_progress=not quiet,
            benchmark=bench,
            concurrency=concurrency,
        )
    r = done.result
    Console().print(
        rich_table(
            r.diagnostics.rows,
            title=f"{m.spec} ({probe or BASELINE}): {r.ran} ran, {r.skipped} already done, {r.seconds:.0f} s",
        )
    )
    console.print(f"wrote {done.path}", markup=False)
    if done.paired is not None:
        console.print(
            f"paired comparison with the baseline (probe-{probe}.md):\n{done.paired}", markup=False
        )
        console.print(
            f"ablation matrix of the probes run so far (probe-ablation.md):\n{done.ablation}",
            markup=False,
        )
    elif done.baseline_missing:
        console.print(
            f"[yellow]no complete baseline for these cases in {out}: run the same command without --probe for the paired comparison[/yellow]"
        )
    write_report(out)
    if r.aborted:
        print_stopped_early(r.aborted)
    if r.n_errored:
        console.print(
            f"{r.errored_note()} Last error: {r.error_message}. Re-run the same command to retry them.",
            style="yellow",
            markup=False,
        )
        raise typer.Exit(EXIT_FAILED)
