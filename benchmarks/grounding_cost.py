"""Per-call cost of the registry-aware grounding against the paper's lexical one (issue 13 goal:
at most 1.5x), side by side on the same calls in one run.

The calls: for every BFCL single-call case at S = 5, its gold call (full and minimal) and every
positive of the detector validity audit (misspelled names, unstated values, ...), so stage 3
sees both grounded and ungrounded values. Each mode is timed over the whole set, modes
interleaved, best of ``--repeats``, in CPU time of this process (so that other load on the
machine moves the figures less). Prints microseconds per call and the ratio.

    python benchmarks/grounding_cost.py [--n 1911] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

from callscope.benchmarks.sources import build_benchmark
from callscope.saag.audit import _values_by_param, gold_calls, positives
from callscope.saag.cascade import diagnose
from callscope.saag.groundings import get_grounding


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1911)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    cases = build_benchmark("bfcl", scales=[5], n=args.n, seed=0).cases
    pool = _values_by_param(cases)
    work = []
    for case in cases:
        calls = gold_calls(case)
        if calls is None:
            continue
        work += [(case, c) for c in calls]
        work += [(case, c) for _, c, _ in positives(case, calls[1], pool, 0)]
    best: dict[str, float] = {}
    for _ in range(args.repeats):
        for name in ("lexical", "registry"):
            mode = get_grounding(name)
            t0 = time.process_time()
            for case, call in work:
                diagnose(call, case.functions, case.query, grounding=mode)
            dt = time.process_time() - t0
            best[name] = min(best.get(name, dt), dt)
    per = {k: v / len(work) * 1e6 for k, v in best.items()}
    print(f"{len(work)} calls from {len(cases)} BFCL cases (S=5), best of {args.repeats}")
    for k, v in per.items():
        print(f"  {k:9s} {v:8.1f} us/call")
    print(f"  ratio registry/lexical: {per['registry'] / per['lexical']:.2f}x (goal <= 1.5x)")


if __name__ == "__main__":
    main()
