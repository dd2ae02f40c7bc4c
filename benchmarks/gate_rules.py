"""The gated mode's gate (issue 17), measured the way the detector audit measures the cascade:
false alarms on calls known to be correct and detection on calls made wrong on purpose.

For every BFCL single-call case at S = 5: the gold call in full and minimal form (negatives)
and every positive of :func:`callscope.saag.audit.positives` (one per failure kind, built only
from a case whose minimal gold passes). Per kind it counts how often a correction would be
sent by the structured mode (the cascade flags the call: stage != 0) and by the gated mode
(:func:`callscope.saag.messages.gated_message` is not ``None``), with Wilson 95% intervals;
and, for the gated message, how often its "keep these" sentence names the very argument
that was corrupted (a wrong value the gate would tell the model to keep).

    python benchmarks/gate_rules.py [--n 300] [--grounding registry]
"""

from __future__ import annotations

import argparse
from collections import Counter

from callscope.benchmarks.sources import build_benchmark
from callscope.core.stats import wilson
from callscope.saag.audit import KINDS, _values_by_param, gold_calls, positives
from callscope.saag.cascade import diagnose
from callscope.saag.messages import already_right, gated_message


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--grounding", default="registry")
    args = ap.parse_args()
    cases = build_benchmark("bfcl", scales=[5], n=args.n, seed=0).cases
    pool = _values_by_param(cases)
    total: Counter[str] = Counter()
    structured: Counter[str] = Counter()
    gated: Counter[str] = Counter()
    kept_wrong: Counter[str] = Counter()
    for case in cases:
        calls = gold_calls(case)
        if calls is None:
            continue
        work = [("gold_full", calls[0], ""), ("gold_minimal", calls[1], "")]
        if diagnose(calls[1], case.functions, case.query, grounding=args.grounding).passed:
            work += positives(case, calls[1], pool, 0)
        for kind, call, change in work:
            d = diagnose(call, case.functions, case.query, grounding=args.grounding)
            total[kind] += 1
            structured[kind] += d.stage != 0
            msg = gated_message(d, call)
            gated[kind] += msg is not None
            if msg is not None and change:
                keep = already_right(d, call)
                changed = [
                    p for p in call.arguments if calls[1].arguments.get(p) != call.arguments[p]
                ]
                kept_wrong[kind] += any(f"{p} = " in keep for p in changed)
    print(f"grounding={args.grounding}, {len(cases)} cases")
    print(
        "| kind | stage | n | structured corrects | gated corrects | gated keeps the wrong value |"
    )
    print("|---|---|---|---|---|---|")
    for kind in ("gold_full", "gold_minimal", *KINDS):
        n = total[kind]
        if not n:
            continue
        cells = []
        for k in (structured[kind], gated[kind]):
            lo, hi = wilson(k, n)
            cells.append(f"{k / n:.3f} [{lo:.3f}, {hi:.3f}]")
        print(
            f"| {kind} | {KINDS.get(kind, '-')} | {n} | {cells[0]} | {cells[1]} | {kept_wrong[kind]} |"
        )


if __name__ == "__main__":
    main()
