"""``callscope score`` as a user runs it, on a results file of calls never seen: the BFCL
grader-agreement harness's 10,511 calls (``bfcl_throughput.py``'s, every single-call gold call
of the four default categories and its perturbations) written as rows with their gold, one
row per call, each row carrying its own copy of the registry and the gold.

Prints, per round: the command's wall time (the console script in a new process, startup
included), the time of ``callscope score`` on one row (the startup alone), and rows a
second net of it; then, side by side in this process, BFCL's own checker over the same
calls (CPU time a call) and ``callscope score``'s per-row cost against it. Then the split of
a row's CPU time by phase, in this process, on a first pass (every request new): reading the
line, the case, the parse, the cascade, the answer's row, the gold metrics, writing the row,
the summary (each phase's clock and wrapper, about 0.5 us, is counted in "rest of
score_row").

    python benchmarks/score_command.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bfcl_throughput import _work

from callscope.benchmarks.bfcl.package import ast_checker


def _rows(path: Path) -> list[tuple[object, ...]]:
    """Write the harness's calls as ``score`` rows; return the BFCL checker's arguments."""
    work = _work()
    with path.open("w", encoding="utf-8") as fh:
        for i, (case, _call, text, _args) in enumerate(work):
            row = {"id": f"{case.id}#{i}", "query": case.query, "functions": case.functions,
                   "output": text, "gold": case.gold}  # fmt: skip
            fh.write(json.dumps(row) + "\n")
    return [args for *_, args in work]


def _command(rows: Path, out: Path) -> float:
    """Wall seconds of ``callscope score ROWS -o OUT`` (the console script, a new process)."""
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "from callscope.cli.main import main; main()", "score",
         str(rows), "-o", str(out)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return time.perf_counter() - t0


def _phases(rows: Path) -> dict[str, float]:
    """CPU seconds of each phase of ``callscope score``'s loop, on a first pass in this
    process (as the command runs it: the process owned, one row at a time)."""
    import callscope.saag.score as score  # lazy: timed phases wrap this module's functions
    from callscope.cli.score import SummaryAccumulator
    from callscope.core.jsonl import dumps_row, read_jsonl
    from callscope.saag.groundings import get_grounding
    from callscope.saag.normalise.knowledge.base import own_the_process

    own_the_process()
    spent: dict[str, float] = defaultdict(float)
    clock = time.process_time

    def timed(name: str, f: object) -> object:
        def wrapper(*a: object, **k: object) -> object:
            t0 = clock()
            try:
                return f(*a, **k)  # type: ignore[operator]
            finally:
                spent[name] += clock() - t0

        return wrapper

    for name in ("diagnose_answer", "answer_row", "score_answer", "extrinsic", "parse_output"):
        setattr(score, name, timed(name, getattr(score, name)))
    score.Case.from_dict = timed("case", score.Case.from_dict)  # type: ignore[method-assign]
    mode = get_grounding(None)
    acc = SummaryAccumulator()
    lines = read_jsonl(rows)
    with open(os.devnull, "w", encoding="utf-8") as sink:
        while True:
            t0 = clock()
            item = next(lines, None)
            spent["read the line"] += clock() - t0
            if item is None:
                break
            t0 = clock()
            out = score.score_row(item[1], mode)
            spent["score_row"] += clock() - t0
            t0 = clock()
            sink.write(dumps_row(out) + "\n")
            spent["write the row"] += clock() - t0
            t0 = clock()
            acc.add(out)
            spent["summary"] += clock() - t0
    return spent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    with tempfile.TemporaryDirectory() as tmp:
        rows, one, out = Path(tmp, "rows.jsonl"), Path(tmp, "one.jsonl"), Path(tmp, "out.jsonl")
        checker_args = _rows(rows)
        n = len(checker_args)
        one.write_text(rows.read_text(encoding="utf-8").split("\n", 1)[0] + "\n", "utf-8")
        checker = ast_checker()
        for _ in range(2):  # BFCL's best of two passes (its first is slower)
            t0 = time.process_time()
            for a in checker_args:
                with contextlib.suppress(Exception):  # BFCL's checker indexes into odd outputs
                    checker(*a)
            bfcl = (time.process_time() - t0) / n
        print(f"callscope score on {n} BFCL calls never seen (rows with gold); BFCL's checker "
              f"{bfcl * 1e6:.1f} us a call (CPU, this process)")  # fmt: skip
        for r in range(1, args.rounds + 1):
            whole, start = _command(rows, out), _command(one, Path(tmp, "one.out"))
            per_row = (whole - start) / n
            print(f"  round {r}: {whole:.2f} s (startup {start:.2f} s); "
                  f"{1 / per_row:,.0f} rows/s net of startup, {per_row * 1e6:.0f} us a row: "
                  f"{bfcl / per_row:.3f}x BFCL's checker")  # fmt: skip
        spent = _phases(rows)
    inner = sum(spent[k] for k in ("diagnose_answer", "answer_row", "score_answer", "extrinsic",
                                   "parse_output", "case"))  # fmt: skip
    spent["rest of score_row"] = spent.pop("score_row") - inner
    total = sum(spent.values())
    print(f"a row's CPU time by phase, first pass in one process ({total / n * 1e6:.0f} us a row)")
    for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:18s} {seconds / n * 1e6:7.1f} us  {seconds / total:6.1%}")
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
