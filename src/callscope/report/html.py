"""``build_report(run_dir)``: tables, figures and one self-contained ``report.html``.

The page needs no network: figures are base64 data URIs, CSS and JS are inline, and a
Content-Security-Policy forbids every other source. Model and dataset text only ever
reaches the page inside a ``<script type="application/json" id="data">`` block (with ``<``,
``>``, ``&`` and U+2028/9 written as ``\\uXXXX``, so no text can close the block) and is
rendered by ``report.js`` with ``textContent``/``createElement`` only. Everything else
(table cells, captions, model names) is HTML-escaped on the Python side.

The case browser's filters (model, mode, scale, first-failing stage, failure kind, result)
are mirrored in the URL hash, e.g. ``report.html#mode=binary&stage=2``; an element with
``id="shown-count"`` reads ``"N of M cases shown"``.

A run directory may also (or only) hold multi-turn calibration conversations
(``callscope calibrate``). Then the page adds an "Action-class diagnostic" section (the GAR/Acc
and SAAG stage-mix tables per model and probe, and the paired probe-vs-baseline table where
both runs exist; see :mod:`callscope.report.conversations`) and a "Conversations" browser:
every conversation turn by turn with the action class of each emission, the grader's verdict
per turn and overall, rejected calls highlighted and probe events on their turn. Its filters
(model, probe, category, verdict ``pass``/``fail``, gold class emitted ``yes``/``no``) live
in the same hash under a ``conv-`` prefix, e.g.
``report.html#conv-category=multi_turn_miss_param&conv-verdict=fail`` (a category may be given
without its ``multi_turn_`` prefix); ``id="conv-shown-count"`` reads ``"N of M conversations
shown"``. The conversations' JSON sits in a second block,
``<script type="application/json" id="conv-data">``, escaped the same way. A run with
conversations and no SAAG outcomes gets no SAAG tables, figures or case browser.

The page opens with its first screen, ``<section id="overview">``: the stage-3 grounding mode
of the run (``id="grounding-line"``, from the run configuration ``config:<model>``), the
detector audit's headline on the run's own gold cases (``id="audit-line"``,
:func:`callscope.saag.audit.audit` in that mode, on at most :data:`AUDIT_CAP` cases), and the
figure that answers "where and why do my calls fail?": the call flow through the cascade per
model and mode (``id="fig-call_flow"``), or for a calibration run Acc against GAR per category
(``id="fig-acc_vs_gar"``, one marker per model). The tables follow. A calibration run of
several models on one probe (``calibrate -m A -m B``) shows its panel next, before the
per-model tables: ``<section id="panel">`` (:func:`panel_html`) with the case-level table
(GAR, Acc, Δ = Acc − GAR with intervals and flags, ``id="table-panel-<i>"``) and the
turn-level one (``id="table-panel-turn-<i>"``); a single-model run has no such section.
"""

from __future__ import annotations

import base64
import html
import random
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from callscope.calibration.classify import preset
from callscope.core.table import Table
from callscope.report import aggregate as agg
from callscope.report.case_data import case_data, json_for_script
from callscope.report.conversations import conversation_report, markdown_table
from callscope.report.figures import (
    ACC_GAR_CAPTION,
    ACC_GAR_FILE,
    acc_gar_points,
    acc_vs_gar_plot,
    make_figures,
)
from callscope.report.flow import call_flow
from callscope.report.tables import (
    ReportTable,
    aggregate_table,
    cumulative_table,
    errors_table,
    extrinsic_table,
    failure_table,
    headline_table,
    intrinsic_table,
    overcorrection_table,
    paired_table,
    per_scale_table,
    revision_table,
    write_table,
)
from callscope.saag.audit import audit
from callscope.saag.groundings import DEFAULT_GROUNDING
from callscope.store.run_store import RunStore
from callscope.types import Case

