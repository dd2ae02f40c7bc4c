"""Registry-scale benchmark: each query re-posed with S functions, the gold one plus distractors.

Follows the SAAG paper (section 3, Appendix C): for every source case the gold function is
kept and ``S - 1`` distractors are added from a pool so each registry holds exactly S
functions, for every S in ``scales``; the query and gold call do not change with S.

What a user can rely on:

* **Nested registries.** Distractors are drawn once per case, ``max(scales) - 1`` of them,
  and every scale takes a prefix: the S=10 registry is the S=5 registry with five more
  functions appended, the S=15 registry the S=10 one with five more (as in Figure 5).
* **Gold position.** ``"first"`` puts the gold function at index 0 (the paper's Figure 5).
  ``"random"`` draws the index once per case, uniformly in ``[0, min(scales) - 1]``, and keeps
  it at every scale, so the nesting above still holds. The index is in
  ``meta["gold_position"]``.
* **No name clashes.** The pool is deduplicated by name (first spec wins) and every function
  whose name equals the gold name is excluded, so a registry never holds two functions
  with one name, even when the pool carries another spec under the gold's name.
* **Distractors.** ``"uniform"``: a uniform draw without replacement (the paper's setting).
  ``"similar"``: the pool ranked by lexical similarity to the gold function (rapidfuzz
  ``token_set_ratio`` over name with ``_`` as spaces, description and parameter names;
  ties broken by pool order), most similar first, to make confusable registries. It
  scores every pool function once per distinct gold function (about 11 ms per gold
  against a 6,000-function pool on one core).
* **Determinism.** One ``random.Random(seed)`` drives case sampling, distractor draws and
  gold positions in a fixed order, so the same inputs and seed give byte-identical JSONL.

Answers of several calls or none (issue 28; :func:`kept_functions`): a case keeps a block of
functions at every scale, placed at ``gold_position`` (drawn in ``[0, min(scales) - kept]``),
and ``S - kept`` distractors fill the rest:

* one gold call: the gold function (the paper's setting above; a build of single-call cases
  is byte-identical to what it was);
* several gold calls (BFCL's parallel categories): the function of every distinct gold name;
* no call is right (gold ``[]``, BFCL's irrelevance categories): the case's own functions, all
  unrelated to the request; the first ``min(scales)`` are kept and the others come first
  among the distractors (so a case with more own functions than the smallest scale still
  nests, and larger scales hold more of its own functions);
* any call is right (no gold, ``meta["expects_call"]``: ``live_relevance``): every own
  function is kept.

``meta["kept_functions"]`` gives the block's size for every case but the one-call ones.
Distractors are never checked for relevance to the request: on a no-call case a drawn
distractor can be a function that does answer it, and the no-call gold then no longer holds
for that registry. Measured on a build of BFCL's simple_python, multiple, parallel,
parallel_multiple and irrelevance (bfcl-eval 2026.3.23, seed 0): 15 of the 240 irrelevance
queries have a near-identical query among the call cases (rapidfuzz ``token_set_ratio`` >= 85);
``uniform`` draws put that case's gold function into none of their registries at S = 5 / 10 /
15, ``similar`` draws into 3 / 3 / 4.

Output cases are ordered by source case, then by ascending scale; ids are
``<source id>@S<scale>``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from rapidfuzz import fuzz, process, utils

from callscope.core.jsonl import copy_json, write_jsonl
from callscope.types import Case

DistractorMode = Literal["uniform", "similar"]
GoldPosition = Literal["random", "first"]


def default_pool(cases: Sequence[Case]) -> list[dict[str, Any]]:
    """All functions of all cases, in case order, deduplicated by name (first spec wins)."""
    return dedupe_by_name(f for case in cases for f in case.functions)


def dedupe_by_name(functions: Any) -> list[dict[str, Any]]:
    """Keep the first function of each name, in order."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for spec in functions:
        name = spec.get("name")
        if not isinstance(name, str) or name in seen:
            continue
        seen.add(name)
        out.append(spec)
    return out


