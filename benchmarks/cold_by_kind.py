"""Where a cold pass's time goes, by kind of call (issue 49, the cold goal).

``bfcl_throughput.py``'s cold pass, the same calls in the same order (each case's gold call,
then its perturbed copies), timed one ``diagnose`` at a time and summed by kind: the gold call
(the first of its case: it builds the request's evidence) and each perturbation of
``callscope.benchmarks.bfcl.agreement.perturbed_calls``. Registry grounding, the default.
The process is warmed on the other half of the cases first, and the collector is frozen, as
``callscope`` does.

Run: ``python benchmarks/cold_by_kind.py``. Prints microseconds a call and each kind's share
of the pass (wall time, one pass: the machine's load moves it, the shares less so).
"""

from __future__ import annotations

import gc
import os
import random
import time
from collections import defaultdict

from callscope.benchmarks.bfcl.agreement import gold_call, perturbed_calls
from callscope.benchmarks.bfcl.single import load_bfcl_single
from callscope.saag.cascade import diagnose
from callscope.saag.normalise.knowledge.base import own_the_process
from callscope.types import Case, ToolCall


def _calls(case: Case) -> list[tuple[str, ToolCall]]:
    """``(kind, call)`` of one case, gold first, as ``bfcl_throughput.py`` orders them."""
    every = {"gold": gold_call(case)}
    every.update(perturbed_calls(case, random.Random(f"0:{case.id}")))
    return [(k, ToolCall(c["name"], c["arguments"])) for k, c in every.items() if c is not None]


def main() -> None:
    own_the_process()
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    cases = sorted(load_bfcl_single(), key=lambda c: c.id)
    warmup, cold = cases[0::2], cases[1::2]
    for case in warmup:
        for _kind, call in _calls(case):
            diagnose(call, case.functions, case.query)
    gc.freeze()
    work = [(case, kind, call) for case in cold for kind, call in _calls(case)]
    spent: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    clock = time.perf_counter
    for case, kind, call in work:
        t0 = clock()
        diagnose(call, case.functions, case.query)
        spent[kind] += clock() - t0
        count[kind] += 1
    total = sum(spent.values())
    print(f"{len(work)} calls of {len(cold)} cases never seen, registry grounding, wall time")
    print(f"  {'kind':18s} {'calls':>6s} {'us a call':>10s} {'share':>7s}")
    for kind in sorted(spent, key=spent.__getitem__, reverse=True):
        print(
            f"  {kind:18s} {count[kind]:6d} {spent[kind] / count[kind] * 1e6:10.1f} "
            f"{spent[kind] / total:7.1%}"
        )
    print(f"  {'all':18s} {len(work):6d} {total / len(work) * 1e6:10.1f}")
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
