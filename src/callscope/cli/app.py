"""The ``callscope`` command line. Each command is a thin wrapper over a library call."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from callscope.saag.score import METRICS, ScoreSummary, score_row, summarize
from callscope.types import Case

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Where and why LLM tool calls fail, and how to repair them.",
)
console = Console(stderr=True)


@contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C ends a long run cleanly: everything finished is already stored."""
    try:
        yield
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: finished cases are saved; re-run the same command to resume.[/yellow]")
        raise typer.Exit(130) from None


@app.callback()
def _main() -> None:
    """callscope: diagnose, repair and calibrate LLM tool calls."""


def _read_rows(path: Path) -> list[dict]:
    """JSONL rows; a bad line becomes ``{"_line": n, "_error": ...}`` so it can be reported."""
    from callscope.core.jsonl import read_jsonl

    return [
        row if isinstance(row, dict) else {"_line": n, "_error": f"line {n}: {row}"}
        for n, row in read_jsonl(path)
    ]


def print_score_summary(s: ScoreSummary) -> None:
    t = Table(title=f"callscope score: {s.rows} rows, {s.errors} malformed")
    t.add_column("first failing stage")
    t.add_column("rows", justify="right")
    labels = {0: "passed all", 1: "1 registry", 2: "2 structure", 3: "3 grounding"}
    for stage in (0, 1, 2, 3):
        t.add_row(labels[stage], str(s.stages.get(stage, 0)))
    console.print(t)
    m = Table(title="metric means (over rows where each is defined)")
    m.add_column("metric")
    m.add_column("mean", justify="right")
    m.add_column("n", justify="right")
    for key in (*METRICS, "name_match", "arg_precision", "arg_recall", "arg_f1", "solved"):
        if s.counts.get(key):
            m.add_row(key.upper() if key in METRICS else key, f"{s.means[key]:.3f}", str(s.counts[key]))
    console.print(m)


@app.command()
def score(
    input: Annotated[Path, typer.Argument(help="JSONL rows {id, query, functions, output, gold?}")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="write scored rows here (default: stdout)")] = None,
) -> None:
    """Score model outputs with the SAAG cascade (and extrinsic metrics when gold is given)."""
    rows = _read_rows(input)
    out_rows = [
        {"id": r.get("_line"), "error": r["_error"]} if "_error" in r else score_row(r) for r in rows
    ]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out_rows)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    summary = summarize(out_rows)
    print_score_summary(summary)
    for r in out_rows:
        if "error" in r:
            console.print(f"[red]row {r['id']}: {r['error']}[/red]")
    raise typer.Exit(code=1 if summary.errors else 0)


def load_cases(path: Path) -> tuple[list[Case], list[str]]:
    """Cases from a JSONL file, and a message for each malformed row (which is skipped)."""
    cases: list[Case] = []
    problems: list[str] = []
    seen: set[str] = set()
    for n, row in enumerate(_read_rows(path), 1):
        if "_error" in row:
            problems.append(row["_error"])
            continue
        try:
            case = Case.from_dict(row)
        except ValueError as exc:
            problems.append(f"row {n}: {exc}")
            continue
        if case.id in seen:
            problems.append(f"row {n}: duplicate id {case.id!r}")
            continue
        seen.add(case.id)
        cases.append(case)
    return cases, problems


def print_run_summary(summary) -> None:
    t = Table(title=f"{summary.model}: {summary.ran} ran, {summary.skipped} already done")
    for col in ("mode", "cases", "solve rate", "mean attempts"):
        t.add_column(col, justify="right" if col != "mode" else "left")
    for mode in summary.n:
        t.add_row(mode, str(summary.n[mode]), f"{summary.solve_rate[mode]:.3f}", f"{summary.mean_attempts[mode]:.2f}")
    console.print(t)
    if summary.errors:
        console.print("errors by kind: " + ", ".join(f"{k}={v}" for k, v in summary.errors.items()))
    if summary.aborted:
        console.print(f"[red]stopped early: {summary.aborted}. Re-run the same command to resume.[/red]")


