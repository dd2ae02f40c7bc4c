"""The ``callscope`` typer app: every command, registered from its own module.

One module per command or command group (``score``, ``run``, ``bench``, ``experiment`` and
``demo``, ``report`` and ``compare``, ``classify``, ``calibrate``); shared options and
helpers are in :mod:`callscope.cli.common`. Each command is a thin wrapper over a library
call. Registration order is the order ``callscope --help`` lists the commands in.
"""

from __future__ import annotations

import typer

from callscope.cli.bench import bench_app
from callscope.cli.calibrate import calibrate
from callscope.cli.classify import classify
from callscope.cli.experiment import demo, experiment
from callscope.cli.report import compare, report
from callscope.cli.run import run
from callscope.cli.score import score

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Where and why LLM tool calls fail, and how to repair them.",
)


@app.callback()
def _main() -> None:
    """callscope: diagnose, repair and calibrate LLM tool calls."""


for _command in (score, run, experiment, demo, report, compare, classify, calibrate):
    app.command()(_command)
app.add_typer(bench_app, name="bench")
