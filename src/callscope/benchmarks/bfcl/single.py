"""BFCL single-call cases and BFCL's own AST verdict on a call.

* :func:`load_bfcl_single` turns BFCL's Python AST categories into :class:`~callscope.types.Case`
  rows: one case per entry whose possible answer is exactly one call.
* :func:`load_bfcl_detailed` builds any of BFCL's single-turn non-agentic categories
  (:data:`SINGLE_TURN_CATEGORIES`, named as BFCL's data files ``BFCL_v4_<name>.json`` name
  them): the one-call categories exactly as :func:`load_bfcl_single_detailed` does; the
  parallel ones with a list of gold calls (one per entry of BFCL's possible answer, each
  converted as a one-call gold); ``irrelevance`` / ``live_irrelevance`` with gold ``[]`` (no
  call is right); ``live_relevance`` (any call is right, BFCL has no possible answer) with no
  gold and ``meta["expects_call"] = True`` (:data:`ANY_CALL_META`).
* :func:`bfcl_ast_verdict` asks BFCL's single-turn AST checker whether a call is correct.
* :func:`is_acceptable` is BFCL's acceptable-value test (used by the agreement harness,
  :mod:`callscope.benchmarks.bfcl.agreement`).

Gold arguments: for each parameter of the possible answer, the first acceptable value that is
neither ``""`` (BFCL's "may be omitted") nor ``None`` (a parameter the function's doc does not
define is omitted when omission is acceptable: BFCL's checker rejects it under any value; in
bfcl-eval 2026.3.23 this concerns two parallel_multiple entries, 12 and 26); when no such value exists the parameter is
omitted if omission is acceptable, else it is ``None``. ``None`` is skipped because BFCL lists
``["", None]`` for 371 optional parameters in these categories and a natural call omits them
(BFCL accepts both). Dict answers (``{key: [acceptable...]}``) and lists of them are resolved
the same way, one level deep, as BFCL's ``dict_checker`` compares them.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from callscope.benchmarks.bfcl.acceptable import first_acceptable, is_acceptable  # noqa: F401
from callscope.benchmarks.bfcl.package import (
    answer_file,
    ast_checker,
    bfcl_function_to_spec,
    checker_model_name,
    python_language,
    question_file,
    read_bfcl_jsonl,
    require_bfcl,
    sanitize_function_names,
)
from callscope.core.jsonl import copy_json
from callscope.types import Case, ToolCall

DEFAULT_CATEGORIES: tuple[str, ...] = ("simple_python", "live_simple", "multiple", "live_multiple")

#: BFCL's parallel categories: the possible answer lists several calls, graded by
#: ``parallel_function_checker_no_order`` (same number of calls, matched in any order)
PARALLEL_CATEGORIES: tuple[str, ...] = (
    "parallel",
    "parallel_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
#: categories whose right answer is no call (BFCL's ``relevance_file_runner``: credited when no
#: call decodes); their cases have gold ``[]``
NO_CALL_CATEGORIES: tuple[str, ...] = ("irrelevance", "live_irrelevance")
#: categories where any call is right (BFCL's ``relevance_file_runner``: credited when a
#: non-empty call list decodes); no possible answer exists
ANY_CALL_CATEGORIES: tuple[str, ...] = ("live_relevance",)
#: every single-turn, non-agentic BFCL v4 category callscope builds, in BFCL's order
SINGLE_TURN_CATEGORIES: tuple[str, ...] = (
    "simple_python",
    "multiple",
    "live_simple",
    "live_multiple",
    *PARALLEL_CATEGORIES,
    *NO_CALL_CATEGORIES,
    *ANY_CALL_CATEGORIES,
)
#: the ``meta`` key of a case whose right answer is any call and which has no gold call
#: (``live_relevance``): ``meta["expects_call"] = True`` with ``gold = None``. Such a case
#: expects a call (the loop's ``expect_call = case.expects_call is not False`` holds for
#: ``gold = None``), and its answer is solved when at least one call parses
#: (:func:`any_call_solved`).
ANY_CALL_META = "expects_call"

#: Categories graded by BFCL's Python AST checker. The parallel ones rarely have a single-call
#: answer; their entries with more than one call are skipped.
PYTHON_AST_CATEGORIES: frozenset[str] = frozenset(
    {
        "simple_python",
        "multiple",
        "parallel",
        "parallel_multiple",
        "live_simple",
        "live_multiple",
        "live_parallel",
        "live_parallel_multiple",
    }
)


@dataclass
class BfclSingleLoad:
    """Result of :func:`load_bfcl_single_detailed`.

    ``loaded`` counts cases per category; ``skipped`` counts skipped entries per category and
    reason (``"calls=N"`` for answers with N != 1 calls, ``"no_answer"``, ``"no_user_text"``,
    ``"gold_function_undocumented"``).
    """

    cases: list[Case]
    loaded: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, dict[str, int]] = field(default_factory=dict)
    bfcl_version: str = ""


def load_bfcl_single(
    categories: Iterable[str] = DEFAULT_CATEGORIES, *, sanitize_names: bool = False
) -> list[Case]:
    """Single-call :class:`Case` rows from BFCL (see :func:`load_bfcl_single_detailed`)."""
    return load_bfcl_single_detailed(categories, sanitize_names=sanitize_names).cases


def load_bfcl_single_detailed(
    categories: Iterable[str] = DEFAULT_CATEGORIES, *, sanitize_names: bool = False
) -> BfclSingleLoad:
    """Load BFCL entries whose possible answer is exactly one call, with per-category counts.

    Each case has ``id`` = the BFCL id; ``query`` = the user messages of the first turn joined
    by newlines; ``functions`` = the docs as JSON-schema specs; ``gold`` = ``{"name",
    "arguments", "acceptable"}`` where ``acceptable`` is BFCL's ``{param: [values]}``
    (``""`` = may be omitted); ``meta`` = ``{"source": "bfcl", "category", "bfcl_version"}``
    plus ``"system"`` (the system message text) when the entry has one. With
    ``sanitize_names`` the function names (spec and gold) have ``.`` replaced by ``_`` and
    ``meta["name_map"]`` maps them back; :func:`bfcl_ast_verdict` uses that map.

    Raises ``ValueError`` for a category that BFCL's Python AST checker does not grade.
    """
    version = require_bfcl()
    result = BfclSingleLoad(cases=[], bfcl_version=version)
    for category in categories:
        _check_category(category)
        skipped: Counter[str] = Counter()
        loaded = 0
        index = _raw_index(category)
        for entry, ground_truth in index.values():
            case, reason = _entry_to_case(entry, ground_truth, category, version, sanitize_names)
            if case is None:
                skipped[reason or "unknown"] += 1
                continue
            result.cases.append(case)
            loaded += 1
        result.loaded[category] = loaded
        result.skipped[category] = dict(skipped)
    return result


def load_bfcl_detailed(
    categories: Iterable[str] = DEFAULT_CATEGORIES, *, sanitize_names: bool = False
) -> BfclSingleLoad:
    """Load any of BFCL's single-turn categories (:data:`SINGLE_TURN_CATEGORIES`), with
    per-category counts of loaded and skipped entries (module docstring for the gold forms).

    One-call categories (``simple_python``, ``multiple``, ``live_simple``, ``live_multiple``)
    give exactly the cases of :func:`load_bfcl_single_detailed` (entries with another number
    of calls skipped as ``calls=N``). Parallel categories give one case per entry with
    ``gold`` = a list of ``{"name", "arguments", "acceptable"}``, in the possible answer's
    order (skipped: ``no_answer``, ``no_user_text``, ``gold_function_undocumented``,
    ``calls=0``). ``irrelevance`` / ``live_irrelevance`` give ``gold = []``;
    ``live_relevance`` gives ``gold = None`` and ``meta["expects_call"] = True`` (skipped:
    ``no_user_text``). ``meta`` is as for one-call cases.

    Raises ``ValueError`` naming the choices for a category outside
    :data:`SINGLE_TURN_CATEGORIES`.
    """
    version = require_bfcl()
    result = BfclSingleLoad(cases=[], bfcl_version=version)
    for category in categories:
        check_single_turn_category(category)
        skipped: Counter[str] = Counter()
        loaded = 0
        if category in NO_CALL_CATEGORIES or category in ANY_CALL_CATEGORIES:
            rows = [(entry, None) for entry in read_bfcl_jsonl(question_file(category))]
        else:
            rows = list(_raw_index(category).values())
        for entry, ground_truth in rows:
            if category in PARALLEL_CATEGORIES:
                case, reason = _entry_to_answer_case(
                    entry, ground_truth, category, version, sanitize_names
                )
            elif category in NO_CALL_CATEGORIES or category in ANY_CALL_CATEGORIES:
                case, reason = _relevance_case(entry, category, version, sanitize_names)
            else:
                case, reason = _entry_to_case(
                    entry, ground_truth, category, version, sanitize_names
                )
            if case is None:
                skipped[reason or "unknown"] += 1
                continue
            result.cases.append(case)
            loaded += 1
        result.loaded[category] = loaded
        result.skipped[category] = dict(skipped)
    return result


def check_single_turn_category(category: str) -> None:
    """``ValueError`` naming the choices unless ``category`` is one of
    :data:`SINGLE_TURN_CATEGORIES`."""
    if category not in SINGLE_TURN_CATEGORIES:
        raise ValueError(
            f"{category!r} is not a BFCL single-turn category callscope builds; choose from "
            f"{', '.join(SINGLE_TURN_CATEGORIES)}"
        )


def any_call_solved(n_calls: int) -> bool:
    """The answer solve of a case where any call is right (``live_relevance``): at least one
    call parsed. An abstention, an empty answer and a broken call are not solved (BFCL's
    ``relevance_file_runner`` also requires a non-empty decoded call list).

    >>> any_call_solved(2), any_call_solved(0)
    (True, False)
    """
    return n_calls > 0


def bfcl_ast_verdict(
    case_or_entry: Case | Mapping[str, Any],
    call: Mapping[str, Any] | ToolCall,
    category: str | None = None,
) -> tuple[bool, str | None]:
    """BFCL's single-turn AST verdict on one call: ``(valid, error)``.

    ``case_or_entry`` is a case from :func:`load_bfcl_single` or a raw BFCL entry (``id``,
    ``function`` and optionally ``ground_truth``; without it the possible answer is looked up
    by id). ``call`` is ``{"name", "arguments"}`` or a :class:`ToolCall`. ``category`` defaults
    to the case's ``meta["category"]``, else the BFCL id's prefix; it selects BFCL's
    simple/multiple/parallel checker. The checker is run with language Python and a model
    name whose config compares dotted names verbatim. ``error`` is ``"<error_type>: <message>"``;
    an exception inside BFCL's checker counts as invalid with ``error`` naming it.
    """
    return bfcl_answer_verdict(case_or_entry, [call], category)


def bfcl_answer_verdict(
    case_or_entry: Case | Mapping[str, Any],
    calls: Iterable[Mapping[str, Any] | ToolCall],
    category: str | None = None,
) -> tuple[bool, str | None]:
    """BFCL's AST verdict on an answer of several calls: ``(valid, error)``, as
    :func:`bfcl_ast_verdict` (one call) gives it. In the parallel categories BFCL's checker is
    ``parallel_function_checker_no_order``: the same number of calls as the possible answer,
    and for each expected call in turn the first unmatched model call that passes
    ``simple_function_checker``; in the others, exactly one call."""
    entry, ground_truth, name_map, category = resolve_entry(case_or_entry, category)
    model_output: list[dict[str, Any]] = []
    for call in calls:
        if isinstance(call, ToolCall):
            name, arguments = call.name, call.arguments
        else:
            name, arguments = call.get("name"), call.get("arguments")
        if not isinstance(name, str):
            return False, "call has no string name"
        if not isinstance(arguments, Mapping):
            return False, "call arguments are not an object"
        model_output.append({name_map.get(name, name): dict(arguments)})
    checker = ast_checker()
    try:
        verdict = checker(
            entry["function"],
            model_output,
            ground_truth,
            python_language(),
            category,
            checker_model_name(),
        )
    except Exception as exc:  # BFCL's checker indexes freely into odd outputs
        return False, f"bfcl_checker_raised: {type(exc).__name__}: {exc}"
    if verdict.get("valid"):
        return True, None
    errors = verdict.get("error") or []
    message = "; ".join(str(e) for e in errors) if isinstance(errors, list) else str(errors)
    return False, f"{verdict.get('error_type', 'invalid')}: {message}"


# ---------------------------------------------------------------------------------------------
# Internals
# ---------------------------------------------------------------------------------------------

#: marks "no such value" where ``None`` is a value
NO_VALUE = object()


def _check_category(category: str) -> None:
    if category not in PYTHON_AST_CATEGORIES:
        raise ValueError(
            f"BFCL category {category!r} is not a single-turn Python AST category; "
            f"choose from {sorted(PYTHON_AST_CATEGORIES)}"
        )


@functools.cache
def _raw_index(category: str) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]] | None]]:
    """``{id: (question entry, ground_truth or None)}`` for one category, read once.

    Treat the returned objects as read-only: they are shared by every caller.
    """
    _check_category(category)
    answers = {row["id"]: row.get("ground_truth") for row in read_bfcl_jsonl(answer_file(category))}
    return {
        row["id"]: (row, answers.get(row["id"])) for row in read_bfcl_jsonl(question_file(category))
    }


def _category_from_id(entry_id: str) -> str:
    prefix = entry_id.rsplit("_", 1)[0]
    _check_category(prefix)
    return prefix


def resolve_entry(
    case_or_entry: Case | Mapping[str, Any], category: str | None
) -> tuple[Mapping[str, Any], list[dict[str, Any]], dict[str, str], str]:
    """BFCL's raw entry, possible answer, the name map back to BFCL's names and the category
    of a case (or a raw entry); ``KeyError`` when the entry or its answer is not found."""
    if isinstance(case_or_entry, Case):
        entry_id = case_or_entry.id
        category = category or case_or_entry.meta.get("category") or _category_from_id(entry_id)
        name_map = dict(case_or_entry.meta.get("name_map") or {})
        entry: Mapping[str, Any] | None = None
        ground_truth = None
    else:
        entry_id = str(case_or_entry.get("id"))
        category = category or _category_from_id(entry_id)
        name_map = {}
        entry = case_or_entry if "function" in case_or_entry else None
        ground_truth = case_or_entry.get("ground_truth")
    _check_category(category)
    if entry is None or ground_truth is None:
        indexed = _raw_index(category).get(entry_id)
        if indexed is None:
            raise KeyError(f"no BFCL {category} entry with id {entry_id!r}")
        entry = entry if entry is not None else indexed[0]
        ground_truth = ground_truth if ground_truth is not None else indexed[1]
    if ground_truth is None:
        raise KeyError(f"BFCL entry {entry_id!r} has no possible answer")
    return entry, ground_truth, name_map, category


def _entry_to_case(
    entry: dict[str, Any],
    ground_truth: list[dict[str, Any]] | None,
    category: str,
    version: str,
    sanitize_names: bool,
) -> tuple[Case | None, str | None]:
    if ground_truth is None:
        return None, "no_answer"
    if len(ground_truth) != 1 or len(ground_truth[0]) != 1:
        return None, f"calls={sum(len(g) for g in ground_truth)}"
    ((gold_name, acceptable),) = ground_truth[0].items()
    docs = {doc["name"]: doc for doc in entry.get("function", [])}
    if gold_name not in docs:
        return None, "gold_function_undocumented"
    first_turn = (entry.get("question") or [[]])[0]
    user = [m["content"] for m in first_turn if m.get("role") == "user"]
    if not user:
        return None, "no_user_text"
    system = [m["content"] for m in first_turn if m.get("role") == "system"]

    arguments = _gold_arguments(docs[gold_name], acceptable)

    specs = [bfcl_function_to_spec(doc) for doc in entry.get("function", [])]
    meta: dict[str, Any] = {"source": "bfcl", "category": category, "bfcl_version": version}
    if system:
        meta["system"] = "\n".join(system)
    name = gold_name
    if sanitize_names:
        specs, reverse = sanitize_function_names(specs)
        meta["name_map"] = reverse
        name = next(new for new, old in reverse.items() if old == gold_name)
    gold = {"name": name, "arguments": arguments, "acceptable": copy_json(acceptable)}
    case = Case(id=entry["id"], query="\n".join(user), functions=specs, gold=gold, meta=meta)
    return case, None


def _first_turn(entry: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The user and system texts of an entry's first turn."""
    first_turn = (entry.get("question") or [[]])[0]
    user = [m["content"] for m in first_turn if m.get("role") == "user"]
    system = [m["content"] for m in first_turn if m.get("role") == "system"]
    return user, system


