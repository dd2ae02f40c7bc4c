"""Per-call throughput of callscope's full work against BFCL's AST checker, side by side on the
same calls in one run, one core, cold and warm; and the cost of stage 1 as the registry grows
(issue 49: cold >= 0.2x, warm >= 0.5x, registry 1,000 / 15 <= 2x; issue 16, item 4).

The calls: the 10,511 calls of the BFCL grader-agreement harness
(:func:`callscope.benchmarks.bfcl.agreement.agreement_report`): every single-call gold call of
the four default categories and its systematic perturbations. callscope's work per call is
what ``callscope score`` does with a row: parse the raw JSON text of the call
(:func:`~callscope.parse.parse_output`), the cascade with all 8 metrics
(:func:`~callscope.saag.cascade.diagnose`, in each grounding mode) and the extrinsic metrics
against the gold (:func:`~callscope.saag.extrinsic.extrinsic`). BFCL's work is its own
``ast_checker`` called directly with the entry, the call and the possible answer already
resolved (our wrapper's look-ups are not counted against BFCL). CPU time of this process,
sides interleaved. The cases are split in two halves (alternate cases): a first pass over
one half warms the process (``fresh``: imports, knowledge tables, pint's registry included);
the other half is then timed on its first pass (``cold``: every request's evidence built, as
for a results file scored once) and again (``warm``, best of ``--repeats``: the same requests
again, as a leaderboard, a case set or a correction loop makes them). Prints microseconds per
call, the split of callscope's time, and the throughput ratio BFCL-time / callscope-time,
against BFCL's best time (its own first pass is slower). Then the registry section:
``registry_scale.py``'s calls (correct, misspelled name, drifted parameter, ungrounded value,
against the first 15 functions) diagnosed against nested
registries of 15, 100, 1,000 and 10,000 functions, with each size's ratio to 15
(``--registry-seconds 0`` skips it). The garbage collector's time inside the cascade is
printed apart (``of which gc``: caches that grow during a first pass make the collector walk
more). The load average is printed before and after (the machine
is shared: compare ratios from one run, not figures from two). ``--profile N`` then prints the
N costliest functions of callscope's side by own time (``cProfile``, one more pass per mode).

Measured (issue 16 item 4, loaded 2-core machine, side by side with the code before): full
per-call throughput 0.18-0.19x -> 0.24x (lexical), 0.12-0.13x -> 0.14-0.15x (registry).

    python benchmarks/bfcl_throughput.py [--repeats 3] [--mode registry] [--profile 25]
                                         [--registry-seconds 0.5]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import time
from typing import Any

from callscope.benchmarks.bfcl.agreement import gold_call, perturbed_calls
from callscope.benchmarks.bfcl.package import ast_checker, checker_model_name, python_language
from callscope.benchmarks.bfcl.single import load_bfcl_single, resolve_entry
from callscope.parse import parse_output
from callscope.saag.cascade import diagnose
from callscope.saag.extrinsic import extrinsic
from callscope.saag.groundings import GROUNDINGS, get_grounding
from callscope.saag.normalise.knowledge.base import own_the_process


def _work() -> list[tuple[Any, dict[str, Any], str, tuple[Any, ...]]]:
    """``(case, call, raw text, BFCL checker arguments)`` for every harness call."""
    out = []
    language, model = python_language(), checker_model_name()
    for case in load_bfcl_single():
        calls = {"gold": gold_call(case)}
        calls.update(perturbed_calls(case, random.Random(f"0:{case.id}")))
        entry, ground_truth, name_map, category = resolve_entry(case, None)
        for call in calls.values():
            if call is None:
                continue
            name = name_map.get(call["name"], call["name"])
            bfcl_args = (
                entry["function"],
                [{name: dict(call["arguments"])}],
                ground_truth,
                language,
                category,
                model,
            )
            out.append((case, call, json.dumps(call), bfcl_args))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mode", choices=[*GROUNDINGS, "all"], default="all")
    ap.add_argument("--profile", type=int, default=0, metavar="N")
    ap.add_argument("--registry-seconds", type=float, default=0.5, help="per size; 0: skip")
    args = ap.parse_args()
    own_the_process()  # as the `callscope` command does: its knowledge tables are frozen
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    every = _work()
    checker = ast_checker()
    modes = list(GROUNDINGS) if args.mode == "all" else [args.mode]
    # two halves by case (alternate cases): the first warms the process (imports, tables,
    # pint: its first pass is the "fresh" line); the second is timed on its first pass
    # ("cold": requests never seen) and then again ("warm": best of the repeats)
    ids = sorted({case.id for case, *_ in every})
    half = {cid for i, cid in enumerate(ids) if i % 2}
    warmup = [w for w in every if w[0].id not in half]
    work = [w for w in every if w[0].id in half]
    times: dict[str, dict[str, float]] = {"fresh": {}, "cold": {}, "warm": {}}

    gc_seconds = [0.0, 0.0]  # total, start of the running collection

    def on_gc(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            gc_seconds[1] = time.process_time()
        else:
            gc_seconds[0] += time.process_time() - gc_seconds[1]

    gc.callbacks.append(on_gc)

    def one_pass(items: list[Any], into: dict[str, float]) -> None:
        def keep(key: str, dt: float) -> None:
            into[key] = min(into.get(key, dt), dt)

        t0 = time.process_time()
        for *_, bfcl_args in items:
            with contextlib.suppress(Exception):  # BFCL's checker indexes into odd outputs
                checker(*bfcl_args)
        keep("bfcl", (time.process_time() - t0) / len(items))
        parsed = []
        t0, g0 = time.process_time(), gc_seconds[0]
        for _case, _call, text, _ in items:
            parsed.append(parse_output(text))
        keep("parse", (time.process_time() - t0) / len(items))
        keep("  of which gc[parse]", (gc_seconds[0] - g0) / len(items))
        t0, g0 = time.process_time(), gc_seconds[0]
        for (case, *_), p in zip(items, parsed, strict=True):
            extrinsic(p.first, case.gold, case.functions)
        keep("extrinsic", (time.process_time() - t0) / len(items))
        keep("  of which gc[extrinsic]", (gc_seconds[0] - g0) / len(items))
        for name in modes:
            mode = get_grounding(name)
            t0, g0 = time.process_time(), gc_seconds[0]
            for (case, *_), p in zip(items, parsed, strict=True):
                diagnose(p.first, case.functions, case.query, grounding=mode)
            keep(f"diagnose[{name}]", (time.process_time() - t0) / len(items))
            keep(f"  of which gc[{name}]", (gc_seconds[0] - g0) / len(items))

    one_pass(warmup, times["fresh"])
    one_pass(work, times["cold"])
    for _ in range(args.repeats):
        one_pass(work, times["warm"])
    bfcl_best = min(t["bfcl"] for t in times.values())
    goals = {"warm": 0.5, "cold": 0.2, "fresh": 0.2}
    titles = {
        "warm": f"warm (the same requests again, best of {args.repeats})",
        "cold": "cold (first pass over requests never seen, process warmed on other cases)",
        "fresh": "fresh (first pass of a fresh process: imports and tables included)",
    }
    for key in ("warm", "cold", "fresh"):
        per = {k: v * 1e6 for k, v in {**times[key], "bfcl": bfcl_best}.items()}
        n = len(work) if key != "fresh" else len(warmup)
        print(f"{n} BFCL calls (gold + perturbed), {titles[key]}, CPU time")
        for k, v in per.items():
            print(f"  {k:20s} {v:8.1f} us/call  ({v / per['bfcl']:.2f}x BFCL's time)")
        for name in modes:
            full = per["parse"] + per[f"diagnose[{name}]"] + per["extrinsic"]
            collector = sum(per[f"  of which gc[{k}]"] for k in ("parse", "extrinsic", name))
            print(
                f"  full per-call [{name}] less the garbage collector's {collector:.1f} us: "
                f"{per['bfcl'] / (full - collector):.3f}x"
            )
            print(
                f"  full per-call [{name}]: {full:8.1f} us/call; "
                f"throughput vs BFCL ast_checker: {per['bfcl'] / full:.3f}x "
                f"(goal >= {goals[key]}x)"
            )
    if args.registry_seconds > 0:
        _registry(args.registry_seconds)
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if args.profile:
        _profile(work, modes, args.profile)


def _registry(seconds: float) -> None:
    """``registry_scale.py``'s table: microseconds per ``diagnose`` by kind and size, and
    each size's ratio to 15 (goal: 1,000 within 2x)."""
    from registry_scale import SIZES, registry_calls, registry_table  # lazy: this section only

    registries, calls = registry_calls(200)
    print(f"registry scale (wall time, {seconds:.2f} s per size and kind; sizes {SIZES})")
    registry_table(registries, calls, seconds)


def _profile(
    work: list[tuple[Any, dict[str, Any], str, tuple[Any, ...]]], modes: list[str], top: int
) -> None:
    """One more pass of callscope's side per mode under ``cProfile``, sorted by own time."""
    import cProfile  # lazy: only --profile needs it
    import pstats

    for name in modes:
        mode = get_grounding(name)
        profiler = cProfile.Profile()
        profiler.enable()
        for case, _call, text, _ in work:
            p = parse_output(text)
            diagnose(p.first, case.functions, case.query, grounding=mode)
            extrinsic(p.first, case.gold, case.functions)
        profiler.disable()
        print(f"\n--- profile [{name}]: parse + diagnose + extrinsic, by own time")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


if __name__ == "__main__":
    main()
