"""The τ²-bench diagnostic (:class:`callscope.calibration.tau2.Tau2Diagnostics`) as tables,
Markdown and page content: every table is a :class:`callscope.core.table.Table`, rendered by
the caller (Markdown, HTML, the terminal).

* GAR / Acc per (domain, gold class [, reference path]) of one agent / user group:
  :func:`gar_table` (percentages, Wilson 95% intervals, GAR − Acc in pp, the flags of
  :func:`callscope.calibration.diagnostics.row_flags` plus simulations without a GAR verdict
  or without a reward, ended on ``max_steps``, and the kinds of failed action checks);
* the file-level Acc (the leaderboard's pass^1) per group and domain: :func:`acc_table`;
* per domain: the SAAG stage mix of the agent's tool calls and CONFIRM (rule, and judge with
  agreement and Cohen's kappa when it ran): :func:`domain_table`;
* :func:`tau2_markdown`: the warnings, the file Acc, one GAR table per group with the GAR
  rules, the domain table, the ASK candidates, every write-tool decision and the problems;
* :func:`tau2_terminal_tables`: the file Acc, one GAR table per group and the domain table,
  titled for the terminal;
* :func:`tau2_page`: the content of the diagnostic's ``report.html``
  (:class:`~callscope.runs.from_results.DiagnosticPage`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from callscope.calibration.diagnostics import row_flags
from callscope.calibration.tau2 import Tau2Diagnostics
from callscope.calibration.tau2_simulation import GAR_RULES
from callscope.core.table import Table, pct, pct_ci
from callscope.core.table_formats import (
    DocumentPart,
    markdown_text,
    render_document,
    write_document,
)
from callscope.records import Tau2AccRow, Tau2DomainRow
from callscope.runs.from_results import TAU2_STEM, DiagnosticPage, capability_text

GAR_COLUMNS: tuple[str, ...] = (
    "Domain",
    "Gold",
    "n",
    "GAR % [95% CI]",
    "Acc % [95% CI]",
    "GAR−Acc pp",
    "Flags",
)
ACC_COLUMNS: tuple[str, ...] = (
    "Agent (user simulator)",
    "Domain",
    "sims",
    "Acc (pass^1) % [95% CI]",
    "Notes",
)
DOMAIN_COLUMNS: tuple[str, ...] = (
    "Group",
    "Domain",
    "sims",
    "tool calls",
    "stage 0/1/2/3/unchecked",
    "write calls",
    "CONFIRM rule % [95% CI]",
    "CONFIRM judge %",
    "agreement % / kappa",
)


def gold_label(row: Mapping[str, Any]) -> str:
    """The Gold cell: the class, and the reference path of a path row."""
    path = row.get("path")
    return str(row["gold_class"]) + (f" · {path} path" if path else "")


def _gar_cells(row: Mapping[str, Any]) -> list[str]:
    gap = row.get("gap")
    flags = [f for f in [row_flags(row)] if f]
    if row.get("n_gar_unknown"):
        flags.append(
            f"{row['n_gar_unknown']} without agent action checks (left out of GAR and Acc)"
        )
    if row.get("n_no_reward"):
        flags.append(f"{row['n_no_reward']} without reward")
    if row.get("n_max_steps"):
        flags.append(f"{row['n_max_steps']} ended on max_steps")
    failures = {k: v for k, v in (row.get("check_failures") or {}).items() if v}
    if failures:
        flags.append("failed checks: " + ", ".join(f"{k} {v}" for k, v in failures.items()))
    if row.get("gold_class") == "TOOL_CALL" and not row.get("path"):
        w, r = row.get("n_write_path") or 0, row.get("n_read_path") or 0
        if w or r:
            flags.append(f"reference paths: {w} write, {r} read-only")
    return [
        str(row["domain"]),
        gold_label(row),
        str(row["n"]),
        pct_ci(row.get("gar_case"), row.get("gar_case_ci_low"), row.get("gar_case_ci_high")),
        pct_ci(row.get("acc"), row.get("acc_ci_low"), row.get("acc_ci_high")),
        pct(gap, signed=True),
        "; ".join(flags),
    ]


def _domain_cells(row: Tau2DomainRow) -> list[str]:
    mix = row["stage_mix"]
    conf = row["confirm"]
    rule = conf["rule"]
    judge = conf.get("judge")
    if judge:
        kappa = "n/a" if judge["kappa"] is None else f"{judge['kappa']:.2f}"
        judge_cell = pct(judge["rate"])
        agree = f"{pct(judge['agreement'])} / {kappa}"
    else:
        judge_cell = agree = "not run"
    mode = row["stage_mode"]
    return [
        str(row.get("group") or ""),
        str(row["domain"]),
        str(row["n_simulations"]),
        str(row["tool_calls"]) + ("" if mode == "schemas" else f" ({mode.replace('_', ' ')})"),
        "/".join(str(mix[k]) for k in ("0", "1", "2", "3", "unchecked")),
        str(conf["write_calls"]),
        pct_ci(rule["rate"], rule["ci_low"], rule["ci_high"]),
        judge_cell,
        agree,
    ]


def _acc_cells(row: Tau2AccRow) -> list[str]:
    notes = []
    if row.get("n_max_steps"):
        notes.append(f"{row['n_max_steps']} ended on max_steps")
    if row.get("n_errors"):
        notes.append(f"{row['n_errors']} ended in error")
    if row.get("n_no_reward"):
        notes.append(f"{row['n_no_reward']} without reward (left out)")
    if row.get("n_mismatch"):
        notes.append(f"{row['n_mismatch']} with another task's action checks")
    if row.get("n_excluded"):
        notes.append(f"{row['n_excluded']} withheld from the GAR rows")
    return [
        str(row.get("group") or ""),
        str(row["domain"]),
        str(row["n_simulations"]),
        pct_ci(row.get("acc"), row.get("acc_ci_low"), row.get("acc_ci_high"))
        + f" ({row.get('acc_k', 0)}/{row.get('acc_n', 0)})",
        "; ".join(notes),
    ]


def acc_table(rows: Sequence[Tau2AccRow], title: str | None = None) -> Table:
    """The file-level Acc rows (pass^1 over every simulation with a reward) as a
    :class:`Table`."""
    return Table(ACC_COLUMNS, [_acc_cells(r) for r in rows], title=title, align=_align(ACC_COLUMNS))


def _align(columns: Sequence[str]) -> str:
    return "".join("r" if c in ("n", "sims") else "l" for c in columns)


def gar_table(rows: Sequence[Mapping[str, Any]], title: str | None = None) -> Table:
    """The (domain, gold class) rows as a :class:`Table` (bound violations red in the
    terminal)."""
    return Table(
        GAR_COLUMNS,
        [_gar_cells(r) for r in rows],
        title=title,
        align=_align(GAR_COLUMNS),
        row_styles=["red" if r.get("bound_violation") else None for r in rows],
    )


def domain_table(rows: Sequence[Tau2DomainRow], title: str | None = None) -> Table:
    """The per-domain rows (stage mix, CONFIRM) as a :class:`Table`."""
    return Table(
        DOMAIN_COLUMNS, [_domain_cells(r) for r in rows], title=title, align=_align(DOMAIN_COLUMNS)
    )


def group_rows(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """``(group, rows)`` in the rows' group order."""
    groups = list(dict.fromkeys(str(r.get("group") or "") for r in rows))
    return [(g, [r for r in rows if str(r.get("group") or "") == g]) for g in groups]


