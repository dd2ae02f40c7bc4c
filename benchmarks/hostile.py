"""Issue 15's count: hostile model outputs through parse + diagnose + correction + the store.

Feeds ``tests/hostile.py``'s generator (backtracking bait, deep nesting, huge integers, lone
surrogates, code-execution payloads, huge native arguments, random mixes) to
:func:`callscope.saag.score.score_row` (parse, the cascade, the correction message) and
writes every row through the run store's codec. Prints, per family: outputs, crashes, rows
that could not be written, the slowest output's CPU time split into parse and the rest, and
how many took over 1 s of CPU; then whether the marker file any evaluated payload would
create exists. Usage: ``python benchmarks/hostile.py [--n 100000] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from hostile import FAMILIES, FUNCTIONS, QUERY, hostile_outputs  # noqa: E402

from callscope.parse import parse_output  # noqa: E402
from callscope.saag.score import score_row  # noqa: E402
from callscope.store.schema import encode  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    marker = Path(tempfile.mkdtemp(prefix="callscope-hostile-")) / "INJECTED"
    count: Counter[str] = Counter()
    crashes: Counter[str] = Counter()
    unwritable: Counter[str] = Counter()
    slow: Counter[str] = Counter()
    worst: dict[str, tuple[float, float]] = {}
    for i, (family, output) in enumerate(hostile_outputs(args.n, args.seed, marker)):
        count[family] += 1
        t0 = time.process_time()
        try:
            parse_output(output)
            t1 = time.process_time()
            row = score_row({"id": i, "query": QUERY, "functions": FUNCTIONS, "output": output})
        except Exception as exc:  # noqa: BLE001 - counted, that is the point
            crashes[family] += 1
            print(f"crash #{i} ({family}): {type(exc).__name__}: {exc}"[:300], file=sys.stderr)
            continue
        total = time.process_time() - t0
        try:
            encode(row).encode("utf-8")
        except Exception:  # noqa: BLE001
            unwritable[family] += 1
        slow[family] += total > 1.0
        if total > worst.get(family, (0.0, 0.0))[0]:
            worst[family] = (total, t1 - t0)
    print(f"{'family':<14}{'outputs':>9}{'crashes':>9}{'unwritable':>12}{'>1s CPU':>9}"
          f"{'max CPU s':>11}{'(parse)':>9}")  # fmt: skip
    for family in FAMILIES:
        tot, parse = worst.get(family, (0.0, 0.0))
        print(
            f"{family:<14}{count[family]:>9}{crashes[family]:>9}{unwritable[family]:>12}"
            f"{slow[family]:>9}{tot:>11.3f}{parse:>9.3f}"
        )
    print(f"total: {sum(count.values())} outputs, {sum(crashes.values())} crashes, "
          f"{sum(unwritable.values())} unwritable, {sum(slow.values())} over 1 s; "
          f"executions (marker file): {int(marker.exists())}")  # fmt: skip
    return 1 if crashes or unwritable or marker.exists() else 0


if __name__ == "__main__":
    raise SystemExit(main())