def function_text(spec: dict[str, Any]) -> str:
    """Text a function is compared by in ``"similar"`` mode: name with ``_`` as spaces,
    description, parameter names (``_`` as spaces too)."""
    params = spec.get("parameters")
    props = params.get("properties") if isinstance(params, dict) else None
    names = list(props) if isinstance(props, dict) else []
    description = spec.get("description")
    parts = [str(spec.get("name", "")), description if isinstance(description, str) else ""]
    parts.extend(str(n) for n in names)
    return " ".join(p.replace("_", " ") for p in parts if p)


def _rank_pool(gold_text: str, pool_texts: list[str], excluded: set[int], k: int) -> list[int]:
    """The ``k`` pool indices most similar to ``gold_text`` (ties: lower index), skipping
    ``excluded``. ``pool_texts`` are already passed through ``utils.default_process``."""
    scores = process.cdist(
        [utils.default_process(gold_text)],
        pool_texts,
        scorer=fuzz.token_set_ratio,
        dtype=np.float64,
    )[0]
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order if i not in excluded][:k]


def _gold_function(case: Case) -> dict[str, Any]:
    if not case.gold or not isinstance(case.gold.get("name"), str):
        raise ValueError(f"case {case.id}: no gold call to build a registry around")
    name = case.gold["name"]
    for spec in case.functions:
        if spec.get("name") == name:
            return spec
    raise ValueError(f"case {case.id}: gold function {name!r} is not among its functions")


