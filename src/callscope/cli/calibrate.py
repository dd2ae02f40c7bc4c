"""`callscope calibrate`: the action-class diagnostic (GAR beside Acc) in one of three
pipelines: run a model on BFCL multi-turn (:func:`callscope.runs.calibrate.calibrate_model`),
or read BFCL's (:func:`callscope.runs.from_results.calibrate_from_bfcl`) or τ²-bench's
(:func:`callscope.runs.from_results.calibrate_from_tau2`) own results. This module parses
the options, calls one of them, prints what it returned and renders the HTML page."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from callscope.benchmarks.bfcl.categories import FILE_ORDER
from callscope.benchmarks.protocol import benchmark_names, get_benchmark
from callscope.calibration.classify import ClassifierConfig, preset
from callscope.calibration.probes import probe_help
from callscope.cli.common import (
    DEFAULT_MODEL,
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
    interruptible,
    open_model,
    style_arg,
    write_report,
)
from callscope.models.base import ChatModel, Decoding


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
        str, typer.Option("--preset", help="classifier preset: default | ask_over_tool_call")
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
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    timeout: TimeoutOpt = 120.0,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet")] = False,
) -> None:
    """Action-class diagnostic (GAR beside Acc) on BFCL multi-turn: run a model, or read
    BFCL's or tau2-bench's own results."""
    config = preset(preset_name)
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
        _from_tau2(from_tau2, out, tasks, judge_model, config)
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
        )


def _from_tau2(
    results: Path, out: Path, tasks: Path | None, judge: ChatModel | None, config: ClassifierConfig
) -> None:
    from callscope.benchmarks.tau2.reader import Tau2FormatError  # lazy: with its pipeline
    from callscope.report.html import build_diagnostic_page  # lazy: pandas + matplotlib
    from callscope.runs.from_results import calibrate_from_tau2  # lazy: numpy

    try:
        done = calibrate_from_tau2(results, out, tasks=tasks, judge=judge, config=config)
    except (Tau2FormatError, FileNotFoundError) as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None
    Console().print(done.diagnostics.rich_table())
    Console().print(done.diagnostics.rich_domain_table())
    page = build_diagnostic_page(out, done.page.title, done.page.tables, notes=done.page.notes)
    console.print(f"wrote {done.written[0]}, .json and {page}")


def _from_bfcl(
    results: Path, out: Path, scores: Path | None, model: str | None, config: ClassifierConfig
) -> None:
    from callscope.calibration.diagnostics import rich_table  # lazy: numpy
    from callscope.report.html import build_diagnostic_page  # lazy: pandas + matplotlib
    from callscope.runs.from_results import calibrate_from_bfcl  # lazy: numpy

    done = calibrate_from_bfcl(results, out, scores=scores, model=model, config=config)
    Console().print(rich_table(done.diagnostics.rows, title=f"BFCL results of {done.run.model}"))
    for p in done.run.problems:
        console.print(f"[yellow]{p}[/yellow]")
    page = build_diagnostic_page(out, done.page.title, done.page.tables, notes=done.page.notes)
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
) -> None:
    from callscope.calibration.diagnostics import rich_table  # lazy: numpy
    from callscope.runs.calibrate import BASELINE, calibrate_model, select_cases  # lazy: numpy

    try:
        bench = get_benchmark(benchmark)
    except ValueError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
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
        )
    r = done.result
    Console().print(
        rich_table(
            r.diagnostics.rows,
            title=f"{m.spec} ({probe or BASELINE}): {r.ran} ran, {r.skipped} already done, {r.seconds:.0f} s",
        )
    )
    console.print(f"wrote {done.path}")
    if done.paired is not None:
        console.print(f"paired comparison with the baseline (probe-{probe}.md):\n{done.paired}")
        console.print(
            f"ablation matrix of the probes run so far (probe-ablation.md):\n{done.ablation}"
        )
    elif done.baseline_missing:
        console.print(
            f"[yellow]no complete baseline for these cases in {out}: run the same command without --probe for the paired comparison[/yellow]"
        )
    write_report(out)
