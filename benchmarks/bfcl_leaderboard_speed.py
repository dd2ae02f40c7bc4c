"""The whole BFCL 2024-08 leaderboard through ``calibrate leaderboard`` (issue 38, item 5: all
63 models x 1,240 answers read, diagnosed and reported in <= 90 s on 2 cores, memory that
does not grow with the number of models), and BFCL's own checker over the same answers.

One run of :func:`callscope.runs.leaderboard_tree.diagnose_tree` with ``--jobs`` worker processes
(default 2), case pages written, then the tables, figure and page
(:func:`callscope.report.leaderboard_pages.write_leaderboard_report`): the wall time of the whole,
the load average before and after (the machine is shared), the peak resident memory of the
parent and of the largest worker, and per model the seconds of each part summed over the
models: ``read`` (gzip + JSON), ``decode`` (the BFCL handler's decoder, as BFCL's own
evaluation does first), ``diagnose`` (the cascade on every call + the answer's gold scores),
``checker`` (BFCL's installed ``ast_checker`` on the decoded answer, or its relevance rule),
``page`` (the case browser). BFCL's own work over the same answers is ``decode + checker``;
callscope's is ``decode + diagnose``: both are printed per model and in all, side by side
from the same run. ``--models N`` runs the first N models only (memory against N).

    python benchmarks/bfcl_leaderboard_speed.py [TREE] [--jobs 2] [--models N] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from callscope.report.leaderboard import CASES_DIR, leaderboard_tables
from callscope.report.leaderboard_pages import write_case_page, write_leaderboard_report
from callscope.runs.leaderboard_tree import diagnose_tree

DEFAULT_TREE = Path(__file__).resolve().parents[2] / "shared/external/bfcl-leaderboard-2024-08"


def _tree_of(tree: Path, n: int, folder: Path) -> Path:
    """A tree of links to the first ``n`` models (the data stays where it is)."""
    models = sorted(p.name for p in (tree / "result").iterdir())[:n]
    for side in ("result", "score"):
        (folder / side).mkdir(parents=True, exist_ok=True)
        for m in models:
            (folder / side / m).symlink_to(tree / side / m, target_is_directory=True)
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", nargs="?", type=Path, default=DEFAULT_TREE)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--models", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tree = args.tree
        if args.models:
            tree = _tree_of(args.tree, args.models, Path(tmp) / "tree")
        out = args.out or Path(tmp) / "out"
        load0 = os.getloadavg()
        t0 = time.perf_counter()
        run = diagnose_tree(
            tree, jobs=args.jobs, pages=out / CASES_DIR, page_writer=write_case_page
        )
        t1 = time.perf_counter()
        write_leaderboard_report(run, out, leaderboard_tables(run))
        t2 = time.perf_counter()
        load1 = os.getloadavg()
    parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    answers = sum(len(r.rows) for r in run.results)
    parts = ("read", "decode", "diagnose", "checker", "page")
    total = {p: sum(r.seconds.get(p, 0.0) for r in run.results) for p in parts}
    print(f"{len(run.results)} models, {answers} answers, {args.jobs} worker process(es)")
    print(
        f"load average before {load0[0]:.2f}, after {load1[0]:.2f} (1 min); cores {os.cpu_count()}"
    )
    print(f"wall: diagnose {t1 - t0:.1f} s + report {t2 - t1:.1f} s = {t2 - t0:.1f} s")
    print(f"peak RSS: parent {parent:.0f} MiB, largest worker {child:.0f} MiB")
    print("summed over models (s): " + ", ".join(f"{p} {total[p]:.1f}" for p in parts))
    n = max(1, len(run.results))
    print("per model (s): " + ", ".join(f"{p} {total[p] / n:.2f}" for p in parts))
    bfcl = total["decode"] + total["checker"]
    ours = total["decode"] + total["diagnose"]
    print(
        f"BFCL's work (decode + checker) {bfcl:.1f} s = {1e6 * bfcl / max(1, answers):.0f} us/answer; "
        f"callscope's (decode + cascade + gold scores) {ours:.1f} s = "
        f"{1e6 * ours / max(1, answers):.0f} us/answer; ratio {ours / max(bfcl, 1e-9):.1f}x"
    )


if __name__ == "__main__":
    main()