def ask_candidate_lines(diag: Tau2Diagnostics) -> list[str]:
    """One line per ASK candidate: task, cues, snippet, boilerplate and use."""
    out = []
    for c in diag.ask_candidates:
        tags = []
        if c.get("boilerplate"):
            tags.append("boilerplate: cue only in scenario text shared by the tasks")
        if not c["used_as_gold"]:
            tags.append("not used")
        out.append(
            f"{c['domain']} task {c['task_id']}: cues {', '.join(c['cues'])} — “{c['snippet']}”"
            + (f" ({'; '.join(tags)})" if tags else "")
        )
    return out


def write_tool_lines(diag: Tau2Diagnostics) -> list[str]:
    """One line per domain: every tool's write decision and its source."""
    return [
        f"{d}: "
        + "; ".join(
            f"{n} {'WRITE' if w['write'] else 'not write'} ({w['source']})"
            for n, w in tools.items()
        )
        for d, tools in diag.write_tools.items()
    ]


def tau2_document(diag: Tau2Diagnostics) -> list[DocumentPart]:
    """The warnings, the file Acc, one GAR table per group with the GAR rules, the domain
    table, CONFIRM agreement, the ASK candidates, the write-tool decisions and the problems:
    Markdown text and tables (:func:`~callscope.core.table_formats.render_document`); every
    value from the results in the text through
    :func:`~callscope.core.table_formats.markdown_text`, as the tables' cells are."""
    parts: list[DocumentPart] = ["### τ²-bench action-class diagnostic\n"]
    warn = list(diag.warnings)
    if (cap := capability_text(diag.capability)) is not None:
        warn.append(cap)
    if warn:
        parts.append("\n" + "".join(f"> **Warning**: {markdown_text(w)}\n>\n" for w in warn))
    parts += ["\n**File-level Acc (pass^1)**\n\n", acc_table(diag.acc_rows)]
    for group, rows in group_rows(diag.rows):
        parts += [f"\n**GAR and Acc: {markdown_text(group)}**\n\n", gar_table(rows)]
    if not diag.rows:
        parts.append("\n(no per-class rows)\n")
    parts.append(
        "\nGAR rules: "
        + "; ".join(f"{k} = {v}" for k, v in GAR_RULES.items())
        + f". ASK gold: {markdown_text(diag.ask_gold_source)}. Acc = reward == 1.\n"
    )
    parts += ["\n", domain_table(diag.domain_rows)]
    if diag.confirm.get("judge"):
        j = diag.confirm["judge"]
        parts.append(
            f"\nCONFIRM rule vs judge over {j['n']} write calls: agreement "
            f"{pct(j['agreement'])}%, Cohen's kappa "
            f"{'n/a' if j['kappa'] is None else format(j['kappa'], '.3f')}"
            f" ({j['undecided']} undecided by the judge).\n"
        )
    if diag.ask_candidates:
        parts.append("\n**ASK candidates** (check these by reading the scenario):\n")
        parts.extend(f"- {markdown_text(line)}\n" for line in ask_candidate_lines(diag))
    writes = write_tool_lines(diag)
    if writes:
        parts.append(
            "\n**Write-tool decisions**:\n" + "".join(f"- {markdown_text(w)}\n" for w in writes)
        )
    if diag.problems:
        parts.append(
            "\n**Problems**:\n" + "".join(f"- {markdown_text(p)}\n" for p in diag.problems)
        )
    return parts


