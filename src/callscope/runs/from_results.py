"""`callscope calibrate --from-bfcl` / `--from-tau2`: the action-class diagnostic (GAR beside
Acc, calibration paper section 3) of another tool's own results, without running a model.

Each pipeline reads the results, diagnoses them, writes its tables (``.md`` and ``.json``) to
the output directory and returns what it computed, with the content of its HTML page as a
:class:`DiagnosticPage` (rendered by :func:`callscope.report.html.build_diagnostic_page`,
which lives in the report layer above this one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from callscope.benchmarks.bfcl.results import BfclRun, load_bfcl_run
from callscope.calibration.classify import DEFAULT, ClassifierConfig
from callscope.calibration.diagnostics import Diagnostics, compute_diagnostics, to_markdown
from callscope.calibration.tau2 import (
    Tau2Config,
    Tau2Diagnostics,
    tau2_diagnostics,
)
from callscope.calibration.tau2_tables import domain_markdown, gar_markdown
from callscope.models.base import ChatModel

BFCL_STEM = "calibration-from-bfcl"
TAU2_STEM = "tau2-diagnostics"


@dataclass
class DiagnosticPage:
    """The content of a diagnostic ``report.html``: a title, ``(title, caption, Markdown
    table)`` sections and notes (the arguments of ``build_diagnostic_page``)."""

    title: str
    tables: list[tuple[str, str, str]]
    notes: list[str] = field(default_factory=list)


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
    """The diagnostic of a BFCL result tree (from ``bfcl generate``; Acc from the ``bfcl
    evaluate`` score tree when given, else BFCL's verdicts are unknown) for ``model`` (the
    model folder; the only one when omitted). Writes ``calibration-from-bfcl.md`` / ``.json``
    under ``out``."""
    out = Path(out)
    run = load_bfcl_run(results, scores, model=model)
    diag = compute_diagnostics(run.records, config, header_acc=run.header_acc())
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / f"{BFCL_STEM}.md", out / f"{BFCL_STEM}.json"
    md.write_text(to_markdown(diag.rows), encoding="utf-8")
    js.write_text(json.dumps(diag.to_dict(), indent=2, default=str), encoding="utf-8")
    page = DiagnosticPage(
        f"Action-class diagnostic of BFCL results: {run.model}",
        [
            (
                "GAR and Acc per category",
                "Emissions read from BFCL's result files; Acc from its score files. Wilson 95% intervals; Acc > GAR flags grader masking.",
                to_markdown(diag.rows),
            ),
        ],
        notes=list(run.problems),
    )
    return BfclCalibration(run=run, diagnostics=diag, written=[md, js], page=page)


def calibrate_from_tau2(
    results: str | Path,
    out: str | Path,
    *,
    tasks: str | Path | None = None,
    judge: ChatModel | None = None,
    config: ClassifierConfig = DEFAULT,
) -> Tau2Calibration:
    """The diagnostic of a τ²-bench ``results.json`` or run directory (``tasks``: a tasks
    file when the results lack them; ``judge``: a model also asked about CONFIRM, its
    agreement with the rule reported). Writes ``tau2-diagnostics.md`` / ``.json`` under
    ``out``. Raises ``FileNotFoundError`` / ``Tau2FormatError`` (before writing anything)
    when ``results`` holds no τ² results."""
    out = Path(out)
    result = tau2_diagnostics(results, tasks, judge=judge, config=Tau2Config(classifier=config))
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / f"{TAU2_STEM}.md", out / f"{TAU2_STEM}.json"
    js.write_text(
        json.dumps(result.to_dict(include_details=True), indent=2, default=str), encoding="utf-8"
    )
    md.write_text(result.to_markdown(), encoding="utf-8")
    page = DiagnosticPage(
        f"τ²-bench action-class diagnostic: {Path(results).name}",
        [
            (
                "GAR and Acc per domain and gold class",
                "τ² GAR rules: REFUSE = no write tool called; ASK = an ask was detected; TOOL_CALL = no failed action check. Acc = reward 1. Wilson 95% intervals.",
                gar_markdown(result.rows),
            ),
            (
                "Per domain: SAAG stage mix of tool calls and CONFIRM",
                "Every agent tool call through the SAAG cascade; CONFIRM: did the user confirm before each write.",
                domain_markdown(result.domain_rows),
            ),
        ],
    )
    return Tau2Calibration(diagnostics=result, written=[md, js], page=page)
