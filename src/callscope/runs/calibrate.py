"""`callscope calibrate`: run a multi-turn benchmark's cases on a model (optionally under a
probe), grade them with the benchmark's grader, and compute GAR beside Acc, resumably, into a
run store.

The benchmark is any :class:`~callscope.benchmarks.protocol.MultiTurnBenchmark` (BFCL
multi-turn by default): cases, tools at a turn, a fresh environment per run, grade, gold class
and due turns come from it and from nothing else.

Backend errors (a :class:`~callscope.errors.ModelError` that ended a conversation: the server
unreachable, 5xx after retries, an undecodable reply) are not model behaviour: such cases are
stored with their error, left out of GAR and Acc (:attr:`CalibrationResult.errored` counts them
by kind; the numbers cover the rest) and run again on resume. After
:data:`~callscope.runs.runner.MAX_CONSECUTIVE_CONNECTION_ERRORS` consecutive cases that could
not reach the backend the run stops early, as ``run`` does
(:attr:`CalibrationRun.aborted`)."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from callscope.benchmarks.protocol import (
    DEFAULT_BENCHMARK,
    MultiTurnBenchmark,
    benchmark_or_default,
)
from callscope.calibration.classify import DEFAULT, ClassifierConfig, preset
from callscope.calibration.diagnostics import (
    Diagnostics,
    DiagnosticsSettings,
    compute_diagnostics,
    to_markdown,
)
from callscope.calibration.paired import (
    ablation_markdown,
    ablation_matrix,
    compare_markdown,
    compare_probe,
    fired_by_case,
)
from callscope.calibration.panel import (
    Panel,
    build_panel,
    capability_lines,
    panel_table,
    turn_panel_table,
)
from callscope.calibration.probes import PROBES, get_probe
from callscope.core.table import Table, pct
from callscope.models.base import ChatModel, Decoding
from callscope.records import CaseRecord
from callscope.runs.conversation import run_conversation
from callscope.runs.runner import (
    MAX_CONSECUTIVE_CONNECTION_ERRORS,
    UNREACHABLE_KINDS,
    effective_concurrency,
    in_parallel,
    resolve_style,
)
from callscope.saag.cascade import diagnose
from callscope.saag.groundings import get_grounding
from callscope.store.run_store import RunStore
from callscope.types import ToolCall

BASELINE = "baseline"


#: the store meta key naming the benchmark a run directory's conversations come from
BENCHMARK_META = "benchmark"


def select_cases(
    categories: Sequence[str], n: int | None, benchmark: MultiTurnBenchmark[Any] | None = None
) -> list[Any]:
    """The first ``n`` cases of each category, categories in the order given and cases in the
    benchmark's order (the same cases for every probe)."""
    bench = benchmark_or_default(benchmark)
    out: list[Any] = []
    for category in categories:
        of_cat = bench.cases([category])
        out.extend(of_cat if n is None else of_cat[:n])
    return out


def _is_model_emission(step: dict[str, Any]) -> bool:
    """Bypass placeholders are inserted by a probe, not said by the model."""
    return not step.get("placeholder", False)


def case_record(
    bench: MultiTurnBenchmark[Any], case: Any, trajectory: dict[str, Any], passed: bool
) -> CaseRecord:
    """The diagnostics' view of one conversation: per turn, the model's emissions."""
    turns: list[list[Any]] = [[] for _ in case.turns]
    all_turns = list(trajectory.get("turns") or [])
    if trajectory.get("partial_turn"):
        all_turns.append(trajectory["partial_turn"])
    for turn in all_turns:
        idx = int(turn["index"])
        if idx < len(turns):
            turns[idx].extend(
                {"content": s.get("text") or "", "tool_calls": s.get("tool_calls")}
                for s in turn.get("steps") or []
                if _is_model_emission(s)
            )
    err = trajectory.get("error")
    return CaseRecord(
        id=case.id,
        category=case.category,
        gold_class=bench.gold_class(case),
        turn_emissions=turns,
        due_turns=bench.due_turns(case),
        passed=passed,
        error=json.dumps(err) if err else None,
    )


#: store meta key: the grounding mode of a calibrate run's SAAG stage mix
GROUNDING_META = "grounding"


