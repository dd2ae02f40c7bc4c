"""What the command modules share: the stderr console, the options several commands take,
the few steps (reading rows, opening a model, writing the report) more than one runs, and
the one exit-code scheme of every command.

Exit codes (every command; ``docs/architecture.md`` and ``docs/reference/cli.md`` list them):

* ``0`` (:data:`EXIT_OK`): success.
* ``1`` (:data:`EXIT_FAILED`): the command ran, but some rows or cases failed or were
  malformed (``score`` error rows, ``run`` skipped cases or backend errors, a run stopped
  early, ``classify`` malformed rows, ``calibrate`` cases that ended in a backend error).
* ``2`` (:data:`EXIT_USAGE`): a usage or input error: a missing file, a bad option, a bad
  experiment file, nothing to read. One line says what was wrong and what to do
  (:func:`handle_errors`, :func:`fail`); the traceback only with ``callscope --debug`` or
  ``CALLSCOPE_DEBUG=1``. Click's own usage errors (an unknown option) exit 2 as well.

Terminal output: every text a command prints on a terminal goes through one rendering,
:func:`terminal_safe` (a :class:`SafeConsole` applies it to every string it renders, table
cells included): ids, names and messages that came from a data file or a model are data,
so a control character (``ESC]0;...`` retitling the window, ``ESC[2J`` clearing it, a C1
``CSI``) is printed as its escape (``\\x1b``) and a lone surrogate as ``\\udfff``, never sent
to the terminal as is. Commands print through :data:`console` (stderr) or
:func:`stdout_console`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sqlite3
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from callscope.core.jsonl import read_jsonl
from callscope.core.text import escape_controls
from callscope.errors import CallscopeError
from callscope.models.base import ModelOptions
from callscope.models.registry import DEFAULT_SPEC, backend_help
from callscope.saag.groundings import grounding_help

if TYPE_CHECKING:
    from callscope.runs.runner import RunSummary

_SURROGATE = re.compile("[\ud800-\udfff]")


def terminal_safe(text: str) -> str:
    r"""``text`` as a terminal may show it: control characters (but tab and newline) as
    ``\xNN`` and lone surrogates as ``\uXXXX`` escapes, everything else as is (module
    docstring).

    >>> terminal_safe("case-1\x1b]0;owned\x07 \x9b2J ok\tü")
    'case-1\\x1b]0;owned\\x07 \\x9b2J ok\tü'
    >>> terminal_safe("id" + chr(0xDFFF))
    'id\\udfff'
    """
    text = escape_controls(text, keep_cr=False)  # the one rule, core.text's
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def one_line(text: str) -> str:
    r"""``text`` as one line of a terminal: :func:`terminal_safe`, and its newlines and tabs
    as ``\x0a`` / ``\x09`` too (a path, a one-line message: a line break there is the data's,
    and printed as is it starts a line of its own, ``error: ...`` as well). What every message
    that prints a user path goes through (:func:`shown_path`, :func:`print_error`).

    >>> one_line("runs/a\nerror: done\tb\u202eexe")
    'runs/a\\x0aerror: done\\x09b\\u202eexe'
    """
    return terminal_safe(text).replace("\n", "\\x0a").replace("\t", "\\x09")


def shown_path(path: Any) -> str:
    """A path in a console message printed with markup: :func:`one_line`, its markup escaped
    (``[`` in a folder name is text). A message printed with ``markup=False`` takes
    :func:`one_line` of the path."""
    return escape(one_line(str(path)))


def _show_warning_safely(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """``warnings.showwarning`` through :func:`terminal_safe`: a library's warning quoting a
    model's text (matplotlib's "Glyph 27 (\\x1b) missing from font") prints its escapes."""
    text = warnings.formatwarning(message, category, filename, lineno, line)
    stream = file if file is not None else sys.stderr
    with contextlib.suppress(OSError, ValueError):
        stream.write(terminal_safe(text))


def route_warnings_safely() -> None:
    """Every warning printed while a command runs goes through :func:`terminal_safe`."""
    warnings.showwarning = _show_warning_safely


#: the width a console writes at when its stream is not a terminal (a pipe, a file, a CI
#: log): wide enough that every table keeps its full layout, one line per row
PLAIN_WIDTH = 100_000


class SafeConsole(Console):
    """A rich console that renders every string through :func:`terminal_safe` (``print``,
    ``log``, table cells and titles: everything rich turns from text into output).

    On a terminal it lays tables out for the terminal's width (``COLUMNS`` when set). Written
    to a pipe, a file or a log, where nobody reads a wrapped row, it writes every line at
    full width (:data:`PLAIN_WIDTH`, no colour): a table is its full layout, a row a line,
    whatever ``COLUMNS`` says, so model names and headers are never folded into pieces."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if kwargs.get("width") is None and not self.is_terminal:
            self.width = PLAIN_WIDTH

    def render_str(self, text: str, **kwargs: Any) -> Any:
        return super().render_str(terminal_safe(text), **kwargs)