def _gold_arguments(doc: Mapping[str, Any], acceptable: Mapping[str, Any]) -> dict[str, Any]:
    """One gold call's arguments: the first acceptable value of each parameter (module
    docstring)."""
    properties = doc.get("parameters", {}).get("properties", {})
    arguments: dict[str, Any] = {}
    for param, values in acceptable.items():
        if param not in properties and "" in values:
            continue  # BFCL rejects a parameter its doc does not define: only omission passes
        present, value = first_acceptable(values, properties.get(param) or {})
        if present:
            arguments[param] = value
    return arguments


def _base_meta(category: str, version: str, system: list[str]) -> dict[str, Any]:
    """The ``meta`` of a case of the answer categories (parallel, no-call, any-call): as for
    one-call cases, plus ``answer_format = "calls"`` (the prompt allows several calls or
    none, the same words for every case of these categories)."""
    meta: dict[str, Any] = {
        "source": "bfcl",
        "category": category,
        "bfcl_version": version,
        "answer_format": "calls",
    }
    if system:
        meta["system"] = "\n".join(system)
    return meta


def _entry_to_answer_case(
    entry: dict[str, Any],
    ground_truth: list[dict[str, Any]] | None,
    category: str,
    version: str,
    sanitize_names: bool,
) -> tuple[Case | None, str | None]:
    """A parallel entry -> a case whose gold is the list of its possible answer's calls."""
    if ground_truth is None:
        return None, "no_answer"
    calls = [item for answer in ground_truth for item in answer.items()]
    if not calls:
        return None, "calls=0"
    docs = {doc["name"]: doc for doc in entry.get("function", [])}
    if any(name not in docs for name, _ in calls):
        return None, "gold_function_undocumented"
    user, system = _first_turn(entry)
    if not user:
        return None, "no_user_text"
    specs = [bfcl_function_to_spec(doc) for doc in entry.get("function", [])]
    meta = _base_meta(category, version, system)
    rename: dict[str, str] = {}
    if sanitize_names:
        specs, reverse = sanitize_function_names(specs)
        meta["name_map"] = reverse
        rename = {old: new for new, old in reverse.items()}
    gold = [
        {
            "name": rename.get(name, name),
            "arguments": _gold_arguments(docs[name], acceptable),
            "acceptable": copy_json(acceptable),
        }
        for name, acceptable in calls
    ]
    case = Case(id=entry["id"], query="\n".join(user), functions=specs, gold=gold, meta=meta)
    return case, None


def _relevance_case(
    entry: dict[str, Any], category: str, version: str, sanitize_names: bool
) -> tuple[Case | None, str | None]:
    """An irrelevance entry -> gold ``[]``; a live_relevance entry -> no gold and
    ``meta["expects_call"] = True``."""
    user, system = _first_turn(entry)
    if not user:
        return None, "no_user_text"
    specs = [bfcl_function_to_spec(doc) for doc in entry.get("function", [])]
    meta = _base_meta(category, version, system)
    if sanitize_names:
        specs, reverse = sanitize_function_names(specs)
        meta["name_map"] = reverse
    gold: list[dict[str, Any]] | None = []
    if category in ANY_CALL_CATEGORIES:
        gold = None
        meta[ANY_CALL_META] = True
    case = Case(id=entry["id"], query="\n".join(user), functions=specs, gold=gold, meta=meta)
    return case, None
