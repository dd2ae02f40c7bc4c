"""The ``callscope`` typer app: every command, registered from its own module.

One module per command or command group (``score``, ``run``, ``bench``, ``experiment`` and
``demo``, ``report`` and ``compare``, ``classify``, ``calibrate``, ``audit``, ``serve``);
shared options and helpers are in :mod:`callscope.cli.common`. Each command is a thin wrapper
over a library call. :data:`COMMANDS` is the registry (name -> module and attribute; a
read-only :class:`~callscope.core.registry.Registry`), in the order ``callscope --help`` lists
them. Another installed package adds a command with an entry point in the
``callscope.commands`` group (``name = "module:attribute"``, a function or a typer app); only
its text is read until the command runs.

Start-up: :func:`main` (the ``callscope`` console script) builds the app with only the
command it is asked to run (``callscope score ...`` imports the score command's module, not
the runner, the report or numpy), and the whole app for ``--help`` or an unknown name.
:func:`build_app` is the same for library use; ``callscope.cli.app`` (and this module's
``app``) is the whole app, built on first access.

Every command is registered wrapped in :func:`callscope.cli.common.handle_errors` (the
``bench`` group's commands by their own module): the one place user errors become one line
and exit code 2 (the exit-code scheme is in :mod:`callscope.cli.common`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from callscope.cli.common import DEBUG_ENV, handle_errors, set_debug
from callscope.core.registry import Registry
from callscope.errors import ConfigError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint


def _command_target(ep: EntryPoint) -> tuple[str, str]:
    """A ``callscope.commands`` entry point's ``(module, attribute)``, without importing it."""
    if not ep.attr:
        raise ConfigError(f"command entry point {ep.name!r} names no attribute: {ep.value!r}")
    return ep.module, ep.attr


#: command name -> (module, attribute): a function, or a typer sub-app (``bench``)
COMMANDS: Registry[tuple[str, str]] = Registry(
    "command",
    entries={
        "score": ("callscope.cli.score", "score"),
        "run": ("callscope.cli.run", "run"),
        "experiment": ("callscope.cli.experiment", "experiment"),
        "demo": ("callscope.cli.experiment", "demo"),
        "report": ("callscope.cli.report", "report"),
        "compare": ("callscope.cli.report", "compare"),
        "classify": ("callscope.cli.classify", "classify"),
        "calibrate": ("callscope.cli.calibrate", "calibrate"),
        "serve": ("callscope.cli.serve", "serve"),
        "audit": ("callscope.cli.audit", "audit_command"),
        "bench": ("callscope.cli.bench", "bench_app"),
    },
    entry_point_group="callscope.commands",
    plugin_value=_command_target,
    read_only=True,
)


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


def build_app(names: Sequence[str] | None = None) -> typer.Typer:
    """The typer app with the commands ``names`` (all of :data:`COMMANDS` by default), each
    wrapped in :func:`~callscope.cli.common.handle_errors`. In the whole app, a plugin
    command whose module does not import is left out with a warning on stderr (the built-in
    commands still run); asked for by name, its error is raised."""
    app = typer.Typer(
        add_completion=False,
        no_args_is_help=True,
        help="Where and why LLM tool calls fail, and how to repair them.",
    )
    app.callback()(_main)
    for name in names if names is not None else COMMANDS:
        module, attr = COMMANDS[name]
        try:
            target: Any = getattr(importlib.import_module(module), attr)
        except Exception as exc:
            if names is not None or name not in COMMANDS.plugins:
                raise
            typer.echo(f"callscope: command plugin {name!r} not loaded: {exc}", err=True)
            continue
        if isinstance(target, typer.Typer):  # a group: its module wraps its own commands
            app.add_typer(target, name=name)
        else:
            app.command(name)(handle_errors(target))
    return app


def _wanted(argv: Sequence[str]) -> list[str] | None:
    """The one command ``argv`` runs (the first argument not an option), or ``None`` (all)."""
    for arg in argv:
        if not arg.startswith("-"):
            return [arg] if arg in COMMANDS else None
    return None


def main() -> None:
    """The ``callscope`` console script."""
    build_app(_wanted(sys.argv[1:]))()


def __getattr__(name: str) -> typer.Typer:
    if name == "app":
        app = build_app()
        globals()["app"] = app
        return app
    raise AttributeError(name)