REPORT_FILE = "report.html"
#: the most gold cases the report audits (a seeded sample beyond; ``callscope audit`` runs all)
AUDIT_CAP = 2000
_FIGURE_CAPTIONS = {
    "call_flow.png": "Where and why calls fail: every call of the run, split by the cascade "
    "stage that stopped it and what failed there (stage 1 the function name, stage 2 the "
    "argument names, stage 3 the values against the user's text); attempt 1 is shared by all "
    "modes, the other bars are each feedback mode's final attempt. 'solved': passed all three "
    "stages with the gold function name (the SAAG paper's solve rate).",
    ACC_GAR_FILE: ACC_GAR_CAPTION,
    "solve_rate_by_scale.png": "Solve rate by registry scale per model and mode, with 95% "
    "Wilson intervals (paper Fig. 2).",
    "cumulative_solve.png": "Cumulative solve rate by attempt per model and scale; direct "
    "(single pass) dotted as the baseline (paper Fig. 3).",
    "failure_stages.png": "Where each case's first attempt failed (share of cases).",
    "overcorrection.png": "Overcorrection: correct first names/arguments lost by the final "
    "attempt (Wilson 95%), and the mean change of argument F1 over the loop (bootstrap 95%).",
    "revisions.png": "What each mode's revisions gained (up) and lost (down, hatched): the "
    "share of outcomes whose answer gained or lost passing stage 1, 2, 3, the gold name or the "
    "gold arguments against the earlier attempts (Wilson 95%).",
}


@dataclass
class ReportData:
    """Every aggregate of a run, as frames, plus the formatted tables in report order."""

    per_scale: pd.DataFrame
    headline: pd.DataFrame
    across: pd.DataFrame
    cumulative: pd.DataFrame
    failures: pd.DataFrame
    overcorrection: pd.DataFrame
    errors: pd.DataFrame
    tables: list[ReportTable] = field(default_factory=list)
    #: how calls flow through the cascade (:func:`callscope.report.flow.call_flow`)
    flow: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: what each mode's revisions lost and gained (:func:`agg.revision_tradeoff`)
    revisions: pd.DataFrame = field(default_factory=pd.DataFrame)


@dataclass
class RunInfo:
    """What the first screen says about the run beside its figure: the stage-3 grounding
    mode per model (from ``config:<model>``) and the audit headline per mode, with a note
    when the audit ran on a sample."""

    groundings: dict[str, str] = field(default_factory=dict)
    audit_lines: list[str] = field(default_factory=list)
    audit_note: str = ""


