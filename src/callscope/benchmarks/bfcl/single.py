"""BFCL single-call cases, BFCL's own AST verdict on a call, and a grader-agreement harness.

* :func:`load_bfcl_single` turns BFCL's Python AST categories into :class:`~callscope.types.Case`
  rows: one case per entry whose possible answer is exactly one call.
* :func:`bfcl_ast_verdict` asks BFCL's single-turn AST checker whether a call is correct.
* :func:`agreement_report` compares another grader with BFCL's checker on the gold call and on
  systematically perturbed calls (wrong value, wrong type, missing required argument, extra
  argument, wrong function).

Gold arguments: for each parameter of the possible answer, the first acceptable value that is
neither ``""`` (BFCL's "may be omitted") nor ``None``; when no such value exists the parameter is
omitted if omission is acceptable, else it is ``None``. ``None`` is skipped because BFCL lists
``["", None]`` for 371 optional parameters in these categories and a natural call omits them
(BFCL accepts both). Dict answers (``{key: [acceptable...]}``) and lists of them are resolved
the same way, one level deep, as BFCL's ``dict_checker`` compares them.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
from callscope.types import Case, ToolCall

DEFAULT_CATEGORIES: tuple[str, ...] = ("simple_python", "live_simple", "multiple", "live_multiple")

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

PERTURBATION_KINDS: tuple[str, ...] = (
    "wrong_value",
    "wrong_type",
    "missing_required",
    "extra_argument",
    "wrong_name",
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
    entry, ground_truth, name_map, category = _resolve_entry(case_or_entry, category)
    if isinstance(call, ToolCall):
        name, arguments = call.name, call.arguments
    else:
        name, arguments = call.get("name"), call.get("arguments")
    if not isinstance(name, str):
        return False, "call has no string name"
    if not isinstance(arguments, Mapping):
        return False, "call arguments are not an object"
    name = name_map.get(name, name)
    model_output = [{name: dict(arguments)}]
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
# Agreement harness
# ---------------------------------------------------------------------------------------------

ScoreFn = Callable[[Case, dict[str, Any]], bool]


def agreement_report(
    cases: Iterable[Case],
    score_fn: ScoreFn,
    *,
    perturb: bool = True,
    seed: int = 0,
    max_examples: int | None = None,
) -> dict[str, Any]:
    """Compare ``score_fn(case, call) -> bool`` with BFCL's checker on gold and perturbed calls.

    For every case the gold call (first acceptable values) is scored; with ``perturb`` also one
    call per kind in :data:`PERTURBATION_KINDS` (see :func:`perturbed_calls`; a kind that does
    not apply to a case is counted in ``skipped``). Choices are random but reproducible from
    ``seed`` and the case id.

    Returns ``{"total", "agree", "disagree", "by_kind": {kind: {"total", "agree", "disagree",
    "bfcl_valid", "score_valid"}}, "skipped": {kind: n}, "disagreements": [{"id", "category",
    "kind", "call", "bfcl_valid", "bfcl_error", "score_valid"}]}`` (at most ``max_examples``
    disagreement examples, all when ``None``).
    """
    kinds = ("gold", *PERTURBATION_KINDS) if perturb else ("gold",)
    by_kind = {
        k: {"total": 0, "agree": 0, "disagree": 0, "bfcl_valid": 0, "score_valid": 0} for k in kinds
    }
    skipped: Counter[str] = Counter()
    examples: list[dict[str, Any]] = []
    disagree_total = 0
    for case in cases:
        calls = {"gold": gold_call(case)}
        if perturb:
            calls.update(perturbed_calls(case, random.Random(f"{seed}:{case.id}")))
        for kind in kinds:
            call = calls.get(kind)
            if call is None:
                skipped[kind] += 1
                continue
            bfcl_valid, bfcl_error = bfcl_ast_verdict(case, call)
            score_valid = bool(score_fn(case, call))
            row = by_kind[kind]
            row["total"] += 1
            row["bfcl_valid"] += bfcl_valid
            row["score_valid"] += score_valid
            if bfcl_valid == score_valid:
                row["agree"] += 1
                continue
            row["disagree"] += 1
            disagree_total += 1
            if max_examples is None or len(examples) < max_examples:
                examples.append(
                    {
                        "id": case.id,
                        "category": case.meta.get("category"),
                        "kind": kind,
                        "call": call,
                        "bfcl_valid": bfcl_valid,
                        "bfcl_error": bfcl_error,
                        "score_valid": score_valid,
                    }
                )
    total = sum(r["total"] for r in by_kind.values())
    return {
        "total": total,
        "agree": total - disagree_total,
        "disagree": disagree_total,
        "by_kind": by_kind,
        "skipped": dict(skipped),
        "disagreements": examples,
    }


def gold_call(case: Case) -> dict[str, Any]:
    """The case's gold call ``{"name", "arguments"}`` (a fresh copy)."""
    if not case.gold:
        raise ValueError(f"case {case.id!r} has no gold call")
    return {"name": case.gold["name"], "arguments": _copy_json(case.gold.get("arguments") or {})}


