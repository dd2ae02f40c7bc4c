"""Per-call cost of scoring a single-call answer, before and after the answer became the unit
(issue 28 goal: within 1.1x), side by side in one run.

Usage: ``python benchmarks/answer_cost.py BASE_SRC [--rounds 5]``: ``BASE_SRC`` is the ``src``
folder of a checkout of the code before issue 28 (``git worktree add /tmp/base e1a63f6``, then
``/tmp/base/src``). Each round scores the same rows (the 1,911 BFCL gold calls of the default
build, each as a one-call answer with its gold) in a fresh interpreter of each version,
alternating, and prints the median per-row time of each and their ratio."""

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
print(json.dumps({"n": len(rows), "s": time.perf_counter() - t0}))
"""


def one(src: str) -> tuple[int, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    d = json.loads(out.stdout.strip().splitlines()[-1])
    return d["n"], d["s"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("base_src")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    base: list[float] = []
    now: list[float] = []
    for _ in range(a.rounds):
        n, s = one(a.base_src)
        base.append(s / n)
        n, s = one(here)
        now.append(s / n)
    b, c = statistics.median(base), statistics.median(now)
    print(f"rows per round: {n}")
    print(f"before issue 28: {b * 1e6:.1f} us per single-call answer (median of {a.rounds})")
    print(f"now:             {c * 1e6:.1f} us per single-call answer")
    print(f"ratio now / before: {c / b:.3f}")


if __name__ == "__main__":
    main()
