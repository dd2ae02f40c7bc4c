"""`callscope report` and `callscope compare`: from run stores, no model needed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from callscope.cli.common import fail, write_report
from callscope.store.run_store import STORE_FILE


def report(run_dir: Annotated[Path, typer.Argument(help="a run or experiment directory")]) -> None:
    """Rebuild tables, figures and report.html from a run store (no model needed)."""
    if not (run_dir / STORE_FILE).exists():
        fail(
            f"{run_dir} holds no {STORE_FILE}: not a callscope run directory; pass the -o "
            "folder of `run`, `experiment` or `calibrate`"
        )
    write_report(run_dir)


def compare(
    run_a: Annotated[Path, typer.Argument()],
    run_b: Annotated[Path, typer.Argument()],
) -> None:
    """Headline metrics of two runs side by side, with their differences and intervals."""
    from callscope.report.compare import compare_runs, print_comparison  # lazy: pandas

    for run_dir in (run_a, run_b):
        if not (run_dir / STORE_FILE).exists():
            fail(f"{run_dir} holds no {STORE_FILE}: not a callscope run directory")
    print_comparison(compare_runs(run_a, run_b), Console())
