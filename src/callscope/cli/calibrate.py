"""`callscope calibrate`: the action-class diagnostic (GAR beside Acc), one subcommand per job.

* ``run``: a model on a multi-turn benchmark (:func:`callscope.runs.calibrate.calibrate_model`);
* ``panel``: several models on the same cases (:func:`callscope.runs.calibrate_panel.calibrate_panel`);
* ``experiment``: every probe of a calibration experiment file, each as a panel run;
* ``from-bfcl``: BFCL's own result trees (:func:`callscope.runs.from_results.calibrate_from_bfcl`,
  or a panel when they hold several models);
* ``from-tau2``: τ²-bench result files (:func:`callscope.runs.from_results.calibrate_from_tau2`);
* ``export``: a run directory's conversations as BFCL result and score files.

Each subcommand takes only its own options. The single command this replaces still works:
``callscope calibrate -m X ...`` (no subcommand) runs ``calibrate run``, ``calibrate
--from-bfcl DIR`` runs ``calibrate from-bfcl DIR`` and so on (:func:`legacy_args`), after one
line on stderr naming the new spelling. This module parses the options, calls the library,
prints what it returned and renders the HTML page."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperGroup

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
    NoCacheOpt,
    StyleOpt,
    TimeoutOpt,
    comma_list,
    console,
    fail,
    handle_errors,
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

# --------------------------------------------------------------------------- the old spelling

#: the options that chose a job of the single command, in the order it tried them, and the
#: subcommand each is now (their value becomes the subcommand's argument)
LEGACY_JOBS: tuple[tuple[str, str], ...] = (
    ("--export-bfcl", "export"),
    ("--from-tau2", "from-tau2"),
    ("--from-bfcl", "from-bfcl"),
    ("--experiment", "experiment"),
)
#: the single command's options that took no value
LEGACY_FLAGS = frozenset({"--quiet", "--no-cache", "--allow-task-mismatch", "--pooled"})
_OUT = ("-o", "--out")
#: ``ctx.meta`` key of the note an old spelling prints
_NOTE = "callscope.calibrate.legacy_note"


def legacy_args(args: Sequence[str], accepted: dict[str, frozenset[str]]) -> tuple[list[str], str]:
    """The subcommand spelling of the single command's arguments ``args``, and the one-line
    note saying so. The job is chosen as the single command chose it: ``--export-bfcl``,
    then ``--from-tau2``, ``--from-bfcl``, ``--experiment``, then ``-m`` given more than once
    (``panel``), else ``run``; the chosen option's value becomes the subcommand's argument
    (``export`` also takes the ``-o`` run directory as its first). Options the subcommand
    does not take (``accepted``: subcommand -> its option names), which the single command
    ignored for that job, are left out.

    >>> legacy_args(["--from-bfcl", "r", "-o", "o", "--quiet"], {"from-bfcl": frozenset({"-o"})})[0]
    ['from-bfcl', 'r', '-o', 'o']
    """
    items: list[tuple[str, str | None]] = []  # (option or "", value); "" = a bare argument
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if token.startswith("--") and "=" in token:
            name, value = token.split("=", 1)
            items.append((name, value))
        elif token.startswith("-") and token not in LEGACY_FLAGS and token != "--help" and rest:
            items.append((token, rest.pop(0)))
        elif token.startswith("-"):
            items.append((token, None))
        else:
            items.append(("", token))
    given = {name: value for name, value in items}
    job = next((sub for opt, sub in LEGACY_JOBS if given.get(opt) is not None), None)
    models = [v for name, v in items if name in ("-m", "--model")]
    if job is None:
        job = "panel" if len(models) > 1 else "run"
    selector = next((opt for opt, sub in LEGACY_JOBS if sub == job), None)
    head: list[str] = [job]
    if job == "export":
        head.append(next((v for n, v in items if n in _OUT and v is not None), "runs/calibrate"))
    if selector is not None:
        head.append(str(given[selector]))
    keep = accepted.get(job, frozenset()) | {"--help"}
    if job == "export":
        keep = keep - set(_OUT)
    out = list(head)
    for name, value in items:
        if name == selector or (name and name not in keep):
            continue
        out.extend(t for t in (name, value) if t)
    old = {
        "export": "-o RUN_DIR --export-bfcl DEST",
        "from-tau2": "--from-tau2 RESULTS",
        "from-bfcl": "--from-bfcl RESULTS",
        "experiment": "--experiment FILE",
        "panel": "-m MODEL -m MODEL ...",
        "run": "-m MODEL ...",
    }[job]
    new = {
        "export": "export RUN_DIR DEST",
        "from-tau2": "from-tau2 RESULTS",
        "from-bfcl": "from-bfcl RESULTS",
        "experiment": "experiment FILE",
        "panel": "panel -m MODEL -m MODEL ...",
        "run": "run -m MODEL ...",
    }[job]
    note = (
        f"note: `callscope calibrate {old}` is now `callscope calibrate {new}`; "
        "the old spelling will be removed in a later release"
    )
    return out, note


class CalibrateGroup(TyperGroup):
    """The ``calibrate`` group: arguments that do not start with a subcommand (or ask for the
    group's help) are the single command's old spelling, run as their subcommand
    (:func:`legacy_args`), followed by a one-line note on stderr (last, so that what the
    command prints first stays first)."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ctx.help_option_names):
            accepted = {
                name: frozenset(
                    opt
                    for p in cmd.params
                    for opt in (*p.opts, *p.secondary_opts)
                    if opt.startswith("-")
                )
                for name, cmd in self.commands.items()
            }
            args, ctx.meta[_NOTE] = legacy_args(args, accepted)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: typer.Context) -> Any:
        """Run the subcommand; after it (however it ends), the note of an old spelling."""
        try:
            return super().invoke(ctx)
        finally:
            if ctx.meta.get(_NOTE):
                typer.echo(ctx.meta[_NOTE], err=True)


