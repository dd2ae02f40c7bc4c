"""`callscope calibrate from-bfcl` / `from-tau2`: the action-class diagnostic (GAR beside
Acc, calibration paper section 3) of another tool's own results, without running a model.

:func:`calibrate_from_results` drives any registered results source by name
(:data:`callscope.benchmarks.results_source.RESULTS_SOURCES`): the source reads its files into
records, the diagnostic its ``diagnostic`` names (:data:`RESULTS_DIAGNOSTICS`: ``cases`` for
:class:`~callscope.records.CaseRecord`\\ s, ``tau2`` for τ²-bench simulations, ``answers`` for
BFCL's single-turn answers) computes, and
the result is written as ``<stem>.json`` under the output directory.
:func:`calibrate_from_bfcl` and :func:`calibrate_from_tau2` are the two sources with their
options; BFCL's also writes its ``.md`` and gives the content of its HTML page as a
:class:`DiagnosticPage` (rendered by :func:`callscope.report.html.build_diagnostic_page`, which
lives in the report layer above this one); τ²'s tables, Markdown and page are built by
:mod:`callscope.report.tau2_tables` from the diagnostics returned.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from callscope.benchmarks.bfcl.results import BfclRun
from callscope.benchmarks.results_source import RESULTS_SOURCES, CaseResults
from callscope.benchmarks.tau2.source import TasksArg, Tau2Results, read_tau2_results
from callscope.calibration.classify import DEFAULT, ClassifierConfig
from callscope.calibration.diagnostics import (
    Diagnostics,
    compute_diagnostics,
    diagnostics_table,
)
from callscope.calibration.tau2 import DEFAULT_TAU2, Tau2Config, Tau2Diagnostics, diagnose_tau2
from callscope.core.registry import Registry
from callscope.core.table import Table
from callscope.core.table_formats import DocumentPart, write_document
from callscope.models.base import ChatModel
from callscope.runs.confirm_judge import model_confirm_judge
from callscope.types import TOOL_CALL

BFCL_STEM = "calibration-from-bfcl"
TAU2_STEM = "tau2-diagnostics"


@dataclass
class DiagnosticPage:
    """The content of a diagnostic ``report.html``: a title, ``(title, caption, Table)``
    sections, notes, warnings (shown first) and ``(heading, items)`` lists (the arguments of
    ``build_diagnostic_page``)."""

    title: str
    tables: list[tuple[str, str, Table]]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lists: list[tuple[str, list[str]]] = field(default_factory=list)


def capability_text(cap: Mapping[str, Any]) -> str | None:
    """The capability-check line when it fails (``None`` when every class is emitted often
    enough)."""
    below = cap.get("below") or []
    if not below:
        return None
    return (
        f"Capability check failed: emitted fewer than {cap.get('t_cap')} times: "
        f"{', '.join(map(str, below))} (GAR and bound flags of these classes say little)."
    )


# --------------------------------------------------------------------------- any source


@dataclass(frozen=True)
class ResultsDiagnostic:
    """How one kind of read results is diagnosed and saved: ``diagnose(read, source,
    results, **options)`` computes the diagnostics (``source``: the results source, ``results``:
    the path read, for messages); ``to_json(read, diagnostics)`` is what ``<stem>.json``
    holds; ``stem`` names the files (``{source}``: the source's name)."""

    name: str
    stem: str
    diagnose: Callable[..., Any]
    to_json: Callable[[Any, Any], dict[str, Any]]


@dataclass
class ResultsCalibration:
    """Result of :func:`calibrate_from_results`: the source's name, what it read, the
    diagnostics, and the files written (``<stem>.json``)."""

    source: str
    read: Any
    diagnostics: Any
    written: list[Path]


def calibrate_from_results(
    source: str,
    results: str | Path,
    out: str | Path,
    *,
    read_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> ResultsCalibration:
    """Read ``results`` with the results source called ``source`` (its ``read_options``),
    diagnose what it read with the source's diagnostic (``options``), and write the result
    as ``<stem>.json`` under ``out``. Raises :class:`~callscope.errors.ConfigError` for an
    unknown source, and what the source and diagnostic raise (before writing anything) when
    nothing usable was read."""
    src = RESULTS_SOURCES[source]
    diagnostic = RESULTS_DIAGNOSTICS[src.diagnostic]
    read = src.read(Path(results), **dict(read_options or {}))
    diag = diagnostic.diagnose(read, src, results, **options)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    js = out / f"{diagnostic.stem.format(source=src.name)}.json"
    js.write_text(json.dumps(diagnostic.to_json(read, diag), indent=2, default=str), "utf-8")
    return ResultsCalibration(source=src.name, read=read, diagnostics=diag, written=[js])


def diagnose_cases(
    read: CaseResults,
    source: Any,
    results: str | Path,
    *,
    config: ClassifierConfig = DEFAULT,
) -> Diagnostics:
    """GAR beside Acc of a ``cases`` source's records, classified by ``config``, with the
    benchmark's own Acc counts where its files state them. Raises ``FileNotFoundError`` with
    what was looked for when no case was read."""
    if not read.records:
        reason = read.problems[0] if read.problems else read.found()
        raise FileNotFoundError(f"no {source.title} read from {results}: {reason}")
    return compute_diagnostics(read.records, config, header_acc=read.header_acc())


def cases_json(read: CaseResults, diag: Diagnostics) -> dict[str, Any]:
    """The diagnostics and, under ``source``, what was read, the emissions without a class
    and the problems."""
    data = diag.to_dict()
    data["source"] = {
        **read.describe(),
        "empty_emissions": sum(r["n_empty"] for r in diag.rows),
        "problems": read.problems,
    }
    return data


def diagnose_tau2_results(
    read: Tau2Results,
    source: Any,
    results: str | Path,
    *,
    judge: ChatModel | None = None,
    config: Tau2Config | ClassifierConfig = DEFAULT_TAU2,
) -> Tau2Diagnostics:
    """:func:`~callscope.calibration.tau2.diagnose_tau2` of τ² runs, ``judge`` (a model)
    asked about CONFIRM through :func:`~callscope.runs.confirm_judge.model_confirm_judge`."""
    settings = Tau2Config(classifier=config) if isinstance(config, ClassifierConfig) else config
    confirm_judge = model_confirm_judge(judge, settings.confirm) if judge is not None else None
    return diagnose_tau2(read, judge=confirm_judge, config=settings)


#: The diagnostics a results source can name (its ``diagnostic``); another package adds one
#: with an entry point in the group ``callscope.results_diagnostics`` whose object is a
#: :class:`ResultsDiagnostic`.
RESULTS_DIAGNOSTICS: Registry[ResultsDiagnostic] = Registry(
    "results diagnostic", entry_point_group="callscope.results_diagnostics"
)
RESULTS_DIAGNOSTICS.register(
    "cases", ResultsDiagnostic("cases", "calibration-from-{source}", diagnose_cases, cases_json)
)
RESULTS_DIAGNOSTICS.register(
    "tau2",
    ResultsDiagnostic(
        "tau2",
        TAU2_STEM,
        diagnose_tau2_results,
        lambda _read, diag: diag.to_dict(include_details=True),  # every simulation and call
    ),
)


def diagnose_answers(read: Any, source: Any, results: Any, **options: Any) -> list[Any]:
    """The ``answers`` diagnostic (BFCL single-turn answers, ``bfcl-single``): every model
    read diagnosed by :func:`callscope.runs.leaderboard.diagnose_model` (``checker=``,
    ``grounding=`` as it takes them); the whole leaderboard report is ``calibrate
    leaderboard``'s."""
    from callscope.runs.leaderboard import (  # lazy: numpy + bfcl-eval data
        CaseTable,
        Vocabulary,
        diagnose_model,
    )

    table, errors = CaseTable(), Vocabulary()
    return [diagnose_model(m, table, errors, **options) for m in read]


def answers_json(_read: Any, diag: list[Any]) -> dict[str, Any]:
    """Per model: answers, BFCL accepted, installed checker accepted, cascade passed,
    callscope solved, unstated-value answers."""
    return {
        "models": [
            {
                "model": r.model,
                "decoder": r.decoder,
                "answers": len(r.rows),
                "bfcl_accepted": int(r.rows["bfcl_ok"].sum()),
                "checker_accepted": int((r.rows["checker"] == 1).sum()),
                "cascade_passed": int(r.rows["passed"].sum()),
                "solved": int(r.rows["solved"].sum()),
                "unstated": int(r.rows["unstated"].sum()),
            }
            for r in diag
        ]
    }


RESULTS_DIAGNOSTICS.register(
    "answers",
    ResultsDiagnostic("answers", "answers-from-{source}", diagnose_answers, answers_json),
)

# --------------------------------------------------------------------------- BFCL


@dataclass
class BfclCalibration:
    """Result of :func:`calibrate_from_bfcl`: what was read, its diagnostics, the files
    written (``.md`` first) and the page to render."""

    run: BfclRun
    diagnostics: Diagnostics
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
    done = calibrate_from_results(
        "bfcl", results, out, read_options={"scores": scores, "model": model}, config=config
    )
    run: BfclRun = done.read
    diag: Diagnostics = done.diagnostics
    warnings, notes = bfcl_warnings(diag), bfcl_notes(run, diag)
    md = write_document(bfcl_document(run, diag), Path(out) / f"{BFCL_STEM}.md")
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
    return BfclCalibration(run=run, diagnostics=diag, written=[md, *done.written], page=page)


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


def bfcl_document(run: BfclRun, diag: Diagnostics) -> list[DocumentPart]:
    """The ``.md`` report (Markdown text and the table, for
    :func:`~callscope.core.table_formats.write_document`): warnings first, then what was
    read, the table and the problems."""
    texts = [f"**{w}**" for w in bfcl_warnings(diag)]
    texts.append(f"# BFCL results of {run.model}")
    texts.extend(bfcl_notes(run, diag))
    after = ["Problems:\n\n" + "\n".join(f"- {p}" for p in run.problems)] if run.problems else []
    return [
        "\n\n".join(texts) + "\n\n",
        diagnostics_table(diag.rows),
        "\n\n".join(["", *after]) + "\n",
    ]


# --------------------------------------------------------------------------- τ²-bench


@dataclass
class Tau2Calibration:
    """Result of :func:`calibrate_from_tau2`: the τ² diagnostics and the file written
    (``tau2-diagnostics.json``); its tables, Markdown and page:
    :mod:`callscope.report.tau2_tables`."""

    diagnostics: Tau2Diagnostics
    written: list[Path]


def tau2_diagnostics(
    run_dir: str | Path | Sequence[str | Path],
    tasks: TasksArg = None,
    *,
    judge: ChatModel | None = None,
    config: Tau2Config | ClassifierConfig = DEFAULT_TAU2,
) -> Tau2Diagnostics:
    """The τ² action-class diagnostic of the run(s) at ``run_dir`` (one path or several):
    :func:`~callscope.benchmarks.tau2.source.read_tau2_results` with ``tasks`` (a tasks file
    or task objects), then :func:`~callscope.calibration.tau2.diagnose_tau2` with ``judge``
    (a model also asked about every write call, its agreement with the rule reported) and
    ``config`` (a :class:`~callscope.calibration.tau2.Tau2Config` or a bare classifier
    configuration). Raises ``FileNotFoundError`` /
    :class:`~callscope.benchmarks.tau2.reader.Tau2FormatError` when a path holds no τ²
    results or the tasks belong to no run."""
    read = read_tau2_results(run_dir, tasks)
    return diagnose_tau2_results(read, None, run_dir, judge=judge, config=config)


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
    ``tau2-diagnostics.json`` under ``out``. Raises ``FileNotFoundError`` /
    ``Tau2FormatError`` (before writing anything) when ``results`` holds no τ² results or
    ``tasks`` is of another domain."""
    tau2_config = replace(settings or Tau2Config(), classifier=config)
    done = calibrate_from_results(
        "tau2", results, out, read_options={"tasks": tasks}, judge=judge, config=tau2_config
    )
    return Tau2Calibration(diagnostics=done.diagnostics, written=done.written)
