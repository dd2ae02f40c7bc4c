"""The calibrate driver: run a multi-turn benchmark's cases on a model (optionally under a
probe), grade them with the benchmark's grader, store each conversation with the SAAG stage
verdicts of its calls (:func:`~callscope.saag.stage_mix.call_stages`, computed once, here),
resumably, into a run store; then diagnose the store
(:func:`~callscope.runs.calibration_store.diagnose_store`: GAR beside Acc) and write
``calibration-<probe>.{json,md}`` (:func:`write_outputs`). A panel of models is
:mod:`callscope.runs.calibrate_panel`.

The benchmark is any :class:`~callscope.benchmarks.protocol.MultiTurnBenchmark` (BFCL
multi-turn by default): cases, tools at a turn, a fresh environment per run, grade, gold class
and due turns come from it and from nothing else.

Backend errors (a :class:`~callscope.errors.ModelError` that ended a conversation: the server
unreachable, 5xx after retries, an undecodable reply) are not model behaviour: such cases are
stored with their error, left out of GAR and Acc
(:attr:`~callscope.runs.calibration_store.CalibrationResult.errored` counts them
by kind; the numbers cover the rest) and run again on resume. After
:data:`~callscope.runs.runner.MAX_CONSECUTIVE_CONNECTION_ERRORS` consecutive cases that could
not reach the backend the run stops early, as ``run`` does
(:attr:`CalibrationRun.aborted`)."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from callscope.benchmarks.protocol import (
    DEFAULT_BENCHMARK,
    MultiTurnBenchmark,
    benchmark_or_default,
)
from callscope.calibration.classify import preset
from callscope.calibration.diagnostics import diagnostics_table
from callscope.calibration.probes import get_probe
from callscope.calibration.stage_table import stage_mix_table
from callscope.core.table_formats import write_document
from callscope.models.base import ChatModel, Decoding
from callscope.models.usage import usage_line
from callscope.runs.calibration_config import calibrate_config, check_calibrate_config
from callscope.runs.calibration_store import (
    BASELINE,
    BENCHMARK_META,
    GROUNDING_META,
    CalibrationResult,
    ablation_with_baseline,
    backend_error,
    diagnose_store,
)
from callscope.runs.conversation import run_conversation
from callscope.runs.progress import RunProgress
from callscope.runs.run_dir_lock import hold_run_dir
from callscope.runs.runner import (
    MAX_CONSECUTIVE_CONNECTION_ERRORS,
    UNREACHABLE_KINDS,
    effective_concurrency,
    in_parallel,
    resolve_style,
)
from callscope.saag.groundings import get_grounding
from callscope.saag.stage_mix import call_stages
from callscope.store.run_store import RunStore


def select_cases(
    categories: Sequence[str] | None,
    n: int | None,
    benchmark: MultiTurnBenchmark[Any] | None = None,
) -> list[Any]:
    """The first ``n`` cases of each category, categories in the order given (``None``: every
    category of the benchmark, in its order) and cases in the benchmark's order (the same
    cases for every probe)."""
    bench = benchmark_or_default(benchmark)
    out: list[Any] = []
    for category in bench.categories if categories is None else categories:
        of_cat = bench.cases([category])
        out.extend(of_cat if n is None else of_cat[:n])
    return out


@dataclass
class CalibrationRun:
    """What :func:`run_calibration_cases` did: cases ``ran`` and ``skipped`` (already stored
    without a backend error), ``errored`` (ran and ended in a backend error, by kind) and
    ``aborted`` (the message of the error that stopped the run early, else ``None``)."""

    ran: int = 0
    skipped: int = 0
    errored: Counter[str] = field(default_factory=Counter)
    aborted: str | None = None
    #: why fewer conversations ran at once than asked (``None``: as asked)
    concurrency_note: str | None = None


def run_calibration(
    model: ChatModel, store: RunStore, cases: Sequence[Any], **options: Any
) -> tuple[int, int]:
    """:func:`run_calibration_cases` (the same keyword ``options``), returning only
    ``(ran, skipped)``."""
    done = run_calibration_cases(model, store, cases, **options)
    return done.ran, done.skipped


def run_calibration_cases(
    model: ChatModel,
    store: RunStore,
    cases: Sequence[Any],
    *,
    benchmark: MultiTurnBenchmark[Any] | None = None,
    style: str = "native",
    max_steps: int = 20,
    decoding: Decoding | None = None,
    probe: str | None = None,
    show_progress: bool = True,
    concurrency: int = 1,
) -> CalibrationRun:
    """Run every case without a stored conversation for (model, probe), and again every case
    whose stored conversation ended in a backend error. Stops early after
    :data:`~callscope.runs.runner.MAX_CONSECUTIVE_CONNECTION_ERRORS` consecutive cases that
    could not reach the backend (``connection`` / ``timeout``). ``concurrency`` conversations
    run at once (:func:`~callscope.runs.runner.effective_concurrency`), each on its own
    environment; grading and saving stay on the calling thread, in the order they finish."""
    probe_cfg = None
    if probe and probe != BASELINE:
        probe_cfg = get_probe(probe)
    probe_name = probe or BASELINE
    bench = benchmark_or_default(benchmark)
    done = store.conversations_done(model.spec, probe_name) - {
        c["case_id"]
        for c in store.conversations(model.spec, probe_name)
        if backend_error(c["trajectory"])
    }
    # cases with the same tools run back to back: an embedded model then re-uses the KV
    # cache of their (long) shared system prompt; results do not depend on the order
    todo = sorted(
        (c for c in cases if c.id not in done),
        key=lambda c: tuple(f["name"] for f in bench.tools_at(c, 0)),
    )
    events_path = store.run_dir / "events.jsonl"
    summary = CalibrationRun(skipped=len(cases) - len(todo))
    streak = 0
    with RunProgress(
        f"{model.spec} {probe_name}",
        len(cases),
        completed=len(cases) - len(todo),
        enabled=show_progress,
        unit="cases",
    ) as progress:
        kwargs: dict[str, Any] = {"style": style, "max_steps": max_steps, "decoding": decoding}
        if probe_cfg is not None:
            kwargs["probe"] = probe_cfg

        def converse(case: Any) -> Any:
            # each case on its own fresh environment (BFCL: its own simulator instances)
            return run_conversation(
                model, case, benchmark=bench, env=bench.environment(case), **kwargs
            )

        workers, summary.concurrency_note = effective_concurrency(model, concurrency)
        grounding = store.get_meta(GROUNDING_META)
        for case, traj in in_parallel(converse, todo, workers):
            verdict = bench.grade(case, traj)
            tdict = traj.to_dict()
            stages = call_stages(traj, partial(bench.tools_at, case), grounding)
            store.save_conversation(
                model.spec, probe_name, case.category, tdict, verdict.to_dict(), stages
            )
            events = tdict.get("events") or []
            if events:
                with events_path.open("a", encoding="utf-8") as fh:
                    for ev in events:
                        fh.write(
                            json.dumps({"model": model.spec, "probe": probe_name, **ev}) + "\n"
                        )
            progress.advance()
            summary.ran += 1
            err = backend_error(tdict)
            if err is not None:
                summary.errored[str(err.get("kind") or "error")] += 1
            streak = streak + 1 if err is not None and err.get("kind") in UNREACHABLE_KINDS else 0
            if streak >= MAX_CONSECUTIVE_CONNECTION_ERRORS:
                summary.aborted = str((err or {}).get("message") or "backend unreachable")
                break
    return summary


def model_slug(spec: str) -> str:
    """A model spec as a file-name part: ``local:qwen2.5-coder-0.5b`` ->
    ``local-qwen2.5-coder-0.5b`` (every character other than letters, digits, ``.``, ``_``
    and ``-`` becomes ``-``)."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", spec).strip("-") or "model"


