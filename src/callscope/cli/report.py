"""`callscope report` and `callscope compare`: from run stores, no model needed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from callscope.cli.common import fail, stdout_console, write_report
from callscope.store.schema import STORE_FILE


def report(run_dir: Annotated[Path, typer.Argument(help="a run or experiment directory")]) -> None:
    """Rebuild tables, figures and report.html from a run store (no model needed)."""
    if not (run_dir / STORE_FILE).exists():
        fail(
            f"{run_dir} holds no {STORE_FILE}: not a callscope run directory; pass the -o "
            "folder of `run`, `experiment` or `calibrate`"
        )
    write_report(run_dir)


def compare(
    runs: Annotated[
        list[Path], typer.Argument(help="run directories (one holding several models is fine)")
    ],
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="model the others are paired against (default: the first)"),
    ] = None,
) -> None:
    """Models side by side: two runs as A vs B; otherwise (or with --baseline) every model of
    the runs with intervals, its stage-failure mix and paired differences to a baseline."""
    from callscope.report.compare import (  # lazy: pandas
        compare_many,
        compare_runs,
        many_tables,
        outcome_groups,
        print_comparison,
    )

    for run_dir in runs:
        if not (run_dir / STORE_FILE).exists():
            fail(f"{run_dir} holds no {STORE_FILE}: not a callscope run directory")
    if len(runs) == 2 and baseline is None:
        print_comparison(compare_runs(runs[0], runs[1]), stdout_console())
        return
    groups = outcome_groups(runs)
    if not groups:
        fail("the runs hold no SAAG outcomes to compare")
    try:
        tables = many_tables(*compare_many(groups, baseline))
    except ValueError as exc:
        fail(str(exc))
    for table in tables:
        stdout_console().print(table.to_rich())