DEFAULT_MODEL = "local:qwen2.5-coder-0.5b"
DEMO_N = 3
DEMO_MAX_ATTEMPTS = 3
ModelOpt = Annotated[str, typer.Option("-m", "--model", help="local:qwen2.5-coder-0.5b | local:qwen2.5-coder-1.5b | gguf:PATH | ollama:NAME | openai:NAME | replay:FILE")]
BaseUrlOpt = Annotated[str | None, typer.Option("--base-url", help="server address (default: OLLAMA_HOST / OPENAI_BASE_URL)")]
ApiKeyOpt = Annotated[str | None, typer.Option("--api-key", envvar="OPENAI_API_KEY", help="API key for openai: backends", show_default=False)]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="seconds per HTTP request")]
CacheOpt = Annotated[Path | None, typer.Option("--cache", help="response cache file (default ~/.cache/callscope/responses.sqlite)")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="always ask the model")]


def _modes(text: str) -> list[str]:
    return [m.strip() for m in text.split(",") if m.strip()]


@app.command()
def run(
    cases_file: Annotated[Path, typer.Argument(help="JSONL cases {id, query, functions, gold?}")],
    out: Annotated[Path, typer.Option("-o", "--out", help="run directory (re-run to resume)")] = Path("runs/run"),
    model: ModelOpt = DEFAULT_MODEL,
    modes: Annotated[str, typer.Option("--modes", help="comma list of direct,binary,structured")] = "direct,binary,structured",
    max_attempts: Annotated[int, typer.Option("--max-attempts", min=1)] = 15,
    style: Annotated[str, typer.Option("--style", help="auto | native | prompt")] = "auto",
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="parallel requests (HTTP backends)")] = 1,
    max_tokens: Annotated[int, typer.Option("--max-tokens")] = 512,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    timeout: TimeoutOpt = 120.0,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="no progress bar")] = False,
) -> None:
    """Run the SAAG correction loop for one model over a cases file (resumable)."""
    from callscope.models.base import Decoding
    from callscope.runs.experiment import open_model
    from callscope.runs.runner import run_cases
    from callscope.store.run_store import RunStore

    cases, problems = load_cases(cases_file)
    for p in problems:
        console.print(f"[yellow]skipped malformed case: {p}[/yellow]")
    m = open_model(model, base_url=base_url, api_key=api_key, timeout=timeout, cache=cache, use_cache=not no_cache)
    store = RunStore(out)
    store.set_meta("malformed_cases", problems)
    with _interruptible(), closing(m):
        summary = run_cases(
            m, cases, store, modes=_modes(modes), max_attempts=max_attempts,
            style=None if style == "auto" else style, concurrency=concurrency,
            decoding=Decoding(temperature=0.0, seed=seed, max_tokens=max_tokens),
            show_progress=not quiet,
        )
    print_run_summary(summary)
    console.print(f"run directory: {out} (final rows: {out / 'final.jsonl'})")
    raise typer.Exit(code=2 if summary.aborted else 0)


bench_app = typer.Typer(no_args_is_help=True, help="Build benchmarks (cases files for `run`).")
app.add_typer(bench_app, name="bench")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