def tau2_markdown(diag: Tau2Diagnostics) -> str:
    """:func:`tau2_document` as Markdown."""
    return render_document(tau2_document(diag), "markdown")


def tau2_terminal_tables(diag: Tau2Diagnostics) -> list[Table]:
    """The tables the terminal shows: the file-level Acc, one GAR / Acc table per group (in
    row order, pooled last when computed) and the per-domain table, each titled."""
    groups = list(dict.fromkeys(r.get("group") for r in diag.rows)) or [None]
    return [
        acc_table(diag.acc_rows, "τ²-bench file-level Acc (pass^1)"),
        *(
            gar_table(
                diag.rows if g is None else diag.group_rows(g),
                f"τ²-bench action-class diagnostics: {g}"
                if g
                else "τ²-bench action-class diagnostics",
            )
            for g in groups
        ),
        domain_table(diag.domain_rows, "τ²-bench tool calls and CONFIRM"),
    ]


def tau2_page(result: Tau2Diagnostics, results: str | Path) -> DiagnosticPage:
    """The ``report.html`` content of a τ² diagnostic of ``results`` (its name is the title's):
    warnings first, the file-level Acc, one GAR table per agent / user group (bound
    violations highlighted), the domain table, and the ASK candidates, write-tool decisions
    and problems as lists."""
    rules = "; ".join(f"{k} = {v}" for k, v in result.config["gar_rules"].items())
    tables: list[tuple[str, str, Table]] = [
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


def write_tau2_markdown(diag: Tau2Diagnostics, out: str | Path) -> Path:
    """:func:`tau2_markdown` as ``tau2-diagnostics.md`` under ``out`` (beside the ``.json`` of
    :func:`callscope.runs.from_results.calibrate_from_tau2`); returns its path."""
    return write_document(tau2_document(diag), Path(out) / f"{TAU2_STEM}.md")
