"""A grader-agreement harness: another grader against BFCL's own AST checker, on every gold
call and on systematically perturbed calls (wrong value, wrong type, missing required argument,
extra argument, wrong function). Answers of several calls or none:
:mod:`callscope.benchmarks.bfcl.answer_agreement`.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from callscope.benchmarks.bfcl.single import NO_VALUE, bfcl_ast_verdict, is_acceptable
from callscope.core.jsonl import copy_json
from callscope.core.stats import seeded_rng
from callscope.saag.cascade import find_spec
from callscope.types import Case

PERTURBATION_KINDS: tuple[str, ...] = (
    "wrong_value",
    "wrong_type",
    "missing_required",
    "extra_argument",
    "wrong_name",
)

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
            calls.update(perturbed_calls(case, seeded_rng(seed, case.id)))
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
    return {"name": case.gold["name"], "arguments": copy_json(case.gold.get("arguments") or {})}


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
    spec = find_spec(case.functions, gold["name"])
    properties: dict[str, Any] = (spec or {}).get("parameters", {}).get("properties", {})
    acceptable: dict[str, list[Any]] = (case.gold or {}).get("acceptable") or {}
    args = gold["arguments"]
    out: dict[str, dict[str, Any] | None] = {}

    candidates = []
    for param in sorted(args):
        wrong = wrong_value(
            args[param], acceptable.get(param, [args[param]]), properties.get(param)
        )
        if wrong is not NO_VALUE:
            candidates.append((param, wrong))
    out["wrong_value"] = _with_arg(gold, *rng.choice(candidates)) if candidates else None

    candidates = []
    for param in sorted(args):
        schema = properties.get(param)
        if schema is None or "type" not in schema:
            continue
        retyped = _wrong_type(args[param])
        if retyped is not NO_VALUE:
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
        {"name": rng.choice(others), "arguments": copy_json(args)} if others else None
    )
    return out


def wrong_value(value: Any, acceptable: list[Any], schema: Mapping[str, Any] | None) -> Any:
    """A value of ``value``'s type that is not acceptable, or ``NO_VALUE``."""
    if isinstance(value, bool):
        flipped = not value
        return NO_VALUE if is_acceptable(flipped, acceptable) else flipped
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
        return NO_VALUE
    for candidate in candidates:
        if not is_acceptable(candidate, acceptable):
            return candidate
    return NO_VALUE


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
    return NO_VALUE


def _with_arg(call: dict[str, Any], param: str, value: Any) -> dict[str, Any]:
    return {"name": call["name"], "arguments": {**copy_json(call["arguments"]), param: value}}