@bench_app.command("build")
def bench_build(
    source: Annotated[str, typer.Option("--source", help="bfcl | glaive:PATH | glaive:hf:glaiveai/glaive-function-calling-v2")] = "bfcl",
    scales: Annotated[str, typer.Option("--scales", help="registry sizes")] = "5,10,15",
    n: Annotated[int, typer.Option("--n", help="number of queries (each appears once per scale)")] = 300,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    distractors: Annotated[str, typer.Option("--distractors", help="uniform (paper) | similar (confusable)")] = "uniform",
    gold_first: Annotated[bool, typer.Option("--gold-first", help="put the gold function first (paper Fig. 5)")] = False,
    allow_download: Annotated[bool, typer.Option("--allow-download", help="allow fetching hf: sources")] = False,
    output: Annotated[Path, typer.Option("-o", "--output")] = Path("cases.jsonl"),
) -> None:
    """Build a registry-scale benchmark: each query with S = 5/10/15 nested registries."""
    from callscope.benchmarks.registry_builder import benchmark_to_jsonl
    from callscope.benchmarks.sources import build_benchmark

    try:
        built = build_benchmark(
            source, scales=_ints(scales), n=n, seed=seed, distractors=distractors,
            gold_position="first" if gold_first else "random", allow_download=allow_download,
        )
    except (ValueError, FileNotFoundError, ImportError) as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None
    count = benchmark_to_jsonl(built.cases, output)
    console.print(f"{source}: {built.source_cases} usable single-call queries; wrote {count} cases ({n} queries × scales {scales}) to {output}")
    for reason, k in sorted(built.dropped.items()):
        console.print(f"  dropped {reason}: {k}")


def _run_experiment_and_report(exp, quiet: bool) -> None:
    from callscope.runs.experiment import run_experiment

    with _interruptible():
        summaries = run_experiment(exp, show_progress=not quiet)
    for s in summaries:
        print_run_summary(s)
    _report(exp.output)
    if any(s.aborted for s in summaries):
        raise typer.Exit(2)


def _report(run_dir: Path) -> None:
    from callscope.report.html import build_report

    path = build_report(run_dir)
    console.print(f"report: {path}")


@app.command()
def experiment(
    config: Annotated[Path, typer.Argument(help="experiment TOML (models, benchmark, scales, modes...)")],
    quiet: Annotated[bool, typer.Option("--quiet")] = False,
) -> None:
    """Run models × scales × modes from one file, then write tables, figures and report.html."""
    from callscope.runs.experiment import Experiment

    try:
        exp = Experiment.load(config)
    except (OSError, ValueError) as exc:
        console.print(f"[red]{config}: {exc}[/red]")
        raise typer.Exit(1) from None
    _run_experiment_and_report(exp, quiet)


@app.command()
def demo(
    out: Annotated[Path, typer.Option("-o", "--out")] = Path("runs/demo"),
    model: ModelOpt = DEFAULT_MODEL,
    n: Annotated[int, typer.Option("--n", help="BFCL queries (each at every scale)")] = DEMO_N,
    max_attempts: Annotated[int, typer.Option("--max-attempts")] = DEMO_MAX_ATTEMPTS,
    quiet: Annotated[bool, typer.Option("--quiet")] = False,
) -> None:
    """The quick start's main job: the embedded model on a small BFCL-based sample, all three
    feedback modes at S = 5, 10, 15, then the report."""
    from callscope.runs.experiment import Experiment

    exp = Experiment(output=out, models=[model], n=n, max_attempts=max_attempts, max_tokens=256)
    _run_experiment_and_report(exp, quiet)


@app.command()
def report(run_dir: Annotated[Path, typer.Argument(help="a run or experiment directory")]) -> None:
    """Rebuild tables, figures and report.html from a run store (no model needed)."""
    if not (run_dir / "store.sqlite").exists():
        console.print(f"[red]{run_dir} holds no store.sqlite: not a callscope run directory[/red]")
        raise typer.Exit(1)
    _report(run_dir)


@app.command()
def compare(
    run_a: Annotated[Path, typer.Argument()],
    run_b: Annotated[Path, typer.Argument()],
) -> None:
    """Headline metrics of two runs side by side, with their differences and intervals."""
    from callscope.report.compare import compare_runs, print_comparison

    print_comparison(compare_runs(run_a, run_b), Console())


