"""Read BFCL's own multi-turn result and score files into :class:`CaseRecord`\\ s.

Layout written by ``bfcl generate`` / ``bfcl evaluate`` (bfcl-eval 2026.3.23)::

    <results>/<model>/multi_turn/BFCL_v4_multi_turn_<cat>_result.json
    <scores>/<model>/multi_turn/BFCL_v4_multi_turn_<cat>_score.json

``<model>`` is the registry name with ``/`` replaced by ``_``. Both files hold one JSON object
per line. Files are found **by name anywhere under the given path** (:func:`find_bfcl_files`):
BFCL v3 names (``BFCL_v3_multi_turn_base_result.json``) as well as v4, in the nested layout
above or the flat one (``<model>/BFCL_v4_multi_turn_<cat>_result.json``, older BFCL and files
moved around, the model name possibly kept with its ``/``), the path being a results root, a
model folder or a folder holding both the result and the score tree. The model is the folder
that holds the files (the one above ``multi_turn/``); :attr:`BfclRun.version` and
:attr:`BfclRun.layout` say what was found. Score files are looked for under ``scores`` when
given, else under the results path itself.

* Result line: ``{"id", "result", ...}``. ``result`` is, per turn, the list of the model's
  per-step responses: raw text for prompt-mode models, and for function-calling (``-FC``)
  models either ``[{tool_name: arguments}]`` (arguments a JSON string or an object) when the
  step made calls, or the message text (possibly ``null``) when it did not. Some prompt-mode
  models' files save a turn as one string instead of a list of steps; such a turn is read
  as one emission (as the paper's code does) and counted in :attr:`BfclRun.problems`. When
  inference crashed, ``result`` is the string ``"Error during inference: ..."``; the record
  then has no emissions and carries that message as ``error``.
* Score file: the first line is the header ``{"accuracy", "correct_count", "total_count"}``;
  every following line is one FAILED case (``{"id", "valid": false, "error": {...}, ...}``).
  A case of the result file passes when its id is not among the failures. A score file
  with neither a header nor a failure line that can be read leaves Acc unknown
  (``passed=None``); a result line whose id is not in the ground truth, repeats an id or has
  none is left out (:attr:`BfclRun.left_out`); one turn per line is not read.

Due turns come from BFCL's ground truth (``bfcl_eval/data``): for ``base`` and
``long_context`` the turns with non-empty gold calls (TOOL_CALL due); for ``miss_param`` the
turns whose gold is ``[]`` (ASK due); for ``miss_func`` the turn before each turn listed in
``missed_function`` (the turn asked while the function was held out, REFUSE due), falling back
to the empty-gold turns if the question has no ``missed_function``.

Nothing here raises on a missing or malformed file: problems are collected as messages in
:attr:`BfclRun.problems`.

:data:`BFCL_RESULTS` is the :class:`~callscope.benchmarks.results_source.ResultsSource`
(``bfcl``) registered in :data:`callscope.benchmarks.results_source.RESULTS_SOURCES`: its
``read`` is :func:`load_bfcl_run`, whose :class:`BfclRun` is a
:class:`~callscope.benchmarks.results_source.CaseResults`.
"""

from __future__ import annotations

import re
from collections import Counter
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
from callscope.benchmarks.bfcl.result_lines import (
    read_jsonl_rows,
    read_score_file,
    turn_per_line,
    turns_of,
)
from callscope.records import CaseRecord

GROUP_DIR = "multi_turn"
#: a BFCL multi-turn result or score file name: version, category, kind
FILE_NAME = re.compile(r"BFCL_v(\d+)_multi_turn_([a-z_]+?)_(result|score)\.json")
#: top folders of BFCL's own trees, dropped from a model's name
TREE_DIRS = frozenset({"result", "results", "score", "scores"})
NESTED, FLAT = "nested <model>/multi_turn/", "flat <model>/"

GroundTruthLoader = Callable[[str], tuple[dict[str, list[list[str]]], dict[str, dict[str, Any]]]]


def result_file_name(category: str, version: int = 4) -> str:
    """``BFCL_v4_multi_turn_<cat>_result.json``."""
    return f"BFCL_v{version}_multi_turn_{category}_result.json"


def score_file_name(category: str, version: int = 4) -> str:
    """``BFCL_v4_multi_turn_<cat>_score.json``."""
    return f"BFCL_v{version}_multi_turn_{category}_score.json"