calibrate = typer.Typer(
    cls=CalibrateGroup,
    help="The action-class diagnostic (GAR beside Acc): run models on a multi-turn benchmark, "
    "or read BFCL's or tau2-bench's own results.",
)

# --------------------------------------------------------------------------- shared options


OutOpt = Annotated[
    Path,
    typer.Option("-o", "--out", help="The run directory. Run the same command again to resume."),
]
ClassifierOpt = Annotated[
    str,
    typer.Option(
        "--classifier",
        "--preset",
        help="The classifier preset that labels each emission: " + " | ".join(preset_names()) + ".",
    ),
]
CategoriesOpt = Annotated[
    str | None,
    typer.Option(
        "--categories",
        help="The categories to run, comma separated (BFCL: base, long_context, miss_param, "
        "miss_func). Default: every category of the benchmark, in its order.",
    ),
]
BenchmarkOpt = Annotated[
    str,
    typer.Option(
        "--benchmark",
        help="The multi-turn benchmark the cases come from: " + " | ".join(benchmark_names()) + ".",
    ),
]
NOpt = Annotated[
    int | None,
    typer.Option(
        "--n",
        help="Cases per category: the first N in the benchmark's order. All when omitted.",
    ),
]
ProbeOpt = Annotated[str | None, typer.Option("--probe", help=probe_help())]
MaxStepsOpt = Annotated[
    int, typer.Option("--max-steps", help="Steps in one turn before the case is force-quit.")
]
ConcurrencyOpt = Annotated[
    int,
    typer.Option("--concurrency", min=1, help="Conversations run at once (HTTP backends)."),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", help="Show no progress bar.")]
MaxTokensOpt = Annotated[
    int, typer.Option("--max-tokens", help="The most tokens the model may write in one reply.")
]
ReadOutOpt = Annotated[
    Path, typer.Option("-o", "--out", help="The folder the tables and report.html are written to.")
]


def _config(preset_name: str) -> ClassifierConfig:
    """The classifier preset ``preset_name`` (exit 2 when unknown)."""
    try:
        return preset(preset_name)
    except ValueError as exc:
        fail(str(exc))


def _record_grounding(out: Path, grounding: str) -> None:
    """Record the grounding mode of a model run's SAAG stage mix in its store."""
    from callscope.runs.calibration_store import GROUNDING_META  # lazy: the multi-turn pipeline
    from callscope.store.run_store import RunStore  # lazy: only model runs open a store

    store = RunStore(out)
    try:
        store.set_meta(GROUNDING_META, get_grounding(grounding).name)
    finally:
        store.close()


# --------------------------------------------------------------------------- subcommands


@calibrate.command("run")
@handle_errors
def run_command(
    model: Annotated[str, typer.Option("-m", "--model", help=backend_help())] = DEFAULT_MODEL,
    out: OutOpt = Path("runs/calibrate"),
    categories: CategoriesOpt = None,
    benchmark: BenchmarkOpt = "bfcl",
    n: NOpt = None,
    probe: ProbeOpt = None,
    style: StyleOpt = "auto",
    max_steps: MaxStepsOpt = 20,
    max_tokens: MaxTokensOpt = 512,
    preset_name: ClassifierOpt = "default",
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    timeout: TimeoutOpt = 120.0,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    concurrency: ConcurrencyOpt = 1,
    quiet: QuietOpt = False,
    grounding: GroundingOpt = DEFAULT_GROUNDING,
) -> None:
    """Run one model on a multi-turn benchmark's cases (optionally under a probe), grade them
    and write GAR beside Acc per category, resumably, into the run directory."""
    _config(preset_name)
    _record_grounding(out, grounding)
    _model_run(
        model,
        out,
        comma_list(categories) if categories else None,
        n,
        benchmark=benchmark,
        probe=probe,
        style=style_arg(style),
        max_steps=max_steps,
        decoding=Decoding(max_tokens=max_tokens),
        preset_name=preset_name,
        quiet=quiet,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
        cache=cache,
        no_cache=no_cache,
        concurrency=concurrency,
    )


@calibrate.command("panel")
@handle_errors
def panel_command(
    model: Annotated[
        list[str],
        typer.Option("-m", "--model", help=backend_help() + " Repeat -m for each model."),
    ],
    out: OutOpt = Path("runs/calibrate"),
    categories: CategoriesOpt = None,
    benchmark: BenchmarkOpt = "bfcl",
    n: NOpt = None,
    probe: ProbeOpt = None,
    style: StyleOpt = "auto",
    max_steps: MaxStepsOpt = 20,
    max_tokens: MaxTokensOpt = 512,
    preset_name: ClassifierOpt = "default",
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    timeout: TimeoutOpt = 120.0,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    concurrency: ConcurrencyOpt = 1,
    quiet: QuietOpt = False,
    grounding: GroundingOpt = DEFAULT_GROUNDING,
) -> None:
    """Run several models on the same cases into one run directory, then write their panel:
    per category each model's GAR, Acc and their difference."""
    _config(preset_name)
    _record_grounding(out, grounding)
    _panel_run(
        model,
        out,
        comma_list(categories) if categories else None,
        n,
        benchmark=benchmark,
        probe=probe,
        style=style_arg(style),
        max_steps=max_steps,
        decoding=Decoding(max_tokens=max_tokens),
        preset_name=preset_name,
        quiet=quiet,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
        cache=cache,
        no_cache=no_cache,
        concurrency=concurrency,
    )


@calibrate.command("experiment")
@handle_errors
def experiment_command(
    path: Annotated[
        Path,
        typer.Argument(
            help="The calibration experiment TOML: models, categories, cases, probes, style."
        ),
    ],
    quiet: QuietOpt = False,
) -> None:
    """Run every probe of a calibration experiment file, each as a panel run of its models."""
    _experiment_run(path, quiet=quiet)


@calibrate.command("from-bfcl")
@handle_errors
def from_bfcl_command(
    results: Annotated[
        Path, typer.Argument(help="The BFCL result tree written by `bfcl generate`.")
    ],
    out: ReadOutOpt = Path("runs/calibrate"),
    scores: Annotated[
        Path | None,
        typer.Option(
            "--scores",
            help="The BFCL score tree written by `bfcl evaluate`. Default: look under the "
            "result tree.",
        ),
    ] = None,
    bfcl_model: Annotated[
        str | None,
        typer.Option(
            "--bfcl-model",
            help="The model folder inside the BFCL trees. Without it, a tree of several "
            "models gives their panel.",
        ),
    ] = None,
    preset_name: ClassifierOpt = "default",
) -> None:
    """Read BFCL's own multi-turn result files and write GAR beside Acc (Acc from BFCL's
    score files), or the panel of every model the tree holds."""
    config = _config(preset_name)
    from callscope.runs.panel_files import bfcl_models  # lazy: with its pipeline

    if bfcl_model is None and len(bfcl_models(results)) > 1:
        _bfcl_panel(results, out, scores, config)
    else:
        _from_bfcl(results, out, scores, bfcl_model, config)


@calibrate.command("from-tau2")
@handle_errors
def from_tau2_command(
    results: Annotated[
        Path, typer.Argument(help="A tau2-bench results.json, run directory or folder of runs.")
    ],
    out: ReadOutOpt = Path("runs/calibrate"),
    tasks: Annotated[
        Path | None,
        typer.Option("--tasks", help="The tau2 tasks file, when the results do not hold them."),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge",
            help="Also ask this model (any backend) whether the user confirmed each write, "
            "and report its agreement with the CONFIRM rule.",
        ),
    ] = None,
    write_tools: Annotated[
        str | None,
        typer.Option("--write-tools", help="Tools that write, comma separated."),
    ] = None,
    read_tools: Annotated[
        str | None,
        typer.Option("--read-tools", help="Tools that never write, comma separated."),
    ] = None,
    ask_tasks: Annotated[
        str | None,
        typer.Option(
            "--ask-tasks",
            help="The checked list of ASK tasks (ids or domain:id, comma separated; 'none': "
            "no ASK gold). Default: the scenario cue candidates.",
        ),
    ] = None,
    allow_task_mismatch: Annotated[
        bool,
        typer.Option(
            "--allow-task-mismatch",
            help="Compute the per-class rows even when the action checks belong to other tasks.",
        ),
    ] = False,
    pooled: Annotated[
        bool, typer.Option("--pooled", help="Also pool every agent and user pair.")
    ] = False,
    preset_name: ClassifierOpt = "default",
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    timeout: TimeoutOpt = 120.0,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
) -> None:
    """Read tau2-bench's own result files and write GAR beside Acc per domain and gold class
    (the connection options are the judge's)."""
    config = _config(preset_name)
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
    _from_tau2(results, out, tasks, judge_model, config, settings)


