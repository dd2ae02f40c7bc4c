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
import inspect
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.rich_utils
from rich.text import Text

from callscope.cli.common import DEBUG_ENV, handle_errors, route_warnings_safely, set_debug
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


#: a line that starts a list item: its line break is kept
_ITEM = re.compile(r"^(?:[-*•] |\d+[.)] )")
#: the end of the first sentence: a full stop before a capital, not after "e.g" / "i.e"
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\.\s+(?=[A-Z])")


def help_text(doc: str | None) -> str | None:
    r"""A docstring as help text: dedented, each paragraph's hard line breaks joined into
    one line (typer's rich help keeps them, so a description broke mid-sentence at any
    width); in a paragraph with list items each item is one line; a paragraph that starts
    with click's ``\b`` or has indented lines is kept as written. ``None`` stays ``None``.

    >>> help_text("Run the loop\n    over cases.\n\n    Exit codes:\n    - 0 ok\n    - 1 failed")
    'Run the loop over cases.\n\nExit codes:\n- 0 ok\n- 1 failed'
    """
    if doc is None:
        return None
    out = []
    for para in inspect.cleandoc(doc).split("\n\n"):
        lines = para.splitlines()
        if para.startswith("\b") or any(line[:1].isspace() for line in lines):
            out.append(para)
        elif any(_ITEM.match(line) for line in lines):
            items: list[str] = []
            for n, line in enumerate(lines):
                if n == 0 or _ITEM.match(line):
                    items.append(line.strip())
                else:
                    items[-1] += " " + line.strip()
            out.append("\n".join(items))
        else:
            out.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(out)


def short_help(doc: str | None) -> str | None:
    r"""The line ``callscope --help`` lists a command with: its help's first sentence.

    >>> short_help("Detector validity audit: false alarms, per stage. Cases whose gold is an answer")
    'Detector validity audit: false alarms, per stage.'
    >>> short_help("Serve a proxy (e.g. for agents). It checks calls.")
    'Serve a proxy (e.g. for agents).'
    """
    text = help_text(doc)
    if not text:
        return text
    first = text.split("\n\n")[0].replace("\n", " ")
    return _SENTENCE_END.split(first, maxsplit=1)[0].rstrip(".") + "."


def _fold_long_words() -> None:
    """Typer's help tables cut a word longer than its column with "…" (``serve --help``
    showed ``local:qwen2.5-coder-0.5…``): its help texts fold such a word onto the next
    line instead, whole. Done once, on the first app built."""
    make = typer.rich_utils._make_rich_text
    if getattr(make, "folds", False):
        return

    def folding(*, text: str, style: str = "", markup_mode: Any) -> Any:
        rendered = make(text=text, style=style, markup_mode=markup_mode)
        if isinstance(rendered, Text):
            rendered.overflow = "fold"
        return rendered

    folding.folds = True  # type: ignore[attr-defined]
    typer.rich_utils._make_rich_text = folding


def _reflow_group(group: typer.Typer) -> None:
    """A typer group's help, and its commands' (recursively), as :func:`help_text`."""
    info = group.info
    if isinstance(info.help, str):
        info.help = help_text(info.help)
    for cmd in group.registered_commands:
        doc = cmd.help if isinstance(cmd.help, str) else inspect.getdoc(cmd.callback)
        cmd.help = help_text(doc)
        if cmd.short_help is None:
            cmd.short_help = short_help(doc)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _reflow_group(sub.typer_instance)


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
    _fold_long_words()
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
            _reflow_group(target)
            app.add_typer(target, name=name, short_help=short_help(target.info.help))
        else:
            doc = inspect.getdoc(target)
            app.command(name, help=help_text(doc), short_help=short_help(doc))(
                handle_errors(target)
            )
    return app


def _wanted(argv: Sequence[str]) -> list[str] | None:
    """The one command ``argv`` runs (the first argument not an option), or ``None`` (all)."""
    for arg in argv:
        if not arg.startswith("-"):
            return [arg] if arg in COMMANDS else None
    return None


def main() -> None:
    """The ``callscope`` console script (a process callscope owns: its knowledge tables are
    frozen once loaded, and a batch command collects young objects less often,
    :func:`~callscope.saag.normalise.knowledge.base.own_the_process`)."""
    # lazy: stage 3's word tables stay unloaded for a command that never grounds a value
    from callscope.saag.normalise.knowledge.base import own_the_process

    route_warnings_safely()
    wanted = _wanted(sys.argv[1:])
    own_the_process(batch=wanted != ["serve"])  # a server keeps the collector's defaults
    build_app(wanted)()


def __getattr__(name: str) -> typer.Typer:
    if name == "app":
        app = build_app()
        globals()["app"] = app
        return app
    raise AttributeError(name)
