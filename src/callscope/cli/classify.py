"""`callscope classify`: the action class of each emission in a JSONL file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from callscope.calibration.classify import preset
from callscope.cli.common import console, fail, shown_path
from callscope.runs.classify_file import classify_jsonl


def classify(
    input: Annotated[Path, typer.Argument(help="JSONL rows {id, emission}")],
    output: Annotated[Path, typer.Option("-o", "--output")] = Path("classes.jsonl"),
    preset_name: Annotated[
        str, typer.Option("--preset", help="default | ask_over_tool_call")
    ] = "default",
) -> None:
    """Classify emissions as TOOL_CALL / ASK / REFUSE / CONFIRM / OTHER.

    Exit code 1 when some rows were malformed, 2 when the input is missing or empty."""
    summary = classify_jsonl(input, output, preset(preset_name))
    if not summary["rows"]:
        fail(f"{input} holds no rows; write one JSON object {{id, emission}} per line")
    t = Table(
        title=f"{summary['rows']} emissions ({summary['errors']} malformed), preset {escape(preset_name)}"
    )
    t.add_column("class")
    t.add_column("count", justify="right")
    for cls, k in summary["counts"].items():
        t.add_row(escape(str(cls)), str(k))
    console.print(t)
    console.print(f"wrote {shown_path(output)}")
    raise typer.Exit(1 if summary["errors"] else 0)
