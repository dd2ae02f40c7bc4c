"""Read BFCL's own multi-turn result and score files into :class:`CaseRecord`\\ s.

Layout written by ``bfcl generate`` / ``bfcl evaluate`` (bfcl-eval 2026.3.23)::

    <results>/<model>/multi_turn/BFCL_v4_multi_turn_<cat>_result.json
    <scores>/<model>/multi_turn/BFCL_v4_multi_turn_<cat>_score.json

``<model>`` is the registry name with ``/`` replaced by ``_``. Both files hold one JSON object
per line.

* Result line: ``{"id", "result", ...}``. ``result`` is, per turn, the list of the model's
  per-step responses: raw text for prompt-mode models, and for function-calling (``-FC``)
  models either ``[{tool_name: arguments}]`` (arguments a JSON string or an object) when the
  step made calls, or the message text (possibly ``null``) when it did not. When inference
  crashed, ``result`` is the string ``"Error during inference: ..."``; the record then has no
  emissions and carries that message as ``error``.
* Score file: the first line is the header ``{"accuracy", "correct_count", "total_count"}``;
  every following line is one FAILED case (``{"id", "valid": false, "error": {...}, ...}``).
  A case of the result file passes when its id is not among the failures.

Due turns come from BFCL's ground truth (``bfcl_eval/data``): for ``base`` and
``long_context`` the turns with non-empty gold calls (TOOL_CALL due); for ``miss_param`` the
turns whose gold is ``[]`` (ASK due); for ``miss_func`` the turn before each turn listed in
``missed_function`` (the turn asked while the function was held out, REFUSE due), falling back
to the empty-gold turns if the question has no ``missed_function``.

Nothing here raises on a missing or malformed file: problems are collected as messages in
:attr:`BfclRun.problems`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.benchmarks.bfcl.categories import (
    CATEGORIES,
    due_turns,
    full_category,
    gold_class,
    short_category,
)
from callscope.benchmarks.bfcl.package import answer_file, question_file, read_bfcl_jsonl
from callscope.benchmarks.records import CaseRecord

VERSION_PREFIX = "BFCL_v4"
GROUP_DIR = "multi_turn"

GroundTruthLoader = Callable[[str], tuple[dict[str, list[list[str]]], dict[str, dict[str, Any]]]]


def result_file_name(category: str) -> str:
    """``BFCL_v4_multi_turn_<cat>_result.json``."""
    return f"{VERSION_PREFIX}_multi_turn_{category}_result.json"


def score_file_name(category: str) -> str:
    """``BFCL_v4_multi_turn_<cat>_score.json``."""
    return f"{VERSION_PREFIX}_multi_turn_{category}_score.json"


@dataclass
class BfclRun:
    """What was read: the records, BFCL's header counts per category, and every problem."""

    model: str | None
    records: list[CaseRecord] = field(default_factory=list)
    headers: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def header_acc(self) -> dict[str, tuple[int, int]]:
        """``{category: (correct_count, total_count)}`` from the score headers that have them,
        for :func:`~callscope.calibration.diagnostics.compute_diagnostics`'s ``header_acc``."""
        out: dict[str, tuple[int, int]] = {}
        for cat, header in self.headers.items():
            correct, total = header.get("correct_count"), header.get("total_count")
            if isinstance(correct, int) and isinstance(total, int) and 0 <= correct <= total:
                out[cat] = (correct, total)
        return out


def bfcl_package_ground_truth(
    category: str,
) -> tuple[dict[str, list[list[str]]], dict[str, dict[str, Any]]]:
    """``({id: ground_truth}, {id: question entry})`` of one multi-turn category, read from
    the installed ``bfcl_eval`` data (raises ``ImportError``/``FileNotFoundError``/
    ``ValueError`` when absent or malformed)."""

    full = full_category(category)
    answers = {r["id"]: r.get("ground_truth", []) for r in read_bfcl_jsonl(answer_file(full))}
    questions = {r["id"]: r for r in read_bfcl_jsonl(question_file(full))}
    return answers, questions


def resolve_model_dir(results_dir: Path, model: str | None) -> tuple[Path | None, str | None, str]:
    """Find ``<results>/<model>``; returns ``(dir, model dir name, problem or "")``.

    With ``model=None``: ``results_dir`` itself when it holds ``multi_turn/``, else its only
    subdirectory that holds ``multi_turn/``."""
    if model is not None:
        name = model.replace("/", "_")
        path = results_dir / name
        if not (path / GROUP_DIR).is_dir():
            return None, name, f"no {GROUP_DIR}/ folder for model {model!r} under {results_dir}"
        return path, name, ""
    if (results_dir / GROUP_DIR).is_dir():
        return results_dir, results_dir.name, ""
    if not results_dir.is_dir():
        return None, None, f"results folder {results_dir} does not exist"
    candidates = sorted(p for p in results_dir.iterdir() if (p / GROUP_DIR).is_dir())
    if len(candidates) == 1:
        return candidates[0], candidates[0].name, ""
    if not candidates:
        return None, None, f"no <model>/{GROUP_DIR}/ folder under {results_dir}"
    names = ", ".join(p.name for p in candidates)
    return None, None, f"several models under {results_dir} ({names}); pass model="


