"""The HTML of each section of the report page, every text escaped on the way in.

:mod:`callscope.report.html` assembles the page from these: the figures (:func:`figure_html`,
PNG data URIs with the report's captions), the SAAG tables, figures and case browser
(:func:`saag_sections`), the calibration panel (:func:`panel_html`), the action-class
diagnostic (:func:`diagnostic_html`), the conversation browser (:func:`conversations_html`)
and the first screen's grounding sentence (:func:`grounding_line`).
:mod:`callscope.report.panels` builds the page of a panel without a run from the same panel
section. Tables are :class:`~callscope.core.table.Table`\\ s rendered by
:meth:`~callscope.core.table.Table.to_html`; those the conversation report holds as cells
(``{"columns", "rows"}``) go through :func:`cells_table_html`.
"""

from __future__ import annotations

import base64
import html
from dataclasses import replace
from math import ceil
from pathlib import Path
from typing import Any

from callscope.core.table import Table
from callscope.report.acc_gar_figure import ACC_GAR_CAPTION, ACC_GAR_FILE
from callscope.report.answer_figure import CALLS_CAPTION, CALLS_FIGURE


def esc(x: Any) -> str:
    """``x`` as text, HTML-escaped (quotes too: safe in attribute values)."""
    return html.escape(str(x), quote=True)


_FIGURE_CAPTIONS = {
    "call_flow.png": "Where and why calls fail: every call of the run, split by the cascade "
    "stage that stopped it and what failed there (stage 1 the function name, stage 2 the "
    "argument names, stage 3 the values against the user's text); attempt 1 is shared by all "
    "modes, the other bars are each feedback mode's final attempt. 'solved': passed all three "
    "stages with the gold function name (the SAAG paper's solve rate).",
    ACC_GAR_FILE: ACC_GAR_CAPTION,
    CALLS_FIGURE: CALLS_CAPTION,
    "solve_rate_by_scale.png": "Solve rate by registry scale per model and mode, with 95% "
    "Wilson intervals (paper Fig. 2).",
    "cumulative_solve.png": "Cumulative solve rate by attempt per model and scale; direct "
    "(single pass) dotted as the baseline (paper Fig. 3).",
    "failure_stages.png": "Where each case's first attempt failed (share of cases).",
    "overcorrection.png": "Overcorrection: correct first names/arguments lost by the final "
    "attempt (Wilson 95%), and the mean change of argument F1 over the loop (bootstrap 95%).",
    "revisions.png": "What each mode's revisions gained (up) and lost (down, hatched): the "
    "share of outcomes whose answer gained or lost passing stage 1, 2, 3, the gold name or the "
    "gold arguments against the earlier attempts (Wilson 95% error bars on the non-zero "
    "shares; every interval is in the revisions table).",
}


#: the leading columns that name a row: every part of a split table repeats them
KEY_COLUMNS = frozenset({"model", "scale", "mode", "n", "n_scales", "category", "probe"})
#: the width one table may take on the page, in pixels: a 1,400 px window less the page's
#: padding, with a margin
PAGE_WIDTH_PX = 1280
#: estimated pixels per character of a table cell (report.css: 0.82rem cells) and per cell
#: of padding and border; a model name wraps at :data:`MODEL_CELL_PX` (report.css)
CHAR_PX = 6.6
CELL_PAD_PX = 18
MODEL_CELL_PX = 224


def _column_px(name: str, cells: list[str], model: bool) -> float:
    """The estimated width of a column: its widest cell, or its header's longest word
    (headers wrap), in pixels."""
    chars = max([len(c) for c in cells] + [max((len(w) for w in name.split()), default=1)])
    px = chars * CHAR_PX + CELL_PAD_PX
    return min(px, MODEL_CELL_PX + CELL_PAD_PX) if model else px