def kept_functions(case: Case, smallest: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The functions a case keeps at every scale, and its own functions that come before any
    drawn distractor (module docstring, "Answers of several calls or none").

    One gold call: ``([gold spec], [])``. A list of gold calls: the spec of every distinct
    gold name, in gold order, and ``[]``. No gold call (``[]``, or no gold, as
    ``live_relevance``): the case's own functions (deduplicated by name), the first
    ``smallest`` of them kept and the rest first in line. Raises ``ValueError`` when a gold
    function is not among the case's functions, or when the kept functions outnumber the
    smallest scale (a case with more distinct gold functions, or a no-gold case that expects
    a call with more own functions, than ``smallest``).
    """
    if isinstance(case.gold, dict) or case.gold is None and not case.meta.get("expects_call"):
        return [_gold_function(case)], []
    own = dedupe_by_name(case.functions)
    if case.gold:  # several gold calls: every distinct gold function, in gold order
        specs = {spec["name"]: spec for spec in own}
        kept: list[dict[str, Any]] = []
        for name in dict.fromkeys(g.get("name") for g in case.gold):
            if name not in specs:
                raise ValueError(
                    f"case {case.id}: gold function {name!r} is not among its functions"
                )
            kept.append(specs[name])
        rest: list[dict[str, Any]] = []
    elif case.gold is None:  # any call is right (live_relevance): every own function kept
        kept, rest = own, []
    else:  # no call is right: own functions are unrelated, any prefix of them will do
        kept, rest = own[:smallest], own[smallest:]
    if len(kept) > smallest:
        raise ValueError(
            f"case {case.id} keeps {len(kept)} functions, more than the smallest scale {smallest}"
        )
    return kept, rest


def _check_scales(scales: Sequence[int]) -> list[int]:
    ordered = sorted(set(scales))
    if not ordered:
        raise ValueError("scales is empty")
    if any(not isinstance(s, int) or isinstance(s, bool) or s < 1 for s in ordered):
        raise ValueError(f"scales must be positive integers, got {list(scales)}")
    return ordered


def build_registry_benchmark(
    cases: Sequence[Case],
    pool: Sequence[dict[str, Any]] | None = None,
    *,
    scales: Sequence[int] = (5, 10, 15),
    n: int | None = None,
    seed: int = 0,
    distractors: DistractorMode = "uniform",
    gold_position: GoldPosition = "random",
) -> list[Case]:
    """Build one case per (source case, scale) with a registry of exactly ``scale`` functions.

    ``pool`` defaults to ``default_pool(cases)``. ``n`` samples that many source cases with
    ``random.Random(seed)`` (kept in their original order); ``None`` takes all. Raises
    ``ValueError`` when a case has no gold function among its functions, when ``n`` exceeds
    the number of cases, or when the pool holds too few functions for a scale (the message
    names the scale and the pool size). Inputs are not modified; outputs hold copies.
    """
    if distractors not in ("uniform", "similar"):
        raise ValueError(f"distractors must be 'uniform' or 'similar', got {distractors!r}")
    if gold_position not in ("random", "first"):
        raise ValueError(f"gold_position must be 'random' or 'first', got {gold_position!r}")
    ordered_scales = _check_scales(scales)
    smallest, largest = ordered_scales[0], ordered_scales[-1]
    functions_pool = dedupe_by_name(pool if pool is not None else default_pool(cases))

    rng = random.Random(seed)
    if n is None:
        chosen = list(cases)
    else:
        if n < 0 or n > len(cases):
            raise ValueError(f"n={n} but there are {len(cases)} cases")
        chosen = [cases[i] for i in sorted(rng.sample(range(len(cases)), n))]

    pool_index = {spec["name"]: i for i, spec in enumerate(functions_pool)}
    pool_texts: list[str] | None = None
    rankings: dict[tuple[str, str], list[int]] = {}
    if distractors == "similar":
        pool_texts = [utils.default_process(function_text(f)) for f in functions_pool]

    out: list[Case] = []
    for case in chosen:
        kept, own_rest = kept_functions(case, smallest)
        kept_names = {spec["name"] for spec in kept} | {spec["name"] for spec in own_rest}
        # the pool's specs under a kept name, if any
        excluded = sorted(pool_index[name] for name in kept_names if name in pool_index)
        available = len(functions_pool) - len(excluded)
        need = max(0, largest - len(kept) - len(own_rest))
        if available < need:
            too_big = next(s for s in ordered_scales if s - len(kept) - len(own_rest) > available)
            raise ValueError(
                f"scale {too_big} needs {too_big - len(kept) - len(own_rest)} distractors for "
                f"case {case.id}, but the pool of {len(functions_pool)} functions holds only "
                f"{available} not named {_names(kept)}: pick scales of at most "
                f"{available + len(kept) + len(own_rest)} (--scales)"
            )
        if pool_texts is None:
            # Same draw as rng.sample(candidates, k) over the pool minus the excluded specs.
            indices = [_skip(i, excluded) for i in rng.sample(range(available), need)]
        else:
            text = " ".join(function_text(spec) for spec in kept) or case.query
            key = (_names(kept), text)
            if key not in rankings:  # many cases share one gold function
                rankings[key] = _rank_pool(text, pool_texts, set(excluded), need)
            indices = rankings[key]
        picked = own_rest + [functions_pool[i] for i in indices]
        position = 0 if gold_position == "first" else rng.randrange(smallest - len(kept) + 1)
        for scale in ordered_scales:
            others = picked[: scale - len(kept)]
            registry = others[:position] + kept + others[position:]
            meta = {
                **copy_json(case.meta),
                "source_id": case.id,
                "gold_position": position,
                "distractors": distractors,
            }
            if not isinstance(case.gold, dict):
                meta["kept_functions"] = len(kept)
            out.append(
                Case(
                    id=f"{case.id}@S{scale}",
                    query=case.query,
                    functions=copy_json(registry),
                    gold=copy_json(case.gold),
                    scale=scale,
                    meta=meta,
                )
            )
    return out


def _names(specs: Sequence[dict[str, Any]]) -> str:
    return ", ".join(repr(spec["name"]) for spec in specs) or "nothing"


def _skip(slot: int, excluded: Sequence[int]) -> int:
    """The ``slot``-th pool index that is not in ``excluded`` (sorted ascending)."""
    for e in excluded:
        if slot >= e:
            slot += 1
    return slot


def benchmark_to_jsonl(cases: Sequence[Case], path: str | Path) -> int:
    """Write cases as the ``run`` cases JSONL (``Case.to_dict`` per line); returns the count."""
    return write_jsonl(path, (case.to_dict() for case in cases))
