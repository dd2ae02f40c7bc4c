"""Peak memory and wall time of ``callscope report`` at 900, 9,000 and 100,000 outcomes (issue
16, item "report memory bounded by what the page holds, not by the store": goal the 100k peak
within ~1.5-2x the 900 one), side by side in one run so that other load on the machine
cancels out in the ratios.

The stores are SAAG runs written through the real API: a template run of 60 cases (registry
scales 5, 10, 15) by :func:`callscope.runs.runner.run_cases` with a replayed model whose
answers are right, wrong in the name (stage 1), missing or spurious arguments (stage 2),
ungrounded values (stage 3) or no call at all, corrected over up to 3 attempts in the modes
``direct, binary, structured``; each size then clones those outcomes (every attempt with its
message history, diagnosis and feedback) under new case ids for two models with
:meth:`callscope.store.run_store.RunStore.save_outcome`, and every 50th outcome ends in a model
error. Stores are cached under ``--cache`` (default ``$TMPDIR/callscope-report-memory``) and
reused. Each size runs ``callscope report RUN`` in a fresh process; its peak RSS is read from
``resource.getrusage(RUSAGE_CHILDREN)`` of a one-shot wrapper.

    python benchmarks/report_memory.py [--sizes 900 9000 100000] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from callscope.models.replay import ReplayModel
from callscope.records import Attempt, Outcome
from callscope.runs.runner import run_cases
from callscope.store.run_store import RunStore
from callscope.types import PAPER_MODES, Case

_PEAK = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "r = subprocess.run(sys.argv[1:], check=False, stdout=subprocess.DEVNULL, "
    "stderr=subprocess.PIPE); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - t, "
    "r.returncode); sys.stderr.write(r.stderr.decode()[-2000:])"
)
MODELS = ("bench/model-a", "bench/model-b")
N_TEMPLATES = 60
#: bump when the store layout changes, so cached stores are rebuilt
_VERSION = 1


def _function(k: int) -> dict[str, Any]:
    return {
        "name": f"tool_{k}",
        "description": f"Look up records of kind {k} for a city over some days",
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


def _call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def _template_outputs(i: int, k: int, city: str, days: int) -> list[str]:
    """Three answers for template case ``i`` (gold ``tool_k(city, days)``): one failure
    pattern of attempt 1, then revisions (right, or still wrong)."""
    good = _call(f"tool_{k}", city=city, days=days)
    kind = i % 8
    if kind == 0:
        return [good, good, good]
    if kind == 1:  # stage 1: a name not in the registry, fixed at attempt 2
        return [_call(f"tool_{k}x", city=city, days=days), good, good]
    if kind == 2:  # stage 2: required argument missing, fixed at attempt 3
        return [_call(f"tool_{k}", city=city), _call(f"tool_{k}", city=city), good]
    if kind == 3:  # stage 2: spurious argument
        return [_call(f"tool_{k}", city=city, days=days, colour="red"), good, good]
    if kind == 4:  # stage 3: an ungrounded number, never fixed
        bad = _call(f"tool_{k}", city=city, days=days + 40)
        return [bad, bad, bad]
    if kind == 5:  # stage 3: an ungrounded string, fixed
        return [_call(f"tool_{k}", city="Atlantis", days=days), good, good]
    if kind == 6:  # no call at all, then right
        return ["I cannot help with that.", good, good]
    # wrong function of the registry (passes stage 1, wrong gold name), then right
    return [_call(f"tool_{(k + 1) % 5}", city=city, days=days), good, good]


def template_run(folder: Path) -> Path:
    """The template run: :data:`N_TEMPLATES` cases x 3 modes by the real runner."""
    cases, rows = [], []
    for i in range(N_TEMPLATES):
        scale = (5, 10, 15)[i % 3]
        k, city, days = i % 5, f"Town{i}", i % 9 + 1
        cases.append(
            Case(
                id=f"t{i}",
                query=f"What are the records of kind {k} for {city} over the next {days} days?",
                functions=[_function(j) for j in range(scale)],
                gold={"name": f"tool_{k}", "arguments": {"city": city, "days": days}},
                scale=scale,
            )
        )
        rows.append({"case_id": f"t{i}", "outputs": _template_outputs(i, k, city, days)})
    replay = folder / "replay.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run_dir = folder / "template"
    store = RunStore(run_dir)
    try:
        run_cases(
            ReplayModel(replay),
            cases,
            store,
            modes=PAPER_MODES,
            max_attempts=3,
            show_progress=False,
            grounding="lexical",
        )
    finally:
        store.close()
    return run_dir


def _outcomes(run_dir: Path) -> tuple[list[Case], dict[str, Any], list[tuple[Outcome, Any]]]:
    store = RunStore(run_dir)
    try:
        cases = store.cases()
        models = {o["model"] for o in store.outcomes()}
        config = store.get_meta(f"config:{sorted(models)[0]}") or {}
        out = []
        for o in store.outcomes():
            attempts = [
                Attempt(**{k: v for k, v in a.items() if k in Attempt.__dataclass_fields__})
                for a in store.attempts(o["model"], o["case_id"], o["mode"])
            ]
            final = o["final"] or {}
            out.append(
                (
                    Outcome(
                        case_id=o["case_id"],
                        mode=o["mode"],
                        attempts=attempts,
                        answer_at=final.get("answer_at"),
                        stop=final.get("stop"),
                    ),
                    o["scale"],
                )
            )
        return cases, config, out
    finally:
        store.close()


def build_store(run_dir: Path, n: int, template: Path) -> None:
    """A store of ``n`` outcomes cloned from the template run (see the module doc)."""
    cases, config, outs = _outcomes(template)
    by_case: dict[str, list[tuple[Outcome, Any]]] = {}
    for o, scale in outs:
        by_case.setdefault(o.case_id, []).append((o, scale))
    per_case = len(MODELS) * len(PAPER_MODES)
    n_cases = -(-n // per_case)
    tmp = run_dir.with_name(run_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    store = RunStore(tmp)
    try:
        for model in MODELS:
            store.set_meta(f"config:{model}", config)
        new_cases = []
        for i in range(n_cases):
            c = cases[i % len(cases)]
            new_cases.append(Case(**{**c.__dict__, "id": f"{c.id}-{i}"}))
        store.add_cases(new_cases)
        written = 0
        for mi, model in enumerate(MODELS):
            for i in range(n_cases):
                t = cases[(i + mi * 7) % len(cases)]
                cid = new_cases[i].id
                for o, scale in by_case[t.id]:
                    if written >= n:
                        break
                    written += 1
                    if written % 50 == 0:
                        err = Attempt(1, o.attempts[0].messages, None, [], None, None)
                        err.error, err.error_kind = "read timed out", "timeout"
                        clone = Outcome(cid, o.mode, [err], "read timed out", "timeout")
                    else:
                        clone = Outcome(cid, o.mode, o.attempts, None, None, o.answer_at, o.stop)
                    store.save_outcome(model, scale, clone)
    finally:
        store.close()
    shutil.rmtree(run_dir, ignore_errors=True)
    tmp.rename(run_dir)


def measure(run_dir: Path) -> tuple[float, float, int, str]:
    """Peak RSS (MiB), wall seconds, exit status and stderr tail of ``callscope report``."""
    for stale in ("report.html", "tables", "figures"):
        p = run_dir / stale
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    cmd = [
        sys.executable,
        "-c",
        _PEAK,
        shutil.which("callscope") or "callscope",
        "report",
        str(run_dir),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    kib, wall, rc = r.stdout.split()
    return int(kib) / 1024, float(wall), int(rc), r.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[900, 9000, 100_000])
    ap.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "callscope-report-memory"
    )
    args = ap.parse_args()
    cache = args.cache / f"v{_VERSION}"
    cache.mkdir(parents=True, exist_ok=True)
    template = cache / "template"
    if not (template / "store.sqlite").is_file():
        template_run(cache)
    results = []
    for n in args.sizes:
        run_dir = cache / f"run-{n}"
        if not (run_dir / "store.sqlite").is_file():
            t = time.perf_counter()
            build_store(run_dir, n, template)
            print(f"built {n:,} outcomes in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        mib, wall, rc, err = measure(run_dir)
        if rc != 0:
            print(err, file=sys.stderr)
        html = run_dir / "report.html"
        size = html.stat().st_size / 1024 if html.exists() else float("nan")
        results.append((n, mib, wall, rc, size))
    print(f"{'outcomes':>9} {'peak MiB':>9} {'wall s':>7} {'rc':>3} {'html KiB':>9}")
    for n, mib, wall, rc, size in results:
        print(f"{n:>9,} {mib:>9.1f} {wall:>7.1f} {rc:>3} {size:>9.0f}")
    base = results[0]
    for n, mib, wall, _, _ in results[1:]:
        print(f"ratio {n:,}/{base[0]:,}: peak {mib / base[1]:.2f}x, wall {wall / base[2]:.2f}x")


if __name__ == "__main__":
    main()
