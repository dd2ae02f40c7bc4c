"""The ``callscope`` typer app: every command, registered from its own module.

One module per command or command group (``score``, ``run``, ``bench``, ``experiment`` and
``demo``, ``report`` and ``compare``, ``classify``, ``calibrate``, ``audit``); shared options and
helpers are in :mod:`callscope.cli.common`. Each command is a thin wrapper over a library
call. Registration order is the order ``callscope --help`` lists the commands in.

Every command (the ``bench`` group's too) is registered wrapped in
:func:`callscope.cli.common.handle_errors`: the one place user errors become one line and
exit code 2 (the exit-code scheme is in :mod:`callscope.cli.common`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from callscope.cli.audit import audit_command
from callscope.cli.bench import bench_app
from callscope.cli.calibrate import calibrate
from callscope.cli.classify import classify
from callscope.cli.common import DEBUG_ENV, handle_errors, set_debug
from callscope.cli.experiment import demo, experiment
from callscope.cli.report import compare, report
from callscope.cli.run import run
from callscope.cli.score import score
from callscope.cli.serve import serve

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Where and why LLM tool calls fail, and how to repair them.",
)


@app.callback()
def _main(
    debug: Annotated[
        bool,
        typer.Option("--debug", help=f"show the traceback of user errors (or set {DEBUG_ENV}=1)"),
    ] = False,
) -> None:
    """callscope: diagnose, repair and calibrate LLM tool calls.

    Exit codes: 0 success; 1 the command ran but some rows or cases failed or were
    malformed; 2 usage or input error (missing file, bad option, bad experiment file)."""
    set_debug(debug)


for _command in (score, run, experiment, demo, report, compare, classify, calibrate, serve):
    app.command()(handle_errors(_command))
app.command("audit")(handle_errors(audit_command))
for _info in bench_app.registered_commands:
    if _info.callback is not None:
        _info.callback = handle_errors(_info.callback)
app.add_typer(bench_app, name="bench")
