"""Report data for multi-turn calibration runs (the action-class diagnostic): pure functions
from a run store's conversations to the JSON the report's conversation browser renders.

What a user relies on:

* **Diagnostic rows** per (model, probe) come from
  :func:`callscope.runs.calibration_store.diagnose_store` (GAR, Acc, intervals, flags, SAAG stage
  mix) and are tabulated by :func:`callscope.calibration.diagnostics.diagnostics_table` and
  :func:`callscope.calibration.stage_table.stage_mix_table`; nothing is recomputed here: the
  stage mix is read from the cascade verdicts stored with each conversation when it was
  recorded (:mod:`callscope.saag.stage_mix`), the cascade is not run.
* **Paired comparison**: for every model with a ``baseline`` run and a probe run,
  :func:`callscope.calibration.paired.compare_probe` on ``(case id, category, passed,
  gold class emitted)`` per case (the last taken from the diagnostics' per-case verdict), with
  "fired" read from the probe run's events; per model, the ablation matrix of its probes
  (:func:`callscope.calibration.paired.ablation_matrix`).
* **Per conversation**: category, gold class, due turns, the grader's verdict (passed, reason,
  failed turn), whether the gold class was emitted (case-level GAR hit, from the diagnostics),
  and per turn: the user messages, the tools re-injected at that turn (miss_func), the
  grader's status, the probe events of that turn, and each step: emission text, native tool
  calls, parsed calls, its action class (:func:`callscope.calibration.classify.classify_emission`
  on ``{"content", "tool_calls"}``; ``None`` for a probe placeholder, which is not a model
  emission), and each call's execution result or rejection (with its reason). Retracted and
  placeholder steps keep their flags.
* Turns the grader scored but the model never reached (force-quit, model error) appear with
  ``reached = False``; a turn cut by a model error is the trajectory's ``partial_turn``
  (``partial = True``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from callscope.benchmarks.protocol import (
    DEFAULT_BENCHMARK,
    MultiTurnBenchmark,
    benchmark_or_default,
    category_gold_class,
    category_key,
    get_benchmark,
)
from callscope.calibration.classify import DEFAULT, ClassifierConfig, classify_emission
from callscope.calibration.diagnostics import diagnostics_table
from callscope.calibration.paired import (
    ablation_matrix,
    ablation_table,
    compare_probe,
    compare_table,
    fired_by_case,
)
from callscope.calibration.panel import (
    Panel,
    build_panel,
    capability_lines,
    panel_table,
    turn_panel_table,
)
from callscope.calibration.stage_table import stage_mix_table
from callscope.core.table import Table
from callscope.runs.calibrate_panel import PANEL_META
from callscope.runs.calibration_store import (
    BASELINE,
    BENCHMARK_META,
    diagnose_store,
    paired_outcomes,
    probe_key,
)
from callscope.store.run_store import RunStore
from callscope.types import ACTION_CLASSES

# --------------------------------------------------------------------------- one conversation


def emission_class(step: Mapping[str, Any], config: ClassifierConfig = DEFAULT) -> str | None:
    """The action class of a recorded step (``None`` for a probe placeholder)."""
    if step.get("placeholder"):
        return None
    return classify_emission(
        {"content": step.get("text") or "", "tool_calls": step.get("tool_calls")}, config
    )


def step_record(
    step: Mapping[str, Any], index: int, config: ClassifierConfig = DEFAULT
) -> dict[str, Any]:
    """One step of a turn as the browser shows it (see the module doc)."""
    results = [
        {
            "name": r.get("name"),
            "arguments": r.get("arguments"),
            "accepted": bool(r.get("accepted")),
            "output": r.get("output"),
            "call": r.get("call"),
            "reason": r.get("reason"),
        }
        for r in step.get("results") or []
    ]
    return {
        "index": index,
        "text": step.get("text") or "",
        "tool_calls": step.get("tool_calls"),
        "calls": list(step.get("calls") or []),
        "parse_error": step.get("parse_error"),
        "parse_form": step.get("parse_form"),
        "class": emission_class(step, config),
        "retracted": bool(step.get("retracted")),
        "placeholder": bool(step.get("placeholder")),
        "results": results,
        "rejected": sum(1 for r in results if not r["accepted"]),
    }


def _turn_record(
    turn: Mapping[str, Any] | None,
    index: int,
    verdict_turn: Mapping[str, Any] | None,
    events: list[dict[str, Any]],
    due: set[int],
    partial: bool,
    config: ClassifierConfig,
) -> dict[str, Any]:
    steps = [step_record(s, j, config) for j, s in enumerate((turn or {}).get("steps") or [])]
    return {
        "index": index,
        "reached": turn is not None,
        "partial": partial,
        "user_messages": [
            {"role": m.get("role"), "content": m.get("content")}
            for m in (turn or {}).get("user_messages") or []
            if isinstance(m, Mapping)
        ],
        "added_functions": list((turn or {}).get("added_functions") or []),
        "available": len((turn or {}).get("available") or []),
        "due": index in due,
        "status": (verdict_turn or {}).get("status"),
        "gold_calls": (verdict_turn or {}).get("gold_calls"),
        "model_calls": (verdict_turn or {}).get("model_calls"),
        "steps": steps,
        "events": events,
    }


def turn_records(
    trajectory: Mapping[str, Any],
    verdict: Mapping[str, Any],
    due: Iterable[int] = (),
    config: ClassifierConfig = DEFAULT,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per turn (trajectory turns, the partial turn, and graded turns never reached, by
    index): the turn records; and the probe events whose turn is none of them."""
    by_index: dict[int, tuple[Mapping[str, Any], bool]] = {}
    for t in trajectory.get("turns") or []:
        by_index[int(t["index"])] = (t, False)
    partial = trajectory.get("partial_turn")
    if partial:
        by_index[int(partial["index"])] = (partial, True)
    per_turn = {int(v["index"]): v for v in verdict.get("per_turn") or []}
    events: dict[int, list[dict[str, Any]]] = {}
    for ev in trajectory.get("events") or []:
        events.setdefault(int(ev.get("turn", -1)), []).append(dict(ev))
    indices = sorted(set(by_index) | set(per_turn))
    due_set = set(due)
    turns = []
    for i in indices:
        turn, is_partial = by_index.get(i, (None, False))
        turns.append(
            _turn_record(turn, i, per_turn.get(i), events.pop(i, []), due_set, is_partial, config)
        )
    stray = [ev for i in sorted(events) for ev in events[i]]
    return turns, stray


