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
detector audit's headlines on the run's own gold cases (``id="audit-line"``,
:func:`callscope.saag.audit_engine.run_audit` of each audit design that reads them, the
single-call and the answer audit, in that mode, on at most :data:`AUDIT_CAP` cases), and the
figure that answers "where and why do my calls fail?": the call flow through the cascade per
model and mode (``id="fig-call_flow"``), or for a calibration run Acc against GAR per category
(``id="fig-acc_vs_gar"``, one marker per model). The tables follow. A calibration run of
several models on one probe (``calibrate -m A -m B``) shows its panel next, before the
per-model tables: ``<section id="panel">`` (:func:`~callscope.report.sections.panel_html`) with the case-level table
(GAR, Acc, GAR − Acc with intervals and flags, ``id="table-panel-<i>"``) and the
turn-level one (``id="table-panel-turn-<i>"``); a single-model run has no such section.

This module computes the run's report (:func:`compute_report`, :func:`run_info`), writes its
table files (:func:`callscope.core.table_formats.write_tables`) and figures, and assembles the
page (:func:`render_html`, :func:`write_page`); the HTML of each section is built in
:mod:`callscope.report.sections`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from callscope.calibration.classify import preset
from callscope.core.paths import write_bytes_safely
from callscope.core.table import Table
from callscope.core.table_formats import write_tables
from callscope.core.text import escape_controls
from callscope.models.usage import usage_table
from callscope.report import aggregate as agg
from callscope.report.acc_gar_figure import ACC_GAR_FILE, acc_gar_points, acc_vs_gar_plot
from callscope.report.answer_figure import calls_by_category_plot
from callscope.report.answers import answer_tables
from callscope.report.case_data import case_data, json_for_script
from callscope.report.conversations import conversation_report
from callscope.report.figures import make_figures
from callscope.report.flow import call_flow
from callscope.report.load import load_facts, max_attempts_by_model
from callscope.report.paired_modes import paired_modes
from callscope.report.sections import (
    conversations_html,
    diagnostic_html,
    esc,
    figure_html,
    grounding_line,
    panel_html,
    saag_sections,
)
from callscope.report.tables import (
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
)
from callscope.saag.audit_designs import audit_designs
from callscope.saag.audit_engine import run_audit
from callscope.saag.groundings import DEFAULT_GROUNDING
from callscope.store.run_store import RunStore

REPORT_FILE = "report.html"
#: the most gold cases the report audits (a seeded sample beyond; ``callscope audit`` runs all)
AUDIT_CAP = 2000


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
    tables: list[Table] = field(default_factory=list)
    #: how calls flow through the cascade (:func:`callscope.report.flow.call_flow`)
    flow: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: what each mode's revisions lost and gained (:func:`agg.revision_tradeoff`)
    revisions: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: calls made against calls expected per category
    #: (:func:`callscope.report.answers.calls_by_category`; empty for a run scored before
    #: answers were the unit)
    by_category: pd.DataFrame = field(default_factory=pd.DataFrame)


@dataclass
class RunInfo:
    """What the first screen says about the run beside its figure: the stage-3 grounding
    mode per model (from ``config:<model>``) and the audit headline per mode, with a note
    when the audit ran on a sample."""

    groundings: dict[str, str] = field(default_factory=dict)
    audit_lines: list[str] = field(default_factory=list)
    audit_note: str = ""
    #: what :func:`~callscope.report.rederive.rederived_line` says ("": nothing re-derived)
    rederived: str = ""


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
    answers, data.by_category = answer_tables(outcomes)
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
        *answers,  # issue 28: answers, the stage mix over calls, calls per category
        overcorrection_table(oc),
        revision_table(data.revisions),
        *_paired_tables(outcomes, n_boot, seed),
        errors_table(err),
    ]
    return data