def perturbed_calls(case: Case, rng: random.Random) -> dict[str, dict[str, Any] | None]:
    """One perturbed copy of the gold call per kind, ``None`` where the kind does not apply.

    * ``wrong_value``: one argument gets another value of the same Python type that is not
      acceptable (BFCL's string normalisation taken into account).
    * ``wrong_type``: one argument changes type: int/float/bool -> its string form, string ->
      int (its digits, else 1), list/dict -> its JSON string. Untyped (``any``) and ``None``
      arguments are not chosen.
    * ``missing_required``: one required argument is dropped.
    * ``extra_argument``: an argument that the function doc does not define is added.
    * ``wrong_name``: the call goes to another offered function (multiple-function cases only).
    """
    gold = gold_call(case)
    spec = _spec_for(case, gold["name"])
    properties: dict[str, Any] = (spec or {}).get("parameters", {}).get("properties", {})
    acceptable: dict[str, list[Any]] = (case.gold or {}).get("acceptable") or {}
    args = gold["arguments"]
    out: dict[str, dict[str, Any] | None] = {}

    candidates = []
    for param in sorted(args):
        wrong = _wrong_value(
            args[param], acceptable.get(param, [args[param]]), properties.get(param)
        )
        if wrong is not _NO_VALUE:
            candidates.append((param, wrong))
    out["wrong_value"] = _with_arg(gold, *rng.choice(candidates)) if candidates else None

    candidates = []
    for param in sorted(args):
        schema = properties.get(param)
        if schema is None or "type" not in schema:
            continue
        retyped = _wrong_type(args[param])
        if retyped is not _NO_VALUE:
            candidates.append((param, retyped))
    out["wrong_type"] = _with_arg(gold, *rng.choice(candidates)) if candidates else None

    required = [p for p in (spec or {}).get("parameters", {}).get("required", []) if p in args]
    if required:
        dropped = rng.choice(sorted(required))
        out["missing_required"] = {
            "name": gold["name"],
            "arguments": {k: v for k, v in args.items() if k != dropped},
        }
    else:
        out["missing_required"] = None

    extra = "extra_argument"
    while extra in properties or extra in args:
        extra += "_x"
    out["extra_argument"] = _with_arg(gold, extra, "unexpected")

    others = sorted(f["name"] for f in case.functions if f.get("name") != gold["name"])
    out["wrong_name"] = (
        {"name": rng.choice(others), "arguments": _copy_json(args)} if others else None
    )
    return out


# ---------------------------------------------------------------------------------------------
# Internals
# ---------------------------------------------------------------------------------------------

_NO_VALUE = object()
_BFCL_STRING_STRIP = re.compile(r"[ \,\.\/\-\_\*\^]")


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


def _resolve_entry(
    case_or_entry: Case | Mapping[str, Any], category: str | None
) -> tuple[Mapping[str, Any], list[dict[str, Any]], dict[str, str], str]:
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

    properties = docs[gold_name].get("parameters", {}).get("properties", {})
    arguments: dict[str, Any] = {}
    for param, values in acceptable.items():
        present, value = _first_acceptable(values, properties.get(param) or {})
        if present:
            arguments[param] = value

    specs = [bfcl_function_to_spec(doc) for doc in entry.get("function", [])]
    meta: dict[str, Any] = {"source": "bfcl", "category": category, "bfcl_version": version}
    if system:
        meta["system"] = "\n".join(system)
    name = gold_name
    if sanitize_names:
        specs, reverse = sanitize_function_names(specs)
        meta["name_map"] = reverse
        name = next(new for new, old in reverse.items() if old == gold_name)
    gold = {"name": name, "arguments": arguments, "acceptable": _copy_json(acceptable)}
    case = Case(id=entry["id"], query="\n".join(user), functions=specs, gold=gold, meta=meta)
    return case, None


