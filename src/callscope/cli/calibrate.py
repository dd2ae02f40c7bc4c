"""`callscope calibrate`: the action-class diagnostic (GAR beside Acc), one subcommand per job.

* ``run``: a model on a multi-turn benchmark (:func:`callscope.runs.calibrate.calibrate_model`);
* ``panel``: several models on the same cases (:func:`callscope.runs.calibrate_panel.calibrate_panel`);
* ``experiment``: every probe of a calibration experiment file, each as a panel run;
* ``from-bfcl``: BFCL's own result trees (:func:`callscope.runs.from_results.calibrate_from_bfcl`,
  or a panel when they hold several models);
* ``leaderboard``: BFCL's single-turn result trees of many models (the 2024 leaderboard's
  answers), diagnosed beside BFCL's verdicts (:func:`callscope.runs.leaderboard_tree.diagnose_tree`);
  ``from-bfcl`` on a tree with only single-turn files runs it;
* ``from-tau2``: τ²-bench result files (:func:`callscope.runs.from_results.calibrate_from_tau2`);
* ``export``: a run directory's conversations as BFCL result and score files.

Each subcommand takes only its own options. The single command this replaces still works:
``callscope calibrate -m X ...`` (no subcommand) runs ``calibrate run``, ``calibrate
--from-bfcl DIR`` runs ``calibrate from-bfcl DIR`` and so on
(:func:`callscope.cli.calibrate_legacy.legacy_args`), ending with one line on stderr naming
the new spelling. This module declares the subcommands and their options; the jobs they run
(call the library, print, render the page) are :mod:`callscope.cli.calibrate_jobs`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer

from callscope.benchmarks.protocol import benchmark_names
from callscope.calibration.classify import ClassifierConfig, preset, preset_names
from callscope.calibration.probes import probe_help
from callscope.cli.calibrate_export import export_job
from callscope.cli.calibrate_jobs import (
    RunOptions,
    bfcl_panel_job,
    experiment_run,
    from_bfcl_job,
    from_tau2_job,
    leaderboard_job,
    model_run,
    panel_run,
)
from callscope.cli.calibrate_legacy import CalibrateGroup
from callscope.cli.common import (
    DEFAULT_MODEL,
    ApiKeyOpt,
    BaseUrlOpt,
    CacheOpt,
    GroundingOpt,
    NoCacheOpt,
    StyleOpt,
    TimeoutOpt,
    comma_list,
    fail,
    handle_errors,
    model_options,
    style_arg,
)
from callscope.models.base import Decoding
from callscope.models.registry import backend_help
from callscope.saag.groundings import DEFAULT_GROUNDING, get_grounding

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


#: the options ``calibrate run`` and ``calibrate panel`` share, declared once (issue 48), in
#: the order their help lists them after ``-m``: name -> (annotation, default)
_RUN_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    ("out", OutOpt, Path("runs/calibrate")),
    ("categories", CategoriesOpt, None),
    ("benchmark", BenchmarkOpt, "bfcl"),
    ("n", NOpt, None),
    ("probe", ProbeOpt, None),
    ("style", StyleOpt, "auto"),
    ("max_steps", MaxStepsOpt, 20),
    ("max_tokens", MaxTokensOpt, 512),
    ("preset_name", ClassifierOpt, "default"),
    ("base_url", BaseUrlOpt, None),
    ("api_key", ApiKeyOpt, None),
    ("timeout", TimeoutOpt, 120.0),
    ("cache", CacheOpt, None),
    ("no_cache", NoCacheOpt, False),
    ("concurrency", ConcurrencyOpt, 1),
    ("quiet", QuietOpt, False),
    ("grounding", GroundingOpt, DEFAULT_GROUNDING),
)


def _run_options(
    out: Path, categories: str | None, benchmark: str, n: int | None, probe: str | None,
    style: str, max_steps: int, max_tokens: int, preset_name: str, base_url: str | None,
    api_key: str | None, timeout: float, cache: Path | None, no_cache: bool, concurrency: int,
    quiet: bool, grounding: str,
) -> RunOptions:  # fmt: skip
    """The :class:`RunOptions` of the shared options (the preset checked, the grounding mode
    recorded in the run's store)."""
    _config(preset_name)
    _record_grounding(out, grounding)
    return RunOptions(
        out=out,
        categories=comma_list(categories) if categories else None,
        n=n,
        benchmark=benchmark,
        probe=probe,
        style=style_arg(style),
        max_steps=max_steps,
        decoding=Decoding(max_tokens=max_tokens),
        preset_name=preset_name,
        quiet=quiet,
        concurrency=concurrency,
        connection=model_options(
            base_url=base_url, api_key=api_key, timeout=timeout, cache=cache, no_cache=no_cache
        ),
    )


def with_run_options(fn: Callable[..., None]) -> Callable[..., None]:
    """A command taking ``fn``'s own options (its parameters but ``options``) followed by the
    shared ones (:data:`_RUN_OPTIONS`), calling ``fn`` with its own and ``options``, the
    :class:`RunOptions` they make, while holding the ``--out`` directory's writer lock
    (:func:`~callscope.runs.run_dir_lock.hold_run_dir`, which the library call it makes
    goes on under): typer reads the signature this sets."""
    hints = get_type_hints(fn, include_extras=True)
    own = [
        p.replace(annotation=hints[p.name])
        for p in inspect.signature(fn).parameters.values()
        if p.name != "options"
    ]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann)
        for name, ann, default in _RUN_OPTIONS
    ]

    @functools.wraps(fn)
    def command(**kwargs: Any) -> None:
        from callscope.runs.run_dir_lock import hold_run_dir  # lazy: only model runs write

        _config(kwargs["preset_name"])  # a bad preset is refused before -o is made
        # one writer per run directory (as `run`): held from the first write to the last
        with hold_run_dir(kwargs["out"]):
            options = _run_options(**{name: kwargs.pop(name) for name, _, _ in _RUN_OPTIONS})
            fn(**kwargs, options=options)

    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in (*own, *shared)]
    command.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    return command