def stdout_console() -> SafeConsole:
    """The console for what a command prints as its result on stdout (tables)."""
    return SafeConsole()


#: progress, summaries and messages go to stderr; data (``score`` rows, tables of
#: ``compare`` / ``calibrate``) to stdout
console = SafeConsole(stderr=True)

DEFAULT_MODEL = DEFAULT_SPEC

#: exit codes of every command (see the module docstring)
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

#: set to ``1`` to get the traceback of a user error (as ``callscope --debug``)
DEBUG_ENV = "CALLSCOPE_DEBUG"
_debug_flag = [False]

P = ParamSpec("P")
R = TypeVar("R")


def set_debug(on: bool) -> None:
    """``callscope --debug``: user errors re-raise (full traceback) for this invocation."""
    _debug_flag[0] = on


def debug_enabled() -> bool:
    """``--debug`` was given or ``CALLSCOPE_DEBUG`` is set to anything but ``""``/``0``."""
    env = os.environ.get(DEBUG_ENV, "").strip().lower()
    return _debug_flag[0] or env not in ("", "0", "false", "no")


def user_error_message(exc: BaseException) -> str | None:
    """The one-line message (what was wrong, what to do) of an error the user can fix, or
    ``None`` for anything else (a bug: its traceback is shown).

    User errors: a missing / unreadable path (``FileNotFoundError``, ``IsADirectoryError``,
    ``NotADirectoryError``, ``PermissionError``), a file where a folder is to be made
    (``FileExistsError``: ``-o`` naming a file), every :class:`~callscope.errors.CallscopeError`
    (bad input files, unreachable setup, a store of a newer schema, bfcl-eval missing) and
    the ``ValueError`` callscope raises on a bad option or input (unknown mode, backend,
    benchmark, a run directory of another configuration, undecodable text)."""
    own = isinstance(exc, OSError) and exc.filename is None and exc.errno is None
    if own and isinstance(exc, FileNotFoundError | IsADirectoryError | NotADirectoryError):
        # raised by callscope with its own message (``FileNotFoundError("no run store at ...")``)
        return f"{' '.join(str(exc).split())}; check the path"
    name = getattr(exc, "filename", None)
    if isinstance(exc, FileNotFoundError):
        return f"{name}: no such file or directory; check the path"
    if isinstance(exc, IsADirectoryError):
        return f"{name} is a folder; pass a file"
    if isinstance(exc, NotADirectoryError):
        return f"{name}: not a folder; check the path"
    if isinstance(exc, FileExistsError):  # making a folder (``-o``) where a file is
        return (
            f"{name}: exists and is not a folder; pass a new folder or an existing run "
            "directory (-o)"
        )
    if isinstance(exc, PermissionError):
        return f"{name}: permission denied; check the path and its permissions"
    if isinstance(exc, CallscopeError | ValueError):
        text = " ".join(str(exc).split()) or type(exc).__name__
        return text
    if isinstance(exc, sqlite3.DatabaseError):  # a truncated or foreign store.sqlite
        return (
            f"the run store cannot be read ({' '.join(str(exc).split())}): it is damaged or "
            "not a callscope store; run again into a fresh -o folder"
        )
    return None


def print_error(message: str) -> None:
    """``error: <message>`` on stderr as one line (:func:`one_line`: it may quote a user path
    or other user text, whose line breaks are printed as escapes)."""
    console.print(f"[red]error:[/red] {escape(one_line(message))}", soft_wrap=True, highlight=False)


def fail(message: str) -> NoReturn:
    """End the command with a usage / input error: one line, exit code 2."""
    print_error(message)
    raise typer.Exit(EXIT_USAGE)


def handle_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Wrap a command: a user error (:func:`user_error_message`) prints one line and exits 2
    (re-raised with its traceback under :func:`debug_enabled`); typer's exits and usage
    errors (none of them a user error of :func:`user_error_message`) and Ctrl-C pass
    through; any other exception is a bug and keeps its traceback."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except Exception as exc:
            message = user_error_message(exc)
            if message is None or debug_enabled():
                raise
            if not isinstance(exc, OSError):
                message += " (callscope --debug shows the traceback)"
            print_error(message)
            raise typer.Exit(EXIT_USAGE) from None

    return wrapper


