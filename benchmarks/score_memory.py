"""Peak memory of ``callscope score`` at 1k, 10k and 100k rows (issue 16, item 2: goal the
100k-row peak <= 1.5x the 1k-row one), side by side in one run.

Rows are BFCL-like: a 15-function registry, a query, a raw JSON output (every fourth one
wrong in some stage) and a gold call. Each size runs ``callscope score IN -o OUT`` in a fresh
process; its peak RSS is read from ``resource.getrusage(RUSAGE_CHILDREN)`` of a one-shot
wrapper. Prints MiB per size and the ratios to the smallest.

    python benchmarks/score_memory.py [--sizes 1000 10000 100000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

_PEAK = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=False, "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def _functions() -> list[dict]:
    out = []
    for i in range(15):
        out.append(
            {
                "name": f"get_item_{i}",
                "description": f"Look up item kind {i}",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "City name"},
                        "days": {"type": "integer", "description": "How many days"},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    },
                    "required": ["city", "days"],
                },
            }
        )
    return out


def write_rows(path: Path, n: int) -> None:
    """``n`` rows, written one by one."""
    functions = _functions()
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            k = i % 15
            args: dict = {"city": f"Town{i % 97}", "days": i % 9 + 1}
            name = f"get_item_{k}"
            if i % 4 == 1:
                name = f"get_itme_{k}"  # stage 1
            elif i % 4 == 2:
                args = {"city": args["city"]}  # stage 2: days missing
            elif i % 4 == 3:
                args["city"] = "Atlantis"  # stage 3: not in the query
            row = {
                "id": f"r{i}",
                "query": f"Item {k} for Town{i % 97} over the next {i % 9 + 1} days",
                "functions": functions,
                "output": json.dumps({"name": name, "arguments": args}),
                "gold": {
                    "name": f"get_item_{k}",
                    "arguments": {"city": f"Town{i % 97}", "days": i % 9 + 1},
                },
            }
            fh.write(json.dumps(row) + "\n")


def peak_kib(rows: Path, out: Path) -> int:
    cli = "import sys; from callscope.cli import app; sys.argv[0] = 'callscope'; app()"
    cmd = [sys.executable, "-c", cli, "score", str(rows), "-o", str(out)]
    res = subprocess.run(
        [sys.executable, "-c", _PEAK, *cmd], capture_output=True, text=True, check=True
    )
    return int(res.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        peaks = {}
        for n in args.sizes:
            rows, out = Path(tmp) / f"in{n}.jsonl", Path(tmp) / f"out{n}.jsonl"
            write_rows(rows, n)
            peaks[n] = peak_kib(rows, out)
            lines = sum(1 for _ in out.open(encoding="utf-8"))
            print(f"  {n:>7} rows: peak RSS {peaks[n] / 1024:7.1f} MiB ({lines} rows written)")
            rows.unlink()
            out.unlink()
    base = args.sizes[0]
    for n in args.sizes[1:]:
        print(f"  ratio {n}/{base}: {peaks[n] / peaks[base]:.2f}x (goal <= 1.5x at 100k)")


if __name__ == "__main__":
    main()
