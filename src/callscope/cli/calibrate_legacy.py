"""The old spelling of ``callscope calibrate``: the single command with 32 options that chose
its job by which option was given. :class:`CalibrateGroup` (the ``calibrate`` group's class)
runs such arguments as their subcommand (:func:`legacy_args`) and ends with a one-line note on
stderr naming the new spelling. It will be removed in a later release."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

#: the options that chose a job of the single command, in the order it tried them, and the
#: subcommand each is now (their value becomes the subcommand's argument)
LEGACY_JOBS: tuple[tuple[str, str], ...] = (
    ("--export-bfcl", "export"),
    ("--from-tau2", "from-tau2"),
    ("--from-bfcl", "from-bfcl"),
    ("--experiment", "experiment"),
)
#: the single command's options that took no value
LEGACY_FLAGS = frozenset({"--quiet", "--no-cache", "--allow-task-mismatch", "--pooled"})
_OUT = ("-o", "--out")
#: ``ctx.meta`` key of the note an old spelling prints
_NOTE = "callscope.calibrate.legacy_note"


def legacy_args(args: Sequence[str], accepted: dict[str, frozenset[str]]) -> tuple[list[str], str]:
    """The subcommand spelling of the single command's arguments ``args``, and the one-line
    note saying so. The job is chosen as the single command chose it: ``--export-bfcl``,
    then ``--from-tau2``, ``--from-bfcl``, ``--experiment``, then ``-m`` given more than once
    (``panel``), else ``run``; the chosen option's value becomes the subcommand's argument
    (``export`` also takes the ``-o`` run directory as its first). Options the subcommand
    does not take (``accepted``: subcommand -> its option names), which the single command
    ignored for that job, are left out.

    >>> legacy_args(["--from-bfcl", "r", "-o", "o", "--quiet"], {"from-bfcl": frozenset({"-o"})})[0]
    ['from-bfcl', 'r', '-o', 'o']
    """
    items: list[tuple[str, str | None]] = []  # (option or "", value); "" = a bare argument
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if token.startswith("--") and "=" in token:
            name, value = token.split("=", 1)
            items.append((name, value))
        elif token.startswith("-") and token not in LEGACY_FLAGS and token != "--help" and rest:
            items.append((token, rest.pop(0)))
        elif token.startswith("-"):
            items.append((token, None))
        else:
            items.append(("", token))
    given = {name: value for name, value in items}
    job = next((sub for opt, sub in LEGACY_JOBS if given.get(opt) is not None), None)
    models = [v for name, v in items if name in ("-m", "--model")]
    if job is None:
        job = "panel" if len(models) > 1 else "run"
    selector = next((opt for opt, sub in LEGACY_JOBS if sub == job), None)
    head: list[str] = [job]
    if job == "export":
        head.append(next((v for n, v in items if n in _OUT and v is not None), "runs/calibrate"))
    if selector is not None:
        head.append(str(given[selector]))
    keep = accepted.get(job, frozenset()) | {"--help"}
    if job == "export":
        keep = keep - set(_OUT)
    out = list(head)
    for name, value in items:
        if name == selector or (name and name not in keep):
            continue
        out.extend(t for t in (name, value) if t)
    old = {
        "export": "-o RUN_DIR --export-bfcl DEST",
        "from-tau2": "--from-tau2 RESULTS",
        "from-bfcl": "--from-bfcl RESULTS",
        "experiment": "--experiment FILE",
        "panel": "-m MODEL -m MODEL ...",
        "run": "-m MODEL ...",
    }[job]
    new = {
        "export": "export RUN_DIR DEST",
        "from-tau2": "from-tau2 RESULTS",
        "from-bfcl": "from-bfcl RESULTS",
        "experiment": "experiment FILE",
        "panel": "panel -m MODEL -m MODEL ...",
        "run": "run -m MODEL ...",
    }[job]
    note = (
        f"note: `callscope calibrate {old}` is now `callscope calibrate {new}`; "
        "the old spelling will be removed in a later release"
    )
    return out, note


class CalibrateGroup(TyperGroup):
    """The ``calibrate`` group: arguments that do not start with a subcommand (or ask for the
    group's help) are the single command's old spelling, run as their subcommand
    (:func:`legacy_args`), followed by a one-line note on stderr (last, so that what the
    command prints first stays first)."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ctx.help_option_names):
            accepted = {
                name: frozenset(
                    opt
                    for p in cmd.params
                    for opt in (*p.opts, *p.secondary_opts)
                    if opt.startswith("-")
                )
                for name, cmd in self.commands.items()
            }
            args, ctx.meta[_NOTE] = legacy_args(args, accepted)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: typer.Context) -> Any:
        """Run the subcommand; after it (however it ends), the note of an old spelling."""
        try:
            return super().invoke(ctx)
        finally:
            if ctx.meta.get(_NOTE):
                typer.echo(ctx.meta[_NOTE], err=True)
