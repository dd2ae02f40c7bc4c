"""How long ``callscope`` takes to start, next to ``python -c "import rapidfuzz"``.

Runs, as fresh processes and interleaved so that machine load hits both alike:

* the reference ``python -c "import rapidfuzz"`` (the floor: the cascade needs rapidfuzz);
* ``python -m callscope.cli score ROW.jsonl`` on a one-row file (output to a temporary file);
* ``python -m callscope.cli --help``.

Prints the median wall time of each and its ratio to the reference (goal of issue 16: ``score``
on one row under 2x), then the heaviest third-party packages that the ``score`` command
imports (``-X importtime``, cumulative microseconds of the top-level package).

Usage: ``python benchmarks/startup.py [--repeats 7]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROW = {
    "id": "r1",
    "query": "What is the weather in Paris?",
    "functions": [
        {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
    ],
    "output": '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    "gold": {"name": "get_weather", "arguments": {"city": "Paris"}},
}

WATCHED = ("typer", "click", "rich", "pydantic", "numpy", "pandas", "matplotlib", "httpx")


def wall(cmd: list[str]) -> float:
    """Seconds one run of ``cmd`` takes (its output discarded; a failure stops the script)."""
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def heavy_imports(cmd: list[str]) -> dict[str, int]:
    """Cumulative import microseconds of each watched top-level package ``cmd`` loads."""
    proc = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]], capture_output=True, text=True, check=False
    )
    out: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not line.startswith("import time:"):
            continue
        name = parts[2].strip()
        if name in WATCHED:
            try:
                out[name] = max(out.get(name, 0), int(parts[1]))
            except ValueError:
                continue
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        row = Path(tmp) / "row.jsonl"
        row.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
        out = Path(tmp) / "scored.jsonl"
        cmds = {
            "import rapidfuzz": [py, "-c", "import rapidfuzz"],
            "score (1 row)": [py, "-m", "callscope.cli", "score", str(row), "-o", str(out)],
            "--help": [py, "-m", "callscope.cli", "--help"],
        }
        for cmd in cmds.values():  # warm the file cache
            wall(cmd)
        times: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(args.repeats):
            for name, cmd in cmds.items():
                times[name].append(wall(cmd))
        ref = statistics.median(times["import rapidfuzz"])
        print(f"{'command':<18} {'median s':>9} {'x rapidfuzz':>12}")
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"{name:<18} {med:9.3f} {med / ref:12.2f}")
        loaded = heavy_imports(cmds["score (1 row)"])
        shown = ", ".join(f"{k} {v / 1000:.0f} ms" for k, v in sorted(loaded.items()))
        print(f"third-party packages `score` imports: {shown or 'none of ' + ', '.join(WATCHED)}")


if __name__ == "__main__":
    main()
