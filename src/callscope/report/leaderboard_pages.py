"""The BFCL single-turn leaderboard's figure, case pages and report page; the tables are
:mod:`callscope.report.leaderboard`'s."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from callscope.core.jsonl import dumps_safe
from callscope.core.table import Table
from callscope.records import FAILING_STAGES
from callscope.report.html import _write_html, esc, write_page
from callscope.report.leaderboard import (
    _NO_CALL_CATS,
    CASES_DIR,
    FORMATS,
    _ranked,
    undecodable_note,
)
from callscope.runs.leaderboard_tree import LeaderboardRun

# --------------------------------------------------------------------------- the figure


def leaderboard_figure(run: LeaderboardRun, path: Path) -> Path:
    """Models ranked by BFCL accuracy: BFCL accuracy and the cascade's pass rate (left), the
    stage mix over answers (middle), the unstated-value rate and VHR (right)."""
    from matplotlib.figure import Figure  # lazy: matplotlib only for the figure

    from callscope.report.png import save_png, short_label  # lazy: matplotlib

    ranked = _ranked(run)
    labels = [short_label(r.model, 36) for r, _ in ranked]
    y = np.arange(len(ranked))
    fig = Figure(figsize=(13, 1.2 + 0.24 * len(ranked)))
    ax1, ax2, ax3 = fig.subplots(1, 3, sharey=True, gridspec_kw={"width_ratios": [3, 3, 2]})
    acc = [k["bfcl_ok"].mean() if len(k) else 0 for _, k in ranked]
    passed = [k["passed"].mean() if len(k) else 0 for _, k in ranked]
    ax1.barh(y, acc, color="#4c72b0", label="BFCL accuracy")
    ax1.plot(passed, y, "o", color="#dd8452", markersize=4, label="cascade pass")
    ax1.set_xlim(0, 1)
    ax1.set_yticks(y, labels, fontsize=7)
    ax1.invert_yaxis()
    ax1.legend(fontsize=7, loc="lower right")
    ax1.set_title("BFCL accuracy, cascade pass", fontsize=9)
    left = np.zeros(len(ranked))
    colours = {
        **{f"stage {s.number}": s.muted for s in FAILING_STAGES},
        "no call, call expected": "#6c6c6c",
        "no call, no-call case": "#c8c8c8",
    }
    for label, colour in colours.items():
        share = []
        for _, k in ranked:
            no_call = k["no_call"] > 0
            relevance = np.isin(k["cat"], _NO_CALL_CATS)
            if label.startswith("no call"):
                want = relevance if label.endswith("no-call case") else ~relevance
                share.append((no_call & want).mean() if len(k) else 0)
            else:
                stage = int(label[-1])
                share.append(((k["stage"] == stage) & ~no_call).mean() if len(k) else 0)
        ax2.barh(y, share, left=left, color=colour, label=label)
        left += np.array(share)
    ax2.set_xlim(0, 1)
    ax2.legend(fontsize=7, loc="lower right")
    ax2.set_title("first failing stage over answers", fontsize=9)
    unstated = [k["unstated"].mean() if len(k) else 0 for _, k in ranked]
    vhr = [k["vhr_sum"].sum() / max(1, k["vhr_n"].sum()) for _, k in ranked]
    ax3.barh(y, unstated, color="#937860", label="unstated value")
    ax3.plot(vhr, y, "d", color="#000000", markersize=3, label="VHR")
    ax3.legend(fontsize=7, loc="lower right")
    ax3.set_title("unstated-value answers, VHR", fontsize=9)
    for ax in (ax1, ax2, ax3):
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return save_png(fig, path)


# --------------------------------------------------------------------------- case browser

_BROWSER_SCRIPT = """
const data = JSON.parse(document.getElementById('answers').textContent);
const leftOut = JSON.parse(document.getElementById('left-out').textContent);
const pick = document.getElementById('pick'), view = document.getElementById('view');
const ids = data.map(a => a.id);
ids.forEach((id, i) => { const o = document.createElement('option'); o.value = i;
  o.textContent = id + '  ' + (leftOut[id] ? 'left out' : data[i].bfcl + ' / stage '
    + data[i].stage); pick.appendChild(o); });
function show(i) {
  const a = data[i]; view.textContent = '';
  const add = (label, text) => { const h = document.createElement('h3'); h.textContent = label;
    const p = document.createElement('pre'); p.textContent = text; view.append(h, p); };
  add('case', a.id);
  if (leftOut[a.id]) add('left out of the leaderboard', leftOut[a.id]);
  add('BFCL (2024)', a.bfcl + (a.bfcl_error ? '  ' + a.bfcl_error : ''));
  add('BFCL checker now', String(a.checker) + (a.checker_error ? '  ' + a.checker_error : ''));
  add('answer as stored', a.raw);
  add('decoded calls', a.calls.length ? JSON.stringify(a.calls, null, 1) : (a.no_call || 'none')
      + (a.parse_error ? '  (' + a.parse_error + ')' : ''));
  add('cascade', (a.stage === 0 ? 'passed all three stages' : 'stage ' + a.stage + ': '
      + a.kinds.map((k, j) => 'call ' + (j + 1) + ' ' + (k.length ? k.join(', ') : 'passed'))
        .join('; ')) + '  solved: ' + a.solved);
}
pick.addEventListener('change', () => show(pick.value));
const want = location.hash.slice(1), at = ids.indexOf(want);
pick.value = at >= 0 ? at : 0; if (data.length) show(pick.value);
"""


#: the case page's left-out cases (case id -> why), filled by :func:`mark_left_out` once the
#: run knows them (they need every model's answers; a page is written as its model is done)
_LEFT_OUT_EMPTY = "<script type='application/json' id='left-out'>{}</script>"

#: why a case is left out, by :func:`callscope.runs.leaderboard.drifted_cases`' key
LEFT_OUT_REASONS: dict[str, str] = {
    "function_drift": "function drift: models whose answer BFCL accepted in 2024 call a "
    "function the installed case does not have, so the case's question changed since",
    "gold_drift": "gold drift: the installed checker reverses BFCL's 2024 verdict on the same "
    "answers of several models, so the case's gold changed since",
    "known_v2": "drift known from the whole 2024-08 leaderboard (too few models in this run "
    "to see it from their own answers)",
}


def browser_file(model: str) -> str:
    """The case page's file name of a model (its folder name is already a file name)."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model)
    return f"{safe}.html"


