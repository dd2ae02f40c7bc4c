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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
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
from callscope.calibration.probes import PROBES, get_probe
from callscope.calibration.stage_table import stage_mix_table
from callscope.models.base import ChatModel, Decoding
from callscope.records import CaseRecord, Trajectory
from callscope.runs.conversation import run_conversation
from callscope.runs.runner import (
    MAX_CONSECUTIVE_CONNECTION_ERRORS,
    UNREACHABLE_KINDS,
    effective_concurrency,
    in_parallel,
    resolve_style,
)
from callscope.saag.groundings import get_grounding
from callscope.saag.stage_mix import CallStages, call_stages, stage_counts
from callscope.store.run_store import RunStore

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


def stored_stages(
    store: RunStore,
    bench: MultiTurnBenchmark[Any],
    case: Any,
    conv: Mapping[str, Any],
    grounding: str | None,
) -> CallStages:
    """The SAAG stage verdicts of a stored conversation (a :meth:`RunStore.conversations`
    row) in ``grounding``: those stored with it when they are of that mode and the running
    cascade version, else computed now (:func:`~callscope.saag.stage_mix.call_stages`) and
    stored, so that the next read finds them."""
    stages: CallStages | None = conv.get("stages")
    if stages is not None and stages.is_current(grounding):
        return stages
    traj = Trajectory.from_dict(conv["trajectory"])
    stages = call_stages(traj, partial(bench.tools_at, case), grounding)
    store.save_call_stages(str(conv["model"]), str(conv["probe"]), str(conv["case_id"]), stages)
    return stages


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
    mix is that of ``grounding`` (default: the mode the run recorded, :data:`GROUNDING_META`,
    else the default mode), read from the verdicts stored with each conversation; only a
    conversation stored without them (a store from before they were stored, or verdicts of
    another mode or cascade version) has them computed here, and stored
    (:func:`stored_stages`)."""
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
        stages = stored_stages(store, bench, case, conv, grounding)
        mix.setdefault(case.category, Counter()).update(stage_counts(stages.calls))
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
        + stage_mix_table(result.rows()).to_markdown(),
        encoding="utf-8",
    )
    return stem.with_suffix(".md")


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