@app.command()
def classify(
    input: Annotated[Path, typer.Argument(help="JSONL rows {id, emission}")],
    output: Annotated[Path, typer.Option("-o", "--output")] = Path("classes.jsonl"),
    preset_name: Annotated[str, typer.Option("--preset", help="default | ask_over_tool_call")] = "default",
) -> None:
    """Classify emissions as TOOL_CALL / ASK / REFUSE / CONFIRM / OTHER."""
    from callscope.calibration.classify import classify_jsonl, preset

    summary = classify_jsonl(input, output, preset(preset_name))
    t = Table(title=f"{summary['rows']} emissions ({summary['errors']} malformed), preset {preset_name}")
    t.add_column("class")
    t.add_column("count", justify="right")
    for cls, k in summary["counts"].items():
        t.add_row(cls, str(k))
    console.print(t)
    console.print(f"wrote {output}")
    raise typer.Exit(1 if summary["errors"] else 0)


@app.command()
def calibrate(
    model: ModelOpt = DEFAULT_MODEL,
    out: Annotated[Path, typer.Option("-o", "--out", help="run directory (re-run to resume)")] = Path("runs/calibrate"),
    categories: Annotated[str, typer.Option("--categories", help="base,long_context,miss_param,miss_func")] = "base,long_context,miss_param,miss_func",
    n: Annotated[int | None, typer.Option("--n", help="cases per category (first N in BFCL order; all if omitted)")] = None,
    probe: Annotated[str | None, typer.Option("--probe", help="sri | sri-no-history | sri-no-state | sri-no-reconciliation | sri-gate | sri-gate-miss-param | cri-retry | cri-bypass | cri-retry-saag | cri-bypass-saag")] = None,
    style: Annotated[str, typer.Option("--style", help="auto | native | prompt")] = "auto",
    max_steps: Annotated[int, typer.Option("--max-steps")] = 20,
    max_tokens: Annotated[int, typer.Option("--max-tokens")] = 512,
    preset_name: Annotated[str, typer.Option("--preset", help="classifier preset: default | ask_over_tool_call")] = "default",
    from_bfcl: Annotated[Path | None, typer.Option("--from-bfcl", help="BFCL result tree from `bfcl generate`")] = None,
    scores: Annotated[Path | None, typer.Option("--scores", help="BFCL score tree from `bfcl evaluate`")] = None,
    bfcl_model: Annotated[str | None, typer.Option("--bfcl-model", help="model folder inside the BFCL trees")] = None,
    from_tau2: Annotated[Path | None, typer.Option("--from-tau2", help="a tau2-bench results.json or run directory")] = None,
    tasks: Annotated[Path | None, typer.Option("--tasks", help="tau2 tasks file (when results lack tasks)")] = None,
    judge: Annotated[str | None, typer.Option("--judge", help="tau2 CONFIRM: also ask this model (any backend) and report agreement")] = None,
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    timeout: TimeoutOpt = 120.0,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet")] = False,
) -> None:
    """Action-class diagnostic (GAR beside Acc) on BFCL multi-turn: run a model, or read
    BFCL's or tau2-bench's own results."""
    import time

    from callscope.calibration.classify import preset
    from callscope.calibration.diagnostics import rich_table

    config = preset(preset_name)
    if from_tau2 is not None:
        from callscope.calibration.tau2 import Tau2Config, Tau2FormatError, tau2_diagnostics

        judge_model = None
        if judge:
            from callscope.runs.experiment import open_model

            judge_model = open_model(judge, base_url=base_url, api_key=api_key, timeout=timeout, cache=cache, use_cache=not no_cache)
        try:
            result = tau2_diagnostics(from_tau2, tasks, judge=judge_model, config=Tau2Config(classifier=config))
        except (Tau2FormatError, FileNotFoundError) as exc:
            console.print(f"[red]{exc}[/red]")
            raise typer.Exit(1) from None
        Console().print(result.rich_table())
        Console().print(result.rich_domain_table())
        out.mkdir(parents=True, exist_ok=True)
        (out / "tau2-diagnostics.json").write_text(json.dumps(result.to_dict(include_details=True), indent=2, default=str))
        (out / "tau2-diagnostics.md").write_text(result.to_markdown())
        from callscope.calibration.tau2 import domain_markdown, gar_markdown
        from callscope.report.html import build_diagnostic_page

        page = build_diagnostic_page(out, f"τ²-bench action-class diagnostic: {from_tau2.name}", [
            ("GAR and Acc per domain and gold class", "τ² GAR rules: REFUSE = no write tool called; ASK = an ask was detected; TOOL_CALL = no failed action check. Acc = reward 1. Wilson 95% intervals.", gar_markdown(result.rows)),
            ("Per domain: SAAG stage mix of tool calls and CONFIRM", "Every agent tool call through the SAAG cascade; CONFIRM: did the user confirm before each write.", domain_markdown(result.domain_rows)),
        ])  # fmt: skip
        console.print(f"wrote {out / 'tau2-diagnostics.md'}, .json and {page}")
        return
    if from_bfcl is not None:
        from callscope.benchmarks.bfcl.results import load_bfcl_run
        from callscope.calibration.diagnostics import compute_diagnostics, to_markdown

        run = load_bfcl_run(from_bfcl, scores, model=bfcl_model)
        diag = compute_diagnostics(run.records, config, header_acc=run.header_acc())
        Console().print(rich_table(diag.rows, title=f"BFCL results of {run.model}"))
        for p in run.problems:
            console.print(f"[yellow]{p}[/yellow]")
        out.mkdir(parents=True, exist_ok=True)
        (out / "calibration-from-bfcl.md").write_text(to_markdown(diag.rows))
        (out / "calibration-from-bfcl.json").write_text(json.dumps(diag.to_dict(), indent=2, default=str))
        from callscope.report.html import build_diagnostic_page

        page = build_diagnostic_page(out, f"Action-class diagnostic of BFCL results: {run.model}", [
            ("GAR and Acc per category", "Emissions read from BFCL's result files; Acc from its score files. Wilson 95% intervals; Acc > GAR flags grader masking.", to_markdown(diag.rows)),
        ], notes=run.problems)  # fmt: skip
        console.print(f"wrote {out / 'calibration-from-bfcl.md'}, .json and {page}")
        return
    from callscope.models.base import Decoding
    from callscope.runs.calibrate import (
        BASELINE,
        diagnose_store,
        run_calibration,
        select_cases,
        write_outputs,
    )  # fmt: skip
    from callscope.runs.experiment import open_model
    from callscope.runs.runner import resolve_style
    from callscope.store.run_store import RunStore

    cases = select_cases(_modes(categories), n)
    m = open_model(model, base_url=base_url, api_key=api_key, timeout=timeout, cache=cache, use_cache=not no_cache)
    store = RunStore(out)
    store.set_meta("classifier_preset", preset_name)
    t0 = time.perf_counter()
    with _interruptible(), closing(m):
        ran, skipped = run_calibration(
            m, store, cases, style=resolve_style(m, None if style == "auto" else style),
            max_steps=max_steps, decoding=Decoding(max_tokens=max_tokens), probe=probe,
            show_progress=not quiet,
        )
    result = diagnose_store(store, m.spec, probe or BASELINE, cases, config=config)
    Console().print(rich_table(result.diagnostics.rows, title=f"{m.spec} ({probe or BASELINE}): {ran} ran, {skipped} already done, {time.perf_counter() - t0:.0f} s"))
    path = write_outputs(out, result)
    console.print(f"wrote {path}")
    if probe and probe != BASELINE:
        if store.conversations_done(m.spec, BASELINE) >= {c.id for c in cases}:
            from callscope.runs.calibrate import ablation_with_baseline

            # every probe against the baseline, over every case both runs hold in this
            # directory (not only this command's cases); writes probe-<P>.md for each
            _, md = ablation_with_baseline(store, m.spec)
            paired = (out / f"probe-{probe}.md").read_text(encoding="utf-8")
            console.print(f"paired comparison with the baseline (probe-{probe}.md):\n{paired}")
            console.print(f"ablation matrix of the probes run so far (probe-ablation.md):\n{md}")
        else:
            console.print(f"[yellow]no complete baseline for these cases in {out}: run the same command without --probe for the paired comparison[/yellow]")
    _report(out)


