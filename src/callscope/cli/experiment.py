"""`callscope experiment` and `callscope demo`: models × scales × modes, then the report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from callscope.cli.common import (
    DEFAULT_MODEL,
    ModelOpt,
    fail,
    interruptible,
    print_run_summary,
    run_exit_code,
    write_report,
)
from callscope.runs.experiment import Experiment, run_experiment

DEMO_N = 3
DEMO_MAX_ATTEMPTS = 3


def _run_experiment_and_report(exp: Experiment, quiet: bool) -> None:
    with interruptible():
        summaries = run_experiment(exp, show_progress=not quiet)
    for s in summaries:
        print_run_summary(s)
    write_report(exp.output)
    raise typer.Exit(run_exit_code(summaries))


def experiment(
    config: Annotated[
        Path, typer.Argument(help="experiment TOML (models, benchmark, scales, modes...)")
    ],
    quiet: Annotated[bool, typer.Option("--quiet")] = False,
) -> None:
    """Run models × scales × modes from one file, then write tables, figures and report.html."""
    if not config.is_file():
        fail(f"{config}: no such experiment file; pass a TOML file (see the README's Experiments)")
    try:
        exp = Experiment.load(config)
    except (OSError, ValueError) as exc:
        fail(f"{config}: {exc}")
    _run_experiment_and_report(exp, quiet)


def demo(
    out: Annotated[Path, typer.Option("-o", "--out")] = Path("runs/demo"),
    model: ModelOpt = DEFAULT_MODEL,
    n: Annotated[int, typer.Option("--n", help="BFCL queries (each at every scale)")] = DEMO_N,
    max_attempts: Annotated[int, typer.Option("--max-attempts")] = DEMO_MAX_ATTEMPTS,
    quiet: Annotated[bool, typer.Option("--quiet")] = False,
) -> None:
    """The quick start's main job: the embedded model on a small BFCL-based sample, all three
    feedback modes at S = 5, 10, 15, then the report."""
    exp = Experiment(output=out, models=[model], n=n, max_attempts=max_attempts, max_tokens=256)
    _run_experiment_and_report(exp, quiet)
