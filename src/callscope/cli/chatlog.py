"""`callscope score --from-chat FILE`: recorded chat logs through the guard
(:mod:`callscope.guard.chatlog`): a table of the stage mix, and optionally a report."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from callscope.cli.common import console, fail, one_line, write_report
from callscope.core.jsonl import dumps_row
from callscope.core.text import terminal_json
from callscope.guard.chatlog import (
    ChatLogSummary,
    call_rows,
    diagnose_conversations,
    read_chat_logs,
    summarize_turns,
    write_chatlog_store,
)
from callscope.records import stage_info
from callscope.saag.groundings import get_grounding

#: conversations listed in the per-conversation table (the rows file has them all)
MAX_LISTED = 40


def print_stage_table(
    title: str, columns: tuple[str, str], counts: Mapping[int, int], total: int
) -> None:
    """One stage-mix table: per stage 0-3 its label, count and share of ``total``."""
    t = Table(title=title)
    t.add_column(columns[0])
    t.add_column(columns[1], justify="right")
    t.add_column("share", justify="right")
    for stage in (0, 1, 2, 3):
        n = counts.get(stage, 0)
        t.add_row(stage_info(stage).short, str(n), f"{n / total:.1%}" if total else "-")
    console.print(t)


def print_chatlog_summary(s: ChatLogSummary) -> None:
    """The stage mix over all calls, the answers' stage mix (each turn with calls at its
    earliest failing stage), the action mix, and each conversation's stage counts."""
    print_stage_table(
        f"chat log: {s.conversations} conversations, {s.turns} assistant turns, "
        f"{s.calls} tool calls, {s.malformed} malformed lines",
        ("first failing stage", "calls"),
        s.stages,
        s.calls,
    )
    answers = sum(s.answer_stages.values())
    print_stage_table(
        f"answers: {answers} assistant turns with tool calls ({s.multi_call} with several), "
        f"{sum(s.no_call.values())} without a call",
        ("earliest failing stage of the turn's calls", "turns"),
        s.answer_stages,
        answers,
    )
    a = Table(title="action class of each assistant turn")
    a.add_column("action")
    a.add_column("turns", justify="right")
    for action, n in sorted(s.actions.items(), key=lambda kv: (-kv[1], kv[0])):
        a.add_row(escape(action), str(n))
    console.print(a)
    c = Table(title="per conversation (tool calls by first failing stage)")
    c.add_column("conversation")
    for stage in (0, 1, 2, 3):
        c.add_column(stage_info(stage).short, justify="right")
    for i, (conv, counts) in enumerate(s.per_conversation.items()):
        if i == MAX_LISTED:
            c.add_row(f"... {len(s.per_conversation) - MAX_LISTED} more", "", "", "", "")
            break
        c.add_row(escape(conv), *(str(counts.get(st, 0)) for st in (0, 1, 2, 3)))
    console.print(c)


def write_rows_and_summary(
    rows: Iterable[dict[str, Any]],
    turns: Sequence[Any],
    errors: Sequence[str],
    output: Path | None,
    what: str,
) -> None:
    """Write ``rows`` as JSON Lines (to ``output``, else stdout), print the turns' summary
    and the first 20 ``errors`` (then how many more ``what`` there were): what
    ``score --from-chat`` and ``score --from-traces`` print alike."""
    text = "".join(dumps_row(r) + "\n" for r in rows)
    if output is None:
        sys.stdout.write(terminal_json(text))  # a terminal's: no raw C1 or bidi control
    else:
        output.write_text(text, encoding="utf-8")
    print_chatlog_summary(summarize_turns(turns, malformed=len(errors)))
    for err in errors[:20]:
        console.print(f"[red]{escape(one_line(err))}[/red]")
    if len(errors) > 20:
        console.print(f"[red]... {len(errors) - 20} more {what}[/red]")


def score_chat(
    files: list[Path], output: Path | None, grounding: str, report_dir: Path | None
) -> None:
    """Diagnose every tool call of ``files``; rows to ``output`` (default stdout)."""
    mode = get_grounding(grounding).name
    conversations, errors = read_chat_logs(files)
    if not conversations and not errors:
        fail(f"{', '.join(map(str, files))} holds no lines; write one JSON object per line")
    turns = diagnose_conversations(conversations, mode)
    write_rows_and_summary(call_rows(turns), turns, errors, output, "malformed lines")
    if report_dir is not None:
        write_chatlog_store(report_dir, turns, mode)
        write_report(report_dir)
    raise typer.Exit(code=1 if errors else 0)