def write_case_page(model: str, records: list[dict[str, Any]], folder: Path) -> Path:
    """One model's case browser: a page holding every answer (raw text cut to 4,000
    characters), its decoding, BFCL's verdicts and the cascade's; ``#<case id>`` opens one.
    The data is embedded as JSON (``<`` escaped) and rendered with ``textContent``."""
    payload = dumps_safe(records).replace("<", "\\u003c")
    body = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        f"<title>{esc(model)}: answers</title>"
        "<style>body{font-family:sans-serif;margin:1em}pre{white-space:pre-wrap;"
        "background:#f6f6f6;padding:.4em}h3{margin:.6em 0 .2em;font-size:1em}</style>"
        f"</head><body><h1>{esc(model)}</h1><p><a href='../report.html'>leaderboard</a></p>"
        "<select id='pick'></select><div id='view'></div>"
        f"<script type='application/json' id='answers'>{payload}</script>"
        f"{_LEFT_OUT_EMPTY}"
        f"<script>{_BROWSER_SCRIPT}</script></body></html>\n"
    )
    return _write_html(Path(folder), body, name=browser_file(model))


def mark_left_out(folder: Path, models: Sequence[str], left_out: dict[str, str]) -> int:
    """Write ``left_out`` (case id -> why it is left out of every rate) into the case page of
    each of ``models`` in ``folder``, where the page shows it beside the case's answer (a case
    left out read "stage 0 [[]]" and no reason). Returns the pages written."""
    payload = dumps_safe(left_out).replace("<", "\\u003c")
    marked = _LEFT_OUT_EMPTY.replace("{}", payload, 1)
    done = 0
    for model in models:
        page = Path(folder) / browser_file(model)
        if page.is_file() and not page.is_symlink():
            text = page.read_text(encoding="utf-8")
            if _LEFT_OUT_EMPTY in text:
                page.write_text(text.replace(_LEFT_OUT_EMPTY, marked, 1), encoding="utf-8")
                done += 1
    return done


def _figure_html(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<p><img alt="leaderboard figure" src="data:image/png;base64,{data}"></p>'


def write_leaderboard_report(
    run: LeaderboardRun, out: Path, tables: Sequence[Table], notes: Sequence[str] = ()
) -> dict[str, Any]:
    """The tables (md / csv / html), the figure and ``report.html`` (the figure, every table,
    the case browser's links) in ``out``; returns ``{"tables", "figure", "page"}`` paths."""
    from callscope.core.table_formats import write_tables  # lazy: the format registry

    out.mkdir(parents=True, exist_ok=True)
    written = [p for t in tables for p in write_tables(t, out, FORMATS)]
    figure = leaderboard_figure(run, out / "leaderboard.png")
    warning = undecodable_note(run)
    parts = [f'<p class="note"><strong>{esc(warning)}</strong></p>'] if warning else []
    parts.append(_figure_html(figure))
    parts.extend(f'<p class="note">{esc(n)}</p>' for n in notes)
    for i, t in enumerate(tables):
        parts.append(t.to_html(f"lb-{i}", "report diag"))
    links = "".join(
        f'<li><a href="{CASES_DIR}/{esc(browser_file(r.model))}">{esc(r.model)}</a></li>'
        for r in run.results
    )
    if (out / CASES_DIR).is_dir():
        parts.append(f"<h2>Case browser</h2><ul>{links}</ul>")
    page = write_page(out, "BFCL leaderboard through callscope", parts)
    facts = {
        "models": [r.model for r in run.results],
        "undecodable": [r.model for r in run.results if r.undecodable],
        "decoders": {
            r.model: {"decoder": r.decoder, "by": r.choice.by, "reads": dict(r.choice.reads)}
            for r in run.results
            if r.choice is not None
        },
        "bfcl_version": run.bfcl_version,
        "seconds": round(run.seconds, 2),
        "jobs": run.jobs,
        "left_out": {k: [run.case_ids[i] for i in sorted(v)] for k, v in run.drift.items()},
        "per_model_seconds": {
            r.model: {k: round(v, 3) for k, v in r.seconds.items()} for r in run.results
        },
    }
    (out / "leaderboard.json").write_text(dumps_safe(facts) + "\n", encoding="utf-8")
    return {"tables": written, "figure": figure, "page": page}


__all__ = [
    "LEFT_OUT_REASONS",
    "browser_file",
    "leaderboard_figure",
    "mark_left_out",
    "write_case_page",
    "write_leaderboard_report",
]