def _paired_tables(outcomes: list[dict[str, Any]], n_boot: int, seed: int) -> list[Table]:
    """The paired mode differences (structured vs direct and binary; gated vs structured),
    one table, when the run holds those modes."""
    modes = {o["mode"] for o in outcomes}
    pairs = [("direct", "structured"), ("binary", "structured"), ("structured", "gated")]
    pairs += [("gated", m) for m in sorted(modes) if m.startswith("gated-")]
    frames = [
        paired_modes(outcomes, a, b, n_boot, seed) for a, b in pairs if a in modes and b in modes
    ]
    frames = [f for f in frames if not f.empty]
    return [paired_table(pd.concat(frames, ignore_index=True))] if frames else []


# --------------------------------------------------------------------------- HTML


def _asset(name: str) -> str:
    return resources.files("callscope.report").joinpath(name).read_text(encoding="utf-8")


_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


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
    designs = list(audit_designs().values())
    # ids only: one case decoded at a time; a case with a gold call or a gold answer
    gold = [c.id for c in store.iter_cases() if any(d.reads(c) for d in designs)]
    if not gold:
        return info
    keep = set(gold)
    if len(gold) > cap:
        info.audit_note = (
            f"audited a seeded sample of {cap:,} of the run's {len(gold):,} gold cases; "
            "`callscope audit` runs them all"
        )
        keep = set(random.Random(0).sample(gold, cap))  # the sample of the cases themselves
    cases = [c for c in store.iter_cases() if c.id in keep]
    if len(gold) > cap:  # the sample in id order, as `callscope audit --n` takes it
        cases.sort(key=lambda c: c.id)
    for mode in sorted(set(info.groundings.values())) or [DEFAULT_GROUNDING]:
        for d in designs:
            if any(d.reads(c) for c in cases):
                info.audit_lines.append(run_audit(cases, d, grounding=mode).headline())
    return info


def overview_html(info: RunInfo, figure: str) -> str:
    """The first screen: grounding line, re-derived outcomes, audit headline(s) and the one
    figure (HTML)."""
    parts = [
        '<section id="overview">',
        f'<p id="grounding-line" class="run-line">{esc(grounding_line(info.groundings))}</p>',
    ]
    if info.rederived:
        parts.append(f'<p id="rederived-line" class="run-line">{esc(info.rederived)}</p>')
    if info.audit_lines:
        lines = "<br>".join(esc(line) for line in info.audit_lines)
        note = f" ({esc(info.audit_note)})" if info.audit_note else ""
        parts.append(
            '<p id="audit-line" class="run-line">How far this diagnosis can be trusted on '
            f"these cases (gold calls and copies made wrong on purpose): {lines}{note}</p>"
        )
    parts += [figure, "</section>"]
    return "\n".join(parts)


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
        body.extend(saag_sections(data.tables, rest))
        if cases.get("note"):  # the case browser holds a bounded share of a large run
            body.insert(-4, f'<p id="cases-note" class="note">{esc(cases["note"])}</p>')
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
        f"<title>{esc(title)}</title>",
        f"<style>{_asset('report.css')}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<nav>{''.join(nav)}</nav>",
        *body,
        *blocks,
        f"<script>{js}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


#: how many re-derived outcomes the report names
NAMED = 5


