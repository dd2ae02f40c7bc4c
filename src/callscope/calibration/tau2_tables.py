"""The tables of the τ²-bench diagnostic (:mod:`callscope.calibration.tau2`), built as
:class:`callscope.core.table.Table` and rendered as Markdown or for the terminal.

* GAR / Acc per (domain, gold class): :func:`gar_table` (percentages, Wilson 95% intervals,
  GAR − Acc in pp, the flags of :func:`callscope.calibration.diagnostics.row_flags` plus
  simulations without a GAR verdict or without a reward);
* per domain: the SAAG stage mix of the agent's tool calls and CONFIRM (rule, and judge with
  agreement and Cohen's kappa when it ran): :func:`domain_table`;
* :func:`report_markdown`: both tables with the GAR rules, the ASK candidates, the write
  tools and the problems.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from callscope.calibration.diagnostics import row_flags
from callscope.calibration.tau2_simulation import GAR_RULES
from callscope.core.table import Table, pct, pct_ci

if TYPE_CHECKING:
    from callscope.calibration.tau2 import Tau2Diagnostics

GAR_COLUMNS: tuple[str, ...] = (
    "Domain",
    "Gold",
    "n",
    "GAR % [95% CI]",
    "Acc % [95% CI]",
    "GAR−Acc pp",
    "Flags",
)
DOMAIN_COLUMNS: tuple[str, ...] = (
    "Domain",
    "sims",
    "tool calls",
    "stage 0/1/2/3/unchecked",
    "write calls",
    "CONFIRM rule % [95% CI]",
    "CONFIRM judge %",
    "agreement % / kappa",
)


def _gar_cells(row: Mapping[str, Any]) -> list[str]:
    gap = row.get("gap")
    flags = [f for f in [row_flags(row)] if f]
    if row.get("n_gar_unknown"):
        flags.append(f"{row['n_gar_unknown']} without GAR verdict")
    if row.get("n_no_reward"):
        flags.append(f"{row['n_no_reward']} without reward")
    return [
        str(row["domain"]),
        str(row["gold_class"]),
        str(row["n"]),
        pct_ci(row.get("gar_case"), row.get("gar_case_ci_low"), row.get("gar_case_ci_high")),
        pct_ci(row.get("acc"), row.get("acc_ci_low"), row.get("acc_ci_high")),
        pct(gap, signed=True),
        "; ".join(flags),
    ]


def _domain_cells(row: Mapping[str, Any]) -> list[str]:
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
    return [
        str(row["domain"]),
        str(row["n_simulations"]),
        str(row["tool_calls"]) + ("" if row["stage_mode"] == "schemas" else " (names only)"),
        "/".join(str(mix[k]) for k in ("0", "1", "2", "3", "unchecked")),
        str(conf["write_calls"]),
        pct_ci(rule["rate"], rule["ci_low"], rule["ci_high"]),
        judge_cell,
        agree,
    ]


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


def domain_table(rows: Sequence[Mapping[str, Any]], title: str | None = None) -> Table:
    """The per-domain rows (stage mix, CONFIRM) as a :class:`Table`."""
    return Table(
        DOMAIN_COLUMNS, [_domain_cells(r) for r in rows], title=title, align=_align(DOMAIN_COLUMNS)
    )


def gar_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The (domain, gold class) rows as a Markdown table."""
    return gar_table(rows).to_markdown()


def domain_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The per-domain rows (stage mix, CONFIRM) as a Markdown table."""
    return domain_table(rows).to_markdown()


def report_markdown(diag: Tau2Diagnostics) -> str:
    """Both tables, the GAR rules, CONFIRM agreement, the ASK candidates, the write tools and
    the problems, as Markdown."""
    parts = [
        "### τ²-bench action-class diagnostic\n",
        gar_markdown(diag.rows),
        "\nGAR rules: "
        + "; ".join(f"{k} = {v}" for k, v in GAR_RULES.items())
        + f". ASK gold: {diag.ask_gold_source}. Acc = reward == 1.\n",
        "\n" + domain_markdown(diag.domain_rows),
    ]
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
        for c in diag.ask_candidates:
            parts.append(
                f"- {c['domain']} task {c['task_id']}: cues {', '.join(c['cues'])}"
                f" — “{c['snippet']}”" + ("" if c["used_as_gold"] else " (not used)") + "\n"
            )
    writes = [
        f"{d}: "
        + (", ".join(f"{n} ({w['source']})" for n, w in tools.items() if w["write"]) or "none")
        for d, tools in diag.write_tools.items()
    ]
    if writes:
        parts.append("\n**Write tools**: " + "; ".join(writes) + "\n")
    if diag.problems:
        parts.append("\n**Problems**:\n" + "".join(f"- {p}\n" for p in diag.problems))
    return "".join(parts)