# --------------------------------------------------------------------------- subcommands


@calibrate.command("run")
@handle_errors
@with_run_options
def run_command(
    model: Annotated[str, typer.Option("-m", "--model", help=backend_help())] = DEFAULT_MODEL,
    *,
    options: RunOptions,
) -> None:
    """Run one model on a multi-turn benchmark's cases (optionally under a probe), grade them
    and write GAR beside Acc per category, resumably, into the run directory."""
    model_run(model, options)


@calibrate.command("panel")
@handle_errors
@with_run_options
def panel_command(
    model: Annotated[
        list[str],
        typer.Option("-m", "--model", help=backend_help() + " Repeat -m for each model."),
    ],
    *,
    options: RunOptions,
) -> None:
    """Run several models on the same cases into one run directory, then write their panel:
    per category each model's GAR, Acc and their difference."""
    panel_run(model, options)


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
    experiment_run(path, quiet=quiet)


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
    score files), or the panel of every model the tree holds; a tree of single-turn files
    only runs `calibrate leaderboard`."""
    config = _config(preset_name)
    from callscope.benchmarks.bfcl.results import find_bfcl_files  # lazy: with its pipeline
    from callscope.benchmarks.bfcl.single_results import single_models  # lazy: its pipeline
    from callscope.runs.panel_files import bfcl_models  # lazy: with its pipeline

    if results.exists() and not find_bfcl_files(results) and single_models(results):
        leaderboard_job(  # single-turn answers only: the leaderboard
            results, out, scores=scores, model=bfcl_model, jobs=default_jobs(), checker=True,
            cases=True, grounding=None, quiet=False,
        )  # fmt: skip
        return

    if bfcl_model is None and len(bfcl_models(results)) > 1:
        bfcl_panel_job(results, out, scores, config)
    else:
        from_bfcl_job(results, out, scores, bfcl_model, config)


def default_jobs() -> int:
    """Worker processes of ``calibrate leaderboard``: the CPUs this process may use, at most
    4."""
    import os  # lazy: only here

    try:
        return max(1, min(4, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, min(4, os.cpu_count() or 1))


@calibrate.command("leaderboard")
@handle_errors
def leaderboard_command(
    tree: Annotated[
        Path,
        typer.Argument(
            help="A BFCL single-turn result tree (the 2024 leaderboard's result/ and score/ "
            "folders, or one model's folder): v2, v3 or v4 file names, gzip or plain."
        ),
    ],
    out: ReadOutOpt = Path("runs/leaderboard"),
    scores: Annotated[
        Path | None,
        typer.Option("--scores", help="The score tree. Default: look under TREE."),
    ] = None,
    bfcl_model: Annotated[
        str | None, typer.Option("--bfcl-model", help="Only this model folder.")
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", min=1, help="Worker processes. Default: the CPUs, at most 4."),
    ] = None,
    no_checker: Annotated[
        bool,
        typer.Option(
            "--no-checker", help="Do not run BFCL's installed checker (no agreement table)."
        ),
    ] = False,
    no_cases: Annotated[
        bool, typer.Option("--no-cases", help="Do not write the case browser's pages.")
    ] = False,
    grounding: GroundingOpt = DEFAULT_GROUNDING,
    quiet: QuietOpt = False,
) -> None:
    """Diagnose every answer of a BFCL single-turn leaderboard beside BFCL's own verdicts:
    leaderboard table, stage mix, the two cross tables, agreement, figure, case browser."""
    leaderboard_job(
        tree,
        out,
        scores=scores,
        model=bfcl_model,
        jobs=jobs or default_jobs(),
        checker=not no_checker,
        cases=not no_cases,
        grounding=get_grounding(grounding).name,
        quiet=quiet,
    )


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
        from callscope.runs.experiment import open_model  # lazy: looked up when called

        judge_model = open_model(
            judge,
            model_options(
                base_url=base_url, api_key=api_key, timeout=timeout, cache=cache, no_cache=no_cache
            ),
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
    from_tau2_job(results, out, tasks, judge_model, config, settings)


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
    export_job(run_dir, dest, probe)
