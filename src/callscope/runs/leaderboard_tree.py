"""callscope over a whole BFCL single-turn tree: every model of it diagnosed
(:func:`callscope.runs.leaderboard.diagnose_model`) in worker processes, their error types
numbered as one run's, the cases left out by drift evidence decided across models
(:func:`callscope.runs.leaderboard.drifted_cases`), and the stage-3 reference rows
(:func:`callscope.runs.leaderboard.unstated_reference`) computed once: a
:class:`LeaderboardRun`, which :mod:`callscope.report.leaderboard` renders."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from callscope.benchmarks.bfcl.single_results import (
    SingleFile,
    find_single_files,
    read_single_model,
)
from callscope.runs.leaderboard import (
    CATEGORIES,
    KNOWN_DRIFT_V2,
    MIN_MODELS_EVIDENCE,
    CaseTable,
    ModelResult,
    Reference,
    Vocabulary,
    diagnose_model,
    drifted_cases,
)

#: writes one model's case-browser page: ``(model, records, folder) -> None``
PageWriter = Callable[[str, list[dict[str, Any]], Path], Any]

_worker: dict[str, Any] = {}


def _init_worker(categories: tuple[str, ...]) -> None:
    _worker["table"] = CaseTable(categories)


def _one_model(
    files: list[SingleFile],
    scores: list[SingleFile],
    checker: bool,
    grounding: str | None,
    pages: str | None,
    page_writer: PageWriter | None,
) -> tuple[ModelResult, list[str]]:
    """A worker's job: one model's files read, diagnosed and its case page written; returns
    the result and the error types it met (each worker numbers them on its own). Seconds are
    the worker's CPU time."""
    t0 = time.process_time()
    table: CaseTable = _worker["table"]
    stored = read_single_model(files, scores, frozenset(table.index))
    t_read = time.process_time() - t0
    errors = Vocabulary()
    records: list[dict[str, Any]] = []
    result = diagnose_model(
        stored,
        table,
        errors,
        checker=checker,
        grounding=grounding,
        on_answer=records.append if pages else None,
    )
    t1 = time.process_time()
    if pages and page_writer is not None:
        page_writer(stored.model, records, Path(pages))
    result.seconds["read"] = t_read
    result.seconds["page"] = time.process_time() - t1
    return result, errors.items


def _renumber(result: ModelResult, local: list[str], errors: Vocabulary) -> None:
    """Map a worker's error-type numbers onto the run's."""
    mapping = np.array([errors(e) for e in local] + [-1], dtype=np.int16)
    for col in ("err", "checker_err"):
        values = result.rows[col]
        result.rows[col] = mapping[np.where(values < 0, len(local), values)]


@dataclass
class LeaderboardRun:
    """Every model of a tree diagnosed: results in model order, the run's error types, the
    installed cases' ids and categories, the left-out cases by evidence, seconds."""

    results: list[ModelResult]
    error_types: list[str]
    case_ids: list[str]
    drift: dict[str, set[int]]
    bfcl_version: str
    seconds: float
    jobs: int
    reference: Reference | None = None


def diagnose_tree(
    tree: str | Path,
    *,
    scores: str | Path | None = None,
    model: str | None = None,
    jobs: int = 1,
    checker: bool = True,
    grounding: str | None = None,
    pages: str | Path | None = None,
    page_writer: PageWriter | None = None,
    on_model: Callable[[ModelResult], None] | None = None,
) -> LeaderboardRun:
    """Every model of a BFCL single-turn tree (``model``: only that one) diagnosed in ``jobs``
    worker processes (1: in this process), each model's case page written to ``pages`` by
    ``page_writer``; ``on_model`` is called in the parent as each model is done (progress,
    log). ``FileNotFoundError`` when the tree holds no single-turn result file."""
    t0 = time.perf_counter()
    files = find_single_files(tree)
    if not files:
        raise FileNotFoundError(
            f"{tree}: no BFCL single-turn result file (gorilla_openfunctions_v1_test_*_result"
            ".json[.gz], BFCL_v3_*/BFCL_v4_*_result.json[.gz]) found"
        )
    models = sorted({f.model for f in files})
    if model is not None:
        if model not in models:
            raise FileNotFoundError(f"{tree}: no model {model!r}; found {', '.join(models)}")
        models = [model]
    categories = tuple(c for c in CATEGORIES if any(f.category == c for f in files))
    score_files = find_single_files(scores or tree, "score")
    args = (checker, grounding, str(pages) if pages else None, page_writer)

    def job(m: str) -> tuple[list[SingleFile], list[SingleFile]]:
        return [f for f in files if f.model == m], [s for s in score_files if s.model == m]

    errors = Vocabulary()
    done: dict[str, ModelResult] = {}

    def collect(result: ModelResult, local: list[str]) -> None:
        _renumber(result, local, errors)
        done[result.model] = result
        if on_model is not None:
            on_model(result)

    if jobs <= 1 or len(models) == 1:
        _init_worker(categories)
        for m in models:
            collect(*_one_model(*job(m), *args))
        table = _worker["table"]
        table.gold_unstated(grounding)
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed  # lazy: only here

        with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(categories,)) as pool:
            futures = [pool.submit(_one_model, *job(m), *args) for m in models]
            for future in as_completed(futures):
                collect(*future.result())
        table = CaseTable(categories)
        table.gold_unstated(grounding)
    results = [done[m] for m in models]
    drift = drifted_cases(results, len(table.cases))
    if len(results) < MIN_MODELS_EVIDENCE and any(f.version == 2 for f in files):
        known = {table.index[c] for c in KNOWN_DRIFT_V2 if c in table.index}
        drift["known_v2"] = known - drift["function_drift"] - drift["gold_drift"]
    return LeaderboardRun(
        results=results,
        error_types=errors.items,
        case_ids=[c.id for c in table.cases],
        drift=drift,
        bfcl_version=table.bfcl_version,
        seconds=time.perf_counter() - t0,
        jobs=jobs,
        reference=table.reference,
    )