def conversation_record(
    conv: Mapping[str, Any],
    case: Any | None,
    gold_emitted: bool | None,
    config: ClassifierConfig = DEFAULT,
    benchmark: MultiTurnBenchmark[Any] | None = None,
) -> dict[str, Any]:
    """One stored conversation (a :meth:`RunStore.conversations` row) as the browser shows it.

    ``case`` supplies the due turns (``None`` when the benchmark's case is unavailable: no due
    turns); ``gold_emitted`` is the diagnostics' case-level GAR verdict (``None``: unknown)."""
    traj = conv.get("trajectory") or {}
    verdict = conv.get("verdict") or {}
    category = str(conv.get("category") or "")
    bench = benchmark_or_default(benchmark)
    try:
        gold: str | None = category_gold_class(bench, category)
    except ValueError:
        gold = None
    if case is not None:
        gold = bench.gold_class(case)
    due = bench.due_turns(case) if case is not None else []
    turns, stray = turn_records(traj, verdict, due, config)
    steps = [s for t in turns for s in t["steps"]]
    classes = Counter(s["class"] for s in steps if s["class"] is not None)
    all_events = traj.get("events") or []
    passed = bool(conv.get("passed"))
    return {
        "model": conv.get("model"),
        "probe": conv.get("probe"),
        "case_id": conv.get("case_id"),
        "category": category,
        "gold_class": gold,
        "due_turns": due,
        "passed": passed,
        "verdict": "pass" if passed else "fail",
        "reason": verdict.get("reason"),
        "error_type": verdict.get("error_type"),
        "failed_turn": verdict.get("failed_turn"),
        "gold_emitted": gold_emitted,
        "force_quit": bool(traj.get("force_quit")),
        "error": traj.get("error"),
        "class_counts": {c: classes.get(c, 0) for c in ACTION_CLASSES},
        "n_steps": len(steps),
        "n_rejected": sum(s["rejected"] for s in steps),
        "n_fired": sum(1 for e in all_events if e.get("decision") == "fired"),
        "turns": turns,
        "other_events": stray,
    }


# --------------------------------------------------------------------------- the panel


def table_cells(table: Table) -> dict[str, Any]:
    """A :class:`~callscope.core.table.Table` as JSON-ready ``{"columns", "rows", "notes",
    "title", "caption", "row_styles"}`` (what :func:`callscope.report.sections.cells_table_html`
    renders, bound-violation rows still highlighted)."""
    return {
        **table.cells(),
        "title": table.title or "",
        "caption": table.caption or "",
        "row_styles": list(table.row_styles) if table.row_styles is not None else None,
    }


def panel_entry(panel: Panel, probe: str = BASELINE) -> dict[str, Any]:
    """A panel as the report shows it: ``probe``, ``models`` (row order), the case-level
    ``table`` and the turn-level ``turn_table`` (:func:`table_cells` of
    :func:`~callscope.calibration.panel.panel_table` and :func:`turn_panel_table`), the
    capability ``warnings`` (:func:`capability_lines`) and the panel's ``notes``."""
    return {
        "probe": probe,
        "models": list(panel.models),
        "table": table_cells(panel_table(panel, f"panel-{probe}")),
        "turn_table": table_cells(turn_panel_table(panel, f"panel-{probe}-turn")),
        "warnings": capability_lines(panel),
        "notes": list(panel.notes),
    }