def _read_jsonl(path: Path, problems: list[str]) -> list[tuple[int, dict[str, Any]]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        problems.append(f"{path}: cannot read ({exc.strerror or exc})")
        return rows
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{lineno}: malformed line skipped (not valid JSON: {exc.msg})")
            continue
        if not isinstance(row, dict):
            problems.append(f"{path}:{lineno}: malformed line skipped (not a JSON object)")
            continue
        rows.append((lineno, row))
    return rows


def _turns_of(result: Any) -> tuple[list[list[Any]], str | None]:
    """Per-turn emissions of a ``result`` value, and an error when it is not per-turn lists."""
    if isinstance(result, str):
        return [], result or "empty result"
    if not isinstance(result, list):
        return [], f"result is {type(result).__name__}, not a list of turns"
    if not all(isinstance(turn, list) for turn in result):
        return [], "result is not a list of per-turn lists"
    return [list(turn) for turn in result], None


def read_score_file(path: Path, problems: list[str]) -> tuple[dict[str, Any] | None, set[str]]:
    """BFCL score file: its header (or ``None``) and the ids of the failed cases."""
    rows = _read_jsonl(path, problems)
    if not rows or "accuracy" not in rows[0][1]:
        problems.append(f"{path}: first line is not a header with 'accuracy'")
        header = None
        failures = rows
    else:
        header = rows[0][1]
        failures = rows[1:]
    failed: set[str] = set()
    for lineno, row in failures:
        if not isinstance(row.get("id"), str):
            problems.append(f"{path}:{lineno}: failure line has no string 'id'; ignored")
            continue
        if row.get("valid") is True:
            problems.append(f"{path}:{lineno}: line for {row['id']} is marked valid; ignored")
            continue
        failed.add(row["id"])
    return header, failed


def load_bfcl_run(
    results_dir: str | Path,
    scores_dir: str | Path | None = None,
    model: str | None = None,
    categories: Iterable[str] = CATEGORIES,
    ground_truth: GroundTruthLoader | None = None,
) -> BfclRun:
    """Read BFCL multi-turn results (and scores) for one model; see the module docstring.

    ``categories`` are short names (``base``, ``miss_param``, ...). ``ground_truth`` returns
    ``({id: ground_truth}, {id: question})`` for a category; the default reads the installed
    ``bfcl_eval`` data. Without ``scores_dir`` every record has ``passed=None``. A missing
    result file, score file or ground truth is recorded in ``problems`` and skipped.
    """
    results_root = Path(results_dir)
    model_dir, model_name, problem = resolve_model_dir(results_root, model)
    run = BfclRun(model=model_name)
    if model_dir is None:
        run.problems.append(problem)
        return run
    loader = ground_truth or bfcl_package_ground_truth
    for category in categories:
        category = short_category(category)
        result_path = model_dir / GROUP_DIR / result_file_name(category)
        if not result_path.is_file():
            run.problems.append(f"{result_path}: no result file; category {category} skipped")
            continue
        try:
            category_gold = gold_class(category)
        except ValueError as exc:
            run.problems.append(f"{result_path}: {exc}; category skipped")
            continue
        try:
            answers, questions = loader(category)
        except (ImportError, OSError, ValueError) as exc:
            run.problems.append(
                f"ground truth for {category} unavailable ({exc}); due turns left empty"
            )
            answers, questions = {}, {}

        header: dict[str, Any] | None = None
        failed: set[str] | None = None
        if scores_dir is not None:
            score_path = (
                Path(scores_dir) / (model_name or "") / GROUP_DIR / score_file_name(category)
            )
            if score_path.is_file():
                header, failed = read_score_file(score_path, run.problems)
                if header is not None:
                    run.headers[category] = header
            else:
                run.problems.append(f"{score_path}: no score file; Acc unknown for {category}")

        seen: set[str] = set()
        for lineno, row in _read_jsonl(result_path, run.problems):
            case_id = row.get("id")
            if not isinstance(case_id, str) or not case_id:
                run.problems.append(f"{result_path}:{lineno}: malformed line skipped (no 'id')")
                continue
            if case_id in seen:
                run.problems.append(f"{result_path}:{lineno}: duplicate id {case_id}; skipped")
                continue
            seen.add(case_id)
            turns, error = _turns_of(row.get("result"))
            if case_id in answers:
                question = questions.get(case_id) or {}
                due = due_turns(category, answers[case_id], question.get("missed_function"))
            else:
                due = []
                if answers:
                    run.problems.append(f"{result_path}:{lineno}: {case_id} not in ground truth")
            run.records.append(
                CaseRecord(
                    id=case_id,
                    category=category,
                    gold_class=category_gold,
                    turn_emissions=turns,
                    due_turns=due,
                    passed=None if failed is None else case_id not in failed,
                    error=error,
                )
            )
        if failed is not None:
            for orphan in sorted(failed - seen):
                run.problems.append(f"score file lists {orphan} as failed but it has no result")
        total = (header or {}).get("total_count")
        if isinstance(total, int) and total != len(seen):
            run.problems.append(
                f"{category}: score header counts {total} cases, result file has {len(seen)}"
            )
    return run


def load_bfcl_results(
    results_dir: str | Path,
    scores_dir: str | Path | None = None,
    model: str | None = None,
) -> list[CaseRecord]:
    """The records of :func:`load_bfcl_run` (problems dropped; use that to see them)."""
    return load_bfcl_run(results_dir, scores_dir, model).records
