"""The jobs of ``callscope calibrate``'s subcommands (:mod:`callscope.cli.calibrate`): each
calls the library, prints what it returned (tables to stdout, messages to stderr) and renders
the HTML page; a model run whose cases ended in a backend error exits 1, a results job that
lost input 1 and one that read nothing 2 (:mod:`callscope.cli.calibrate_losses`)."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from callscope.benchmarks.protocol import get_benchmark
from callscope.calibration.classify import ClassifierConfig, preset
from callscope.cli.calibrate_losses import bfcl_lost, exit_if_lost, leaderboard_lost, tau2_lost
from callscope.cli.common import (
    EXIT_FAILED,
    console,
    fail,
    interruptible,
    one_line,
    print_stopped_early,
    shown_path,
    stdout_console,
    write_report,
)
from callscope.core.text import escape_controls
from callscope.models.base import ChatModel, Decoding, ModelOptions

if TYPE_CHECKING:
    from callscope.calibration.panel import Panel
    from callscope.calibration.tau2 import Tau2Config
    from callscope.runs.calibrate import ModelCalibration


def from_tau2_job(
    results: Path,
    out: Path,
    tasks: Path | None,
    judge: ChatModel | None,
    config: ClassifierConfig,
    settings: Tau2Config | None = None,
) -> None:
    from callscope.benchmarks.tau2.reader import Tau2FormatError  # lazy: with its pipeline
    from callscope.calibration.tau2 import Tau2Config  # lazy: with its pipeline
    from callscope.report.html import build_diagnostic_page  # lazy: pandas + matplotlib
    from callscope.report.tau2_tables import (  # lazy: with its pipeline
        tau2_page,
        tau2_terminal_tables,
        write_tau2_markdown,
    )
    from callscope.runs.from_results import calibrate_from_results  # lazy: numpy

    try:  # calibrate_from_tau2's call, keeping what was read (its problems: tau2_lost)
        done = calibrate_from_results(
            "tau2", results, out, read_options={"tasks": tasks}, judge=judge,
            config=replace(settings or Tau2Config(), classifier=config),
        )  # fmt: skip
    except (Tau2FormatError, FileNotFoundError) as exc:
        fail(str(exc))
    # exit 2 when no simulation was read
    lost = tau2_lost(done.read, results, done.diagnostics.left_out)
    md = write_tau2_markdown(done.diagnostics, out)
    content = tau2_page(done.diagnostics, results)
    for w in content.warnings:
        console.print(w, style="bold red", markup=False)
    for table in tau2_terminal_tables(done.diagnostics):
        stdout_console().print(table.to_rich())
    for heading, items in content.lists:
        console.print(f"{heading}: {len(items)} (listed in the report)", markup=False)
    page = build_diagnostic_page(
        out, content.title, content.tables, notes=content.notes, warnings=content.warnings,
        lists=content.lists,
    )  # fmt: skip
    console.print(f"wrote {shown_path(md)}, .json and {shown_path(page)}")
    groups = list(dict.fromkeys(r.get("group") for r in done.diagnostics.rows))
    if len(groups) > 1:  # several agent models: their panel too
        from callscope.calibration.panel import panel_from_rows  # lazy: numpy
        from callscope.report.panels import write_panel_page  # lazy: matplotlib
        from callscope.runs.calibrate_panel import write_panel  # lazy: numpy

        panel = panel_from_rows(done.diagnostics.rows, done.diagnostics.capability)
        print_panel(panel)
        written = write_panel(out / "panel", panel)
        panel_page = write_panel_page(out / "panel", panel)
        console.print(f"wrote {panel_files(written)} and {one_line(str(panel_page))}", markup=False)
    exit_if_lost(lost)


def from_bfcl_job(
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
    stdout_console().print(rich_table(done.diagnostics.rows, title=title))
    for n in done.page.notes:
        console.print(n, markup=False)
    for p in done.run.problems:
        console.print(p, style="yellow", markup=False)
    page = build_diagnostic_page(
        out, done.page.title, done.page.tables, notes=done.page.notes,
        warnings=done.page.warnings, lists=done.page.lists,
    )  # fmt: skip
    console.print(f"wrote {shown_path(done.written[0])}, .json and {shown_path(page)}")
    exit_if_lost(bfcl_lost(done.run))


def select(categories: list[str] | None, n: int | None, benchmark: str) -> tuple[Any, list[Any]]:
    """The named benchmark (exit 2 when unknown) and its first ``n`` cases per category
    (``None``: every category of the benchmark)."""
    from callscope.runs.calibrate import select_cases  # lazy: numpy

    try:
        bench = get_benchmark(benchmark)
    except ValueError as exc:
        fail(str(exc))
    return bench, select_cases(categories, n, bench)


@dataclass(frozen=True)
class RunOptions:
    """The options of a model run (``calibrate run``, ``panel``, each probe of an
    ``experiment``), made once from the command line or the experiment file and passed
    whole: the run directory ``out``, the cases (``categories``, ``n`` per category, the
    ``benchmark``), the ``probe``, ``style`` (``None``: the backend's own), ``max_steps``,
    ``decoding``, the classifier ``preset_name``, ``quiet``, ``concurrency`` and how each
    model is opened (``connection``, :class:`~callscope.models.base.ModelOptions`)."""

    out: Path
    categories: list[str] | None = None
    n: int | None = None
    benchmark: str = "bfcl"
    probe: str | None = None
    style: str | None = None
    max_steps: int = 20
    decoding: Decoding = field(default_factory=Decoding)
    preset_name: str = "default"
    quiet: bool = False
    concurrency: int = 1
    connection: ModelOptions = field(default_factory=ModelOptions)

    def calibrate_keywords(self, bench: Any) -> dict[str, Any]:
        """The keywords of :func:`callscope.runs.calibrate.calibrate_model` these options set
        (``bench``: the benchmark object :func:`select` returned)."""
        return {
            "probe": self.probe,
            "style": self.style,
            "max_steps": self.max_steps,
            "decoding": self.decoding,
            "preset_name": self.preset_name,
            "show_progress": not self.quiet,
            "benchmark": bench,
            "concurrency": self.concurrency,
        }


def model_run(spec: str, opts: RunOptions) -> None:
    """``calibrate run``: the model ``spec`` on the cases of ``opts``, its table printed, the
    page written; exit 1 when cases ended in a backend error."""
    from callscope.calibration.diagnostics import rich_table  # lazy: numpy
    from callscope.runs.calibrate import calibrate_model  # lazy: numpy
    from callscope.runs.calibration_store import BASELINE  # lazy: numpy
    from callscope.runs.experiment import open_model  # lazy: looked up when called

    out, probe = opts.out, opts.probe
    bench, cases = select(opts.categories, opts.n, opts.benchmark)
    m = open_model(spec, opts.connection)
    with interruptible(), closing(m):
        done = calibrate_model(m, out, cases, **opts.calibrate_keywords(bench))
    r = done.result
    stdout_console().print(
        rich_table(
            r.diagnostics.rows,
            title=f"{m.spec} ({probe or BASELINE}): {r.ran} ran, {r.skipped} already done, {r.seconds:.0f} s",
        )
    )
    if done.usage:  # issue 31: tokens sent / computed / generated
        console.print(done.usage, markup=False)
    console.print(f"wrote {one_line(str(done.path))}", markup=False)
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
            f"[yellow]no complete baseline for these cases in {shown_path(out)}: run the same command without --probe for the paired comparison[/yellow]"
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


def bfcl_panel_job(results: Path, out: Path, scores: Path | None, config: ClassifierConfig) -> None:
    """``--from-bfcl`` over a folder with several models: the panel of all of them."""
    from callscope.report.panels import write_panel_page  # lazy: matplotlib
    from callscope.runs.calibrate_panel import write_panel  # lazy: numpy
    from callscope.runs.panel_files import panel_from_bfcl  # lazy: numpy

    try:
        done = panel_from_bfcl(results, scores, config=config)
    except FileNotFoundError as exc:
        fail(str(exc))
    print_panel(done.panel)
    for p in done.problems:
        console.print(p, style="yellow", markup=False)
    written = write_panel(out, done.panel)
    page = write_panel_page(out, done.panel)
    console.print(f"wrote {panel_files(written)} and {one_line(str(page))}", markup=False)
    exit_if_lost(sum(bfcl_lost(run) for run in done.runs.values()))


def panel_files(written: list[Path]) -> str:
    """What a panel wrote, in one phrase: its case-level Markdown and the other extensions
    (every file format, then ``.json``), e.g. ``panel-baseline.md (.tex, .csv, .json, turn
    level)``."""
    others = dict.fromkeys(p.suffix for p in written[1:] if p.suffix != written[0].suffix)
    return f"{one_line(str(written[0]))} ({', '.join([*others, 'turn level'])})"


def print_panel(panel: Panel) -> None:
    from callscope.calibration.panel import (  # lazy: numpy
        capability_lines,
        panel_table,
        turn_panel_table,
    )

    for w in capability_lines(panel):
        console.print(w, style="bold red", markup=False)
    stdout_console().print(panel_table(panel).to_rich())
    stdout_console().print(turn_panel_table(panel).to_rich())
    for note in panel.notes:
        console.print(note, markup=False)


def panel_run(
    specs: list[str],
    opts: RunOptions,
    *,
    styles: dict[str, str | None] | None = None,
    connections: dict[str, ModelOptions] | None = None,
) -> None:
    """Several models on the same cases into one store, then their panel (the run's
    report.html shows it). ``styles`` / ``connections``: a model's own style / way to open
    it, else those of ``opts``."""
    from callscope.runs.calibrate_panel import calibrate_panel  # lazy: numpy
    from callscope.runs.experiment import open_model  # lazy: looked up when called

    out = opts.out
    bench, cases = select(opts.categories, opts.n, opts.benchmark)

    def opener(spec: str) -> ChatModel:
        return open_model(spec, (connections or {}).get(spec, opts.connection))

    def progress(one: ModelCalibration) -> None:
        r = one.result
        console.print(
            f"{r.model}: {r.ran} ran, {r.skipped} already done, {r.seconds:.0f} s",
            markup=False,
        )

    with interruptible():
        done = calibrate_panel(
            specs, opener, out, cases, styles=styles, on_model=progress,
            **opts.calibrate_keywords(bench),
        )  # fmt: skip
    print_panel(done.panel)
    console.print(f"wrote {panel_files(done.written)}", markup=False)
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


def experiment_run(path: Path, *, quiet: bool) -> None:
    """``--experiment FILE``: every probe of the file as a panel run of its models."""
    from callscope.runs.calibration_experiment import CalibrationExperiment  # lazy: numpy
    from callscope.runs.run_dir_lock import hold_run_dir  # lazy: only model runs write

    try:
        exp = CalibrationExperiment.load(path)
        preset(exp.classifier)
    except ValueError as exc:
        fail(str(exc))
    failed = False
    connection = ModelOptions(
        base_url=exp.base_url,
        api_key=exp.api_key,
        timeout=exp.timeout,
        cache=exp.cache,
        use_cache=exp.use_cache,
    )
    opts = RunOptions(
        out=exp.output,
        categories=exp.categories,
        n=exp.n,
        benchmark=exp.benchmark,
        style=exp.style,
        max_steps=exp.max_steps,
        decoding=Decoding(max_tokens=exp.max_tokens),
        preset_name=exp.classifier,
        quiet=quiet,
        concurrency=exp.concurrency,
        connection=connection,
    )
    connections = {  # a model's own base URL / API key, else the file's
        m.spec: replace(
            connection,
            base_url=m.base_url or connection.base_url,
            api_key=m.api_key or connection.api_key,
        )
        for m in exp.models
    }
    with hold_run_dir(exp.output):  # one writer per run directory, every probe
        for probe in exp.probes:
            try:
                panel_run(
                    [m.spec for m in exp.models],
                    replace(opts, probe=None if probe == "baseline" else probe),
                    styles={m.spec: m.style for m in exp.models if m.style},
                    connections=connections,
                )
            except typer.Exit as exc:
                if exc.exit_code != EXIT_FAILED:
                    raise
                failed = True
    if failed:
        raise typer.Exit(EXIT_FAILED)


def leaderboard_job(
    tree: Path,
    out: Path,
    *,
    scores: Path | None,
    model: str | None,
    jobs: int,
    checker: bool,
    cases: bool,
    grounding: str | None,
    quiet: bool,
) -> None:
    """``calibrate leaderboard``: every model of a BFCL single-turn tree diagnosed beside
    BFCL's verdicts (:func:`callscope.runs.leaderboard_tree.diagnose_tree`), its tables, figure,
    page and case browser written to ``out``, progress on stderr and in ``out/run.log``."""
    import time  # lazy: with the job

    from callscope.benchmarks.bfcl.single_results import single_models  # lazy: with its job
    from callscope.report.leaderboard import (  # lazy: numpy
        CASES_DIR,
        leaderboard_tables,
        undecodable_note,
    )
    from callscope.report.leaderboard_pages import (  # lazy: matplotlib
        LEFT_OUT_REASONS,
        mark_left_out,
        write_case_page,
        write_leaderboard_report,
    )
    from callscope.runs.leaderboard import ModelResult  # lazy: numpy
    from callscope.runs.leaderboard_tree import diagnose_tree  # lazy: numpy
    from callscope.runs.progress import RunProgress  # lazy: rich progress

    names = single_models(tree)
    if not names:
        fail(
            f"{tree}: no BFCL single-turn result file found (gorilla_openfunctions_v1_test_"
            "*_result.json[.gz], BFCL_v3_* / BFCL_v4_*_result.json[.gz])"
        )
    if model is not None and model not in names:
        fail(f"{tree}: no model {model!r}; the tree holds {', '.join(names)}")
    total = 1 if model is not None else len(names)
    out.mkdir(parents=True, exist_ok=True)
    log = (out / "run.log").open("w", encoding="utf-8")
    start = time.perf_counter()

    with closing(log), RunProgress("leaderboard", total, enabled=not quiet, unit="models") as bar:

        def on_model(result: ModelResult) -> None:
            s = result.seconds
            line = (
                f"{time.perf_counter() - start:7.2f}s {result.model}: {len(result.rows)} "
                f"answers, read {s.get('read', 0):.2f}s, decode {s.get('decode', 0):.2f}s, "
                f"diagnose {s.get('diagnose', 0):.2f}s, "
                f"checker {s.get('checker', 0):.2f}s, page {s.get('page', 0):.2f}s"
            )
            log.write(escape_controls(line, keep_cr=False) + "\n")  # the model name is data
            log.flush()
            bar.advance()

        try:
            run = diagnose_tree(
                tree,
                scores=scores,
                model=model,
                jobs=jobs,
                checker=checker,
                grounding=grounding,
                pages=out / CASES_DIR if cases else None,
                page_writer=write_case_page if cases else None,
                on_model=on_model,
            )
        except FileNotFoundError as exc:
            fail(str(exc))
        lost = leaderboard_lost(run, tree)  # exit 2 when no answer was read
        if cases:  # each case page says which of its cases are left out, and why
            why = {run.case_ids[i]: LEFT_OUT_REASONS[k] for k, v in run.drift.items() for i in v}
            mark_left_out(out / CASES_DIR, [r.model for r in run.results], why)
        tables = leaderboard_tables(run)
        left = sum(len(v) for v in run.drift.values())
        notes = [
            f"{len(run.results)} models, {sum(len(r.rows) for r in run.results)} answers, "
            f"bfcl-eval {run.bfcl_version}; {left} cases left out for drift "
            f"({', '.join(f'{k} {len(v)}' for k, v in run.drift.items())}); "
            f"{run.seconds:.1f} s with {jobs} process(es)."
        ]
        written = write_leaderboard_report(run, out, tables, notes)
        log.write(escape_controls(f"{time.perf_counter() - start:7.2f}s done: {notes[0]}\n"))
    warning = undecodable_note(run)
    if warning:  # first, before the table it is left out of
        stdout_console().print(warning, style="bold yellow", markup=False)
    stdout_console().print(tables[0].to_rich())
    for n in notes:
        console.print(n, markup=False)
    for r in run.results:
        for p in r.problems[:5]:
            console.print(f"{r.model}: {p}", style="yellow", markup=False)
    console.print(
        f"wrote {shown_path(written['tables'][0])} (and {len(written['tables']) - 1} more), "
        f"{shown_path(written['figure'])}, {shown_path(written['page'])}"
    )
    exit_if_lost(lost)