def compute_report(
    outcomes: list[dict[str, Any]],
    max_attempts: dict[str, int] | int | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> ReportData:
    """All aggregates and tables for a list of outcome dicts (pure; see ``aggregate``)."""
    ps = agg.per_scale(outcomes, n_boot, seed)
    hl = agg.headline(outcomes, n_boot, seed)
    across = agg.across_scales(ps)
    cum = agg.cumulative_solve(outcomes, max_attempts)
    fb = agg.failure_breakdown(outcomes)
    oc = agg.overcorrection(outcomes, n_boot, seed)
    err = agg.errors_by_kind(outcomes)
    data = ReportData(ps, hl, across, cum, fb, oc, err, flow=call_flow(outcomes))
    data.revisions = agg.revision_tradeoff(outcomes)
    data.tables = [headline_table(hl)]
    if not ps.empty:
        data.tables += [
            per_scale_table(ps),
            aggregate_table(across),
            extrinsic_table(across),
            intrinsic_table(across),
        ]
    data.tables += [
        cumulative_table(cum),
        failure_table(fb),
        overcorrection_table(oc),
        revision_table(data.revisions),
        *_paired_tables(outcomes, n_boot, seed),
        errors_table(err),
    ]
    return data


def _paired_tables(outcomes: list[dict[str, Any]], n_boot: int, seed: int) -> list[ReportTable]:
    """The paired mode differences (structured vs direct and binary; gated vs structured),
    one table, when the run holds those modes."""
    modes = {o["mode"] for o in outcomes}
    pairs = [("direct", "structured"), ("binary", "structured"), ("structured", "gated")]
    pairs += [("gated", m) for m in sorted(modes) if m.startswith("gated-")]
    frames = [
        agg.paired_modes(outcomes, a, b, n_boot, seed)
        for a, b in pairs
        if a in modes and b in modes
    ]
    frames = [f for f in frames if not f.empty]
    return [paired_table(pd.concat(frames, ignore_index=True))] if frames else []


# --------------------------------------------------------------------------- HTML


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def table_html(t: ReportTable) -> str:
    """A formatted table as escaped HTML with its caption."""
    return t.table().to_html(t.name)


def figure_html(path: Path, caption: str | None = None, fig_id: str | None = None) -> str:
    """A PNG embedded as a data URI in ``<figure id="fig-<fig_id>">`` (default: the file's
    stem) with its caption (default: the report's caption of that file name), escaped."""
    b64 = base64.b64encode(path.read_bytes()).decode("ascii")
    caption = caption if caption is not None else _FIGURE_CAPTIONS.get(path.name, path.name)
    return (
        f'<figure id="fig-{_esc(fig_id or path.stem)}"><img alt="{_esc(caption)}" '
        f"src=\"data:image/png;base64,{b64}\" onload=\"this.setAttribute('data-loaded','1')\">"
        f"<figcaption>{_esc(caption)}</figcaption></figure>"
    )


def _asset(name: str) -> str:
    return resources.files("callscope.report").joinpath(name).read_text(encoding="utf-8")


_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


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
        parts.append(f'<h3 id="panel-{i}">{_esc(heading)}</h3>')
        parts.extend(f'<p class="note warn">{_esc(w)}</p>' for w in entry.get("warnings") or [])
        for key, tid in (("table", f"panel-{i}"), ("turn_table", f"panel-turn-{i}")):
            t = entry.get(key) or {}
            parts.append(
                cells_table_html(tid, t.get("title", ""), t.get("caption", ""), t, "report diag")
            )
        parts.extend(f'<p class="note">{_esc(n)}</p>' for n in entry.get("notes") or [])
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


def run_info(store: RunStore, models: list[str], cap: int = AUDIT_CAP) -> RunInfo:
    """The run's grounding mode per model (``config:<model>``; a model without a recorded
    configuration is left out) and the audit headline per mode on the store's gold cases
    (a sample of ``cap`` cases seeded 0, as ``callscope audit --n`` draws, when there are
    more)."""
    info = RunInfo()
    for model in models:
        cfg = store.get_meta(f"config:{model}") or {}
        if isinstance(cfg, dict) and cfg.get("grounding"):
            info.groundings[model] = str(cfg["grounding"])
    gold = [c.id for c in store.iter_cases() if c.gold]  # ids only: one case decoded at a time
    if not gold:
        return info
    cases: list[Case] = []
    if len(gold) > cap:
        info.audit_note = (
            f"audited a seeded sample of {cap:,} of the run's {len(gold):,} gold cases; "
            "`callscope audit` runs them all"
        )
        keep = set(random.Random(0).sample(gold, cap))  # the sample of the cases themselves
        cases = sorted((c for c in store.iter_cases() if c.id in keep), key=lambda c: c.id)
    else:
        cases = [c for c in store.iter_cases() if c.gold]
    for mode in sorted(set(info.groundings.values())) or [DEFAULT_GROUNDING]:
        info.audit_lines.append(audit(cases, grounding=mode).headline())
    return info


def overview_html(info: RunInfo, figure: str) -> str:
    """The first screen: grounding line, audit headline(s) and the one figure (HTML)."""
    parts = [
        '<section id="overview">',
        f'<p id="grounding-line" class="run-line">{_esc(grounding_line(info.groundings))}</p>',
    ]
    if info.audit_lines:
        lines = "<br>".join(_esc(line) for line in info.audit_lines)
        note = f" ({_esc(info.audit_note)})" if info.audit_note else ""
        parts.append(
            '<p id="audit-line" class="run-line">How far this diagnosis can be trusted on '
            f"these cases (gold calls and copies made wrong on purpose): {lines}{note}</p>"
        )
    parts += [figure, "</section>"]
    return "\n".join(parts)


def _capability_html(cap: dict[str, Any]) -> str:
    below = cap.get("below") or []
    t_cap = cap.get("t_cap")
    text = (
        f"Capability check: every class emitted at least {t_cap} times."
        if not below
        else f"Capability check: emitted fewer than {t_cap} times over the run: "
        f"{', '.join(map(str, below))} (GAR of these classes says little)."
    )
    return f'<p class="capability{" warn" if below else ""}">{_esc(text)}</p>'


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
        f'<p class="note">Emission classes by the {_esc(conv.get("config"))} '
        "classifier; one class per emission.</p>"
    )
    if conv.get("note"):
        parts.append(f'<p class="note warn">{_esc(conv["note"])}</p>')
    for i, run in enumerate(conv.get("runs") or []):
        label = f"{run['model']} — {run['probe']}"
        parts.append(f'<h3 id="diag-{i}">{_esc(label)}</h3>')
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
        parts.append(f'<h3 id="compare-{j}">Paired comparison: {_esc(label)}</h3>')
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
        parts.append(f'<h3 id="ablation-{k}">Ablation matrix: {_esc(abl["model"])}</h3>')
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