def _split_columns(widths: list[float], keys: int, room: float) -> list[list[int]]:
    """The columns after the ``keys`` first, in order, cut into the fewest parts of about
    equal width that each fit ``room`` (greedy when equal parts would not fit).

    >>> _split_columns([100, 50, 50, 50, 50], 1, 120)
    [[1, 2], [3, 4]]
    >>> _split_columns([10, 100, 30, 30], 1, 130)
    [[1], [2, 3]]
    """
    rest = list(range(keys, len(widths)))
    total = sum(widths[j] for j in rest)
    n = ceil(total / room)
    while True:
        groups: list[list[int]] = [[] for _ in range(n)]
        before = 0.0
        for j in rest:
            groups[min(n - 1, int((before + widths[j] / 2) * n / total))].append(j)
            before += widths[j]
        groups = [g for g in groups if g]
        if all(sum(widths[j] for j in g) <= room for g in groups) or n >= len(rest):
            return groups
        n += 1


def page_table_html(table: Table) -> str:
    """``table`` as the page shows it: whole when its estimated width fits
    :data:`PAGE_WIDTH_PX`, otherwise split into parts of near-equal width, each repeating the
    leading :data:`KEY_COLUMNS`, so that no table scrolls sideways at 1,400 px (the files in
    ``tables/`` keep the whole table). The first part keeps the table's id
    (``table-<name>``), the others get ``table-<name>-2``, ``-3``, ... and a caption naming
    what they continue."""
    cols = list(table.columns)
    widths = [
        _column_px(c, [row[j] for row in table.rows], c == "model") for j, c in enumerate(cols)
    ]
    keys = 0
    while keys < len(cols) and cols[keys] in KEY_COLUMNS:
        keys += 1
    if sum(widths) <= PAGE_WIDTH_PX or len(cols) - keys < 2 or not table.rows:
        return table.to_html()
    room = max(PAGE_WIDTH_PX - sum(widths[:keys]), 1.0)
    groups = _split_columns(widths, keys, room)
    name = table.name or "table"
    parts = len(groups)
    out = []
    for i, group in enumerate(groups):
        picked = list(range(keys)) + group
        shown = f"columns {cols[group[0]]} to {cols[group[-1]]}"
        whole = f"the whole table: tables/{name}.csv"
        if i == 0:
            title, caption = table.title, table.caption
            note = " ".join(t for t in (table.note, f"Part 1 of {parts} ({shown}; {whole}).") if t)
        else:
            title = f"{table.title or name} (part {i + 1} of {parts})"
            caption, note = f"Continued: {shown}, by the same rows ({whole}).", None
        part = replace(
            table,
            columns=[cols[j] for j in picked],
            rows=[[row[j] for j in picked] for row in table.rows],
            align="".join((table.align or "l" * len(cols))[j] for j in picked),
            title=title,
            caption=caption,
            note=note,
            raw=None,
        )
        out.append(part.to_html(None if i == 0 else f"{name}-{i + 1}"))
    return "".join(out)


def figure_html(path: Path, caption: str | None = None, fig_id: str | None = None) -> str:
    """A PNG embedded as a data URI in ``<figure id="fig-<fig_id>">`` (default: the file's
    stem) with its caption (default: the report's caption of that file name), escaped."""
    b64 = base64.b64encode(path.read_bytes()).decode("ascii")
    caption = caption if caption is not None else _FIGURE_CAPTIONS.get(path.name, path.name)
    return (
        f'<figure id="fig-{esc(fig_id or path.stem)}"><img alt="{esc(caption)}" '
        f"src=\"data:image/png;base64,{b64}\" onload=\"this.setAttribute('data-loaded','1')\">"
        f"<figcaption>{esc(caption)}</figcaption></figure>"
    )


def cells_table_html(
    table_id: str, title: str, caption: str, cells: dict[str, Any], cls: str = "report"
) -> str:
    """A table given as ``{"columns": [...], "rows": [[...]]}`` of text cells, escaped; an
    optional ``"row_styles"`` list highlights rows (``row-red``: a bound violation)."""
    table = Table(
        cells.get("columns") or [],
        cells.get("rows") or [],
        title=title,
        caption=caption,
        row_styles=cells.get("row_styles"),
    )
    return table.to_html(table_id, cls)