def looked_for(path: str | Path, kind: str = "result") -> str:
    """What :func:`find_bfcl_files` looks for, in words (for "nothing found" messages)."""
    return (
        f"BFCL_v3/v4_multi_turn_<{'|'.join(CATEGORIES)}>_{kind}.json anywhere under {path} "
        f"(nested <model>/{GROUP_DIR}/ or flat <model>/ layout)"
    )


@dataclass(frozen=True)
class BfclFile:
    """One result or score file found by name: its version, category, kind and model folder."""

    path: Path
    version: int
    category: str
    kind: str
    model_dir: Path
    layout: str
    model: str

    @property
    def label(self) -> str:
        return f"v{self.version}, {self.layout}"


def _model_name(model_dir: Path, root: Path) -> str:
    """The model folder's path below ``root`` without BFCL's ``result``/``score`` top folder
    (``airev-ai/AIREV-Agent-0.8B``), or its own name when it is ``root``."""
    try:
        parts = list(model_dir.relative_to(root).parts)
    except ValueError:
        parts = []
    while parts and parts[0] in TREE_DIRS and len(parts) > 1:
        parts = parts[1:]
    return "/".join(parts) if parts else model_dir.name


def find_bfcl_files(root: str | Path, kind: str = "result") -> list[BfclFile]:
    """Every BFCL multi-turn ``kind`` file (``result`` or ``score``) under ``root`` (or
    ``root`` itself when it is one), sorted by path. Unknown categories are left out."""
    root = Path(root)
    if root.is_file():
        candidates, base = [root], root.parent
    elif root.is_dir():
        candidates, base = sorted(root.rglob(f"BFCL_v*_multi_turn_*_{kind}.json")), root
    else:
        return []
    found: list[BfclFile] = []
    for path in candidates:
        m = FILE_NAME.fullmatch(path.name)
        if not m or m.group(3) != kind or m.group(2) not in CATEGORIES or not path.is_file():
            continue
        nested = path.parent.name == GROUP_DIR
        model_dir = path.parent.parent if nested else path.parent
        found.append(
            BfclFile(
                path=path,
                version=int(m.group(1)),
                category=m.group(2),
                kind=kind,
                model_dir=model_dir,
                layout=NESTED if nested else FLAT,
                model=_model_name(model_dir, base),
            )
        )
    return found


def _model_matches(file: BfclFile, model: str) -> bool:
    flat = model.replace("/", "_")
    return model in (file.model, file.model_dir.name) or flat in (
        file.model.replace("/", "_"),
        file.model_dir.name,
    )


def _one_per_category(files: list[BfclFile], problems: list[str]) -> dict[str, BfclFile]:
    """The file to read per category: the highest version, nested before flat."""
    chosen: dict[str, BfclFile] = {}
    for f in sorted(files, key=lambda f: (f.category, -f.version, f.layout != NESTED)):
        if f.category in chosen:
            problems.append(f"{f.path}: another {f.kind} file for {f.category} read instead")
            continue
        chosen[f.category] = f
    return chosen


def select_model(
    files: list[BfclFile], model: str | None, root: Path
) -> tuple[list[BfclFile], str | None, str]:
    """The files of one model: ``model`` (matched by name, with ``/`` or ``_``) or the only
    one. Returns ``(files, model name, problem or "")``."""
    if model is not None:
        mine = [f for f in files if _model_matches(f, model)]
        if not mine:
            names = ", ".join(sorted({f.model for f in files})) or "none"
            return [], model, f"no result files for model {model!r} under {root} (found: {names})"
        files = mine
    models = sorted({f.model_dir for f in files})
    if len(models) > 1:
        names = ", ".join(sorted({f.model for f in files}))
        return [], None, f"several models under {root} ({names}); pass model="
    return files, files[0].model, ""


def _describe(files: Iterable[BfclFile]) -> tuple[str | None, str | None]:
    files = list(files)
    if not files:
        return None, None
    versions = ", ".join(f"v{v}" for v in sorted({f.version for f in files}))
    layouts = ", ".join(sorted({f.layout for f in files}))
    return versions, layouts


