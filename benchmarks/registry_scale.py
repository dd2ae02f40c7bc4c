"""Per-call cost of the SAAG cascade as the registry grows: 15, 100, 1,000 and 10,000 functions.

The registries are nested (the 15-function registry is the first 15 of the 1,000, which are
the first 1,000 of the 10,000; synthetic names from ``score_throughput.make_registry``) and
every size is scored on the *same* calls, made against the first 15 functions: an even mix
of correct calls, misspelled names (stage 1: NCS over the registry), drifted parameters
(stage 2) and ungrounded values (stage 3). Each registry is one list object reused for every
call, as one case's functions are in a run; the verdict cache is off (the same calls are
scored again and again here: the cascade itself is measured, not its memo). Prints the mean
microseconds per ``diagnose`` for each size and kind, the best of ``--rounds`` rounds that
each measure every size in turn (a change in the machine's speed moves every size alike),
and each size's ratio to 15 (goal of issues 16 and 49: 1,000 within 2x; issue 16: 10,000
within 4x). ``bfcl_throughput.py`` prints the same table after its BFCL side-by-side.

Usage: ``python benchmarks/registry_scale.py [--seconds 1.0] [--calls 200] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from score_throughput import KINDS, make_item, make_registry

from callscope.parse import parse_output
from callscope.saag import cascade
from callscope.saag.cascade import diagnose
from callscope.types import ToolCall

SIZES = (15, 100, 1000, 10000)


def per_call_us(calls: list[tuple[ToolCall, str]], functions: list[dict], seconds: float) -> float:
    """Mean microseconds of one ``diagnose`` over ``calls``, repeated for ``seconds``."""
    for call, query in calls:  # warm: the index built, every request's evidence made
        diagnose(call, functions, query)
    n = 0
    t0 = time.perf_counter()
    while True:
        for call, query in calls:
            diagnose(call, functions, query)
        n += len(calls)
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return elapsed / n * 1e6


def registry_calls(
    per_kind: int, seed: int = 0
) -> tuple[dict[int, list[dict]], dict[str, list[tuple[ToolCall, str]]]]:
    """The nested registries by size and ``per_kind`` calls of each kind (module docstring)."""
    rng = random.Random(seed)
    full = make_registry(max(SIZES), rng)
    registries = {n: full[:n] for n in SIZES}
    calls: dict[str, list[tuple[ToolCall, str]]] = {}
    for kind in KINDS:
        calls[kind] = []
        for _ in range(per_kind):
            item = make_item(kind, registries[SIZES[0]], rng)
            parsed = parse_output(item.text)
            calls[kind].append((parsed.calls[0], item.query))
    return registries, calls


def registry_table(
    registries: dict[int, list[dict]],
    calls: dict[str, list[tuple[ToolCall, str]]],
    seconds: float,
    rounds: int = 5,
) -> dict[int, float]:
    """Print microseconds per call by size and kind, and the mix's ratio to the smallest
    size; returns the mix's microseconds by size. ``seconds`` per size and kind, spent in
    ``rounds`` rounds that each measure every size in turn; each cell is its best round, so
    a change in the machine's speed during the run moves every size alike."""
    cascade.VERDICT_CACHE_SIZE = 0  # the cascade itself, not its memo of repeated requests
    columns = {**{k: calls[k] for k in KINDS}, "mix": [c for k in KINDS for c in calls[k]]}
    best: dict[tuple[int, str], float] = {}
    for _ in range(rounds):
        for n in SIZES:
            for column, work in columns.items():
                us = per_call_us(work, registries[n], seconds / rounds)
                best[n, column] = min(best.get((n, column), us), us)
    print(f"{'functions':>9} " + " ".join(f"{k:>11}" for k in columns) + "  x 15 (mix)")
    out = {n: best[n, "mix"] for n in SIZES}
    for n in SIZES:
        cells = " ".join(f"{best[n, column]:9.1f}us" for column in columns)
        print(f"{n:>9} {cells}  {out[n] / out[SIZES[0]]:8.2f}x")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="per size and kind")
    ap.add_argument("--calls", type=int, default=200, help="calls per kind")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds; best kept")
    args = ap.parse_args()
    registries, calls = registry_calls(args.calls)
    registry_table(registries, calls, args.seconds, args.rounds)
    print(json.dumps({"calls_per_kind": args.calls, "sizes": list(SIZES)}))


if __name__ == "__main__":
    main()
