"""Per-call cost of scoring a single-call answer, this checkout against an older one, side by
side in one run (issue 28: the answer as the unit, goal within 1.1x; issue 37: grounding on
libraries, goal within 1.2x).

Usage: ``python benchmarks/answer_cost.py BASE_SRC [--rounds 5]``: ``BASE_SRC`` is the ``src``
folder of a checkout of the older code (``git worktree add /tmp/base COMMIT``, then
``/tmp/base/src``; before issue 28: ``e1a63f6``; before issue 37: ``43049fb^1``). Each round
scores the same rows (the 1,911 BFCL gold calls of the default build, each as a one-call answer
with its gold) in a fresh interpreter of each version, alternating, twice over: the first pass
includes every one-off load a fresh process makes when a value first needs it (a library's
tables, pint's registry), the second is the steady per-call cost of a process that has made
them. It prints the median per-row time of each pass and version, and their ratios."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, time
from callscope.benchmarks.bfcl.single import load_bfcl_single
from callscope.saag.score import score_row
cases = load_bfcl_single()
rows = [{"id": c.id, "query": c.query, "functions": c.functions, "gold": c.gold,
         "output": {"name": c.gold["name"], "arguments": c.gold.get("arguments") or {}}}
        for c in cases]
for r in rows[:50]:
    score_row(r)  # warm caches and imports
t0 = time.perf_counter()
for r in rows:
    score_row(r)
t1 = time.perf_counter()
for r in rows:
    score_row(r)
print(json.dumps({"n": len(rows), "s": t1 - t0, "steady": time.perf_counter() - t1}))
"""


def one(src: str) -> tuple[int, float, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    d = json.loads(out.stdout.strip().splitlines()[-1])
    return d["n"], d["s"], d["steady"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("base_src")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    runs: dict[str, list[tuple[float, float]]] = {"before": [], "now": []}
    for _ in range(a.rounds):
        for name, src in (("before", a.base_src), ("now", here)):
            n, first, steady = one(src)
            runs[name].append((first / n, steady / n))
    print(f"rows per round: {n}, {a.rounds} rounds, medians in us per single-call answer")
    med = {
        name: [statistics.median(x[i] for x in rs) * 1e6 for i in (0, 1)]
        for name, rs in runs.items()
    }
    for i, what in enumerate(("first pass (one-off loads included)", "steady (second pass)")):
        b, c = med["before"][i], med["now"][i]
        print(f"{what}: before {b:.1f}, now {c:.1f}, ratio {c / b:.3f}")


if __name__ == "__main__":
    main()