def _first_acceptable(values: list[Any], schema: Mapping[str, Any]) -> tuple[bool, Any]:
    """``(present, value)``: the gold value for one parameter given BFCL's acceptable list."""
    for value in values:
        if value != "" and value is not None:
            return True, _resolve_nested(value, schema)
    if "" in values:
        return False, None
    return (True, None) if None in values else (False, None)


def _resolve_nested(value: Any, schema: Mapping[str, Any]) -> Any:
    """Resolve a dict answer ``{key: [acceptable...]}`` (or a list of them) to one value."""
    bfcl_type = schema.get("type")
    if bfcl_type == "dict" and isinstance(value, dict):
        return _resolve_dict(value)
    items = schema.get("items") or {}
    if (
        bfcl_type in ("array", "tuple")
        and items.get("type") == "dict"
        and isinstance(value, list)
        and all(isinstance(v, dict) for v in value)
    ):
        return [_resolve_dict(v) for v in value]
    return _copy_json(value)


def _resolve_dict(answer: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, values in answer.items():
        if not isinstance(values, list):
            out[key] = _copy_json(values)
            continue
        present, value = _first_acceptable(values, {})
        if present:
            out[key] = value
    return out


def _bfcl_normalise(value: Any) -> Any:
    """BFCL's comparison form: strings lowercased without spaces and ``,./-_*^``."""
    if isinstance(value, str):
        return _BFCL_STRING_STRIP.sub("", value).lower().replace("'", '"')
    if isinstance(value, list):
        return [_bfcl_normalise(v) for v in value]
    return value


def _is_acceptable(value: Any, acceptable: list[Any]) -> bool:
    norm = _bfcl_normalise(value)
    for a in acceptable:
        if type(a) is type(value) and _bfcl_normalise(a) == norm:
            return True
        if _is_number(a) and _is_number(value) and a == value:  # BFCL accepts int for float
            return True
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _wrong_value(value: Any, acceptable: list[Any], schema: Mapping[str, Any] | None) -> Any:
    """A value of ``value``'s type that is not acceptable, or ``_NO_VALUE``."""
    if isinstance(value, bool):
        flipped = not value
        return _NO_VALUE if _is_acceptable(flipped, acceptable) else flipped
    candidates: Iterable[Any]
    if isinstance(value, int):
        candidates = (value + k for k in range(1, 50))
    elif isinstance(value, float):
        candidates = (value + k + 0.5 for k in range(1, 50))
    elif isinstance(value, str):
        candidates = (value + "zq" * k for k in range(1, 50))
    elif isinstance(value, list) and value:
        candidates = [value + value[-1:], value[:-1], value[::-1]]
    elif isinstance(value, list):
        item_type = ((schema or {}).get("items") or {}).get("type")
        filler = {"string": "x", "integer": 1, "number": 1.5}.get(str(item_type))
        candidates = [[filler]] if filler is not None else []
    else:  # dict, None
        return _NO_VALUE
    for candidate in candidates:
        if not _is_acceptable(candidate, acceptable):
            return candidate
    return _NO_VALUE


def _wrong_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        stripped = value.strip()
        digits = stripped[1:] if stripped.startswith("-") else stripped
        return int(stripped) if digits.isdigit() else 1
    if isinstance(value, list | dict):
        return json.dumps(value)
    return _NO_VALUE


def _spec_for(case: Case, name: str) -> dict[str, Any] | None:
    return next((f for f in case.functions if f.get("name") == name), None)


def _with_arg(call: dict[str, Any], param: str, value: Any) -> dict[str, Any]:
    return {"name": call["name"], "arguments": {**_copy_json(call["arguments"]), param: value}}


def _copy_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value