def rederived_line(outcomes: Sequence[tuple[str, str, str]], versions: set[int]) -> str:
    """What the report says about the re-derived outcomes ``(model, case_id, mode)``."""
    if not outcomes:
        return ""
    named = ", ".join("/".join(o) for o in outcomes[:NAMED])
    more = f" and {len(outcomes) - NAMED:,} more" if len(outcomes) > NAMED else ""
    old = ", ".join(str(v) for v in sorted(versions))
    return (
        f"{len(outcomes):,} outcome(s) re-derived: scored with cascade version {old}, before an "
        "answer without a readable call was judged from its text (garbage and call-shaped "
        "text are broken, stage 1); their answers without a readable call were scored again "
        f"from the stored replies: {named}{more}."
    )


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
    outcomes = load_facts(run_dir)  # compact: memory bounded by the page, not the store
    store = RunStore(run_dir)
    try:
        # the classifier preset the calibration was run with (recorded by `calibrate`)
        conv: dict[str, Any] | None = conversation_report(
            store, preset(store.get_meta("classifier_preset") or "default")
        )
        info = run_info(store, sorted({str(o["model"]) for o in outcomes}))
        rederived = [(f.model, f.case_id, f.mode) for f in outcomes if f.rederived]
        versions = {v for m, _, _ in rederived if (v := store.scored_with(m)) is not None}
        info.rederived = rederived_line(rederived, versions)
        tokens = usage_table(store.token_usage())  # issue 31: sent / computed / generated
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
        data = compute_report(outcomes, max_attempts_by_model(run_dir, outcomes), n_boot, seed)
        if tokens.rows:
            data.tables.append(tokens)
        for t in data.tables:
            write_tables(t, out / "tables")
        figures = make_figures(
            data.per_scale,
            data.cumulative,
            data.failures,
            data.overcorrection,
            out / "figures",
            flow=data.flow,
            revisions=data.revisions,
        )
        if not data.by_category.empty:  # a run scored answer by answer (issue 28)
            figures.append(calls_by_category_plot(data.by_category, out / "figures"))
        cases = case_data(run_dir, outcomes)
    elif tokens.rows:
        write_tables(tokens, out / "tables")
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
    return _write_html(out, page)


def build_diagnostic_page(
    out_dir: str | Path,
    title: str,
    tables: list[tuple[str, str, Table]],
    notes: list[str] = (),
    *,
    warnings: list[str] = (),
    lists: list[tuple[str, list[str]]] = (),
) -> Path:
    """``report.html`` for a diagnostic computed from another tool's results (BFCL's result
    trees, τ²-bench runs): the calibrate report's tables and styling, without conversations.
    ``tables`` are ``(title, caption, Table)`` (each keeps its ``row_styles``: bound
    violations are highlighted); ``warnings`` are shown first,
    highlighted; ``notes`` as text; ``lists`` as ``(heading, items)`` lists after the tables.
    The title is shown once (``<h1>``)."""

    parts = ['<section id="diagnostic">']
    parts.extend(f'<p class="note warn">{esc(w)}</p>' for w in warnings)
    for i, (name, caption, table) in enumerate(tables):
        t = Table(
            table.columns, table.rows, title=name, caption=caption, row_styles=table.row_styles
        )
        parts.append(t.to_html(f"ext-{i}", "report diag"))
    parts.extend(f'<p class="note">{esc(n)}</p>' for n in notes)
    for heading, items in lists:
        parts.append(f"<h3>{esc(heading)}</h3><ul>")
        parts.extend(f"<li>{esc(item)}</li>" for item in items)
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
                f"<title>{esc(title)}</title>",
                f"<style>{_asset('report.css')}</style></head><body>",
                f"<h1>{esc(title)}</h1>",
                *parts,
                "</body></html>",
            ]
        )
        + "\n"
    )
    return _write_html(Path(out_dir), page)


def _write_html(out: Path, page: str, name: str = REPORT_FILE) -> Path:
    """Write ``page`` as ``out/report.html`` (or ``out/<name>``: the leaderboard's case
    pages), the one writer of every page: atomically (a
    temporary file next to it, then renamed; removed on any error, so a failed write leaves
    neither a partial page nor a ``.tmp``), as UTF-8 with any character UTF-8 cannot hold (a
    lone surrogate from a model's output) written as its visible escape (``\\udfff``), and
    every control character too (``\\x1b``: :func:`~callscope.core.text.escape_controls`; a
    carriage return as ``\\x0d``: the page's own lines end in ``\\n``, so one is data)."""
    data = escape_controls(page, keep_cr=False).encode("utf-8", "backslashreplace")
    return write_bytes_safely(out / name, data)  # atomic, never through a symbolic link
