"""What the command modules share: the stderr console, the options several commands take,
and the few steps (reading rows, opening a model, writing the report) more than one runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from callscope.core.jsonl import read_jsonl
from callscope.models.base import ChatModel
from callscope.models.registry import DEFAULT_SPEC, backend_help
from callscope.runs import experiment as runs_experiment
from callscope.runs.runner import RunSummary

#: progress, summaries and messages go to stderr; data (``score`` rows, tables of
#: ``compare`` / ``calibrate``) to stdout
console = Console(stderr=True)

DEFAULT_MODEL = DEFAULT_SPEC

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


def open_model(
    spec: str,
    *,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    cache: Path | None,
    no_cache: bool,
) -> ChatModel:
    """The backend named by ``-m`` and the connection / cache options, cached unless
    ``--no-cache`` (:func:`callscope.runs.experiment.open_model`, looked up when called)."""
    return runs_experiment.open_model(
        spec,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
        cache=cache,
        use_cache=not no_cache,
    )


def print_run_summary(summary: RunSummary) -> None:
    """The ``run`` / ``experiment`` summary of one model."""
    t = Table(title=f"{summary.model}: {summary.ran} ran, {summary.skipped} already done")
    for col in ("mode", "cases", "solve rate", "mean attempts"):
        t.add_column(col, justify="right" if col != "mode" else "left")
    for mode in summary.n:
        t.add_row(
            mode,
            str(summary.n[mode]),
            f"{summary.solve_rate[mode]:.3f}",
            f"{summary.mean_attempts[mode]:.2f}",
        )
    console.print(t)
    if summary.errors:
        console.print("errors by kind: " + ", ".join(f"{k}={v}" for k, v in summary.errors.items()))
    if summary.aborted:
        console.print(
            f"[red]stopped early: {summary.aborted}. Re-run the same command to resume.[/red]"
        )


def write_report(run_dir: Path) -> None:
    """Tables, figures and ``report.html`` of a run directory, and where they went."""
    from callscope.report.html import build_report  # lazy: pandas + matplotlib (~1 s)

    path = build_report(run_dir)
    console.print(f"report: {path}")
