"""Grader agreement on answers of several calls or none (issue 28): callscope against BFCL.

* Several calls (:func:`answer_agreement_report`): BFCL's ``parallel_function_checker_no_order``
  (:func:`~callscope.benchmarks.bfcl.single.bfcl_answer_verdict`) against callscope's answer
  solve (:func:`~callscope.saag.answer.score_answer`) on the gold answers of the parallel
  categories and on perturbed ones (:data:`ANSWER_PERTURBATION_KINDS`: a call dropped,
  duplicated, added; a value changed; calls reordered; values swapped between two calls);
  each disagreement with its reason (:func:`disagreement_reason`). A case whose gold answer
  BFCL's own checker rejects is a data defect, listed and left out.
* No call or any call (:func:`relevance_agreement_report`): BFCL's ``relevance_file_runner``
  verdict (:func:`~callscope.benchmarks.bfcl.relevance_agreement.bfcl_relevance_verdict`) against callscope's on written answers
  (:data:`~callscope.benchmarks.bfcl.relevance_agreement.RELEVANCE_ANSWER_KINDS`: an abstention, empty answers, calls, broken calls).

The single-call harness is :mod:`callscope.benchmarks.bfcl.agreement`, whose ``wrong_value``
rule changes a value here too. ``benchmarks/bfcl_answer_agreement.py`` prints both tables.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from callscope.benchmarks.bfcl.agreement import wrong_value
from callscope.benchmarks.bfcl.package import (
    checker_model_name,
    checker_module,
    python_language,
)
from callscope.benchmarks.bfcl.single import (
    NO_VALUE,
    bfcl_answer_verdict,
    is_acceptable,
    resolve_entry,
)
from callscope.core.jsonl import copy_json
from callscope.core.stats import seeded_rng
from callscope.saag.answer import score_answer
from callscope.saag.cascade import find_spec
from callscope.saag.extrinsic import is_correct
from callscope.types import Case, ToolCall

#: how a gold answer of several calls is perturbed (:func:`perturbed_answers`)
ANSWER_PERTURBATION_KINDS: tuple[str, ...] = (
    "call_dropped",
    "call_duplicated",
    "extra_call",
    "value_changed",
    "calls_reordered",
    "values_swapped",
)

Answer = list[dict[str, Any]]


def gold_answer(case: Case) -> Answer:
    """The case's gold calls ``[{"name", "arguments"}]`` (fresh copies, in gold order)."""
    calls = case.gold_calls
    if not calls:
        raise ValueError(f"case {case.id!r} has no gold call")
    return [{"name": g["name"], "arguments": copy_json(g.get("arguments") or {})} for g in calls]


def perturbed_answers(case: Case, rng: random.Random) -> dict[str, Answer | None]:
    """One perturbed copy of the gold answer per kind, ``None`` where the kind does not apply.

    * ``call_dropped``: one call left out;
    * ``call_duplicated``: one call repeated right after itself;
    * ``extra_call``: a call of a function of the case's registry that no gold call names is
      added at the end (its required parameters filled by :func:`placeholder_arguments`);
      ``None`` when every function is a gold function;
    * ``value_changed``: one argument of one call gets a value of the same type that its gold
      call does not accept (:func:`callscope.benchmarks.bfcl.agreement.perturbed_calls`' ``wrong_value`` rule);
    * ``calls_reordered``: the calls in reverse order (``None`` when that is the same answer);
    * ``values_swapped``: two calls of one function exchange the value of one parameter that
      neither call's gold accepts from the other (``None`` when no such pair exists).
    """
    gold = gold_answer(case)
    golds = list(case.gold_calls or ())
    n = len(gold)
    out: dict[str, Answer | None] = {}
    i = rng.randrange(n)
    out["call_dropped"] = gold[:i] + gold[i + 1 :]
    i = rng.randrange(n)
    out["call_duplicated"] = gold[: i + 1] + [copy_json(gold[i])] + gold[i + 1 :]

    gold_names = {g["name"] for g in gold}
    others = sorted(f["name"] for f in case.functions if f.get("name") not in gold_names)
    if others:
        name = rng.choice(others)
        spec = find_spec(case.functions, name) or {}
        out["extra_call"] = [
            *copy_json(gold),
            {"name": name, "arguments": placeholder_arguments(spec)},
        ]
    else:
        out["extra_call"] = None

    candidates = []
    for k, call in enumerate(gold):
        spec = find_spec(case.functions, call["name"])
        properties = (spec or {}).get("parameters", {}).get("properties", {})
        acceptable = golds[k].get("acceptable") or {}
        for param in sorted(call["arguments"]):
            value = call["arguments"][param]
            wrong = wrong_value(value, acceptable.get(param, [value]), properties.get(param))
            if wrong is not NO_VALUE:
                candidates.append((k, param, wrong))
    if candidates:
        k, param, wrong = rng.choice(candidates)
        changed = copy_json(gold)
        changed[k]["arguments"][param] = wrong
        out["value_changed"] = changed
    else:
        out["value_changed"] = None

    reordered = copy_json(gold[::-1])
    out["calls_reordered"] = None if reordered == gold else reordered

    swaps = []
    for a in range(n):
        for b in range(a + 1, n):
            if gold[a]["name"] != gold[b]["name"]:
                continue
            acc_a = golds[a].get("acceptable") or {}
            acc_b = golds[b].get("acceptable") or {}
            args_a, args_b = gold[a]["arguments"], gold[b]["arguments"]
            for param in sorted(set(args_a) & set(args_b)):
                va, vb = args_a[param], args_b[param]
                if not is_acceptable(va, acc_b.get(param, [vb])) and not is_acceptable(
                    vb, acc_a.get(param, [va])
                ):
                    swaps.append((a, b, param))
    if swaps:
        a, b, param = rng.choice(swaps)
        swapped = copy_json(gold)
        swapped[a]["arguments"][param], swapped[b]["arguments"][param] = (
            gold[b]["arguments"][param],
            gold[a]["arguments"][param],
        )
        out["values_swapped"] = swapped
    else:
        out["values_swapped"] = None
    return out