def panel_html(panels: list[dict[str, Any]], figure: str = "") -> str:
    """The "Calibration panel" section: ``figure`` (HTML, may be empty) first, then per panel
    (:func:`callscope.report.conversations.panel_entry`) its capability warnings, the
    case-level table (GAR, Acc, Δ with intervals and flags; bound violations highlighted),
    the turn-level table and its notes. Every text is escaped."""
    parts = ['<section id="panel"><h2>Calibration panel</h2>']
    if figure:
        parts.append(figure)
    for i, entry in enumerate(panels):
        models = entry.get("models") or []
        heading = f"{len(models)} models, probe {entry.get('probe')}"
        parts.append(f'<h3 id="panel-{i}">{esc(heading)}</h3>')
        parts.extend(f'<p class="note warn">{esc(w)}</p>' for w in entry.get("warnings") or [])
        for key, tid in (("table", f"panel-{i}"), ("turn_table", f"panel-turn-{i}")):
            t = entry.get(key) or {}
            parts.append(
                cells_table_html(tid, t.get("title", ""), t.get("caption", ""), t, "report diag")
            )
        parts.extend(f'<p class="note">{esc(n)}</p>' for n in entry.get("notes") or [])
    parts.append("</section>")
    return "\n".join(parts)


_DIAG_CAPTION = (
    "GAR (Gold Action Recall): share of cases whose gold action class (base/long_context "
    "TOOL_CALL, miss_param ASK, miss_func REFUSE) appears among the classes of the model's "
    "emissions (case level), or at a due turn (turn level); Acc: BFCL's verdict. Wilson 95% "
    "intervals. Acc > GAR flags grader masking."
)


_STAGE_CAPTION = (
    "Every parsed tool call checked by the SAAG cascade against the tools available at its "
    "turn and the user text so far: share passing, and first failing stage."
)


_GROUNDING_TEXT = {
    "lexical": "a string argument must appear in the user's text and a number among its "
    "numbers (the SAAG paper's stage 3)",
    "registry": "callscope's default; a value the user's text states in other words, as a "
    "number, date or unit, or that the conversation, the schema's format, enum or default "
    "supports also counts as grounded; 'lexical' is the SAAG paper's stage 3",
}


def grounding_line(groundings: dict[str, str]) -> str:
    """The first screen's sentence naming the run's stage-3 grounding mode(s)."""
    modes = sorted(set(groundings.values()))
    if not modes:
        return "Stage-3 grounding: not recorded in this run's configuration."
    if len(modes) == 1:
        why = _GROUNDING_TEXT.get(modes[0])
        return f"Stage-3 grounding: {modes[0]}" + (f" ({why})." if why else ".")
    per = "; ".join(f"{m}: {g}" for m, g in sorted(groundings.items()))
    return f"Stage-3 grounding differs by model ({per}); compare their stage-3 shares with care."


def _capability_html(cap: dict[str, Any]) -> str:
    below = cap.get("below") or []
    t_cap = cap.get("t_cap")
    text = (
        f"Capability check: every class emitted at least {t_cap} times."
        if not below
        else f"Capability check: emitted fewer than {t_cap} times over the run: "
        f"{', '.join(map(str, below))} (GAR of these classes says little)."
    )
    return f'<p class="capability{" warn" if below else ""}">{esc(text)}</p>'


_ABLATION_CAPTION = (
    "ΔAcc / ΔGAR in percentage points against the baseline, per category, on the cases both "
    "runs hold (intervals and flips in each probe's paired table above); fired % over all "
    "paired cases; n/a where a probe did not run a category or GAR is not a model measure "
    "(CRI-bypass)."
)


