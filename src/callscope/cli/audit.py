"""`callscope audit`: how far the cascade's diagnosis can be trusted on a cases file."""

from __future__ import annotations

import random
import time
from contextlib import closing
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from callscope.cli.common import BaseUrlOpt, console, fail, read_rows, shown_path
from callscope.models.base import ModelOptions
from callscope.runs.judge import ModelJudge
from callscope.saag.audit_designs import audit_designs
from callscope.saag.audit_engine import (
    AuditResult,
    audit_table,
    run_audit,
    write_audit,
)
from callscope.saag.groundings import GROUNDINGS, get_grounding
from callscope.types import Case


def audit_command(
    cases_file: Annotated[
        Path,
        typer.Argument(
            help="JSONL cases with gold calls or answers (e.g. from `callscope bench build`)"
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "-o",
            "--out",
            help="folder for audit.json / .csv / .md (and audit_answers.* for answer gold)",
        ),
    ] = Path("audit"),
    grounding: Annotated[
        str,
        typer.Option(
            "--grounding",
            help=f"comma list of modes to audit side by side ({', '.join(GROUNDINGS)})",
        ),
    ] = ",".join(GROUNDINGS),
    seed: Annotated[int, typer.Option("--seed", help="seed of the perturbations and sample")] = 0,
    n: Annotated[
        int | None, typer.Option("--n", min=1, help="audit a seeded sample of this many cases")
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge",
            help="also audit each mode with this judge model on the values its rules flag "
            "(e.g. local:qwen2.5-coder-1.5b); off by default",
        ),
    ] = None,
    base_url: BaseUrlOpt = None,
) -> None:
    """Detector validity audit: false alarms on gold calls and detection of calls made wrong on
    purpose, per cascade stage and failure kind (Wilson 95% intervals). Cases whose gold is an
    answer (a list of calls, or [] for no call) get the answer audit beside it
    (audit_answers.*): false alarms on gold answers and clean abstentions, detection of
    dropped, duplicated, extra and wrong calls and of a call where none is right, for the
    gold-free cascade and the answer solve against gold apart.

    Exit code 1 when rows were malformed (they are left out), 2 when no case has gold."""
    modes = [get_grounding(m.strip()) for m in grounding.split(",") if m.strip()]
    cases: list[Case] = []
    bad = 0
    for row in read_rows(cases_file):
        try:
            if "_error" in row:
                raise ValueError(row["_error"])
            cases.append(Case.from_dict(row))
        except ValueError as exc:
            bad += 1
            console.print(f"[yellow]skipped row: {escape(str(exc))}[/yellow]")
    designs = list(audit_designs().values())
    cases = [c for c in cases if any(d.reads(c) for d in designs)]
    if not cases:
        fail(f"{cases_file} holds no case with a gold call; the audit needs gold")
    if n is not None and n < len(cases):
        cases = sorted(random.Random(seed).sample(cases, n), key=lambda c: c.id)
    designs = [d for d in designs if any(d.reads(c) for c in cases)]
    results: dict[str, list[AuditResult]] = {
        d.name: [run_audit(cases, d, grounding=m, seed=seed) for m in modes] for d in designs
    }
    judge_stats = []
    if judge is not None:
        from callscope.runs.experiment import open_model  # lazy: looked up when called

        model = open_model(judge, ModelOptions(base_url=base_url, timeout=300.0))
        with closing(model):
            for m in modes:
                j = ModelJudge(model)
                t0 = time.perf_counter()
                for d in designs:
                    r = run_audit(cases, d, grounding=m, seed=seed, judge=j)
                    r.grounding = f"{r.grounding}+judge"
                    results[d.name].append(r)
                judge_stats.append(
                    {**j.stats(), "mode": m.name, "seconds": time.perf_counter() - t0}
                )
    written: list[Path] = []
    extra = {"judge": judge_stats} if judge_stats else None
    for d in designs:
        written += write_audit(results[d.name], out, extra=extra).values()
        console.print(audit_table(results[d.name]).to_rich())
        for r in results[d.name]:
            console.print(escape(r.headline()))
    for s in judge_stats:
        console.print(escape(f"judge {s['model']} on {s['mode']}: {s}"))
    console.print(f"wrote {', '.join(shown_path(p) for p in written)}")
    raise typer.Exit(1 if bad else 0)
