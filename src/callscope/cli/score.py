"""`callscope score`: the SAAG cascade (and extrinsic metrics) over a file of model outputs."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from callscope.cli.common import GroundingOpt, console, fail
from callscope.core.jsonl import check_file_size, dumps_row, read_jsonl
from callscope.core.text import terminal_json
from callscope.records import STAGES
from callscope.saag.groundings import DEFAULT_GROUNDING, get_grounding
from callscope.saag.score import (
    GOLD_KEYS,
    METRICS,
    ScoreSummary,
    SummaryAccumulator,
    score_row,
)


class ExpectCall(StrEnum):
    """``--expect-call``: what a row that does not say expects of an answer."""

    yes = "yes"
    no = "no"
    unknown = "unknown"


EXPECT_CALL: dict[ExpectCall, bool | None] = {
    ExpectCall.yes: True,
    ExpectCall.no: False,
    ExpectCall.unknown: None,
}


def print_score_summary(s: ScoreSummary) -> None:
    """Rows per first failing stage, then each metric's mean over the rows defining it."""
    title = f"callscope score: {s.rows} rows, {s.errors} malformed"
    t = Table(title=title, min_width=len(title))  # issue 32: the title on one line
    t.add_column("first failing stage")
    t.add_column("rows", justify="right")
    for info in STAGES:
        if info.number is not None:
            t.add_row(info.short, str(s.stages.get(info.number, 0)))
    for kind in ("abstained", "empty"):  # no call, none expected: nothing diagnosed
        if s.abstentions.get(kind):
            t.add_row(f"no call: {kind} (none expected)", str(s.abstentions[kind]))
    for kind in ("abstained", "empty"):  # no call, and nobody said whether one was expected
        if s.no_verdict.get(kind):
            t.add_row(f"no call: {kind} (no verdict)", str(s.no_verdict[kind]))
    console.print(t)
    if sum(s.no_verdict.values()):
        console.print(
            f"{sum(s.no_verdict.values())} answers made no call and their rows say nothing of "
            "whether one was expected: stage null, neither passed nor failed (give gold, "
            "meta.expects_call, or --expect-call yes|no)"
        )
    title = "metric means (over rows where each is defined)"
    m = Table(title=title, min_width=len(title))
    m.add_column("metric")
    m.add_column("mean", justify="right")
    m.add_column("n", justify="right")
    for key in (*METRICS, *GOLD_KEYS):
        if s.counts.get(key):
            m.add_row(
                key.upper() if key in METRICS else key, f"{s.means[key]:.3f}", str(s.counts[key])
            )
    console.print(m)


def score(
    input: Annotated[
        Path | None, typer.Argument(help="JSONL rows {id, query, functions, output, gold?}")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="write scored rows here (default: stdout)")
    ] = None,
    grounding: GroundingOpt = DEFAULT_GROUNDING,
    expect_call: Annotated[
        ExpectCall,
        typer.Option(
            "--expect-call",
            help="what a row without gold or meta.expects_call expects: yes (the SAAG paper's "
            "setting: an answer without a call fails at stage 1), no (it passes), unknown "
            "(its stage is null: neither passed nor failed)",
            case_sensitive=False,
        ),
    ] = ExpectCall.unknown,
    from_chat: Annotated[
        list[Path] | None,
        typer.Option(
            "--from-chat",
            help="instead: recorded OpenAI chat logs ({messages, tools} lines, or batch "
            "input/output files; repeat for each file): every tool call diagnosed",
        ),
    ] = None,
    report_dir: Annotated[
        Path | None, typer.Option("--report", help="with --from-chat: write a run store + report")
    ] = None,
    from_traces: Annotated[
        list[Path] | None,
        typer.Option(
            "--from-traces",
            help="instead: agent traces (OTLP JSON with OpenTelemetry GenAI or OpenInference "
            "spans, LangSmith runs; repeat for each file): every tool call of every model span "
            "diagnosed, per trace",
        ),
    ] = None,
    tools_file: Annotated[
        Path | None,
        typer.Option("--tools", help="with --from-traces: tools (JSON list) for spans without any"),
    ] = None,
) -> None:
    """Score model outputs with the SAAG cascade (and extrinsic metrics when gold is given)."""
    if from_traces:
        from callscope.cli.traces import score_traces  # lazy: the guard package, only here

        score_traces(list(from_traces) + ([input] if input else []), output, grounding, tools_file)
    if from_chat:
        from callscope.cli.chatlog import score_chat  # lazy: the guard package, only here

        score_chat(list(from_chat) + ([input] if input else []), output, grounding, report_dir)
    if input is None:
        fail("give a rows file, or --from-chat FILE for recorded chat logs, or --from-traces FILE")
    mode = get_grounding(grounding)
    rows = _input_rows(input)
    first = next(rows, None)  # read before anything is written: a missing file writes nothing
    if first is None:
        fail(f"{input} holds no rows; write one JSON object per line")
    acc = SummaryAccumulator()
    errors: list[tuple[Any, Any]] = []
    sink = sys.stdout if output is None else output.open("w", encoding="utf-8")
    try:
        for r in itertools.chain([first], rows):  # one row in memory at a time
            out = (
                {"id": r.get("_line"), "error": r["_error"]}
                if "_error" in r
                else score_row(r, mode, expect_call=EXPECT_CALL[expect_call])
            )
            line = dumps_row(out)  # lone surrogates escaped
            sink.write((terminal_json(line) if output is None else line) + "\n")
            acc.add(out)
            if "error" in out:  # a malformed line's message already says "line n:"
                errors.append((None if "_error" in r else out["id"], out["error"]))
    finally:
        if sink is not sys.stdout:
            sink.close()
    summary = acc.summary()
    print_score_summary(summary)
    for rid, error in errors:
        where = "" if rid is None else f"row {escape(str(rid))}: "
        console.print(f"[red]{where}{escape(str(error))}[/red]")
    raise typer.Exit(code=1 if summary.errors else 0)


def _input_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a JSONL file, read lazily; a bad line becomes ``{"_line": n, "_error": ...}``
    (as :func:`callscope.cli.common.read_rows` gives them, one at a time). A file over
    :data:`~callscope.core.jsonl.MAX_FILE_BYTES` is refused before a line is read."""
    check_file_size(path)
    for n, row in read_jsonl(path):
        yield row if isinstance(row, dict) else {"_line": n, "_error": f"line {n}: {row}"}