def saag_stage_mix(
    bench: MultiTurnBenchmark[Any],
    case: Any,
    trajectory: dict[str, Any],
    grounding: str | None = None,
) -> Counter[str]:
    """Beyond the paper: every parsed call checked by the SAAG cascade against the tools
    available at its turn and the user text so far (stage 0 = passed all three), in the
    ``grounding`` mode; the outputs of earlier tool calls are the grounding context."""
    mix: Counter[str] = Counter()
    user_text: list[str] = []
    observed: list[str] = []
    mode = get_grounding(grounding)
    for turn in trajectory.get("turns") or []:
        idx = int(turn["index"])
        user_text.extend(str(m.get("content") or "") for m in turn.get("user_messages") or [])
        functions = bench.tools_at(case, idx)
        for step in turn.get("steps") or []:
            for call in step.get("calls") or []:
                d = diagnose(
                    ToolCall(call["name"], call.get("arguments") or {}),
                    functions,
                    "\n".join(user_text),
                    grounding=mode,
                    context=observed,
                )
                mix[f"stage{d.stage}"] += 1
            observed.extend(
                str(r.get("output") or "") for r in step.get("results") or [] if r.get("accepted")
            )
    return mix


#: error kinds that are the model's doing, not the backend's: a conversation the model grew
#: past its context window ended there, and counts (a miss for GAR from then on, and the
#: grader's verdict on the state it reached), as BFCL counts a failed inference as a failure
MODEL_LIMIT_KINDS = frozenset({"context_length"})


def backend_error(trajectory: dict[str, Any]) -> dict[str, Any] | None:
    """The backend error that ended a stored conversation (``{"kind", "message", ...}``), or
    ``None`` when it ran to its end or ended on a model limit (:data:`MODEL_LIMIT_KINDS`)."""
    err = trajectory.get("error")
    if not isinstance(err, dict) or err.get("kind") in MODEL_LIMIT_KINDS:
        return None
    return err


