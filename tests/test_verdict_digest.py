"""Speed work must not move a verdict (issue 49): a digest of what the cascade says on the
whole installed BFCL single-turn set and on a synthetic registry set of 15 to 10,000
functions, pinned. The digest was computed with the code before issue 49's changes (the
registry index keyed by list identity, the Python trigram index) and must read the same
after them.

* BFCL: every gold call of every installed single-turn case that has one (the eleven
  categories the leaderboard reads), in both grounding modes, as given and three ways wrong:
  the name misspelled (stage 1: NCS over the case's registry), the first argument's name cut
  short (stage 2) and the first string or number replaced by one no request states (stage 3).
  Every case is given its own copy of its registry's list, as a results file whose rows each
  carry their functions does.
* Extrinsic scores: the 10,511 calls of the BFCL grader-agreement harness (every single-call
  gold call and its systematic perturbations) parsed from their JSON text and scored against
  the gold, twice over.
* Registry set: calls made against the first 15 functions of nested synthetic registries of
  15, 100, 1,000 and 10,000 functions (correct, misspelled name, drifted parameter,
  ungrounded value), each diagnosed against every size.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from typing import Any

import pytest

from callscope.saag.cascade import diagnose
from callscope.types import ToolCall

#: sha256 of :func:`extrinsic_scores`, twice over (the second from the caches)
EXTRINSIC_DIGEST = "84883c2642c176254e8cd78f2f20ddfd913bddeceee3a665d0500fbe11606aa6"
#: sha256 of :func:`bfcl_verdicts` and :func:`registry_verdicts` (cascade version 4)
BFCL_DIGEST = "42b36a8b98ac35998a6ca5f78ab6fa9bf192af61200bce447d1158a3e2d9ebd7"
REGISTRY_DIGEST = "ec3f30acb463009b0188ba6568cf6368253ca00977c9eeeaf0965263d8664c77"


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def _digest(rows: list[Any]) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()


def _variants(call: dict[str, Any]) -> list[tuple[str, ToolCall]]:
    """The gold call and three wrong ones (module docstring)."""
    name, arguments = call["name"], dict(call["arguments"])
    out = [("gold", ToolCall(name=name, arguments=arguments))]
    out.append(("name", ToolCall(name=name[:-1] + "x" + name[-1:], arguments=arguments)))
    if arguments:
        first = next(iter(arguments))
        cut = {(first[:-1] or "x") if k == first else k: v for k, v in arguments.items()}
        out.append(("param", ToolCall(name=name, arguments=cut)))
    for k, v in arguments.items():
        if isinstance(v, str) and v:
            out.append(("value", ToolCall(name=name, arguments={**arguments, k: "Zyxqv Plorth"})))
            break
        if isinstance(v, int | float) and not isinstance(v, bool):
            out.append(("value", ToolCall(name=name, arguments={**arguments, k: 987654.321})))
            break
    return out


def bfcl_verdicts() -> list[Any]:
    from callscope.benchmarks.bfcl.single import load_bfcl_detailed
    from callscope.benchmarks.bfcl.single_results import INSTALLED_CATEGORIES

    cases = load_bfcl_detailed(list(INSTALLED_CATEGORIES)).cases
    out: list[Any] = []
    for mode in ("lexical", "registry"):
        for case in cases:
            functions = copy.deepcopy(case.functions)  # each row its own copy
            for n, call in enumerate(case.gold_calls or ()):
                for how, variant in _variants(call):
                    d = diagnose(variant, functions, case.query, grounding=mode)
                    out.append([mode, case.id, n, how, _rounded(d.to_dict())])
    return out


_VERBS = ["get", "set", "create", "list", "find", "book", "send", "check", "convert", "search"]
_NOUNS = ["weather", "stock_price", "flight", "hotel", "invoice", "user", "email", "recipe",
          "movie", "order", "payment", "route", "event", "reminder", "note", "currency"]  # fmt: skip
_PARAMS = ["city", "date", "amount", "currency", "title", "query", "limit", "language",
           "origin", "destination", "price", "unit"]  # fmt: skip
_WORDS = ["Paris", "Tokyo", "Berlin", "jazz", "pasta", "Monday", "EUR", "Alice", "Oslo"]


def _registry(n: int, rng: random.Random) -> list[dict[str, Any]]:
    names: list[str] = []
    seen: set[str] = set()
    i = 0
    while len(names) < n:
        name = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
        if name in seen:
            name = f"{name}_{i}"
        i += 1
        if name not in seen:
            seen.add(name)
            names.append(name)
    out = []
    for name in names:
        props = rng.sample(_PARAMS, rng.randint(2, 4))
        schema = {
            p: {"type": "number" if p in ("amount", "limit", "price") else "string"} for p in props
        }
        out.append(
            {
                "name": name,
                "description": f"{name.replace('_', ' ')} for the user",
                "parameters": {"type": "object", "properties": schema, "required": props[:2]},
            }
        )
    return out


def _call(kind: str, spec: dict[str, Any], rng: random.Random) -> tuple[ToolCall, str]:
    args: dict[str, Any] = {}
    words = []
    for p, schema in spec["parameters"]["properties"].items():
        v: Any = (
            rng.choice([12, 84.5, 250, 3]) if schema["type"] == "number" else rng.choice(_WORDS)
        )
        words.append(f"{p} {v}")
        args[p] = v
    query = f"Please {spec['name'].replace('_', ' ')} with " + ", ".join(words) + "."
    name = spec["name"]
    if kind == "wrong_name":
        name = name.replace("_", "") + "_now"
    elif kind == "drifted":
        first = next(iter(args))
        args[first[:-1]] = args.pop(first)
    elif kind == "ungrounded":
        last = list(args)[-1]
        args[last] = 999999 if isinstance(args[last], int | float) else "Zanzibar"
    return ToolCall(name=name, arguments=args), query


def registry_verdicts(calls_per_kind: int = 25) -> list[Any]:
    rng = random.Random(49)
    full = _registry(10_000, rng)
    calls = [
        (kind, *_call(kind, rng.choice(full[:15]), rng))
        for kind in ("correct", "wrong_name", "drifted", "ungrounded")
        for _ in range(calls_per_kind)
    ]
    out: list[Any] = []
    for size in (15, 100, 1000, 10_000):
        functions = full[:size]
        for mode in ("lexical", "registry"):
            for kind, call, query in calls:
                d = diagnose(call, functions, query, grounding=mode)
                out.append([size, mode, kind, _rounded(d.to_dict())])
    return out


def test_the_registry_set_reads_as_before() -> None:
    assert _digest(registry_verdicts()) == REGISTRY_DIGEST
    assert _digest(registry_verdicts()) == REGISTRY_DIGEST  # from the caches


def test_the_whole_bfcl_set_reads_as_before() -> None:
    pytest.importorskip("bfcl_eval")
    assert _digest(bfcl_verdicts()) == BFCL_DIGEST
    # again: every request's evidence and every verdict now comes from the caches
    assert _digest(bfcl_verdicts()) == BFCL_DIGEST


def extrinsic_scores() -> list[Any]:
    from callscope.benchmarks.bfcl.agreement import gold_call, perturbed_calls
    from callscope.benchmarks.bfcl.single import load_bfcl_single
    from callscope.parse import parse_output
    from callscope.saag.extrinsic import extrinsic

    work = []
    for case in load_bfcl_single():
        calls = {"gold": gold_call(case)}
        calls.update(perturbed_calls(case, random.Random(f"0:{case.id}")))
        work += [(case, json.dumps(c)) for c in calls.values() if c is not None]
    out = []
    for _ in range(2):
        for case, text in work:
            out.append(extrinsic(parse_output(text).first, case.gold, case.functions))
    return out


def test_extrinsic_scores_read_as_before() -> None:
    pytest.importorskip("bfcl_eval")
    assert _digest(extrinsic_scores()) == EXTRINSIC_DIGEST