def diagnostic_html(conv: dict[str, Any]) -> str:
    """The "Action-class diagnostic" section: tables per (model, probe), paired comparisons."""
    parts = ['<section id="diagnostic"><h2>Action-class diagnostic</h2>']
    parts.append(
        f'<p class="note">Emission classes by the {esc(conv.get("config"))} '
        "classifier; one class per emission.</p>"
    )
    if conv.get("note"):
        parts.append(f'<p class="note warn">{esc(conv["note"])}</p>')
    for i, run in enumerate(conv.get("runs") or []):
        label = f"{run['model']} — {run['probe']}"
        parts.append(f'<h3 id="diag-{i}">{esc(label)}</h3>')
        cap = run.get("capability") or {}
        if cap.get("below"):  # a failed capability check is read first
            parts.append(_capability_html(cap))
        parts.append(
            cells_table_html(
                f"diag-{i}",
                f"GAR and Acc per category ({label})",
                _DIAG_CAPTION,
                run["table"],
                "report diag",
            )
        )
        parts.append(
            cells_table_html(
                f"stage-{i}",
                f"SAAG stage of tool calls ({label})",
                _STAGE_CAPTION,
                run["stage_table"],
                "report diag",
            )
        )
        if not cap.get("below"):
            parts.append(_capability_html(cap))
    for j, comp in enumerate(conv.get("comparisons") or []):
        label = f"{comp['probe']} vs baseline ({comp['model']})"
        parts.append(f'<h3 id="compare-{j}">Paired comparison: {esc(label)}</h3>')
        table = comp["table"]
        parts.append(
            cells_table_html(
                f"compare-{j}",
                f"Probe {comp['probe']} against the baseline, paired by case",
                " ".join(table.get("notes") or []),
                table,
                "report compare",
            )
        )
    for k, abl in enumerate(conv.get("ablations") or []):
        parts.append(f'<h3 id="ablation-{k}">Ablation matrix: {esc(abl["model"])}</h3>')
        parts.append(
            cells_table_html(
                f"ablation-{k}",
                f"Every probe against the baseline ({abl['model']})",
                _ABLATION_CAPTION,
                abl["table"],
                "report compare",
            )
        )
    parts.append("</section>")
    return "\n".join(parts)


_CONV_FILTERS = (
    ("model", "model"),
    ("probe", "probe"),
    ("category", "category"),
    ("verdict", "verdict"),
    ("gold", "gold class emitted"),
)


def conversations_html() -> str:
    """The (empty) conversation browser that ``report.js`` fills from ``#conv-data``."""
    filters = "".join(
        f'<label>{label}<select id="conv-filter-{name}"></select></label>'
        for name, label in _CONV_FILTERS
    )
    return "\n".join(
        [
            '<section id="conversations"><h2>Conversations</h2>',
            '<p class="note">Each emission carries its action class; a retracted emission was '
            "removed by a probe before its calls ran, a placeholder was written by a probe (not a "
            "model emission). Rejected calls are highlighted; probe events are shown on their "
            "turn.</p>",
            f'<div class="filters">{filters}</div>',
            '<p id="conv-shown-count"></p><p id="conv-filter-note"></p>',
            '<div id="conv-list"></div>'
            '<button id="conv-more" type="button" hidden>show more</button>',
            "</section>",
        ]
    )


def saag_sections(tables: list[Table], figures: list[Path]) -> list[str]:
    """The SAAG part of a run's page: the summary (the first of ``tables``), the other tables,
    the ``figures`` and the (empty) case browser that ``report.js`` fills from ``#data``."""
    headline, rest = tables[0], tables[1:]
    filters = "".join(
        f'<label>{label}<select id="filter-{name}"></select></label>'
        for name, label in (
            ("model", "model"),
            ("mode", "mode"),
            ("scale", "scale"),
            ("stage", "first-failing stage"),
            ("kind", "failure kind"),
            ("result", "result"),
        )
    )
    return [
        '<section id="summary"><h2>Summary</h2>',
        page_table_html(headline),
        "</section>",
        '<section id="tables"><h2>Tables</h2>',
        *(page_table_html(t) for t in rest),
        "</section>",
        '<section id="figures"><h2>Figures</h2>',
        *(figure_html(p) for p in figures),
        "</section>",
        '<section id="cases"><h2>Cases</h2>',
        f'<div class="filters">{filters}</div>',
        '<p id="shown-count"></p><p id="filter-note"></p>',
        '<div id="case-list"></div><button id="more" type="button" hidden>show more</button>',
        "</section>",
    ]