def render_html(
    title: str,
    data: ReportData | None,
    figures: list[Path],
    cases: dict[str, Any],
    conv: dict[str, Any] | None = None,
    info: RunInfo | None = None,
    acc_gar: Path | None = None,
) -> str:
    """The whole page as one string (no external references). ``data`` ``None``: no SAAG
    part; ``conv`` (:func:`callscope.report.conversations.conversation_report`): the
    diagnostic and conversation sections. The first screen (``info``) shows the call-flow
    figure (the first of ``figures``) of a SAAG run, else the ``acc_gar`` figure."""
    js = _asset("report.js")
    if "</script" in js.lower():  # pragma: no cover - guards edits of report.js
        raise ValueError("report.js must not contain '</script'")
    nav: list[str] = ['<a href="#overview">Overview</a>']
    body: list[str] = []
    blocks: list[str] = []
    first = [p for p in figures if p.stem == "call_flow"][:1]
    lead = first[0] if first else acc_gar
    rest = [p for p in figures if p not in first]
    if acc_gar is not None and acc_gar != lead:
        rest.insert(0, acc_gar)
    body.append(overview_html(info or RunInfo(), figure_html(lead) if lead else ""))
    if data is not None:
        nav.append(
            '<a href="#summary">Summary</a><a href="#tables">Tables</a>'
            '<a href="#figures">Figures</a><a href="#cases">Cases</a>'
        )
        body.extend(_saag_sections(data, rest))
        if cases.get("note"):  # the case browser holds a bounded share of a large run
            body.insert(-4, f'<p id="cases-note" class="note">{_esc(cases["note"])}</p>')
        blocks.append(
            f'<script type="application/json" id="data">{json_for_script(cases)}</script>'
        )
    if conv is not None:
        panels = conv.get("panels") or []
        nav.append(
            ('<a href="#panel">Panel</a>' if panels else "")
            + '<a href="#diagnostic">Action-class diagnostic</a>'
            '<a href="#conversations">Conversations</a>'
        )
        if data is None and rest:  # the Acc-vs-GAR figure leads; no other figure
            body.append("".join(figure_html(p) for p in rest))
        if panels:  # several models: their panel before the per-model tables
            body.append(panel_html(panels))
        body.extend([diagnostic_html(conv), conversations_html()])
        blocks.append(
            f'<script type="application/json" id="conv-data">{json_for_script(conv)}</script>'
        )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_esc(title)}</title>",
        f"<style>{_asset('report.css')}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        f"<nav>{''.join(nav)}</nav>",
        *body,
        *blocks,
        f"<script>{js}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _saag_sections(data: ReportData, figures: list[Path]) -> list[str]:
    headline, rest = data.tables[0], data.tables[1:]
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
        table_html(headline),
        "</section>",
        '<section id="tables"><h2>Tables</h2>',
        *(table_html(t) for t in rest),
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


