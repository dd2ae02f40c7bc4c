"""`callscope calibrate`: the action-class diagnostic (GAR beside Acc) in one of three
pipelines: run a model on BFCL multi-turn (:func:`callscope.runs.calibrate.calibrate_model`),
or read BFCL's (:func:`callscope.runs.from_results.calibrate_from_bfcl`) or τ²-bench's
(:func:`callscope.runs.from_results.calibrate_from_tau2`) own results. This module parses
the options, calls one of them, prints what it returned and renders the HTML page."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from callscope.benchmarks.bfcl.categories import FILE_ORDER
from callscope.benchmarks.protocol import benchmark_names, get_benchmark
from callscope.calibration.classify import ClassifierConfig, preset, preset_names
from callscope.calibration.probes import probe_help
from callscope.cli.common import (
    DEFAULT_MODEL,
    EXIT_FAILED,
    ApiKeyOpt,
    BaseUrlOpt,
    CacheOpt,
    GroundingOpt,
    MaxTokensOpt,
    NoCacheOpt,
    StyleOpt,
    TimeoutOpt,
    comma_list,
    console,
    fail,
    interruptible,
    open_model,
    print_stopped_early,
    style_arg,
    write_report,
)
from callscope.models.base import ChatModel, Decoding
from callscope.models.registry import backend_help
from callscope.saag.groundings import DEFAULT_GROUNDING, get_grounding

if TYPE_CHECKING:
    from callscope.calibration.panel import Panel
    from callscope.calibration.tau2 import Tau2Config
    from callscope.runs.calibrate import ModelCalibration


def calibrate(
    model: Annotated[
        list[str] | None,
        typer.Option(
            "-m", "--model", help=backend_help() + " Repeat -m for a panel of models in one run."
        ),
    ] = None,
    experiment: Annotated[
        Path | None,
        typer.Option("--experiment", help="calibration experiment TOML (models, categories, ...)"),
    ] = None,
    out: Annotated[
        Path, typer.Option("-o", "--out", help="run directory (re-run to resume)")
    ] = Path("runs/calibrate"),
    categories: Annotated[str, typer.Option("--categories", help=",".join(FILE_ORDER))] = ",".join(
        FILE_ORDER
    ),
    benchmark: Annotated[
        str,
        typer.Option("--benchmark", help="multi-turn benchmark: " + " | ".join(benchmark_names())),
    ] = "bfcl",
    n: Annotated[
        int | None,
        typer.Option("--n", help="cases per category (first N in BFCL order; all if omitted)"),
    ] = None,
    probe: Annotated[
        str | None,
        typer.Option(
            "--probe",
            help=probe_help(),
        ),
    ] = None,
    style: StyleOpt = "auto",
    max_steps: Annotated[int, typer.Option("--max-steps")] = 20,
    max_tokens: MaxTokensOpt = 512,
    preset_name: Annotated[
        str,
        typer.Option(
            "--classifier", "--preset", help="classifier preset: " + " | ".join(preset_names())
        ),
    ] = "default",
    from_bfcl: Annotated[
        Path | None, typer.Option("--from-bfcl", help="BFCL result tree from `bfcl generate`")
    ] = None,
    scores: Annotated[
        Path | None, typer.Option("--scores", help="BFCL score tree from `bfcl evaluate`")
    ] = None,
    bfcl_model: Annotated[
        str | None, typer.Option("--bfcl-model", help="model folder inside the BFCL trees")
    ] = None,
    from_tau2: Annotated[
        Path | None, typer.Option("--from-tau2", help="a tau2-bench results.json or run directory")
    ] = None,
    tasks: Annotated[
        Path | None, typer.Option("--tasks", help="tau2 tasks file (when results lack tasks)")
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge", help="tau2 CONFIRM: also ask this model (any backend) and report agreement"
        ),
    ] = None,
    write_tools: Annotated[
        str | None, typer.Option("--write-tools", help="tau2: comma list of tools that write")
    ] = None,
    read_tools: Annotated[
        str | None, typer.Option("--read-tools", help="tau2: comma list of tools that never write")
    ] = None,
    ask_tasks: Annotated[
        str | None,
        typer.Option(
            "--ask-tasks",
            help="tau2: checked ASK task list (ids or domain:id, comma separated; 'none' = no "
            "ASK gold); default: the scenario cue candidates",
        ),
    ] = None,
    allow_task_mismatch: Annotated[
        bool,
        typer.Option(
            "--allow-task-mismatch",
            help="tau2: compute per-class rows even when action checks belong to other tasks",
        ),
    ] = False,
    pooled: Annotated[
        bool, typer.Option("--pooled", help="tau2: also pool every agent / user pair")
    ] = False,
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    timeout: TimeoutOpt = 120.0,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="cases run at once (HTTP backends)")
    ] = 1,
    quiet: Annotated[bool, typer.Option("--quiet")] = False,
    export_bfcl: Annotated[
        Path | None,
        typer.Option(
            "--export-bfcl",
            help="write the run in -o as BFCL result/score files under this folder (no model run)",
        ),
    ] = None,
    grounding: GroundingOpt = DEFAULT_GROUNDING,
) -> None:
    """Action-class diagnostic (GAR beside Acc) on BFCL multi-turn: run a model, or read
    BFCL's or tau2-bench's own results."""
    try:
        config = preset(preset_name)
    except ValueError as exc:
        fail(str(exc))
    if export_bfcl is not None:
        _export_bfcl(out, export_bfcl, probe)
        return
    if from_tau2 is not None:
        judge_model = None
        if judge:
            judge_model = open_model(
                judge,
                base_url=base_url,
                api_key=api_key,
                timeout=timeout,
                cache=cache,
                no_cache=no_cache,
            )
        from callscope.calibration.tau2 import Tau2Config  # lazy: with its pipeline

        settings = Tau2Config(
            write_tools=frozenset(comma_list(write_tools or "")),
            read_tools=frozenset(comma_list(read_tools or "")),
            ask_tasks=None
            if ask_tasks is None
            else frozenset(t for t in comma_list(ask_tasks) if t.lower() != "none"),
            allow_task_mismatch=allow_task_mismatch,
            pooled=pooled,
        )
        _from_tau2(from_tau2, out, tasks, judge_model, config, settings)
        return
    if from_bfcl is not None:
        from callscope.runs.panel_files import bfcl_models  # lazy: with its pipeline

        if bfcl_model is None and len(bfcl_models(from_bfcl)) > 1:
            _bfcl_panel(from_bfcl, out, scores, config)
        else:
            _from_bfcl(from_bfcl, out, scores, bfcl_model, config)
        return
    if experiment is not None:
        _experiment_run(experiment, quiet=quiet)
        return
    # the SAAG stage mix of a model run is computed in this grounding mode (kept in the store)
    from callscope.runs.calibrate import GROUNDING_META  # lazy: the multi-turn pipeline
    from callscope.store.run_store import RunStore  # lazy: only model runs open a store

    store = RunStore(out)
    try:
        store.set_meta(GROUNDING_META, get_grounding(grounding).name)
    finally:
        store.close()
    common: dict[str, Any] = {
        "benchmark": benchmark,
        "probe": probe,
        "style": style_arg(style),
        "max_steps": max_steps,
        "decoding": Decoding(max_tokens=max_tokens),
        "preset_name": preset_name,
        "quiet": quiet,
        "base_url": base_url,
        "api_key": api_key,
        "timeout": timeout,
        "cache": cache,
        "no_cache": no_cache,
        "concurrency": concurrency,
    }
    if model and len(model) > 1:
        _panel_run(model, out, comma_list(categories), n, **common)
    else:
        _model_run(model[0] if model else DEFAULT_MODEL, out, comma_list(categories), n, **common)


def _from_tau2(
    results: Path,
    out: Path,
    tasks: Path | None,
    judge: ChatModel | None,
    config: ClassifierConfig,
    settings: Tau2Config | None = None,
) -> None:
    from callscope.benchmarks.tau2.reader import Tau2FormatError  # lazy: with its pipeline
    from callscope.report.html import build_diagnostic_page  # lazy: pandas + matplotlib
    from callscope.runs.from_results import calibrate_from_tau2  # lazy: numpy

    try:
        done = calibrate_from_tau2(
            results, out, tasks=tasks, judge=judge, config=config, settings=settings
        )
    except (Tau2FormatError, FileNotFoundError) as exc:
        fail(str(exc))
    for w in done.page.warnings:
        console.print(w, style="bold red", markup=False)
    Console().print(done.diagnostics.rich_acc_table())
    for table in done.diagnostics.rich_tables():
        Console().print(table)
    Console().print(done.diagnostics.rich_domain_table())
    for heading, items in done.page.lists:
        console.print(f"{heading}: {len(items)} (listed in the report)", markup=False)
    page = build_diagnostic_page(
        out,
        done.page.title,
        done.page.tables,
        notes=done.page.notes,
        warnings=done.page.warnings,
        lists=done.page.lists,
    )
    console.print(f"wrote {done.written[0]}, .json and {page}")
    groups = list(dict.fromkeys(r.get("group") for r in done.diagnostics.rows))
    if len(groups) > 1:  # several agent models: their panel too
        from callscope.calibration.panel import panel_from_rows  # lazy: numpy
        from callscope.report.panels import write_panel_page  # lazy: matplotlib
        from callscope.runs.calibrate_panel import write_panel  # lazy: numpy

        panel = panel_from_rows(done.diagnostics.rows, done.diagnostics.capability)
        _print_panel(panel)
        written = write_panel(out / "panel", panel)
        panel_page = write_panel_page(out / "panel", panel)
        console.print(f"wrote {written[0]} (.csv, .tex, .json, turn level) and {panel_page}")


def _from_bfcl(
    results: Path, out: Path, scores: Path | None, model: str | None, config: ClassifierConfig
) -> None:
    from callscope.calibration.diagnostics import rich_table  # lazy: numpy
    from callscope.report.html import build_diagnostic_page  # lazy: pandas + matplotlib
    from callscope.runs.from_results import calibrate_from_bfcl  # lazy: numpy

    try:
        done = calibrate_from_bfcl(results, out, scores=scores, model=model, config=config)
    except FileNotFoundError as exc:
        fail(str(exc))
    for w in done.page.warnings:  # the failed capability check first
        console.print(w, style="bold red", markup=False)
    title = f"BFCL results of {done.run.model} (classifier: {config.name})"
    Console().print(rich_table(done.diagnostics.rows, title=title))
    for n in done.page.notes:
        console.print(n, markup=False)
    for p in done.run.problems:
        console.print(p, style="yellow", markup=False)
    page = build_diagnostic_page(
        out,
        done.page.title,
        done.page.tables,
        notes=done.page.notes,
        warnings=done.page.warnings,
        lists=done.page.lists,
    )
    console.print(f"wrote {done.written[0]}, .json and {page}")


def _cases(categories: list[str], n: int | None, benchmark: str) -> tuple[Any, list[Any]]:
    """The named benchmark (exit 2 when unknown) and its first ``n`` cases per category."""
    from callscope.runs.calibrate import select_cases  # lazy: numpy

    try:
        bench = get_benchmark(benchmark)
    except ValueError as exc:
        fail(str(exc))
    return bench, select_cases(categories, n, bench)


def _model_run(
    spec: str,
    out: Path,
    categories: list[str],
    n: int | None,
    *,
    benchmark: str,
    probe: str | None,
    style: str | None,
    max_steps: int,
    decoding: Decoding,
    preset_name: str,
    quiet: bool,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    cache: Path | None,
    no_cache: bool,
    concurrency: int = 1,
) -> None:
    from callscope.calibration.diagnostics import rich_table  # lazy: numpy
    from callscope.runs.calibrate import BASELINE, calibrate_model  # lazy: numpy

    bench, cases = _cases(categories, n, benchmark)
    m = open_model(
        spec, base_url=base_url, api_key=api_key, timeout=timeout, cache=cache, no_cache=no_cache
    )
    with interruptible(), closing(m):
        done = calibrate_model(
            m,
            out,
            cases,
            probe=probe,
            style=style,
            max_steps=max_steps,
            decoding=decoding,
            preset_name=preset_name,
            show_progress=not quiet,
            benchmark=bench,
            concurrency=concurrency,
        )
    r = done.result
    Console().print(
        rich_table(
            r.diagnostics.rows,
            title=f"{m.spec} ({probe or BASELINE}): {r.ran} ran, {r.skipped} already done, {r.seconds:.0f} s",
        )
    )
    console.print(f"wrote {done.path}", markup=False)
    if done.paired is not None:
        console.print(
            f"paired comparison with the baseline (probe-{probe}.md):\n{done.paired}", markup=False
        )
        console.print(
            f"ablation matrix of the probes run so far (probe-ablation.md):\n{done.ablation}",
            markup=False,
        )
    elif done.baseline_missing:
        console.print(
            f"[yellow]no complete baseline for these cases in {out}: run the same command without --probe for the paired comparison[/yellow]"
        )
    write_report(out)
    if r.aborted:
        print_stopped_early(r.aborted)
    if r.n_errored:
        console.print(
            f"{r.errored_note()} Last error: {r.error_message}. Re-run the same command to retry them.",
            style="yellow",
            markup=False,
        )
        raise typer.Exit(EXIT_FAILED)


def _bfcl_panel(results: Path, out: Path, scores: Path | None, config: ClassifierConfig) -> None:
    """``--from-bfcl`` over a folder with several models: the panel of all of them."""
    from callscope.report.panels import write_panel_page  # lazy: matplotlib
    from callscope.runs.calibrate_panel import write_panel  # lazy: numpy
    from callscope.runs.panel_files import panel_from_bfcl  # lazy: numpy

    try:
        done = panel_from_bfcl(results, scores, config=config)
    except FileNotFoundError as exc:
        fail(str(exc))
    _print_panel(done.panel)
    for p in done.problems:
        console.print(p, style="yellow", markup=False)
    written = write_panel(out, done.panel)
    page = write_panel_page(out, done.panel)
    console.print(f"wrote {written[0]} (.csv, .tex, .json, turn level) and {page}", markup=False)


def _print_panel(panel: Panel) -> None:
    from callscope.calibration.panel import (  # lazy: numpy
        capability_lines,
        panel_table,
        turn_panel_table,
    )

    for w in capability_lines(panel):
        console.print(w, style="bold red", markup=False)
    Console().print(panel_table(panel).to_rich())
    Console().print(turn_panel_table(panel).to_rich())
    for note in panel.notes:
        console.print(note, markup=False)


def _panel_run(
    specs: list[str],
    out: Path,
    categories: list[str],
    n: int | None,
    *,
    benchmark: str,
    probe: str | None,
    style: str | None,
    max_steps: int,
    decoding: Decoding,
    preset_name: str,
    quiet: bool,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    cache: Path | None,
    no_cache: bool,
    concurrency: int = 1,
    styles: dict[str, str | None] | None = None,
    base_urls: dict[str, str | None] | None = None,
    api_keys: dict[str, str | None] | None = None,
) -> None:
    """Several models on the same cases into one store, then their panel (the run's
    report.html shows it)."""
    from callscope.runs.calibrate_panel import calibrate_panel  # lazy: numpy

    bench, cases = _cases(categories, n, benchmark)

    def opener(spec: str) -> ChatModel:
        return open_model(
            spec,
            base_url=(base_urls or {}).get(spec) or base_url,
            api_key=(api_keys or {}).get(spec) or api_key,
            timeout=timeout,
            cache=cache,
            no_cache=no_cache,
        )

    def progress(one: ModelCalibration) -> None:
        r = one.result
        console.print(
            f"{r.model}: {r.ran} ran, {r.skipped} already done, {r.seconds:.0f} s",
            markup=False,
        )

    with interruptible():
        done = calibrate_panel(
            specs,
            opener,
            out,
            cases,
            styles=styles,
            probe=probe,
            style=style,
            max_steps=max_steps,
            decoding=decoding,
            preset_name=preset_name,
            show_progress=not quiet,
            benchmark=bench,
            concurrency=concurrency,
            on_model=progress,
        )
    _print_panel(done.panel)
    console.print(f"wrote {done.written[0]} (.csv, .tex, .json, turn level)", markup=False)
    write_report(out)
    for model, why in done.aborted.items():
        console.print(f"{model}:", markup=False)
        print_stopped_early(why)
    if done.n_errored or done.aborted:
        for m in done.models:
            if m.result.n_errored:
                console.print(
                    f"{m.result.model}: {m.result.errored_note()} Last error: "
                    f"{m.result.error_message}. Re-run the same command to retry them.",
                    style="yellow",
                    markup=False,
                )
        raise typer.Exit(EXIT_FAILED)


def _experiment_run(path: Path, *, quiet: bool) -> None:
    """``--experiment FILE``: every probe of the file as a panel run of its models."""
    from callscope.runs.calibration_experiment import CalibrationExperiment  # lazy: numpy

    try:
        exp = CalibrationExperiment.load(path)
        preset(exp.classifier)
    except ValueError as exc:
        fail(str(exc))
    failed = False
    for probe in exp.probes:
        try:
            _panel_run(
                [m.spec for m in exp.models],
                exp.output,
                exp.categories,
                exp.n,
                benchmark=exp.benchmark,
                probe=None if probe == "baseline" else probe,
                style=exp.style,
                max_steps=exp.max_steps,
                decoding=Decoding(max_tokens=exp.max_tokens),
                preset_name=exp.classifier,
                quiet=quiet,
                base_url=exp.base_url,
                api_key=exp.api_key,
                timeout=exp.timeout,
                cache=exp.cache,
                no_cache=not exp.use_cache,
                concurrency=exp.concurrency,
                styles={m.spec: m.style for m in exp.models if m.style},
                base_urls={m.spec: m.base_url for m in exp.models},
                api_keys={m.spec: m.api_key for m in exp.models},
            )
        except typer.Exit as exc:
            if exc.exit_code != EXIT_FAILED:
                raise
            failed = True
    if failed:
        raise typer.Exit(EXIT_FAILED)


def _export_bfcl(run_dir: Path, dest: Path, probe: str | None) -> None:
    """``--export-bfcl DIR``: the run directory's conversations as BFCL files."""
    from callscope.benchmarks.protocol import benchmark_or_default  # lazy: with its pipeline
    from callscope.runs.calibrate import BASELINE, BENCHMARK_META  # lazy: numpy
    from callscope.runs.export_bfcl import export_bfcl  # lazy: numpy
    from callscope.store.run_store import STORE_FILE, RunStore  # lazy: with its pipeline

    if not (run_dir / STORE_FILE).exists():
        fail(f"{run_dir} holds no {STORE_FILE}: pass the -o folder of a calibrate run")
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
    console.print(f"wrote {len(done.files)} files under {dest}", markup=False)