@calibrate.command("export")
@handle_errors
def export_command(
    run_dir: Annotated[Path, typer.Argument(help="The run directory of a calibrate run.")],
    dest: Annotated[Path, typer.Argument(help="The folder to write BFCL's files under.")],
    probe: Annotated[
        str | None,
        typer.Option("--probe", help="The probe run to export. Default: the baseline."),
    ] = None,
) -> None:
    """Write a calibrate run's conversations as BFCL result and score files (no model runs)."""
    _export_bfcl(run_dir, dest, probe)


# --------------------------------------------------------------------------- the jobs


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
    from callscope.report.tau2_tables import (  # lazy: with its pipeline
        tau2_page,
        tau2_terminal_tables,
        write_tau2_markdown,
    )
    from callscope.runs.from_results import calibrate_from_tau2  # lazy: numpy

    try:
        done = calibrate_from_tau2(
            results, out, tasks=tasks, judge=judge, config=config, settings=settings
        )
    except (Tau2FormatError, FileNotFoundError) as exc:
        fail(str(exc))
    md = write_tau2_markdown(done.diagnostics, out)
    content = tau2_page(done.diagnostics, results)
    for w in content.warnings:
        console.print(w, style="bold red", markup=False)
    for table in tau2_terminal_tables(done.diagnostics):
        Console().print(table.to_rich())
    for heading, items in content.lists:
        console.print(f"{heading}: {len(items)} (listed in the report)", markup=False)
    page = build_diagnostic_page(
        out,
        content.title,
        content.tables,
        notes=content.notes,
        warnings=content.warnings,
        lists=content.lists,
    )
    console.print(f"wrote {md}, .json and {page}")
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


def _cases(categories: list[str] | None, n: int | None, benchmark: str) -> tuple[Any, list[Any]]:
    """The named benchmark (exit 2 when unknown) and its first ``n`` cases per category
    (``None``: every category of the benchmark)."""
    from callscope.runs.calibrate import select_cases  # lazy: numpy

    try:
        bench = get_benchmark(benchmark)
    except ValueError as exc:
        fail(str(exc))
    return bench, select_cases(categories, n, bench)


def _model_run(
    spec: str,
    out: Path,
    categories: list[str] | None,
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
    from callscope.runs.calibrate import calibrate_model  # lazy: numpy
    from callscope.runs.calibration_store import BASELINE  # lazy: numpy

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
    categories: list[str] | None,
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
    from callscope.runs.calibration_store import BASELINE, BENCHMARK_META  # lazy: numpy
    from callscope.runs.export_bfcl import export_bfcl  # lazy: numpy
    from callscope.store.run_store import STORE_FILE, RunStore  # lazy: with its pipeline

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
    console.print(f"wrote {len(done.files)} files under {dest}", markup=False)
