"""`callscope score --from-traces FILE`: agent traces (OpenTelemetry GenAI, OpenInference,
LangSmith; :mod:`callscope.guard.traces`) through the guard, with the rows and the summary
of ``--from-chat`` (a trace is a conversation)."""

from __future__ import annotations

from pathlib import Path

import typer

from callscope.cli.chatlog import write_rows_and_summary
from callscope.cli.common import fail
from callscope.core.jsonl import loads_bounded, read_bounded
from callscope.guard.chatlog import call_rows, diagnose_conversations
from callscope.guard.traces import CAPTURE_OFF, NO_CONTENT, read_traces, trace_rows
from callscope.saag.groundings import get_grounding


def score_traces(
    files: list[Path], output: Path | None, grounding: str, tools_file: Path | None
) -> None:
    """Diagnose every tool call of the model spans in ``files``; rows to ``output``."""
    mode = get_grounding(grounding).name
    default_tools = None
    if tools_file is not None:
        try:
            default_tools = loads_bounded(read_bounded(tools_file))
        except (OSError, ValueError) as e:
            fail(f"--tools {tools_file}: {e}")
        if isinstance(default_tools, dict):
            default_tools = default_tools.get("tools", default_tools.get("functions"))
        if not isinstance(default_tools, list):
            fail(f"--tools {tools_file}: expected a JSON list of tools")
    conversations, errors = read_traces(files, default_tools)
    where = ", ".join(map(str, files))
    if not conversations and not errors:
        fail(f"{where} holds no model spans")
    if not conversations and all(e.endswith(NO_CONTENT) for e in errors):
        fail(f"{where}: {len(errors)} model span(s), none with its messages: {CAPTURE_OFF}")
    turns = diagnose_conversations(conversations, mode)
    rows = trace_rows(conversations, (call_rows([t]) for t in turns))
    write_rows_and_summary(rows, turns, errors, output, "unreadable spans")
    raise typer.Exit(code=1 if errors else 0)
