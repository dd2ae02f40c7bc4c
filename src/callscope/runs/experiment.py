"""Experiments: models × registry scales × feedback modes from one TOML file, into one store.

Example ``experiment.toml``::

    output = "runs/my-experiment"
    models = ["local:qwen2.5-coder-0.5b", "ollama:llama3.2:3b"]
    modes = ["direct", "binary", "structured"]
    max_attempts = 15
    grounding = "registry"   # or "lexical": the SAAG paper's stage 3

    [benchmark]
    source = "bfcl"          # or "glaive:/data/glaive-function-calling-v2.json", or:
    # cases = "cases.jsonl"  # a ready cases file (e.g. from `callscope bench build`)
    scales = [5, 10, 15]
    n = 300
    seed = 0
    distractors = "uniform"  # or "similar"

    [run]
    style = "auto"           # native | prompt | auto
    concurrency = 1
    max_tokens = 512
    base_url = ""            # for ollama:/openai: models
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.core.jsonl import read_bounded, read_jsonl
from callscope.core.paths import responses_path
from callscope.models.base import ChatModel, Decoding, ModelOptions
from callscope.models.cache import CachedModel
from callscope.models.registry import load_model
from callscope.runs.runner import RunSummary, run_cases
from callscope.saag.groundings import DEFAULT_GROUNDING, get_grounding
from callscope.store.run_store import RunStore
from callscope.types import MODES, Case

#: the keys an experiment file may hold, per table (``""`` = the top level)
EXPERIMENT_KEYS: dict[str, tuple[str, ...]] = {
    "": ("output", "models", "modes", "max_attempts", "grounding", "benchmark", "run"),
    "benchmark": (
        "source",
        "cases",
        "scales",
        "n",
        "seed",
        "distractors",
        "gold_position",
        "allow_download",
    ),
    "run": ("style", "concurrency", "max_tokens", "base_url", "timeout", "cache", "use_cache"),
}


def unknown_key_message(key: str, table: str, valid: Iterable[str]) -> str:
    """``unknown key 'soruce' in [benchmark] (did you mean 'source'?); valid keys: ...``: the
    nearest valid key by :func:`difflib.get_close_matches` (ratio >= 0.6), when there is one."""
    valid = sorted(valid)
    where = f"in [{table}]" if table else "at the top level"
    near = difflib.get_close_matches(key, valid, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return f"unknown key {key!r} {where}{hint}; valid keys: {', '.join(valid)}"


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's contents; ``ValueError`` naming the syntax error when it is not TOML,
    and when its values nest deeper than the parser can read (``tomllib`` recurses: a file
    of 100,000 ``[`` was a ``RecursionError`` traceback, issue 47 point 13)."""
    text = read_bounded(path).decode("utf-8")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML: {exc}") from exc
    except RecursionError:
        raise ValueError(f"{path}: values nested too deeply to read") from None


def check_keys(d: Mapping[str, Any], keys: Mapping[str, Iterable[str]] = EXPERIMENT_KEYS) -> None:
    """``ValueError`` on the first unknown key at any level of an experiment file (sorted,
    top level first), naming the key and the nearest valid one; also when a table of
    ``keys`` (``[benchmark]``, ``[run]``) is not a table. ``keys``: the valid keys per table
    (``""`` = the top level; default: the SAAG experiment's)."""
    for key in sorted(d):
        if key not in keys[""]:
            raise ValueError(unknown_key_message(key, "", keys[""]))
    for table in (t for t in keys if t):
        sub = d.get(table, {})
        if not isinstance(sub, Mapping):
            raise ValueError(f"{table!r} must be a table ([{table}]), not {type(sub).__name__}")
        for key in sorted(sub):
            if key not in keys[table]:
                raise ValueError(unknown_key_message(key, table, keys[table]))