def placeholder_arguments(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A value for every required parameter of ``spec`` by its JSON Schema type: string
    ``"example"``, integer ``1``, number ``1.5``, boolean ``True``, array ``["example"]``,
    object ``{}``, untyped ``"example"``; an enum's first value.

    >>> placeholder_arguments({"parameters": {"properties": {"n": {"type": "integer"},
    ...     "u": {"type": "string", "enum": ["c", "f"]}}, "required": ["n", "u"]}})
    {'n': 1, 'u': 'c'}
    """
    parameters = spec.get("parameters") or {}
    properties = parameters.get("properties") or {}
    out: dict[str, Any] = {}
    for param in parameters.get("required") or []:
        schema = properties.get(param) or {}
        if schema.get("enum"):
            out[param] = copy_json(schema["enum"][0])
            continue
        out[param] = copy_json(_PLACEHOLDERS.get(str(schema.get("type")), "example"))
    return out


_PLACEHOLDERS: dict[str, Any] = {
    "string": "example",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": ["example"],
    "object": {},
}


def _tool_calls(answer: Answer) -> list[ToolCall]:
    return [ToolCall(c["name"], dict(c["arguments"])) for c in answer]


def callscope_answer_solved(case: Case, answer: Answer) -> bool:
    """callscope's answer solve of ``answer`` for a case with a list of gold calls:
    :func:`~callscope.saag.answer.score_answer`'s ``solved`` (an optimal one-to-one matching,
    every pair right, nothing missing or extra)."""
    return score_answer(_tool_calls(answer), list(case.gold_calls or ()), case.functions).solved


def bfcl_pair_matrix(case: Case, answer: Answer) -> list[list[bool]]:
    """``m[j][i]``: whether BFCL's ``simple_function_checker`` accepts model call ``i`` for
    gold call ``j`` (what ``parallel_function_checker_no_order`` asks pair by pair)."""
    module = checker_module()
    entry, ground_truth, name_map, _ = resolve_entry(case, None)
    out = []
    for possible in ground_truth:
        ((gold_name, _acceptable),) = possible.items()
        doc = module.find_description(entry["function"], gold_name)
        row = []
        for call in answer:
            item = {name_map.get(call["name"], call["name"]): dict(call["arguments"])}
            try:
                verdict = module.simple_function_checker(
                    doc, item, possible, python_language(), checker_model_name()
                )
                row.append(bool(verdict.get("valid")))
            except Exception:  # BFCL's checker indexes freely into odd outputs
                row.append(False)
        out.append(row)
    return out


def _has_perfect_matching(m: list[list[bool]]) -> bool:
    """Whether every row of ``m`` can be given a distinct column where it is true (augmenting
    paths; rows and columns are few)."""
    owner: dict[int, int] = {}

    def place(j: int, seen: set[int]) -> bool:
        for i, ok in enumerate(m[j]):
            if ok and i not in seen:
                seen.add(i)
                if i not in owner or place(owner[i], seen):
                    owner[i] = j
                    return True
        return False

    return all(place(j, set()) for j in range(len(m)))


def disagreement_reason(case: Case, answer: Answer, bfcl_valid: bool) -> str:
    """Why BFCL's parallel verdict and callscope's answer solve differ on ``answer``:

    * ``bfcl_greedy_order``: the calls can be matched one to one to gold calls that BFCL's own
      per-call checker accepts, but BFCL's greedy order (for each gold call in turn, the first
      unmatched model call that passes) took a call a later gold call needed;
    * ``per_call: model i / gold j: BFCL <v>, callscope <v>``: the two per-call verdicts differ
      on a pair (value semantics), the first such pair named;
    * ``other``: neither (not expected)."""
    matrix = bfcl_pair_matrix(case, answer)
    golds = list(case.gold_calls or ())
    if not bfcl_valid and len(answer) == len(golds) and _has_perfect_matching(matrix):
        return "bfcl_greedy_order"
    for j, gold in enumerate(golds):
        for i, call in enumerate(_tool_calls(answer)):
            mine = is_correct(call, gold, case.functions)
            if mine != matrix[j][i]:
                return f"per_call: model {i} / gold {j}: BFCL {matrix[j][i]}, callscope {mine}"
    return "other"


def answer_agreement_report(
    cases: Iterable[Case],
    *,
    perturb: bool = True,
    seed: int = 0,
    max_examples: int | None = None,
) -> dict[str, Any]:
    """BFCL's ``parallel_function_checker_no_order`` (:func:`bfcl_answer_verdict`) against
    callscope's answer solve (:func:`callscope_answer_solved`) on every case's gold answer and,
    with ``perturb``, on one answer per kind of :data:`ANSWER_PERTURBATION_KINDS`
    (reproducible from ``seed`` and the case id; a kind that does not apply is counted in
    ``skipped``). A case whose gold answer BFCL's own checker rejects is a data defect: listed
    in ``data_defects`` (``{"id", "category", "error"}``) and left out.

    Returns ``{"total", "agree", "disagree", "by_kind": {kind: {"total", "agree",
    "disagree", "bfcl_valid", "score_valid"}}, "by_category": {category: {"cases", "total",
    "agree", "disagree"}}, "skipped", "data_defects", "disagreements": [{"id", "category",
    "kind", "answer", "bfcl_valid", "bfcl_error", "score_valid", "reason"}]}`` (at most
    ``max_examples`` disagreements listed, all when ``None``).
    """
    kinds = ("gold", *ANSWER_PERTURBATION_KINDS) if perturb else ("gold",)
    by_kind = {
        k: {"total": 0, "agree": 0, "disagree": 0, "bfcl_valid": 0, "score_valid": 0} for k in kinds
    }
    by_category: dict[str, dict[str, int]] = {}
    skipped: Counter[str] = Counter()
    defects: list[dict[str, Any]] = []
    examples: list[dict[str, Any]] = []
    for case in cases:
        category = str(case.meta.get("category"))
        gold = gold_answer(case)
        valid, error = bfcl_answer_verdict(case, gold)
        if not valid:
            defects.append({"id": case.id, "category": category, "error": error})
            continue
        cat = by_category.setdefault(category, {"cases": 0, "total": 0, "agree": 0, "disagree": 0})
        cat["cases"] += 1
        answers: dict[str, Answer | None] = {"gold": gold}
        if perturb:
            answers.update(perturbed_answers(case, seeded_rng(seed, case.id)))
        for kind in kinds:
            answer = answers.get(kind)
            if answer is None:
                skipped[kind] += 1
                continue
            bfcl_valid, bfcl_error = (
                (valid, error) if kind == "gold" else bfcl_answer_verdict(case, answer)
            )
            score_valid = callscope_answer_solved(case, answer)
            row = by_kind[kind]
            row["total"] += 1
            cat["total"] += 1
            row["bfcl_valid"] += bfcl_valid
            row["score_valid"] += score_valid
            if bfcl_valid == score_valid:
                row["agree"] += 1
                cat["agree"] += 1
                continue
            row["disagree"] += 1
            cat["disagree"] += 1
            if max_examples is None or len(examples) < max_examples:
                examples.append(
                    {
                        "id": case.id,
                        "category": category,
                        "kind": kind,
                        "answer": answer,
                        "bfcl_valid": bfcl_valid,
                        "bfcl_error": bfcl_error,
                        "score_valid": score_valid,
                        "reason": disagreement_reason(case, answer, bfcl_valid),
                    }
                )
    total = sum(r["total"] for r in by_kind.values())
    disagree = sum(r["disagree"] for r in by_kind.values())
    return {
        "total": total,
        "agree": total - disagree,
        "disagree": disagree,
        "by_kind": by_kind,
        "by_category": by_category,
        "skipped": dict(skipped),
        "data_defects": defects,
        "disagreements": examples,
    }
