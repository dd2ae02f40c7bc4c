"""`callscope score`: the SAAG cascade (and extrinsic metrics) over a file of model outputs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from callscope.cli.common import GroundingOpt, console, fail, read_rows
from callscope.core.jsonl import dumps_row
from callscope.saag.groundings import DEFAULT_GROUNDING, get_grounding
from callscope.saag.score import GOLD_KEYS, METRICS, ScoreSummary, score_row, summarize


def print_score_summary(s: ScoreSummary) -> None:
    """Rows per first failing stage, then each metric's mean over the rows defining it."""
    t = Table(title=f"callscope score: {s.rows} rows, {s.errors} malformed")
    t.add_column("first failing stage")
    t.add_column("rows", justify="right")
    labels = {0: "passed all", 1: "1 registry", 2: "2 structure", 3: "3 grounding"}
    for stage in (0, 1, 2, 3):
        t.add_row(labels[stage], str(s.stages.get(stage, 0)))
    console.print(t)
    m = Table(title="metric means (over rows where each is defined)")
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
) -> None:
    """Score model outputs with the SAAG cascade (and extrinsic metrics when gold is given)."""
    if from_chat:
        from callscope.cli.chatlog import score_chat  # lazy: the guard package, only here

        score_chat(list(from_chat) + ([input] if input else []), output, grounding, report_dir)
    if input is None:
        fail("give a rows file, or --from-chat FILE for recorded chat logs")
    mode = get_grounding(grounding)
    rows = read_rows(input)
    if not rows:
        fail(f"{input} holds no rows; write one JSON object per line")
    out_rows = [
        {"id": r.get("_line"), "error": r["_error"]} if "_error" in r else score_row(r, mode)
        for r in rows
    ]
    text = "".join(dumps_row(r) + "\n" for r in out_rows)  # lone surrogates escaped
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    summary = summarize(out_rows)
    print_score_summary(summary)
    for r in out_rows:
        if "error" in r:
            console.print(f"[red]row {escape(str(r['id']))}: {escape(str(r['error']))}[/red]")
    raise typer.Exit(code=1 if summary.errors else 0)