def write_outputs(run_dir: Path, result: CalibrationResult, *, per_model: bool = False) -> Path:
    """``calibration-<probe>.json`` and ``.md`` in the run directory
    (``calibration-<probe>-<model slug>.*`` with ``per_model``, as a panel writes them)."""
    suffix = f"-{model_slug(result.model)}" if per_model else ""
    stem = run_dir / f"calibration-{result.probe}{suffix}"
    payload = {
        "model": result.model,
        "probe": result.probe,
        "rows": result.rows(),
        "diagnostics": result.diagnostics.to_dict(),
        "errored": dict(result.errored),
        "aborted": result.aborted,
    }
    stem.with_suffix(".json").write_text(
        json.dumps(payload, indent=2, default=str), encoding="utf-8"
    )
    note = result.errored_note()
    rows = result.rows()
    return write_document(
        [f"{note}\n\n" if note else "", diagnostics_table(rows), "\n", stage_mix_table(rows)],
        stem.with_suffix(".md"),
    )


@dataclass
class ModelCalibration:
    """Result of :func:`calibrate_model`. ``result``: the diagnostics of this (model, probe)
    with ``ran`` / ``skipped`` / ``seconds`` set; ``path``: the ``calibration-<probe>.md``
    written. For a probe run with a complete baseline in the directory, ``paired`` is
    ``probe-<probe>.md`` and ``ablation`` is ``probe-ablation.md`` (their Markdown);
    ``baseline_missing`` says a probe run found no complete baseline for its cases."""

    result: CalibrationResult
    path: Path
    paired: str | None = None
    ablation: str | None = None
    baseline_missing: bool = False
    #: prompt tokens sent / computed and tokens generated by this run, as one line
    #: (:func:`~callscope.models.usage.usage_line`)
    usage: str | None = None


