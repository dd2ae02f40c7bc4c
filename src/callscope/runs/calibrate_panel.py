"""A calibrate panel: several models on the same multi-turn cases into one run store, one
:func:`~callscope.runs.calibrate.calibrate_model` run each, then the panel over them
(:func:`callscope.calibration.panel.build_panel`) and its files (:func:`write_panel`); and the
panel of what a store already holds (:func:`panel_of_store`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callscope.benchmarks.protocol import DEFAULT_BENCHMARK, MultiTurnBenchmark
from callscope.calibration.classify import DEFAULT, ClassifierConfig
from callscope.calibration.panel import (
    Panel,
    build_panel,
    capability_lines,
    panel_table,
    turn_panel_table,
)
from callscope.core.table_formats import write_tables
from callscope.models.base import ChatModel
from callscope.runs.calibrate import ModelCalibration, calibrate_model
from callscope.runs.calibration_config import calibrate_config, check_calibrate_config
from callscope.runs.calibration_store import BASELINE, diagnose_store
from callscope.runs.run_dir_lock import hold_run_dir
from callscope.store.run_store import RunStore

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
    opener: Callable[[str], ChatModel],
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
    ``opener`` opens a spec (each model is closed before the next opens: two embedded
    models are never loaded at once); ``styles``: a style per spec (else ``style``);
    ``on_model`` is called after each model; other keywords go to :func:`calibrate_model`.
    The panel's models are recorded in the store's meta (:data:`PANEL_META`). A model the
    directory holds with other settings is refused before any model runs
    (:func:`~callscope.runs.calibration_config.check_calibrate_config`). ``out``'s writer
    lock is held from the first model to the panel's files
    (:func:`~callscope.runs.run_dir_lock.hold_run_dir`: :class:`~callscope.errors.RunDirBusy`
    while another process writes it)."""
    out = Path(out)
    with hold_run_dir(out):  # one writer from the first model to the panel's files
        done: list[ModelCalibration] = []
        specs = list(dict.fromkeys(specs))
        store = RunStore(out)
        try:
            # every model's settings checked before the first runs (its style only when given)
            bench = kwargs.get("benchmark")
            for spec in specs:
                wanted = calibrate_config(
                    (styles or {}).get(spec, style),
                    kwargs.get("max_steps", 20),
                    kwargs.get("decoding"),
                    bench.name if bench is not None else DEFAULT_BENCHMARK,
                )
                check_calibrate_config(store, spec, wanted, record=False)
            store.set_meta(PANEL_META, json.dumps(specs))
        finally:
            store.close()
        for spec in specs:
            model = opener(spec)
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
    """``panel-<probe>.{md,tex,csv,json}`` and ``panel-<probe>-turn.{md,tex,csv}`` under
    ``out`` (one file per format of :func:`~callscope.core.table_formats.file_formats`,
    Markdown first): the case-level and the turn-level panel tables
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
    ):  # every file format; in Markdown the case level has the notes after the table
        after = "\n" + "\n\n".join(notes) + "\n" if name == stem and notes else ""
        written += write_tables(table, out, stem=name, notes={"markdown": after})
    js = out / f"{stem}.json"
    js.write_text(json.dumps(panel.to_dict(), indent=2, default=str), encoding="utf-8")
    written.append(js)
    return written
