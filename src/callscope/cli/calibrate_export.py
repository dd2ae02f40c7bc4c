"""``callscope calibrate export``: a calibrate run directory's conversations written as BFCL
result files (:func:`export_job`; moved here from :mod:`callscope.cli.calibrate_jobs`)."""

from __future__ import annotations

from pathlib import Path

from callscope.cli.common import console, fail, one_line


def export_job(run_dir: Path, dest: Path, probe: str | None) -> None:
    """``--export-bfcl DIR``: the run directory's conversations as BFCL files."""
    from callscope.benchmarks.protocol import benchmark_or_default  # lazy: with its pipeline
    from callscope.runs.calibration_store import BASELINE, BENCHMARK_META  # lazy: numpy
    from callscope.runs.export_bfcl import export_bfcl  # lazy: numpy
    from callscope.store.run_store import RunStore  # lazy: with its pipeline
    from callscope.store.schema import STORE_FILE  # lazy: with its pipeline

    if not (run_dir / STORE_FILE).exists():
        fail(f"{run_dir} holds no {STORE_FILE}: pass the run directory of a calibrate run (its -o)")
    store = RunStore(run_dir)
    try:
        name = store.get_meta(BENCHMARK_META) or "bfcl"
        cats = sorted({c["category"] for c in store.conversations(None, probe or BASELINE)})
    finally:
        store.close()
    if name != "bfcl":
        fail(f"{run_dir} holds a {name!r} run; only BFCL runs have BFCL's file format")
    bench = benchmark_or_default(None)
    n_turns = {c.id: len(c.turns) for c in bench.cases(cats)} if cats else {}
    done = export_bfcl(run_dir, dest, probe=probe or BASELINE, n_turns=n_turns)
    if not done.files:
        fail(f"{run_dir} holds no {probe or BASELINE} conversations to export")
    for (model, cat), count in done.cases.items():
        console.print(f"{model} {cat}: {count} cases", markup=False)
    if done.skipped_errors:
        console.print(
            f"{done.skipped_errors} cases that ended in a backend error left out",
            style="yellow",
            markup=False,
        )
    if done.text_dropped:
        console.print(
            f"{done.text_dropped} steps had text beside native calls: BFCL's format keeps the "
            "calls only",
            style="yellow",
            markup=False,
        )
    console.print(f"wrote {len(done.files)} files under {one_line(str(dest))}", markup=False)