def _panel_order(store: RunStore, models: Sequence[str]) -> list[str]:
    """``models`` in the panel's row order: those recorded by ``calibrate_panel``
    (:data:`~callscope.runs.calibrate_panel.PANEL_META`) first, in its order, then the rest sorted."""
    meta = store.get_meta(PANEL_META) or "[]"
    try:
        listed = json.loads(meta) if isinstance(meta, str) else meta
    except ValueError:
        listed = []
    recorded = [str(m) for m in listed] if isinstance(listed, list) else []
    first = [m for m in recorded if m in models]
    return first + sorted(m for m in models if m not in first)


# --------------------------------------------------------------------------- a whole store


def _load_cases(
    bench: MultiTurnBenchmark[Any], categories: Sequence[str]
) -> tuple[dict[str, Any], str | None]:
    """The benchmark's cases of ``categories`` by id, or ``({}, why)`` when they cannot be loaded."""
    if not categories:
        return {}, None
    try:
        cases = bench.cases(list(categories))
    except (ImportError, ValueError, OSError) as exc:
        return {}, f"{bench.name} multi-turn cases unavailable ({exc}); no diagnostics or due turns"
    return {c.id: c for c in cases}, None


def conversation_report(store: RunStore, config: ClassifierConfig = DEFAULT) -> dict[str, Any]:
    """Everything the report shows about a store's conversations:

    ``runs`` (per (model, probe): ``rows`` of ``CalibrationResult.rows()``, the diagnostic
    ``table`` and ``stage_table`` as columns/rows, ``capability``), ``comparisons`` (per model
    and non-baseline probe with a baseline), ``panels`` (per probe run by two or more models:
    :func:`panel_entry` of their :func:`~callscope.calibration.panel.build_panel`, rows in the
    panel run's order), ``conversations`` (see
    :func:`conversation_record`), the filter choices ``models``, ``probes``, ``categories``,
    the classifier ``config`` name and a ``note`` when the benchmark's cases could not be loaded.
    Empty lists when the store has no conversations."""
    convs = list(store.conversations())
    bench = get_benchmark(store.get_meta(BENCHMARK_META) or DEFAULT_BENCHMARK)
    categories = sorted(
        {str(c["category"]) for c in convs}, key=lambda cat: category_key(bench, cat)
    )
    cases, note = _load_cases(bench, categories)
    pairs = sorted(
        {(str(c["model"]), str(c["probe"])) for c in convs},
        key=lambda mp: (mp[0], probe_key(mp[1])),
    )
    runs: list[dict[str, Any]] = []
    gar: dict[tuple[str, str, str], bool] = {}
    results: dict[tuple[str, str], Any] = {}
    if cases:
        for model, probe in pairs:
            result = diagnose_store(
                store, model, probe, list(cases.values()), config=config, benchmark=bench
            )
            rows = result.rows()
            runs.append(
                {
                    "model": model,
                    "probe": probe,
                    "rows": rows,
                    "table": diagnostics_table(rows).cells(),
                    "stage_table": stage_mix_table(rows).cells(),
                    "capability": result.diagnostics.capability,
                }
            )
            results[(model, probe)] = result
            for cc in result.diagnostics.cases:
                gar[(model, probe, cc.id)] = bool(cc.gar_case)
    comparisons = []
    for model, probe in pairs:
        if probe == BASELINE or (model, BASELINE) not in results or (model, probe) not in results:
            continue
        fired = fired_by_case(c for c in convs if c["model"] == model and c["probe"] == probe)
        rows = compare_probe(
            paired_outcomes(results[(model, BASELINE)]),
            paired_outcomes(results[(model, probe)]),
            fired,
            probe,
        )
        comparisons.append(
            {"model": model, "probe": probe, "rows": rows, "table": compare_table(rows).cells()}
        )
    ablations = []
    for model in sorted({str(c["model"]) for c in comparisons}):
        by_probe = {c["probe"]: c["rows"] for c in comparisons if c["model"] == model}
        table = ablation_table(ablation_matrix(by_probe))
        ablations.append({"model": model, "table": table.cells()})
    panels = []
    for probe in sorted({p for _, p in results}, key=probe_key):
        models = _panel_order(store, [m for m, p in results if p == probe])
        if len(models) > 1:  # several models on one probe: their panel
            panel = build_panel({m: results[(m, probe)].diagnostics for m in models}, models)
            panels.append(panel_entry(panel, probe))
    records = [
        conversation_record(
            c,
            cases.get(str(c["case_id"])),
            gar.get((str(c["model"]), str(c["probe"]), str(c["case_id"]))),
            config,
            bench,
        )
        for c in convs
    ]
    return {
        "runs": runs,
        "comparisons": comparisons,
        "ablations": ablations,
        "panels": panels,
        "conversations": records,
        "models": sorted({m for m, _ in pairs}),
        "probes": sorted({p for _, p in pairs}, key=probe_key),
        "categories": categories,
        "classes": list(ACTION_CLASSES),
        "config": config.to_dict().get("name", "default"),
        "note": note,
    }