@dataclass
class CalibrationResult:
    """GAR / Acc diagnostics of one (model, probe). ``errored``: cases that ended in a backend
    error, by kind, left out of the diagnostics (``error_message``: the last one's message);
    ``aborted``: why the run stopped early, if it did."""

    model: str
    probe: str
    diagnostics: Diagnostics
    stage_mix: dict[str, Counter[str]] = field(default_factory=dict)
    ran: int = 0
    skipped: int = 0
    seconds: float = 0.0
    errored: Counter[str] = field(default_factory=Counter)
    error_message: str | None = None
    aborted: str | None = None

    @property
    def n_errored(self) -> int:
        """Cases left out of GAR and Acc because a backend error ended them."""
        return sum(self.errored.values())

    def errored_note(self) -> str | None:
        """``2 cases ended in a backend error (connection: 2) and are left out: GAR and Acc
        cover the other 6.``; ``None`` when none did."""
        if not self.n_errored:
            return None
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted(self.errored.items()))
        rest = len(self.diagnostics.cases)
        cases, verb = ("case", "is") if self.n_errored == 1 else ("cases", "are")
        return (
            f"{self.n_errored} {cases} ended in a backend error ({kinds}) and {verb} left out: "
            f"GAR and Acc cover the other {rest}."
        )

    def rows(self) -> list[dict[str, Any]]:
        """Diagnostic rows with the SAAG stage mix of tool calls added per category."""
        out = []
        for row in self.diagnostics.rows:
            mix = self.stage_mix.get(row["category"], Counter())
            total = sum(mix.values())
            extra = {
                f"calls_{k}": (mix.get(k, 0) / total if total else None)
                for k in ("stage0", "stage1", "stage2", "stage3")
            }
            out.append({**row, "tool_calls_scored": total, **extra})
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
) -> tuple[int, int]:
    """:func:`run_calibration_cases`, returning only (ran, skipped)."""
    done = run_calibration_cases(
        model,
        store,
        cases,
        benchmark=benchmark,
        style=style,
        max_steps=max_steps,
        decoding=decoding,
        probe=probe,
        show_progress=show_progress,
    )
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
    progress = Progress(
        TextColumn(f"[bold]{model.spec} {probe_name}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        disable=not show_progress,
    )
    events_path = store.run_dir / "events.jsonl"
    summary = CalibrationRun(skipped=len(cases) - len(todo))
    streak = 0
    with progress:
        task = progress.add_task("cases", total=len(cases), completed=len(cases) - len(todo))
        kwargs: dict[str, Any] = {"style": style, "max_steps": max_steps, "decoding": decoding}
        if probe_cfg is not None:
            kwargs["probe"] = probe_cfg

        def converse(case: Any) -> Any:
            # each case on its own fresh environment (BFCL: its own simulator instances)
            return run_conversation(model, case, env=bench.environment(case), **kwargs)

        workers, summary.concurrency_note = effective_concurrency(model, concurrency)
        for case, traj in in_parallel(converse, todo, workers):
            verdict = bench.grade(case, traj)
            tdict = traj.to_dict()
            store.save_conversation(model.spec, probe_name, case.category, tdict, verdict.to_dict())
            events = tdict.get("events") or []
            if events:
                with events_path.open("a", encoding="utf-8") as fh:
                    for ev in events:
                        fh.write(
                            json.dumps({"model": model.spec, "probe": probe_name, **ev}) + "\n"
                        )
            progress.advance(task)
            summary.ran += 1
            err = backend_error(tdict)
            if err is not None:
                summary.errored[str(err.get("kind") or "error")] += 1
            streak = streak + 1 if err is not None and err.get("kind") in UNREACHABLE_KINDS else 0
            if streak >= MAX_CONSECUTIVE_CONNECTION_ERRORS:
                summary.aborted = str((err or {}).get("message") or "backend unreachable")
                break
    return summary


def diagnose_store(
    store: RunStore,
    model: str,
    probe: str = BASELINE,
    cases: Sequence[Any] | None = None,
    *,
    benchmark: MultiTurnBenchmark[Any] | None = None,
    config: ClassifierConfig = DEFAULT,
    settings: DiagnosticsSettings | None = None,
    grounding: str | None = None,
) -> CalibrationResult:
    """GAR/Acc diagnostics (and the SAAG stage mix) of the stored conversations. The stage
    mix runs in ``grounding`` (default: the mode the run recorded, :data:`GROUNDING_META`,
    else the default mode)."""
    grounding = grounding or store.get_meta(GROUNDING_META)
    convs = list(store.conversations(model, probe))
    bench = benchmark_or_default(benchmark)
    by_id = {c.id: c for c in (cases or [])}
    if not by_id:
        cats = sorted({c["category"] for c in convs})
        by_id = {c.id: c for c in bench.cases(cats)} if cats else {}
    records: list[CaseRecord] = []
    mix: dict[str, Counter[str]] = {}
    errored: Counter[str] = Counter()
    message: str | None = None
    for conv in convs:
        case = by_id.get(conv["case_id"])
        if case is None:
            continue
        err = backend_error(conv["trajectory"])
        if err is not None:  # not model behaviour: left out of GAR and Acc
            errored[str(err.get("kind") or "error")] += 1
            message = str(err.get("message") or "") or message
            continue
        records.append(case_record(bench, case, conv["trajectory"], conv["passed"]))
        mix.setdefault(case.category, Counter()).update(
            saag_stage_mix(bench, case, conv["trajectory"], grounding)
        )
    diag = compute_diagnostics(records, config, settings)
    return CalibrationResult(
        model=model,
        probe=probe,
        diagnostics=diag,
        stage_mix=mix,
        errored=errored,
        error_message=message,
    )


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
    stem.with_suffix(".md").write_text(
        (f"{note}\n\n" if note else "")
        + to_markdown(result.rows())
        + "\n"
        + stage_mix_markdown(result.rows()),
        encoding="utf-8",
    )
    return stem.with_suffix(".md")


STAGE_MIX_COLUMNS: tuple[str, ...] = (
    "Category",
    "tool calls",
    "passed SAAG %",
    "stage 1 (registry) %",
    "stage 2 (structure) %",
    "stage 3 (grounding) %",
)


def stage_mix_table(rows: Sequence[dict[str, Any]]) -> Table:
    """Where the model's tool calls fail, per category (SAAG first failing stage: the shares
    ``calls_stage0..3`` of :meth:`CalibrationResult.rows`), as a :class:`Table`."""
    return Table(
        STAGE_MIX_COLUMNS,
        [
            [
                r["category"],
                r["tool_calls_scored"],
                *(pct(r.get(f"calls_stage{k}")) for k in range(4)),
            ]
            for r in rows
        ],
    )


def stage_mix_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """Where the model's tool calls fail, per category (SAAG first failing stage)."""
    return stage_mix_table(rows).to_markdown()


def paired_outcomes(result: CalibrationResult) -> list[tuple[str, str, bool, bool]]:
    """(case_id, category, passed, gar_hit) per case, for the paired probe comparison."""
    return [(c.id, c.category, bool(c.passed), c.gar_case) for c in result.diagnostics.cases]


def probe_key(probe: str) -> tuple[int, int, str]:
    """Sort key of run names: the baseline, the named probes in registry order, then others."""
    if probe == BASELINE:
        return 0, 0, probe
    names = list(PROBES)
    return (1, names.index(probe), probe) if probe in PROBES else (2, 0, probe)


def compare_with_baseline(
    store: RunStore,
    model: str,
    probe: str,
    cases: Sequence[Any] | None = None,
    *,
    baseline: CalibrationResult | None = None,
    benchmark: MultiTurnBenchmark[Any] | None = None,
    suffix: str = "",
) -> tuple[list[dict[str, Any]], str]:
    """Paired comparison of ``probe`` against the baseline run of the same model and cases:
    rows per category (ΔAcc, ΔGAR with Newcombe intervals, flips, fired rate) and Markdown.
    Written to ``probe-<probe><suffix>.md`` in the run directory (a panel's ``suffix`` names
    the model). ``baseline``: the baseline's diagnostics when the caller already has them."""
    base = baseline or diagnose_store(store, model, BASELINE, cases, benchmark=benchmark)
    probed = diagnose_store(store, model, probe, cases, benchmark=benchmark)
    fired = fired_by_case(store.conversations(model, probe))
    rows = compare_probe(paired_outcomes(base), paired_outcomes(probed), fired, probe)
    md = compare_markdown(rows)
    (store.run_dir / f"probe-{probe}{suffix}.md").write_text(md, encoding="utf-8")
    return rows, md


def ablation_with_baseline(
    store: RunStore,
    model: str,
    cases: Sequence[Any] | None = None,
    *,
    benchmark: MultiTurnBenchmark[Any] | None = None,
    suffix: str = "",
) -> tuple[list[dict[str, Any]], str]:
    """The ablation matrix of every probe run of ``model`` in the store (ΔAcc / ΔGAR per
    category against the baseline, fired rate), in :func:`probe_key` order; written to
    ``probe-ablation.md``, with each probe's paired table refreshed in ``probe-<probe>.md``.
    Each probe is paired with the baseline on the cases both ran."""
    base = diagnose_store(store, model, BASELINE, cases, benchmark=benchmark)
    ran = sorted(store.conversation_probes(model) - {BASELINE}, key=probe_key)
    matrix = ablation_matrix(
        {
            p: compare_with_baseline(
                store, model, p, cases, baseline=base, benchmark=benchmark, suffix=suffix
            )[0]
            for p in ran
        }
    )
    md = ablation_markdown(matrix)
    (store.run_dir / f"probe-ablation{suffix}.md").write_text(md, encoding="utf-8")
    return matrix, md


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
    stage-3 mode of the SAAG stage mix, recorded in the store (:data:`GROUNDING_META`).
    """
    out = Path(out)
    config = preset(preset_name)
    store = RunStore(out)
    try:
        store.set_meta("classifier_preset", preset_name)
        if grounding is not None or store.get_meta(GROUNDING_META) is None:
            store.set_meta(GROUNDING_META, get_grounding(grounding).name)
        store.set_meta(BENCHMARK_META, (benchmark.name if benchmark else DEFAULT_BENCHMARK))
        t0 = time.perf_counter()
        runs = run_calibration_cases(
            model,
            store,
            cases,
            style=resolve_style(model, style),
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
        done = ModelCalibration(result=result, path=write_outputs(out, result, per_model=per_model))
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


# --------------------------------------------------------------------------------- panels

#: the store meta key listing a panel's models (JSON list, in row order)
PANEL_META = "panel_models"


@dataclass
class PanelCalibration:
    """Result of :func:`calibrate_panel`: each model's :class:`ModelCalibration` (in row
    order), the :class:`~callscope.calibration.panel.Panel` over them and the panel files
    written (``panel-<probe>.md`` first)."""

    models: list[ModelCalibration]
    panel: Panel
    written: list[Path]

    @property
    def aborted(self) -> dict[str, str]:
        """``{model: why it stopped early}`` for the models whose run stopped early."""
        return {m.result.model: m.result.aborted for m in self.models if m.result.aborted}

    @property
    def n_errored(self) -> int:
        """Cases of every model left out because a backend error ended them."""
        return sum(m.result.n_errored for m in self.models)


def calibrate_panel(
    specs: Sequence[str],
    open_model: Callable[[str], ChatModel],
    out: str | Path,
    cases: Sequence[Any],
    *,
    styles: Mapping[str, str | None] | None = None,
    probe: str | None = None,
    style: str | None = None,
    preset_name: str = "default",
    on_model: Callable[[ModelCalibration], None] | None = None,
    **kwargs: Any,
) -> PanelCalibration:
    """A panel run: :func:`calibrate_model` for each model of ``specs`` in turn, on the same
    ``cases``, into the one store of ``out`` (each model's conversations under its own spec,
    so re-running resumes every model where it stopped), then the panel over them
    (:func:`callscope.calibration.panel.build_panel`) written by :func:`write_panel`.
    ``open_model`` opens a spec (each model is closed before the next opens: two embedded
    models are never loaded at once); ``styles``: a style per spec (else ``style``);
    ``on_model`` is called after each model; other keywords go to :func:`calibrate_model`.
    The panel's models are recorded in the store's meta (:data:`PANEL_META`)."""
    out = Path(out)
    done: list[ModelCalibration] = []
    specs = list(dict.fromkeys(specs))
    store = RunStore(out)
    try:
        store.set_meta(PANEL_META, json.dumps(specs))
    finally:
        store.close()
    for spec in specs:
        model = open_model(spec)
        try:
            one = calibrate_model(
                model,
                out,
                cases,
                probe=probe,
                style=(styles or {}).get(spec, style),
                preset_name=preset_name,
                per_model=len(specs) > 1,
                **kwargs,
            )
        finally:
            close = getattr(model, "close", None)
            if callable(close):
                close()
        done.append(one)
        if on_model is not None:
            on_model(one)
    panel = build_panel({m.result.model: m.result.diagnostics for m in done})
    written = write_panel(out, panel, probe or BASELINE)
    return PanelCalibration(models=done, panel=panel, written=written)


def panel_of_store(
    store: RunStore,
    models: Sequence[str] | None = None,
    probe: str = BASELINE,
    *,
    benchmark: MultiTurnBenchmark[Any] | None = None,
    config: ClassifierConfig = DEFAULT,
) -> Panel:
    """The panel of the conversations stored for ``models`` (default: the store's panel
    models, else every model with a ``probe`` run) under ``probe``."""
    if models is None:
        recorded = store.get_meta(PANEL_META)
        models = json.loads(recorded) if recorded else store_models(store, probe)
    diags = {
        m: diagnose_store(store, m, probe, benchmark=benchmark, config=config).diagnostics
        for m in models
    }
    return build_panel(diags, list(models))


def store_models(store: RunStore, probe: str = BASELINE) -> list[str]:
    """Every model with conversations under ``probe`` in the store, sorted."""
    return sorted({str(c["model"]) for c in store.conversations(None, probe)})


def write_panel(out: str | Path, panel: Panel, probe: str = BASELINE) -> list[Path]:
    """``panel-<probe>.{md,csv,tex,json}`` and ``panel-<probe>-turn.{md,csv,tex}`` under
    ``out``: the case-level and the turn-level panel tables
    (:func:`~callscope.calibration.panel.panel_table`, :func:`turn_panel_table`) and the
    panel's numbers. Returns the paths, the case-level Markdown first."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    stem = f"panel-{probe}"
    notes = capability_lines(panel) + panel.notes
    for table, name in (
        (panel_table(panel, stem), stem),
        (turn_panel_table(panel, f"{stem}-turn"), f"{stem}-turn"),
    ):
        md = table.to_markdown()
        if name == stem and notes:
            md += "\n" + "\n\n".join(notes) + "\n"
        for ext, text in (("md", md), ("csv", table.to_csv()), ("tex", table.to_latex())):
            path = out / f"{name}.{ext}"
            path.write_text(text, encoding="utf-8")
            written.append(path)
    js = out / f"{stem}.json"
    js.write_text(json.dumps(panel.to_dict(), indent=2, default=str), encoding="utf-8")
    written.append(js)
    return written
