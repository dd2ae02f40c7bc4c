"""`callscope calibrate --from-bfcl` / `--from-tau2`: the action-class diagnostic (GAR beside
Acc, calibration paper section 3) of another tool's own results, without running a model.

Each pipeline reads the results, diagnoses them, writes its tables (``.md`` and ``.json``) to
the output directory and returns what it computed, with the content of its HTML page as a
:class:`DiagnosticPage` (rendered by :func:`callscope.report.html.build_diagnostic_page`,
which lives in the report layer above this one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from callscope.benchmarks.bfcl.results import BfclRun, load_bfcl_run
from callscope.calibration.classify import DEFAULT, ClassifierConfig
from callscope.calibration.diagnostics import (
    Diagnostics,
    compute_diagnostics,
    diagnostics_table,
    to_markdown,
)
from callscope.calibration.tau2 import (
    Tau2Config,
    Tau2Diagnostics,
    tau2_diagnostics,
)
from callscope.calibration.tau2_tables import (
    acc_table,
    ask_candidate_lines,
    capability_text,
    domain_table,
    gar_table,
    group_rows,
    write_tool_lines,
)
from callscope.models.base import ChatModel
from callscope.types import TOOL_CALL

BFCL_STEM = "calibration-from-bfcl"
TAU2_STEM = "tau2-diagnostics"


@dataclass
class DiagnosticPage:
    """The content of a diagnostic ``report.html``: a title, ``(title, caption, Markdown
    table or Table)`` sections, notes, warnings (shown first) and ``(heading, items)`` lists
    (the arguments of ``build_diagnostic_page``)."""

    title: str
    tables: list[tuple[str, str, Any]]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lists: list[tuple[str, list[str]]] = field(default_factory=list)


@dataclass
class BfclCalibration:
    """Result of :func:`calibrate_from_bfcl`: what was read, its diagnostics, the files
    written (``.md`` first) and the page to render."""

    run: BfclRun
    diagnostics: Diagnostics
    written: list[Path]
    page: DiagnosticPage


@dataclass
class Tau2Calibration:
    """Result of :func:`calibrate_from_tau2`: the τ² diagnostics, the files written (``.md``
    first) and the page to render."""

    diagnostics: Tau2Diagnostics
    written: list[Path]
    page: DiagnosticPage


def calibrate_from_bfcl(
    results: str | Path,
    out: str | Path,
    *,
    scores: str | Path | None = None,
    model: str | None = None,
    config: ClassifierConfig = DEFAULT,
) -> BfclCalibration:
    """The diagnostic of BFCL multi-turn result files found under ``results`` (from ``bfcl
    generate``; any version, nested or flat layout, see
    :mod:`callscope.benchmarks.bfcl.results`), Acc from the score files under ``scores`` (or
    under ``results``) when there are any, else BFCL's verdicts are unknown, for ``model``
    (the only one when omitted), classified by ``config`` (e.g. the ``paper`` preset).
    Writes ``calibration-from-bfcl.md`` / ``.json`` under ``out``. Raises
    ``FileNotFoundError`` (before writing anything) with a one-line message saying what was
    looked for when no case was read."""
    out = Path(out)
    run = load_bfcl_run(results, scores, model=model)
    if not run.records:
        reason = run.problems[0] if run.problems else f"looked for {run.looked_for}"
        raise FileNotFoundError(f"no BFCL multi-turn results read from {results}: {reason}")
    diag = compute_diagnostics(run.records, config, header_acc=run.header_acc())
    warnings, notes = bfcl_warnings(diag), bfcl_notes(run, diag)
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / f"{BFCL_STEM}.md", out / f"{BFCL_STEM}.json"
    md.write_text(bfcl_markdown(run, diag), encoding="utf-8")
    data = diag.to_dict()
    data["source"] = {
        "model": run.model,
        "version": run.version,
        "layout": run.layout,
        "score_version": run.score_version,
        "score_layout": run.score_layout,
        "files": [str(f) for f in run.files],
        "single_string_turns": run.single_string_turns,
        "empty_emissions": sum(r["n_empty"] for r in diag.rows),
        "problems": run.problems,
    }
    js.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    page = DiagnosticPage(
        f"Action-class diagnostic of BFCL results: {run.model}",
        [
            (
                "GAR and Acc per category",
                f"Emissions read from BFCL's result files, classified by the {config.name!r} "
                "classifier; Acc from its score files. Wilson 95% intervals; Acc > GAR flags "
                "grader masking (rows highlighted).",
                diagnostics_table(diag.rows),
            ),
        ],
        notes=notes,
        warnings=warnings,
        lists=[("Problems", list(run.problems))] if run.problems else [],
    )
    return BfclCalibration(run=run, diagnostics=diag, written=[md, js], page=page)


def bfcl_warnings(diag: Diagnostics) -> list[str]:
    """What must be read before the table: the failed capability check, with the emission
    counts of the classes below ``t_cap`` and the rows whose GAR / bound flags it voids."""
    text = capability_text(diag.capability)
    if text is None:
        return []
    counts = ", ".join(f"{c} {diag.class_counts.get(c, 0)}" for c in diag.capability["below"])
    rows = [str(r["category"]) for r in diag.rows if r.get("capability_failed")]
    where = f" Rows concerned: {', '.join(rows)}." if rows else ""
    return [f"{text} Emitted: {counts}.{where}"]


def bfcl_notes(run: BfclRun, diag: Diagnostics) -> list[str]:
    """What was read and how: files found (version, layout), the classifier, emissions
    without a class."""
    notes = [f"Read {run.found()}.", f"Classifier: {diag.config.get('name')}."]
    n_empty = sum(r["n_empty"] for r in diag.rows)
    if n_empty:
        total = n_empty + sum(diag.class_counts.values())
        text_classes = sum(v for c, v in diag.class_counts.items() if c != TOOL_CALL)
        note = (
            f"{n_empty} of {total} emissions are empty (blank text, [] or null: BFCL's record "
            "of a text reply for many FC models) and get no class."
        )
        if not text_classes:
            note += " The files hold no text replies: ASK / REFUSE / CONFIRM cannot be seen."
        notes.append(note)
    return notes


def bfcl_markdown(run: BfclRun, diag: Diagnostics) -> str:
    """The ``.md`` report: warnings first, then what was read, the table and the problems."""
    parts = [f"**{w}**" for w in bfcl_warnings(diag)]
    parts.append(f"# BFCL results of {run.model}")
    parts.extend(bfcl_notes(run, diag))
    parts.append(to_markdown(diag.rows))
    if run.problems:
        parts.append("Problems:\n\n" + "\n".join(f"- {p}" for p in run.problems))
    return "\n\n".join(parts) + "\n"


def calibrate_from_tau2(
    results: str | Path,
    out: str | Path,
    *,
    tasks: str | Path | None = None,
    judge: ChatModel | None = None,
    config: ClassifierConfig = DEFAULT,
    settings: Tau2Config | None = None,
) -> Tau2Calibration:
    """The diagnostic of a τ²-bench ``results.json``, run directory or folder of runs
    (``tasks``: a tasks file when the results lack them; ``judge``: a model also asked about
    CONFIRM, its agreement with the rule reported; ``settings``: the τ² settings, e.g. write /
    read tools, the checked ASK list, pooling, its classifier replaced by ``config``). Writes
    ``tau2-diagnostics.md`` / ``.json`` under ``out``. Raises ``FileNotFoundError`` /
    ``Tau2FormatError`` (before writing anything) when ``results`` holds no τ² results or
    ``tasks`` is of another domain."""
    out = Path(out)
    tau2_config = replace(settings or Tau2Config(), classifier=config)
    result = tau2_diagnostics(results, tasks, judge=judge, config=tau2_config)
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / f"{TAU2_STEM}.md", out / f"{TAU2_STEM}.json"
    js.write_text(
        json.dumps(result.to_dict(include_details=True), indent=2, default=str), encoding="utf-8"
    )
    md.write_text(result.to_markdown(), encoding="utf-8")
    return Tau2Calibration(diagnostics=result, written=[md, js], page=tau2_page(result, results))


def tau2_page(result: Tau2Diagnostics, results: str | Path) -> DiagnosticPage:
    """The ``report.html`` content of a τ² diagnostic: warnings first, the file-level Acc,
    one GAR table per agent / user group (bound violations highlighted), the domain table,
    and the ASK candidates, write-tool decisions and problems as lists."""
    rules = "; ".join(f"{k} = {v}" for k, v in result.config["gar_rules"].items())
    tables: list[tuple[str, str, Any]] = [
        (
            "File-level Acc (pass^1)",
            "Share of simulations with reward 1 (the leaderboard's pass^1), over every "
            "simulation with a reward; Wilson 95% intervals.",
            acc_table(result.acc_rows),
        )
    ]
    for group, rows in group_rows(result.rows):
        tables.append(
            (
                f"GAR and Acc per domain and gold class: {group}",
                f"τ² GAR rules: {rules}. Acc = reward 1. ASK gold: {result.ask_gold_source}. "
                "Wilson 95% intervals; Acc > GAR (bound violation) rows highlighted.",
                gar_table(rows),
            )
        )
    tables.append(
        (
            "Per domain: SAAG stage mix of tool calls and CONFIRM",
            "Every agent tool call through the SAAG cascade (against the run's tool schemas, "
            "else τ²'s stock schemas for its domain); CONFIRM: did the user confirm before "
            "each write.",
            domain_table(result.domain_rows),
        )
    )
    warnings = list(result.warnings)
    if (cap := capability_text(result.capability)) is not None:
        warnings.append(cap)
    lists = [
        (heading, items)
        for heading, items in (
            ("ASK candidates (check these by reading the scenario)", ask_candidate_lines(result)),
            ("Write-tool decisions", write_tool_lines(result)),
            ("Problems", list(result.problems)),
        )
        if items
    ]
    return DiagnosticPage(
        f"τ²-bench action-class diagnostic: {Path(results).name}",
        tables,
        warnings=warnings,
        lists=lists,
    )