ModelOpt = Annotated[str, typer.Option("-m", "--model", help=backend_help())]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", help="server address (default: OLLAMA_HOST / OPENAI_BASE_URL)"),
]
ApiKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="OPENAI_API_KEY",
        help="API key for openai: backends",
        show_default=False,
    ),
]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="seconds per HTTP request")]
CacheOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache", help="response cache file (default ~/.cache/callscope/responses.sqlite)"
    ),
]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="always ask the model")]
StyleOpt = Annotated[str, typer.Option("--style", help="auto | native | prompt")]
MaxTokensOpt = Annotated[int, typer.Option("--max-tokens")]
GroundingOpt = Annotated[str, typer.Option("--grounding", help=grounding_help())]


@contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C ends a long run cleanly: everything finished is already stored."""
    try:
        yield
    except KeyboardInterrupt:
        console.print(
            "[yellow]interrupted: finished cases are saved; re-run the same command to resume.[/yellow]"
        )
        raise typer.Exit(130) from None


def read_rows(path: Path) -> list[dict[str, Any]]:
    """JSONL rows; a bad line becomes ``{"_line": n, "_error": ...}`` so it can be reported."""
    return [
        row if isinstance(row, dict) else {"_line": n, "_error": f"line {n}: {row}"}
        for n, row in read_jsonl(path)
    ]


def comma_list(text: str) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]`` (``--modes``, ``--categories``)."""
    return [m.strip() for m in text.split(",") if m.strip()]


def style_arg(style: str) -> str | None:
    """``--style``: ``auto`` is ``None`` (the backend's own: native tools where it has them)."""
    return None if style == "auto" else style


def model_options(
    *,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    cache: Path | None,
    no_cache: bool,
) -> ModelOptions:
    """The connection and cache options of a command (``--base-url``, ``--api-key``,
    ``--timeout``, ``--cache``, ``--no-cache``) as the one record
    :func:`callscope.runs.experiment.open_model` takes."""
    return ModelOptions(
        base_url=base_url, api_key=api_key, timeout=timeout, cache=cache, use_cache=not no_cache
    )


def print_run_summary(summary: RunSummary) -> None:
    """The ``run`` / ``experiment`` summary of one model."""
    t = Table(title=f"{escape(summary.model)}: {summary.ran} ran, {summary.skipped} already done")
    for col in ("mode", "cases", "solve rate", "mean attempts"):
        t.add_column(col, justify="right" if col != "mode" else "left")
    for mode in summary.n:
        t.add_row(
            escape(mode),
            str(summary.n[mode]),
            f"{summary.solve_rate[mode]:.3f}",
            f"{summary.mean_attempts[mode]:.2f}",
        )
    console.print(t)
    if summary.usage:  # issue 31: tokens sent / computed / generated
        console.print(escape(summary.usage))
    if summary.concurrency_note:
        console.print(f"[yellow]{escape(summary.concurrency_note)}[/yellow]")
    if summary.errors:
        console.print(
            "errors by kind: " + ", ".join(f"{escape(k)}={v}" for k, v in summary.errors.items())
        )
    if summary.aborted:
        print_stopped_early(summary.aborted)


def print_stopped_early(message: str) -> None:
    """The line of a run that stopped early on an unreachable backend (``run``, ``experiment``,
    ``calibrate``): the backend's message and how to resume."""
    console.print(
        f"[red]stopped early: {escape(message)}. Re-run the same command to resume.[/red]",
        soft_wrap=True,
    )


def run_exit_code(summaries: list[RunSummary], malformed: int = 0) -> int:
    """``run`` / ``experiment`` / ``demo``: :data:`EXIT_FAILED` when cases were malformed
    (skipped), an outcome ended in a backend error, or a run stopped early; else 0."""
    failed = malformed or any(s.aborted or sum(s.errors.values()) for s in summaries)
    return EXIT_FAILED if failed else EXIT_OK


def write_report(run_dir: Path) -> None:
    """Tables, figures and ``report.html`` of a run directory, and where they went."""
    from callscope.report.html import build_report  # lazy: pandas + matplotlib (~1 s)

    path = build_report(run_dir)
    console.print(f"report: {shown_path(path)}")
