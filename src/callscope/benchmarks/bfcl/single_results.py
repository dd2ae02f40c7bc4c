"""Read BFCL's own *single-turn* result and score trees: every stored answer of a model, paired
with the installed bfcl-eval case it answers, and BFCL's committed verdict on it.

Layouts (files are found by name anywhere under the given path, gzip or plain)::

    v2 (2024):  <model>/gorilla_openfunctions_v1_test_<cat>_result.json[.gz]
                <model>/<cat>_score.json[l][.gz]
    v3 / v4:    <model>/[...]/BFCL_v3_<cat>_result.json[.gz]   (v4 the same)
                <model>/[...]/BFCL_v3_<cat>_score.json[.gz]

v2 categories map to today's (:data:`V2_CATEGORIES`: ``simple`` -> ``simple_python``,
``multiple_function`` -> ``multiple``, ``parallel_function`` -> ``parallel``,
``parallel_multiple_function`` -> ``parallel_multiple``, ``relevance`` -> ``irrelevance``)
with the same ids by index (v2 ``simple_0`` is today's ``simple_python_0``); v3 ``simple``
is today's ``simple_python``; every other name is today's own (``live_simple``...).
Questions, functions and gold come from the installed bfcl-eval data
(:func:`callscope.benchmarks.bfcl.single.load_bfcl_detailed`).

* A result line is ``{"id", "result", ...}``; ``result`` is the model's raw answer, which a
  decoder of :mod:`callscope.parse.bfcl_decode` reads (:data:`MODEL_DECODERS` names the one
  BFCL's 2024 handler map gave each model; for a model it does not name,
  :func:`decoder_choice` takes the decoder that reads the most of a sample of its answers).
* A score file's first line is BFCL's header (``accuracy``, ``correct_count``,
  ``total_count``); every following line is one case BFCL *rejected* (``prompt_id`` or
  ``id``: its result id, or its 1-based index, paired through the index in each result
  line's own id (:func:`~callscope.benchmarks.bfcl.single_lines.bfcl_index`), not its line
  position, ``error_type``, ``error``). A case not listed was accepted. A score file
  without that header, or cut off, is unusable: its category's answers are not scored.
* A line whose id is not among the installed cases (an id past the installed range, a
  category bfcl-eval no longer has) is left out and counted in
  :attr:`SingleTurnModel.left_out` (``not_installed``), never paired with another case;
  so is a line that repeats a case (``duplicate``, the first kept) or whose id names another
  category (``other_category``), each said once per file. A result file cut off (a
  truncated gzip) is left out whole (``cut_off``) and said with the lines read before the
  cut; the cases a score header counts without an answer are :attr:`SingleTurnModel.missing`.

Nothing raises on a malformed line: problems are collected as messages; JSON is read with
:func:`callscope.core.jsonl.loads_bounded` (nesting and size bounded).

:data:`BFCL_SINGLE_RESULTS` is this module's
:class:`~callscope.benchmarks.results_source.ResultsSource` (``bfcl-single``, diagnostic
``answers``).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.benchmarks.bfcl.single_lines import (
    Rejection,
    ScoreFile,
    bfcl_index,
    cut_message,
    read_rows,
    read_score_file,
)
from callscope.benchmarks.bfcl.single_lines import (
    iter_lines as iter_lines,
)
from callscope.parse.bfcl_decode import SAMPLE_SIZE, DecoderChoice, choose_decoder

#: v2 (2024) category names -> today's bfcl-eval names
V2_CATEGORIES: dict[str, str] = {
    "simple": "simple_python",
    "multiple_function": "multiple",
    "parallel_function": "parallel",
    "parallel_multiple_function": "parallel_multiple",
    "relevance": "irrelevance",
}
#: v3 names that differ from today's
V3_CATEGORIES: dict[str, str] = {"simple": "simple_python"}
#: today's names callscope reads (single-turn, Python AST or relevance)
INSTALLED_CATEGORIES: tuple[str, ...] = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)

_V2_RESULT = re.compile(r"gorilla_openfunctions_v1_test_([a-z_]+?)_result\.json(?:\.gz)?")
_V34_RESULT = re.compile(r"BFCL_v([34])_([a-z_]+?)_result\.json(?:\.gz)?")
_V2_SCORE = re.compile(r"([a-z_]+?)_score\.jsonl?(?:\.gz)?")
_V34_SCORE = re.compile(r"BFCL_v([34])_([a-z_]+?)_score\.jsonl?(?:\.gz)?")
#: top folders of BFCL's own trees, never a model's name
TREE_DIRS = frozenset({"result", "results", "score", "scores"})

#: BFCL's 2024-08 handler map (gorilla ``model_handler/handler_map.py``, commit de8307b):
#: model family (folder name prefix, ``/`` written ``_``) -> (prompt decoder, FC decoder).
#: The FC decoder is used when the model's name holds ``FC`` (BFCL's own test), except for
#: the families whose handler is FC-only (Gemini, Yi, functionary, firefunction).
MODEL_DECODERS: tuple[tuple[str, str, str], ...] = (
    ("gorilla-openfunctions", "gorilla", "gorilla"),
    ("gpt-", "openai_prompt", "fc_json"),
    ("claude-", "claude_prompt", "fc_json"),
    ("open-mistral", "mistral_prompt", "fc_json"),
    ("open-mixtral", "mistral_prompt", "fc_json"),
    ("mistral-", "mistral_prompt", "fc_json"),
    ("firefunction", "fc_json", "fc_json"),
    ("Nexusflow-Raven", "nexus", "nexus"),
    ("gemini-", "gemini", "gemini"),
    ("google_gemma", "gemma", "gemma"),
    ("deepseek-ai_deepseek-coder", "deepseek", "deepseek"),
    ("meetkai_functionary", "fc_json", "fc_json"),
    ("databricks-dbrx", "databricks", "databricks"),
    ("NousResearch_Hermes", "hermes", "hermes"),
    ("meta-llama_Meta-Llama-3", "llama", "llama"),
    ("command-r-plus", "wrap", "fc_object"),
    ("snowflake_arctic", "arctic", "arctic"),
    ("nvidia_nemotron", "arctic", "arctic"),
    ("THUDM_glm-4", "glm", "glm"),
    ("yi-large", "fc_json", "fc_json"),
    ("Salesforce_xLAM", "xlam", "xlam"),
)
#: BFCL 2024's ``UNDERSCORE_TO_DOT`` (``model_handler/constant.py``): models whose function
#: names BFCL compared with ``.`` written ``_`` (their APIs refuse dots)
UNDERSCORE_TO_DOT_2024: frozenset[str] = frozenset(
    {
        "gpt-4o-2024-08-06-FC",
        "gpt-4o-2024-05-13-FC",
        "gpt-4o-mini-2024-07-18-FC",
        "gpt-4-turbo-2024-04-09-FC",
        "gpt-4-1106-preview-FC",
        "gpt-4-0125-preview-FC",
        "gpt-4-0613-FC",
        "gpt-3.5-turbo-0125-FC",
        "claude-3-opus-20240229-FC",
        "claude-3-sonnet-20240229-FC",
        "claude-3-haiku-20240307-FC",
        "claude-3-5-sonnet-20240620-FC",
        "open-mistral-nemo-2407-FC-Any",
        "open-mistral-nemo-2407-FC-Auto",
        "open-mixtral-8x22b-FC-Any",
        "open-mixtral-8x22b-FC-Auto",
        "mistral-large-2407-FC",
        "mistral-large-2407-FC-Any",
        "mistral-large-2407-FC-Auto",
        "mistral-small-2402-FC-Any",
        "mistral-small-2402-FC-Auto",
        "mistral-small-2402-FC",
        "gemini-1.0-pro",
        "gemini-1.5-pro-preview-0409",
        "gemini-1.5-pro-preview-0514",
        "gemini-1.5-flash-preview-0514",
        "meetkai_functionary-small-v3.1-FC",
        "meetkai_functionary-small-v3.2-FC",
        "meetkai_functionary-medium-v3.1-FC",
        "NousResearch_Hermes-2-Pro-Llama-3-8B",
        "NousResearch_Hermes-2-Pro-Llama-3-70B",
        "NousResearch_Hermes-2-Pro-Mistral-7B",
        "NousResearch_Hermes-2-Theta-Llama-3-8B",
        "NousResearch_Hermes-2-Theta-Llama-3-70B",
        "command-r-plus-FC",
        "command-r-plus-FC-optimized",
        "THUDM_glm-4-9b-chat",
        "yi-large-fc",
    }
)


def decoder_for(model: str, sample: Any = None) -> str:
    """The :data:`~callscope.parse.bfcl_decode.BFCL_DECODERS` name BFCL's handler used for
    ``model`` (:data:`MODEL_DECODERS`); for a model the table does not know, by the shape of
    one of its answers (``sample``): a list is function-calling JSON (``fc_json``), text is
    BFCL's default prompt decoding (``wrap``).

    >>> decoder_for("gpt-4-0613"), decoder_for("gpt-4-0613-FC"), decoder_for("x", [])
    ('openai_prompt', 'fc_json', 'fc_json')
    """
    for prefix, prompt, fc in MODEL_DECODERS:
        if model.startswith(prefix):
            return fc if "FC" in model else prompt
    return "fc_json" if isinstance(sample, list) else "wrap"


def decoder_choice(model: str, answers: Sequence[StoredAnswer]) -> DecoderChoice:
    """How ``model``'s answers are read: the decoder BFCL's handler map gives it
    (:data:`MODEL_DECODERS`, ``by="handler"``); for a model the map does not name, the
    decoder that reads calls from the most of a sample of its answers
    (:func:`~callscope.parse.bfcl_decode.choose_decoder`: up to
    :data:`~callscope.parse.bfcl_decode.SAMPLE_SIZE` answers evenly spread over those of
    cases that expect a call, all answers when there are none), ties going to the shape
    default of :func:`decoder_for`."""
    for prefix, prompt, fc in MODEL_DECODERS:
        if model.startswith(prefix):
            return DecoderChoice(fc if "FC" in model else prompt)
    from callscope.benchmarks.bfcl.single import NO_CALL_CATEGORIES  # lazy: saag

    pool = [a.result for a in answers if a.category not in NO_CALL_CATEGORIES] or [
        a.result for a in answers
    ]
    step = max(1, len(pool) / SAMPLE_SIZE)
    sample = [pool[int(i * step)] for i in range(min(SAMPLE_SIZE, len(pool)))]
    lists = sum(isinstance(r, list) for r in sample)
    return choose_decoder(sample, "fc_json" if 2 * lists > len(sample) else "wrap")


def dotted_names(model: str) -> bool:
    """Whether BFCL compared ``model``'s function names with ``.`` written ``_``
    (:data:`UNDERSCORE_TO_DOT_2024`; a model it does not list: when its name says ``FC``)."""
    if model in UNDERSCORE_TO_DOT_2024:
        return True
    known = any(model.startswith(prefix) for prefix, _, _ in MODEL_DECODERS)
    return not known and "FC" in model


@dataclass(frozen=True)
class SingleFile:
    """One result or score file: the model (its folder), today's category, the BFCL
    version its name says (2, 3 or 4), the path."""

    model: str
    category: str
    version: int
    path: Path


def _category(name: str, kind: str) -> tuple[str, int] | None:
    """``(today's category, version)`` of a file name, ``None`` for another file."""
    pattern34 = _V34_RESULT if kind == "result" else _V34_SCORE
    m = pattern34.fullmatch(name)
    if m:
        version, cat = int(m.group(1)), m.group(2)
        return V3_CATEGORIES.get(cat, cat) if version == 3 else cat, version
    pattern2 = _V2_RESULT if kind == "result" else _V2_SCORE
    m = pattern2.fullmatch(name)
    if m and m.group(1) in V2_CATEGORIES:
        return V2_CATEGORIES[m.group(1)], 2
    return None


def _model_of(path: Path, root: Path) -> str:
    """The folder holding the file, skipping BFCL's grouping folders."""
    folder = path.parent
    while folder.name in ("multi_turn", "non_live", "live", "agentic") and folder != root:
        folder = folder.parent
    if folder.name in TREE_DIRS or folder == root.parent:
        return root.name
    return folder.name


def find_single_files(root: str | Path, kind: str = "result") -> list[SingleFile]:
    """Every single-turn ``result`` (or ``score``) file under ``root`` (a file, a model folder
    or a tree of models) in a category callscope reads, sorted by model and category order."""
    base = Path(root)
    paths = [base] if base.is_file() else _files_under(base)
    found: list[SingleFile] = []
    for p in paths:
        cat = _category(p.name, kind)
        if cat is None or cat[0] not in INSTALLED_CATEGORIES:
            continue
        found.append(SingleFile(_model_of(p, base), cat[0], cat[1], p))
    order = {c: i for i, c in enumerate(INSTALLED_CATEGORIES)}
    return sorted(found, key=lambda f: (f.model, order[f.category], f.version))


def _files_under(base: Path) -> list[Path]:
    """Every file under ``base``, linked folders followed (each real folder once: a link
    cycle ends)."""
    seen: set[str] = set()
    out: list[Path] = []
    for folder, dirs, names in os.walk(base, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        out.extend(Path(folder) / n for n in sorted(names))
    return out


def single_models(root: str | Path) -> list[str]:
    """The models whose result files are under ``root``, in name order."""
    return sorted({f.model for f in find_single_files(root)})


@dataclass(frozen=True)
class StoredAnswer:
    """One stored answer: the installed case id it answers, its category, the raw ``result``,
    and BFCL's committed verdict (``rejection`` is ``None`` when BFCL accepted it; ``scored``
    is whether a score file covered it)."""

    case_id: str
    category: str
    result: Any
    rejection: Rejection | None
    scored: bool


def installed_id(result_id: str, category: str) -> str:
    """Today's id of a result id: the file's category and the id's index
    (``simple_0`` in a v2 ``simple`` file is ``simple_python_0``); a live id
    (``live_simple_0-0-0``) is kept as it is.

    >>> installed_id("simple_0", "simple_python"), installed_id("relevance_7", "irrelevance")
    ('simple_python_0', 'irrelevance_7')
    """
    if result_id.startswith("live_") or "-" in result_id:
        return result_id
    head, _, index = result_id.rpartition("_")
    return f"{category}_{index}" if index.isdigit() and head else result_id


@dataclass
class SingleTurnModel:
    """One model's single-turn answers as read (module docstring): ``answers`` in file order;
    ``headers``: BFCL's score header per category; ``left_out``: lines not paired with an
    installed case, by reason; ``versions``: the BFCL versions the file names say;
    ``missing``: per category, the cases without an answer."""

    model: str
    answers: list[StoredAnswer] = field(default_factory=list)
    headers: dict[str, dict[str, Any]] = field(default_factory=dict)
    left_out: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    versions: set[int] = field(default_factory=set)
    files: list[str] = field(default_factory=list)
    missing: dict[str, int] = field(default_factory=dict)


def category_names(category: str) -> frozenset[str]:
    """Every name an id of ``category``'s file may start with: today's and its v2 / v3 names.

    >>> sorted(category_names("simple_python"))
    ['simple', 'simple_python']
    """
    old = {k for k, v in (*V2_CATEGORIES.items(), *V3_CATEGORIES.items()) if v == category}
    return frozenset({category, *old})


#: every category name an id may start with (today's, v2 and v3)
ALL_NAMES = frozenset({*INSTALLED_CATEGORIES, *V2_CATEGORIES, *V3_CATEGORIES})


def read_single_model(
    files: list[SingleFile], scores: list[SingleFile], known_ids: frozenset[str] | None
) -> SingleTurnModel:
    """One model's answers from its result ``files`` and score files (``scores``), each
    paired with the installed case id (``known_ids``: the ids of the installed cases;
    ``None``: pair without checking). Lines left out are counted in
    :attr:`SingleTurnModel.left_out` (``malformed``, ``other_category``, ``duplicate``,
    ``not_installed``, ``cut_off``), cases without an answer in
    :attr:`SingleTurnModel.missing`; each is said once per file, first in ``problems``."""
    model = SingleTurnModel(model=files[0].model if files else "")
    by_cat = {s.category: s for s in scores}
    notes: list[str] = []
    for f in files:
        model.versions.add(f.version)
        model.files.append(str(f.path))
        score = None
        if f.category in by_cat:
            score = read_score_file(by_cat[f.category].path, model.problems)
            if score.unusable:
                notes.append(
                    f"{score.unusable}; BFCL's verdicts on {f.category} unknown "
                    "(its answers are not scored)"
                )
                score = None
            elif score.header is not None:
                model.headers[f.category] = score.header
        rows, cut = read_rows(f.path, model.problems)
        if cut is not None:
            if rows:
                model.left_out["cut_off"] += len(rows)
            notes.append(f"{cut_message(f.path, len(rows), cut)}; the file is left out")
            continue
        _pair_rows(model, f, rows, score, known_ids, notes)
    model.problems[:0] = notes
    return model


def _pair_rows(
    model: SingleTurnModel,
    f: SingleFile,
    rows: list[tuple[int, Any]],
    score: ScoreFile | None,
    known_ids: frozenset[str] | None,
    notes: list[str],
) -> None:
    """The rows of one result file paired with installed cases and BFCL's verdicts."""
    names = category_names(f.category)
    counts: Counter[str] = Counter()
    seen: set[str] = set()
    for index, (lineno, row) in enumerate(rows, 1):
        if not isinstance(row, dict) or "result" not in row:
            model.problems.append(f"{f.path}:{lineno}: no result")
            counts["malformed"] += 1
            continue
        rid = str(row.get("id", f"{f.category}_{index - 1}"))
        head = rid.rpartition("_")[0]
        if head in ALL_NAMES and head not in names:
            counts["other_category"] += 1
            continue
        case_id = installed_id(rid, f.category)
        if case_id in seen:
            counts["duplicate"] += 1
            continue
        seen.add(case_id)
        if known_ids is not None and case_id not in known_ids:
            counts["not_installed"] += 1
            continue
        rejection = None
        if score is not None:
            rejection = score.by_id.get(rid) or score.by_index.get(bfcl_index(rid, index))
        model.answers.append(
            StoredAnswer(case_id, f.category, row["result"], rejection, score is not None)
        )
    counts = +counts  # the reasons met only
    model.left_out.update(counts)
    if counts["other_category"]:
        notes.append(
            f"{f.path}: {counts['other_category']} lines of another category left out "
            f"(an id not of {f.category})"
        )
    if counts["duplicate"]:
        notes.append(
            f"{f.path}: {counts['duplicate']} lines repeat a case already answered; "
            "left out (the first answer kept)"
        )
    _say_missing(model, f, seen, score, notes)


def _say_missing(
    model: SingleTurnModel,
    f: SingleFile,
    seen: set[str],
    score: ScoreFile | None,
    notes: list[str],
) -> None:
    """Count and say the cases of ``f``'s category without an answer, against BFCL's header
    count (``total_count``) when the score file has one (without one nothing is said: the
    installed bfcl-eval may hold more cases than the run's BFCL version)."""
    total = (score.header or {}).get("total_count") if score is not None else None
    if not isinstance(total, int) or isinstance(total, bool) or total <= len(seen):
        return
    missing = total - len(seen)
    model.missing[f.category] = missing
    notes.append(
        f"{f.path}: {missing} of the {total} cases its score header counts have no answer "
        "in the file (counted missing)"
    )


@dataclass
class BfclSingleResultsSource:
    """The ``bfcl-single`` results source: BFCL's single-turn result trees."""

    name: str = "bfcl-single"
    title: str = "BFCL single-turn result and score trees (v2 2024 names, v3, v4)"
    diagnostic: str = "answers"

    def detect(self, path: Path) -> bool:
        return Path(path).exists() and bool(find_single_files(path))

    def read(self, path: Path, **options: Any) -> list[SingleTurnModel]:
        """Every model under ``path`` (``model=``: only that one), each read by
        :func:`read_single_model` (``known_ids=`` as it takes them)."""
        results = find_single_files(path)
        scores = find_single_files(options.get("scores") or path, "score")
        wanted = options.get("model")
        out = []
        for model in sorted({f.model for f in results}):
            if wanted is not None and model != wanted:
                continue
            out.append(
                read_single_model(
                    [f for f in results if f.model == model],
                    [s for s in scores if s.model == model],
                    options.get("known_ids"),
                )
            )
        return out


BFCL_SINGLE_RESULTS = BfclSingleResultsSource()