def build_report(
    run_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> Path:
    """Aggregate the run in ``run_dir`` and write, under ``out_dir`` (default ``run_dir``):
    ``tables/<name>.{csv,md,tex}``, ``figures/*.png`` and ``report.html``; return the path of
    ``report.html``. Raises FileNotFoundError when ``run_dir`` holds no run store.

    A store with calibration conversations adds the diagnostic and conversation sections; one
    with conversations and no SAAG outcomes writes only ``report.html`` (no SAAG tables or
    figures)."""

    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir
    outcomes = agg.load_facts(run_dir)  # compact: memory bounded by the page, not the store
    store = RunStore(run_dir)
    try:
        # the classifier preset the calibration was run with (recorded by `calibrate`)
        conv: dict[str, Any] | None = conversation_report(
            store, preset(store.get_meta("classifier_preset") or "default")
        )
        info = run_info(store, sorted({str(o["model"]) for o in outcomes}))
    finally:
        store.close()
    if not conv["conversations"]:
        conv = None
    else:  # the SAAG stage mix of the diagnostic is scored in the default mode
        for model in conv.get("models") or []:
            info.groundings.setdefault(str(model), DEFAULT_GROUNDING)
    data: ReportData | None = None
    figures: list[Path] = []
    cases: dict[str, Any] = {}
    if outcomes or conv is None:
        data = compute_report(outcomes, agg.max_attempts_by_model(run_dir, outcomes), n_boot, seed)
        for t in data.tables:
            write_table(t, out / "tables")
        figures = make_figures(
            data.per_scale,
            data.cumulative,
            data.failures,
            data.overcorrection,
            out / "figures",
            flow=data.flow,
            revisions=data.revisions,
        )
        cases = case_data(run_dir, outcomes)
    acc_gar = None
    if conv is not None:  # one marker per model, in the panel's row order when there is one
        order = next((p["models"] for p in conv.get("panels") or []), [])
        runs = sorted(
            conv.get("runs") or [],
            key=lambda r: order.index(r["model"]) if r["model"] in order else len(order),
        )
        acc_gar = acc_vs_gar_plot(acc_gar_points(runs), out / "figures" / ACC_GAR_FILE).path
    page = render_html(
        f"callscope report: {run_dir.resolve().name}", data, figures, cases, conv, info, acc_gar
    )
    path = out / REPORT_FILE
    out.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path


def build_diagnostic_page(
    out_dir: str | Path,
    title: str,
    tables: list[tuple[str, str, str | Table]],
    notes: list[str] = (),
    *,
    warnings: list[str] = (),
    lists: list[tuple[str, list[str]]] = (),
) -> Path:
    """``report.html`` for a diagnostic computed from another tool's results (BFCL's result
    trees, τ²-bench runs): the calibrate report's tables and styling, without conversations.
    ``tables`` are ``(title, caption, markdown table or Table)`` (a :class:`Table` keeps its
    ``row_styles``: bound violations are highlighted); ``warnings`` are shown first,
    highlighted; ``notes`` as text; ``lists`` as ``(heading, items)`` lists after the tables.
    The title is shown once (``<h1>``)."""

    parts = ['<section id="diagnostic">']
    parts.extend(f'<p class="note warn">{_esc(w)}</p>' for w in warnings)
    for i, (name, caption, md) in enumerate(tables):
        if isinstance(md, Table):
            t = Table(md.columns, md.rows, title=name, caption=caption, row_styles=md.row_styles)
            parts.append(t.to_html(f"ext-{i}", "report diag"))
        else:
            parts.append(
                cells_table_html(f"ext-{i}", name, caption, markdown_table(md), "report diag")
            )
    parts.extend(f'<p class="note">{_esc(n)}</p>' for n in notes)
    for heading, items in lists:
        parts.append(f"<h3>{_esc(heading)}</h3><ul>")
        parts.extend(f"<li>{_esc(item)}</li>" for item in items)
        parts.append("</ul>")
    parts.append("</section>")
    return write_page(out_dir, title, parts)


def write_page(out_dir: str | Path, title: str, parts: list[str]) -> Path:
    """``out_dir/report.html``: a static page (no script; the report's styling and
    Content-Security-Policy) with ``title`` escaped as its ``<h1>`` and the already escaped
    HTML ``parts`` as its body. Returns its path."""
    page = (
        "\n".join(
            [
                "<!DOCTYPE html>",
                '<html lang="en"><head><meta charset="utf-8">',
                f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
                f"<title>{_esc(title)}</title>",
                f"<style>{_asset('report.css')}</style></head><body>",
                f"<h1>{_esc(title)}</h1>",
                *parts,
                "</body></html>",
            ]
        )
        + "\n"
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / REPORT_FILE
    path.write_text(page, encoding="utf-8")
    return path