@dataclass
class BfclRun:
    """What was read: the records, BFCL's header counts per category, and every problem.

    ``version`` / ``layout`` describe the result files found (``"v4"``, ``"flat <model>/"``;
    several joined by ``", "``), ``score_version`` / ``score_layout`` the score files;
    ``files`` lists every file read; ``looked_for`` says what was searched when nothing was
    found; ``single_string_turns`` counts turns saved as one string; ``left_out`` counts the
    result lines not read into a record, by reason (``duplicate``, ``no_id``,
    ``not_in_ground_truth``, ``turn_per_line``)."""

    model: str | None
    records: list[CaseRecord] = field(default_factory=list)
    headers: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    version: str | None = None
    layout: str | None = None
    score_version: str | None = None
    score_layout: str | None = None
    files: list[Path] = field(default_factory=list)
    looked_for: str = ""
    single_string_turns: int = 0
    left_out: Counter[str] = field(default_factory=Counter)

    def header_acc(self) -> dict[str, tuple[int, int]]:
        """``{category: (correct_count, total_count)}`` from the score headers that have them,
        for :func:`~callscope.calibration.diagnostics.compute_diagnostics`'s ``header_acc``."""
        out: dict[str, tuple[int, int]] = {}
        for cat, header in self.headers.items():
            correct, total = header.get("correct_count"), header.get("total_count")
            if isinstance(correct, int) and isinstance(total, int) and 0 <= correct <= total:
                out[cat] = (correct, total)
        return out

    def describe(self) -> dict[str, Any]:
        """What was read, JSON-ready: model, versions and layouts of the result and score
        files, the files, the turns saved as one string and the lines left out."""
        return {
            "model": self.model,
            "version": self.version,
            "layout": self.layout,
            "score_version": self.score_version,
            "score_layout": self.score_layout,
            "files": [str(f) for f in self.files],
            "single_string_turns": self.single_string_turns,
            "left_out": dict(self.left_out),
        }

    def found(self) -> str:
        """What was found, in one line (``BFCL v4 result files (flat <model>/) ...``)."""
        if not self.records and not self.version:
            return f"nothing read: looked for {self.looked_for}"
        text = f"BFCL {self.version} result files ({self.layout}) of {self.model}"
        if self.score_version:
            text += f"; score files {self.score_version} ({self.score_layout})"
        else:
            text += "; no score files"
        return text


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
    ``bfcl_eval`` data. Score files are searched under ``scores_dir``, else under
    ``results_dir``; without any every record has ``passed=None``. A missing result file,
    score file or ground truth is recorded in ``problems`` and skipped; when no result file
    is found at all, ``records`` is empty and ``looked_for`` says what was searched.
    """
    results_root = Path(results_dir)
    run = BfclRun(model=None, looked_for=looked_for(results_root))
    if not results_root.exists():
        run.problems.append(f"results folder {results_root} does not exist")
        return run
    all_results = find_bfcl_files(results_root, "result")
    if not all_results:
        run.problems.append(f"no result files: looked for {run.looked_for}")
        return run
    mine, run.model, problem = select_model(all_results, model, results_root)
    if problem:
        run.problems.append(problem)
        return run
    wanted = [short_category(c) for c in categories]
    result_files = _one_per_category([f for f in mine if f.category in wanted], run.problems)
    run.version, run.layout = _describe(result_files.values())

    score_root = Path(scores_dir) if scores_dir is not None else results_root
    score_files: dict[str, BfclFile] = {}
    all_scores = find_bfcl_files(score_root, "score")
    if all_scores:
        model_dir = next(iter(result_files.values())).model_dir if result_files else None
        same = [
            f
            for f in all_scores
            if f.model_dir == model_dir or (run.model and _model_matches(f, run.model))
        ]
        if not same and len({f.model_dir for f in all_scores}) == 1:
            same = all_scores
            run.problems.append(
                f"score files of {all_scores[0].model} read for results of {run.model}"
            )
        score_files = _one_per_category([f for f in same if f.category in wanted], run.problems)
        run.score_version, run.score_layout = _describe(score_files.values())
    elif scores_dir is not None:
        run.problems.append(f"no score files: looked for {looked_for(score_root, 'score')}")

    loader = ground_truth or bfcl_package_ground_truth
    for category in wanted:
        if category not in result_files:
            run.problems.append(
                f"{result_file_name(category)}: no result file; category {category} skipped"
            )
            continue
        result_path = result_files[category].path
        run.files.append(result_path)
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
        if category in score_files:
            score_path = score_files[category].path
            run.files.append(score_path)
            header, failed = read_score_file(score_path, run.problems, category)
            if header is not None:
                run.headers[category] = header
        elif scores_dir is not None or score_files:
            run.problems.append(
                f"{score_file_name(category)}: no score file; Acc unknown for {category}"
            )
        if not _read_result_file(
            run, category, category_gold, result_path, answers, questions, failed
        ):
            continue
        total = (header or {}).get("total_count")
        kept = sum(r.category == category for r in run.records)
        if isinstance(total, int) and total != kept:
            run.problems.append(
                f"{category}: score header counts {total} cases, result file has {kept}"
            )
    return run


def _read_result_file(
    run: BfclRun,
    category: str,
    category_gold: str,
    result_path: Path,
    answers: dict[str, list[list[str]]],
    questions: dict[str, dict[str, Any]],
    failed: set[str] | None,
) -> bool:
    """One category's result file into ``run.records``: a line without an id, a repeated
    id, or (when the ground truth is known) an id not in it is left out, counted in
    ``run.left_out`` and said in ``run.problems``; a file of one turn per line is not read
    (returns ``False``)."""
    rows = read_jsonl_rows(result_path, run.problems)
    if turn_per_line(rows):
        run.problems.append(
            f"{result_path}: one turn per line ('turn' on each line, ids repeated) is not "
            f"BFCL's layout (one line per case, every turn in 'result') and is not read; "
            f"category {category} skipped"
        )
        run.left_out["turn_per_line"] += len(rows)
        return False
    seen: set[str] = set()
    single = single_cases = unknown = 0
    for lineno, row in rows:
        case_id = row.get("id")
        if not isinstance(case_id, str) or not case_id:
            run.problems.append(f"{result_path}:{lineno}: malformed line skipped (no 'id')")
            run.left_out["no_id"] += 1
            continue
        if case_id in seen:
            run.problems.append(f"{result_path}:{lineno}: duplicate id {case_id}; skipped")
            run.left_out["duplicate"] += 1
            continue
        seen.add(case_id)
        if answers and case_id not in answers:
            run.problems.append(f"{result_path}:{lineno}: {case_id} not in ground truth")
            unknown += 1
            continue
        turns, error, n_single = turns_of(row.get("result"))
        single += n_single
        single_cases += bool(n_single)
        due: list[int] = []
        if case_id in answers:
            question = questions.get(case_id) or {}
            due = due_turns(category, answers[case_id], question.get("missed_function"))
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
    if unknown:
        run.left_out["not_in_ground_truth"] += unknown
        run.problems.append(
            f"{result_path.name}: {unknown} lines whose id is not in the ground truth of "
            f"{category} left out (not counted in n, GAR or Acc)"
        )
    if single:
        run.single_string_turns += single
        run.problems.append(
            f"{result_path.name}: {single} turns of {single_cases} cases saved as one "
            "string instead of a list of steps; each read as one emission"
        )
    if failed is not None:
        kept = {r.id for r in run.records if r.category == category}
        for orphan in sorted(failed - kept):
            run.problems.append(f"score file lists {orphan} as failed but it has no result")
    return True


def load_bfcl_results(
    results_dir: str | Path,
    scores_dir: str | Path | None = None,
    model: str | None = None,
) -> list[CaseRecord]:
    """The records of :func:`load_bfcl_run` (problems dropped; use that to see them)."""
    return load_bfcl_run(results_dir, scores_dir, model).records


@dataclass(frozen=True)
class BfclResultsSource:
    """BFCL multi-turn result trees (and their score trees) as a results source (read options:
    ``scores``, a score tree when it is not under the results path; ``model``, which model
    when several are there)."""

    name: str = "bfcl"
    title: str = "BFCL multi-turn results"
    diagnostic: str = "cases"

    def detect(self, path: Path) -> bool:
        """Whether a BFCL multi-turn result file is at or under ``path``."""
        return bool(find_bfcl_files(path, "result"))

    def read(
        self, path: Path, *, scores: str | Path | None = None, model: str | None = None
    ) -> BfclRun:
        """:func:`load_bfcl_run` of ``path`` (one model's records, header counts, problems)."""
        return load_bfcl_run(path, scores, model=model)


BFCL_RESULTS = BfclResultsSource()
