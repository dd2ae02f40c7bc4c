"""`callscope experiment` and `callscope demo`: models × scales × modes, then the report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from callscope.cli.common import (
    DEFAULT_MODEL,
    ModelOpt,
    console,
    fail,
    interruptible,
    one_line,
    print_run_summary,
    run_exit_code,
    write_report,
)
from callscope.runs.demo import DEMO_MAX_ATTEMPTS, demo_experiment
from callscope.runs.experiment import Experiment, run_experiment
from callscope.store.run_store import RunStore


def _run_experiment_and_report(exp: Experiment, quiet: bool) -> None:
    with interruptible():
        summaries = run_experiment(exp, show_progress=not quiet)
    for s in summaries:
        print_run_summary(s)
    write_report(exp.output)
    raise typer.Exit(run_exit_code(summaries))


def experiment(
    config: Annotated[
        Path | None,
        typer.Argument(help="experiment TOML (models, benchmark, scales, modes...)"),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet")] = False,
    preset: Annotated[
        str | None,
        typer.Option("--preset", help="a named experiment instead of a file: paper"),
    ] = None,
    out: Annotated[Path | None, typer.Option("-o", "--out", help="output (with --preset)")] = None,
) -> None:
    """Run models × scales × modes from one file, then write tables, figures and report.html."""
    if preset is not None or config is None:
        # lazy: the preset table is only needed without a file
        from callscope.runs.presets import preset_experiment

        if config is not None or preset is None:
            fail("pass an experiment file or --preset NAME (one of them)")
        try:
            exp = preset_experiment(preset, out)
        except ValueError as exc:
            fail(str(exc))
        _run_experiment_and_report(exp, quiet)
        return
    if not config.is_file():
        fail(f"{config}: no such experiment file; pass a TOML file (see docs/experiments.md)")
    try:
        exp = Experiment.load(config)
    except (OSError, ValueError) as exc:
        fail(f"{config}: {exc}")
    _run_experiment_and_report(exp, quiet)


def print_findings(run_dir: Path) -> None:
    """The three findings a newcomer should look at, and where the report shows them."""
    from callscope.report.findings import findings  # lazy: pandas
    from callscope.report.flow import call_flow  # lazy: pandas
    from callscope.report.html import REPORT_FILE, run_info  # lazy: pandas, matplotlib
    from callscope.report.load import load_outcomes  # lazy: read only for the findings

    outcomes = load_outcomes(run_dir)
    store = RunStore(run_dir)
    try:
        info = run_info(store, sorted({str(o["model"]) for o in outcomes}))
    finally:
        store.close()
    report = str(run_dir / REPORT_FILE)
    console.print("\n[bold]Three things to look at first[/bold]")
    for i, f in enumerate(findings(outcomes, call_flow(outcomes), info.audit_lines, report), 1):
        console.print(f"[bold]{i}. {escape(f.title)}[/bold]: {escape(f.text)}")
        console.print(f"   see {escape(one_line(f.where))}")


def demo(
    out: Annotated[Path, typer.Option("-o", "--out")] = Path("runs/demo"),
    model: ModelOpt = DEFAULT_MODEL,
    max_attempts: Annotated[int, typer.Option("--max-attempts")] = DEMO_MAX_ATTEMPTS,
    quiet: Annotated[bool, typer.Option("--quiet")] = False,
) -> None:
    """The quick start's main job: the embedded model on six BFCL cases chosen to show the
    cascade's failure stages and what corrections do (direct, structured and gated feedback at
    S = 5 and 15, 3 attempts), then the report and the three findings to look at first."""
    start = time.monotonic()
    try:
        exp = demo_experiment(out, model, max_attempts)
    except ValueError as exc:
        fail(str(exc))
    with interruptible():
        summaries = run_experiment(exp, show_progress=not quiet)
    for s in summaries:
        print_run_summary(s)
    write_report(exp.output)
    print_findings(exp.output)
    console.print(f"demo finished in {time.monotonic() - start:.0f} s")
    raise typer.Exit(run_exit_code(summaries))