@dataclass
class Experiment:
    output: Path
    models: list[str]
    modes: list[str] = field(default_factory=lambda: list(MODES))
    max_attempts: int = 15
    grounding: str = DEFAULT_GROUNDING
    source: str | None = "bfcl"
    cases_file: Path | None = None
    scales: list[int] = field(default_factory=lambda: [5, 10, 15])
    n: int | None = 300
    seed: int = 0
    distractors: str = "uniform"
    gold_position: str = "random"
    allow_download: bool = False
    style: str | None = None
    concurrency: int = 1
    max_tokens: int = 512
    base_url: str | None = None
    timeout: float = 120.0
    cache: Path | None = None
    use_cache: bool = True

    @classmethod
    def from_dict(cls, d: dict[str, Any], base: Path = Path(".")) -> Experiment:
        """An experiment from a parsed TOML file; ``ValueError`` on an unknown key at any
        level (:func:`check_keys`) or no models."""
        check_keys(d)
        if not d.get("models"):
            raise ValueError("the experiment names no models (models = [...])")
        bench = d.get("benchmark", {})
        run = d.get("run", {})
        cases = bench.get("cases")
        style = run.get("style", "auto")
        return cls(
            output=base / d.get("output", "runs/experiment"),
            models=list(d["models"]),
            modes=list(d.get("modes", MODES)),
            max_attempts=int(d.get("max_attempts", 15)),
            grounding=get_grounding(d.get("grounding", DEFAULT_GROUNDING)).name,
            source=None if cases else bench.get("source", "bfcl"),
            cases_file=base / cases if cases else None,
            scales=[int(s) for s in bench.get("scales", [5, 10, 15])],
            n=bench.get("n", 300),
            seed=int(bench.get("seed", 0)),
            distractors=bench.get("distractors", "uniform"),
            gold_position=bench.get("gold_position", "random"),
            allow_download=bool(bench.get("allow_download", False)),
            style=None if style == "auto" else style,
            concurrency=int(run.get("concurrency", 1)),
            max_tokens=int(run.get("max_tokens", 512)),
            base_url=run.get("base_url") or None,
            timeout=float(run.get("timeout", 120)),
            cache=Path(run["cache"]) if run.get("cache") else None,
            use_cache=bool(run.get("use_cache", True)),
        )

    @classmethod
    def load(cls, path: str | Path) -> Experiment:
        """Read an experiment TOML file (``ValueError`` on TOML syntax errors too)."""
        path = Path(path)
        return cls.from_dict(read_toml(path), base=path.parent)


def open_model(spec: str, options: ModelOptions | None = None) -> ChatModel:
    """The one opener of a model by its spec: load the backend with the connection of
    ``options`` (:class:`~callscope.models.base.ModelOptions`, default its defaults) and wrap
    it in the response cache unless ``use_cache`` is off (never for replay, which is a
    cache). Every command that opens a model (``run``, ``experiment``, ``calibrate``,
    ``audit --judge``) comes here."""
    opts = options or ModelOptions()
    model = load_model(spec, base_url=opts.base_url, api_key=opts.api_key, timeout=opts.timeout)
    if not opts.use_cache or spec.startswith("replay:"):
        return model
    return CachedModel(model, opts.cache or responses_path())


def experiment_cases(exp: Experiment) -> list[Case]:
    """The benchmark of the experiment, built once and kept as ``cases.jsonl`` in the output
    directory so a resumed experiment sees exactly the same cases."""
    saved = exp.output / "cases.jsonl"
    path = exp.cases_file or (saved if saved.exists() else None)
    if path is None:
        assert exp.source is not None
        # lazy: the builders pull in numpy; `score` and `run` import this module
        from callscope.benchmarks.registry_builder import benchmark_to_jsonl
        from callscope.benchmarks.sources import build_benchmark  # lazy: numpy, httpx (glaive)

        built = build_benchmark(
            exp.source,
            scales=exp.scales,
            n=exp.n,
            seed=exp.seed,
            distractors=exp.distractors,
            gold_position=exp.gold_position,
            allow_download=exp.allow_download,
        )
        exp.output.mkdir(parents=True, exist_ok=True)
        benchmark_to_jsonl(built.cases, saved)
        return built.cases
    cases: list[Case] = []
    for n, row in read_jsonl(path):
        if isinstance(row, Exception):
            raise ValueError(f"{path}:{n}: {row}")
        cases.append(Case.from_dict(row))
    return cases


def run_experiment(exp: Experiment, *, show_progress: bool = True) -> list[RunSummary]:
    """Every model of ``exp`` over its cases and modes into its output's one store, holding
    the directory's writer lock throughout (a second writer, ``run`` or ``experiment``, is
    refused with ``RunDirBusy`` before the benchmark is built or a request is sent)."""
    store = RunStore(exp.output)
    summaries: list[RunSummary] = []
    try:
        store.lock_writer()  # one writer per run directory, as `run` takes it
        cases = experiment_cases(exp)
        for spec in exp.models:
            model = open_model(
                spec,
                ModelOptions(
                    base_url=exp.base_url,
                    timeout=exp.timeout,
                    cache=exp.cache,
                    use_cache=exp.use_cache,
                ),
            )
            try:
                summaries.append(
                    run_cases(
                        model,
                        cases,
                        store,
                        modes=exp.modes,  # type: ignore[arg-type]
                        max_attempts=exp.max_attempts,
                        style=exp.style,
                        decoding=Decoding(max_tokens=exp.max_tokens, seed=exp.seed),
                        concurrency=exp.concurrency,
                        show_progress=show_progress,
                        grounding=exp.grounding,
                    )
                )
            finally:
                model.close()
    finally:
        store.close()
    return summaries
