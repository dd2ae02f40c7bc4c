"""Panels from result files: the calibration panel of every model found in BFCL result trees
(``callscope calibrate --from-bfcl DIR`` when DIR holds several models), without running
anything.

Each model is the folder that holds its result files (:func:`find_bfcl_files`); its label is
that folder's path below BFCL's ``result`` / ``score`` top folder (``airev-ai/AIREV-Agent-0.8B``,
``glyphh-ada-1.1``), and its score files are the ones whose folder has the same label (under
``scores`` when given, else under the results path), so that one model's scores are never read
for another. Each model is read with :func:`load_bfcl_run` and diagnosed with
:func:`compute_diagnostics`, as a single-model ``--from-bfcl`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from callscope.benchmarks.bfcl.results import (
    TREE_DIRS,
    BfclFile,
    BfclRun,
    find_bfcl_files,
    load_bfcl_run,
)
from callscope.calibration.classify import DEFAULT, ClassifierConfig
from callscope.calibration.diagnostics import Diagnostics, compute_diagnostics
from callscope.calibration.panel import Panel, build_panel


def tree_label(model_dir: Path) -> str:
    """A model folder's name below the last ``result``/``score`` folder of its path
    (``.../airev/result/airev-ai/AIREV-Agent-0.8B`` -> ``airev-ai/AIREV-Agent-0.8B``), else
    its own name."""
    parts = model_dir.parts
    tops = [i for i, p in enumerate(parts) if p in TREE_DIRS]
    if tops and tops[-1] < len(parts) - 1:
        return "/".join(parts[tops[-1] + 1 :])
    return model_dir.name


def _key(label: str) -> str:
    return label.replace("/", "_")


def bfcl_models(results: str | Path) -> dict[str, Path]:
    """``{label: model folder}`` of every model with result files under ``results``, sorted by
    label (:func:`tree_label`)."""
    found: dict[str, Path] = {}
    for f in find_bfcl_files(results, "result"):
        found.setdefault(tree_label(f.model_dir), f.model_dir)
    return dict(sorted(found.items()))


@dataclass
class BfclPanel:
    """Result of :func:`panel_from_bfcl`: the runs read per model label, their diagnostics and
    the panel."""

    runs: dict[str, BfclRun]
    diagnostics: dict[str, Diagnostics]
    panel: Panel
    problems: list[str] = field(default_factory=list)


def panel_from_bfcl(
    results: str | Path,
    scores: str | Path | None = None,
    *,
    config: ClassifierConfig = DEFAULT,
    models: list[str] | None = None,
) -> BfclPanel:
    """The panel of every model under ``results`` (or those of ``models``, by label); see the
    module docstring. Raises ``FileNotFoundError`` when no result file is found."""
    found = bfcl_models(results)
    if not found:
        raise FileNotFoundError(f"no BFCL multi-turn result files under {results}")
    if models is not None:
        missing = [m for m in models if _key(m) not in {_key(k) for k in found}]
        if missing:
            raise FileNotFoundError(
                f"no result files for {', '.join(missing)} under {results} "
                f"(found: {', '.join(found)})"
            )
        found = {k: v for k, v in found.items() if _key(k) in {_key(m) for m in models}}
    score_files: list[BfclFile] = find_bfcl_files(
        scores if scores is not None else results, "score"
    )
    score_dirs: dict[str, Path] = {}
    for f in score_files:
        score_dirs.setdefault(_key(tree_label(f.model_dir)), f.model_dir)
    runs: dict[str, BfclRun] = {}
    diags: dict[str, Diagnostics] = {}
    problems: list[str] = []
    for label, model_dir in found.items():
        score_dir = score_dirs.get(_key(label))
        # without a score folder of its own, scores are looked for in the model's folder
        # only: another model's score files are never in reach
        run = load_bfcl_run(model_dir, score_dir)
        run.model = label
        runs[label] = run
        problems.extend(f"{label}: {p}" for p in run.problems)
        if run.records:
            diags[label] = compute_diagnostics(run.records, config, header_acc=run.header_acc())
    panel = build_panel(diags)
    panel.notes.append(
        "Read " + "; ".join(f"{label}: {run.found()}" for label, run in runs.items()) + "."
    )
    panel.notes.append(f"Classifier: {config.name}.")
    return BfclPanel(runs=runs, diagnostics=diags, panel=panel, problems=problems)
