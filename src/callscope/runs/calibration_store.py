"""What a calibrate run store holds, diagnosed: the conversations of one (model, probe) as
:class:`~callscope.records.CaseRecord`\\ s, their GAR / Acc diagnostics and SAAG stage mix
(:func:`diagnose_store`, :class:`CalibrationResult`), and the paired comparison of a probe
run with the baseline run of the same model (:func:`compare_with_baseline`,
:func:`ablation_with_baseline`, which write ``probe-<probe>.md`` and ``probe-ablation.md``).

The stage mix is read from the cascade verdicts stored with each conversation when it was
recorded (:mod:`callscope.saag.stage_mix`); only a conversation stored without current ones
(a store from before they were stored, another grounding mode or cascade version) has them
computed, once, and stored (:func:`stored_stages`). Conversations that ended in a backend error
(:func:`backend_error`) are left out of GAR and Acc and counted apart.

The store's meta keys a calibrate run writes are named here: :data:`BENCHMARK_META`,
:data:`GROUNDING_META` (and :data:`~callscope.runs.calibrate_panel.PANEL_META`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from callscope.benchmarks.protocol import (
    MultiTurnBenchmark,
    benchmark_or_default,
)
from callscope.calibration.classify import DEFAULT, ClassifierConfig
from callscope.calibration.diagnostics import (
    Diagnostics,
    DiagnosticsSettings,
    compute_diagnostics,
)
from callscope.calibration.paired import (
    ablation_matrix,
    ablation_table,
    compare_probe,
    compare_table,
    fired_by_case,
)
from callscope.calibration.probes import PROBES
from callscope.core.table_formats import render_document, render_table, write_document, write_table
from callscope.records import CaseRecord, Trajectory
from callscope.saag.stage_mix import CALL_MIX_KEYS, CallStages, call_stages, stage_counts
from callscope.store.run_store import RunStore

BASELINE = "baseline"


#: the store meta key naming the benchmark a run directory's conversations come from
BENCHMARK_META = "benchmark"


def case_record(
    bench: MultiTurnBenchmark[Any], case: Any, trajectory: Trajectory, passed: bool
) -> CaseRecord:
    """The diagnostics' view of one conversation: per turn of ``case``, the model's emissions
    (:meth:`~callscope.records.Trajectory.model_emissions`: a probe's placeholders left out,
    the partial turn included) as ``{"content", "tool_calls"}``."""
    turns: list[list[Any]] = [[] for _ in case.turns]
    for index, _, step in trajectory.model_emissions():
        if index < len(turns):
            turns[index].append({"content": step.text or "", "tool_calls": step.tool_calls})
    err = trajectory.error
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
    trajectory: Trajectory,
    grounding: str | None,
) -> CallStages:
    """The SAAG stage verdicts of a stored conversation (a :meth:`RunStore.conversations`
    row, whose trajectory is ``trajectory``) in ``grounding``: those stored with it when they
    are of that mode and the running cascade version, else computed now
    (:func:`~callscope.saag.stage_mix.call_stages`) and stored, so that the next read finds
    them."""
    stages: CallStages | None = conv.get("stages")
    if stages is not None and stages.is_current(grounding):
        return stages
    stages = call_stages(trajectory, partial(bench.tools_at, case), grounding)
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
                f"calls_{k}": (mix.get(k, 0) / total if total else None) for k in CALL_MIX_KEYS
            }
            out.append({**row, "tool_calls_scored": total, **extra})
        return out


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
        traj = Trajectory.from_dict(conv["trajectory"])
        records.append(case_record(bench, case, traj, conv["passed"]))
        stages = stored_stages(store, bench, case, conv, traj, grounding)
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
    table = compare_table(rows)
    write_table(table, store.run_dir / f"probe-{probe}{suffix}.md")
    return rows, render_table(table, "markdown")


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
    parts = [ablation_table(matrix)] if matrix else []  # an empty matrix: an empty file
    path = write_document(parts, store.run_dir / f"probe-ablation{suffix}.md")
    return matrix, render_document(parts, path.suffix)
