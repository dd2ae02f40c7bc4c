"""Reading a run directory for the report: the one place the report opens the run store.

:func:`iter_outcomes` streams a store's outcomes, each enriched with what the per-outcome
definitions (:mod:`callscope.report.outcome`, :mod:`callscope.report.revisions`) read of its
attempts; :func:`load_facts` keeps them as compact :class:`~callscope.report.facts.OutcomeFacts`
(a report's memory is bounded by what the page holds), :func:`load_outcomes` as dicts.
The stored diagnoses are read back; the cascade is never re-run on a stored call. An answer
without a readable call of a model scored before cascade version 3 is re-derived from its
stored reply when the store is read (:mod:`callscope.store.upgrade`, the store's versioned
reader), and its outcome marked ``rederived``: the report itself scores nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from callscope.report.facts import OutcomeFacts, Outcomeish, as_facts, outcome_facts
from callscope.report.outcome import OutcomeRow, category_of
from callscope.report.revisions import trajectory_step
from callscope.store.run_store import RunStore
from callscope.store.schema import STORE_FILE


def _open(run_dir: str | Path) -> RunStore:
    run_dir = Path(run_dir)
    if not (run_dir / STORE_FILE).is_file():
        raise FileNotFoundError(f"no run store at {run_dir / STORE_FILE}")
    return RunStore(run_dir)


def iter_outcomes(store: RunStore) -> Iterator[OutcomeRow]:
    """The outcomes of an open store one at a time (store order, the rows streamed), each
    with ``first_diagnosis`` (attempt 1's cascade diagnosis or None), ``trajectory``
    (:func:`trajectory_step` per scored attempt), ``final_diagnosis`` (the last attempt's)
    and, from the outcome's case, ``has_gold``, ``calls_expected`` (its number of gold calls;
    None without gold) and ``category`` (:func:`~callscope.report.outcome.category_of`)
    added; an outcome whose stored verdict of an answer without a readable call predates
    cascade version 3 comes re-derived from the store's versioned reader
    (:meth:`~callscope.store.run_store.RunStore.read_outcomes`).
    Message histories are not read."""
    gold: dict[str, tuple[bool, int | None, str]] = {}
    for c in store.iter_cases():
        calls = c.gold_calls
        gold[c.id] = (
            c.gold is not None,
            None if calls is None else len(calls),
            category_of(c.meta),
        )
    for o, attempts in store.read_outcomes():  # the store's versioned reader
        o["first_diagnosis"] = attempts[0].get("diagnosis") if attempts else None
        o["trajectory"] = [
            trajectory_step(a["attempt"], a["row"]) for a in attempts if a.get("row")
        ]
        o["final_diagnosis"] = attempts[-1].get("diagnosis") if attempts else None
        known = gold.get(o["case_id"])
        o["has_gold"] = known[0] if known else True
        if known:
            o["calls_expected"], o["category"] = known[1], known[2]
        yield o


def load_outcomes(run_dir: str | Path) -> list[OutcomeRow]:
    """Every outcome of a run directory as :func:`iter_outcomes` enriches it (memory grows
    with the store: :func:`load_facts` is the compact form the report reads). Raises
    FileNotFoundError without a store."""
    store = _open(run_dir)
    try:
        return list(iter_outcomes(store))
    finally:
        store.close()


def load_facts(run_dir: str | Path) -> list[OutcomeFacts]:
    """Every outcome of a run directory as its :class:`OutcomeFacts`, streamed from the store
    (one outcome dict alive at a time; repeated strings and small values shared), in store
    order: what every aggregate of the report needs, in a few hundred bytes per outcome.
    Raises FileNotFoundError without a store."""
    store = _open(run_dir)
    shared: dict[Any, Any] = {}
    try:
        return [outcome_facts(o, shared) for o in iter_outcomes(store)]
    finally:
        store.close()


def max_attempts_by_model(run_dir: str | Path, outcomes: Iterable[Outcomeish]) -> dict[str, int]:
    """The configured attempt budget per model (run config), else the most attempts seen."""
    seen: dict[str, int] = {}
    for f in as_facts(outcomes):
        seen[f.model] = max(seen.get(f.model, 1), int(f.n_attempts or 1))
    store = RunStore(run_dir)
    try:
        for model in seen:
            cfg = store.get_meta(f"config:{model}") or {}
            if isinstance(cfg.get("max_attempts"), int):
                seen[model] = max(seen[model], cfg["max_attempts"])
    finally:
        store.close()
    return seen