def calibrate_model(
    model: ChatModel,
    out: str | Path,
    cases: Sequence[Any],
    *,
    probe: str | None = None,
    style: str | None = None,
    max_steps: int = 20,
    decoding: Decoding | None = None,
    preset_name: str = "default",
    show_progress: bool = True,
    benchmark: MultiTurnBenchmark[Any] | None = None,
    concurrency: int = 1,
    per_model: bool = False,
    grounding: str | None = None,
) -> ModelCalibration:
    """The ``calibrate`` model run, resumable in the run directory ``out``: run the cases not
    yet stored (:func:`run_calibration`; ``style`` ``None`` = the backend's own), diagnose
    the stored conversations with the classifier preset ``preset_name`` and write
    ``calibration-<probe>.{json,md}`` (:func:`write_outputs`). For a probe run whose cases
    all have a baseline conversation, every probe run so far is then paired with the
    baseline over every case both hold in the directory (not only ``cases``):
    :func:`ablation_with_baseline` writes ``probe-<P>.md`` for each and ``probe-ablation.md``.
    ``benchmark``: the multi-turn benchmark the cases come from (BFCL by default).
    ``concurrency``: conversations run at once (HTTP backends). ``per_model``: name the
    outputs after the model too (a panel's models share the directory). ``grounding``: the
    stage-3 mode of the SAAG stage mix, recorded in the store
    (:data:`~callscope.runs.calibration_store.GROUNDING_META`). A directory that holds
    ``model`` run with another style, ``max_steps``, decoding or benchmark is refused
    (``ValueError``, before anything is written:
    :func:`~callscope.runs.calibration_config.check_calibrate_config`). The run holds
    ``out``'s writer lock (:func:`~callscope.runs.run_dir_lock.hold_run_dir`, the lock
    ``calibrate run`` holds): while another process writes ``out``, the call is
    :class:`~callscope.errors.RunDirBusy` before anything is written or sent.
    """
    out = Path(out)
    config = preset(preset_name)
    with hold_run_dir(out):  # one writer per run directory: its lock, or its holder's
        store = RunStore(out)
        try:
            # the settings that change a conversation: refused when they differ from the stored
            resolved = resolve_style(model, style)
            bench_name = benchmark.name if benchmark else DEFAULT_BENCHMARK
            check_calibrate_config(
                store, model.spec, calibrate_config(resolved, max_steps, decoding, bench_name)
            )
            store.set_meta("classifier_preset", preset_name)
            if grounding is not None or store.get_meta(GROUNDING_META) is None:
                store.set_meta(GROUNDING_META, get_grounding(grounding).name)
            store.set_meta(BENCHMARK_META, bench_name)
            t0 = time.perf_counter()
            usage_before = model.usage.copy()
            runs = run_calibration_cases(
                model,
                store,
                cases,
                style=resolved,
                max_steps=max_steps,
                decoding=decoding,
                probe=probe,
                show_progress=show_progress,
                benchmark=benchmark,
                concurrency=concurrency,
            )
            result = diagnose_store(
                store, model.spec, probe or BASELINE, cases, config=config, benchmark=benchmark
            )
            result.ran, result.skipped, result.seconds = (
                runs.ran,
                runs.skipped,
                time.perf_counter() - t0,
            )
            result.aborted = runs.aborted
            done = ModelCalibration(
                result=result, path=write_outputs(out, result, per_model=per_model)
            )
            done.usage = usage_line(model, usage_before)
            if probe and probe != BASELINE:
                if store.conversations_done(model.spec, BASELINE) >= {c.id for c in cases}:
                    suffix = f"-{model_slug(model.spec)}" if per_model else ""
                    _, done.ablation = ablation_with_baseline(
                        store, model.spec, benchmark=benchmark, suffix=suffix
                    )
                    done.paired = (out / f"probe-{probe}{suffix}.md").read_text(encoding="utf-8")
                else:
                    done.baseline_missing = True
            return done
        finally:
            store.close()
